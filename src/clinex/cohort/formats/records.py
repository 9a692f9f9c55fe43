"""Records of an n2c2 patient text: separators and ``Record date:`` lines.

Shared by :mod:`clinex.cohort.formats.n2c2_xml` (the ``<TEXT>`` of one patient file) and
:mod:`clinex.cohort.formats.notes_folder` (notes joined into one text); the rules are
stated in :mod:`clinex.cohort.formats.n2c2_xml`.
"""

from __future__ import annotations

import datetime as dt
import re

from clinex.cohort.types import Record

__all__ = ["SEPARATOR", "split_records", "parse_record_date"]

#: The record separator written by :func:`clinex.cohort.formats.n2c2_xml.write_patient`
#: (100 asterisks, as in n2c2).
SEPARATOR = "*" * 100

_SEPARATOR_LINE = re.compile(r"^[ \t]*\*{20,}[ \t]*\r?$", re.MULTILINE)
_DATE_LINE = re.compile(r"^[ \t]*record date:[ \t]*(\S+)", re.MULTILINE | re.IGNORECASE)
_ISO = re.compile(r"(\d{4})-(\d{1,2})-(\d{1,2})")
_US = re.compile(r"(\d{1,2})/(\d{1,2})/(\d{4})")


def parse_record_date(value: str) -> dt.date | None:
    """Parse the value of a ``Record date:`` line.

    Parameters
    ----------
    value : str
        The text after ``Record date:``, e.g. ``"2071-03-10"`` or ``"3/10/2071"``.

    Returns
    -------
    datetime.date or None
        None when the value is not ``YYYY-MM-DD`` / ``M/D/YYYY`` or names a day that
        does not exist.

    Examples
    --------
    >>> parse_record_date("2071-03-10")
    datetime.date(2071, 3, 10)
    >>> parse_record_date("2071-02-30") is None
    True
    """
    m = _ISO.fullmatch(value)
    if m:
        y, mo, d = (int(g) for g in m.groups())
    else:
        m = _US.fullmatch(value)
        if not m:
            return None
        mo, d, y = (int(g) for g in m.groups())
    try:
        return dt.date(y, mo, d)
    except ValueError:
        return None


def split_records(text: str) -> tuple[Record, ...]:
    """Split a patient text into dated records.

    Parameters
    ----------
    text : str
        The whole patient text (the n2c2 ``<TEXT>`` content).

    Returns
    -------
    tuple of Record
        In text order; offsets are characters into ``text``, half-open, without
        leading/trailing whitespace. Whitespace-only stretches give no record.
        See the module docstring for the separator and date rules.

    Examples
    --------
    >>> recs = split_records("Record date: 2071-03-10\\nA\\n" + "*" * 100 + "\\nRecord date: 2072-01-15\\nB\\n")
    >>> [(r.date.isoformat(), r.start, r.end) for r in recs]
    [('2071-03-10', 0, 25), ('2072-01-15', 127, 152)]
    """
    bounds: list[tuple[int, int]] = []
    pos = 0
    for m in _SEPARATOR_LINE.finditer(text):
        bounds.append((pos, m.start()))
        pos = m.end()
    bounds.append((pos, len(text)))
    records: list[Record] = []
    for a, b in bounds:
        while a < b and text[a].isspace():
            a += 1
        while b > a and text[b - 1].isspace():
            b -= 1
        if a == b:
            continue
        m = _DATE_LINE.search(text, a, b)
        date = parse_record_date(m.group(1)) if m else None
        records.append(Record(date=date, start=a, end=b))
    return tuple(records)
