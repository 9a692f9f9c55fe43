"""Sentences a drug-safety scientist wrote blind (issue 24 QA, /tmp/pv_expert, expected
events written before any clinex run): the cases the rules now get right, exact.

* "Treatment with X was complicated by Y": the model types it therapeutic; a complication
  is an adverse effect (:func:`clinex.pv.effect_rules.retype`).
* "... after a tick bite": a tick is no drug, so no drug -> reaction pair
  (:func:`clinex.pv.normalise.names_no_product`).
"""

from __future__ import annotations

import pytest

from clinex.pv.effect_rules import retype
from clinex.pv.pairs import record_pairs
from clinex.pv.pipeline import extract_records
from clinex.pv.types import Argument, Event
from clinex.text import Span


def _pairs(text: str, model: str) -> list[tuple[str, str, str]]:
    [record] = extract_records([("x", text)], model=model)
    return [(p.drug, p.reaction, p.event_type) for p in record_pairs(record)]


def test_a_complication_of_treatment_is_an_adverse_effect() -> None:
    text = "Treatment with isotretinoin was complicated by depression and suicidal ideation."
    assert _pairs(text, "auto") == [("isotretinoin", "depression and suicidal ideation", "Adverse_event")]


def test_a_tick_is_no_drug() -> None:
    text = "A 45-year-old man developed fever and a maculopapular rash after a tick bite."
    assert _pairs(text, "auto") == []


def _event(text: str, etype: str, trigger: str, effect: str) -> Event:
    def span(word: str) -> Span:
        start = text.index(word)
        return Span.from_offsets(text, (start, start + len(word)))

    return Event(event_type=etype, trigger=span(trigger), arguments=(Argument(role="Effect", span=span(effect)),))


@pytest.mark.parametrize(("text", "trigger", "effect", "expected"), [
    ("Treatment with isotretinoin was complicated by depression.", "Treatment", "depression", "Adverse_event"),
    ("Scleritis complicating zoledronic acid infusion.", "infusion", "Scleritis", "Adverse_event"),
    # PHEE train: the infection complicates the disease, and infliximab treated it
    ("Mycobacterium marinum infection complicating Crohn's disease, treated with infliximab.", "treated",
     "Crohn's disease", "Potential_therapeutic_event"),
    ("Imatinib improved the anaemia.", "improved", "anaemia", "Potential_therapeutic_event"),
])
def test_only_a_named_complication_turns_a_therapeutic_event_adverse(text: str, trigger: str, effect: str,
                                                                     expected: str) -> None:
    event = _event(text, "Potential_therapeutic_event", trigger, effect)
    out = retype(text, event, blocked=False)
    assert out.event_type == expected
    assert (out is event) == (expected == "Potential_therapeutic_event")  # left as it was, or retyped
    if out is not event:
        assert out.trigger.label == "Adverse_event"
