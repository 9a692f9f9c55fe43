"""``clinex pv e2b``: E2B(R3) ICSRs from a batch run (clinex.pv.e2b; issue 25, item 4).

Every written file is parsed with defusedxml and checked against the FDA's reference
material in ``../shared/data/e2b_r3`` (skipped when absent):

- ``icsr_data_elements.csv``: every element clinex fills (``resources/pv/e2b/elements.json``)
  is found at the CSV's XPath (a small XPath reader below evaluates the CSV's own
  expressions), within its maximum length, of its data type, with an allowed value or an
  allowed nullFlavor; dates have the precision the ICH rules ask and lie in the past;
- the FDA example instances ``FAERS2022Scenario*.xml``: every element path and attribute
  clinex writes occurs there, and siblings come in the examples' order;
- ``rejection_warning_rules.csv``: the rules that concern a filled element (attached to
  it, or naming it) are implemented in ``RULES`` below and none fires; a test fails when
  the CSV has such a rule that ``RULES`` lacks.
"""

from __future__ import annotations

import csv
import doctest
import json
import re
import sys
from datetime import date, datetime, timedelta
from functools import lru_cache
from pathlib import Path
from typing import Any

import pytest
from defusedxml import ElementTree as DET

from clinex.errors import InputError
from clinex.pv import e2b, e2b_case, e2b_xml
from clinex.pv.e2b import E2BSettings, age_group_of, age_of, case_from_record, sex_of, write_e2b
from clinex.pv.formats.phee_json import to_phee_dict
from clinex.pv.types import Argument, Attribute, Combination, Event, SentenceEvents
from clinex.text import Span

HL7 = "urn:hl7-org:v3"
XSI = "http://www.w3.org/2001/XMLSchema-instance"
REPO = Path(__file__).resolve().parents[2]
E2B_DATA = REPO.parent / "shared" / "data" / "e2b_r3"

ASSERTED = "A 66-year-old man developed hepatitis after amoxicillin-clavulanate."
RECORDS = [
    {"id": "12345678", "text": ASSERTED},
    {"id": "23456789", "text": "No hepatotoxicity was observed in patients treated with isoniazid."},
    {"id": "34567890", "text": "The weather was nice today."},
]


# --- a small reader of the CSV's XPath expressions ------------------------------------------------
class XPath:
    """The XPath 1.0 subset of ``icsr_data_elements.csv``.

    Absolute location paths of child steps with predicates (``[@a='v']``, ``[n]``, a
    relative path that must exist or equal a literal, ``starts-with(path, 'lit')``), ending
    in an element, ``@attribute`` or ``text()``; ``substring(path, n)``; the CSV's
    repetition placeholders ``[r]``, ``[i]``, ``[k]`` (and the literal ``'UUID of k-th
    drug'``) stand for any position and are expanded one instance at a time.
    """

    def __init__(self, text: str) -> None:
        self.text = " ".join(text.split())
        self.offset = 0
        m = re.fullmatch(r"substring\((.*),\s*(\d+)\)", self.text)
        if m:
            body, self.offset = m.group(1), int(m.group(2)) - 1
        else:  # the CSV's null XPath of FDA.C.2.r.2.8 opens a substring( it never closes
            body = self.text.removeprefix("substring(")
        if not body.startswith("/"):
            raise ValueError(f"not an absolute path: {text!r}")
        self.placeholders: list[int] = []  # ids of placeholder predicates, in path order
        self.steps = self._steps(body[1:])

    # parsing
    def _split(self, s: str, sep: str) -> list[str]:
        parts, depth, quote, cur = [], 0, False, ""
        for ch in s:
            if ch == "'":
                quote = not quote
            elif not quote and ch == "[":
                depth += 1
            elif not quote and ch == "]":
                depth -= 1
            if ch == sep and depth == 0 and not quote:
                parts.append(cur)
                cur = ""
            else:
                cur += ch
        parts.append(cur)
        return parts

    def _steps(self, path: str) -> list[tuple[str, list[tuple]]]:
        steps = []
        for raw in self._split(path, "/"):
            raw = raw.strip()
            m = re.match(r"(@?[A-Za-z_][\w.:-]*(?:\(\))?)", raw)
            if not m:
                raise ValueError(f"bad step {raw!r} in {self.text!r}")
            name, rest, preds = m.group(1), raw[m.end():], []
            while rest:
                if not rest.startswith("["):
                    raise ValueError(f"bad predicate {rest!r} in {self.text!r}")
                depth, quote = 0, False
                for j, ch in enumerate(rest):
                    if ch == "'":
                        quote = not quote
                    elif not quote and ch == "[":
                        depth += 1
                    elif not quote and ch == "]":
                        depth -= 1
                        if depth == 0:
                            break
                preds.append(self._predicate(rest[1:j].strip()))
                rest = rest[j + 1:].strip()
            steps.append((name, preds))
        return steps

    def _predicate(self, p: str) -> tuple:
        if re.fullmatch(r"\d+", p):
            return ("pos", int(p))
        if p in ("r", "i", "k"):
            self.placeholders.append(len(self.placeholders))
            return ("any", self.placeholders[-1])
        m = re.fullmatch(r"starts-with\((.+),\s*'([^']*)'\)", p)
        if m:
            return ("starts", self._steps(m.group(1)), m.group(2))
        parts = self._split(p, "=")
        if len(parts) == 2 and parts[1].strip().startswith("'"):
            literal = parts[1].strip()[1:-1]
            if literal == "UUID of k-th drug":  # the CSV's placeholder for a drug's id
                return ("exists", self._steps(parts[0]))
            return ("equals", self._steps(parts[0]), literal)
        return ("exists", self._steps(p))

    # evaluation
    @staticmethod
    def _local(tag: Any) -> str | None:
        return tag.rsplit("}", 1)[-1] if isinstance(tag, str) else None

    @staticmethod
    def _attr(node: Any, name: str) -> str | None:
        if ":" in name:
            prefix, local = name.split(":", 1)
            return node.get(f"{{{XSI}}}{local}") if prefix == "xsi" else None
        return node.get(name)

    def _eval(self, nodes: list, steps: list, bind: dict[int, int]) -> list:
        for name, preds in steps:
            if name.startswith("@"):
                return [v for node in nodes if (v := self._attr(node, name[1:])) is not None]
            if name == "text()":
                return [node.text for node in nodes if node.text]
            out = []
            for node in nodes:
                kids = [c for c in node if self._local(c.tag) == name]
                for pred in preds:
                    kids = self._filter(kids, pred, bind)
                out.extend(kids)
            nodes = out
        return nodes

    def _filter(self, kids: list, pred: tuple, bind: dict[int, int]) -> list:
        kind = pred[0]
        if kind == "pos":
            return kids[pred[1] - 1: pred[1]]
        if kind == "any":
            k = bind.get(pred[1])
            return kids if k is None else kids[k - 1: k]
        if kind == "exists":
            return [c for c in kids if self._eval([c], pred[1], bind)]
        if kind == "equals":
            return [c for c in kids if any(v == pred[2] for v in self._eval([c], pred[1], bind))]
        return [c for c in kids if any(str(v).startswith(pred[2]) for v in self._eval([c], pred[1], bind))]

    def values(self, root: Any, bind: dict[int, int] | None = None) -> list[str]:
        first, preds = self.steps[0]
        if self._local(root.tag) != first:
            return []
        nodes = [root]
        for pred in preds:
            nodes = self._filter(nodes, pred, bind or {})
        found = self._eval(nodes, self.steps[1:], bind or {})
        return [str(v)[self.offset:] for v in found if isinstance(v, str)]

    def instances(self, root: Any) -> list[dict[int, int]]:
        """Every binding of the placeholders to positions that exist in ``root``."""
        bindings = [{}]
        for ph in self.placeholders:
            nxt = []
            for bind in bindings:
                cut = self._cut_at(ph)
                count = len(cut._nodes(root, bind))
                nxt.extend({**bind, ph: k} for k in range(1, count + 1))
            bindings = nxt
        return bindings

    def _cut_at(self, ph: int) -> XPath:
        for n, (_name, preds) in enumerate(self.steps):
            if ("any", ph) in preds:
                cut = object.__new__(XPath)
                cut.text, cut.offset, cut.placeholders = self.text, 0, self.placeholders
                cut.steps = self.steps[: n + 1]
                return cut
        raise AssertionError(ph)

    def _nodes(self, root: Any, bind: dict[int, int]) -> list:
        first, preds = self.steps[0]
        nodes = [root] if self._local(root.tag) == first else []
        for pred in preds:
            nodes = self._filter(nodes, pred, bind)
        return self._eval(nodes, self.steps[1:], bind)


def test_xpath_reader_on_the_fda_example() -> None:
    root = DET.parse(E2B_DATA / "FAERS2022Scenario1.xml").getroot() if E2B_DATA.is_dir() else None
    if root is None:
        pytest.skip("../shared/data/e2b_r3 is not beside this checkout")
    rows = _elements()
    assert XPath(rows["C.1.1"]["xpath"]).values(root) == ["US-APHARMA-8744554B"]
    reactions = XPath(rows["E.i.2.1b"]["xpath"])
    assert [reactions.values(root, b) for b in reactions.instances(root)] == [["10027940"], ["10009896"]]
    assert XPath(rows["E.i.3.2a"]["null"]).values(root) == ["NI", "NI"]
    role = XPath(rows["G.k.1"]["xpath"])
    assert sorted(role.values(root)) == ["1", "1", "2"]
    assert XPath(rows["FDA.C.2.r.2.8"]["xpath"]).values(root) == ["alladdresses@site.com"]


# --- the FDA's reference material -----------------------------------------------------------------
_NF = ("NI", "MSK", "UNK", "NA", "ASKU", "NASK", "NINF", "PINF", "OTH")


@lru_cache(maxsize=1)
def _elements() -> dict[str, dict[str, Any]]:
    """``icsr_data_elements.csv`` by element number (columns by position: the header has two rows)."""
    with open(E2B_DATA / "icsr_data_elements.csv", encoding="utf-8-sig", newline="") as fh:
        rows = list(csv.reader(fh))
    header = rows[1]
    assert header[2] == "DATA ELEMENT NUMBER" and header[32] == "Value" and header[20:29] == list(_NF)
    out = {}
    for r in rows[2:]:
        number = r[2].strip()
        if not number or number.startswith("(Header"):
            continue
        out[number] = {
            "number": number, "name": " ".join(r[3].split()), "max_length": r[4].strip(),
            "data_type": " ".join(r[5].split()), "values": " ".join(r[6].split()),
            "ich": r[7].strip(), "ich_rules": " ".join(r[8].split()), "fda": r[9].strip(),
            "null_flavors": {nf for nf, flag in zip(_NF, r[20:29], strict=True) if flag.strip() == "Yes"},
            "xpath": r[32].strip(), "null": r[33].strip(),
        }
    return out


@lru_cache(maxsize=1)
def _rules() -> list[dict[str, Any]]:
    """``rejection_warning_rules.csv``: one row per rule id, with the element it is listed under."""
    with open(E2B_DATA / "rejection_warning_rules.csv", encoding="utf-8-sig", newline="") as fh:
        rows = list(csv.reader(fh))
    start = next(i for i, r in enumerate(rows) if r[0] == "DATA ELEMENT NUMBER") + 1
    out, element = [], None
    for r in rows[start:]:
        element = r[0].strip() or element
        if re.fullmatch(r"[RW]\d{4}", r[5].strip()):
            out.append({"id": r[5].strip(), "element": element, "rule": " ".join(r[2].split()),
                        "message": " ".join(r[6].split()), "rejection": bool(r[3].strip())})
    return out


def _allowed(row: dict[str, Any]) -> Any:
    """The allowed values of an element: a set of codes, a regular expression, or None (free)."""
    text = row["values"]
    codes = set(re.findall(r"(?<![\w.])(\d+)\s*=", text))
    if codes:
        return codes
    if row["data_type"] == "Boolean":
        return set(re.findall(r"\b(true|false)\b", text))
    if "ISO 3166" in text:
        return re.compile(r"[A-Z]{2}")
    if "ISO 639-2" in text:
        return re.compile(r"[a-z]{3}")
    if "UCUM" in text:
        return set(re.findall(r"([\w.{}]+)\s*\(", text.split(":", 1)[1]))
    return None


_DATE = re.compile(r"(\d{4})(\d{2})?(\d{2})?(\d{2})?(\d{2})?(\d{2})?(?:\.\d+)?([+-]\d{4})?")


def _value_problems(row: dict[str, Any], value: str) -> list[str]:
    n, problems = row["number"], []
    if row["max_length"].isdigit() and len(value) > int(row["max_length"]):
        problems.append(f"{n}: {len(value)} characters, more than {row['max_length']} (max length)")
    dtype = row["data_type"]
    if dtype == "N" and not re.fullmatch(r"-?\d+(?:\.\d+)?", value):
        problems.append(f"{n}: {value!r} is not numeric (N)")
    if dtype == "A" and not re.fullmatch(r"[A-Za-z]+", value):
        problems.append(f"{n}: {value!r} is not alphabetic (A)")
    if dtype == "Boolean" and value not in ("true", "false"):
        problems.append(f"{n}: {value!r} is not a Boolean")
    if dtype == "Date/Time":
        m = _DATE.fullmatch(value)
        if not m:
            problems.append(f"{n}: {value!r} is not an HL7 date/time")
        else:
            digits = len(re.sub(r"\D", "", value.split("+")[0].split("-")[0]))
            rules = row["ich_rules"] + " " + row["values"]
            if ("to the second" in rules or "down to the second" in rules) and digits < 14:
                problems.append(f"{n}: {value!r} lacks full precision (CCYYMMDDhhmmss)")
            if "day" in rules and digits < 8:
                problems.append(f"{n}: {value!r} lacks the minimum precision CCYYMMDD")
            day = date(int(m.group(1)), int(m.group(2) or 1), int(m.group(3) or 1))
            if day > date.today() + timedelta(days=1):
                problems.append(f"{n}: {value!r} is a future date")
    allowed = _allowed(row)
    if isinstance(allowed, set) and value not in allowed:
        problems.append(f"{n}: {value!r} is not an allowed value {sorted(allowed)}")
    if isinstance(allowed, re.Pattern) and not allowed.fullmatch(value) and value != "EU":
        problems.append(f"{n}: {value!r} is not an allowed code ({row['values'][:40]})")
    return problems


def check_elements(root: Any) -> tuple[list[str], dict[str, int]]:
    """Every element of ``elements.json`` in a parsed batch file, against the CSV.

    Returns the problems and, per element, the number of instances holding a value or a
    nullFlavor.
    """
    rows, problems, seen = _elements(), [], {}
    for number, rule in e2b.element_rules().elements.items():
        row = rows[number]
        value_path = XPath(row["xpath"])
        null_path = XPath(row["null"]) if row["null"] else None
        seen[number] = 0
        for bind in value_path.instances(root):
            values = value_path.values(root, bind)
            nulls = null_path.values(root, bind) if null_path else []
            if values or nulls:
                seen[number] += 1
            elif rule.filled == "always":
                problems.append(f"{number}: no value and no nullFlavor at {row['xpath'][:80]}... ({bind})")
            if values and nulls:
                problems.append(f"{number}: both a value and a nullFlavor")
            for v in values:
                problems += _value_problems(row, v)
            for nf in nulls:
                if nf not in row["null_flavors"]:
                    problems.append(f"{number}: nullFlavor {nf} not allowed ({sorted(row['null_flavors'])})")
    return problems, seen


# --- the FDA example instances ---------------------------------------------------------------------
def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def _walk(el: Any, path: str = ""):
    here = f"{path}/{_local(el.tag)}"
    yield here, el
    for child in el:
        if isinstance(child.tag, str):
            yield from _walk(child, here)


@lru_cache(maxsize=1)
def _example_structure() -> tuple[dict[str, set[str]], set[tuple[str, str, str]]]:
    """Element paths -> attribute names, and (parent path, a, b) where child a came before b."""
    paths: dict[str, set[str]] = {}
    order: set[tuple[str, str, str]] = set()
    for f in sorted(E2B_DATA.glob("FAERS2022Scenario*.xml")):
        for path, el in _walk(DET.parse(f).getroot()):
            paths.setdefault(path, set()).update(el.attrib)
            kids = [_local(c.tag) for c in el if isinstance(c.tag, str)]
            order.update((path, a, b) for i, a in enumerate(kids) for b in kids[i + 1:] if a != b)
    return paths, order


def check_structure(root: Any) -> list[str]:
    paths, order = _example_structure()
    problems = []
    for path, el in _walk(root):
        if path not in paths:
            problems.append(f"{path}: no such element path in the FDA examples")
            continue
        extra = set(el.attrib) - paths[path] - {"nullFlavor"}  # nullFlavors are checked against the CSV
        if extra:
            problems.append(f"{path}: attributes {sorted(extra)} not in the FDA examples")
        kids = [_local(c.tag) for c in el if isinstance(c.tag, str)]
        for i, a in enumerate(kids):
            for b in kids[i + 1:]:
                if a != b and (path, b, a) in order and (path, a, b) not in order:
                    problems.append(f"{path}: <{a}> before <{b}>; the FDA examples have the other order")
    return problems


# --- the FDA rejection and warning rules --------------------------------------------------------------
def _vals(root: Any, number: str, r: int, *, null: bool = False) -> list[str]:
    row = _elements()[number]
    path = XPath(row["null"] if null else row["xpath"]) if (row["null"] if null else row["xpath"]) else None
    if path is None:
        return []
    return path.values(root, {0: r}) if path.placeholders else path.values(root)


def _given(root: Any, number: str, r: int) -> bool:
    return bool(_vals(root, number, r) or _vals(root, number, r, null=True))


def _batch(root: Any, number: str) -> str | None:
    v = XPath(_elements()[number]["xpath"]).values(root)
    return v[0] if v else None


def _message(root: Any, r: int) -> Any:
    return root.findall(f"{{{HL7}}}PORR_IN049016UV")[r - 1]


def _malfunction(root: Any, r: int) -> bool:
    """FDA.G.k.12.r.1 = true somewhere in message ``r`` (the CSV's XPath for it is malformed: ``[classCode="MANU"]``)."""
    return any(c.find(f"{{{HL7}}}code") is not None and c.find(f"{{{HL7}}}code").get("code") == "C54026"
               and c.find(f"{{{HL7}}}value") is not None and c.find(f"{{{HL7}}}value").get("value") == "true"
               for c in _message(root, r).iter(f"{{{HL7}}}characteristic"))


def _other_role(root: Any, r: int) -> bool:
    """FDA.G.k.1.a given in message ``r`` (the CSV has no XPath for it; its code system as in the FDA example)."""
    return any(v.get("codeSystem") == "2.16.840.1.113883.3.989.5.1.2.1.1.8" for v in _message(root, r).iter(f"{{{HL7}}}value"))


IND = {"CDER_IND", "CBER_IND"}
PREMARKET_RECEIVERS = {"CDER_IND", "CBER_IND", "CDER_IND_EXEMPT_BA_BE"}


def _rule_checks() -> dict[str, Any]:
    """Rule id -> check(root, r) returning True when the rule is met for message ``r``."""
    def v(root, n, r):
        return _vals(root, n, r)

    def one(root, n, r):
        x = v(root, n, r)
        return x[0] if x else None

    def premarket(root, r):
        return _batch(root, "N.1.4") == "ZZFDA_PREMKT"

    def aggregate(root, r):
        return one(root, "D.1", r) in ("AGGREGATE", "AGGREGRATE")

    return {
        "R0004": lambda root, r: one(root, "N.2.r.3", r) not in ("CDER", "CBER") or _batch(root, "N.1.4") == "ZZFDA",
        "R0005": lambda root, r: one(root, "N.2.r.3", r) not in PREMARKET_RECEIVERS
        or _batch(root, "N.1.4") == "ZZFDA_PREMKT",
        "R0006": lambda root, r: _batch(root, "N.1.4") != "ZZFDA" or one(root, "N.2.r.3", r) == "CDER",
        "R0007": lambda root, r: not premarket(root, r) or one(root, "N.2.r.3", r) in PREMARKET_RECEIVERS,
        "R0100": lambda root, r: one(root, "N.2.r.2", r) == _batch(root, "N.1.3") and len(
            {x for k in range(1, 1 + len(root.findall(f"{{{HL7}}}PORR_IN049016UV"))) for x in v(root, "N.2.r.2", k)}) == 1,
        "R0008": lambda root, r: not (premarket(root, r) and one(root, "N.2.r.3", r) in PREMARKET_RECEIVERS
                                      and (v(root, "FDA.C.5.5a", r) or v(root, "FDA.C.5.5b", r))
                                      and one(root, "C.5.4", r) in ("1", "2", "3")) or one(root, "C.1.3", r) == "2",
        "R0110": lambda root, r: not (premarket(root, r) and one(root, "N.2.r.3", r) in IND
                                      and v(root, "FDA.C.5.5a", r) and not v(root, "C.5.4", r))
        or one(root, "C.1.3", r) == "1",
        "R0111": lambda root, r: not (premarket(root, r) and one(root, "N.2.r.3", r) == "CDER_IND_EXEMPT_BA_BE")
        or one(root, "C.1.3", r) == "2",
        "R0112": lambda root, r: not (premarket(root, r) and one(root, "N.2.r.3", r) in IND)
        or one(root, "C.1.3", r) not in ("3", "4"),
        "R0009": lambda root, r: one(root, "C.1.6.1", r) != "true" or bool(v(root, "C.1.6.1.r.1", r)),
        "R0011": lambda root, r: "NI" not in _vals(root, "C.1.7", r, null=True),
        "R0016": lambda root, r: not (premarket(root, r) and one(root, "C.1.7", r) == "true"
                                      and one(root, "C.1.3", r) in ("1", "2"))
        or one(root, "FDA.C.1.7.1", r) in ("1", "6"),
        "R0017": lambda root, r: one(root, "C.1.9.1", r) != "true" or bool(v(root, "C.1.9.1.r.1", r)),
        "R0018": lambda root, r: not (one(root, "C.1.9.1", r) == "true" and v(root, "C.1.9.1.r.1", r))
        or bool(v(root, "C.1.9.1.r.2", r)),
        "W0001": lambda root, r: not (premarket(root, r) and aggregate(root, r)) or bool(v(root, "C.1.10.r", r)),
        "R0019": lambda root, r: "1" not in v(root, "C.2.r.5", r) or _given(root, "C.2.r.3", r),
        "R0020": lambda root, r: "1" not in v(root, "C.2.r.5", r) or _given(root, "C.2.r.4", r),
        "R0021": lambda root, r: "1" in v(root, "C.2.r.5", r),
        "R0022": lambda root, r: one(root, "C.3.1", r) not in tuple("123456") or bool(v(root, "C.3.2", r)),
        "R0023": lambda root, r: one(root, "C.1.3", r) != "2" or bool(v(root, "C.5.4", r)),
        "R0102": lambda root, r: not (one(root, "C.1.3", r) == "2" and premarket(root, r)
                                      and one(root, "N.2.r.3", r) in PREMARKET_RECEIVERS)
        or one(root, "C.5.4", r) in ("1", "2", "3"),
        "R0103": lambda root, r: not (one(root, "C.1.3", r) == "1" and one(root, "N.2.r.3", r) == "CDER")
        or not v(root, "C.5.4", r),
        "R0104": lambda root, r: not (one(root, "C.1.3", r) == "2" and one(root, "N.2.r.3", r) == "CDER"
                                      and _batch(root, "N.1.4") == "ZZFDA") or one(root, "C.5.4", r) in ("1", "2", "3"),
        "R0113": lambda root, r: not (premarket(root, r) and one(root, "N.2.r.3", r) in IND
                                      and one(root, "C.1.3", r) == "1") or not v(root, "C.5.4", r),
        "W0002": lambda root, r: not aggregate(root, r) or one(root, "C.5.4", r) == "1",
        "R0024": lambda root, r: not (one(root, "C.1.3", r) in ("1", "2") and one(root, "N.2.r.3", r) in IND)
        or bool(v(root, "FDA.C.5.5a", r)),
        "R0025": lambda root, r: not (one(root, "C.1.3", r) == "2" and one(root, "N.2.r.3", r) == "CDER_IND_EXEMPT_BA_BE")
        or bool(v(root, "FDA.C.5.5b", r)),
        "R0027": lambda root, r: not (one(root, "FDA.C.1.12", r) == "true" and _malfunction(root, r)
                                      and "10067482" in v(root, "E.i.2.1b", r)) or "NA" in _vals(root, "D.1", r, null=True),
        "W0010": lambda root, r: not (one(root, "C.1.3", r) == "2" and v(root, "C.1.10.r", r)
                                      and v(root, "FDA.C.5.5a", r)) or aggregate(root, r),
        "R0029": lambda root, r: not v(root, "D.2.2b", r) or bool(v(root, "D.2.2a", r)),
        "R0030": lambda root, r: not v(root, "D.2.2a", r) or bool(v(root, "D.2.2b", r)),
        "R0035": lambda root, r: bool(v(root, "D.7.1.r.1b", r)) or _given(root, "D.7.2", r),
        "R0041": lambda root, r: not (one(root, "C.1.3", r) == "2" and one(root, "N.2.r.3", r) in IND
                                      and "true" in v(root, "E.i.3.2a", r)) or _given(root, "D.9.1", r),
        "W0003": lambda root, r: not (set(_vals(root, "D.1", r, null=True)) & {"NA"} or aggregate(root, r)
                                      or one(root, "D.1", r) == "SUMMARY")
        or "NA" in _vals(root, "FDA.D.11.r.1", r, null=True),
        "W0004": lambda root, r: not (set(_vals(root, "D.1", r, null=True)) & {"NA"} or aggregate(root, r)
                                      or one(root, "D.1", r) == "SUMMARY")
        or "NA" in XPath(_elements()["FDA.D.12"]["xpath"].replace("/@code", "/@nullFlavor")).values(root, {0: r}),
        "R0058": lambda root, r: len(v(root, "E.i.1.1b", r)) >= len(v(root, "E.i.1.1a", r)),
        "W0005": lambda root, r: (v(root, "G.k.1", r) or ["?"])[0] in ("1", "3")
        or ((v(root, "G.k.1", r) or ["?"])[0] == "4" and _malfunction(root, r)),
        "R0069": lambda root, r: one(root, "N.2.r.3", r) != "CDER" or bool(set(v(root, "G.k.1", r)) & {"1", "3", "4"}),
        "R0070": lambda root, r: not (one(root, "C.1.3", r) == "2" and one(root, "N.2.r.3", r) in IND)
        or (set(v(root, "G.k.1", r)) <= {"1", "2", "3"} and bool(set(v(root, "G.k.1", r)) & {"1", "3"})),
        "R0071": lambda root, r: not (one(root, "C.1.3", r) == "2" and one(root, "N.2.r.3", r) == "CDER_IND_EXEMPT_BA_BE")
        or bool(set(v(root, "G.k.1", r)) & {"1", "3", "4"}),
        "R0072": lambda root, r: not (one(root, "FDA.C.1.12", r) == "true" and _malfunction(root, r)
                                      and "4" in v(root, "G.k.1", r)) or _other_role(root, r),
        "W0009": lambda root, r: not premarket(root, r) or not (v(root, "FDA.C.5.5a", r) or v(root, "FDA.C.5.5b", r)),
        "R0114": lambda root, r: not (_batch(root, "N.1.4") == "ZZFDA" and one(root, "N.2.r.3", r) == "CDER"
                                      and one(root, "C.1.3", r) == "2" and one(root, "C.5.4", r) in ("2", "3"))
        or not any(re.search(r"IND|PANDA", x) for x in v(root, "G.k.3.1", r)),
        "R0083": lambda root, r: len(v(root, "G.k.7.r.2a", r)) >= len(v(root, "G.k.7.r.2b", r)),
        "R0084": lambda root, r: len(v(root, "G.k.7.r.2b", r)) >= len(v(root, "G.k.7.r.2a", r)),
        "R0085": lambda root, r: not (one(root, "C.1.3", r) == "2" and v(root, "FDA.C.5.5a", r))
        or bool(v(root, "G.k.9.i.2.r.1", r)),
        "R0086": lambda root, r: not (one(root, "C.1.3", r) == "2" and v(root, "FDA.C.5.5a", r))
        or bool(v(root, "G.k.9.i.2.r.2", r)),
        "R0087": lambda root, r: not (one(root, "C.1.3", r) == "2" and v(root, "FDA.C.5.5a", r))
        or bool(v(root, "G.k.9.i.2.r.3", r)),
    }


RULE_IDS = tuple(sorted(_rule_checks()))
"""The FDA rules checked on every written ICSR (listed here as the brief asks)."""


def check_rules(root: Any) -> list[str]:
    n = len(root.findall(f"{{{HL7}}}PORR_IN049016UV"))
    return [f"{rid} fires on message {r}" for rid, check in _rule_checks().items()
            for r in range(1, n + 1) if not check(root, r)]


def check_file(path: Path) -> tuple[Any, dict[str, int]]:
    """Parse ``path`` with defusedxml and run every check; return the root and element counts."""
    root = DET.parse(path).getroot()
    assert root.tag == f"{{{HL7}}}MCCI_IN200100UV01"
    problems, seen = check_elements(root)
    problems += check_structure(root)
    problems += check_rules(root)
    assert problems == [], "\n".join(problems)
    return root, seen


@pytest.fixture
def e2b_data() -> Path:
    if not E2B_DATA.is_dir():
        pytest.skip("../shared/data/e2b_r3 is not beside this checkout")
    return E2B_DATA


# --- the reference material and clinex's element list agree ----------------------------------------------
def test_element_list_matches_the_csv(e2b_data: Path) -> None:
    rows, rules = _elements(), e2b.element_rules()
    for number, rule in rules.elements.items():
        row = rows[number]
        assert (rule.name, rule.data_type) == (row["name"], row["data_type"]), number
        assert rule.max_length == (int(row["max_length"]) if row["max_length"].isdigit() else None), number
        assert XPath(row["xpath"]).steps and (not row["null"] or XPath(row["null"]).steps)
    # every element the ICH or the FDA requires is filled always, or listed as left to the sender
    required = {n for n, r in rows.items() if r["ich"].startswith("Required") or r["fda"].startswith("Required")}
    always = {n for n, r in rules.elements.items() if r.filled == "always"}
    assert required - always == set(rules.left_to_user)
    assert not set(rules.left_to_user) & set(rules.elements)


def test_checked_rules_cover_every_rule_on_a_filled_element(e2b_data: Path) -> None:
    filled = set(e2b.element_rules().elements)
    known = {r["id"] for r in _rules()}
    assert set(RULE_IDS) <= known  # every id checked is a real FDA rule
    concerning = set()
    for r in _rules():
        named = {m.rstrip(".") for m in re.findall(r"(?:FDA\.)?[A-H]\d*\.[0-9a-z.]*[0-9a-z]", r["rule"] + " " + r["message"])}
        if r["element"] in filled or named & filled:
            concerning.add(r["id"])
    assert concerning - set(RULE_IDS) == set()
    assert len(RULE_IDS) == 48  # the 46 that concern a filled element, R0011 (C.1.7 not NI) and R0083
    # the XPaths the checks read all parse
    for number in {"C.1.6.1.r.1", "C.1.7", "FDA.C.1.7.1", "C.1.9.1.r.1", "C.1.9.1.r.2", "C.1.10.r", "FDA.C.1.12",
                   "FDA.C.5.5a", "FDA.C.5.5b", "D.7.1.r.1b", "D.9.1", "E.i.2.1b",
                   "G.k.3.1", "G.k.7.r.2a", "G.k.7.r.2b", "G.k.9.i.2.r.1", "G.k.9.i.2.r.2", "G.k.9.i.2.r.3",
                   "FDA.D.11.r.1"}:
        XPath(_elements()[number]["xpath"])


def test_the_checks_pass_the_fda_example_and_catch_mistakes(e2b_data: Path) -> None:
    """The checkers are not vacuous: a real FDA instance passes the rules and structure; broken copies fail."""
    root = DET.parse(e2b_data / "FAERS2022Scenario1.xml").getroot()
    assert check_rules(root) == [] and check_structure(root) == []
    xml = (e2b_data / "FAERS2022Scenario1.xml").read_text(encoding="utf-8")
    broken = DET.fromstring(xml.replace('extension="ZZFDA"', 'extension="ZZFDA_X"').encode())
    assert "R0006 fires on message 1" not in check_rules(broken)  # N.1.4 no longer ZZFDA: R0006 is vacuous
    assert "R0004 fires on message 1" in check_rules(broken)
    broken = DET.fromstring(xml.replace('<priorityNumber value="1"/>', '<priorityNumber value="2"/>').encode())
    assert "R0021 fires on message 1" in check_rules(broken)
    broken = DET.fromstring(xml.replace("<name>JD</name>", "<nome>JD</nome>").encode())
    assert any("no such element path" in p for p in check_structure(broken))
    row = _elements()["E.i.7"]
    assert _value_problems(row, "9") and not _value_problems(row, "0")
    assert _value_problems(_elements()["C.1.2"], "20140714") and not _value_problems(_elements()["C.1.2"], "20140714151617-0500")
    assert _value_problems(_elements()["C.1.4"], "2999") and _value_problems(_elements()["C.1.4"], "29990101")


# --- a real batch run: 3 records, one case ----------------------------------------------------------------
def _clinex(*args: str) -> int:
    from clinex.cli import main

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(sys, "argv", ["clinex", *map(str, args)])
        try:
            main()
        except SystemExit as exc:
            return exc.code if isinstance(exc.code, int) else 0
    return 0


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``clinex batch pv`` on 3 records: an asserted ADE, a negated one, none."""
    base = tmp_path_factory.mktemp("e2b")
    src = base / "records.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in RECORDS), encoding="utf-8")
    assert _clinex("batch", "pv", src, "--output", base / "run") == 0
    return base / "run"


def test_three_records_give_one_icsr(cli, run_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "e2b"
    res = cli("pv", "e2b", run_dir, "-o", out, "--sender-org", "Acme Pharma", "--sender-country", "de",
              "--received", "20240131")
    assert res.code == 0, res.stderr
    assert "1 ICSR(s) from 1 record(s) with an asserted adverse event" in res.stderr
    assert sorted(p.name for p in out.iterdir()) == ["cases.csv", "icsr-00001.xml"]
    root = DET.parse(out / "icsr-00001.xml").getroot()
    msgs = root.findall(f"{{{HL7}}}PORR_IN049016UV")
    assert len(msgs) == 1
    if E2B_DATA.is_dir():  # the checks against the FDA's reference material
        _, seen = check_file(out / "icsr-00001.xml")
        assert seen["D.2.2a"] == seen["D.2.2b"] == 1 and seen["G.k.2.3.r.1"] >= 1
    ns = {"h": HL7}
    ie = root.find("h:PORR_IN049016UV/h:controlActProcess/h:subject/h:investigationEvent", ns)
    assert ie.find("h:id", ns).get("extension") == "DE-ACMEPHARMA-PMID12345678"
    assert ie.find("h:reference/h:document/h:bibliographicDesignationText", ns).text == "PMID: 12345678."
    assert ie.find("h:effectiveTime/h:low", ns).get("value") == "20240131"
    assert ie.find("h:text", ns).text == ASSERTED
    role = ie.find("h:component/h:adverseEventAssessment/h:subject1/h:primaryRole", ns)
    assert role.find("h:player1/h:administrativeGenderCode", ns).get("code") == "1"
    age = role.find("h:subjectOf2/h:observation/h:value", ns)
    assert (age.get("value"), age.get("unit")) == ("66", "a")
    reactions = [o.find("h:value/h:originalText", ns).text for o in role.findall("h:subjectOf2/h:observation", ns)
                 if o.find("h:code", ns).get("code") == "29"]
    assert reactions == ["hepatitis"]
    drugs = role.findall("h:subjectOf2/h:organizer/h:component/h:substanceAdministration", ns)
    assert [d.find("h:consumable/h:instanceOfKind/h:kindOfProduct/h:name", ns).text for d in drugs] == [
        "amoxicillin-clavulanate"]
    substances = [n.text for n in drugs[0].iter(f"{{{HL7}}}name")][1:]
    assert "Amoxicillin" in substances
    with open(out / "cases.csv", encoding="utf-8", newline="") as fh:
        table = list(csv.DictReader(fh))
    assert [(r["record_id"], r["pmid"], r["age"], r["sex"], r["reactions"]) for r in table] == [
        ("12345678", "12345678", "66 a", "male", "hepatitis")]
    assert "isoniazid" not in (out / "icsr-00001.xml").read_text(encoding="utf-8")  # the negated ADE's drug


def test_existing_output_refused_without_force(cli, run_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "e2b"
    assert cli("pv", "e2b", run_dir, "-o", out).code == 0
    (out / "notes.txt").write_text("mine", encoding="utf-8")
    (out / "icsr-00009.xml").write_text("stale", encoding="utf-8")
    res = cli("pv", "e2b", run_dir, "-o", out)
    assert res.code == 2
    assert res.stderr.strip().endswith(f"[CLX001] {out}: already exists; refusing to overwrite it "
                                       "(use --force to replace the E2B files in it)")
    res = cli("pv", "e2b", run_dir, "-o", out, "--force")
    assert res.code == 0, res.stderr
    assert sorted(p.name for p in out.iterdir()) == ["cases.csv", "icsr-00001.xml", "notes.txt"]
    assert cli("pv", "e2b", run_dir, "-o", out / "cases.csv", "--force").code == 2  # a file, not a folder


def test_default_output_beside_the_run(cli, run_dir: Path) -> None:
    out = run_dir.parent / f"{run_dir.name}-e2b"
    res = cli("pv", "e2b", run_dir)
    assert res.code == 0 and (out / "icsr-00001.xml").is_file()
    assert "warning: --sender-org not given" in res.stderr
    assert not (run_dir / "e2b").exists()  # nothing written into the run folder (it would block resuming)


def test_bad_run_folders_exit_2_naming_the_folder(cli, run_dir: Path, tmp_path: Path) -> None:
    missing = tmp_path / "nope"
    res = cli("pv", "e2b", missing, "-o", tmp_path / "o1")
    assert res.code == 2 and f"[CLX001] {missing}: no such folder; `clinex pv e2b` reads the --output folder of a `clinex batch pv` run" in res.stderr
    plain = tmp_path / "plain"
    plain.mkdir()
    res = cli("pv", "e2b", plain, "-o", tmp_path / "o2")
    assert res.code == 2 and (f"[CLX001] {plain}: not a `clinex batch pv` output folder (no manifest.json); `clinex pv e2b` reads the "
                              "--output folder of a `clinex batch pv` run") in res.stderr
    rob = tmp_path / "rob"
    rob.mkdir()
    (rob / "manifest.json").write_text(json.dumps({"task": "rob", "status": "done"}), encoding="utf-8")
    res = cli("pv", "e2b", rob, "-o", tmp_path / "o3")
    assert res.code == 2 and (f"{rob}: a `clinex batch rob` run, not `clinex batch pv`; `clinex pv e2b` reads the --output folder of a "
                              "`clinex batch pv` run") in res.stderr
    # an incomplete run: the manifest is written first ("running"), results.parquet last
    torn = tmp_path / "torn"
    (torn / "parts").mkdir(parents=True)
    manifest = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))
    manifest.update(status="running", n_parts=3)
    (torn / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    (torn / "parts" / "part-00000.parquet").write_bytes((run_dir / "parts" / "part-00000.parquet").read_bytes())
    res = cli("pv", "e2b", torn, "-o", tmp_path / "o4")
    assert res.code == 2
    assert (f"[CLX001] {torn}: the batch run is incomplete (manifest status 'running'; 1 of 3 part file(s) on "
            f"disk); run the same `clinex batch pv ... --output {torn}` command again to finish it, then `clinex pv e2b`"
            ) in res.stderr
    manifest.update(status="done")
    (torn / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    res = cli("pv", "e2b", torn, "-o", tmp_path / "o5")
    assert res.code == 2 and f"{torn}: the run's manifest says done but there is no results.parquet" in res.stderr
    (torn / "results.parquet").write_bytes((run_dir / "results.parquet").read_bytes())
    manifest.update(n_rows=5)
    (torn / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    res = cli("pv", "e2b", torn, "-o", tmp_path / "o7")
    assert res.code == 2 and f"{torn / 'results.parquet'}: holds 3 rows, the manifest says 5" in res.stderr
    (torn / "manifest.json").write_text("{", encoding="utf-8")
    res = cli("pv", "e2b", torn, "-o", tmp_path / "o6")
    assert res.code == 2 and f"{torn / 'manifest.json'}: the batch run's manifest cannot be read" in res.stderr
    assert not any((tmp_path / f"o{i}").exists() for i in range(1, 8))  # nothing written on a refusal


def test_bad_options_exit_2_naming_the_option(cli, run_dir: Path, tmp_path: Path) -> None:
    for args, message in (
        (("--sender-country", "USA"), "field '--sender-country'"),
        (("--received", "2024-01-31"), "--received must be a date YYYYMMDD"),
        (("--received", "29990101"), "E2B dates may not lie in the future"),
        (("--per-file", "0"), "--per-file must be >= 1"),
        (("--sender-id", "x" * 61), "--sender-id must have 1 to 60 characters"),
        (("--sender-org", " "), "--sender-org must have 1 to 100 characters"),
    ):
        res = cli("pv", "e2b", run_dir, "-o", tmp_path / "o", *args)
        assert res.code == 2 and message in res.stderr, (args, res.stderr)
    assert not (tmp_path / "o").exists()


# --- cases made by hand: repetitions, null flavours, study reports, truncation ------------------------------------
def _arg(text: str, role: str, piece: str) -> Argument:
    start = text.index(piece)
    return Argument(role=role, span=Span.from_offsets(text, (start, start + len(piece))))


def _event(text: str, trigger: str, *, subject: str | None = None, subs: dict[str, list[tuple[str, str]]] | None = None,
           treatment: str | None = None, effect: str | None = None, negated: bool = False,
           event_type: str = "Adverse_event", combination: list[str] | None = None) -> Event:
    args = [_arg(text, role, piece) for role, piece in
            (("Subject", subject), ("Treatment", treatment), ("Effect", effect)) if piece]
    subs = {main: tuple(_arg(text, role, piece) for role, piece in pairs) for main, pairs in (subs or {}).items()}
    attrs = (Attribute(name="Negated", value=True),) if negated else ()
    combos = (Combination(drugs=tuple(_arg(text, "Drug", d) for d in combination)),) if combination else ()
    start = text.index(trigger)
    return Event(event_type=event_type, trigger=Span.from_offsets(text, (start, start + len(trigger))),
                 arguments=tuple(args), sub_arguments=subs, attributes=attrs, combinations=combos)


def _fake_run(folder: Path, rows: list[tuple[SentenceEvents, str, dict | None]]) -> Path:
    """A finished pv run folder holding ``rows`` (record, source, meta), as `clinex batch pv` writes it."""
    import duckdb

    folder.mkdir(parents=True)
    (folder / "manifest.json").write_text(json.dumps({"task": "pv", "status": "done", "n_parts": 1}), encoding="utf-8")
    con = duckdb.connect()
    con.execute("CREATE TABLE r (id VARCHAR, source VARCHAR, text VARCHAR, n_adverse INTEGER, phee_json VARCHAR, "
                "meta_json VARCHAR)")
    from clinex.pv.counts import is_asserted

    for item, source, meta in rows:
        n = sum(1 for ev in item.events if ev.event_type == "Adverse_event" and is_asserted(ev))
        con.execute("INSERT INTO r VALUES (?, ?, ?, ?, ?, ?)", [item.id, source, item.text, n,
                                                                json.dumps(to_phee_dict(item)),
                                                                json.dumps(meta) if meta else None])
    con.execute(f"COPY r TO '{folder / 'results.parquet'}' (FORMAT PARQUET)")
    con.close()
    return folder


TRIAL = ("Fatal hepatitis in a trial of isoniazid. A 3-month-old infant with tuberculosis received isoniazid "
         "10 mg/kg orally and developed fatal hepatitis and life-threatening agranulocytosis; she also had a rash "
         "with rifampicin and ethambutol. No optic neuritis occurred with ethambutol. Pyrazinamide cured it.")


def _trial_record() -> SentenceEvents:
    t = TRIAL
    subject = {"Subject": [("Age", "3-month-old"), ("Disorder", "tuberculosis")]}
    treat = [("Drug", "isoniazid"), ("Dosage", "10 mg/kg"), ("Route", "orally"), ("Disorder", "tuberculosis")]
    events = (
        _event(t, "developed", subject="A 3-month-old infant with tuberculosis", subs={**subject, "Treatment": treat},
               treatment="isoniazid 10 mg/kg orally", effect="fatal hepatitis"),
        _event(t, "developed", subject="A 3-month-old infant", subs={"Treatment": [("Drug", "isoniazid")]},
               treatment="isoniazid", effect="life-threatening agranulocytosis"),
        _event(t, "had", subject="she", subs={"Subject": [("Gender", "she")]}, treatment="rifampicin and ethambutol",
               effect="a rash", combination=["rifampicin", "ethambutol"]),
        _event(t, "occurred", effect="optic neuritis", treatment="ethambutol",
               subs={"Treatment": [("Drug", "ethambutol")]}, negated=True),
        _event(t, "cured", treatment="Pyrazinamide", subs={"Treatment": [("Drug", "Pyrazinamide")]},
               event_type="Potential_therapeutic_event"),
    )
    return SentenceEvents(id="31000001", text=t, events=events)


def test_case_from_record_gathers_asserted_adverse_events_only() -> None:
    case = case_from_record(_trial_record(), meta={"pmid": "31000001", "year": 2019, "title_end": 40,
                                                   "publication_types": ["Randomized Controlled Trial"]})
    assert case is not None
    assert [r.text for r in case.reactions] == ["fatal hepatitis", "life-threatening agranulocytosis", "a rash"]
    assert [(r.fatal, r.life_threatening) for r in case.reactions] == [(True, False), (False, True), (False, False)]
    assert [d.text for d in case.drugs] == ["isoniazid", "rifampicin", "ethambutol"]
    isoniazid = case.drugs[0]
    assert (isoniazid.dosage, isoniazid.route, isoniazid.indications) == ("10 mg/kg", "orally", ("tuberculosis",))
    assert case.drugs[1].dosage is None  # its event names two drugs: the dosage is nobody's
    assert case.patient == e2b.Patient(age=("3", "mo"), age_group="2", sex="2", history=("tuberculosis",))
    assert (case.pmid, case.year, case.study_type) == ("31000001", 2019, "1")
    assert case.citation() == "Fatal hepatitis in a trial of isoniazid. 2019. PMID: 31000001."
    assert "Pyrazinamide" not in {d.text for d in case.drugs} and "optic neuritis" not in {r.text for r in case.reactions}
    # a death said by the trigger ("died"), not by the Effect
    t = "He died of hepatic failure after paracetamol. Rash followed paracetamol."
    drug = {"Treatment": [("Drug", "paracetamol")]}

    def died_events(t: str) -> tuple[Event, ...]:
        return (_event(t, "died", effect="hepatic failure", treatment="paracetamol", subs=drug),
                _event(t, "followed", effect="Rash", treatment="paracetamol", subs=drug))

    died = case_from_record(SentenceEvents(id="x1", text=t, events=died_events(t)), substances=lambda _t: ())
    assert died is not None and [(r.text, r.fatal) for r in died.reactions] == [("hepatic failure", True), ("Rash", False)]
    assert died.pmid is None and died.citation() == "clinex record x1."
    short = case_from_record(died_record := SentenceEvents(id="7", text=t, events=died_events(t)),
                             substances=lambda _t: ())
    assert short is not None and short.pmid is None  # "7" is a record number, not a PMID
    assert case_from_record(died_record.model_copy(update={"id": "31000001"}), substances=lambda _t: ()).pmid == "31000001"
    # no drug, or only negated events: no case
    t = "She developed a rash."
    assert case_from_record(SentenceEvents(id="1", text=t, events=(_event(t, "developed", effect="a rash"),))) is None


def test_hand_made_run_checks_and_splits_into_files(tmp_path: Path, e2b_data: Path) -> None:
    t2 = "Rash after nothing in particular."
    no_drug = SentenceEvents(id="2", text=t2, events=(_event(t2, "after", effect="Rash"),))
    long_effect = "x" * 300
    t3 = f"Case\x0b7: a woman in her 60s had {long_effect} after Tylenol."
    odd = SentenceEvents(id="case 7/b", text=t3, events=(
        _event(t3, "had", subject="a woman in her 60s", effect=long_effect, treatment="Tylenol",
               subs={"Treatment": [("Drug", "Tylenol")]}),))
    run = _fake_run(tmp_path / "run", [
        (_trial_record(), "/data/baseline.xml",
         {"pmid": "31000001", "year": 2019, "title_end": 40, "publication_types": ["Randomized Controlled Trial"]}),
        (no_drug, "a.jsonl", None),
        (odd, "b.jsonl", None),
        (_trial_record(), "/data/update.xml", {"pmid": "31000001", "year": 2019, "title_end": 40,
                                               "mesh_headings": ["Animals", "Humans", "Isoniazid"]}),
        (_trial_record(), "/data/rats.xml", {"pmid": "31000002", "mesh_headings": ["Animals", "Rats", "Isoniazid"]}),
    ])
    settings = E2BSettings(sender_org="Acme Pharma-Europe", sender_country="EU", per_file=2,
                           received=date(2024, 1, 31), created=datetime(2024, 2, 1, 9, 30).astimezone())
    summary = write_e2b(run, tmp_path / "out", settings=settings)
    assert (summary.records, summary.icsrs, summary.no_case, summary.animals) == (5, 3, 1, 1)  # no ICSR for rats
    assert [p.name for p in summary.files] == ["icsr-00001.xml", "icsr-00002.xml"]
    ids, seen_all = [], {}
    for f in summary.files:
        root, seen = check_file(f)
        for k, n in seen.items():
            seen_all[k] = seen_all.get(k, 0) + n
        ids += [m.find(f"{{{HL7}}}id").get("extension") for m in root.findall(f"{{{HL7}}}PORR_IN049016UV")]
    assert ids == ["EU-ACMEPHARMAEUROPE-PMID31000001", "EU-ACMEPHARMAEUROPE-case_7_b",
                   "EU-ACMEPHARMAEUROPE-PMID31000001.2"]
    # every 'when stated' element was exercised: C.5.4, age, age group, substances, dosage, route, indication
    assert all(seen_all[n] > 0 for n in e2b.element_rules().elements), seen_all
    assert "\x0b" not in (summary.files[0].read_text(encoding="utf-8") + summary.files[1].read_text(encoding="utf-8"))
    root = DET.parse(summary.files[0]).getroot()
    ns = {"h": HL7}
    trial = root.findall("h:PORR_IN049016UV", ns)[0]
    written = {e.text for e in trial.iter() if e.tag in (f"{{{HL7}}}originalText", f"{{{HL7}}}name")}
    assert {"fatal hepatitis", "a rash", "isoniazid", "Isoniazid", "ethambutol", "tuberculosis"} <= written
    assert not {"optic neuritis", "Pyrazinamide"} & written  # a negated event, a therapeutic one
    odd_msg = root.findall("h:PORR_IN049016UV", ns)[1]
    effect = next(o for o in odd_msg.iter(f"{{{HL7}}}originalText") if o.text.startswith("xxx"))
    assert len(effect.text) == 250 and effect.text.endswith("\u2026")
    age = [v for v in odd_msg.iter(f"{{{HL7}}}value") if v.get("unit")]
    assert [(v.get("value"), v.get("unit")) for v in age] == [("6", "10.a")]
    assert "Acetaminophen" in DET.tostring(odd_msg, encoding="unicode")
    first = root.findall("h:PORR_IN049016UV", ns)[0]
    report_type = next(v for v in first.iter(f"{{{HL7}}}value") if v.get("codeSystem") == e2b.OID_REPORT_TYPE)
    assert report_type.get("code") == "2"
    assert root.find("h:creationTime", ns).get("value").startswith("20240201093000")


def test_no_case_writes_only_the_table(tmp_path: Path) -> None:
    t = "She developed a rash."
    run = _fake_run(tmp_path / "run", [(SentenceEvents(id="1", text=t, events=(_event(t, "developed", effect="a rash"),)),
                                        "a.jsonl", None)])
    summary = write_e2b(run, tmp_path / "out")
    assert (summary.icsrs, summary.files) == (0, [])
    assert (tmp_path / "out" / "cases.csv").read_text(encoding="utf-8").startswith("file,c_1_1,record_id")


def test_unreadable_row_is_skipped_with_a_warning(tmp_path: Path) -> None:
    import duckdb

    run = tmp_path / "run"
    run.mkdir()
    (run / "manifest.json").write_text(json.dumps({"task": "pv", "status": "done"}), encoding="utf-8")
    con = duckdb.connect()
    con.execute(f"COPY (SELECT '9' AS id, 'x' AS text, 1 AS n_adverse, '{{not json' AS phee_json) "
                f"TO '{run / 'results.parquet'}' (FORMAT PARQUET)")
    con.close()
    warnings: list[str] = []
    summary = write_e2b(run, tmp_path / "out", on_warning=warnings.append)
    assert (summary.records, summary.icsrs, summary.no_case) == (1, 0, 1)
    assert len(warnings) == 1 and "record '9': its phee_json cannot be read" in warnings[0]
    (run / "results.parquet").write_bytes(b"PAR1 torn")
    with pytest.raises(InputError, match="results.parquet: cannot be read as Parquet"):
        write_e2b(run, tmp_path / "out2")


def test_subject_readers() -> None:
    for module in (e2b, e2b_case, e2b_xml):
        assert doctest.testmod(module, optionflags=doctest.ELLIPSIS).failed == 0
    assert age_of("28 month-old child") == ("28", "mo") and age_of("11-day-old") == ("11", "d")
    assert age_of("74 years to 90 years") is None and age_of("over the age of 50") is None
    assert age_of("premature infants (mean gestational age 27 weeks)") is None
    assert age_of("aged 34 and 19 years") is None and age_of("34-yr-old") == ("34", "a")
    assert age_group_of("newborns") == "1" and age_group_of("fetus") == "0" and age_group_of("teenager") == "4"
    assert sex_of("girl") == "2" and sex_of("He") is None and sex_of("He", pronouns=True) == "1"


def test_docs_list_the_filled_and_the_left_elements() -> None:
    docs = (REPO / "docs" / "pv.md").read_text(encoding="utf-8")
    section = docs[docs.index("## E2B(R3) export"):]
    section = section[: section.find("\n## ", 5)] if "\n## " in section[5:] else section
    rules = e2b.element_rules()
    missing = [n for n in [*rules.elements, *rules.left_to_user] if n not in section]
    assert missing == []


def test_placebo_and_numbers_are_never_suspect_drugs() -> None:
    """Fresh-user QA on BC5CDR: 'placebo' and a bare '5' became suspect drugs of an ICSR."""
    from clinex.pv.normalise import names_no_product

    assert [t for t in ("placebo", "matching placebo", "5", "rats", "the drug", "SM-5887", "Tylenol")
            if names_no_product(t)] == ["placebo", "matching placebo", "5", "rats"]
