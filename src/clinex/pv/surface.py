"""The PV surface adapter: inputs -> records -> events -> rows and files.

What ``clinex pv extract``, ``clinex batch pv`` and the web app share of the PV task (the
surfaces reach the task through this module only; import contract ``surfaces`` in
``pyproject.toml``):

- batch (:data:`SURFACE`, looked up by :func:`clinex.surface.get_surface`): :func:`expand`
  (an input path as items), :func:`process` (items as result rows of :data:`COLUMNS`),
  :func:`resolve_model`, the ``drugs`` screen (:func:`drug_screen`);
- the command line: :func:`read_input` (text, stdin, a file: plain text, JSON lines or
  PubMed/MEDLINE, sniffed by :func:`sniff_kind`), :func:`screen_records`,
  :func:`extract_batches`, :func:`check_outputs`, :func:`write_output`;
- every surface: :func:`load`, :func:`check_model_name` (registry names only, for a web
  client), :func:`extract` and :func:`extract_text`.

The model of a run is :class:`clinex.surface.Settings` ``.model``: ``--model``, else
``$CLINEX_PV_MODEL``, else ``auto``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clinex.errors import ClinexError, InputError, ModelError
from clinex.io.jsonl import JSONL_SUFFIXES, is_jsonl
from clinex.pv.counts import COUNT_COLUMNS, event_counts
from clinex.pv.models import model_names
from clinex.pv.pipeline import RECORDS_PER_CALL
from clinex.surface import Item, ItemError, TaskSurface, cached_model, folder_files

__all__ = [
    "COLUMNS", "SUFFIXES", "SURFACE", "RECORDS_PER_CALL", "ExtractInput", "model_names", "check_model_name",
    "load", "model_id", "extract", "extract_text", "expand", "process", "resolve_model", "drug_screen", "records_from_text",
    "medline_records", "sniff_kind", "read_input", "screen_records", "extract_batches", "check_outputs",
    "write_output",
]

SUFFIXES = (*JSONL_SUFFIXES, ".txt", ".xml", ".xml.gz")
"""The files a folder input of ``clinex batch pv`` stands for."""

COLUMNS: dict[str, str] = {
    "id": "VARCHAR", "source": "VARCHAR", "text": "VARCHAR", **dict.fromkeys(COUNT_COLUMNS, "INTEGER"),
    "model": "VARCHAR", "event_probability": "DOUBLE", "phee_json": "VARCHAR", "meta_json": "VARCHAR",
    "pairs_json": "VARCHAR", "n_drugs_normalised": "INTEGER", "n_drugs_unmatched": "INTEGER",
}
"""The result columns of ``clinex batch pv`` and their DuckDB types, in order."""


# --------------------------------------------------------------------------- models


def check_model_name(name: str) -> None:
    """Only the registry's model names (:data:`clinex.pv.models.REGISTRY`): a web client
    must not probe server paths.

    Raises
    ------
    ModelError
        ``name`` is not a registry name (the message lists them).
    """
    from clinex.pv.models import unknown_model_message

    if name not in model_names():
        raise ModelError(unknown_model_message(name, folders=False), field="model")


def load(spec: str) -> Any:
    """The PHEE model ``spec`` names (:func:`clinex.pv.models.load_model`; cached per kind).

    Raises
    ------
    ModelError
        Unknown name, missing extra, not a model folder.
    """
    from clinex.pv.models import load_model

    return load_model(spec)


def model_id(model: Any) -> str:
    """The versioned id of a loaded model (:func:`clinex.pv.models.model_id`)."""
    from clinex.pv.models import model_id as versioned_id

    return versioned_id(model)


def extract(records: list[tuple[str, str]], model: Any, **options: Any) -> list[Any]:
    """Events of ``(id, text)`` records, each passed to the model whole
    (:func:`clinex.pv.pipeline.extract_records`)."""
    from clinex.pv.pipeline import extract_records

    return extract_records(records, model=model, **options)


def extract_text(text: str, model: Any, *, name: str, split: bool = True) -> tuple[Any, list[Any]]:
    """(whole record, [(start, end, sentence record)]) of plain text
    (:func:`clinex.pv.pipeline.extract_text_sentences`)."""
    from clinex.pv.pipeline import extract_text_sentences

    return extract_text_sentences(text, model=model, record_id=name, split=split)


def resolve_model(spec: str, criteria: Sequence[str] = ()) -> tuple[str, dict[str, str]]:
    """Load the PHEE model ``spec`` names; return what workers load and what the manifest records.

    Parameters
    ----------
    spec : str
        ``auto``, ``crf``, ``transformer`` or a model folder (:func:`clinex.pv.models.load_model`).
    criteria : sequence of str
        Not used (the cohort task's).

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
    from clinex.pv.models import AUTO, REGISTRY

    mid = model_id(load(spec))
    if spec in model_names():
        if spec == AUTO:  # the kind auto chose, so that every worker loads the same one
            spec = next((k for k, v in REGISTRY.items() if mid == v.version), spec)
        return spec, {"model": mid}
    folder = str(Path(spec).resolve())
    return folder, {"model": mid, "model_folder": folder}


# --------------------------------------------------------------------------- batch


def expand(path: Path) -> Iterator[Item | ItemError]:
    """JSON lines (``id`` + ``text`` or PHEE ``context``) as one item per record;
    PubMed/MEDLINE XML as one item per citation (id = PMID); plain text split into
    sentences; a folder gives its ``.jsonl``/``.json``/``.txt``/``.xml``/``.xml.gz`` (none:
    one error item). Each item's payload is ``(text, source file, offset, meta)``: the
    offset of a plain-text file's sentence in that file, None for a record; ``meta`` the
    citation's metadata (:meth:`clinex.io.medline.MedlineCitation.meta`), else None."""
    from clinex.io.medline import is_medline_file
    from clinex.io.textfile import read_text, require_file
    from clinex.pv.pipeline import text_records

    for p in folder_files(path, SUFFIXES):
        if isinstance(p, ItemError):
            yield p
            continue
        # one unreadable file (binary, not UTF-8) is reported under its own name and the
        # folder's other files go on
        try:
            if is_jsonl(p):
                yield from _jsonl_items(p, require_file(p).read_bytes())
            elif is_medline_file(p):
                yield from _medline_items(p)
            else:
                # the plain-text rule of `clinex pv extract`: blank text is one empty record
                for rid, sent, start in text_records(read_text(p), p.stem, str(p)):
                    yield Item(rid, (sent, str(p), start, None))
        except ClinexError as exc:
            yield ItemError(str(p), str(exc))


def _jsonl_items(p: Path, data: bytes) -> Iterator[Item | ItemError]:
    """One item per record of a JSON-lines file; each bad line an error item ``FILE:LINE``
    (a record over MAX_PV_TEXT_CHARS too), in file order."""
    from clinex.pv.pipeline import jsonl_records

    errors: list[ClinexError] = []
    for rec in jsonl_records(data, path=p, errors="skip", on_error=errors.append):
        yield from (ItemError(f"{p}:{e.line}", str(e)) for e in errors)
        errors.clear()
        yield Item(rec.id, (rec.text, str(p), None, None))
    yield from (ItemError(f"{p}:{e.line}", str(e)) for e in errors)


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


def _extract_items(records: list[tuple[str, str]], sources: list[str], offsets: list[int | None], model: Any,
                   batch_size: int) -> tuple[list[tuple[str, Any]], list[ItemError]]:
    """(source, record events) of each record, one batched model call per ``batch_size``
    records (as ``clinex pv extract --batch-size``); when the model rejects a batch, each
    record alone, so that the one it rejects is an error item and the others are kept."""
    from clinex.pv.pipeline import extract_records

    try:  # extract_records gives one result per record, in order
        return list(zip(sources, [r for b in range(0, len(records), batch_size)
                                  for r in extract_records(records[b : b + batch_size], model=model,
                                                           offsets=offsets[b : b + batch_size])])), []
    except ClinexError:  # isolate the item the model rejects; keep the others
        results: list[tuple[str, Any]] = []
        errors: list[ItemError] = []
        for rec, src, start in zip(records, sources, offsets):
            try:
                results.extend((src, r) for r in extract_records([rec], model=model, offsets=[start]))
            except ClinexError as exc:
                errors.append(ItemError(rec[0], str(exc)))
        return results, errors


def _row(src: str, item: Any, meta: dict[str, Any] | None) -> dict[str, Any]:
    """One result row of :data:`COLUMNS` for a record's events."""
    from clinex.pv.formats.phee_json import to_phee_dict
    from clinex.pv.normalise import drug_counts
    from clinex.pv.pairs import record_pairs

    return {
        "id": item.id,
        "source": src,
        "text": item.text,
        # asserted events only; negated ones in their own columns (clinex.pv.counts)
        **event_counts(item.events),
        "model": item.model,
        "event_probability": item.event_probability,
        "phee_json": json.dumps(to_phee_dict(item), ensure_ascii=False),
        "meta_json": json.dumps(meta, ensure_ascii=False) if meta is not None else None,
        # the record's case-level drug -> reaction pairs (clinex.pv.pairs.record_pairs)
        "pairs_json": json.dumps([p.model_dump(mode="json") for p in record_pairs(item)], ensure_ascii=False),
        # Drug / Combination drug mentions of all events with / without a gazetteer entry
        **drug_counts(item.events),
    }


def process(
    items: Sequence[Item], model: str | None = None, batch_size: int = RECORDS_PER_CALL
) -> tuple[list[dict[str, Any]], list[ItemError]]:
    """One row of :data:`COLUMNS` per record; a record the model rejects is an error item.

    ``model`` is the spec :func:`resolve_model` returned (None: :class:`clinex.surface.Settings`'
    choice: ``$CLINEX_PV_MODEL``, else ``auto``), loaded once per worker process.
    """
    from clinex.pv.models import load_model
    from clinex.surface import Settings

    spec = Settings.resolve("pv", model=model).model
    loaded = cached_model(f"pv:{spec}", lambda: load_model(spec))
    records = [(it.id, it.payload[0]) for it in items]
    sources = [it.payload[1] for it in items]
    offsets = [it.payload[2] for it in items]  # a plain-text file's sentence starts (None: JSON lines)
    # MEDLINE citations' metadata, by (PMID, file): a PMID is unique within its file
    metas = {(it.id, it.payload[1]): it.payload[3] for it in items if it.payload[3] is not None}
    results, errors = _extract_items(records, sources, offsets, loaded, batch_size)
    return [_row(src, item, metas.get((item.id, src))) for src, item in results], errors


def _item_text(item: Item) -> str:
    """The record text of a batch item (what ``--drug`` matches)."""
    return item.payload[0]


# --------------------------------------------------------------------------- drug screen


def _gazetteer_keys(text: str) -> set[str]:
    """Canonical names (lower case) of the gazetteer drugs in ``text`` (any synonym)."""
    from clinex.pv.features import tokenize
    from clinex.pv.gazetteer import find_drugs

    words = [text[s:e] for s, e in tokenize(text)]
    return {str(rec["name"]).lower() for rec, _, _ in find_drugs(words) if rec.get("name")}


def _gazetteer_name_keys(name: str) -> set[str]:
    """Canonical names (lower case) of one ``--drug`` name: its own gazetteer entry (any case,
    words joined by one space), else the drugs its words name (a brand name and its dose form)."""
    from clinex.pv.gazetteer import drug_record

    own = {str(rec["name"]).lower() for rec in drug_record(" ".join(name.split()).lower()) if rec.get("name")}
    return own or _gazetteer_keys(name)


def drug_screen(values: list[str]):  # noqa: ANN201 - clinex.io.screen.TermScreen, imported lazily
    """The ``--drug NAME|FILE`` screen of ``clinex pv extract`` and ``clinex batch pv``.

    A record is kept when its text mentions one of the drugs: a whole-word, case-insensitive
    match of a name as given, or any name the drug gazetteer (:mod:`clinex.pv.gazetteer`)
    gives the same canonical drug ("paracetamol", "Tylenol" and "acetaminophen" are one).
    A value naming an existing file is read as one name a line (:func:`clinex.io.screen.read_terms`).

    Returns
    -------
    clinex.io.screen.TermScreen
        ``match(text)``; ``unknown`` lists the names the gazetteer does not know (matched as written).

    Raises
    ------
    InputError
        A names file with no name; EncodingError: a names file that is not UTF-8.
    """
    from clinex.io.screen import TermScreen, read_terms

    return TermScreen(read_terms(values), lookup=_gazetteer_keys, term_keys=_gazetteer_name_keys)


SURFACE = TaskSurface("pv", COLUMNS, expand, process, resolve_model=resolve_model,
                      batch_options=("drugs", "batch_size"), screen=drug_screen, item_text=_item_text)
"""The PV task in ``clinex batch`` (:func:`clinex.surface.get_surface`)."""


# --------------------------------------------------------------------------- clinex pv extract



@dataclass
class ExtractInput:
    """What ``clinex pv extract`` read: records, where plain-text sentences start, the input file.

    Attributes
    ----------
    records : list of (str, str)
        ``(id, text)`` per record.
    offsets : list of int or None
        Plain text: each sentence record's start in the text; else None.
    in_file : Path or None
        The input file (None: TEXT, stdin or ``--example``).
    kind : {"text", "jsonl", "medline"}
    n_read : int
        Records read (before a ``--drug`` screen).
    """

    records: list[tuple[str, str]]
    offsets: list[int] | None = None
    in_file: Path | None = None
    kind: str = "text"
    n_read: int = 0


def records_from_text(text: str, name: str, path: str | None = None) -> tuple[list[tuple[str, str]], list[int]]:
    """Plain text -> records and their offsets in ``text``: :func:`clinex.pv.pipeline.text_records`
    (ids ``NAME_1``...)."""
    from clinex.pv.pipeline import text_records

    pieces = text_records(text, name, path)
    return [(rid, sent) for rid, sent, _ in pieces], [start for _, _, start in pieces]


def medline_records(source, label: str, strict: bool, note) -> list[tuple[str, str]]:  # noqa: ANN001
    """(PMID, title + " " + abstract) of each citation of a PubMed/MEDLINE file (clinex.io.medline).

    Bad citations go to ``note`` (or raise with ``strict``). A file-level error (truncated gzip,
    not well formed, unsafe XML) is raised when no citation came before it or with ``strict``;
    otherwise it goes to ``note`` too and the citations before it are kept (exit 1).
    """
    from clinex.io.limits import MAX_PV_TEXT_CHARS
    from clinex.io.medline import iter_medline

    records: list[tuple[str, str]] = []
    try:
        for c in iter_medline(source, path=label, errors="raise" if strict else "skip", on_error=note,
                              max_chars=MAX_PV_TEXT_CHARS):
            records.append((c.pmid, c.text))
    except ClinexError as exc:
        if strict or not records:
            raise
        note(exc)
    return records


def sniff_kind(in_file: Path | None, data: bytes | None) -> tuple[str, bytes | None]:
    """The kind of an input (``--input-format auto``) and its bytes if they had to be read.

    ``.jsonl``/``.json``/``.ndjson`` (:func:`clinex.io.jsonl.is_jsonl`) is JSON lines; a
    MEDLINE name, gzip data or a ``<PubmedArticleSet>`` root is MEDLINE (sniffed, not only
    named); else content starting with ``{`` is JSON lines, anything else plain text.
    ``data`` is stdin's bytes (``in_file`` None), or None for a file not read yet.
    """
    from clinex.io.medline import is_gzip, is_medline_file, looks_like_medline

    if is_jsonl(in_file):
        return "jsonl", data
    if is_medline_file(in_file) if data is None else is_gzip(data[:2]) or looks_like_medline(data[:4096]):
        return "medline", data
    if data is None:
        data = in_file.read_bytes()
    return ("jsonl" if is_jsonl(None, data) else "text"), data


def _open_input(text: str | None, input_path: str | None) -> tuple[bytes | None, Path | None, str, str]:
    """(stdin's bytes or None, the input file or None, record name, label) of TEXT '-' or --input."""
    import sys

    if text == "-" or input_path == "-":
        data = sys.stdin.buffer.read() if hasattr(sys.stdin, "buffer") else sys.stdin.read().encode("utf-8")
        return data, None, "stdin", "<stdin>"
    in_file = Path(input_path)
    if in_file.is_dir():
        raise InputError("is a folder; give a file (plain text, JSON lines or PubMed/MEDLINE XML)", path=in_file)
    if not in_file.is_file():
        raise InputError("no such file", path=in_file)
    return None, in_file, in_file.stem, str(in_file)


def read_input(text: str | None, input_path: str | None, example: bool, input_format: str, strict: bool,
               note: Callable[[Exception], None], warn: Callable[[str], None]) -> ExtractInput:
    """The records of ``clinex pv extract``'s input: ``--example``, TEXT, stdin or ``--input``.

    Parameters
    ----------
    text, input_path : str or None
        TEXT and ``--input`` (``-``: standard input).
    example : bool
        The bundled example sentence.
    input_format : {"auto", "text", "jsonl", "medline"}
    strict : bool
        Stop at the first bad JSON line or citation.
    note : callable
        Called with each bad line or citation (skipped).
    warn : callable
        Called with each warning line (no citations, no records, blank text).

    Raises
    ------
    InputError
        A folder or missing file; no usable line or citation.
    EncodingError
        Plain text that is binary or not UTF-8.
    """
    if example:
        from clinex.pv.examples import example as _example

        return _read([_example(0)])
    if text is not None and text != "-":
        return _read(*records_from_text(text, "text"))
    data, in_file, name, label = _open_input(text, input_path)
    kind = input_format
    if kind == "auto":
        kind, data = sniff_kind(in_file, data)
    if kind == "medline":
        return _read_medline(data, in_file, label, strict, note, warn)
    if data is None:
        data = in_file.read_bytes()
    if kind == "jsonl":
        return _read_jsonl(data, in_file, label, strict, note, warn)
    from clinex.io.textfile import decode_text

    decoded = decode_text(data, path=label)
    records, offsets = records_from_text(decoded, name, label)
    if not decoded.strip():  # still one empty record (the one rule for blank text), but say so
        warn(f"warning: {label}: no text ({len(data)} bytes); one record with no events")
    return _read(records, offsets, in_file, "text")


def _read(records: list[tuple[str, str]], offsets: list[int] | None = None, in_file: Path | None = None,
          kind: str = "text") -> ExtractInput:
    """An :class:`ExtractInput` of records read."""
    return ExtractInput(records, offsets, in_file, kind, len(records))


def _read_medline(data: bytes | None, in_file: Path | None, label: str, strict: bool,
                  note: Callable[[Exception], None], warn: Callable[[str], None]) -> ExtractInput:
    """A PubMed/MEDLINE input, streamed from the file: a baseline file is never read whole."""
    import io

    bad: list[Exception] = []

    def counted(exc: Exception) -> None:
        bad.append(exc)
        note(exc)

    records = medline_records(in_file if data is None else io.BytesIO(data), label, strict, counted)
    if bad and not records:
        raise InputError(f"no usable citation ({len(bad)} bad citations)", path=label)
    if not records:
        warn(f"warning: {label}: no citations (an empty <PubmedArticleSet>)")
    return _read(records, None, in_file, "medline")


def _read_jsonl(data: bytes, in_file: Path | None, label: str, strict: bool,
                note: Callable[[Exception], None], warn: Callable[[str], None]) -> ExtractInput:
    """A JSON-lines input: one record per line (a record over MAX_PV_TEXT_CHARS is a bad line too)."""
    from clinex.pv.pipeline import jsonl_records

    bad: list[Exception] = []

    def counted(exc: Exception) -> None:
        bad.append(exc)
        note(exc)

    records = [(r.id, r.text) for r in jsonl_records(data, path=label, errors="raise" if strict else "skip",
                                                     on_error=counted)]
    if bad and not records:
        raise InputError(f"no usable line ({len(bad)} bad lines)", path=label)
    if not records:
        warn(f"warning: {label}: no records (empty JSON lines input)")
    return _read(records, None, in_file, "jsonl")


def screen_records(read: ExtractInput, screen: Any, warn: Callable[[str], None]) -> None:
    """Keep only the records that mention one of ``screen``'s drugs (``--drug``); say so."""
    for unknown in screen.unknown:
        warn(f"warning: --drug {unknown!r} is not in the drug gazetteer; matched as written only")
    keep = [k for k, (_, t) in enumerate(read.records) if screen.match(t)]
    n_all = len(read.records)
    read.records = [read.records[k] for k in keep]
    read.offsets = None if read.offsets is None else [read.offsets[k] for k in keep]
    warn(f"--drug: {n_all - len(read.records)} of {n_all} records screened out "
         f"(no mention of {', '.join(screen.terms[:5])}{', ...' if len(screen.terms) > 5 else ''})")


def check_outputs(output: Path | None, fmt: str, force: bool, read: ExtractInput) -> None:
    """Refuse an output that is the input file, or that exists without ``force``.

    Raises
    ------
    InputError
        Naming the output file (or the first brat file) that would be overwritten.
    """
    if output is None or str(output) == "-":
        return
    if read.in_file is not None and output.exists() and output.resolve() == read.in_file.resolve():
        raise InputError("--output is the input file; refusing to overwrite it", path=output)
    if fmt == "phee" and output.exists() and not force:
        raise InputError("output file exists; pass --force to replace it", path=output)
    if fmt == "brat" and not force:
        for rid, _ in read.records:
            for suffix in (".txt", ".ann"):
                if (output / f"{rid}{suffix}").exists():
                    raise InputError("file exists; pass --force to replace it", path=output / f"{rid}{suffix}")


def extract_batches(read: ExtractInput, model: Any, batch_size: int, min_trigger_prob: float,
                    advance: Callable[[int], None]) -> tuple[list[Any], list[Exception]]:
    """Events of every record, one batched model call per ``batch_size`` records.

    Returns
    -------
    (list of SentenceEvents, list of Exception)
        The records' events, and the records the model failed on (an LLM call).

    Raises
    ------
    ClinexError
        Every non-blank record failed (server down, wrong model): the first failure.
    """
    from clinex.pv.pipeline import extract_records

    items: list[Any] = []
    failed: list[Exception] = []
    records, offsets = read.records, read.offsets
    for b in range(0, len(records), batch_size):
        part = records[b : b + batch_size]
        items += extract_records(part, model=model, min_trigger_prob=min_trigger_prob,
                                 on_error=lambda _rid, exc: failed.append(exc),
                                 offsets=None if offsets is None else offsets[b : b + batch_size])
        advance(len(part))
    if failed and len(failed) == sum(1 for _, t in records if t.strip()):
        raise failed[0]  # nothing extracted at all: exit 2, no output
    return items, failed


def write_output(items: list[Any], output: Path, fmt: str, force: bool, warn: Callable[[str], None]) -> None:
    """Write the records' events to an ``--output`` file (PHEE JSON lines) or folder (brat).

    Raises
    ------
    InputError
        The folder or file cannot be written.
    """
    if fmt == "brat":
        from clinex.pv.formats.brat import write_brat

        try:
            output.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise InputError(f"cannot create the output folder ({exc.strerror})", path=output) from None
        for item in items:
            write_brat(item, output, overwrite=force, on_warning=lambda msg: warn(f"warning: {msg}"))
        return
    from clinex.pv.formats.phee_json import write_phee_json

    write_phee_json(items, output, overwrite=force)
