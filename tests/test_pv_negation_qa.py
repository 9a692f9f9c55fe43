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
    ("onnx", "The patient did not develop neutropenia while receiving clozapine 200 mg twice daily."): [
        ("Adverse_event", "develop",
         [("Effect", "neutropenia"), ("Subject", "The patient"), ("Treatment", "clozapine 200 mg twice daily")],
         [("Negated", True, "rule:neg.not")]),
    ],
    ("onnx", "She did not develop any rash after amoxicillin 500 mg."): [
        ("Adverse_event", "develop", [("Effect", "any rash"), ("Subject", "She"), ("Treatment", "amoxicillin 500 mg")],
         [("Negated", True, "rule:neg.not")]),
    ],
    ("onnx", "Myopathy was ruled out in this patient taking atorvastatin 80 mg."): [
        ("Adverse_event", "ruled",
         [("Effect", "Myopathy"), ("Subject", "this patient"), ("Treatment", "atorvastatin 80 mg")],
         [("Negated", True, "rule:neg.ruled_out")]),
    ],
    ("crf", "Myopathy was ruled out in this patient taking atorvastatin 80 mg."): [
        ("Adverse_event", "taking", [("Effect", "Myopathy"), ("Treatment", "atorvastatin 80 mg")],
         [("Negated", True, "rule:neg.ruled_out")]),
    ],
    # the CRF tags the negated verb phrase itself as the Effect: the cue inside it negates it
    ("crf", "She did not develop any rash after amoxicillin 500 mg."): [
        ("Adverse_event", "after", [("Effect", "did not develop any rash"), ("Treatment", "amoxicillin 500 mg")],
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


def test_merge_joins_only_a_negated_effect_event_with_a_treatment_event() -> None:
    text = "He did not develop rash while receiving penicillin."
    a = _event(text, "develop", {"Subject": "He", "Effect": "rash"}, negated=True, score=0.9)
    b = _event(text, "receiving", {"Treatment": "penicillin"}, score=0.95, event_type="Potential_therapeutic_event")
    (merged,) = merge_split_events([a, b])
    assert merged.trigger.text == "develop" and merged.score == 0.9
    assert merged.event_type == "Potential_therapeutic_event"  # the more probable trigger's type
    assert [(x.role, x.span.text) for x in merged.arguments] == [
        ("Subject", "He"), ("Effect", "rash"), ("Treatment", "penicillin"),
    ]
    assert merged.attributes == a.attributes
    plain = _event(text, "develop", {"Subject": "He", "Effect": "rash"})
    assert merge_split_events([plain, b]) == [plain, b]  # not negated: two events stay two
    c = _event(text, "receiving", {"Treatment": "penicillin", "Effect": "rash"})
    assert merge_split_events([a, c]) == [a, c]  # the second already has an Effect
    assert merge_split_events([a, b, c]) == [a, b, c]  # three events: left alone
