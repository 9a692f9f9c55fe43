"""Negated events a drug-safety reader must never see as plain ADEs (QA, stop 18).

Each sentence was found by a QA tester giving a plain (non-negated) adverse event; the
expected outputs are exact for the shipped default (onnx) and CRF models.
"""

from __future__ import annotations

import pytest

from clinex.pv import extract
from clinex.pv.postprocess import merge_split_events
from clinex.pv.types import Argument, Attribute, Event
from clinex.text import Span


def _view(text: str, model: str) -> list[tuple]:
    return [
        (e.event_type, e.trigger.text, sorted((a.role, a.span.text) for a in e.arguments),
         sorted((x.name, x.value, x.source) for x in e.attributes))
        for e in extract(text, model=model)
    ]


CASES = {
    # the train + dev model (stop 19) tags "did not develop X" / "X was ruled out" as the
    # Effect; pv.postprocess.trim_negation_cues takes the cue out and the scope rules negate
    ("onnx", "The patient did not develop neutropenia while receiving clozapine 200 mg twice daily."): [
        ("Adverse_event", "receiving",
         [("Effect", "neutropenia"), ("Subject", "The patient"), ("Treatment", "clozapine 200 mg twice daily")],
         [("Negated", True, "rule:neg.not")]),
    ],
    ("onnx", "She did not develop any rash after amoxicillin 500 mg."): [
        ("Adverse_event", "after", [("Effect", "any rash"), ("Treatment", "amoxicillin 500 mg")],
         [("Negated", True, "rule:neg.not")]),
    ],
    ("onnx", "Myopathy was ruled out in this patient taking atorvastatin 80 mg."): [
        ("Adverse_event", "taking",
         [("Effect", "Myopathy"), ("Subject", "patient"), ("Treatment", "atorvastatin 80 mg")],
         [("Negated", True, "rule:neg.ruled_out")]),
    ],
    ("crf", "Myopathy was ruled out in this patient taking atorvastatin 80 mg."): [
        ("Adverse_event", "taking", [("Effect", "Myopathy"), ("Treatment", "atorvastatin 80 mg")],
         [("Negated", True, "rule:neg.ruled_out")]),
    ],
    # the CRF tags the negated verb phrase itself as the Effect; the cue is trimmed out of it
    ("crf", "She did not develop any rash after amoxicillin 500 mg."): [
        ("Adverse_event", "after", [("Effect", "any rash"), ("Treatment", "amoxicillin 500 mg")],
         [("Negated", True, "rule:neg.not")]),
    ],
}


@pytest.mark.parametrize(("model", "text"), list(CASES))
def test_negated_event_stays_negated(model: str, text: str) -> None:
    assert _view(text, model) == CASES[(model, text)]


def _event(text: str, trigger: str, roles: dict[str, str], *, negated: bool = False, score: float = 0.9,
           event_type: str = "Adverse_event") -> Event:
    def span(s: str) -> Span:
        i = text.index(s)
        return Span.from_offsets(text, (i, i + len(s)))

    attrs = (Attribute(name="Negated", value=True, cue=span("not"), source="rule:neg.not"),) if negated else ()
    return Event(event_type=event_type, trigger=span(trigger), score=score, attributes=attrs,
                 arguments=tuple(Argument(role=r, span=span(s)) for r, s in roles.items()))


def test_merge_joins_an_effect_event_and_a_treatment_event() -> None:
    text = "He did not develop rash while receiving penicillin."
    a = _event(text, "develop", {"Subject": "He", "Effect": "rash"}, negated=True, score=0.9)
    b = _event(text, "receiving", {"Treatment": "penicillin"}, score=0.95, event_type="Potential_therapeutic_event")
    (merged,) = merge_split_events([a, b])
    # trigger, score and type of the more probable trigger; the Effect event's attributes
    assert (merged.trigger.text, merged.score, merged.event_type) == ("receiving", 0.95, "Potential_therapeutic_event")
    assert [(x.role, x.span.text) for x in merged.arguments] == [
        ("Subject", "He"), ("Effect", "rash"), ("Treatment", "penicillin"),
    ]
    assert merged.attributes == a.attributes
    plain = _event(text, "develop", {"Subject": "He", "Effect": "rash"}, score=0.9)
    (joined,) = merge_split_events([plain, _event(text, "receiving", {"Treatment": "penicillin"}, score=0.5)])
    assert (joined.trigger.text, joined.attributes) == ("develop", ())
    negated_drug = _event(text, "receiving", {"Treatment": "penicillin"}, negated=True)
    assert merge_split_events([plain, negated_drug]) == [plain, negated_drug]  # only the drug's is negated
    c = _event(text, "receiving", {"Treatment": "penicillin", "Effect": "rash"})
    assert merge_split_events([a, c]) == [a, c]  # the second already has an Effect
    assert merge_split_events([a, b, c]) == [a, b, c]  # three events: left alone


ROUND2 = {  # QA round 2 (stop 18): absent effects and hedges, default (onnx) model
    "The patient received vancomycin without nephrotoxicity.": ("Negated", "rule:neg.without", "without"),
    "Absence of QT prolongation was confirmed during methadone maintenance.": (
        "Negated", "rule:neg.absence_of", "Absence of"),
    "Agranulocytosis was excluded in this patient on clozapine.": ("Negated", "rule:neg.excluded", "was excluded"),
    "Hepatotoxicity induced by isoniazid cannot be excluded.": (
        "Speculated", "rule:spec.not_ruled_out", "cannot be excluded"),
    # QA round 3: "absent", and a "without" that opens the Effect span
    "Hypotension was absent during clonidine therapy.": ("Negated", "rule:neg.absent", "absent"),
    "The pregnant woman was treated with nifedipine without fetal bradycardia or maternal hypotension.": (
        "Negated", "rule:neg.without", "without"),
}


@pytest.mark.parametrize("text", list(ROUND2))
def test_absent_or_hedged_effects(text: str) -> None:
    (ev,) = extract(text)
    assert ev.event_type == "Adverse_event" and ev.main("Effect") and ev.main("Treatment")
    assert [(a.name, a.source, a.cue.text) for a in ev.attributes] == [ROUND2[text]]


def test_without_inside_an_effect_is_about_part_of_it() -> None:
    (ev,) = extract("A patient developed skin pigmentation without respiratory symptoms while taking sulfasalazine.")
    assert [a.span.text for a in ev.main("Effect")] == ["skin pigmentation without respiratory symptoms"]
    assert ev.attributes == ()


def test_an_uneventful_course_is_no_event() -> None:
    """QA round 3: "uneventful" was the Effect of a plain ADE of clozapine."""
    assert extract("Rechallenge with clozapine was uneventful.") == []
    assert extract("The postoperative course was uneventful after intravenous vancomycin.") == []
    (ev,) = extract("Fatal agranulocytosis developed after clozapine.")
    assert [a.span.text for a in ev.main("Effect")] == ["Fatal agranulocytosis"]


def test_a_fatal_case_of_a_drug_induced_effect_is_severe() -> None:
    """QA round 3: 'a fatal case of' + 'X-induced' together (sev.link.case_of_induced)."""
    (ev,) = extract("A fatal case of ceftriaxone-induced immune hemolytic anemia in a child.")
    assert [(a.name, a.value, a.source, a.cue.text) for a in ev.attributes] == [
        ("Severity", "High", "rule:sev.fatal", "fatal"),
    ]


TRIM = {  # Effect span given by a model -> Effect after pv.postprocess.trim_negation_cues
    ("The patient did not develop a rash after amoxicillin.", "not develop a rash"): "a rash",
    ("She did not develop any rash after amoxicillin 500 mg.", "She did not develop any rash"): "any rash",
    ("He never developed hepatotoxicity on isoniazid.", "never developed hepatotoxicity"): "hepatotoxicity",
    ("Myopathy was ruled out in this patient taking atorvastatin.", "Myopathy was ruled out"): "Myopathy",
    ("Neutropenia was not observed with clozapine.", "Neutropenia was not observed"): "Neutropenia",
    # left alone: a negation inside the span, or one that is all of it
    ("NMS without rigidity developed on haloperidol.", "NMS without rigidity"): "NMS without rigidity",
    ("The symptoms did not recur after stopping it.", "The symptoms did not recur"): "The symptoms did not recur",
    ("It was not observed.", "was not observed"): "was not observed",
}


@pytest.mark.parametrize(("text", "effect"), list(TRIM))
def test_trim_negation_cues_out_of_the_effect(text: str, effect: str) -> None:
    from clinex.pv.postprocess import trim_negation_cues

    ev = _event(text, text.split()[-1].rstrip("."), {"Effect": effect})
    (arg,) = trim_negation_cues(text, ev).arguments
    expected = TRIM[(text, effect)]
    assert (arg.span.text, arg.span.start) == (expected, text.index(expected))
    if expected == effect:
        assert trim_negation_cues(text, ev) is ev


QA19 = {  # QA stop 19 (a drug-safety tester's sentences), default (onnx v2) model: (type, trigger, Effect, attributes)
    "The rash resolved after treatment with topical clobetasol.": [
        ("Potential_therapeutic_event", "after", ["rash resolved"], [])],
    "Treatment with imatinib achieved a durable molecular response in chronic myeloid leukemia.": [
        ("Potential_therapeutic_event", "achieved", ["a durable molecular response"], [])],
    "He was started on atorvastatin 20 mg daily.": [],
    # QA round 2 (clean set): "None of the patients" negates; remission / regression are therapeutic
    "None of the patients developed neutropenia during treatment with deferiprone.": [
        ("Adverse_event", "developed", ["neutropenia"], ["Negated"])],
    "Rituximab induced complete remission of refractory thrombotic thrombocytopenic purpura.": [
        ("Potential_therapeutic_event", "induced", [], [])],
    "Propranolol led to rapid regression of the infantile hemangioma.": [
        ("Potential_therapeutic_event", "led", ["rapid regression"], [])],
    "Developmental regression was noted after valproate exposure.": [
        ("Adverse_event", "noted", ["Developmental regression"], [])],
    # QA round 2: a second clause's drug is not the first clause's cause; no dangling "on"
    "Warfarin was associated with major GI bleeding, whereas no bleeding occurred on apixaban.": [
        ("Adverse_event", "associated", ["major GI bleeding"], ["Severity"])],  # 'major': High (issue 23)
    "He developed hyperkalemia on spironolactone, whereas furosemide did not cause any electrolyte disturbance.": [
        ("Adverse_event", "developed", ["hyperkalemia"], [])],
    # QA round 3: a healed disease is the drug's benefit
    "Her pyoderma gangrenosum healed within six weeks of starting infliximab.": [
        ("Potential_therapeutic_event", "healed", ["pyoderma gangrenosum"], [])],
    # fresh-user QA: the resolution is hedged and negated, not the event (pseudo.not_resolve)
    "Lithium-induced nephrogenic diabetes insipidus may not resolve after withdrawal.": [
        ("Adverse_event", "induced", ["nephrogenic diabetes insipidus"], [])],
    ("Following administration of a single 2 g intravenous dose of ceftriaxone for suspected meningitis, "
     "the 8-year-old boy developed acute immune hemolytic anemia with a hemoglobin nadir of 4.2 g/dL."): [
        ("Adverse_event", "developed", ["acute immune hemolytic anemia with a hemoglobin nadir"], [])],
}


@pytest.mark.parametrize("text", list(QA19))
def test_qa19_sentences(text: str) -> None:
    got = [(e.event_type, e.trigger.text, [a.span.text for a in e.main("Effect")], [a.name for a in e.attributes])
           for e in extract(text)]
    assert got == QA19[text]


RETYPE = {  # (sentence, trigger, Effect) of a predicted Adverse_event -> type after retype_therapeutic
    ("The rash resolved after treatment with topical clobetasol.", "after", "rash resolved"): "Potential_therapeutic_event",
    ("Seizures were controlled with levetiracetam.", "controlled", "Seizures"): "Potential_therapeutic_event",
    # a dechallenge, a causal tie, an adverse descriptor: left an Adverse_event
    ("The rash resolved after stopping amoxicillin.", "after", "rash resolved"): "Adverse_event",
    ("Lithium-induced tremor improved with propranolol.", "improved", "tremor"): "Adverse_event",
    ("Reversible encephalopathy developed on cisplatin.", "developed", "Reversible encephalopathy"): "Adverse_event",
    ("An adverse response to clonidine occurred.", "occurred", "adverse response"): "Adverse_event",
    ("Warfarin raised the international normalized ratio.", "raised", "international normalized ratio"): "Adverse_event",
}


@pytest.mark.parametrize(("text", "trigger", "effect"), list(RETYPE))
def test_retype_therapeutic(text: str, trigger: str, effect: str) -> None:
    from clinex.pv.postprocess import retype_therapeutic

    ev = _event(text, trigger, {"Effect": effect})
    out = retype_therapeutic(text, ev)
    expected = RETYPE[(text, trigger, effect)]
    assert out.event_type == expected
    if expected == "Adverse_event":
        assert out is ev
    else:
        assert (out.trigger.label, out.arguments) == (expected, ev.arguments)


def test_drop_cross_clause_treatments_and_trim_spans() -> None:
    from clinex.pv.postprocess import drop_cross_clause_treatments, trim_spans

    text = "Lithium induced nephrogenic diabetes insipidus, which responded to amiloride."
    ev = _event(text, "induced", {"Effect": "nephrogenic diabetes insipidus"})
    two = ev.model_copy(update={"arguments": (*ev.arguments,
        Argument(role="Treatment", span=Span.from_offsets(text, (0, 7))),
        Argument(role="Treatment", span=Span.from_offsets(text, (67, 76))))})
    assert [a.span.text for a in drop_cross_clause_treatments(text, two).main("Treatment")] == ["Lithium"]
    same_clause = "Rash developed after amoxicillin and clavulanate."
    ev2 = _event(same_clause, "developed", {"Effect": "Rash"})
    both = ev2.model_copy(update={"arguments": (*ev2.arguments,
        Argument(role="Treatment", span=Span.from_offsets(same_clause, (21, 32))),
        Argument(role="Treatment", span=Span.from_offsets(same_clause, (37, 48))))})
    assert drop_cross_clause_treatments(same_clause, both) is both
    text3 = "He developed hyperkalemia on spironolactone."
    ev3 = _event(text3, "developed", {"Effect": "hyperkalemia on"})
    assert [(a.span.text, a.span.start) for a in trim_spans(text3, ev3).arguments] == [("hyperkalemia", 13)]
    ev4 = _event(text3, "developed", {"Effect": "hyperkalemia"})
    assert trim_spans(text3, ev4) is ev4


@pytest.mark.parametrize(("text", "treatment", "expected"), [
    ("HUS developed after treatment with mitomycin C.", "treatment with mitomycin C", "mitomycin C"),
    ("Renal failure followed the use of captopril.", "the use of captopril", "captopril"),
    ("Hyperpigmentation due to bleomycin treatment was seen.", "bleomycin treatment", "bleomycin"),
    ("Renal failure followed captopril use.", "captopril use", "captopril"),
    ("Nephritis after lithium therapy.", "lithium therapy", "lithium therapy"),  # PHEE keeps "therapy" inside
    ("A reaction to treatment with", "treatment with", "treatment"),  # no drug left: only the dangling "with" goes
])
def test_treatment_lead_and_tail_words(text: str, treatment: str, expected: str) -> None:
    from clinex.pv.postprocess import trim_spans

    ev = _event(text, text.split()[1], {"Treatment": treatment})
    (arg,) = trim_spans(text, ev).arguments
    assert (arg.span.text, arg.span.start) == (expected, text.index(expected))
