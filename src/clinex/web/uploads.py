"""Uploads of the web app: the names they are shown and stored under, the bytes on disk,
the sniff before a reader opens them, and errors that name them (never the server's
temporary folders).

- :func:`display_name`, :func:`disk_name`: the uploaded name as messages show it, and the
  temporary file's name.
- :func:`upload`: stream a request body into a folder.
- :func:`sniff`: refuse bytes that do not match the name (``.pdf``, ``.xml``).
- :func:`renamed`, :func:`scrub`: an error naming the uploaded file instead of the
  temporary copy.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from fastapi import Request

from clinex.errors import ClinexError, FormatError, InputError
from clinex.io.xmlfile import XMLFault, parse_xml

__all__ = ["display_name", "disk_name", "upload", "renamed", "scrub", "sniff"]

_MAX_DISK_NAME = 200  # bytes of a temporary file's name (file systems allow 255)
_MAX_NAME = 255  # characters of the uploaded name kept for messages and ``source``
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_SUFFIX = re.compile(r"\.[A-Za-z0-9]{1,10}$")


def display_name(filename: str) -> str:
    """The uploaded name as messages and ``source`` show it: its last path component,
    without control characters, valid UTF-8, at most 255 characters (suffix kept)."""
    name = re.split(r"[/\\]", filename)[-1]
    name = _CONTROL.sub("", name).encode("utf-8", "replace").decode("utf-8").strip()
    if name in {"", ".", ".."}:
        raise InputError("filename must name a file", field="filename")
    if len(name) > _MAX_NAME:
        m = _SUFFIX.search(name)
        suffix = m.group(0) if m else ""
        name = name[: _MAX_NAME - len(suffix)] + suffix
    return name


def disk_name(display: str) -> str:
    """The temporary file's name: the display name if it fits, else ``upload`` with its
    suffix (the readers choose by suffix; n2c2 patient ids are the stem)."""
    try:
        if len(os.fsencode(display)) <= _MAX_DISK_NAME and not display.startswith("-"):
            return display
    except UnicodeError:
        pass
    m = _SUFFIX.search(display)
    return "upload" + (m.group(0) if m else "")


async def upload(request: Request, folder: Path, display: str) -> Path:
    """Stream the body into ``folder`` (the size limit is enforced by :class:`clinex.web.guard.Guard`)."""
    path = folder / disk_name(display)
    with path.open("wb") as out:
        async for chunk in request.stream():
            out.write(chunk)
    return path


def renamed(exc: ClinexError, folder: Path, display: str) -> ClinexError:
    """The same error, naming the uploaded file instead of the server's temporary copy."""
    where = str(folder)
    if exc.path is not None and exc.path.startswith(where):
        exc.path = display
    if where in exc.message:
        exc.message = exc.message.replace(where + os.sep, "").replace(where, "")
    return exc


def scrub(exc: ClinexError, folders: list[Path]) -> ClinexError:
    """The same error without the server's folders: paths under them keep only their
    file name (a criterion file's content-hash folder goes too)."""
    for folder in folders:
        pattern = re.compile(re.escape(str(folder)) + r"(?:[/\\](?:[0-9a-f]{32}|patient))?[/\\]?")
        if exc.path is not None:
            exc.path = pattern.sub("", exc.path)
        exc.message = pattern.sub("", exc.message)
    return exc


def sniff(path: Path, display: str) -> None:
    """Refuse an upload whose bytes do not match its name, before a reader opens it.

    A ``.pdf`` must start with ``%PDF`` (the PDF header, ISO 32000-1 section 7.5.2; clinex
    does not accept the junk before it that some readers tolerate); an ``.xml`` must be
    well-formed XML as :func:`clinex.io.xmlfile.parse_xml` parses it (defusedxml: entity
    declarations and external DTDs are refused).

    Raises
    ------
    FormatError
        Naming the uploaded file (never the server's temporary path).
    """
    suffix = Path(display).suffix.lower()
    if suffix == ".pdf":
        with path.open("rb") as fh:
            head = fh.read(5)
        if not head.startswith(b"%PDF"):
            what = "an empty file" if not head else "it does not start with %PDF"
            raise FormatError(f"not a PDF file ({what})", path=display)
    elif suffix == ".xml":
        try:
            parse_xml(path)
        except XMLFault as fault:
            if fault.kind == "malformed":
                raise FormatError(f"not well-formed XML ({fault.message.split(':')[0]})", path=display,
                                  line=fault.line) from None
            if fault.kind == "unsafe":
                raise FormatError(f"XML refused ({fault.detail}: entities and external DTDs are not read)",
                                  path=display) from None
            # an encoding the document does not keep to, or one Python does not know: the
            # reader that opens it says so in its own words (clinex.io.xmlfile.parse_xml_file)
