"""The inputs and outputs of ``clinex pv extract`` (part of the PV surface adapter, :mod:`clinex.pv.surface`).

Read: :func:`read_input` (``--example``, TEXT, stdin or ``--input``: plain text, JSON lines
or PubMed/MEDLINE, sniffed by :func:`sniff_kind`) as an :class:`ExtractInput`;
:func:`records_from_text`, :func:`medline_records`; :func:`screen_records` (``--drug``).
Run: :func:`extract_batches`. Write: :func:`check_outputs`, :func:`write_output`. Every
name is importable from :mod:`clinex.pv.surface` too.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clinex.errors import ClinexError, InputError
from clinex.io.jsonl import is_jsonl

__all__ = [
    "ExtractInput", "records_from_text", "medline_records", "sniff_kind", "read_input", "screen_records",
    "extract_batches", "check_outputs", "write_output",
]


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
