"""Read a plain folder of dated text notes as one patient.

Layout: one folder per patient, one ``*.txt`` file (UTF-8) per note. A note's date
is taken from

1. its first non-blank line, when that line is ``Record date: YYYY-MM-DD`` (or
   ``M/D/YYYY``); the note text is kept unchanged; else
2. a ``YYYY-MM-DD`` at the start of the file name (``2071-03-10_clinic.txt``); a
   ``Record date: YYYY-MM-DD`` line followed by an empty line is then put in front
   of the note, so the patient text reads like an n2c2 file; else
3. none: the record's date is ``None`` (it can never be "now").

Notes are ordered by date, then file name; undated notes come first, in file-name
order. They are joined with a line of 100 asterisks, as in the n2c2 files, and the
records are then found by :func:`clinex.cohort.formats.n2c2_xml.split_records`, so the result
has exactly the structure of a patient read from XML. A note that is empty (only
whitespace) gives no record. A note that itself contains a line of 20 or more
asterisks is split there, as an n2c2 file would be.

Dates are de-identification-shifted in research corpora: they are compared with
each other only, never with today.
"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

from clinex.cohort.formats.records import SEPARATOR, parse_record_date, split_records
from clinex.cohort.types import Patient
from clinex.errors import FormatError, InputError
from clinex.io.textfile import decode_text

__all__ = ["read_notes_folder"]

_FIRST_LINE_DATE = re.compile(r"\s*record date:[ \t]*(\S+)", re.IGNORECASE)
_NAME_DATE = re.compile(r"(\d{4}-\d{1,2}-\d{1,2})")


def _note_date(text: str, name: str) -> tuple[dt.date | None, bool]:
    """(date, has_header): the note's date and whether its text already names it."""
    m = _FIRST_LINE_DATE.match(text)
    if m:
        return parse_record_date(m.group(1)), True
    m = _NAME_DATE.match(name)
    return (parse_record_date(m.group(1)) if m else None), False


def read_notes_folder(folder: str | Path, *, patient_id: str | None = None) -> Patient:
    """Read a folder of dated ``*.txt`` notes as one patient.

    Parameters
    ----------
    folder : str or Path
        The patient's folder; its ``*.txt`` files are the notes (sub-folders and
        other files are ignored).
    patient_id : str, optional
        Default: the folder name.

    Returns
    -------
    Patient
        ``text`` = the notes joined by separator lines (see the module docstring),
        ``records`` one per non-empty note (offsets into ``text``), no labels,
        ``source`` = the folder.

    Raises
    ------
    InputError
        The folder does not exist or a note cannot be read.
    FormatError
        The folder holds no ``*.txt`` note.
    EncodingError
        A note is not UTF-8 text (the error names the file).
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise InputError("no such folder", path=folder)
    files = sorted(f for f in folder.glob("*.txt") if f.is_file())
    if not files:
        raise FormatError("folder holds no *.txt notes", path=folder)
    notes: list[tuple[bool, dt.date, str, str]] = []
    for f in files:
        try:
            data = f.read_bytes()
        except OSError as exc:
            raise InputError(f"cannot read file ({exc.strerror})", path=f) from None
        text = decode_text(data, path=f, expected="a UTF-8 text note")
        text = text.replace("\r\n", "\n").replace("\r", "\n")
        date, has_header = _note_date(text, f.name)
        if date is not None and not has_header and text.strip():
            text = f"Record date: {date.isoformat()}\n\n{text}"
        notes.append((date is not None, date or dt.date.min, f.name, text))
    notes.sort()
    body = ("\n" + SEPARATOR + "\n").join(n[3].strip("\n") for n in notes) + "\n"
    return Patient(
        id=patient_id if patient_id is not None else folder.name,
        text=body,
        records=split_records(body),
        source=str(folder),
    )
