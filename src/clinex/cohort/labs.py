"""Lab values in free text and tables: analyte, value, unit and reference range.

:func:`find_lab_values` scans a text for an analyte's names (regular expressions
from a criterion's :class:`~clinex.cohort.criteria.LabSpec`) and reads the numbers
that follow on the same line:

* ``HbA1c 7.2%``, ``A1C: 8.1``, ``Hgb A1c 6.4 (H)``, ``Cr 1.6 today`` → one value;
* ``creatinine has risen from 1.4 in 2081 to 1.8``, ``1.1 -> peak 2.4`` → several
  values (four-digit years are skipped);
* ``Creatinine stable 1.2-1.3`` (a range before any value) → two values;
* ``Creatinine  1.3  0.7-1.3  mg/dL`` (table row), ``1.4 mg/dl (0.6-1.3)``,
  ``1.2 (H, ref 0.5-1.1)`` → a value with a printed reference range (upper limit
  1.3, 1.3, 1.1);
* ``Creatinine (0.6-1.2) 1.9``, ``Creatinine (ref 0.6-1.2): 1.4`` (the range
  printed before the value) → the value with that upper limit;
* ``168 umol/L (ref 60-110)`` → converted with the spec's factor (÷ 88.4 gives
  1.90 mg/dL; the range is converted alike);
* ``Na/K/Cl/CO2/BUN/Cr/Glu: 138/4.2/99/26/14/0.9/211`` (a slash panel) → the value
  in the analyte's slot (0.9);
* a flowsheet whose header row names the analyte (``Date  A1c  Cr``) → the cells of
  its column in the rows below, up to a blank line;
* numbers with commas (:func:`read_number`, the one number reader of this module):
  ``1,040`` is a thousand and forty, ``1,2`` is 1.2 (a decimal comma), ``1.2,1.4`` is
  a list of two values, and an ambiguous run (``1,2,3``, ``1.2,14``) is not read;
* thresholds are not results: a number after ``<``, ``>``, ``goal``, ``target``,
  ``above``, ``below`` is skipped, and a name preceded by an ``exclude_before``
  hit (``goal A1c``, ``urine creatinine``, ``if A1c``) is skipped altogether.

Reading stops at the end of the line, at 80 characters, or at the next word that
is followed by its own number and is not a connective (``Cr 1.2, Glu 174`` stops
before ``Glu``).

References
----------
.. [1] n2c2 2018 Track 1 guideline (synthetic corpus GUIDELINE.md), "CREATININE"
   (printed range's upper limit, else 1.5 mg/dL; µmol/L ÷ 88.4) and "HBA1C"
   (6.5 ≤ value ≤ 9.5 %, targets are not results).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from clinex.cohort.criteria import LabSpec
from clinex.cohort.lab_numbers import _CELL_NUMBER, _NUM, _NUM_END, _RUN, _num, read_number, read_numbers

__all__ = ["LabValue", "find_lab_values", "lab_holds", "read_number", "read_numbers", "uln_shown"]

_TOKEN = re.compile(
    rf"(?P<range>(?!(?:19|20)\d\d\b)(?:{_NUM})\s*(?:-|–|to)\s*(?!(?:19|20)\d\d\b)(?:{_NUM})(?![\d/]|,\d))"
    rf"|(?P<num>(?:{_NUM})(?![\d/]|,\d))"
    rf"|(?P<run>{_RUN})(?![\d/])"
    r"|(?P<date>\d+/\d+(?:/\d+)?)"
    r"|(?P<word>[A-Za-zµμ%][A-Za-z0-9µμ%/.]*)"
    r"|(?P<cmp><=|>=|<|>|≤|≥)"
    r"|(?P<punct>[,;:()\[\]=~]|->|→)",
)
#: Words after which the next number is a threshold, not a result.
_THRESHOLD_WORDS = {"goal", "target", "above", "below", "over", "under", "less", "greater", "than", "<", ">", "<=", ">=", "≤", "≥", "x"}
#: Words that may stand between a name and its values without ending the reading.
_CONNECTIVES = {
    "from", "to", "peak", "peaked", "now", "was", "is", "of", "stable", "baseline", "up", "down",
    "rose", "risen", "increased", "decreased", "h", "l", "high", "low", "ref", "range", "reference",
    "today", "on", "admission", "at", "has", "had", "then", "and", "level", "value", "result",
    "results", "in", "last", "latest", "recent", "most", "improved", "worsened", "repeat", "hi",
    "mg/dl", "%", "umol/l", "µmol/l", "mmol/l", "with", "flag", "the", "a", "checked", "about",
    "approximately", "remained", "remains", "still", "nadir", "max", "min", "discharge", "prior",
    "previous", "previously", "initial", "initially", "normal", "abnormal", "ul", "ll", "nl", "lo",
}
_REF_WORDS = {"ref", "range", "reference", "normal", "nl"}



@dataclass(frozen=True)
class LabValue:
    """One lab value found in text.

    Attributes
    ----------
    value : float
        In the spec's unit (converted when another unit was printed).
    raw : str
        The number as printed.
    unit : str or None
        The printed unit, lower-cased, if any.
    ref_high : float or None
        Upper limit of the printed reference range, in the spec's unit ("(nl 0.5-1.2)",
        "[0.6-1.3]", "(ref <1.1)").
    flag : {"H", "L"} or None
        The lab's own abnormal flag printed after the value ("1.6 H", "(L)", "high").
    cmp : {"<", "<=", ">", ">="} or None
        A result printed as a bound ("<0.5", ">10"): ``value`` is the bound.
    start, end : int
        Character offsets of the number in the scanned text (half-open).
    name_start, name_end : int
        Offsets of the analyte name.
    """

    value: float
    raw: str
    unit: str | None
    ref_high: float | None
    start: int
    end: int
    name_start: int
    name_end: int
    flag: str | None = None
    cmp: str | None = None

    @property
    def shown(self) -> str:
        """The result as printed, with its comparator ("<0.5") and flag ("1.6 H")."""
        return f"{self.cmp or ''}{self.raw}{' ' + self.flag if self.flag else ''}"


@lru_cache(maxsize=256)
def _compile(names: tuple[str, ...], before: tuple[str, ...], after: tuple[str, ...]):
    name_re = re.compile(r"(?<![A-Za-z0-9])(?:" + "|".join(f"(?:{n})" for n in names) + r")(?![A-Za-z])", re.I)
    before_re = re.compile("|".join(f"(?:{b})" for b in before), re.I) if before else None
    after_re = re.compile(r"\s*(?:" + "|".join(f"(?:{a})" for a in after) + ")", re.I) if after else None
    return name_re, before_re, after_re


def _convert(raw: float, unit: str | None, spec: LabSpec) -> tuple[float | None, float]:
    """Return (value in spec unit or None if implausible, factor used)."""
    lo, hi = spec.plausible
    if unit is not None:
        factor = spec.conversions.get(unit.lower())
        if factor is not None:
            v = raw * factor
            return (v if lo <= v <= hi else None), factor
    if lo <= raw <= hi:
        return raw, 1.0
    if unit is None:
        for factor in spec.conversions.values():
            v = raw * factor
            if lo <= v <= hi:
                return v, factor
    return None, 1.0


def _unit_after(text: str, pos: int, spec: LabSpec) -> str | None:
    m = re.match(r"\s*([%]|[A-Za-zµμ]+/[A-Za-z0-9.]+|[A-Za-zµμ]+)", text[pos : pos + 20])
    if not m:
        return None
    # Greek small mu (U+03BC) is what most keyboards type for the micro sign (U+00B5)
    u = m.group(1).lower().replace("\u03bc", "\u00b5")
    if u == spec.unit.lower() or u in spec.conversions:
        return u
    return None


def find_lab_values(text: str, spec: LabSpec, start: int = 0, end: int | None = None) -> list[LabValue]:
    """Find the values of one analyte in ``text[start:end]``.

    Parameters
    ----------
    text : str
        The text (a patient's whole text or one record); offsets refer to it.
    spec : LabSpec
        Names, exclusions, unit, conversions and plausible range.
    start, end : int
        Character range to scan (half-open); ``end=None`` is the end of the text.

    Returns
    -------
    list of LabValue
        In text order; values outside ``spec.plausible`` are dropped.
    """
    end = len(text) if end is None else end
    name_re, before_re, after_re = _compile(tuple(spec.names), tuple(spec.exclude_before), tuple(spec.exclude_after))
    out: list[LabValue] = []
    for m in name_re.finditer(text, start, end):
        line_start = text.rfind("\n", start, m.start()) + 1
        pre = text[max(line_start, m.start() - 25) : m.start()]
        if before_re is not None and before_re.search(pre):
            continue
        if after_re is not None and after_re.match(text, m.end()):
            continue
        if text[m.start() - 1 : m.start()] == "/" or text[m.end() : m.end() + 1] == "/":
            out.extend(_slash_panel(text, m.start(), m.end(), end, spec))
            continue
        line_end = text.find("\n", m.end(), end)
        seg_end = min(end if line_end < 0 else line_end, m.end() + 80)
        found = _read_values(text, m.end(), seg_end, spec, m.start(), m.end(), bounds=not _THRESHOLD_BEFORE.search(pre))
        if not found:
            found = _column_values(text, line_start, m.start(), m.end(), end, spec)
        out.extend(found)
    return out


_CELL = re.compile(r"\S+(?: \S+)*")


def _column_values(text: str, line_start: int, ns: int, ne: int, end: int, spec: LabSpec) -> list[LabValue]:
    """A flowsheet whose header row names the analyte: read its column below.

    ``Date      A1c      Cr`` / ``3/2079    10.1     1.2``: the header's cells are
    separated by two or more spaces; each following line (until a blank line) is
    split alike and the cell in the analyte's column is read.
    """
    line_end = text.find("\n", ne, end)
    line_end = end if line_end < 0 else line_end
    header = [(m.start() + line_start, m.end() + line_start) for m in _CELL.finditer(text[line_start:line_end])]
    if len(header) < 2:
        return []
    col = next((i for i, (a, b) in enumerate(header) if a <= ns and ne <= b), None)
    if col is None:
        return []
    out: list[LabValue] = []
    pos = line_end + 1
    while pos < end:
        nxt = text.find("\n", pos, end)
        nxt = end if nxt < 0 else nxt
        row = text[pos:nxt]
        if not row.strip():
            break
        cells = [(m.start() + pos, m.group()) for m in _CELL.finditer(row)]
        if len(cells) == len(header):
            off, cell = cells[col]
            num = _CELL_NUMBER.match(cell)
            if num:
                v, _ = _convert(_num(num.group()), _unit_after(text, off + num.end(), spec), spec)
                if v is not None:
                    out.append(LabValue(v, num.group(), None, None, off, off + num.end(), ns, ne))
        pos = nxt + 1
    return out


_PANEL_NAMES = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:/[A-Za-z][A-Za-z0-9]*)+")
_PANEL_VALUES = re.compile(rf"[\s:=]*((?:{_NUM}){_NUM_END}(?:/(?:{_NUM}){_NUM_END})+)")


def _slash_panel(text: str, ns: int, ne: int, end: int, spec: LabSpec) -> list[LabValue]:
    """``Na/K/Cl/CO2/BUN/Cr/Glu: 138/4.2/99/26/14/0.9/211`` → the value in the name's slot."""
    ls = text.rfind("\n", 0, ns) + 1
    le = text.find("\n", ne, end)
    le = end if le < 0 else le
    for g in _PANEL_NAMES.finditer(text, ls, le):
        if g.start() <= ns and ne <= g.end():
            break
    else:
        return []
    names = text[g.start() : g.end()].split("/")
    pos, idx = g.start(), None
    for i, nm in enumerate(names):
        if pos <= ns < pos + len(nm) + 1:
            idx = i
            break
        pos += len(nm) + 1
    vm = _PANEL_VALUES.match(text, g.end(), le)
    if idx is None or vm is None:
        return []
    raws = vm.group(1).split("/")
    if len(raws) != len(names):
        return []
    off = vm.start(1) + sum(len(r) + 1 for r in raws[:idx])
    raw = raws[idx]
    v, _ = _convert(_num(raw), None, spec)
    return [] if v is None else [LabValue(v, raw, None, None, off, off + len(raw), ns, ne)]


#: Words before an analyte name that make a bound after it a threshold ("hold metformin
#: for Cr > 1.5", "if A1c < 7"), not a result.
_THRESHOLD_BEFORE = re.compile(
    r"\b(?:for|with|if|when|unless|goal|target|keep|hold|avoid|contraindicated|until|once|aim|above|below|over|under|than)\b|[<>≤≥]",
    re.I,
)
#: What may stand between an analyte name and a bound read as a result ("Cr <0.5",
#: "creatinine: >10", "Creatinine today was >10").
_BOUND_LEAD = re.compile(r"[\s:=]*(?:(?:was|is|now|today|level|result|value)\b[\s:=]*)*", re.I)
_CMP = {"<": "<", "<=": "<=", "≤": "<=", ">": ">", ">=": ">=", "≥": ">="}
_FLAGS = {"H": "H", "HI": "H", "Hi": "H", "HIGH": "H", "High": "H", "high": "H",
          "L": "L", "LO": "L", "Lo": "L", "LOW": "L", "Low": "L", "low": "L"}
#: What may stand between a value and its flag: brackets, a unit, a reference range.
_BEFORE_FLAG = re.compile(
    r"[\s()\[\]*,:]*(?:(?:mg/dl|[uµμ]mol/l|%)[\s()\[\]*,:]*)?"
    rf"(?:(?:ref|nl|normal|range)?[\s:]*(?:{_NUM})\s*(?:-|–|to)\s*(?:{_NUM})[\s()\[\]*,]*)?",
    re.I,
)


def _read_values(
    text: str, pos: int, seg_end: int, spec: LabSpec, ns: int, ne: int, bounds: bool = True
) -> list[LabValue]:
    """The values after an analyte name (``text[ns:ne]``) in ``text[pos:seg_end]``.

    ``bounds``: a comparator right after the name ("Cr <0.5", "creatinine: >10") makes
    the next number a result bounded that way, unless a threshold word stands before
    the name (the caller decides: "hold metformin for Cr > 1.5"). The tokens
    (:data:`_TOKEN`) are read one by one by a :class:`_ValueReader`.
    """
    reader = _ValueReader(text, pos, seg_end, spec, ns, ne, bounds)
    for t in _TOKEN.finditer(text, pos, seg_end):
        if reader.step(t):
            break
    return reader.finish()


class _ValueReader:
    """The state of :func:`_read_values` over one analyte's tokens.

    Attributes
    ----------
    values : list of LabValue
        Read so far, in text order.
    skip_next : bool
        The next number (or range) is a threshold ("goal", "<"), not a result.
    pending_cmp : str or None
        A comparator right after the name: the next value is a result given as a bound.
    ref_bound : bool
        "(nl <" after a value: the next number is its range's upper limit.
    pending_ref : bool
        A reference word ("ref", "normal") was read: the next range or number is a
        reference range, not a result.
    pre_ref : tuple or None
        A range printed before any value, as (low, high, unit, token match): the next
        value's reference range, or a range of results if no value follows.
    """

    def __init__(self, text: str, pos: int, seg_end: int, spec: LabSpec, ns: int, ne: int, bounds: bool) -> None:
        self.text, self.pos, self.seg_end, self.spec = text, pos, seg_end, spec
        self.ns, self.ne, self.bounds = ns, ne, bounds
        self.values: list[LabValue] = []
        self.skip_next = False
        self.pending_cmp: str | None = None
        self.ref_bound = False
        self.pending_ref = False
        self.after_baseline = False  # "Cr 1.5 (baseline 1.1-1.2)": that range is no reference range
        self.pre_ref: tuple[str, str, str | None, re.Match] | None = None

    def step(self, t: re.Match) -> bool:
        """Read one token; True when the reading stops before it."""
        kind = t.lastgroup
        if kind == "word":
            return self._word(t)
        if kind == "cmp":
            self._cmp(t.group(), t.start())
            return False
        if kind == "punct":
            return t.group() in (";",) and bool(self.values)
        if kind == "date":
            return False
        if kind == "range":
            self._range(t)
            return False
        return self._number(t)

    def finish(self) -> list[LabValue]:
        """The values read; a range printed before any value and nothing after it
        ("A1c (7.1-7.4)") is a range of results after all."""
        if self.pre_ref is not None and not self.values:
            self._add_range(*self.pre_ref)
        return self.values

    def _word(self, t: re.Match) -> bool:
        """A flag after the last value ("1.6 H"), a threshold or reference word, or
        another analyte or prose (stops when a number of its own follows)."""
        s, values = t.group(), self.values
        flag = _FLAGS.get(s.rstrip("."))
        if flag is not None and values and values[-1].flag is None and _BEFORE_FLAG.fullmatch(self.text, values[-1].end, t.start()):
            # "Creatinine 1.6 H [0.6-1.3]", "1.2 (H)", "1.4 mg/dL high": the lab's own flag
            v = values[-1]
            values[-1] = LabValue(v.value, v.raw, v.unit, v.ref_high, v.start, v.end, v.name_start, v.name_end, flag, v.cmp)
            return False
        w = s.lower().rstrip(".")
        if w not in _CONNECTIVES and w != self.spec.unit.lower() and w not in self.spec.conversions:
            # another analyte or prose: stop if it carries its own number
            nxt = re.match(r"\s*[:=]?\s*(\d)", self.text[t.end() : self.seg_end])
            if nxt and values:
                return True
        if w in _THRESHOLD_WORDS:
            self.skip_next = True
        if w in _REF_WORDS:
            self.pending_ref = True
        if w in ("baseline", "usual") and values:
            self.after_baseline = True
        return False

    def _cmp(self, s: str, start: int) -> None:
        """A comparator: a reference range's upper limit ("(nl <1.1)"), a result given
        as a bound ("Cr <0.5"), or a threshold (the next number is skipped)."""
        if self.pending_ref and self.values and s in ("<", "<=", "≤"):
            self.ref_bound = True  # "(nl <1.1)", "(ref <1.1)": the range's upper limit
            self.pending_ref = False
            return
        if self.bounds and not self.values and not self.skip_next and _BOUND_LEAD.fullmatch(self.text, self.pos, start):
            self.pending_cmp = _CMP[s]  # "Cr <0.5", "creatinine >10": a result given as a bound
            return
        self.skip_next = True

    def _range(self, t: re.Match) -> None:
        """A range "a-b": a threshold, a reference range before the value (kept for
        it), the last value's reference range, or a range of results."""
        lo_s, hi_s = re.split(r"\s*(?:-|–|to)\s*", t.group(), maxsplit=1)
        if self.after_baseline:
            # the patient's usual values, not the lab's reference range (blind cohort patient
            # 110 of issue 24's QA: "Cr 1.5 (baseline 1.1-1.2)" read an upper limit of 1.2)
            self.after_baseline = False
            return
        if self.skip_next:
            self.skip_next = False
            return
        if not self.values and (self.pending_ref or _parenthesised(self.text, t.start(), t.end(), self.pos)):
            # "Creatinine (ref 0.6-1.2): 1.4", "HbA1c (4.0-6.5) 10.1": a printed reference
            # range before the value belongs to the value that follows it
            self.pre_ref = (lo_s, hi_s, _unit_after(self.text, t.end(), self.spec), t)
            self.pending_ref = False
            return
        if self.values or self.pending_ref:
            self._reference_range(hi_s, t.end())
            return
        # "stable 1.2-1.3": a range of results
        self._add_range(lo_s, hi_s, _unit_after(self.text, t.end(), self.spec), t)

    def _reference_range(self, hi_s: str, end: int) -> None:
        """A range after a value (or a reference word): its upper limit, converted as
        the value, is the last value's ``ref_high`` unless it has one."""
        values, spec = self.values, self.spec
        unit = _unit_after(self.text, end, spec)
        if values:
            unit = unit or values[-1].unit
        _, factor = _convert(_num(values[-1].raw) if values else _num(hi_s), unit, spec)
        hi = _num(hi_s) * factor
        if values and values[-1].ref_high is None:
            v = values[-1]
            values[-1] = LabValue(v.value, v.raw, v.unit, hi, v.start, v.end, v.name_start, v.name_end, v.flag, v.cmp)
        self.pending_ref = False

    def _add_range(self, lo_s: str, hi_s: str, unit: str | None, t: re.Match) -> None:
        """Both ends of the range token ``t`` as values (those in the plausible range)."""
        hi_start = t.start() + t.group().rfind(hi_s)
        for raw, off in ((lo_s, t.start()), (hi_s, hi_start)):
            v, _ = _convert(_num(raw), unit, self.spec)
            if v is not None:
                self.values.append(LabValue(v, raw, unit, None, off, off + len(raw), self.ns, self.ne))

    def _number(self, t: re.Match) -> bool:
        """A number, or a comma run read as a list of numbers ("1.2,1.4"); True when
        the reading stops at one of them."""
        self.after_baseline = False  # "(baseline 1.1)": a single value is read as before
        s = t.group()
        if t.lastgroup == "run":
            parts = [(s[a:b], t.start() + a, t.start() + b) for _, a, b in read_numbers(s)]
            if not parts:
                # "Cr 1,2,3": one value or several? Not read, and what it answered is spent
                self.skip_next = self.ref_bound = self.pending_ref = False
                self.pending_cmp = None
                return False
        else:
            parts = [(s, t.start(), t.end())]
        return any(self._one_number(*part) for part in parts)

    def _one_number(self, s: str, n_start: int, n_end: int) -> bool:
        """One number at ``[n_start, n_end)``: a reference limit, a skipped threshold,
        year or reference number, or a value; True when an implausible number after a
        value stops the reading."""
        if self.ref_bound:
            self.ref_bound = False
            v = self.values[-1]
            if v.ref_high is None:
                hi = _num(s) * _factor(v, self.spec)
                self.values[-1] = LabValue(v.value, v.raw, v.unit, hi, v.start, v.end, v.name_start, v.name_end, v.flag, v.cmp)
            return False
        if self.skip_next:
            self.skip_next = False
            return False
        raw_f = _num(s)
        if re.fullmatch(r"(19|20)\d\d", s):
            return False
        if self.pending_ref:
            self.pending_ref = False
            return False
        unit = _unit_after(self.text, n_end, self.spec)
        v, factor = _convert(raw_f, unit, self.spec)
        if v is None:
            return bool(self.values)
        ref_high = None
        if self.pre_ref is not None and not self.values:
            unit_ref = self.pre_ref[2]
            ref_factor = self.spec.conversions.get(unit_ref, factor) if unit_ref else factor  # "(60-110 umol/L)"
            ref_high = _num(self.pre_ref[1]) * ref_factor
            self.pre_ref = None
        self.values.append(LabValue(v, s, unit, ref_high, n_start, n_end, self.ns, self.ne, None, self.pending_cmp))
        self.pending_cmp = None
        return False


def _factor(value: LabValue, spec: LabSpec) -> float:
    """The factor that converted ``value`` from its printed unit to the spec's (1.0 when
    printed in it; for a value printed without a unit, the one its reading used)."""
    raw = _num(value.raw)
    return spec.conversions.get(value.unit, 1.0) if value.unit else (value.value / raw if raw else 1.0)


def _parenthesised(text: str, start: int, end: int, pos: int) -> bool:
    """Whether ``text[start:end]`` stands in parentheses opened after ``pos`` ("(0.6-1.2)", "(ref 4-6)")."""
    open_ = text.rfind("(", pos, start)
    if open_ < 0 or ")" in text[open_:start]:
        return False
    return _CLOSE_AFTER_RANGE.match(text[end : end + 16]) is not None


#: A range's closing parenthesis, after an optional unit: "0.6-1.2)", "4.0-5.6 %)".
_CLOSE_AFTER_RANGE = re.compile(r"\s*(?:[A-Za-z\u00b5\u03bc%/]+\s*)?\)")


def lab_holds(value: LabValue, spec: LabSpec) -> bool:
    """Whether one value meets the spec's threshold.

    ``between`` is inclusive at both ends; ``below``/``above`` are strict. With
    ``above_reference`` the line's own evidence decides, in this order: the printed
    reference range's upper limit replaces ``above`` when there is one (a value equal
    to it is not above it; "Cr 1.4 (nl 0.5-1.2)" holds, "Creatinine 1.6 (nl 0.5-1.8)"
    does not); else the lab's flag ("1.2 H" holds, "1.6 L" does not); else ``above``
    in the spec's unit (values in µmol/L converted: 1 mg/dL = 88.4 µmol/L). A result
    printed as a bound holds only when every value it allows does: "<0.5" is below
    0.5 (never above a limit, never inside a ``between`` range), ">10" is above 10
    (above any limit up to 10, never below one nor inside a range).

    References
    ----------
    .. [1] n2c2 2018 Track 1 criteria (Stubbs et al., JAMIA 2019, Table 1): CREATININE
       "serum creatinine > upper limit of normal"; HBA1C "any hemoglobin A1c value
       between 6.5% and 9.5%".
    """
    if value.cmp is not None:
        return _bound_holds(value, spec)
    v = value.value
    if spec.above_reference and value.ref_high is None and value.flag is not None and spec.above is not None:
        return value.flag == "H"
    if spec.between is not None and not (spec.between[0] <= v <= spec.between[1]):
        return False
    if spec.below is not None and not v < spec.below:
        return False
    if spec.above is not None:
        limit = value.ref_high if (spec.above_reference and value.ref_high is not None) else spec.above
        if not v > limit + 1e-9:
            return False
    return True


def uln_shown(value: LabValue, spec: LabSpec) -> str:
    """The upper limit of normal of a value's printed range, in the value's own unit.

    ``value.ref_high`` is kept in the spec's unit (mg/dL for creatinine). A value printed
    in that unit shows it as before ("1.3"); a value in another unit shows the limit in
    that unit and, labelled, in the spec's unit, so that the evidence never sets a
    µmol/L value beside a mg/dL limit: ``Creatinine 120 umol/L (nl 60-110)`` shows
    "110 umol/L = 1.24 mg/dL".

    Parameters
    ----------
    value : LabValue
        A value with ``ref_high`` set.
    spec : LabSpec
        The spec it was read with (unit and conversions).

    Returns
    -------
    str
        The limit as the evidence rule shows it after "ULN ".

    References
    ----------
    .. [1] n2c2 2018 Track 1 guideline (synthetic corpus GUIDELINE.md), "CREATININE":
       the printed range's upper limit; µmol/L ÷ 88.4 = mg/dL.
    """
    if value.ref_high is None:
        raise ValueError("the value has no printed reference range")
    factor = _factor(value, spec)
    if abs(factor - 1.0) < 1e-9:
        return f"{value.ref_high:.3g}"
    unit = value.unit or next((u for u, f in spec.conversions.items() if abs(f - factor) < 1e-9), None)
    own = f"{value.ref_high / factor:.4g}" + (f" {_unit_label(unit)}" if unit else "")
    return f"{own} = {value.ref_high:.3g} {spec.unit}"


def _unit_label(unit: str) -> str:
    """A lower-cased unit as labs print it: "umol/l" → "umol/L", "mg/dl" → "mg/dL"."""
    head, sep, tail = unit.rpartition("/")
    return f"{head}/{tail[:-1] + tail[-1].upper()}" if sep and tail.endswith("l") else unit


def _bound_holds(value: LabValue, spec: LabSpec) -> bool:
    """:func:`lab_holds` for a result printed as a bound (``value.cmp`` set)."""
    x, below_bound = value.value, value.cmp in ("<", "<=")
    if spec.between is not None:
        return False  # a half-open interval is never inside a closed range
    if spec.below is not None:
        if not below_bound or not (x <= spec.below if value.cmp == "<" else x < spec.below):
            return False
    if spec.above is not None:
        limit = value.ref_high if (spec.above_reference and value.ref_high is not None) else spec.above
        if below_bound or not (x >= limit - 1e-9 if value.cmp == ">" else x > limit + 1e-9):
            return False
    return True
