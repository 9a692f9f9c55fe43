"""Batch runs over many documents on Dask, with resumable part files and Parquet output.

A run splits its input items into partitions of ``partition_size`` items. Each
partition is processed by one Dask task (a bag element) that writes
``parts/part-NNNNN.parquet`` and returns its item errors. A re-run of the same command
on the same output folder skips partitions whose part file is whole, so an interrupted
MEDLINE-sized run resumes where it stopped. When all partitions are done the parts are
merged into ``results.parquet`` with DuckDB and ``manifest.json`` records the inputs,
the settings, the counts and every item that failed (also in ``errors.jsonl``).

Every file of a run is written through :mod:`clinex.io.atomic` (temporary file, fsync,
rename): a full disk, a read-only folder or a kill leaves whole files or none. A
partition's sidecar ``part-NNNNN.errors.json`` (written before its part file) holds its
row count, item errors and a stamp of the run (fingerprint and model); on a resume a part
file that DuckDB cannot read or whose row count differs is run again, and a torn or empty
``manifest.json`` is rebuilt when every sidecar carries this run's stamp (otherwise the
error names it and says to start again with ``force``).

One bad item (an unreadable file, a malformed JSON line, an input the task rejects)
is reported in the manifest and skipped; it never stops the other items.

The tasks (:data:`TASKS`) turn one input path into items and a list of items into
result rows:

- ``pv``: JSON-lines files (``id`` and ``text``, or PHEE's ``context``, per line; a
  record is one unit, as for ``clinex pv extract``), PubMed/MEDLINE XML (``.xml``,
  ``.xml.gz``, or content whose root is ``<PubmedArticleSet>``: one item per citation, id =
  its PMID, text = title + " " + abstract, :mod:`clinex.io.medline`), plain ``.txt`` files
  (one item per sentence), or folders of them; one row per record with its events as PHEE
  JSON (``source`` = the input file, so equal record ids of two files stay apart), its
  citation metadata for MEDLINE (``meta_json``: PMID, year, publication types, MeSH
  headings, where title and abstract sections lie) and its event counts
  (:data:`clinex.pv.counts.COUNT_COLUMNS`: ``n_events``, ``n_adverse``, ``n_therapeutic``
  count asserted events only; negated ones are in ``n_*_negated``, speculated ones also
  in ``n_*_speculated``).
- ``cohort``: n2c2 XML files or folders of them; one row per patient and criterion
  (``patient`` = file stem, ``source`` = the input path).
- ``rob``: trial files (PDF, text, XML, tagtog HTML) or folders of them; one row per
  trial and signalling question (``document`` = file name with its suffix, so
  ``trial.txt`` and ``trial.pdf`` stay apart; ``source`` = the input path).

A folder that holds none of its task's files is an error item naming the folder.

Every task's model (``model=``; pv ``auto``, a kind or a model folder, default
``$CLINEX_PV_MODEL``, else ``auto``; rob and cohort a registry name, default ``auto``)
is built once before any item, so a model that cannot be built (unknown name, missing
file, an LLM kind without a server configured) stops the run before the output folder
is created. ``manifest.json`` records its versioned id (``model``) and, for a folder or
file, its path (``model_folder``); a run that names another model is not resumed.

``drugs=`` (pv; ``clinex batch pv --drug NAME|FILE``) keeps only the records whose text
mentions one of the drugs (:func:`clinex.pv.cli.drug_screen`: a whole-word,
case-insensitive match of a name, or any synonym the drug gazetteer gives the same drug);
the others are counted in the summary and the manifest (``n_screened_out``).

``scheduler="tcp://HOST:PORT"`` runs the partitions on a running Dask distributed cluster
(:func:`_connect`) instead of local processes, with the same tasks, part files and resume.

On a resume, a partition whose item errors include a model or LLM error
(:data:`RETRY_CODES`: ``CLX006``, ``CLX009``; e.g. a server that was down) is run again
instead of replaying its errors; other item errors (a malformed line, an unreadable
file) come from the input and are replayed.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clinex.errors import ClinexError, InputError
from clinex.io.jsonl import JSONL_SUFFIXES, is_jsonl
from clinex.pv.counts import COUNT_COLUMNS as PV_COUNT_COLUMNS
from clinex.pv.counts import event_counts
from clinex.pv.pipeline import RECORDS_PER_CALL

__all__ = ["BatchTask", "BatchSummary", "Item", "ItemError", "TASKS", "RETRY_CODES", "run_batch", "read_results"]

RETRY_CODES = ("CLX006", "CLX009")
"""Error codes of item errors that a resume retries (:class:`~clinex.errors.ModelError`,
:class:`~clinex.errors.LLMError`): they depend on the model or its server, not on the
input, so they may not happen again. Own choice; other codes are replayed."""


@dataclass(frozen=True)
class Item:
    """One unit of work: an id and the payload the task's ``process`` understands."""

    id: str
    payload: Any


@dataclass(frozen=True)
class ItemError:
    """An input that could not be processed: where it is and why (no note text)."""

    id: str
    message: str


@dataclass(frozen=True)
class BatchTask:
    """How a task takes part in batch mode.

    Attributes
    ----------
    name : str
        Task name (``"pv"``, ``"cohort"``, ``"rob"``).
    columns : dict[str, str]
        Result columns and their DuckDB types, in order.
    expand : callable
        ``expand(path) -> iterator of Item | ItemError``: items of one input path.
    process : callable
        ``process(items) -> (rows, errors)``: rows are dicts with exactly ``columns``.
    """

    name: str
    columns: dict[str, str]
    expand: Callable[[Path], Iterator[Item | ItemError]]
    process: Callable[[Sequence[Item]], tuple[list[dict[str, Any]], list[ItemError]]]


@dataclass
class BatchSummary:
    """What a batch run did.

    Attributes
    ----------
    out_dir : Path
    n_items : int
        Items found in the inputs (bad lines of an input count as errors, not items).
    n_rows : int
        Rows in ``results.parquet``.
    n_parts, n_parts_skipped : int
        Partitions in the run, and those found done from an earlier run.
    errors : list of ItemError
    notes : list of str
        What the run did to the output folder besides resuming (a rebuilt manifest,
        an earlier run removed by ``force``, records screened out by ``drugs``), for the user.
    n_screened_out : int
        pv with ``drugs``: records that mention none of the drugs (not in ``n_items``).
    """

    out_dir: Path
    n_items: int = 0
    n_rows: int = 0
    n_parts: int = 0
    n_parts_skipped: int = 0
    errors: list[ItemError] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    n_screened_out: int = 0


# --------------------------------------------------------------------------- tasks


def _pv_expand(path: Path) -> Iterator[Item | ItemError]:
    """JSON lines (``id`` + ``text`` or PHEE ``context``) as one item per record;
    PubMed/MEDLINE XML as one item per citation (id = PMID); plain text split into
    sentences; a folder gives its ``.jsonl``/``.json``/``.txt``/``.xml``/``.xml.gz`` (none:
    one error item). Each item's payload is ``(text, source file, offset, meta)``: the
    offset of a plain-text file's sentence in that file, None for a record; ``meta`` the
    citation's metadata (:meth:`clinex.io.medline.MedlineCitation.meta`), else None."""
    from clinex.io.medline import is_medline_file
    from clinex.io.textfile import read_text, require_file
    from clinex.pv.pipeline import jsonl_records, text_records

    for p in _files(path, _PV_SUFFIXES):
        if isinstance(p, ItemError):
            yield p
            continue
        # one unreadable file (binary, not UTF-8) is reported under its own name and the
        # folder's other files go on
        try:
            if is_jsonl(p):
                errors: list[ClinexError] = []
                # a record over MAX_PV_TEXT_CHARS is a bad line too, named by file and line
                records = jsonl_records(require_file(p).read_bytes(), path=p, errors="skip", on_error=errors.append)
                for rec in records:
                    yield from (ItemError(f"{p}:{e.line}", str(e)) for e in errors)
                    errors.clear()
                    yield Item(rec.id, (rec.text, str(p), None, None))
                yield from (ItemError(f"{p}:{e.line}", str(e)) for e in errors)
            elif is_medline_file(p):
                yield from _medline_items(p)
            else:
                # the plain-text rule of `clinex pv extract`: blank text is one empty record
                for rid, sent, start in text_records(read_text(p), p.stem, str(p)):
                    yield Item(rid, (sent, str(p), start, None))
        except ClinexError as exc:
            yield ItemError(str(p), str(exc))


def _medline_items(p: Path) -> Iterator[Item | ItemError]:
    """One item per citation of a PubMed/MEDLINE file (id = PMID); each bad citation an error
    item ``FILE:LINE``; a file-level error (truncated gzip, not well formed, unsafe XML) an
    error item naming the file, after the citations before it."""
    from clinex.io.limits import MAX_PV_TEXT_CHARS
    from clinex.io.medline import iter_medline

    errors: list[ClinexError] = []
    try:
        for c in iter_medline(p, errors="skip", on_error=errors.append, max_chars=MAX_PV_TEXT_CHARS):
            yield from (ItemError(f"{p}:{e.line}", str(e)) for e in errors)
            errors.clear()
            yield Item(c.pmid, (c.text, str(p), None, c.meta()))
    except ClinexError as exc:  # the file stops here: its bad citations so far, then the file's error
        yield from (ItemError(f"{p}:{e.line}", str(e)) for e in errors)
        yield ItemError(str(p), str(exc))
        return
    yield from (ItemError(f"{p}:{e.line}", str(e)) for e in errors)


def _pv_process(
    items: Sequence[Item], model: str | None = None, batch_size: int = RECORDS_PER_CALL
) -> tuple[list[dict[str, Any]], list[ItemError]]:
    from clinex.pv.formats.phee_json import to_phee_dict
    from clinex.pv.models import load_model
    from clinex.pv.normalise import drug_counts
    from clinex.pv.pairs import record_pairs
    from clinex.pv.pipeline import extract_records

    spec = model or os.environ.get("CLINEX_PV_MODEL", "auto")
    model = _cached(f"pv:{spec}", lambda: load_model(spec))
    records = [(it.id, it.payload[0]) for it in items]
    sources = [it.payload[1] for it in items]
    offsets = [it.payload[2] for it in items]  # a plain-text file's sentence starts (None: JSON lines)
    # MEDLINE citations' metadata, by (PMID, file): a PMID is unique within its file
    metas = {(it.id, it.payload[1]): it.payload[3] for it in items if it.payload[3] is not None}
    try:  # one batched model call per `batch_size` records, as `clinex pv extract --batch-size`
        # extract_records gives one result per record, in order
        results = list(zip(sources, [r for b in range(0, len(records), batch_size)
                                     for r in extract_records(records[b : b + batch_size], model=model,
                                                              offsets=offsets[b : b + batch_size])]))
    except ClinexError:  # isolate the item the model rejects; keep the others
        results = []
        errors: list[ItemError] = []
        for rec, src, start in zip(records, sources, offsets):
            try:
                results.extend((src, r) for r in extract_records([rec], model=model, offsets=[start]))
            except ClinexError as exc:
                errors.append(ItemError(rec[0], str(exc)))
    else:
        errors = []
    rows = [
        {
            "id": item.id,
            "source": src,
            "text": item.text,
            # asserted events only; negated ones in their own columns (clinex.pv.counts)
            **event_counts(item.events),
            "model": item.model,
            "event_probability": item.event_probability,
            "phee_json": json.dumps(to_phee_dict(item), ensure_ascii=False),
            "meta_json": json.dumps(metas[item.id, src], ensure_ascii=False) if (item.id, src) in metas else None,
            # the record's case-level drug -> reaction pairs (clinex.pv.pairs.record_pairs)
            "pairs_json": json.dumps([p.model_dump(mode="json") for p in record_pairs(item)], ensure_ascii=False),
            # Drug / Combination drug mentions of all events with / without a gazetteer entry
            **drug_counts(item.events),
        }
        for src, item in results
    ]
    return rows, errors


def _pv_resolve_model(spec: str) -> tuple[str, dict[str, str]]:
    """Load the PHEE model ``spec`` names; return what workers load and what the manifest records.

    Parameters
    ----------
    spec : str
        ``auto``, ``crf``, ``transformer`` or a model folder (:func:`clinex.pv.models.load_model`).

    Returns
    -------
    (str, dict)
        The spec workers load (``auto`` resolved to the kind it chose, a folder made
        absolute), and ``{"model": versioned id}`` plus ``"model_folder"`` for a folder.

    Raises
    ------
    ModelError
        If the model cannot be loaded (unknown name, missing extra, not a model folder).
    """
    from clinex.pv.models import AUTO, REGISTRY, load_model, model_names
    from clinex.pv.models import model_id as versioned_id

    loaded = load_model(spec)
    model_id = versioned_id(loaded)
    if spec in model_names():
        if spec == AUTO:  # the kind auto chose, so that every worker loads the same one
            spec = next((k for k, v in REGISTRY.items() if model_id == v.version), spec)
        return spec, {"model": model_id}
    folder = str(Path(spec).resolve())
    return folder, {"model": model_id, "model_folder": folder}


def _rob_resolve_model(spec: str) -> tuple[str, dict[str, str]]:
    """Load the evidence model ``spec`` names (:func:`clinex.rob.evidence.load_evidence_model`);
    return what workers load (``auto`` resolved, a file made absolute) and the manifest record.

    Raises
    ------
    ModelError
        Unknown name, missing trained model, or a file that is not a model.
    """
    from clinex.rob.evidence import AUTO, AUTO_KIND, REGISTRY, load_evidence_model

    loaded = load_evidence_model(spec)
    if spec == AUTO:
        spec = AUTO_KIND
    if spec in REGISTRY:
        return spec, {"model": loaded.name}
    folder = str(Path(spec).resolve())
    return folder, {"model": loaded.name, "model_folder": folder}


_PV_SUFFIXES = (*JSONL_SUFFIXES, ".txt", ".xml", ".xml.gz")
_ROB_SUFFIXES = (".pdf", ".txt", ".xml", ".html", ".htm")
"""The files a folder input stands for (``.htm`` as ``clinex rob assess`` reads it)."""


def _files(path: Path, suffixes: tuple[str, ...]) -> Iterator[Path | ItemError]:
    """A file as given; a folder's files with ``suffixes`` (name order), or one
    :class:`ItemError` naming a folder that holds none of them."""
    if path.is_dir():
        found = sorted(p for p in path.iterdir() if p.is_file() and (
            p.suffix.lower() in suffixes or p.name.lower().endswith(tuple(s for s in suffixes if s.count(".") > 1))))
        if not found:
            yield ItemError(str(path), str(InputError(f"folder without {'/'.join(suffixes)} files", path=path)))
        yield from found
    else:
        yield path


def _cohort_expand(path: Path) -> Iterator[Item | ItemError]:
    """The patients under one input, as ``clinex cohort screen`` finds them: XML files,
    a note folder, or a folder of both; an empty folder is an error item."""
    from clinex.cohort.formats.n2c2_xml import _expand

    found = _expand(path)
    if not found:
        yield ItemError(str(path), str(InputError("no *.xml files or note folders", path=path)))
    for _kind, p in found:
        yield Item(p.stem if p.is_file() else p.name, str(p))


def _cohort_process(
    items: Sequence[Item], criteria: Sequence[str] = ("n2c2",), model: str = "auto"
) -> tuple[list[dict[str, Any]], list[ItemError]]:
    """One row per patient and criterion; ``evidence_json`` holds a list of
    :func:`clinex.cohort.screen.evidence_record` (the layout of ``clinex cohort screen``)."""
    from clinex.cohort.formats.n2c2_xml import read_patient
    from clinex.cohort.formats.notes_folder import read_notes_folder
    from clinex.cohort.models import get_model
    from clinex.cohort.screen import evidence_record

    # the model of clinex.cohort.screen, built once per worker (an LLM kind keeps one client)
    cohort_model = _cached(f"cohort:{model}:{'|'.join(criteria)}", lambda: get_model(model, list(criteria)))
    rows, errors = [], []
    for it in items:
        try:
            patient = read_notes_folder(it.payload) if Path(it.payload).is_dir() else read_patient(it.payload)
            decisions = cohort_model.screen(patient)
        except ClinexError as exc:
            errors.append(ItemError(it.payload, str(exc)))
            continue
        for name, dec in decisions.items():
            rows.append(
                {
                    "patient": patient.id,
                    "source": it.payload,
                    "criterion": name,
                    "label": dec.label,
                    "score": float(dec.score),
                    "evidence_json": json.dumps([evidence_record(e) for e in dec.evidence], ensure_ascii=False),
                }
            )
    return rows, errors


def _rob_expand(path: Path) -> Iterator[Item | ItemError]:
    """One item per trial file; a folder gives its report files (none: one error item)."""
    for p in _files(path, _ROB_SUFFIXES):
        yield p if isinstance(p, ItemError) else Item(p.name, str(p))


def _rob_process(items: Sequence[Item], model: str = "auto") -> tuple[list[dict[str, Any]], list[ItemError]]:
    from clinex.rob.assess import assess_path
    from clinex.rob.evidence import load_evidence_model

    evidence_model = _cached(f"rob:{model}", lambda: load_evidence_model(model))
    rows, errors = [], []
    for it in items:
        try:
            result = assess_path(it.payload, evidence_model)
        except ClinexError as exc:
            errors.append(ItemError(it.payload, str(exc)))
            continue
        for dom in result.domains:
            for ans in dom.answers:
                rows.append(
                    {
                        "document": it.id,
                        "source": it.payload,
                        "domain": dom.domain,
                        "domain_risk": dom.risk,
                        "overall": result.overall,
                        "sq": ans.sq,
                        "response": ans.response,
                        "judgement": ans.judgement,
                        "confidence": float(ans.confidence),
                        "evidence_json": json.dumps(
                            [e.model_dump(mode="json") for e in ans.evidence], ensure_ascii=False
                        ),
                    }
                )
    return rows, errors


TASKS: dict[str, BatchTask] = {
    "pv": BatchTask(
        "pv",
        {"id": "VARCHAR", "source": "VARCHAR", "text": "VARCHAR", **dict.fromkeys(PV_COUNT_COLUMNS, "INTEGER"),
         "model": "VARCHAR", "event_probability": "DOUBLE", "phee_json": "VARCHAR", "meta_json": "VARCHAR",
         "pairs_json": "VARCHAR", "n_drugs_normalised": "INTEGER", "n_drugs_unmatched": "INTEGER"},
        _pv_expand,
        _pv_process,
    ),
    "cohort": BatchTask(
        "cohort",
        {"patient": "VARCHAR", "source": "VARCHAR", "criterion": "VARCHAR", "label": "VARCHAR", "score": "DOUBLE",
         "evidence_json": "VARCHAR"},
        _cohort_expand,
        _cohort_process,
    ),
    "rob": BatchTask(
        "rob",
        {"document": "VARCHAR", "source": "VARCHAR", "domain": "VARCHAR", "domain_risk": "VARCHAR", "overall": "VARCHAR",
         "sq": "VARCHAR", "response": "VARCHAR", "judgement": "VARCHAR", "confidence": "DOUBLE",
         "evidence_json": "VARCHAR"},
        _rob_expand,
        _rob_process,
    ),
}

_CACHE: dict[str, Any] = {}
_CACHE_SIZE = 2
"""Models kept per worker process (a run uses one; the oldest is dropped beyond this)."""


def _cached(key: str, make: Callable[[], Any]) -> Any:
    """One model per worker process, built on first use (bounded: :data:`_CACHE_SIZE`)."""
    if key not in _CACHE:
        while len(_CACHE) >= _CACHE_SIZE:
            _CACHE.pop(next(iter(_CACHE)))
        _CACHE[key] = make()
    return _CACHE[key]


# --------------------------------------------------------------------------- engine


RESUME_HINT = ("; the finished parts are kept: run the same command again to resume once the disk has room "
               "or the folder is writable")
"""Added to the error of a write that the operating system refused during a run."""

_RUN_FILES = ("manifest.json", "results.parquet", "errors.jsonl", "parts")
"""What a run writes into its output folder (``--force`` removes these, nothing else)."""


def _os_error_of(exc: Exception) -> OSError:
    """The :class:`OSError` behind a DuckDB I/O error: DuckDB names the ``errno`` in its
    message (``"errno":"28"``); without one, the first line of DuckDB's message."""
    import errno as errno_mod
    import re

    m = re.search(r'"errno"\s*:\s*"?(\d+)', str(exc))
    if m:
        code = int(m.group(1))
        return OSError(code, os.strerror(code))
    return OSError(errno_mod.EIO, str(exc).splitlines()[0] if str(exc) else type(exc).__name__)


def _write_parquet(rows: list[dict[str, Any]], columns: dict[str, str], path: Path) -> None:
    """Write ``rows`` as Parquet with DuckDB, atomically (:func:`clinex.io.atomic.atomic_path`).

    Raises
    ------
    InputError
        The file cannot be written (full disk, read-only folder): names ``path`` and the
        operating system's reason; no temporary file is left.
    """
    import duckdb

    from clinex.io.atomic import atomic_path

    with atomic_path(path, force=True) as tmp:
        con = duckdb.connect()
        try:
            cols = ", ".join(f'"{c}" {t}' for c, t in columns.items())
            con.execute(f"CREATE TABLE t ({cols})")
            if rows:
                marks = ", ".join("?" for _ in columns)
                con.executemany(f"INSERT INTO t VALUES ({marks})", [[r[c] for c in columns] for r in rows])
            con.execute(f"COPY t TO '{_sql_path(tmp)}' (FORMAT PARQUET, USE_TMP_FILE false)")
        except duckdb.IOException as exc:
            raise _os_error_of(exc) from None
        finally:
            con.close()


def _sql_path(path: Path) -> str:
    return str(path).replace("'", "''")


def _sidecar(part: Path) -> Path:
    """``part-NNNNN.errors.json``: the partition's row count, item errors and run fingerprint."""
    return part.with_suffix(".errors.json")


def _run_partition(args: tuple[str, int, list[Item], str, dict[str, Any], str]) -> dict[str, Any]:
    from clinex.io.atomic import write_atomic

    task_name, index, items, out_dir, options, fingerprint = args
    task = TASKS[task_name]
    part = Path(out_dir) / "parts" / f"part-{index:05d}.parquet"
    rows, errors = task.process(items, **options)
    # the errors first, then the part file: a part file on disk means its errors are there too;
    # the row count lets a resume tell a whole part file from a torn one, the partition key
    # (its number and item ids) a part and sidecar copied from another partition
    side = {"fingerprint": fingerprint, "partition": _partition_key(index, items), "rows": len(rows),
            "errors": [e.__dict__ for e in errors]}
    try:
        write_atomic(_sidecar(part), json.dumps(side), force=True)
        _write_parquet(rows, task.columns, part)
        # then the part file's checksum: a part file copied or swapped in from elsewhere (same
        # row count, other items) is told from this partition's own and run again
        side["sha256"] = _file_sha256(part)
        write_atomic(_sidecar(part), json.dumps(side), force=True)
    except InputError as exc:
        # returned, not raised: Dask's process scheduler would add the worker's traceback
        # to the message; the caller raises it once the wave is done
        return {"index": index, "rows": 0, "errors": [],
                "write_error": {"message": exc.message, "path": exc.path}}
    return {"index": index, "rows": len(rows), "errors": side["errors"]}


def _partition_key(index: int, items: Sequence[Item]) -> str:
    """Hex SHA-256 of a partition's number and its items' ids, in order: what a part's sidecar
    must match for the part to be resumed as this partition's."""
    h = hashlib.sha256(f"{index}\n".encode())
    for item in items:
        h.update(item.id.encode("utf-8", "surrogatepass") + b"\n")
    return h.hexdigest()


def _file_sha256(path: Path) -> str:
    """Hex SHA-256 of a file's bytes, read in 1 MiB pieces."""
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _read_sidecar(part: Path) -> dict[str, Any] | None:
    """The sidecar of ``part`` as ``{"rows", "errors", "fingerprint", "sha256"}`` (None: missing
    or torn). A sidecar of an older clinex (a bare list of errors) has ``rows`` and
    ``fingerprint`` None; ``sha256`` is None when the run stopped between writing the part file
    and its checksum (the row count is then the check)."""
    try:
        data = json.loads(_sidecar(part).read_text("utf-8"))
        if isinstance(data, list):
            data = {"rows": None, "errors": data, "fingerprint": None}
        errors = [ItemError(**e) for e in data["errors"]]
    except (OSError, ValueError, TypeError, KeyError):
        return None
    return {"rows": data.get("rows"), "errors": errors, "fingerprint": data.get("fingerprint"),
            "sha256": data.get("sha256"), "partition": data.get("partition")}


def _part_rows(con: Any, part: Path) -> int | None:
    """Rows in a Parquet part file, or None when DuckDB cannot read it (empty, torn)."""
    import duckdb

    try:
        return int(con.execute(
            f"SELECT sum(num_rows) FROM parquet_file_metadata('{_sql_path(part)}')").fetchone()[0] or 0)
    except duckdb.Error:
        return None


def _done_errors(part: Path, con: Any = None, partition: str | None = None) -> list[ItemError] | None:
    """The item errors of a finished partition, or None when it must be run (again): no
    part file; a part file DuckDB cannot read (empty, torn) or whose row count or SHA-256
    differs from its sidecar's; a missing or torn sidecar; a sidecar of another partition
    (``partition``, :func:`_partition_key`, differs); or an item error with a code in
    :data:`RETRY_CODES`."""
    import duckdb

    if not part.is_file():
        return None
    side = _read_sidecar(part)
    if side is None:
        return None
    if partition is not None and side["partition"] is not None and side["partition"] != partition:
        return None  # a part and sidecar of another partition (copied or swapped in)
    own = con is None
    con = duckdb.connect() if own else con
    try:
        rows = _part_rows(con, part)
    finally:
        if own:
            con.close()
    if rows is None or (side["rows"] is not None and rows != side["rows"]):
        return None
    if side["sha256"] is not None and _file_sha256(part) != side["sha256"]:
        return None  # not the part file this partition wrote (copied, swapped or edited)
    errors = side["errors"]
    if any(e.message.startswith(tuple(f"[{c}]" for c in RETRY_CODES)) for e in errors):
        return None
    return errors


def _part_stamp(fingerprint: str, model_record: dict[str, str]) -> str:
    """What a part's sidecar records of its run: the run's fingerprint and its model, so that
    parts rebuilt into a manifest are of the same inputs, settings and model."""
    key = fingerprint + "|" + json.dumps(model_record, sort_keys=True)
    return hashlib.sha256(key.encode()).hexdigest()[:16]


def _open_run(out: Path, fingerprint: str, model_record: dict[str, str], force: bool) -> list[str]:
    """Check the output folder before a run; return notes for the user (a repair made).

    A folder that does not exist or is empty starts a new run. One that holds the
    manifest of the same run (same fingerprint and model) is resumed. A torn or empty
    ``manifest.json`` is rebuilt when every part file's sidecar carries this run's
    fingerprint and model (:func:`_part_stamp`; or there is no part file yet): those parts are this run's. With
    ``force`` a run's own files (:data:`_RUN_FILES`) are removed first; other files are
    never removed. Leftover temporary files of an interrupted write are removed.

    Raises
    ------
    InputError
        The folder holds files of no clinex run, a run of other inputs or model (without
        ``force``), or a torn manifest whose parts cannot be matched to this run (without
        ``force``). Each names the folder or its ``manifest.json`` and what to do.
    """
    import shutil

    from clinex.io.atomic import TEMP_PATTERN, remove_temporaries

    if not out.is_dir():
        return []
    remove_temporaries(out, _RUN_FILES)
    remove_temporaries(out / "parts")
    entries = [e for e in out.iterdir()]
    if not entries:
        return []
    foreign = sorted(e.name for e in entries if e.name not in _RUN_FILES)
    manifest_path = out / "manifest.json"
    if foreign:
        if not manifest_path.is_file():
            raise InputError("output folder is not empty and holds no clinex manifest", path=out)
        # a run folder the user added files to: resumed as before, never cleaned by --force
    if force:
        for name in _RUN_FILES:
            target = out / name
            if target.is_dir():
                parts = [f for f in target.iterdir()
                         if f.name.startswith("part-") or TEMP_PATTERN.match(f.name)]
                for f in parts:
                    f.unlink()
                if not any(target.iterdir()):
                    target.rmdir()
            elif target.exists():
                target.unlink()
        return ["--force: the earlier run's files in this folder were removed; starting again"]
    try:
        old = json.loads(manifest_path.read_text(encoding="utf-8"))
        if not isinstance(old, dict) or not isinstance(old.get("fingerprint"), str):
            raise ValueError("no fingerprint")
    except FileNotFoundError:
        old = None
        torn = "is missing"
    except (OSError, ValueError):
        old = None
        torn = "is torn (not a clinex manifest)" if manifest_path.stat().st_size else "is empty (0 bytes)"
    if old is not None:
        if old.get("fingerprint") != fingerprint:
            raise InputError(
                "output folder holds a different batch run (other task, inputs, partition size or criteria, "
                "an input file changed since: size or modification time, or a clinex version with other "
                "result columns); pass another output folder, or --force to replace that run",
                path=out,
            )
        _check_same_model(old, model_record, manifest_path)
        return []
    parts = sorted((out / "parts").glob("part-*.parquet")) if (out / "parts").is_dir() else []
    sides = [_read_sidecar(p) for p in parts]
    stamp = _part_stamp(fingerprint, model_record)
    if all(s is not None and s["fingerprint"] == stamp for s in sides):
        # no part file yet (a run stopped before its first part): nothing to rebuild, a fresh start
        if not parts:
            return []
        return [f"{manifest_path}: {torn}; rebuilt from the {len(parts)} part file(s) of this run on disk"]
    raise InputError(
        f"the batch run's manifest {torn}, and the part files in {out / 'parts'} cannot be matched to this "
        "command's inputs; start again with --force (removes that run's files), or pass another --output",
        path=manifest_path,
    )


def _stamp(p: Path) -> str:
    """Size and modification time (ns) of a file, or of every file in a folder: an input
    edited in place changes the run's fingerprint, so a resume refuses it."""
    if p.is_file():
        st = p.stat()
        return f"{st.st_size}:{st.st_mtime_ns}"
    if p.is_dir():
        parts = []
        for f in sorted(q for q in p.rglob("*") if q.is_file()):
            st = f.stat()
            parts.append(f"{f.relative_to(p)}:{st.st_size}:{st.st_mtime_ns}")
        return "|".join(parts)
    return "0"


def _clinex_version() -> str:
    """This process's clinex version (run on each cluster worker by :func:`_connect`)."""
    from clinex import __version__

    return __version__


def _connect(address: str, timeout: float) -> Any:
    """A ``distributed.Client`` of the running cluster at ``address``, checked before any task.

    Raises
    ------
    InputError
        ``distributed`` is not installed; the address is malformed or its scheduler cannot be
        reached within ``timeout`` seconds; it has no worker within ``timeout`` seconds; a
        worker cannot import clinex or runs another version. Each names the address.
    """
    try:
        from distributed import Client
    except ModuleNotFoundError:
        raise InputError("a scheduler address needs the 'distributed' package: pip install 'clinex[cluster]'",
                         field="--scheduler") from None
    from clinex import __version__

    try:
        client = Client(address, timeout=timeout, set_as_default=False)
    except ValueError as exc:
        raise InputError(f"not a Dask scheduler address: {address!r} ({exc}); expected tcp://HOST:PORT",
                         field="--scheduler") from None
    except (OSError, TimeoutError):
        raise InputError(f"cannot reach the Dask scheduler at {address} within {timeout:g} s; is `dask scheduler` "
                         "running there, and its port open to this machine?", field="--scheduler") from None
    try:
        try:
            client.wait_for_workers(1, timeout=timeout)
        except TimeoutError:
            raise InputError(f"the Dask scheduler at {address} has no worker (waited {timeout:g} s); start one "
                             f"with: dask worker {address}", field="--scheduler") from None
        for worker, version in sorted(client.run(_clinex_version, on_error="return").items()):
            if isinstance(version, BaseException):
                raise InputError(f"Dask worker {worker} cannot run clinex ({type(version).__name__}: {version}); "
                                 f"install clinex {__version__} there", field="--scheduler")
            if version != __version__:
                raise InputError(f"Dask worker {worker} runs clinex {version}, this is clinex {__version__}; "
                                 "every worker needs the same version", field="--scheduler")
    except BaseException:
        client.close()
        raise
    return client


def _compute_on_cluster(bag: Any, client: Any, address: str) -> list[dict[str, Any]]:
    """``bag.compute()`` on the cluster; a lost connection is an InputError that says to resume."""
    try:
        return list(bag.compute(scheduler=client))
    except OSError as exc:  # distributed's CommClosedError and its kin: the scheduler or a worker went away
        raise InputError(f"lost the Dask cluster at {address} ({type(exc).__name__}: {exc}); the finished parts "
                         "are kept: run the same command again to resume", field="--scheduler") from None


def _fingerprint(task: str, inputs: Sequence[Path], partition_size: int, criteria: Sequence[str] = (),
                 drugs: Sequence[str] = ()) -> str:
    # the result columns too: parts of a clinex with other columns (pv before `source`) never merge with these
    h = hashlib.sha256(f"{task}|{partition_size}|{','.join(TASKS[task].columns)}".encode())
    for p in inputs:
        h.update(str(p.resolve()).encode())
        h.update(_stamp(p).encode())
    for c in criteria:  # cohort criteria other than the default: names, and files by content
        q = Path(c)
        files = sorted(f for f in q.iterdir() if f.is_file()) if q.is_dir() else [q] if q.is_file() else []
        h.update(f"|criteria:{q.resolve() if files else c}".encode())
        for f in files:
            h.update(f.name.encode() + hashlib.sha256(f.read_bytes()).digest())
    if drugs:  # pv --drug: other names screen other records
        h.update(("|drugs:" + "\n".join(drugs)).encode())
    return h.hexdigest()[:16]


def _check_same_model(old: dict[str, Any], record: dict[str, str], manifest_path: Path) -> None:
    """Raise InputError (naming ``manifest_path``) when the earlier run used another model."""
    keys = ("model", "model_folder")
    if "model" not in old or all(old.get(k) == record.get(k) for k in keys):
        return
    def describe(d: dict[str, Any]) -> str:
        return d["model"] + (f" from {d['model_folder']}" if d.get("model_folder") else "")

    raise InputError(
        f"the run in this folder used model {describe(old)}, not {describe(record)}; "
        "give the same --model to resume, or a new --output",
        path=manifest_path,
    )


def run_batch(
    task: str,
    inputs: Iterable[str | Path],
    out_dir: str | Path,
    *,
    partition_size: int = 256,
    workers: int = 1,
    scheduler: str | None = None,
    progress: Callable[[int, int], None] | None = None,
    criteria: Sequence[str | Path] | None = None,
    model: str | Path | None = None,
    batch_size: int = RECORDS_PER_CALL,
    force: bool = False,
    drugs: Sequence[str] | None = None,
    connect_timeout: float = 10.0,
) -> BatchSummary:
    """Run ``task`` over ``inputs`` and write Parquet results into ``out_dir``.

    Parameters
    ----------
    task : {"pv", "cohort", "rob"}
    inputs : iterable of path
        Files (or folders, for cohort and rob).
    out_dir : path
        Created if missing. An existing folder must be empty or hold a manifest of
        the same run (same task, inputs and partition size), which is resumed.
    partition_size : int, default 256
        Items per partition (one Dask task, one part file).
    workers : int, default 1
        Dask workers (>= 1); with 1 the run is synchronous in this process. Local runs only.
    scheduler : {"sync", "threads", "processes"}, an address, or None
        Dask scheduler; default "sync" for one worker, else "processes". An address
        (``tcp://HOST:PORT``, any ``PROTOCOL://``) runs the partitions on that running Dask
        distributed cluster (``dask scheduler`` / ``dask worker``; needs the ``distributed``
        package, ``clinex[cluster]``): the same tasks, part files, resume and results as a
        local run. Every worker must run this clinex version, load the same model (a kind
        name, or a model folder at the same path) and see the output folder at the same
        path (a shared file system); the inputs are read here and sent with the tasks.
    progress : callable, optional
        Called as ``progress(done_partitions, total_partitions)``.
    criteria : list of str or Path, optional
        cohort only: criterion set names and/or criterion files or folders, as
        ``clinex cohort screen --criteria`` (default the 13 n2c2 criteria). They are
        validated before the run and are part of its fingerprint (files by
        content), so resuming with other criteria is refused.
    model : str or Path, optional
        The task's model, from its registry: pv ``auto``, ``crf``, ``transformer`` or a
        model folder (default ``$CLINEX_PV_MODEL``, else ``auto``;
        :data:`clinex.pv.models.REGISTRY`); rob an evidence model name or file (default
        ``auto``; :data:`clinex.rob.evidence.REGISTRY`); cohort a name of
        :data:`clinex.cohort.models.REGISTRY` (default ``auto``), built for ``criteria``.
        Built once before any item and before ``out_dir`` is created; its versioned id
        (and folder or file) is recorded in ``manifest.json`` (``auto`` as the kind it
        stands for), and resuming a run whose manifest names another model is refused.
    batch_size : int, default :data:`clinex.pv.pipeline.RECORDS_PER_CALL` (512)
        pv only: records per model call within a partition (results do not depend on it).
    force : bool, default False
        Start again in an output folder that holds a run which cannot be resumed (other
        inputs or model, or a torn ``manifest.json`` that cannot be rebuilt): that run's
        own files (``manifest.json``, ``results.parquet``, ``errors.jsonl``, ``parts/``)
        are removed first. Files clinex did not write are never removed.
    drugs : list of str, optional
        pv only: drug names and/or files of one name a line (``--drug``); only the
        records whose text mentions one of them (any synonym the drug gazetteer knows:
        :func:`clinex.pv.cli.drug_screen`) are processed, the others are counted in
        ``n_screened_out``. The names are part of the run's fingerprint.
    connect_timeout : float, default 10.0
        With a scheduler address: seconds to reach the scheduler, and again for it to
        have a worker, before the run stops with an error.

    Returns
    -------
    BatchSummary
        When the inputs hold no item at all but some error items (e.g. only empty
        folders or unreadable files), nothing is written, ``out_dir`` is not created
        and the summary has ``n_items == 0`` and those errors.

    Raises
    ------
    SchemaError
        Unknown task (the message lists the valid ones).
    InputError
        An input path does not exist, or ``out_dir`` holds other files or another run
        (or a run of another model: the error names its manifest.json), or a torn
        ``manifest.json`` whose part files are not this run's (without ``force``);
        ``criteria`` or ``drugs`` given for a task it does not apply to; ``partition_size``,
        ``workers`` or ``batch_size`` below 1; a scheduler address that cannot be reached
        within ``connect_timeout``, a cluster without workers or with a worker of another
        clinex version, ``workers`` above 1 with an address; a cluster lost during the run
        (the finished parts are kept: the same command resumes). A file the operating system refuses to
        write (full disk, read-only folder) stops the run: the message names the file
        and the reason (``cannot write the output file (No space left on device)``),
        no temporary file is left, and the finished parts are kept for a resume.
    ModelError, LLMError
        The task's model cannot be built (unknown name, missing file, an LLM kind
        without a configured server); nothing is written.
    SchemaError
        A criterion file does not validate (see :func:`clinex.cohort.criteria.load_criterion`).
    """
    import dask
    import dask.bag as db

    from clinex.errors import SchemaError
    from clinex.io.atomic import atomic_path, write_atomic, write_error

    if task not in TASKS:
        raise SchemaError(f"unknown batch task '{task}'; valid: {', '.join(TASKS)}")
    if partition_size < 1:
        raise InputError(f"partition_size must be >= 1; got {partition_size}", field="partition_size")
    if workers < 1:
        raise InputError(f"workers must be >= 1; got {workers}", field="workers")
    paths = [Path(p) for p in inputs]
    for p in paths:
        if not p.exists():
            raise InputError("input does not exist", path=p)
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise InputError("output must be a folder, not an existing file", path=out)
    crits: list[str] = []
    if criteria is not None:
        if task != "cohort":
            raise InputError(f"criteria are for the cohort task, not {task!r}", field="criteria")
        from clinex.cohort.criteria import load_criteria

        crits = [str(Path(c).resolve()) if Path(c).exists() else str(c) for c in criteria]
        load_criteria(crits)  # a bad criterion file stops the run before any item
        if crits == ["n2c2"]:
            crits = []  # the default: same run as without criteria
    options: dict[str, Any] = {"criteria": tuple(crits)} if crits else {}
    screen = None
    if drugs:
        if task != "pv":
            raise InputError(f"drugs screen pv records, not {task!r} items", field="drugs")
        from clinex.pv.cli import drug_screen

        screen = drug_screen(list(drugs))  # a bad names file stops the run before any item
    cluster = scheduler is not None and "://" in scheduler
    if cluster and workers != 1:
        raise InputError("--workers is for local runs; a cluster's workers are its own (dask worker ...)",
                         field="--workers")
    model_record: dict[str, str] = {}
    if batch_size < 1:
        raise InputError(f"batch_size must be >= 1; got {batch_size}", field="batch_size")
    if task == "pv":
        options["batch_size"] = batch_size
        options["model"], model_record = _pv_resolve_model(str(model or os.environ.get("CLINEX_PV_MODEL", "auto")))
    elif task == "rob":
        options["model"], model_record = _rob_resolve_model(str(model or "auto"))
    elif task == "cohort":
        from clinex.cohort.models import REGISTRY as COHORT_MODELS
        from clinex.cohort.models import check_model_name, get_model

        kind = check_model_name(str(model or "auto"))
        built = get_model(kind, crits or "n2c2")  # a model that cannot be built stops the run before any item
        # the built model's own id (an LLM kind adds the server's model name), else the kind's
        options["model"], model_record = kind, {"model": str(getattr(built, "name", COHORT_MODELS[kind].version))}
    fingerprint = _fingerprint(task, paths, partition_size, crits, screen.terms if screen else ())
    manifest_path = out / "manifest.json"
    summary = BatchSummary(out_dir=out)
    # a cluster is reached (and checked) before the output folder is touched
    client = _connect(scheduler, connect_timeout) if cluster else None
    try:
        summary.notes.extend(_open_run(out, fingerprint, model_record, force))
        spec = TASKS[task]
        items: list[Item] = []
        for p in paths:
            try:
                for it in spec.expand(p):
                    if isinstance(it, ItemError):
                        summary.errors.append(it)
                    elif screen is not None and not screen.match(it.payload[0]):
                        summary.n_screened_out += 1
                    else:
                        items.append(it)
            except ClinexError as exc:
                summary.errors.append(ItemError(str(p), str(exc)))
        summary.n_items = len(items)
        if screen is not None:
            summary.notes.extend(f"warning: --drug {t!r} is not in the drug gazetteer; matched as written only"
                                 for t in screen.unknown)
            summary.notes.append(f"--drug: {summary.n_screened_out} of {summary.n_screened_out + len(items)} records "
                                 "screened out (no mention of the drugs)")
        if not items and summary.errors:  # nothing to process: no folder a later run would have to match
            return summary
        chunks = [items[i : i + partition_size] for i in range(0, len(items), partition_size)]
        summary.n_parts = len(chunks)
        manifest: dict[str, Any] = {
            "task": task,
            "fingerprint": fingerprint,
            "inputs": [str(p) for p in paths],
            "partition_size": partition_size,
            **({"criteria": crits} if crits else {}),
            **model_record,
            **({"drugs": list(screen.terms), "n_screened_out": summary.n_screened_out} if screen else {}),
            "n_items": len(items),
            "n_parts": len(chunks),
            "status": "running",
        }
        new_folder = not out.exists()
        try:  # the manifest first: a folder holding anything of a run holds its manifest
            write_atomic(manifest_path, json.dumps(manifest, indent=2), force=True)
        except InputError:
            if new_folder and out.is_dir() and not any(out.iterdir()):
                out.rmdir()  # nothing of the run is left, not even an empty folder
            raise
        try:
            (out / "parts").mkdir(exist_ok=True)
        except OSError as exc:
            raise write_error(out / "parts", exc, folder=True) from None

        import duckdb

        todo = []
        con = duckdb.connect()
        try:
            for i, chunk in enumerate(chunks):
                part = out / "parts" / f"part-{i:05d}.parquet"
                old_errors = _done_errors(part, con, _partition_key(i, chunk))
                if old_errors is not None:
                    summary.n_parts_skipped += 1
                    summary.errors.extend(old_errors)
                else:
                    todo.append((task, i, chunk, str(out), options, _part_stamp(fingerprint, model_record)))
        finally:
            con.close()
        done = summary.n_parts_skipped
        if progress:
            progress(done, len(chunks))
        if todo:
            sched: Any = client if client is not None else scheduler or ("sync" if workers <= 1 else "processes")
            # Submit in waves of `workers` partitions (a cluster: its threads) so progress can be reported.
            wave = max(1, sum(client.nthreads().values()) if client is not None else workers)
            env = {}
            if sched == "processes":  # the cores are split between the workers (clinex.threads)
                from clinex.threads import worker_environment

                env = worker_environment(workers)
            saved = {k: os.environ.get(k) for k in env}
            os.environ.update(env)
            pool = None
            try:
                if sched == "processes":
                    # one pool for the whole run (each worker loads the model once, not once a
                    # wave) and one partition per task hand-out: dask's default bundles 6 ready
                    # tasks per process, which ran a wave of 2 partitions in one process
                    # (bench/pv_medline.py: at most 1 worker alive with --workers 2)
                    import multiprocessing
                    from concurrent.futures import ProcessPoolExecutor

                    ctx = multiprocessing.get_context(dask.config.get("multiprocessing.context", "spawn"))
                    pool = ProcessPoolExecutor(max_workers=workers, mp_context=ctx)
                for start in range(0, len(todo), wave):
                    batch = todo[start : start + wave]
                    bag = db.from_sequence(batch, npartitions=len(batch)).map(_run_partition)
                    if client is not None:
                        results = _compute_on_cluster(bag, client, scheduler)
                    elif pool is not None:
                        with dask.config.set(scheduler=sched, num_workers=workers, pool=pool, chunksize=1):
                            results = bag.compute()
                    else:
                        with dask.config.set(scheduler=sched, num_workers=workers):
                            results = bag.compute()
                    failed = [res["write_error"] for res in results if "write_error" in res]
                    if failed:  # a file the OS refused to write (full disk, read-only): stop, keep finished parts
                        raise InputError(failed[0]["message"] + RESUME_HINT, path=failed[0]["path"])
                    for res in results:
                        summary.errors.extend(ItemError(**e) for e in res["errors"])
                    done += len(batch)
                    if progress:
                        progress(done, len(chunks))
            finally:
                if pool is not None:
                    pool.shutdown(wait=True, cancel_futures=True)
                for k, v in saved.items():
                    if v is None:
                        os.environ.pop(k, None)
                    else:
                        os.environ[k] = v

        results_path = out / "results.parquet"
        try:
            if chunks:
                # this run's parts only: a part file of a longer earlier run never comes in
                files = ", ".join(f"'{_sql_path(out / 'parts' / f'part-{i:05d}.parquet')}'"
                                  for i in range(len(chunks)))
                with atomic_path(results_path, force=True) as tmp:
                    con = duckdb.connect()
                    try:
                        con.execute(f"COPY (SELECT * FROM read_parquet([{files}])) "
                                    f"TO '{_sql_path(tmp)}' (FORMAT PARQUET, USE_TMP_FILE false)")
                    except duckdb.IOException as exc:
                        raise _os_error_of(exc) from None
                    finally:
                        con.close()
            else:
                _write_parquet([], spec.columns, results_path)
            con = duckdb.connect()
            try:
                summary.n_rows = int(con.execute(
                    f"SELECT count(*) FROM read_parquet('{_sql_path(results_path)}')").fetchone()[0])
            finally:
                con.close()
            write_atomic(out / "errors.jsonl",
                         (json.dumps(e.__dict__, ensure_ascii=False) + "\n" for e in summary.errors), force=True)
            manifest.update(status="done", n_rows=summary.n_rows, n_errors=len(summary.errors),
                            errors=[e.__dict__ for e in summary.errors])
            write_atomic(manifest_path, json.dumps(manifest, indent=2), force=True)
        except InputError as exc:
            raise InputError(exc.message + RESUME_HINT, path=exc.path) from None
        return summary
    finally:
        if client is not None:
            client.close()


def read_results(out_dir: str | Path, sql: str | None = None) -> list[tuple[Any, ...]]:
    """Query a batch run's ``results.parquet`` with DuckDB.

    Parameters
    ----------
    out_dir : path
        A folder written by :func:`run_batch`.
    sql : str, optional
        A query over the view ``results``; default ``SELECT * FROM results``.

    Returns
    -------
    list of tuple
        The rows.

    Raises
    ------
    InputError
        If the folder holds no ``results.parquet``.
    """
    import duckdb

    path = Path(out_dir) / "results.parquet"
    if not path.is_file():
        raise InputError("no results.parquet (run `clinex batch` first)", path=out_dir)
    con = duckdb.connect()
    try:
        con.execute(f"CREATE VIEW results AS SELECT * FROM read_parquet('{_sql_path(path)}')")
        return con.execute(sql or "SELECT * FROM results").fetchall()
    finally:
        con.close()
