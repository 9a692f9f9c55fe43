"""Reading user text files safely: UTF-8 only, binary files refused with a clear error."""

from __future__ import annotations

from pathlib import Path

from clinex.errors import EncodingError, InputError

__all__ = ["read_text"]


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
    p = Path(path)
    if not p.is_file():
        raise InputError("no such file", path=p)
    data = p.read_bytes()
    if b"\x00" in data[:8192]:
        line = data[: data.index(b"\x00")].count(b"\n") + 1
        raise EncodingError("binary file (NUL byte), expected UTF-8 text", path=p, line=line)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise EncodingError(
            f"not UTF-8 text (byte 0x{data[exc.start]:02x} at byte offset {exc.start})",
            path=p,
            line=line,
        ) from None
    return text.removeprefix("\ufeff")
