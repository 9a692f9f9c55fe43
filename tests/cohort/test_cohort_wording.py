"""Clinical wording that flips cohort decisions (issue 13): each case is a tiny invented
n2c2-format patient with an exact expected label and the sentence that decided it.

The classes come from the clinical-NLP literature and public trackers:

* pseudo-negation — a negation word that negates nothing ("no increase in", "not only",
  "no change in", "gram-negative"): the NegEx / pyConTextNLP pseudo-trigger lists
  (Chapman et al., J Biomed Inform 2001; negspacy issue #11 "Pseudo negations are not
  being handled properly"); "cannot rule out" / "cannot be excluded" is uncertainty, not
  negation (edsnlp issue #245, "ne permet pas d'exclure un SMD" read as negated);
  "Retinopathy: no change" is medspaCy PR #49's ": no" answer rule firing on a pseudo-negation;
* goals and targets read as results ("goal HbA1c < 7%", "aim for A1c 6.5-8");
* ranges read as reference ranges or values ("HbA1c 6.5-9.5 (normal 4-6)",
  "Creatinine (0.6-1.2) 1.9": a printed range before the value);
* family history and hypothetical mentions ("mother had MI", "if chest pain recurs",
  "educated on warning signs of heart attack"; negspacy issue #10's hypothetical list:
  "if you experience", "concern for");
* historical vs current where the criterion has a window ("DKA as a teenager",
  "fish oil years ago"; edsnlp issue #323 on history triggers).

``evidence`` is the text of the decision's first evidence span (the sentence for a
concept, the line for a lab value), or None when the decision cites none.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from clinex.cohort.engine import ScreeningEngine
from clinex.cohort.formats.n2c2_xml import read_patient
from clinex.cohort.types import Patient

NOW = "2089-07-28"


@pytest.fixture(scope="module")
def engine() -> ScreeningEngine:
    return ScreeningEngine("n2c2").fit()


def _patient(tmp_path: Path, records: list[tuple[str, str]]) -> Patient:
    """An n2c2 Track 1 XML file holding ``records`` ((date, body), oldest first), read back."""
    notes = ("\n" + "*" * 100 + "\n\n").join(f"Record date: {date}\n\n{body}\n" for date, body in records)
    f = tmp_path / "100.xml"
    f.write_text(
        '<?xml version="1.0" encoding="UTF-8" ?>\n<PatientMatching>\n<TEXT><![CDATA[\n'
        f"{notes}\n]]></TEXT>\n<TAGS>\n</TAGS>\n</PatientMatching>\n",
        encoding="utf-8",
    )
    return read_patient(f)


def _decide(engine: ScreeningEngine, tmp_path: Path, body: str | list[tuple[str, str]], criterion: str):  # type: ignore[no-untyped-def]
    records = [(NOW, body)] if isinstance(body, str) else body
    d = engine.screen(_patient(tmp_path, records))[criterion]
    return d.label, (d.evidence[0].span.text if d.evidence else None)


PSEUDO_NEGATION = [
    # "not only": was read as a negation of the NSTEMI
    ("Not only an NSTEMI 3 weeks ago but also new heart failure.", "MI-6MOS", "met",
     "Not only an NSTEMI 3 weeks ago but also new heart failure."),
    # ": no" (review-of-systems answer) took "no change" as a negation of the finding before the colon
    ("Diabetic neuropathy: no change in symptoms.", "MAJOR-DIABETES", "met", "Diabetic neuropathy: no change in symptoms."),
    ("Retinopathy: no change since last exam.", "MAJOR-DIABETES", "met", "Retinopathy: no change since last exam."),
    ("Diabetic retinopathy, no interval change on fundoscopy.", "MAJOR-DIABETES", "met",
     "Diabetic retinopathy, no interval change on fundoscopy."),
    ("No change in management after his NSTEMI 3 weeks ago.", "MI-6MOS", "met",
     "No change in management after his NSTEMI 3 weeks ago."),
    ("No increase in troponin after the MI 3 weeks ago; stent patent.", "MI-6MOS", "met",
     "No increase in troponin after the MI 3 weeks ago; stent patent."),
    ("Admitted 2 weeks ago with NSTEMI. No increase in chest pain since discharge.", "MI-6MOS", "met",
     "Admitted 2 weeks ago with NSTEMI."),
    ("S/p cholecystectomy. No increase in abdominal pain.", "ABDOMINAL", "met", "S/p cholecystectomy."),
    ("Continues aspirin 81 mg; no increase in bruising.", "ASP-FOR-MI", "met", "Continues aspirin 81 mg; no increase in bruising."),
    ("Gram-negative bacteremia from a diabetic foot ulcer.", "MAJOR-DIABETES", "met",
     "Gram-negative bacteremia from a diabetic foot ulcer."),
    ("Wound culture of diabetic foot ulcer: gram-negative rods.", "MAJOR-DIABETES", "met",
     "Wound culture of diabetic foot ulcer: gram-negative rods."),
    ("Diabetic foot ulcer, gram negative organisms, no osteomyelitis.", "MAJOR-DIABETES", "met",
     "Diabetic foot ulcer, gram negative organisms, no osteomyelitis."),
    # real negations next to them still negate
    ("Neuropathy: none", "MAJOR-DIABETES", "not met", None),
    ("Neuropathy: no", "MAJOR-DIABETES", "not met", None),
    # "cannot rule out" / "cannot be excluded": uncertain, which is not met
    ("Chest pain; cannot rule out MI, troponins pending.", "MI-6MOS", "not met", None),
    ("NSTEMI cannot be ruled out, troponin pending.", "MI-6MOS", "not met", None),
    ("Cannot exclude NSTEMI; serial troponins ordered.", "MI-6MOS", "not met", None),
    ("Diabetic nephropathy cannot be excluded.", "MAJOR-DIABETES", "not met", None),  # was met
    ("Cannot rule out diabetic neuropathy; EMG ordered.", "MAJOR-DIABETES", "not met", None),
]

GOALS_AND_TARGETS = [
    ("Diabetes well controlled. Goal HbA1c < 7%.", "HBA1C", "not met", None),
    ("Target LDL < 70, goal HbA1c 7%.", "HBA1C", "not met", None),
    ("Aim for A1c 6.5-8 given hypoglycemia.", "HBA1C", "not met", None),  # was met on 6.5 and 8
    ("Aim for an A1c of 7.5.", "HBA1C", "not met", None),  # was met
    ("Aiming for an HbA1c around 7.", "HBA1C", "not met", None),  # was met
    ("Goal A1c 7-8% in this elderly patient.", "HBA1C", "not met", None),
    ("A1c goal 6.5-8.", "HBA1C", "not met", None),
    ("A1c goal is 7.5.", "HBA1C", "not met", None),
    ("HbA1c target: 7.0", "HBA1C", "not met", None),
    ("HbA1c should be < 8.", "HBA1C", "not met", None),
    # a result next to its goal is still a result
    ("HbA1c 7.8% (goal < 7%).", "HBA1C", "met", "HbA1c 7.8% (goal < 7%)."),
    ("A1c 7.4, goal < 7.", "HBA1C", "met", "A1c 7.4, goal < 7."),
    ("HbA1c 10.2% (goal < 7).", "HBA1C", "not met", "HbA1c 10.2% (goal < 7)."),
    ("Goal creatinine < 1.5.", "CREATININE", "not met", None),
    ("Target creatinine below 2.", "CREATININE", "not met", None),
    ("If creatinine rises above 2, stop metformin.", "CREATININE", "not met", None),
]

RANGES = [
    ("HbA1c 6.5-9.5 (normal 4-6)", "HBA1C", "met", "HbA1c 6.5-9.5 (normal 4-6)"),  # results 6.5 and 9.5, then the range
    ("A1c has ranged 7-8 over the past year.", "HBA1C", "met", "A1c has ranged 7-8 over the past year."),
    ("HbA1c 7.1 (normal 4.0-6.0)", "HBA1C", "met", "HbA1c 7.1 (normal 4.0-6.0)"),
    ("HbA1c 8.2 (ref 4.0-5.6)", "HBA1C", "met", "HbA1c 8.2 (ref 4.0-5.6)"),
    ("HbA1c 4.8 (normal 4-6)", "HBA1C", "not met", "HbA1c 4.8 (normal 4-6)"),
    ("HbA1c 10.4 (normal 4.0-6.0)", "HBA1C", "not met", "HbA1c 10.4 (normal 4.0-6.0)"),
    # a printed range before the value: its upper limit is not a result
    ("Hemoglobin A1c (4.0-6.5 %) 10.2", "HBA1C", "not met", "Hemoglobin A1c (4.0-6.5 %) 10.2"),  # was met on 6.5
    ("Hemoglobin A1c (4.0-5.6 %) 7.9", "HBA1C", "met", "Hemoglobin A1c (4.0-5.6 %) 7.9"),
    ("HbA1c (4.0-6.0) 10.1", "HBA1C", "not met", "HbA1c (4.0-6.0) 10.1"),
    ("HbA1c (ref 4.0-6.0): 11.2", "HBA1C", "not met", "HbA1c (ref 4.0-6.0): 11.2"),
    ("Creatinine (0.6-1.2) 1.9", "CREATININE", "met", "Creatinine (0.6-1.2) 1.9"),
    ("Creatinine (0.5-1.0) 1.2", "CREATININE", "met", "Creatinine (0.5-1.0) 1.2"),  # was not met: ULN 1.0 ignored
    ("Creatinine (ref 0.6-1.2): 1.4", "CREATININE", "met", "Creatinine (ref 0.6-1.2): 1.4"),  # was not met
    ("Creatinine (0.6-1.2) 1.1", "CREATININE", "not met", "Creatinine (0.6-1.2) 1.1"),
    ("Creatinine (0.6-1.3) 1.3", "CREATININE", "not met", "Creatinine (0.6-1.3) 1.3"),  # equal to the ULN
    ("Creatinine (60-110 umol/L) 168 umol/L", "CREATININE", "met", "Creatinine (60-110 umol/L) 168 umol/L"),
    ("Creatinine 1.4 (normal 0.6-1.3)", "CREATININE", "met", "Creatinine 1.4 (normal 0.6-1.3)"),
    ("Creatinine 1.3 (normal 0.6-1.3)", "CREATININE", "not met", "Creatinine 1.3 (normal 0.6-1.3)"),
    ("Creatinine 0.6-1.2 mg/dL normal range; today 1.1", "CREATININE", "not met",
     "Creatinine 0.6-1.2 mg/dL normal range; today 1.1"),
]

FAMILY_AND_HYPOTHETICAL = [
    ("Family history: mother had MI at 55.", "MI-6MOS", "not met", None),
    ("His mother had an MI 3 weeks ago.", "MI-6MOS", "not met", None),
    ("Mother had MI last month.", "MI-6MOS", "not met", None),
    ("Father died of a heart attack at 60.", "MI-6MOS", "not met", None),
    ("Brother with NSTEMI 2 months ago.", "MI-6MOS", "not met", None),
    ("Mother had MI at age 50; patient without cardiac history.", "MI-6MOS", "not met", None),
    ("Mother had MI at 50. The patient had an NSTEMI 1 month ago.", "MI-6MOS", "met",
     "The patient had an NSTEMI 1 month ago."),
    ("Mother with DKA last year.", "KETO-1YR", "not met", None),
    ("Mother had a cholecystectomy.", "ABDOMINAL", "not met", None),
    ("Sister had appendectomy.", "ABDOMINAL", "not met", None),
    ("If chest pain recurs, return to rule out MI.", "MI-6MOS", "not met", None),
    ("Return to ED if chest pain recurs or signs of heart attack.", "MI-6MOS", "not met", None),
    ("Call 911 if he has symptoms of an MI.", "MI-6MOS", "not met", None),
    ("Call if he develops chest pain or heart attack symptoms.", "MI-6MOS", "not met", None),
    ("Educated on symptoms of heart attack.", "MI-6MOS", "not met", None),  # was met
    ("Educated on warning signs of heart attack.", "MI-6MOS", "not met", None),  # was met
    ("NSTEMI 2 weeks ago. He was educated on diet.", "MI-6MOS", "met", "NSTEMI 2 weeks ago."),
    ("Risk of MI discussed.", "MI-6MOS", "not met", None),
    ("At risk of amputation if the ulcer does not heal.", "MAJOR-DIABETES", "not met", None),
    ("If she develops DKA, go to the ED.", "KETO-1YR", "not met", None),
    ("If pain persists, may need cholecystectomy.", "ABDOMINAL", "not met", None),
    ("Should she need a cholecystectomy, hold aspirin.", "ABDOMINAL", "not met", None),
    ("If chest pain recurs, take aspirin 325 mg and call 911.", "ASP-FOR-MI", "not met", None),
    # "signs of" / "symptoms of" in a finding are not hypothetical
    ("Eye exam shows signs of diabetic retinopathy.", "MAJOR-DIABETES", "met", "Eye exam shows signs of diabetic retinopathy."),
    ("He has symptoms of peripheral neuropathy in both feet.", "MAJOR-DIABETES", "met",
     "He has symptoms of peripheral neuropathy in both feet."),
]

HISTORICAL_VS_CURRENT = [
    ("History of MI in 2085.", "MI-6MOS", "not met", None),
    ("Remote MI (2079), no recent events.", "MI-6MOS", "not met", None),
    ("Prior MI 2 years ago.", "MI-6MOS", "not met", None),
    ("MI 8 months ago, stable since.", "MI-6MOS", "not met", None),
    ("MI 5 months ago, stable since.", "MI-6MOS", "met", "MI 5 months ago, stable since."),
    ("MI as a young man, none since.", "MI-6MOS", "not met", None),  # was met (record date)
    ("CABG years ago, now admitted with NSTEMI.", "MI-6MOS", "met", "CABG years ago, now admitted with NSTEMI."),
    ("NSTEMI 3 weeks ago after CABG years ago.", "MI-6MOS", "met", "NSTEMI 3 weeks ago after CABG years ago."),
    ("DKA in 2085, none since.", "KETO-1YR", "not met", None),
    ("History of DKA 2 years ago.", "KETO-1YR", "not met", None),
    ("DKA as a teenager.", "KETO-1YR", "not met", None),  # was met
    ("Type 1 DM since childhood with DKA in childhood.", "KETO-1YR", "not met", None),  # was met
    ("Several DKA admissions years ago.", "KETO-1YR", "not met", None),  # was met
    ("DKA admission 3 months ago.", "KETO-1YR", "met", "DKA admission 3 months ago."),
    ("DKA 4 months ago; first DKA as a teenager.", "KETO-1YR", "met", "DKA 4 months ago; first DKA as a teenager."),
    ("Took fish oil years ago, stopped.", "DIETSUPP-2MOS", "not met", None),  # was met
    ("Takes fish oil daily for years.", "DIETSUPP-2MOS", "met", "Takes fish oil daily for years."),
    # no window: a past abdominal operation counts however long ago
    ("S/p appendectomy as a child.", "ABDOMINAL", "met", "S/p appendectomy as a child."),
    # an earlier record dates the event a later "history of" refers to
    ([("2088-01-10", "Admitted with NSTEMI."), (NOW, "Follow-up. History of NSTEMI.")], "MI-6MOS", "not met", None),
    ([("2089-04-10", "Admitted with NSTEMI."), (NOW, "Follow-up. History of NSTEMI.")], "MI-6MOS", "met", "Admitted with NSTEMI."),
]


def _ids(cases: list) -> list[str]:
    return [(c[0] if isinstance(c[0], str) else " || ".join(b for _, b in c[0]))[:60] for c in cases]


@pytest.mark.parametrize(("body", "criterion", "label", "evidence"), PSEUDO_NEGATION, ids=_ids(PSEUDO_NEGATION))
def test_pseudo_negation(engine: ScreeningEngine, tmp_path: Path, body, criterion: str, label: str, evidence) -> None:  # type: ignore[no-untyped-def]
    assert _decide(engine, tmp_path, body, criterion) == (label, evidence)


@pytest.mark.parametrize(("body", "criterion", "label", "evidence"), GOALS_AND_TARGETS, ids=_ids(GOALS_AND_TARGETS))
def test_goals_and_targets_are_not_results(engine: ScreeningEngine, tmp_path: Path, body, criterion: str, label: str,  # type: ignore[no-untyped-def]
                                           evidence) -> None:
    assert _decide(engine, tmp_path, body, criterion) == (label, evidence)


@pytest.mark.parametrize(("body", "criterion", "label", "evidence"), RANGES, ids=_ids(RANGES))
def test_reference_ranges_and_ranges_of_values(engine: ScreeningEngine, tmp_path: Path, body, criterion: str, label: str,  # type: ignore[no-untyped-def]
                                               evidence) -> None:
    assert _decide(engine, tmp_path, body, criterion) == (label, evidence)


@pytest.mark.parametrize(("body", "criterion", "label", "evidence"), FAMILY_AND_HYPOTHETICAL, ids=_ids(FAMILY_AND_HYPOTHETICAL))
def test_family_and_hypothetical_mentions(engine: ScreeningEngine, tmp_path: Path, body, criterion: str, label: str,  # type: ignore[no-untyped-def]
                                          evidence) -> None:
    assert _decide(engine, tmp_path, body, criterion) == (label, evidence)


@pytest.mark.parametrize(("body", "criterion", "label", "evidence"), HISTORICAL_VS_CURRENT, ids=_ids(HISTORICAL_VS_CURRENT))
def test_historical_vs_current_in_a_window(engine: ScreeningEngine, tmp_path: Path, body, criterion: str, label: str,  # type: ignore[no-untyped-def]
                                           evidence) -> None:
    assert _decide(engine, tmp_path, body, criterion) == (label, evidence)


def test_lab_evidence_names_the_value_and_printed_limit(engine: ScreeningEngine, tmp_path: Path) -> None:
    """The range before the value is its reference range: the rule cites the value and that ULN."""
    p = _patient(tmp_path, [(NOW, "Labs: Creatinine (ref 0.6-1.2): 1.4")])
    (ev,) = engine.screen(p)["CREATININE"].evidence
    assert ev.rule == "CREATININE.serum_creatinine:value=1.4 (ULN 1.2)" and ev.value == 1.4
    p = _patient(tmp_path, [(NOW, "Hemoglobin A1c (4.0-6.5 %) 10.2")])
    (ev,) = engine.screen(p)["HBA1C"].evidence
    assert ev.rule == "HBA1C.a1c:value-not-meeting=10.2"
