"""File modes of what clinex writes: the usual ones, whatever the writer library used.

``tempfile.mkstemp`` and safetensors create files with mode ``0o600``; a user who
shares an output or a trained model with colleagues expects the mode an ordinary
``open(path, "w")`` gives under their umask (``0o644`` under the common ``0o022``).
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["default_file_mode", "apply_default_modes"]


def default_file_mode() -> int:
    """The mode a newly created regular file gets under the process umask.

    Returns
    -------
    int
        ``0o666 & ~umask`` (``0o644`` under umask ``0o022``).
    """
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def apply_default_modes(folder: str | Path) -> None:
    """Give every regular file under ``folder`` (recursively) :func:`default_file_mode`.

    Parameters
    ----------
    folder : str or Path
        A folder clinex has just written (e.g. a trained model directory).

    Raises
    ------
    OSError
        If a file's mode cannot be changed.
    """
    mode = default_file_mode()
    for path in Path(folder).rglob("*"):
        if path.is_file() and not path.is_symlink():
            os.chmod(path, mode)
