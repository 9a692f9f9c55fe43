"""When did an event happen? Dates and relative times in a sentence.

"Now" is the patient's latest record date (never today: dates are shifted into
the 2060s-2090s). An event's date is, in order of preference, the temporal
expression in its sentence nearest to the mention, or else the date of the record
the sentence is in. Recognised expressions:

* relative: ``3 weeks ago``, ``~2 months ago``, ``about ten weeks ago``, ``5 years
  out from``, ``last year`` / ``last month`` / ``last week``, ``yesterday`` —
  counted back from the record date;
* month names: ``in January`` (the latest January not after the record date),
  ``since March 2071``;
* absolute: ``2076-01-29``, ``1/12/72``, ``6/2/2089``, ``1/2072``, ``10/2072``, ``11/66``
  (M/YY, two-digit years are 20YY), a bare year ``2069`` (taken as 1 July, or
  the record date when it is the record's own year), and a year-less US month/day
  ``6/2``, ``7/14`` (the latest such date not after the record date; fractions,
  murmur grades and strengths such as ``1/2 tab``, ``2/6 murmur`` are not dates);
* vague past: ``years ago``, ``decades ago``, ``as a child`` / ``teenager``,
  ``in childhood``, ``in his teens``, ``in high school`` — two years before the
  record date (``how = "vague"``), outside every n2c2 window; only for a mention
  within 40 characters of it and in the same clause (no comma, "now", "and"
  between them: "CABG years ago, now admitted with NSTEMI"), and never lent to the record's other mentions
  (relative times are).

References
----------
.. [1] n2c2 2018 Track 1 guideline (synthetic corpus GUIDELINE.md), "The reference
   point": windows count back from the last record's date; an earlier record
   counts when its date is inside the window, the last record by relative time.
"""

from __future__ import annotations

import datetime as dt
import re
from functools import lru_cache

__all__ = ["within_window", "event_date", "days_before"]

_WORDNUM = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "several": 3,
    "few": 3, "a few": 3, "couple": 2, "a couple of": 2,
}
_UNIT_DAYS = {"day": 1, "week": 7, "wk": 7, "month": 30.44, "mo": 30.44, "year": 365.25, "yr": 365.25}
_NUMWORD = r"(?:\d+(?:\.\d+)?|a few|a couple of|a|an|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|several|few)"
_RELATIVE = re.compile(
    rf"(?P<n>{_NUMWORD})(?:\s*(?:-|to)\s*\d+)?\s*(?P<unit>day|week|wk|month|mo|year|yr)s?\.?\s+(?:ago|out|prior|before|earlier|previously|after|since|post|following|status post|s/p)\b",
    re.I,
)
_VAGUE_PAST = re.compile(
    r"\b(?:(?:many|several|some|a few|few|multiple|numerous)\s+)?(?:years|decades)\s+(?:ago|prior|before|earlier|previously)\b"
    r"|\bas an?\s+(?:child|kid|teen|teenager|adolescent|young (?:adult|man|woman)|student|infant|toddler|baby)\b"
    r"|\bin\s+(?:(?:his|her|their|early|late)\s+)*(?:childhood|infancy|adolescence|youth|teens)\b"
    r"|\bin\s+(?:high school|college|grade school|middle school)\b",
    re.I,
)
#: Vague past expressions are dated this many days before the record.
_VAGUE_DAYS = 730
#: ... and only date a mention within this many characters of them.
_VAGUE_REACH = 40
_CLAUSE_BREAK = re.compile(r"[,;]|\b(?:now|then|and|but|currently|today|recently|presents?|admitted)\b", re.I)
_LAST = re.compile(r"\b(?:last|past)\s+(?P<unit>week|month|year)\b|\byesterday\b", re.I)
_ISO = re.compile(r"\b(?P<y>20\d\d|19\d\d)-(?P<m>\d\d)(?:-(?P<d>\d\d))?\b")
_MDY = re.compile(r"(?<![\d/])(?P<m>\d{1,2})/(?P<d>\d{1,2})/(?P<y>\d{2}|\d{4})(?![\d/])")
_MY = re.compile(r"(?<![\d/])(?P<m>\d{1,2})/(?P<y>\d{4}|\d{2})(?![\d/])")
#: A year-less month/day with a one-digit day ("6/2", "on 12/3"; a two-digit day is read by
#: ``_MY``'s two-digit-year rule): not a fraction, murmur grade, strength or dose ratio
#: ("1/2 tab", "2/6 systolic murmur", "1 1/2 blocks", "grade 2/6", "strength 5/5",
#: "Suboxone 8/2 bid").
_MD = re.compile(
    r"(?<![\d/.])(?<!\d )(?<!grade )(?<!strength )(?<!motor )(?<!power )(?<!murmur )(?P<m>\d{1,2})/(?P<d>[1-9])(?![\d/+])"
    r"(?!\s*(?:murmur|sem|hsm|systolic|diastolic|holosystolic|strength|tabs?\b|tablets?|pills?|caps?\b|capsules?|cups?|of\b"
    r"|doses?|dose|ns\b|nl\b|normal|pulses?|reflexes|vessels?|miles?|blocks?|flights?|inch|in\b|x\b|times|units?|mg|ml|l\b"
    r"|mcg|meq|bid|tid|qid|qd|qod|qhs|hs\b|daily|nightly|weekly|prn|po\b|iv\b|sl\b|q\d))",
    re.I,
)
_MONTHS = {m: i + 1 for i, m in enumerate(("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"))}
_MONTH = re.compile(
    r"\b(?:in|since|during|last|this|of|early|late|mid-?)\s+(?P<mon>jan|feb|mar|apr|may|jun|jul|aug|sept?|oct|nov|dec)[a-z]*\.?(?:\s+(?P<y>(?:19|20)\d\d))?\b",
    re.I,
)
_YEAR = re.compile(r"(?<![\d/.-])(?P<y>(?:19|20)\d\d)(?![\d/])(?!\s*(?:mg|mcg|iu|units?|ml|meq|kcal|cal)\b)", re.I)


def _year(y: str) -> int:
    return int(y) if len(y) == 4 else 2000 + int(y)


def _safe(y: int, m: int, d: int) -> dt.date | None:
    try:
        return dt.date(y, m, d)
    except ValueError:
        return None


def event_date(sentence: str, record_date: dt.date | None, anchor: int = 0) -> tuple[dt.date | None, str]:
    """The date of the event a sentence reports.

    Parameters
    ----------
    sentence : str
        The sentence (or line) holding the mention.
    record_date : datetime.date or None
        Date of the record the sentence is in.
    anchor : int
        Offset of the mention inside ``sentence`` (characters); the nearest
        temporal expression wins.

    Notes
    -----
    When the nearest expression is one of several dates in a parenthesised list
    ("two DKA admissions (2/2078 and 2/2080)"), the latest of them is taken.

    Returns
    -------
    (date or None, how)
        ``how`` is ``"relative"``, ``"absolute"``, ``"vague"`` (``years ago``,
        ``as a child``: two years before the record) or ``"record"`` (no
        expression: the record date).
    """
    relative, vague, absolute = _expressions(sentence, record_date)
    found = list(relative)
    for start, end, date in vague:
        between = sentence[min(end, anchor) : max(start, anchor)]
        if len(between) > _VAGUE_REACH or _CLAUSE_BREAK.search(between):
            continue  # "CABG years ago, now admitted with NSTEMI": not about the NSTEMI
        found.append((start, date, "vague"))
    found.extend(absolute)
    if not found:
        return record_date, "record"
    pos, date, how = min(found, key=lambda f: abs(f[0] - anchor))
    # "two DKA admissions (2/2078 and 2/2080)": a parenthesised list of dates -> the latest
    open_ = sentence.rfind("(", 0, pos + 1)
    close = sentence.find(")", pos)
    if open_ >= 0 and close > pos and ")" not in sentence[open_:pos]:
        inside = [f for f in found if open_ < f[0] < close and f[2] == "absolute"]
        if len(inside) > 1:
            pos, date, how = max(inside, key=lambda f: f[1])
    return date, how


@lru_cache(maxsize=4096)
def _expressions(sentence: str, record_date: dt.date | None) -> tuple[tuple, tuple, tuple]:
    """The temporal expressions of one sentence, found once for all its mentions.

    Returns ``(relative, vague, absolute)``: ``(offset, date, how)`` of every relative
    expression, ``(start, end, date)`` of every vague past one, ``(offset, date, how)``
    of every month name and absolute date, in that order (whether a vague
    one dates a mention depends on the mention's place: :func:`event_date`). Cached,
    so that a sentence holding many mentions is scanned once (linear time).
    """
    relative: list[tuple[int, dt.date, str]] = []
    vague: list[tuple[int, int, dt.date]] = []
    found: list[tuple[int, dt.date, str]] = []
    taken: list[tuple[int, int]] = []  # spans of the absolute dates found so far
    if record_date is not None:
        relative = _relative(sentence, record_date)
        vague = _vague(sentence, record_date)
        found = _month_names(sentence, record_date, taken)
    for rx, kind in ((_ISO, "iso"), (_MDY, "mdy"), (_MY, "my"), (_MD, "md"), (_YEAR, "y")):
        for m in rx.finditer(sentence):
            if any(a <= m.start() < b for a, b in taken):
                continue
            date = _numeric_date(m, kind, record_date)
            if date is not None:
                taken.append((m.start(), m.end()))
                found.append((m.start(), date, "absolute"))
    return tuple(relative), tuple(vague), tuple(found)


def _relative(sentence: str, record_date: dt.date) -> list[tuple[int, dt.date, str]]:
    """``(offset, date, "relative")`` of "3 weeks ago", "two years prior", then of
    "last month", "yesterday", counted back from the record date."""
    found: list[tuple[int, dt.date, str]] = []
    for m in _RELATIVE.finditer(sentence):
        n_s = m.group("n").lower()
        n = float(n_s) if n_s[0].isdigit() else _WORDNUM.get(n_s, 1)
        days = n * _UNIT_DAYS[m.group("unit").lower()]
        try:
            found.append((m.start(), record_date - dt.timedelta(days=round(days)), "relative"))
        except OverflowError:  # "3000 years ago": before year 1
            continue
    for m in _LAST.finditer(sentence):
        unit = (m.group("unit") or "day").lower()
        found.append((m.start(), record_date - dt.timedelta(days=round(_UNIT_DAYS[unit])), "relative"))
    return found


def _vague(sentence: str, record_date: dt.date) -> list[tuple[int, int, dt.date]]:
    """``(start, end, date)`` of the vague past expressions ("years ago", "as a child")
    that are not part of a relative one, dated :data:`_VAGUE_DAYS` before the record."""
    rel_spans = [(m.start(), m.end()) for m in _RELATIVE.finditer(sentence)]
    vague: list[tuple[int, int, dt.date]] = []
    for m in _VAGUE_PAST.finditer(sentence):
        if any(a <= m.start() < b for a, b in rel_spans):  # "3 years ago" is already relative
            continue
        try:
            vague.append((m.start(), m.end(), record_date - dt.timedelta(days=_VAGUE_DAYS)))
        except OverflowError:  # a record dated before year 3
            continue
    return vague


def _month_names(sentence: str, record_date: dt.date, taken: list[tuple[int, int]]
                 ) -> list[tuple[int, dt.date, str]]:
    """``(offset, date, "absolute")`` of month names ("March 2079", "in May": the latest
    May not after the record date), the 15th of the month, not after the record date;
    their spans are added to ``taken``."""
    found: list[tuple[int, dt.date, str]] = []
    for m in _MONTH.finditer(sentence):
        mon = _MONTHS[m.group("mon").lower()[:3]]
        if m.group("y"):
            date = _safe(int(m.group("y")), mon, 15)
        else:  # the latest such month not after the record date
            y = record_date.year if mon <= record_date.month else record_date.year - 1
            date = _safe(y, mon, 15)
        if date is not None and date <= record_date:
            taken.append((m.start(), m.end()))
            found.append((m.start(), date, "absolute"))
    return found


def _numeric_date(m: re.Match, kind: str, record_date: dt.date | None) -> dt.date | None:
    """The date of a numeric date match of ``kind`` ("iso", "mdy", "my", "md", "y"), or
    None when it is no date of the past (year outside 1900-2100, no such day, after the
    record date)."""
    if kind == "md":
        return _month_day(m, record_date)
    y = _year(m.group("y"))
    if not 1900 <= y <= 2100:
        return None
    if kind in ("iso", "mdy"):
        mo, d = int(m.group("m")), int(m.group("d") or 15)
        date = _safe(y, mo, d)
    elif kind == "my":
        date = _month_year(m, y, record_date)
    else:
        date = dt.date(y, 7, 1)
        if record_date is not None and y == record_date.year:
            date = record_date
    if date is None:
        return None
    if record_date is not None and date > record_date:
        return None  # a future date: a plan ("through 1/2073"), not the event
    return date


def _month_day(m: re.Match, record_date: dt.date | None) -> dt.date | None:
    """US month/day without a year: the latest such date not after the record date
    (n2c2 notes write "NSTEMI 6/2" for June 2 of the record's year); None without a
    record date."""
    if record_date is None:
        return None
    mo, d = int(m.group("m")), int(m.group("d"))
    y = record_date.year if (mo, d) <= (record_date.month, record_date.day) else record_date.year - 1
    return _safe(y, mo, d) if 1 <= mo <= 12 else None


def _month_year(m: re.Match, y: int, record_date: dt.date | None) -> dt.date | None:
    """Month/year ("7/2079", the 15th), or month/day when a two-digit "year" lies more
    than five years from the record's year ("NSTEMI 7/14" in a note of 2089-07-28 is
    July 14, not 2014: the latest such date not after the record date)."""
    mo = int(m.group("m"))
    date = _safe(y, mo, 15) if 1 <= mo <= 12 else None
    dd = int(m.group("y"))
    if (
        len(m.group("y")) == 2
        and record_date is not None
        and abs(y - record_date.year) > 5
        and 1 <= mo <= 12
        and 1 <= dd <= 31
    ):
        y = record_date.year if (mo, dd) <= (record_date.month, record_date.day) else record_date.year - 1
        date = _safe(y, mo, dd)
    return date


def days_before(now: dt.date, date: dt.date) -> int:
    """Days from ``date`` to ``now`` (positive when ``date`` is earlier)."""
    return (now - date).days


def within_window(date: dt.date | None, now: dt.date | None, window_days: int) -> bool:
    """Whether ``date`` lies in ``[now - window_days, now]`` (inclusive ends).

    An unknown date (None) is not within any window; an unknown "now" makes the
    window undecidable and returns False.
    """
    if date is None or now is None:
        return False
    d = days_before(now, date)
    return 0 <= d <= window_days
