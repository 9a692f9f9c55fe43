"""The screening engine on hand-written hard cases (tests/data/cohort) and the dev set."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from clinex.cohort.criteria_names import N2C2_CRITERIA
from clinex.cohort.engine import ScreeningEngine
from clinex.cohort.formats.n2c2_xml import read_patient
from clinex.cohort.types import Patient, Record
from clinex.errors import InputError, ModelError

DATA = Path(__file__).parents[1] / "data" / "cohort"
CASES = sorted(DATA.glob("t*.xml"))


@pytest.fixture(scope="module")
def engine() -> ScreeningEngine:
    return ScreeningEngine("n2c2").fit()


@pytest.fixture(scope="module")
def own(engine: ScreeningEngine) -> dict[str, tuple[Patient, dict]]:
    pats = [read_patient(p) for p in CASES]
    return {p.id: (p, d) for p, d in engine.screen_many(pats)}


def test_there_are_hand_written_cases() -> None:
    assert len(CASES) >= 7


@pytest.mark.parametrize("case", [p.stem for p in CASES])
def test_own_patients_every_label(own: dict, case: str) -> None:
    patient, decisions = own[case]
    assert list(decisions) == list(N2C2_CRITERIA)
    got = {c: d.label for c, d in decisions.items()}
    assert got == patient.labels


def _one(decision, rule_prefix: str):  # type: ignore[no-untyped-def]
    ev = [e for e in decision.evidence if e.rule.startswith(rule_prefix)]
    assert ev, f"no evidence with rule {rule_prefix!r}: {[e.rule for e in decision.evidence]}"
    return ev[0]


def _check(patient: Patient, ev, sentence: str, term: str, date: str) -> None:  # type: ignore[no-untyped-def]
    start = patient.text.index(sentence)
    assert (ev.span.start, ev.span.end) == (start, start + len(sentence))
    assert patient.text[ev.span.start : ev.span.end] == sentence
    t = patient.text.index(term, start)
    assert ev.rule.endswith(f"@{t}-{t + len(term)}")
    assert ev.record_date == dt.date.fromisoformat(date)


def test_window_edges_inclusive_with_evidence(own: dict) -> None:
    p, d = own["t01_window_edges_in"]
    # 2080-01-01 -> 2080-07-02 is 183 days: inside MI-6MOS's window
    _check(p, _one(d["MI-6MOS"], "MI-6MOS.mi:term=nstemi"), "Principal diagnosis: NSTEMI.", "NSTEMI", "2080-01-01")
    # 2079-07-03 -> 2080-07-02 is 365 days (2080 is a leap year): inside KETO-1YR's
    _check(
        p, _one(d["KETO-1YR"], "KETO-1YR.dka:term=diabetic ketoacidosis"),
        "Principal diagnosis: Diabetic ketoacidosis.", "Diabetic ketoacidosis", "2079-07-03",
    )
    # 2080-05-02 -> 2080-07-02 is 61 days: inside DIETSUPP-2MOS's
    _check(p, _one(d["DIETSUPP-2MOS"], "DIETSUPP-2MOS.supplement:term=fish oil"), "- fish oil 1000 mg daily", "fish oil", "2080-05-02")


def test_window_edges_one_day_out(own: dict) -> None:
    _, d = own["t02_window_edges_out"]
    for c in ("MI-6MOS", "KETO-1YR", "DIETSUPP-2MOS"):
        assert d[c].label == "not met"
        assert d[c].evidence == ()


def test_negation_family_plans(own: dict) -> None:
    p, d = own["t03_negation_family_plans"]
    for c in ("ABDOMINAL", "ADVANCED-CAD", "MI-6MOS", "ALCOHOL-ABUSE", "DRUG-ABUSE", "MAJOR-DIABETES", "ASP-FOR-MI"):
        assert d[c].label == "not met", c
    ev = _one(d["ENGLISH"], "ENGLISH.no_english:term=interpreter")
    _check(
        p, ev, "HPI: 58 yo woman with DM2, history obtained through a Spanish interpreter.", "interpreter", "2071-02-10"
    )


def test_lab_values_with_units_and_ranges(own: dict) -> None:
    p, d = own["t04_labs"]
    cr = d["CREATININE"]
    (ev,) = cr.evidence  # table row 1.3 (ULN 1.3) is not above; 140 umol/L (ULN 110) is
    line = "Outside labs: creatinine 140 umol/L (ref 60-110)."
    start = p.text.index(line)
    assert (ev.span.start, ev.span.end) == (start, start + len(line))
    assert ev.value == pytest.approx(140 / 88.4, abs=1e-3)
    assert ev.rule == "CREATININE.serum_creatinine:value=140 (ULN 110 umol/L = 1.24 mg/dL)"
    (a1c,) = d["HBA1C"].evidence  # 9.6 in the table is out; 6.5 (boundary) is in; goals are not values
    assert a1c.value == 6.5 and a1c.record_date == dt.date(2066, 9, 1)


def test_not_above_limit_and_motivational_interviewing(own: dict) -> None:
    _, d = own["t05_not_above"]
    assert d["CREATININE"].label == "not met"  # Cr 1.5 with no range; urine creatinine
    assert d["HBA1C"].label == "not met"  # 9.7, the 7.0 is a goal
    assert d["MI-6MOS"].label == "not met"
    assert d["MAKES-DECISIONS"].label == "met"  # designated, not invoked, proxy
    cad = d["ADVANCED-CAD"]
    assert cad.label == "met"
    fired = {e.rule.split(":")[0] for e in cad.evidence}
    assert {"ADVANCED-CAD.cad_meds", "ADVANCED-CAD.angina", "ADVANCED-CAD.ischemia"} <= fired


def test_latest_description_decides(own: dict) -> None:
    p, d = own["t06_history_guardian"]
    assert d["ALCOHOL-ABUSE"].label == "not met"  # heavy drinking, later sober
    assert d["DRUG-ABUSE"].label == "met"  # past heroin counts
    assert d["ENGLISH"].label == "met"  # the wife does not speak English
    ev = _one(d["MAKES-DECISIONS"], "MAKES-DECISIONS.incapacity:term=legal guardian")
    _check(p, ev, "Legal guardian (sister) makes medical decisions.", "Legal guardian", "2083-04-20")


def test_relative_time_in_last_record(own: dict) -> None:
    p, d = own["t07_relative_time"]
    ev = _one(d["MI-6MOS"], "MI-6MOS.mi:term=nstemi")
    _check(
        p, ev,
        "About 10 weeks ago he was admitted with an NSTEMI and had a drug-eluting stent placed.",
        "NSTEMI", "2075-12-01",
    )
    assert d["KETO-1YR"].label == "not met"  # "DKA 3 years ago"


def _patient(bodies: list[tuple[str | None, str]], pid: str = "x") -> Patient:
    text, recs = "", []
    for date, body in bodies:
        chunk = f"Record date: {date or 'unknown'}\n\n{body}\n"
        recs.append(Record(date=None if date is None else dt.date.fromisoformat(date), start=len(text), end=len(text) + len(chunk)))
        text += chunk + "*" * 100 + "\n"
    return Patient(id=pid, text=text, records=tuple(recs))


def test_empty_patient_is_refused_not_given_defaults(engine: ScreeningEngine) -> None:
    """QA stop 18: an empty note gave "met" for ENGLISH and MAKES-DECISIONS, decisions about nothing."""
    for text in ("", "  \n\n "):
        with pytest.raises(InputError, match="patient 'empty' has no note text; nothing to screen"):
            engine.screen(Patient(id="empty", text=text))


def test_empty_record_is_harmless(engine: ScreeningEngine) -> None:
    p = _patient([("2070-01-01", ""), ("2070-02-01", "NSTEMI two weeks ago.")])
    assert engine.screen(p)["MI-6MOS"].label == "met"


def test_no_dates_falls_back_to_last_record(engine: ScreeningEngine) -> None:
    last = _patient([(None, "Seen for diabetes."), (None, "Admitted with NSTEMI.")])
    first = _patient([(None, "Admitted with NSTEMI."), (None, "Seen for diabetes.")])
    assert last.now is None
    assert engine.screen(last)["MI-6MOS"].label == "met"
    assert engine.screen(first)["MI-6MOS"].label == "not met"
    assert engine.screen(first)["ADVANCED-CAD"].label == "not met"


def test_missing_date_in_one_record_uses_the_others(engine: ScreeningEngine) -> None:
    p = _patient([("2070-01-01", "Principal diagnosis: NSTEMI."), (None, "Follow-up."), ("2070-12-01", "Well.")])
    assert p.now == dt.date(2070, 12, 1)
    assert engine.screen(p)["MI-6MOS"].label == "not met"  # 334 days before now


def test_long_record_is_chunked(engine: ScreeningEngine) -> None:
    filler = "Sodium 140 mmol/L, potassium 4.1 mmol/L, chloride 104 mmol/L.\n" * 400  # 25,600 characters
    p = _patient([("2070-01-01", filler + "HbA1c 7.1%\nDiabetic retinopathy, moderate NPDR.\n" + filler)])
    d = engine.screen(p)
    assert d["HBA1C"].label == "met" and d["MAJOR-DIABETES"].label == "met"
    ev = d["MAJOR-DIABETES"].evidence[0]
    assert p.text[ev.span.start : ev.span.end] == "Diabetic retinopathy, moderate NPDR."


def test_oversize_patient_is_a_clear_error() -> None:
    from clinex.errors import InputError

    eng = ScreeningEngine("n2c2", max_chars=1000)
    with pytest.raises(InputError, match=r"patient 'big': 1,001 characters exceed the screening limit of 1,000"):
        eng.screen(Patient(id="big", text="x" * 1001))


def test_unfitted_engine_says_so() -> None:
    with pytest.raises(ModelError, match="not fitted"):
        ScreeningEngine()._check_fitted()


def test_dev_set_targets(engine: ScreeningEngine, shared_data: Path) -> None:
    from clinex.cohort.evaluate import score

    dev = shared_data / "cohort_synthetic" / "dev"
    pats = [read_patient(p) for p in sorted(dev.glob("*.xml"))]
    gold = {p.id: dict(p.labels) for p in pats}
    pred = {p.id: {c: x.label for c, x in d.items()} for p, d in engine.screen_many(pats)}
    res = score(gold, pred)
    assert res["n_patients"] == 36
    assert res["micro"]["f1"] >= 0.92
    assert min(r["f1"] for r in res["criteria"].values()) >= 0.80


def _phrasings() -> list[tuple[str, str, str]]:
    rows = []
    for line in (DATA / "phrasings.txt").read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            crit, label, body = line.split(" | ", 2)
            rows.append((crit, label, body.replace("\\n", "\n")))
    return rows


@pytest.mark.parametrize(("criterion", "label", "body"), _phrasings())
def test_phrasing_variants(engine: ScreeningEngine, criterion: str, label: str, body: str) -> None:
    records: list[tuple[str | None, str]] = []
    if body.startswith("PREV("):  # "PREV(YYYY-MM-DD): earlier note || last note"
        prev_date = body[5:15]
        earlier, body = body[18:].split(" || ", 1)
        records.append((prev_date, earlier))
    records.append(("2080-06-01", body))
    assert engine.screen(_patient(records))[criterion].label == label


def test_scores_rank_filtered_mentions_between_clear_cases(own: dict) -> None:
    _, d2 = own["t02_window_edges_out"]
    assert d2["MI-6MOS"].score == 0.25  # mentioned, but outside the window
    assert d2["ABDOMINAL"].score == 0.0  # never mentioned
    _, d6 = own["t06_history_guardian"]
    assert d6["ENGLISH"].score == 0.75  # met by default; only the wife's language was mentioned
    assert d6["MAKES-DECISIONS"].score == 0.0  # rule holds -> not met
    _, d1 = own["t01_window_edges_in"]
    assert d1["MI-6MOS"].score == 1.0


def test_not_met_decisions_show_what_decided_against(own: dict) -> None:
    p, d = own["t03_negation_family_plans"]
    (ev,) = d["ASP-FOR-MI"].evidence  # the latest record stops aspirin
    _check(p, ev, "Aspirin was stopped after a GI bleed in August.", "Aspirin", "2071-09-15")
    assert ev.rule.startswith("ASP-FOR-MI.aspirin:against=aspirin@")
    p5, d5 = own["t05_not_above"]
    (a1c,) = d5["HBA1C"].evidence  # a value was found, outside 6.5-9.5
    assert a1c.rule == "HBA1C.a1c:value-not-meeting=9.7" and a1c.value == 9.7
    assert d5["HBA1C"].score == 0.25
    assert p5.text[a1c.span.start : a1c.span.end] == "DM2 - HbA1c 9.7% (goal <7.0)."


def test_mixed_course(own: dict) -> None:
    p, d = own["t08_mixed_course"]
    row = "Creatinine                 1.2      H    0.5-1.1      mg/dL"
    cr = [e for e in d["CREATININE"].evidence if e.span.text == row]
    assert cr and cr[0].rule == "CREATININE.serum_creatinine:value=1.2 H (ULN 1.1)"  # the row's own flag is shown
    assert cr[0].record_date == dt.date(2081, 2, 3) and cr[0].span.start == p.text.index(row)
    assert d["ABDOMINAL"].label == "not met"  # sister's colectomy, CABG, cataract surgery
    assert d["DIETSUPP-2MOS"].label == "not met"  # calcium stopped in October (> 61 days); vitamin D only
    mi = _one(d["MI-6MOS"], "MI-6MOS.mi:term=nstemi")
    assert mi.record_date in (dt.date(2081, 9, 20), dt.date(2082, 2, 15))


def test_surgery_and_aspirin_that_never_happened(own: dict) -> None:
    """QA: postponed/cancelled surgery, never-started/declined aspirin, one-off EMS nitro (GUIDELINE ABDOMINAL, ASP-FOR-MI)."""
    p, d = own["t09_never_happened"]
    assert d["ABDOMINAL"].label == "not met" and d["ABDOMINAL"].evidence == ()
    assert d["ASP-FOR-MI"].label == "not met"
    assert all(":against=" in e.rule for e in d["ASP-FOR-MI"].evidence)
    # only the statin is left as a CAD drug: never-started/advised aspirin and the EMS nitroglycerin do not count
    (ev,) = d["ADVANCED-CAD"].evidence
    assert ev.rule.startswith("ADVANCED-CAD.cad_meds:term=statin@")
    assert p.text[ev.span.start : ev.span.end] == "- simvastatin 40 mg nightly"


def _patient_from(tmp_path: Path, name: str, body: str) -> Patient:
    f = tmp_path / f"{name}.xml"
    f.write_text(
        '<?xml version="1.0" encoding="UTF-8" ?>\n<PatientMatching>\n<TEXT><![CDATA[\n'
        f"Record date: 2089-07-28\n\n{body}\n]]></TEXT>\n<TAGS>\n</TAGS>\n</PatientMatching>\n",
        encoding="utf-8",
    )
    return read_patient(f)


@pytest.mark.parametrize(
    ("body", "criterion", "label", "evidence"),
    [
        ("67 yo man. The patient is negative for NSTEMI/MI.", "MI-6MOS", "not met", None),
        ("Troponin was negative, MI ruled out.", "MI-6MOS", "not met", None),
        ("Problems:\n-NSTEMI 2 weeks ago\n-HTN", "MI-6MOS", "met", "-NSTEMI 2 weeks ago"),  # a dash bullet hid the concept
        ("Problems:\n-no MI\n-HTN", "MI-6MOS", "not met", None),  # ... and the cue
        ("NSTEMI 7/14, treated with PCI.", "MI-6MOS", "met", "NSTEMI 7/14, treated with PCI."),  # July 14 of 2089, not 2014
        ("NSTEMI 9/14, treated with PCI.", "MI-6MOS", "not met", None),  # 2088-09-14: over 6 months ago
        ("ROS:\nChest pain: denies\nShortness of breath: denies", "ADVANCED-CAD", "not met", None),
        # "Diabetes: Yes" was negated by a ": none" on the next line
        ("ROS:\nDiabetic neuropathy: Yes\nRetinopathy: none", "MAJOR-DIABETES", "met", "Diabetic neuropathy: Yes"),
        ("Creatinine 9 \u03bcmol/L", "CREATININE", "not met", "Creatinine 9 \u03bcmol/L"),  # Greek mu: 0.10 mg/dL
        ("Creatinine 168 \u03bcmol/L (ref 60-110)", "CREATININE", "met", "Creatinine 168 \u03bcmol/L (ref 60-110)"),
    ],
)
def test_wording_that_flipped_decisions(engine: ScreeningEngine, tmp_path: Path, body: str, criterion: str,
                                        label: str, evidence: str | None) -> None:
    d = engine.screen(_patient_from(tmp_path, "p", body))[criterion]
    assert (d.label, d.evidence[0].span.text if d.evidence else None) == (label, evidence)
