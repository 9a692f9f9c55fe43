"""The sentences of issue 9 through both shipped models, end to end (``clinex pv extract``'s
path): no event where there is none, negation that holds, provenance."""

from __future__ import annotations

import pytest

from clinex.pv.pipeline import extract_records

NO_EVENT = [
    "Informed consent was obtained from all patients.",
    "The study was approved by the local ethics committee.",
    "Patients were randomly assigned to two groups.",
]
NEUTROPENIA = "The patient did not develop neutropenia while on clozapine."
HEPATOTOXICITY = "No hepatotoxicity was observed during six months of isoniazid therapy."
STARTED = "A 67-year-old man with atrial fibrillation was started on amiodarone 200 mg daily."


def _attrs(item) -> list[tuple]:  # noqa: ANN001
    return [(a.name, a.value, a.cue.text, a.cue.start, a.source) for e in item.events for a in e.attributes]


@pytest.mark.parametrize("kind", ["crf", "transformer"])
def test_sentences_without_an_event_get_none(kind: str) -> None:
    if kind == "transformer":
        pytest.importorskip("torch")
    items = extract_records([(f"s{k}", t) for k, t in enumerate(NO_EVENT)], model=kind)
    assert [i.events for i in items] == [(), (), ()]
    assert all(i.event_probability is not None and i.event_probability < 0.1 for i in items)
    assert {i.model for i in items} == {{"crf": "clinex.pv.crf.v1", "transformer": "clinex.pv.transformer.v2"}[kind]}


@pytest.mark.parametrize("kind", ["crf", "transformer"])
def test_negated_outcomes_are_negated_events(kind: str) -> None:
    if kind == "transformer":
        pytest.importorskip("torch")
    neu, hep = extract_records([("a", NEUTROPENIA), ("b", HEPATOTOXICITY)], model=kind)
    assert [e.event_type for e in neu.events] == ["Adverse_event"]
    assert _attrs(neu) == [("Negated", True, "not", 16, "rule:neg.not")]
    assert [e.event_type for e in hep.events] == ["Adverse_event"]
    assert _attrs(hep) == [("Negated", True, "No", 0, "rule:neg.no")]


AMIODARONE = "Amiodarone caused hypothyroidism, and levothyroxine improved her symptoms."


def test_an_ade_and_a_pte_in_one_sentence_with_the_transformer() -> None:
    pytest.importorskip("torch")
    (item,) = extract_records([("a", AMIODARONE)], model="transformer")
    assert [(e.event_type, e.trigger.text, e.trigger.start) for e in item.events] == [
        ("Adverse_event", "caused", 11),
        ("Potential_therapeutic_event", "improved", 52),
    ]


def test_starting_a_therapy_is_no_adverse_event_for_the_transformer() -> None:
    pytest.importorskip("torch")
    (item,) = extract_records([("a", STARTED)], model="transformer")
    assert item.events == ()
    assert item.event_probability is not None and item.event_probability > 0.1  # the gate let it through:
    # the effect rule dropped its Effect-less Adverse_event (trigger probability below 0.5)


def test_shipped_models_carry_their_gate_parameters() -> None:
    import json

    from clinex.pv.models import shipped_model_dir

    for kind, threshold, no_effect in (("crf", 0.1316, 0.05), ("transformer", 0.1724, 0.5)):
        meta = json.loads((shipped_model_dir(kind) / "model.json").read_text(encoding="utf-8"))
        assert meta["params"]["event_threshold"] == threshold == meta["calibration"]["event_threshold"]
        assert meta["params"]["no_effect_min_prob"] == no_effect
        assert meta["gate"]["file"] == "gate.npz" and (shipped_model_dir(kind) / "gate.npz").is_file()
