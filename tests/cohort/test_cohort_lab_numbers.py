"""Commas in lab numbers (clinex.cohort.labs.read_number), and the ULN in the value's unit.

A QA screen of one-record n2c2 patients found ``Creatinine 1,2 mg/dL`` met as
``value=2``, ``Creatinine 1,040 umol/L`` (11.8 mg/dL) not met (read as ``1`` and
``040``), ``Creatinine 1,9 mg/dL`` met only as ``value=9``, and the evidence
``value=120 (ULN 1.24)`` setting a µmol/L value beside a mg/dL limit.

The rule (docs/cohort.md, "Labs"): a comma followed by exactly three digits is a
thousands separator; a single comma followed by one or two digits is a decimal comma;
dot-decimals joined by commas are a list; any other comma run is not read.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from clinex.cohort.criteria import LabSpec, load_criteria
from clinex.cohort.engine import ScreeningEngine
from clinex.cohort.formats.n2c2_xml import read_patient
from clinex.cohort.labs import find_lab_values, read_number, read_numbers, uln_shown

CRIT = {c.name: c for c in load_criteria("n2c2")}
CR = CRIT["CREATININE"].labs["serum_creatinine"]
A1C = CRIT["HBA1C"].labs["a1c"]


@pytest.fixture(scope="module")
def engine() -> ScreeningEngine:
    return ScreeningEngine("n2c2").fit()


def _read(text: str, spec: LabSpec) -> list[tuple[str, float, float | None]]:
    """(number as printed, value in the spec's unit, ULN) per value; offsets checked."""
    out = []
    for v in find_lab_values(text, spec):
        assert text[v.start : v.end] == v.raw
        out.append((v.raw, round(v.value, 4), None if v.ref_high is None else round(v.ref_high, 4)))
    return out


@pytest.mark.parametrize(
    ("raw", "value"),
    [
        ("1,040", 1040.0),  # thousands
        ("10,500.5", 10500.5),
        ("1,040,000", 1040000.0),
        ("1,2", 1.2),  # decimal comma
        ("1,25", 1.25),
        ("12,75", 12.75),
        ("1.2", 1.2),  # plain
        (".9", 0.9),
        ("140", 140.0),
        # ambiguous: not read
        ("1,2,3", None),
        ("1,0400", None),
        ("1,2.5", None),
        ("1.040,5", None),
        ("1234,567", None),
        ("1.2,1.4", None),  # a list, not one number
        ("1,04,5", None),
    ],
)
def test_read_number(raw: str, value: float | None) -> None:
    assert read_number(raw) == value


@pytest.mark.parametrize(
    ("raw", "values"),
    [
        ("1.2,1.4", [(1.2, 0, 3), (1.4, 4, 7)]),
        ("1.2,1.4,1.9", [(1.2, 0, 3), (1.4, 4, 7), (1.9, 8, 11)]),
        ("1,040", [(1040.0, 0, 5)]),
        ("1,2", [(1.2, 0, 3)]),
        ("1,2,3", []),
        ("1.2,14", []),  # 1.2 and 14, or 1.2 and 1.4 mistyped? not read
        ("1,2,1.4", []),
    ],
)
def test_read_numbers(raw: str, values: list[tuple[float, int, int]]) -> None:
    assert read_numbers(raw) == values


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # the QA tester's three lines
        ("Creatinine 1,2 mg/dL", [("1,2", 1.2, None)]),
        ("Creatinine 1,040 umol/L", [("1,040", 11.7645, None)]),  # 1040 / 88.4
        ("Creatinine 1,9 mg/dL", [("1,9", 1.9, None)]),
        # lists
        ("Cr 1.2, 1.4, 1.9", [("1.2", 1.2, None), ("1.4", 1.4, None), ("1.9", 1.9, None)]),
        ("creatinine 1.2,1.4", [("1.2", 1.2, None), ("1.4", 1.4, None)]),
        ("Cr 1,2, 1,4", [("1,2", 1.2, None), ("1,4", 1.4, None)]),
        ("Cr 1,040, 1,100 umol/L", [("1,040", 11.7645, None), ("1,100", 12.4432, None)]),
        # ambiguous runs are not read; the values around them are
        ("Cr 1,2,3", []),
        ("Cr 1.2,14", []),
        ("Cr 0.9, then 1,2,3 and 1.8", [("0.9", 0.9, None), ("1.8", 1.8, None)]),
        ("Cr 1234,567 umol/L", []),
        # ranges, reference ranges, bounds and flags with decimal commas
        ("Cr 1,2-1,4", [("1,2", 1.2, None), ("1,4", 1.4, None)]),
        ("Cr 1.4 (ref 0,6-1,2)", [("1.4", 1.4, 1.2)]),
        ("Creatinine  1,3  0,7-1,3  mg/dL", [("1,3", 1.3, 1.3)]),
        ("Creatinine (0,6-1,2) 1,9", [("1,9", 1.9, 1.2)]),
        ("Creatinine 1,040 umol/L (ref 60-110)", [("1,040", 11.7645, 1.2443)]),
        # a comma before a letter is a separator, as before
        ("Creatinine 1.2, K 4,5", [("1.2", 1.2, None)]),
        # slash panel
        ("BUN/Cr 30/1,2", [("1,2", 1.2, None)]),
        ("Na/K/Cl/CO2/BUN/Cr/Glu: 138/4,2/99/26/14/0,9/211", [("0,9", 0.9, None)]),
        # unchanged: no comma
        ("Cr 1.2.3", [("1.2", 1.2, None), (".3", 0.3, None)]),
    ],
)
def test_creatinine_numbers(text: str, expected: list[tuple[str, float, float | None]]) -> None:
    assert _read(text, CR) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("HbA1c 7,2%", [("7,2", 7.2, None)]),
        ("A1c 10,1 (4,0-6,5)", [("10,1", 10.1, 6.5)]),
        ("A1c 7,2,8", []),
        ("HbA1c 7.1,8.4", [("7.1", 7.1, None), ("8.4", 8.4, None)]),
        ("Goal A1c < 7,0", []),
    ],
)
def test_a1c_numbers(text: str, expected: list[tuple[str, float, float | None]]) -> None:
    assert _read(text, A1C) == expected


def test_flowsheet_cells_with_commas() -> None:
    text = "Date      A1c    Cr\n3/2079    10,1   1,2\n9/2079    8,2    1,2,3\n\n"
    assert _read(text, A1C) == [("10,1", 10.1, None), ("8,2", 8.2, None)]
    assert _read(text, CR) == [("1,2", 1.2, None)]  # "1,2,3" is not read


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("Cr 1.4 (nl 0.5-1.2)", "1.2"),
        ("Cr 1.2 mg/dL (ref <1.1)", "1.1"),
        ("Creatinine 120 umol/L (nl 60-110)", "110 umol/L = 1.24 mg/dL"),
        ("Creatinine 120 \u03bcmol/L (nl 60-110)", "110 \u00b5mol/L = 1.24 mg/dL"),
        ("Creatinine 120 (nl 60-110)", "110 umol/L = 1.24 mg/dL"),  # no unit printed: read as umol/L
        ("Creatinine 150 umol/L (0.6-1.2 mg/dL)", "106.1 umol/L = 1.2 mg/dL"),
    ],
)
def test_uln_in_the_values_unit(text: str, shown: str) -> None:
    (v,) = find_lab_values(text, CR)
    assert uln_shown(v, CR) == shown


def test_uln_shown_needs_a_range() -> None:
    (v,) = find_lab_values("Creatinine 1.9", CR)
    with pytest.raises(ValueError, match="no printed reference range"):
        uln_shown(v, CR)


def _patient(tmp_path: Path, body: str):  # type: ignore[no-untyped-def]
    f = tmp_path / "100.xml"
    f.write_text(
        '<?xml version="1.0" encoding="UTF-8" ?>\n<PatientMatching>\n<TEXT><![CDATA[\n'
        f"Record date: 2089-07-28\n\n{body}\n\n]]></TEXT>\n<TAGS>\n</TAGS>\n</PatientMatching>\n",
        encoding="utf-8",
    )
    return read_patient(f)


SCREEN_CASES = [
    # the QA tester's patients
    ("Creatinine 1,2 mg/dL", "CREATININE", "not met", 0.25, "CREATININE.serum_creatinine:value-not-meeting=1,2"),
    ("Creatinine 1,040 umol/L", "CREATININE", "met", 1.0, "CREATININE.serum_creatinine:value=1,040"),
    ("Creatinine 1,9 mg/dL", "CREATININE", "met", 1.0, "CREATININE.serum_creatinine:value=1,9"),
    ("Creatinine 1,4 mg/dL", "CREATININE", "not met", 0.25, "CREATININE.serum_creatinine:value-not-meeting=1,4"),
    # lists and ambiguous runs
    ("Cr 1.2, 1.4, 1.9", "CREATININE", "met", 1.0, "CREATININE.serum_creatinine:value=1.9"),
    ("creatinine 1.2,1.4", "CREATININE", "not met", 0.25, "CREATININE.serum_creatinine:value-not-meeting=1.2"),
    ("Cr 1,2,3", "CREATININE", "not met", 0.0, None),
    ("Cr 1,2,9", "CREATININE", "not met", 0.0, None),  # not 9, not 2,9
    # the ULN in the value's unit
    ("Creatinine 1,040 umol/L (ref 60-110)", "CREATININE", "met", 1.0,
     "CREATININE.serum_creatinine:value=1,040 (ULN 110 umol/L = 1.24 mg/dL)"),
    ("Creatinine 1,6 H [0,6-1,3]", "CREATININE", "met", 1.0, "CREATININE.serum_creatinine:value=1,6 H (ULN 1.3)"),
    # HbA1c reads numbers alike
    ("HbA1c 7,2%", "HBA1C", "met", 1.0, "HBA1C.a1c:value=7,2"),
    ("HbA1c 9,5%", "HBA1C", "met", 1.0, "HBA1C.a1c:value=9,5"),
    ("HbA1c 10,1%", "HBA1C", "not met", 0.25, "HBA1C.a1c:value-not-meeting=10,1"),
    ("HbA1c 7,2,8", "HBA1C", "not met", 0.0, None),
]


@pytest.mark.parametrize(("body", "criterion", "label", "score", "rule"), SCREEN_CASES)
def test_screen_comma_numbers(engine: ScreeningEngine, tmp_path: Path, body: str, criterion: str, label: str,  # type: ignore[no-untyped-def]
                              score: float, rule) -> None:
    p = _patient(tmp_path, body)
    d = engine.screen(p)[criterion]
    ev = d.evidence[0] if d.evidence else None
    got = (d.label, d.score, ev.span.text if ev else None, ev.rule if ev else None)
    assert got == (label, score, body if rule else None, rule)
    if ev is not None:
        assert p.text[ev.span.start : ev.span.end] == ev.span.text
