"""Lab values (clinex.cohort.labs) and time expressions (clinex.cohort.timeline)."""

from __future__ import annotations

import datetime as dt

import pytest

from clinex.cohort.criteria import LabSpec, load_criteria
from clinex.cohort.labs import find_lab_values, lab_holds
from clinex.cohort.timeline import event_date, within_window

CRIT = {c.name: c for c in load_criteria("n2c2")}
CR = CRIT["CREATININE"].labs["serum_creatinine"]
A1C = CRIT["HBA1C"].labs["a1c"]


def _vals(text: str, spec: LabSpec) -> list[tuple[float, float | None]]:
    return [(round(v.value, 4), None if v.ref_high is None else round(v.ref_high, 4)) for v in find_lab_values(text, spec)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("HbA1c 7.2%", [(7.2, None)]),
        ("A1C: 8.1", [(8.1, None)]),
        ("Hgb A1c 6.4 (H)", [(6.4, None)]),
        ("Hemoglobin A1c             8.4      H    4.0-5.6      %", [(8.4, 5.6)]),
        ("DM2 - HbA1c 9.7% (goal <7.0).", [(9.7, None)]),
        ("Goal A1c < 7.", []),
        ("If A1c stays above 9, start insulin.", []),
        ("A1c 10.4% (was 12.1)", [(10.4, None), (12.1, None)]),
        ("glycosylated hemoglobin 6.9 on 3/2/71", [(6.9, None)]),
    ],
)
def test_a1c_values(text: str, expected: list[tuple[float, float | None]]) -> None:
    assert _vals(text, A1C) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Creatinine                 1.3           0.7-1.3      mg/dL", [(1.3, 1.3)]),
        ("creatinine 1.4 mg/dl (0.6-1.3)", [(1.4, 1.3)]),
        ("Creatinine 1.2 (H, ref 0.5-1.1)", [(1.2, 1.1)]),
        ("creatinine has risen from 1.4 in 2081 to 1.8", [(1.4, None), (1.8, None)]),
        ("creatinine 1.1 -> peak 2.4", [(1.1, None), (2.4, None)]),
        ("Creatinine stable 1.2-1.3 after contrast.", [(1.2, None), (1.3, None)]),
        ("Na 135, K 4.9, Cl 106, CO2 23, BUN 19, Cr 1.2, Glu 174, LDL 62.", [(1.2, None)]),
        # 168 / 88.4 = 1.9005 mg/dL; 110 / 88.4 = 1.2443
        ("creatinine 168 umol/L (ref 60-110)", [(1.9004, 1.2443)]),
        ("Urine creatinine 160 mg/dL", []),
        ("albumin/creatinine ratio 30", []),
        ("Creatinine clearance 45 mL/min", []),
        ("Na/K/Cl/CO2/BUN/Cr/Glu: 138/4.2/99/26/14/0.9/211", [(0.9, None)]),
        ("BUN/Cr 30/2.1", [(2.1, None)]),
    ],
)
def test_creatinine_values(text: str, expected: list[tuple[float, float | None]]) -> None:
    assert _vals(text, CR) == expected


def test_flowsheet_columns() -> None:
    text = "Date      A1c    Cr\n3/2079    10.1   1.2\n9/2079    8.2    1.9\n\nA1c goal < 7"
    a1c = find_lab_values(text, A1C)
    assert [(v.value, text[v.start : v.end]) for v in a1c] == [(10.1, "10.1"), (8.2, "8.2")]
    assert [v.value for v in find_lab_values(text, CR)] == [1.2, 1.9]


def test_value_offsets_point_at_the_number() -> None:
    text = "Labs today: creatinine 1.4 mg/dl (0.6-1.3), stable."
    (v,) = find_lab_values(text, CR)
    assert text[v.start : v.end] == "1.4"
    assert text[v.name_start : v.name_end] == "creatinine"
    assert v.unit == "mg/dl"


@pytest.mark.parametrize(
    ("text", "holds"),
    [
        ("Cr 1.5", False),  # default ULN 1.5: equal is not above
        ("Cr 1.6", True),
        ("Creatinine 1.3  0.7-1.3 mg/dL", False),  # equal to the printed ULN
        ("Creatinine 1.2 (H, ref 0.5-1.1)", True),  # above the printed ULN although < 1.5
    ],
)
def test_creatinine_threshold(text: str, holds: bool) -> None:
    vals = find_lab_values(text, CR)
    assert any(lab_holds(v, CR) for v in vals) is holds


@pytest.mark.parametrize(("value", "holds"), [(6.4, False), (6.5, True), (9.5, True), (9.6, False)])
def test_a1c_range_is_inclusive(value: float, holds: bool) -> None:
    (v,) = find_lab_values(f"HbA1c {value}%", A1C)
    assert lab_holds(v, A1C) is holds


REC = dt.date(2080, 7, 2)


@pytest.mark.parametrize(
    ("sentence", "anchor", "expected", "how"),
    [
        ("Admitted with NSTEMI.", 0, REC, "record"),
        ("NSTEMI 3 weeks ago.", 0, REC - dt.timedelta(days=21), "relative"),
        ("About ten weeks ago he had an NSTEMI.", 30, REC - dt.timedelta(days=70), "relative"),
        ("nearly 5 years out from an anterior MI", 30, REC - dt.timedelta(days=1826), "relative"),
        ("History of MI 2068 (outside hospital)", 11, dt.date(2068, 7, 1), "absolute"),
        ("NSTEMI 1/2072 - DES to LAD", 0, dt.date(2072, 1, 15), "absolute"),
        ("Cath 1/12/72: 90% LAD stenosis", 0, dt.date(2072, 1, 12), "absolute"),
        ("No chest pain since her heart attack in January.", 25, dt.date(2080, 1, 15), "absolute"),
        ("heart attack in November", 0, dt.date(2079, 11, 15), "absolute"),
        ("clopidogrel through 1/2083", 0, REC, "record"),  # a future date is a plan, not the event
        ("vitamin D 2000 IU daily", 0, REC, "record"),  # a dose, not a year
        ("Two DKA admissions (2/2078 and 2/2080).", 4, dt.date(2080, 2, 15), "absolute"),  # latest of a list
    ],
)
def test_event_date(sentence: str, anchor: int, expected: dt.date, how: str) -> None:
    assert event_date(sentence, REC, anchor) == (expected, how)


def test_within_window_edges() -> None:
    now = dt.date(2080, 7, 2)
    assert within_window(dt.date(2080, 1, 1), now, 183)  # 183 days: inside
    assert not within_window(dt.date(2079, 12, 31), now, 183)  # 184 days
    assert within_window(now, now, 61)
    assert not within_window(dt.date(2080, 7, 3), now, 61)  # after now
    assert not within_window(None, now, 61)
    assert not within_window(now, None, 61)


@pytest.mark.parametrize("mu", ["\u03bc", "\u00b5"])  # Greek small mu and the micro sign
def test_micromol_with_either_mu_is_converted(mu: str) -> None:
    (v,) = find_lab_values(f"Creatinine 9 {mu}mol/L", CR)
    assert (round(v.value, 4), v.unit) == (0.1018, "\u00b5mol/l") and not lab_holds(v, CR)
    (v,) = find_lab_values(f"Creatinine 168 {mu}mol/L (ref 60-110)", CR)
    assert (round(v.value, 4), round(v.ref_high, 3)) == (1.9004, 1.244) and lab_holds(v, CR)


@pytest.mark.parametrize(
    ("text", "record", "expected"),
    [
        ("NSTEMI 7/14", dt.date(2089, 7, 28), dt.date(2089, 7, 14)),  # month/day, not 2014
        ("NSTEMI 9/14", dt.date(2089, 7, 28), dt.date(2088, 9, 14)),  # the latest 9/14 not after the record
        ("MI 3/88", dt.date(2089, 7, 28), dt.date(2088, 3, 15)),  # a two-digit year near the record's
        ("MI 3/2088", dt.date(2089, 7, 28), dt.date(2088, 3, 15)),
    ],
)
def test_two_digit_month_slash_forms(text: str, record: dt.date, expected: dt.date) -> None:
    assert event_date(text, record) == (expected, "absolute")


@pytest.mark.parametrize(
    ("sentence", "anchor", "expected", "how"),
    [
        ("DKA as a teenager.", 0, REC - dt.timedelta(days=730), "vague"),
        ("Took fish oil years ago, stopped.", 5, REC - dt.timedelta(days=730), "vague"),
        ("Several DKA admissions years ago.", 8, REC - dt.timedelta(days=730), "vague"),
        ("DKA in childhood.", 0, REC - dt.timedelta(days=730), "vague"),
        ("DKA 3 years ago.", 0, REC - dt.timedelta(days=1096), "relative"),  # a number: relative, not vague
        ("CABG years ago, now admitted with NSTEMI.", 36, REC, "record"),  # another clause: not about the NSTEMI
    ],
)
def test_vague_past_expressions(sentence: str, anchor: int, expected: dt.date, how: str) -> None:
    assert event_date(sentence, REC, anchor) == (expected, how)


@pytest.mark.parametrize(
    ("text", "spec", "expected"),
    [
        ("Creatinine (0.6-1.2) 1.9", CR, [(1.9, 1.2)]),  # a range printed before the value is its reference range
        ("Creatinine (ref 0.6-1.2): 1.4", CR, [(1.4, 1.2)]),
        ("Creatinine (0.6-1.2 mg/dL) 1.1", CR, [(1.1, 1.2)]),
        ("Creatinine (60-110 umol/L) 168 umol/L", CR, [(1.9004, 1.2443)]),
        ("Hemoglobin A1c (4.0-6.5 %) 10.2", A1C, [(10.2, 6.5)]),
        ("A1c (7.1-7.4)", A1C, [(7.1, None), (7.4, None)]),  # no value after it: a range of results
        ("Aim for A1c 6.5-8 given hypoglycemia.", A1C, []),
        ("Aim for an A1c of 7.5.", A1C, []),
        ("A1c goal is 7.5.", A1C, []),
    ],
)
def test_range_before_value_and_aims(text: str, spec: LabSpec, expected: list[tuple[float, float | None]]) -> None:
    assert _vals(text, spec) == expected
