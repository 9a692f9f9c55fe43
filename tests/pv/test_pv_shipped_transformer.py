"""The shipped MiniLM extractor: in the package, small, exact spans, and its dev figures.

The dev figures are those docs/pv.md reports for the shipped model (run H weights with
its sentence gate, the attribute scope rules and the effect rule; ``attributes="Speculated"``, ``join_adjacent="main,sub"``); they pin the weights,
the gate and the decoding, so a change to any shows up here.
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from clinex.pv.models import load_model, shipped_model_dir  # noqa: E402

S1 = "A 54-year-old man, treated with amiodarone, developed thyrotoxicosis."
S2 = "The patient, a 70-year-old woman receiving depot neuroleptics, developed severe tardive dyskinesia."


@pytest.fixture(scope="module")
def model():
    return load_model("transformer")


def test_shipped_transformer_is_in_the_package_and_small() -> None:
    folder = shipped_model_dir("transformer")
    assert folder is not None
    assert folder.parts[-4:] == ("clinex", "resources", "models", "pv_transformer")
    size = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
    assert size <= 50_000_000
    assert (folder / "MODEL_CARD.md").is_file()


def test_shipped_transformer_exact_spans(model) -> None:
    assert model.join_adjacent == "main,sub" and model.attributes == "Speculated"
    (ev,) = model.predict([S1])[0]
    assert (ev.event_type, ev.trigger.start, ev.trigger.end) == ("Adverse_event", 44, 53)
    assert [(a.role, a.span.start, a.span.end) for a in ev.arguments] == [
        ("Subject", 0, 17),
        ("Treatment", 32, 42),
        ("Effect", 54, 68),
    ]
    assert [(a.role, a.span.text) for a in ev.sub_arguments["Subject"]] == [("Age", "54-year-old"), ("Gender", "man")]
    (ev,) = model.predict([S2])[0]
    # "depot neuroleptics" is one Treatment span (tagged B B: joined by join_adjacent)
    assert [(a.role, a.span.text) for a in ev.arguments] == [
        ("Subject", "The patient"),
        ("Subject", "a 70-year-old woman"),
        ("Treatment", "depot neuroleptics"),
        ("Effect", "severe tardive dyskinesia"),
    ]
    assert [(a.name, a.value, a.cue.text) for a in ev.attributes] == [("Severity", "High", "severe")]


def test_shipped_transformer_dev_figures(model, shared_data) -> None:
    from clinex.pv.evaluate import flatten, score
    from clinex.pv.formats.phee_json import read_phee_json
    from clinex.pv.types import SentenceEvents

    dev = read_phee_json(shared_data / "phee" / "json" / "dev.json")
    pred = model.predict([s.text for s in dev])
    flat = flatten(score(dev, [SentenceEvents(id=s.id, text=s.text, events=tuple(p)) for s, p in zip(dev, pred)]))
    # clinex.pv.transformer.v2 was trained on train + dev (stop 19), so these are NOT
    # held-out figures: they pin the model's behaviour. The train-only run of the same
    # recipe (v1, run H) gives 0.6916 / 0.6333 / 0.6977 / 0.5816 / 0.6471 / 0.5538 / 0.5785
    # with the stop-19 rules (0.6899 / 0.6337 / 0.6958 before them; docs/pv.md, the model cards).
    expected = {
        # issue 23 (pv.challenge, pv.links): 0.8507 / 0.8675 / 0.8760 before; the dechallenge
        # sentences that PHEE types as therapeutic events are now adverse events
        "trigger.classification.f1": 0.8462,
        "arguments.classification.main.em_f1": 0.8627,
        "arguments.classification.sub.em_f1": 0.8726,
        "attributes.Speculated.em_f1": 0.6035,
        "attributes.Negated.em_f1": 0.7222,
        "attributes.Severity.em_f1": 0.5672,
        "attributes.all.em_f1": 0.6022,
    }
    # small tolerance for float differences between CPUs; a changed decision shows as ~0.001
    assert {k: round(flat[k], 4) for k in expected} == pytest.approx(expected, abs=2e-3)


def test_shipped_transformer_no_drug_no_event(model) -> None:
    # fallback_gate="drug": a forced trigger is kept only with a predicted Treatment drug,
    # a combination or a gazetteer drug in the sentence
    assert model.fallback_gate == "drug"
    texts = ["The weather was nice today.", "Table 1.", "CASE REPORT", "Results are shown in the figure."]
    assert model.predict(texts) == [[], [], [], []]
    # tagged (not forced) triggers whose only argument is the trigger word itself, no drug anywhere
    bare = ["Figure 1.", "Abstract", "References", "x", "Informed consent was obtained."]
    assert model.predict(bare) == [[]] * 5
    model.fallback_gate = "always"
    try:
        # the forced trigger, before the sentence gate (which drops these sentences too)
        assert all(len(evs) == 1 for evs, _ in model.predict_ungated(texts))
        assert [len(evs) for evs, _ in model.predict_ungated(bare)] == [1, 1, 1, 1, 1]
        assert model.predict(texts + bare) == [[]] * 9
    finally:
        model.fallback_gate = "drug"
    (ev,) = model.predict(["Lithium was stopped."])[0] or [None]
    assert ev is not None and [a.span.text for a in ev.sub_arguments.get("Treatment", ())] == ["Lithium"]


def test_shipped_transformer_reads_past_its_window(model) -> None:
    # 3,457 characters, about 600 tokens: the event sits at the end, past one 192-token window
    # (stop 19: "the patient was observed " * 150 before; the train + dev model's sentence
    # gate drops that degenerate text, 0.1517 < 0.1724, though the window finds the event)
    text = "the patient was observed in the ward, " * 90 + "and rash developed after amoxicillin."
    events = model.predict([text])[0]
    found = {(ev.trigger.text, ev.trigger.start) for ev in events}
    assert ("developed", 3429) in found
    # mixed with a short text in one call: each gets what it gets alone
    assert model.predict([text, S1]) == [events, model.predict([S1])[0]]
    (ev,) = [ev for ev in events if ev.trigger.start == 3429]
    assert {(a.role, a.span.text, a.span.start) for a in ev.arguments} >= {
        ("Effect", "rash", 3424),
        ("Treatment", "amoxicillin", 3445),
    }
