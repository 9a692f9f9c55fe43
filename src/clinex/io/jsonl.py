"""JSON lines of texts to process: one ``{"id": ..., "text": ...}`` object per line.

Used by the ``extract`` / ``assess`` / ``screen`` commands for batches of texts. Bad
lines (not UTF-8, not JSON, not an object, a missing or non-string field) raise a
:class:`~clinex.errors.FormatError` / :class:`~clinex.errors.EncodingError` naming
the file and the 1-based line; with ``errors="skip"`` they are reported and the
remaining lines are still read. A file with NUL bytes is binary and always
refused as a whole.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Literal, NamedTuple

from clinex.errors import ClinexError, EncodingError, FormatError, report_to_stderr
from clinex.io.textfile import iter_json_lines, require_file

__all__ = ["TextRecord", "iter_jsonl_texts", "parse_jsonl_data", "looks_like_jsonl", "is_jsonl", "JSONL_SUFFIXES"]


class TextRecord(NamedTuple):
    """One input text: its id, the text, and the 1-based line it came from."""

    id: str
    text: str
    line: int


#: File name endings read as JSON lines (case-insensitive; :func:`is_jsonl`).
JSONL_SUFFIXES = (".jsonl", ".json", ".ndjson")


def looks_like_jsonl(data: str | bytes) -> bool:
    """True if the first non-blank character of ``data`` is ``{`` (a JSON object).

    Examples
    --------
    >>> looks_like_jsonl('\ufeff  {"id": 1}'), looks_like_jsonl(b"Aspirin caused a rash."), looks_like_jsonl(b" {}")
    (True, False, True)
    """
    if isinstance(data, bytes):
        return data[:4096].lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"{")
    return data.lstrip("\ufeff \t\r\n").startswith("{")


def is_jsonl(name: str | Path | None, head: str | bytes | None = None) -> bool:
    """The one JSON-lines test of every surface (``clinex pv extract``, ``clinex batch``,
    the web upload): a name ending in :data:`JSONL_SUFFIXES` (any case), or, when ``head``
    (the start of the content) is given, content whose first non-blank character is ``{``.

    Examples
    --------
    >>> is_jsonl("notes.JSONL"), is_jsonl("notes.txt"), is_jsonl("notes.txt", b'{"id": "1"}')
    (True, False, True)
    """
    if name is not None and Path(str(name)).suffix.lower() in JSONL_SUFFIXES:
        return True
    return head is not None and looks_like_jsonl(head)


def _binary(data: bytes) -> bool:
    """True when the first non-blank line is not a NUL-free JSON object: a binary file,
    refused whole; otherwise a NUL byte only spoils its own line."""
    first = next((ln for ln in data.removeprefix(b"\xef\xbb\xbf").split(b"\n") if ln.strip()), b"")
    return b"\x00" in first or not first.lstrip().startswith(b"{")


def parse_jsonl_data(
    data: bytes,
    *,
    path: str | Path | None = None,
    id_field: str = "id",
    text_field: str = "text",
    fallback_text_field: str | None = None,
    errors: Literal["raise", "skip"] = "raise",
    on_error: Callable[[ClinexError], None] | None = None,
) -> Iterator[TextRecord]:
    """Records of JSON lines held in memory (see :func:`iter_jsonl_texts`).

    ``fallback_text_field`` (e.g. ``"context"``, PHEE's key) is read when a line has
    no ``text_field``; ``path`` only names the source in error messages.
    """
    if errors not in ("raise", "skip"):
        raise ValueError(f"errors must be 'raise' or 'skip', got {errors!r}")
    name = str(path) if path is not None else "<stdin>"
    if b"\x00" in data and _binary(data):
        line = data[: data.index(b"\x00")].count(b"\n") + 1
        raise EncodingError("binary file (NUL byte), expected UTF-8 JSON lines", path=name, line=line)
    # a NUL byte in a later line of a JSON-lines file is that line's error (iter_json_lines)
    report = on_error or report_to_stderr
    seen: set[str] = set()
    for n, obj in iter_json_lines(data, path=name):
        try:
            if isinstance(obj, ClinexError):
                raise obj
            tkey = text_field
            if tkey not in obj and fallback_text_field is not None and fallback_text_field in obj:
                tkey = fallback_text_field
            for key in (id_field, tkey):
                if key not in obj:
                    raise FormatError("missing field", path=name, line=n, field=key)
            rid, text = obj[id_field], obj[tkey]
            if isinstance(rid, int) and not isinstance(rid, bool):
                rid = str(rid)
            if not isinstance(rid, str):
                raise FormatError(
                    f"expected a string or integer, got {type(rid).__name__}", path=name, line=n, field=id_field
                )
            if not isinstance(text, str):
                raise FormatError(
                    f"expected a string, got {type(text).__name__}", path=name, line=n, field=tkey
                )
            if rid in seen:
                raise FormatError(f"duplicate id {rid!r}", path=name, line=n, field=id_field)
            seen.add(rid)
        except ClinexError as exc:
            if errors == "raise":
                raise
            report(exc)
            continue
        yield TextRecord(rid, text, n)


def iter_jsonl_texts(
    path: str | Path,
    *,
    id_field: str = "id",
    text_field: str = "text",
    fallback_text_field: str | None = None,
    errors: Literal["raise", "skip"] = "raise",
    on_error: Callable[[ClinexError], None] | None = None,
) -> Iterator[TextRecord]:
    """Yield the ``(id, text, line)`` records of a JSON lines file.

    Parameters
    ----------
    path : str or Path
        UTF-8 JSON lines; blank lines are ignored, a UTF-8 byte-order mark is dropped.
    id_field, text_field : str
        Keys of the id (string or integer) and of the text (string).
    fallback_text_field : str, optional
        Key read when a line has no ``text_field`` (``"context"`` for PHEE files).
    errors : {"raise", "skip"}, default "raise"
        ``"raise"`` stops at the first bad line; ``"skip"`` reports it through
        ``on_error`` (default: ``[CODE] file:line: message`` on stderr) and goes on.
    on_error : callable, optional
        Receives each skipped line's error.

    Yields
    ------
    TextRecord

    Raises
    ------
    InputError
        No such file.
    EncodingError
        The file holds NUL bytes (binary; always raised), or a line is not UTF-8.
    FormatError
        A line that is not a JSON object with the two fields, or a repeated id
        (names file, line and field).
    """
    p = require_file(path)
    yield from parse_jsonl_data(
        p.read_bytes(),
        path=p,
        id_field=id_field,
        text_field=text_field,
        fallback_text_field=fallback_text_field,
        errors=errors,
        on_error=on_error,
    )
