"""Numbers as lab results are printed in notes: the one number reader of :mod:`clinex.cohort.labs`.

:func:`read_number` reads one number (``1,040`` is a thousand and forty, ``1,2`` is
1.2, ``1,2,3`` is not read), :func:`read_numbers` a comma run without spaces
(``1.2,1.4`` is two values). The patterns here (:data:`_NUM`, :data:`_RUN`,
:data:`_NUM_END`) are the number forms the lab value reader's tokens are built from;
everything a pattern matches, :func:`_num` reads.

References
----------
.. [1] NIST SP 811 (2008), §10.5.2-10.5.3 (decimal marker and digit grouping).
"""

from __future__ import annotations

import re

__all__ = ["read_number", "read_numbers"]

#: One number as a US note prints it: thousands grouped by commas ("1,040", "12,500.5"),
#: a decimal comma followed by one or two digits ("1,2", "12,75"), or plain ("1.2", ".9").
#: A comma form is never cut out of a longer comma run ("1,2,3" is no "1,2").
#: Atomic, so that a longer number is never cut short ("1.2" of "1.2,1.4" is no "1").
_NUM = (
    r"(?>\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\d.]|,\d)"
    r"|\d+,\d{1,2}(?![\d.]|,\d)"
    r"|\d+(?:\.\d+)?|\.\d+)"
)
_NUMBER = re.compile(rf"(?:{_NUM})(?![\d/]|,\d)")
#: A run of digits joined by commas (and dots) that no single-number form covers:
#: a list without spaces ("1.2,1.4") or an ambiguous number ("1,2,3"); see :func:`read_numbers`.
_RUN = r"\d(?:[\d.]*\d)?(?:,\d(?:[\d.]*\d)?)+"

_PLAIN = re.compile(r"\d+(?:\.\d+)?|\.\d+")
_THOUSANDS = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?")
_DECIMAL_COMMA = re.compile(r"\d+,\d{1,2}")
_DOT_DECIMAL = re.compile(r"\d+\.\d+")


def read_number(raw: str) -> float | None:
    """The value of one number as printed in a lab position, or None when it is ambiguous.

    The one number reader of :mod:`clinex.cohort.labs` (prose, ranges, bounds, slash
    panels, flowsheet cells). A comma followed by exactly three digits, in groups after
    one to three leading digits, is a thousands separator ("1,040" is 1040, "10,500.5"
    is 10500.5); a single comma followed by one or two digits is a decimal comma, as
    European laboratories print it ("1,2" is 1.2, "12,75" is 12.75). Anything else with
    a comma ("1,2,3", "1,0400", "1,2.5", "1.040,5") could be several values or one, so
    it is not read: a wrong creatinine or HbA1c value decides a criterion, a missing
    one only leaves it to the other values of the note.

    Parameters
    ----------
    raw : str
        The number's characters, without sign or unit.

    Returns
    -------
    float or None
        The value; None when ``raw`` is not one unambiguous number.

    References
    ----------
    .. [1] NIST SP 811 (2008), §10.5.2-10.5.3: the decimal marker is the point on the
       line (US) or the comma (ISO 80000-1, most of Europe); three-digit groups
       separated by commas are the US thousands grouping.

    Examples
    --------
    >>> read_number("1,040"), read_number("1,2"), read_number("1.2"), read_number("1,2,3")
    (1040.0, 1.2, 1.2, None)
    """
    if _PLAIN.fullmatch(raw) or _THOUSANDS.fullmatch(raw):
        return float(raw.replace(",", ""))
    if _DECIMAL_COMMA.fullmatch(raw):
        return float(raw.replace(",", "."))
    return None


def read_numbers(raw: str) -> list[tuple[float, int, int]]:
    """The values of a comma run without spaces: ``(value, start, end)`` offsets into ``raw``.

    One number (:func:`read_number`) gives one value. A run of dot-decimals joined by
    commas is a list ("1.2,1.4" is 1.2 then 1.4: a number holds no comma after its
    decimal point in either writing). Any other run ("1,2,3": 1.2 and 3, or 1, 2 and 3?
    "1.2,14") gives no value.

    Examples
    --------
    >>> read_numbers("1.2,1.4"), read_numbers("1,2,3")
    ([(1.2, 0, 3), (1.4, 4, 7)], [])
    """
    one = read_number(raw)
    if one is not None:
        return [(one, 0, len(raw))]
    parts = raw.split(",")
    if not all(_DOT_DECIMAL.fullmatch(x) for x in parts):
        return []
    out: list[tuple[float, int, int]] = []
    pos = 0
    for x in parts:
        out.append((float(x), pos, pos + len(x)))
        pos += len(x) + 1
    return out


def _num(raw: str) -> float:
    """:func:`read_number` of a string a number pattern of this module matched."""
    v = read_number(raw)
    if v is None:  # pragma: no cover - the patterns match only readable numbers
        raise ValueError("a lab number pattern matched a string that is not one number")
    return v


#: A number that does not go on as another number ("1.2" of "1.2.3", "1" of "1,2,3" are none).
_NUM_END = r"(?![.,]?\d)"
_CELL_NUMBER = re.compile(rf"(?:{_NUM}){_NUM_END}")

