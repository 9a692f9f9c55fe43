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
  (these live in :mod:`clinex.pv.surface_io`, importable from here);
- every surface: :func:`load`, :func:`check_model_name` (registry names only, for a web
  client), :func:`extract` and :func:`extract_text`;
- the web page and its downloads: :func:`event_counts`, :func:`to_phee_dict`,
  :func:`record_pairs`, :func:`drug_entries` (the drug gazetteer), :func:`phee_json_bytes`,
  :func:`brat_zip`.

The model of a run is :class:`clinex.surface.Settings` ``.model``: ``--model``, else
``$CLINEX_PV_MODEL``, else ``auto``.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import zipfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from clinex.errors import ClinexError
from clinex.io.jsonl import JSONL_SUFFIXES, is_jsonl
from clinex.pv.counts import COUNT_COLUMNS, event_counts
from clinex.pv.models import model_names
from clinex.pv.pipeline import RECORDS_PER_CALL
from clinex.pv.surface_io import (
    ExtractInput,
    check_outputs,
    extract_batches,
    medline_records,
    read_input,
    records_from_text,
    screen_records,
    sniff_kind,
    write_output,
)
from clinex.surface import Item, ItemError, TaskSurface, cached_model, folder_files

__all__ = [
    "COLUMNS", "SUFFIXES", "SURFACE", "RECORDS_PER_CALL", "ExtractInput", "model_names", "check_model_name",
    "load", "model_id", "extract", "extract_text", "expand", "process", "resolve_model", "drug_screen", "records_from_text",
    "medline_records", "sniff_kind", "read_input", "screen_records", "extract_batches", "check_outputs",
    "write_output", "event_counts", "jsonl_records", "to_phee_dict", "record_pairs", "drug_entries", "phee_json_bytes", "brat_zip",
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
    from clinex.pv.models import REGISTRY

    REGISTRY.check_name(name, field="model")


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


def jsonl_records(data: bytes, **options: Any) -> Iterator[Any]:
    """The records of JSON-lines bytes (:func:`clinex.pv.pipeline.jsonl_records`)."""
    from clinex.pv.pipeline import jsonl_records as records

    return records(data, **options)


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


def drug_entries(text: str) -> list[dict[str, Any]]:
    """The drug gazetteer's entries of the drugs ``text`` names, in order
    (:func:`clinex.pv.gazetteer.find_drugs` on the tokens of :func:`clinex.pv.features.tokenize`);
    ``[]`` for text without tokens."""
    from clinex.pv.features import tokenize
    from clinex.pv.gazetteer import find_drugs

    words = [text[s:e] for s, e in tokenize(text)]
    if not words:
        return []
    return [rec for rec, _, _ in find_drugs(words)]


def _gazetteer_keys(text: str) -> set[str]:
    """Canonical names (lower case) of the gazetteer drugs in ``text`` (any synonym)."""
    return {str(rec["name"]).lower() for rec in drug_entries(text) if rec.get("name")}


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


# --------------------------------------------------------------------------- the web page and its downloads


def to_phee_dict(item: Any) -> dict[str, Any]:
    """One record's events in the PHEE JSON schema (:func:`clinex.pv.formats.phee_json.to_phee_dict`)."""
    from clinex.pv.formats.phee_json import to_phee_dict as as_phee

    return as_phee(item)


def record_pairs(item: Any) -> list[Any]:
    """A record's drug -> reaction pairs (:func:`clinex.pv.pairs.record_pairs`)."""
    from clinex.pv.pairs import record_pairs as pairs

    return pairs(item)


def phee_json_bytes(items: list[Any]) -> bytes:
    """The PHEE JSON lines ``clinex pv extract -o x.json`` writes for ``items``
    (:func:`clinex.pv.formats.phee_json.write_phee_json`)."""
    from clinex.pv.formats.phee_json import write_phee_json

    folder = Path(tempfile.mkdtemp(prefix="clinex-pv-"))
    try:
        out = folder / "out.json"
        write_phee_json(items, out)
        return out.read_bytes()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def brat_zip(items: list[Any]) -> bytes:
    """A zip of the brat ``.txt``/``.ann`` pairs ``clinex pv extract --format brat`` writes
    (:func:`clinex.pv.formats.brat.write_brat`), name order, and ``WARNINGS.txt`` when the
    writer warned."""
    from clinex.pv.formats.brat import write_brat

    folder = Path(tempfile.mkdtemp(prefix="clinex-pv-"))
    try:
        notes: list[str] = []
        for item in items:
            write_brat(item, folder / "brat", on_warning=notes.append)
        buf = folder / "brat.zip"
        with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
            for p in sorted((folder / "brat").iterdir()):
                z.write(p, p.name)
            if notes:
                z.writestr("WARNINGS.txt", "\n".join(notes) + "\n")
        return buf.read_bytes()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
