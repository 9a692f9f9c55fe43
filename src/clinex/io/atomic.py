"""The one atomic file writer: a temporary file in the target's folder, then ``os.replace``.

A reader never sees a half-written output, and a failed write (an error, Ctrl-C) leaves
the old file, if any, untouched and no temporary file behind.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

from clinex.errors import InputError
from clinex.io.modes import default_file_mode

__all__ = ["write_atomic"]


def write_atomic(
    path: str | Path,
    data: str | bytes | Iterable[str] | Iterable[bytes],
    *,
    force: bool = False,
    encoding: str = "utf-8",
    newline: str | None = "\n",
) -> Path:
    """Write ``data`` to ``path`` atomically.

    Parameters
    ----------
    path : str or Path
        The file to write; missing parent folders are created.
    data : str, bytes, or iterable of str or of bytes
        The content; an iterable is written chunk by chunk (streamed), so a generator
        that raises leaves nothing behind.
    force : bool, default False
        Replace an existing file. Without it an existing ``path`` is refused.
    encoding : str, default "utf-8"
        Encoding of text data.
    newline : str or None, default "\\n"
        As :func:`open`'s ``newline`` for text data (``""``: write line ends unchanged).

    Returns
    -------
    Path
        ``path``.

    Raises
    ------
    InputError
        ``path`` is a folder, exists and ``force`` is False, or cannot be written (the
        operating system's reason); the message names ``path``.

    Notes
    -----
    The file gets the permissions of a normally created one (``0o666`` less the umask),
    not the ``0o600`` of :func:`tempfile.mkstemp`.
    """
    p = Path(path)
    if p.is_dir():
        raise InputError("is a folder, expected a file path", path=p)
    if p.exists() and not force:
        raise InputError("file exists; refusing to overwrite it (use --force to replace it)", path=p)
    blocking = next((a for a in p.parents if a.exists()), None)
    if blocking is not None and not blocking.is_dir():
        raise InputError(f"cannot write the output file: {blocking} is a file, not a folder", path=p)
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=p.parent)
    except OSError as exc:
        raise InputError(f"cannot write the output file ({exc.strerror or exc})", path=p) from None
    try:
        os.fchmod(fd, default_file_mode())
        chunks: Iterable[str] | Iterable[bytes] = [data] if isinstance(data, (str, bytes)) else data
        binary = isinstance(data, bytes)
        with (os.fdopen(fd, "wb") if binary else os.fdopen(fd, "w", encoding=encoding, newline=newline)) as fh:
            for chunk in chunks:
                fh.write(chunk)
        os.replace(tmp, p)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise InputError(f"cannot write the output file ({exc.strerror or exc})", path=p) from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return p
