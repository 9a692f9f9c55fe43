"""Attribute cues (Speculated, Negated, Severity): coding and the cue-lexicon detector."""

from __future__ import annotations

import pytest

from clinex.errors import ModelError
from clinex.pv.attributes import CUE_LABELS, CueLexiconDetector, cues_to_attributes, event_cues
from clinex.pv.types import Attribute, Event, SentenceEvents
from clinex.text import Span


def _event(text: str, trigger: str, attrs: list[tuple[str, object, str]]) -> Event:
    t = text.index(trigger)
    return Event(
        event_type="Adverse_event",
        trigger=Span.from_offsets(text, (t, t + len(trigger))),
        attributes=tuple(
            Attribute(name=n, value=v, cue=Span.from_offsets(text, (text.index(c), text.index(c) + len(c))))
            for n, v, c in attrs
        ),
    )


def test_cue_labels_round_trip() -> None:
    text = "Amiodarone may cause severe but not mild hypothyroidism."
    ev = _event(text, "cause", [("Speculated", True, "may"), ("Severity", "High", "severe"), ("Negated", False, "not")])
    cues = event_cues(ev)
    # The false Negated value carries no cue label.
    assert [(lab, sp.text, sp.start) for lab, sp in cues] == [("Speculated", "may", 11), ("Severity.High", "severe", 21)]
    back = cues_to_attributes(cues)
    assert [(a.name, a.value, a.cue.offsets()) for a in back] == [
        ("Speculated", True, [(11, 14)]),
        ("Severity", "High", [(21, 27)]),
    ]
    assert CUE_LABELS == ("Speculated", "Negated", "Severity.High", "Severity.Medium", "Severity.Low")
    with pytest.raises(ModelError, match="unknown attribute cue label"):
        cues_to_attributes([("Hedged", back[0].cue)])


def test_lexicon_detector_learns_precise_cues_only() -> None:
    train = []
    for i, (text, attrs) in enumerate(
        [
            ("Drug X may cause rash.", [("Speculated", True, "may")]),
            ("Drug Y may induce fever.", [("Speculated", True, "may")]),
            ("Drug Z did not cause rash.", [("Negated", True, "not")]),
            ("Drug Z was not given but caused rash.", []),
            ("Drug W caused severe rash.", [("Severity", "High", "severe")]),
        ]
    ):
        trigger = "cause" if "cause " in text else ("induce" if "induce" in text else "caused")
        train.append(SentenceEvents(id=str(i), text=text, events=(_event(text, trigger, attrs),)))
    det = CueLexiconDetector(min_precision=0.6, min_count=1).fit(train)
    # "not": 1 cue out of 2 occurrences (precision 0.5 < 0.6) -> dropped; "may" 2/2 kept.
    assert det.lexicon_ == {"may": "Speculated", "severe": "Severity.High"}
    text = "Drug V may cause severe nausea."
    (ev,) = det.predict(text, [_event(text, "cause", [])])
    assert [(a.name, a.value, a.cue.text, a.cue.start) for a in ev.attributes] == [
        ("Speculated", True, "may", 7),
        ("Severity", "High", "severe", 17),
    ]
    # Whole words only: "mayor" is no cue.
    (ev2,) = det.predict("The mayor caused it.", [_event("The mayor caused it.", "caused", [])])
    assert ev2.attributes == ()


def test_lexicon_detector_checks() -> None:
    with pytest.raises(ModelError, match="not fitted"):
        CueLexiconDetector().predict("x", [])
    with pytest.raises(ModelError, match="min_precision"):
        CueLexiconDetector(min_precision=2).fit([])


def test_lexicon_detector_on_phee_dev(shared_data) -> None:
    """Cue lexicon learned on train, scored on dev attributes (EM on name, value, cue)."""
    from clinex.pv.formats.phee_json import read_phee_json
    from clinex.pv.models.transformer import quick_scores

    train = read_phee_json(shared_data / "phee" / "json" / "train.json")
    dev = read_phee_json(shared_data / "phee" / "json" / "dev.json")
    det = CueLexiconDetector().fit(train)
    bare = [[ev.model_copy(update={"attributes": ()}) for ev in s.events] for s in dev]
    pred = [det.predict(s.text, evs) for s, evs in zip(dev, bare)]
    scores = quick_scores(dev, pred)
    assert scores["trigger"] == 1.0  # gold triggers kept
    assert 0.3 < scores["attr"] < 1.0
