"""The one atomic file writer: a temporary file in the target's folder, fsync, then ``os.replace``.

A reader never sees a half-written output, and a failed write (a full disk, a
read-only folder, an error, Ctrl-C) leaves the old file, if any, untouched and no
temporary file behind. Every user-visible output, every batch manifest and part file
and every ``model.json`` is written here (``tests/test_atomic_writer.py`` greps the
package for writes that bypass it).

- :func:`write_atomic` writes text or bytes (also streamed from an iterable).
- :func:`atomic_path` lends a temporary path to a library that writes by file name
  (DuckDB ``COPY``, matplotlib ``savefig``, joblib) and moves it into place.
- :func:`write_error` turns an :class:`OSError` into the one message of a failed write.

Temporary files are named ``.<name>.<random>.tmp`` beside the target
(:data:`TEMP_PATTERN`), so a run killed with ``kill -9`` leaves files a later run can
recognise and remove (:func:`remove_temporaries`).
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path

from clinex.errors import InputError
from clinex.io.modes import default_file_mode

__all__ = ["write_atomic", "atomic_path", "write_error", "remove_temporaries", "TEMP_PATTERN"]

TEMP_PATTERN = re.compile(r"^\.(?P<name>.+)\.[A-Za-z0-9_]{8}\.tmp$")
"""Names of this module's temporary files: ``.<target name>.<8 random characters>.tmp``
(the random part is :func:`tempfile.mkstemp`'s)."""


def write_error(path: str | Path, exc: OSError, *, folder: bool = False) -> InputError:
    """The error of a write to ``path`` that the operating system refused.

    Parameters
    ----------
    path : str or Path
        The file (or folder) clinex tried to write or create.
    exc : OSError
        The operating system's error; its ``strerror`` ("No space left on device",
        "Read-only file system", "Permission denied", ...) is the reason given.
    folder : bool, default False
        ``path`` is a folder clinex tried to create.

    Returns
    -------
    InputError
        ``[CLX001] PATH: cannot write the output file (REASON)``, or ``... cannot
        create the output folder (REASON)`` for a folder.
    """
    reason = exc.strerror or (os.strerror(exc.errno) if exc.errno else str(exc))
    what = "create the output folder" if folder else "write the output file"
    return InputError(f"cannot {what} ({reason})", path=path)


def _check_target(p: Path, force: bool) -> None:
    if p.is_dir():
        raise InputError("is a folder, expected a file path", path=p)
    if p.exists() and not force:
        raise InputError("file exists; refusing to overwrite it (use --force to replace it)", path=p)
    blocking = next((a for a in p.parents if a.exists()), None)
    if blocking is not None and not blocking.is_dir():
        raise InputError(f"cannot write the output file: {blocking} is a file, not a folder", path=p)


def _fsync_folder(folder: Path) -> None:
    """Make a rename in ``folder`` durable (POSIX; a no-op where folders cannot be opened)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:  # some file systems refuse fsync on a folder; the rename itself is done
        pass
    finally:
        os.close(fd)


@contextlib.contextmanager
def atomic_path(path: str | Path, *, force: bool = False) -> Iterator[Path]:
    """Lend a temporary path beside ``path``; move it onto ``path`` when the block succeeds.

    For libraries that write by file name. The temporary file exists (empty, with the
    usual file mode) when the block starts; the library may replace or truncate it.
    After the block it is fsynced and renamed onto ``path`` (``os.replace``), then the
    folder is fsynced. If the block raises, the temporary file is removed and ``path``
    is left as it was.

    Parameters
    ----------
    path : str or Path
        The file to write; missing parent folders are created.
    force : bool, default False
        Replace an existing file. Without it an existing ``path`` is refused.

    Yields
    ------
    Path
        The temporary file, ``.<name>.<random>.tmp`` in ``path``'s folder.

    Raises
    ------
    InputError
        ``path`` is a folder, exists and ``force`` is False, lies below a file, or
        cannot be written: an :class:`OSError` in the block, the fsync or the rename
        becomes :func:`write_error` (naming ``path`` and the operating system's reason).
        Any other exception of the block propagates unchanged.
    """
    p = Path(path)
    _check_target(p, force)
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=p.parent)
    except OSError as exc:
        raise write_error(p, exc) from None
    tmp = Path(name)
    try:
        try:
            os.fchmod(fd, default_file_mode())
        finally:
            os.close(fd)
        yield tmp
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, p)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise write_error(p, exc) from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _fsync_folder(p.parent)


def write_atomic(
    path: str | Path,
    data: str | bytes | Iterable[str] | Iterable[bytes],
    *,
    force: bool = False,
    encoding: str = "utf-8",
    newline: str | None = "\n",
) -> Path:
    """Write ``data`` to ``path`` atomically (temporary file, fsync, ``os.replace``).

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
        operating system's reason, e.g. ``[CLX001] out.json: cannot write the output
        file (No space left on device)``); the message names ``path``.

    Notes
    -----
    The file gets the permissions of a normally created one (``0o666`` less the umask),
    not the ``0o600`` of :func:`tempfile.mkstemp`. The data is on disk (``fsync``)
    before the rename, so a power cut leaves the old file or the new one, not an empty
    one.
    """
    chunks: Iterable[str] | Iterable[bytes] = [data] if isinstance(data, (str, bytes)) else data
    binary = isinstance(data, bytes)
    with atomic_path(path, force=force) as tmp:
        with (open(tmp, "wb") if binary else open(tmp, "w", encoding=encoding, newline=newline)) as fh:
            for chunk in chunks:
                fh.write(chunk)
    return Path(path)


def remove_temporaries(folder: str | Path, names: Iterable[str] | None = None) -> list[Path]:
    """Remove the temporary files an interrupted :func:`atomic_path` left in ``folder``.

    Parameters
    ----------
    folder : str or Path
        A folder clinex writes into (e.g. a batch run folder).
    names : iterable of str, optional
        Only temporaries of these target names (e.g. ``["manifest.json"]``); default any
        name matching :data:`TEMP_PATTERN`.

    Returns
    -------
    list of Path
        The files removed (none when ``folder`` does not exist).
    """
    d = Path(folder)
    if not d.is_dir():
        return []
    wanted = set(names) if names is not None else None
    removed = []
    for f in d.iterdir():
        m = TEMP_PATTERN.match(f.name)
        if m and f.is_file() and (wanted is None or m.group("name") in wanted):
            f.unlink(missing_ok=True)
            removed.append(f)
    return sorted(removed)
