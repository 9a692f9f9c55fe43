"""Reading user text files safely: UTF-8 only, binary files refused with a clear error,
JSON lines decoded line by line so that one bad line can be reported and skipped."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from clinex.errors import ClinexError, EncodingError, FormatError, InputError

__all__ = [
    "read_text",
    "decode_text",
    "check_nul",
    "utf8_error",
    "iter_json_lines",
    "parse_json",
    "MAX_INT_DIGITS",
    "require_file",
    "parse_yaml",
]

#: The most digits (sign left out) an integer in a JSON value may have: Python's default
#: int-conversion limit (``sys.get_int_max_str_digits()``, 4,300 since Python 3.11,
#: CVE-2020-10735). No clinex field needs more than a few; a longer one is a
#: :class:`FormatError` for its line, not a ``ValueError`` traceback.
MAX_INT_DIGITS = 4300


def require_file(path: str | Path) -> Path:
    """``path`` as a Path if it names an existing regular file.

    Raises
    ------
    InputError
        ``no such file``, or ``is a folder, not a file`` for a folder (so that a user
        who gave a folder is not told it does not exist).
    """
    p = Path(path)
    if p.is_dir():
        raise InputError("is a folder, not a file", path=p)
    if not p.is_file():
        raise InputError("no such file", path=p)
    return p


def parse_yaml(
    raw: str, *, path: str | Path, error: type[ClinexError] = FormatError, what: str = "not valid YAML"
) -> Any:
    """Parse YAML text (``yaml.safe_load``); a syntax error names the file and line.

    Parameters
    ----------
    raw : str
        The YAML text.
    path : str or Path
        Where it came from (a file, or a resource name such as
        ``clinex/resources/rob/cues.yaml``), for the message.
    error : ClinexError subclass, default FormatError
        The error raised (criterion files raise ``SchemaError``).
    what : str, default "not valid YAML"
        The start of the message.

    Returns
    -------
    Any
        The parsed document (``None`` for an empty one).

    Raises
    ------
    error
        ``<what>: <problem>`` with the 1-based line of the problem when PyYAML gives one.
    """
    import yaml

    try:
        return yaml.safe_load(raw)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        raise error(f"{what}: {getattr(exc, 'problem', exc)}", path=path, line=line) from None


def read_text(path: str | Path) -> str:
    """Read a UTF-8 text file (a UTF-8 byte-order mark is dropped).

    Parameters
    ----------
    path : str or Path

    Returns
    -------
    str
        The text with newlines as in the file (no newline translation, so that
        character offsets match what other tools see).

    Raises
    ------
    InputError
        If the file does not exist or is a folder.
    EncodingError
        If the file holds NUL bytes (binary) or is not valid UTF-8; the message
        names the file and the 1-based line of the first bad byte.
    """
    p = require_file(path)
    return decode_text(p.read_bytes(), path=p, nul_limit=8192)


def check_nul(
    data: bytes, *, path: str | Path | None = None, expected: str = "UTF-8 text", limit: int | None = None
) -> None:
    """Refuse binary data: the one NUL-byte check of clinex's text readers.

    Parameters
    ----------
    data : bytes
        The file's content.
    path : str or Path, optional
        Names the source in the message.
    expected : str, default "UTF-8 text"
        What the file should have held, for the message (``"XML text"``).
    limit : int, optional
        Look at the first ``limit`` bytes only (default: all of them).

    Raises
    ------
    EncodingError
        ``data`` holds a NUL byte; the message names the file and the 1-based line.
    """
    at = data.find(b"\x00", 0, limit if limit is not None else len(data))
    if at >= 0:
        line = data.count(b"\n", 0, at) + 1
        raise EncodingError(f"binary file (NUL byte), expected {expected}", path=path, line=line)


def utf8_error(data: bytes, exc: UnicodeDecodeError, *, path: str | Path | None = None) -> EncodingError:
    """The one invalid-UTF-8 error: names the file, the 1-based line, the byte and its offset."""
    line = data.count(b"\n", 0, exc.start) + 1
    return EncodingError(
        f"not UTF-8 text (byte 0x{data[exc.start]:02x} at byte offset {exc.start})", path=path, line=line
    )


def decode_text(
    data: bytes, *, path: str | Path | None = None, expected: str = "UTF-8 text", nul_limit: int | None = None
) -> str:
    """Decode UTF-8 text bytes after :func:`check_nul` (a UTF-8 byte-order mark is dropped).

    Parameters
    ----------
    data : bytes
    path : str or Path, optional
        Names the source in messages.
    expected : str, default "UTF-8 text"
        For the NUL-byte message.
    nul_limit : int, optional
        Look for NUL bytes in the first ``nul_limit`` bytes only.

    Returns
    -------
    str
        The text, newlines untranslated.

    Raises
    ------
    EncodingError
        A NUL byte, or invalid UTF-8; the message names the file and the line.
    """
    check_nul(data, path=path, expected=expected, limit=nul_limit)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise utf8_error(data, exc, path=path) from None
    return text.removeprefix("\ufeff")


def iter_json_lines(
    data: bytes, *, path: str | Path | None = None
) -> Iterator[tuple[int, dict[str, Any] | ClinexError]]:
    """Decode JSON-lines bytes one line at a time, never stopping at a bad line.

    Parameters
    ----------
    data : bytes
        The file's content (a UTF-8 byte-order mark is dropped).
    path : str or Path, optional
        Only names the source in error messages.

    Yields
    ------
    (line_no, object_or_error) : tuple of (int, dict or ClinexError)
        ``line_no`` is 1-based; blank lines are skipped. The second item is the
        parsed JSON object, or the error for that line: :class:`EncodingError` (NUL
        byte or invalid UTF-8) or :class:`FormatError` (invalid JSON, or JSON that
        is not an object). Callers decide whether an error stops them or is reported
        and skipped.
    """
    data = data.removeprefix(b"\xef\xbb\xbf")
    for n, raw in enumerate(data.split(b"\n"), start=1):
        if b"\x00" in raw:
            yield n, EncodingError(
                "binary data (NUL byte), expected UTF-8 JSON lines", path=path, line=n
            )
            continue
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            yield n, EncodingError(
                f"not UTF-8 text (byte 0x{raw[exc.start]:02x} at column {exc.start + 1})",
                path=path,
                line=n,
            )
            continue
        if not line.strip():
            continue
        try:
            obj = parse_json(line, path=path, line=n)
        except FormatError as exc:
            yield n, exc
            continue
        if "\\ud" in line.lower() and _has_lone_surrogate(obj):
            # a "\ud800" escape is valid JSON but not Unicode text: no model, writer or
            # database can take it
            yield n, EncodingError(
                "a string holds a lone surrogate escape (\\ud800-\\udfff), not valid Unicode text",
                path=path,
                line=n,
            )
            continue
        if not isinstance(obj, dict):
            yield n, FormatError(
                f"expected a JSON object, got {type(obj).__name__}", path=path, line=n, field="$"
            )
            continue
        yield n, obj


class _LongInt:
    """Stands in, while decoding, for an integer too long to convert (its digit count)."""

    __slots__ = ("digits",)

    def __init__(self, digits: int) -> None:
        self.digits = digits


_LOCAL = threading.local()  # per thread: the decoder and whether it met an over-long integer


def _guarded_int(digits: str) -> int | _LongInt:
    """``parse_int`` of the decoder: converts integers of at most :data:`MAX_INT_DIGITS`
    digits, and notes longer ones (``_LOCAL.seen``) instead of raising ``ValueError``."""
    n = len(digits) - digits.startswith("-")
    if n <= MAX_INT_DIGITS:
        try:
            return int(digits)
        except ValueError:  # an interpreter with a lower int_max_str_digits
            pass
    _LOCAL.seen = True
    return _LongInt(n)


def _decoder() -> json.JSONDecoder:
    """This thread's decoder (built once: building one per line costs more than decoding
    a short line)."""
    dec = getattr(_LOCAL, "decoder", None)
    if dec is None:
        dec = _LOCAL.decoder = json.JSONDecoder(parse_int=_guarded_int)
    return dec


def _long_int_field(obj: Any) -> tuple[str, int]:
    """The JSON path (``annotations[0].events[1].Trigger.start[0][0]``, ``$`` for the
    whole value) and digit count of the first over-long integer in ``obj``, depth first
    in document order; iterative, so any nesting depth the decoder accepted is walked."""
    stack: list[tuple[Any, str]] = [(obj, "")]
    while stack:
        value, where = stack.pop()
        if isinstance(value, _LongInt):
            return where or "$", value.digits
        if isinstance(value, dict):
            items = [(v, f"{where}.{_key(k)}" if where else _key(k)) for k, v in value.items()]
        elif isinstance(value, list):
            items = [(v, f"{where}[{i}]") for i, v in enumerate(value)]
        else:
            continue
        stack.extend(reversed(items))
    raise AssertionError("no over-long integer found")  # pragma: no cover (the guard saw one)


def _key(key: str) -> str:
    """A JSON key as named in a message: cut to 40 characters."""
    return key if len(key) <= 40 else key[:40] + "..."


def parse_json(text: str, *, path: str | Path | None = None, line: int | None = None) -> Any:
    """Decode one JSON value (a JSON line, or a whole small JSON file): the one JSON
    decoder of clinex's readers.

    Parameters
    ----------
    text : str
        The JSON text.
    path : str or Path, optional
        Names the source in messages.
    line : int, optional
        The 1-based line ``text`` is in its file (a JSON line), for messages; None: ``text``
        is a whole file, and a syntax error names its own line.

    Returns
    -------
    Any
        The decoded value (``json.loads``; ``NaN`` and ``Infinity`` are accepted as
        Python's decoder accepts them).

    Raises
    ------
    FormatError
        ``not valid JSON: <problem> (column <n>)``; ``JSON nested too deeply`` (past
        the interpreter's recursion limit); or, naming the field as a JSON path,
        ``integer of <n> digits; at most 4300 are read`` (:data:`MAX_INT_DIGITS`).

    Examples
    --------
    >>> parse_json('{"id": 7, "start": [[12]]}')
    {'id': 7, 'start': [[12]]}
    >>> parse_json('{"start": [[' + "1" * 5000 + ']]}', path="in.json", line=3)
    Traceback (most recent call last):
    ...
    clinex.errors.FormatError: [CLX002] in.json:3: field 'start[0][0]': integer of 5000 digits; at most 4300 are read
    """
    _LOCAL.seen = False
    try:
        obj = _decoder().decode(text)
    except json.JSONDecodeError as exc:
        where = line if line is not None else exc.lineno
        raise FormatError(f"not valid JSON: {exc.msg} (column {exc.colno})", path=path, line=where) from None
    except RecursionError:
        raise FormatError("JSON nested too deeply", path=path, line=line) from None
    if _LOCAL.seen:
        where, digits = _long_int_field(obj)
        raise FormatError(
            f"integer of {digits} digits; at most {MAX_INT_DIGITS} are read", path=path, line=line, field=where
        )
    return obj


def _has_lone_surrogate(obj: Any) -> bool:
    """True if a string anywhere in a decoded JSON value cannot be encoded as UTF-8."""
    try:
        json.dumps(obj, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return True
    except RecursionError:
        return False
    return False
