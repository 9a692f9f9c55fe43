"""Each named step of the PV pipeline (clinex.pv.pipeline, clinex.pv.steps) on its own.

The sentence is PHEE dev ``10907391_3`` (Sun et al., EMNLP 2022), whose gold event is an
Adverse_event with trigger "occur" (40-45), Effect "PLP" (32-35), Treatment "paclitaxel"
(66-76) and Speculated "can" (36-39). Offsets below were checked by hand against it:
"Physicians"(0) "should"(11) "be"(18) "aware"(21) "that"(27) "PLP"(32) "can"(36)
"occur"(40) "after"(46) "initiation"(52) "of"(63) "paclitaxel"(66) "."(76), 77 characters.
"""

from __future__ import annotations

from typing import Any

import pytest

from clinex.errors import FormatError, InputError, LLMError
from clinex.pv import steps
from clinex.pv.pipeline import (
    answer_records,
    as_record,
    check_records,
    extract_records,
    read_sentences,
    record_pairs,
    resolve_sentences,
    split_records,
    text_records,
)
from clinex.pv.types import Argument, Attribute, Event, Pair, SentenceEvents
from clinex.text import Span

S = "Physicians should be aware that PLP can occur after initiation of paclitaxel."
ID = "10907391_3"


def _sp(start: int, end: int, text: str = S) -> Span:
    return Span.from_offsets(text, (start, end))


def _event(*args: tuple[str, int, int], trigger: tuple[int, int] = (40, 45), score: float | None = 0.9,
           attributes: tuple[Attribute, ...] = (), text: str = S, **kw: Any) -> Event:
    return Event(event_type=kw.get("event_type", "Adverse_event"), trigger=_sp(*trigger, text),
                 arguments=tuple(Argument(role=r, span=_sp(a, b, text)) for r, a, b in args),
                 attributes=attributes, score=score, source=kw.get("source"))


def _show(events: list[Event]) -> list[tuple]:
    return [(e.event_type, e.trigger.text, e.trigger.start, e.score,
             [(a.role, a.span.text, a.span.start) for a in e.arguments],
             {k: [(a.role, a.span.text) for a in v] for k, v in e.sub_arguments.items()},
             [(a.name, a.value, a.cue.text if a.cue else None, a.source) for a in e.attributes]) for e in events]


# -- step 1: check_records -----------------------------------------------------------


def test_check_records_passes_a_phee_record_and_names_a_bad_one() -> None:
    assert check_records([(ID, S)], None) is None
    assert check_records([(ID, S)], [0]) is None
    with pytest.raises(InputError, match="2 offsets for 1 records"):
        check_records([(ID, S)], [0, 5])
    with pytest.raises(InputError) as err:
        check_records([(ID, S), ("bad", "PLP \ud800")], None)
    assert err.value.field == "record bad"


def test_check_records_refuses_a_text_over_the_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("clinex.io.limits.MAX_PV_TEXT_CHARS", 76)
    with pytest.raises(FormatError, match="record 10907391_3: 77 characters, more than MAX_PV_TEXT_CHARS = 76"):
        check_records([(ID, S)], None)


# -- step 2: split_records -----------------------------------------------------------


def test_split_records_splits_a_record_once_and_keeps_a_sentence_whole() -> None:
    two = S + " It resolved."
    assert split_records([two, two, ""], [False, True, False]) == [
        [(0, 77, S), (78, 90, "It resolved.")],
        [(0, 90, two)],
        [(0, 0, "")],
    ]


def test_a_plain_text_document_is_split_once_on_its_whole_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """text_records splits the document; extract_records and the model get the offsets and
    never split again (before: up to three splits of one sentence on this path)."""
    import clinex.pv.inputs
    import clinex.text

    calls: list[str] = []
    real = clinex.text.split_sentences

    def counted(text: str, **rules: Any) -> list[Span]:
        calls.append(text)
        return real(text, **rules)

    monkeypatch.setattr(clinex.pv.inputs, "split_sentences", counted)
    monkeypatch.setattr(clinex.text, "split_sentences", counted)
    clinex.pv.inputs._pieces.cache_clear()
    doc = S + " It resolved."
    records = text_records(doc, "doc")
    assert records == [("doc_1", S, 0), ("doc_2", "It resolved.", 78)]
    out = extract_records([(rid, t) for rid, t, _ in records], model="crf", offsets=[o for _, _, o in records])
    assert calls == [doc]
    assert [(r.id, r.offset, len(r.events)) for r in out] == [("doc_1", 0, 1), ("doc_2", 78, 0)]


def test_a_record_is_split_once_by_the_pipeline_and_its_pairs_step(monkeypatch: pytest.MonkeyPatch) -> None:
    """A JSON-lines record of two sentences: the split step cuts it, and the pairs step
    (which cites each pair's evidence sentence) reuses that split."""
    import clinex.pv.inputs

    calls: list[str] = []
    real = clinex.pv.inputs.split_sentences

    def counted(text: str, **rules: Any) -> list[Span]:
        calls.append(text)
        return real(text, **rules)

    monkeypatch.setattr(clinex.pv.inputs, "split_sentences", counted)
    clinex.pv.inputs._pieces.cache_clear()
    doc = "It resolved. A 45-year-old woman developed severe rash after amoxicillin."
    [record] = extract_records([("r", doc)], model="crf")
    [pair] = record_pairs(record)
    assert calls == [doc]
    assert (pair.drug, pair.reaction, pair.evidence) == ("amoxicillin", "severe rash", ((13, 73),))


# -- step 3: read_sentences = tag -> clean -> scope -> gate -> join -> effect rule ----


def test_tag_is_the_model_and_its_decoding_only() -> None:
    """The CRF's own events: its tags decoded, nothing trimmed or decided yet ("initiation
    of" still in the Treatment, PLP tagged a Treatment, the model's own probability)."""
    from clinex.pv.models import load_model

    [(events, prob)] = steps.tag(load_model("crf"), [S], [[0]])
    assert _show(events) == [("Adverse_event", "occur after", 40, 0.6546,
                              [("Treatment", "PLP", 32), ("Treatment", "initiation of paclitaxel", 52)],
                              {"Treatment": [("Drug", "paclitaxel")]}, [])]
    assert prob == 0.795


def test_clean_trims_the_treatment_lead_and_drops_a_wordless_event() -> None:
    tagged = _event(("Effect", 32, 35), ("Treatment", 52, 76))
    wordless = _event(("Effect", 32, 35), trigger=(76, 77))
    [cleaned] = steps.clean([S], [[tagged, wordless]])
    assert _show(cleaned) == [("Adverse_event", "occur", 40, 0.9, [("Effect", "PLP", 32), ("Treatment", "paclitaxel", 66)],
                               {}, [])]


def test_scope_keeps_the_model_cue_in_the_clause_and_names_its_source() -> None:
    can = Attribute(name="Speculated", value=True, cue=_sp(36, 39))
    ev = _event(("Effect", 32, 35), ("Treatment", 66, 76), attributes=(can,))
    [[out]] = steps.scope([S], [[ev]], steps.StepSettings())
    assert [(a.name, a.value, a.cue.text, a.cue.start, a.source) for a in out.attributes] == [
        ("Speculated", True, "can", 36, "model")]
    assert steps.scope([S], [[ev]], steps.StepSettings(attribute_scope=False)) == [[ev]]


def test_gate_keeps_a_sentence_at_the_threshold_and_only_negated_events_below() -> None:
    ev = _event(("Effect", 32, 35), ("Treatment", 66, 76))
    # "not" is no word of this sentence: a Negated cue on "can" stands in for one
    neg = _event(("Effect", 32, 35), attributes=(Attribute(name="Negated", value=True, cue=_sp(36, 39)),))
    settings = steps.StepSettings(threshold=0.5)
    assert steps.gate([S, S], [[ev], [ev, neg]], [0.5, 0.49], settings) == [([ev], 0.5), ([neg], 0.49)]
    assert steps.gate([S], [[ev]], [None], settings) == [([ev], None)]


def test_join_makes_one_event_of_an_effect_and_a_treatment_event() -> None:
    effect = _event(("Effect", 32, 35), score=0.9)
    treatment = _event(("Treatment", 66, 76), trigger=(46, 51), score=0.5)
    [joined] = steps.join([S], [[treatment, effect]])
    assert _show(joined) == [("Adverse_event", "occur", 40, 0.9, [("Effect", "PLP", 32), ("Treatment", "paclitaxel", 66)],
                              {}, [])]


def test_effect_rule_drops_events_without_arguments_and_weak_effectless_adverse_events() -> None:
    full = _event(("Effect", 32, 35), ("Treatment", 66, 76))
    bare = _event()
    weak = _event(("Treatment", 66, 76), score=0.3)
    strong = _event(("Treatment", 66, 76), score=0.6)
    settings = steps.StepSettings(no_effect_min_prob=0.5)
    assert steps.effect_rule([[full, bare, weak, strong]], settings) == [[full, strong]]


def test_sentence_steps_run_in_order_and_give_the_ungated_events_asked_for() -> None:
    tagged = [([_event(("Effect", 32, 35), ("Treatment", 52, 76))], 0.4)]
    cleaned = _event(("Effect", 32, 35), ("Treatment", 66, 76))
    assert steps.sentence_steps([S], tagged, steps.StepSettings()) == ([([cleaned], 0.4)], [[]])
    high = steps.StepSettings(threshold=0.5)
    assert steps.sentence_steps([S], tagged, high) == ([([], 0.4)], [[]])
    assert steps.sentence_steps([S], tagged, high, ungated=[True]) == ([([], 0.4)], [[cleaned]])


def test_read_sentences_gives_the_crf_events_after_every_step() -> None:
    from clinex.pv.models import load_model

    decided, ungated = read_sentences(load_model("crf"), [[(0, 77, S)]])
    assert [(_show(evs), p) for evs, p in decided] == [(
        [("Adverse_event", "occur after", 40, 0.6546, [("Treatment", "PLP", 32), ("Treatment", "paclitaxel", 66)],
          {"Treatment": [("Drug", "paclitaxel")]}, [])],
        0.6516,
    )]
    assert ungated == [[]]
    assert read_sentences(load_model("crf"), []) == ([], [])


def test_step_settings_are_the_models_own() -> None:
    from clinex.pv.models import load_model

    crf = load_model("crf")
    settings = steps.StepSettings.of(crf)
    assert (settings.gate is crf.gate_, settings.threshold, settings.attribute_scope, settings.no_effect_min_prob) == (
        True, 0.1316, True, 0.05)
    assert settings.without_gate() == steps.StepSettings(None, 0.0, True, 0.05)


# -- step 4: resolve_sentences -------------------------------------------------------


def test_resolve_sentences_shifts_events_into_the_record_and_resolves_the_drug() -> None:
    u = "Severe PLP developed in two patients."
    text = S + " " + u
    first = _event(("Effect", 32, 35), ("Treatment", 66, 76), score=0.8)
    second = _event(("Effect", 7, 10), trigger=(11, 20), text=u)
    pieces = [(0, 77, S), (78, 115, u)]
    decided = [([first], 0.8), ([second], 0.9)]
    events, prob = resolve_sentences(text, pieces, decided, [[], []], cross_sentence=False)
    assert prob == 0.9
    assert [(e.trigger.text, e.trigger.start, [(a.role, a.span.start, a.source) for a in e.arguments])
            for e in events] == [
        ("occur", 40, [("Effect", 32, None), ("Treatment", 66, None)]),
        ("developed", 89, [("Effect", 85, None)]),
    ]
    events, _ = resolve_sentences(text, pieces, decided, [[], []])
    assert [(a.role, a.span.text, a.span.start, a.source, a.from_sentence) for a in events[1].arguments] == [
        ("Effect", "PLP", 85, None, None), ("Treatment", "paclitaxel", 66, "rule:record.drug.missing", 0)]


# -- whole records: answer_records (the llm kind) ------------------------------------


class _WholeRecords:
    """A model that reads whole records and fails on one (as the llm kind may)."""

    name = "clinex.pv.fake.v1"
    reads_whole_records = True

    def predict_records(self, texts: list[str], ids: list[str] | None = None) -> list[Any]:
        return [LLMError(f"record {i}: no answer") if i == "bad" else [_event(("Effect", 32, 35))]
                for i in ids or []]


def test_answer_records_keeps_each_answer_and_reports_a_failed_record() -> None:
    failed: list[tuple[str, str]] = []
    got = answer_records(_WholeRecords(), [(ID, S), ("bad", S)], lambda rid, exc: failed.append((rid, str(exc))))
    assert got == {0: ([_event(("Effect", 32, 35))], None)}
    assert failed == [("bad", "[CLX009] record bad: no answer")]
    with pytest.raises(LLMError, match="record bad: no answer"):
        answer_records(_WholeRecords(), [("bad", S)], None)


def test_extract_records_leaves_a_whole_record_model_s_answer_as_it_is() -> None:
    out = extract_records([(ID, S), ("blank", "  ")], model=_WholeRecords())
    assert [(r.id, r.model, r.event_probability, _show(list(r.events))) for r in out] == [
        (ID, "clinex.pv.fake.v1", None, [("Adverse_event", "occur", 40, 0.9, [("Effect", "PLP", 32)], {}, [])]),
        ("blank", "clinex.pv.fake.v1", None, []),
    ]


# -- step 5: as_record; pairs ----------------------------------------------------------


def test_as_record_names_the_model_and_drops_weak_triggers() -> None:
    strong = _event(("Effect", 32, 35), score=0.9, source="clinex.pv.onnx.v2:joint")
    weak = _event(("Treatment", 66, 76), trigger=(46, 51), score=0.2)
    rec = as_record(ID, S, ([strong, weak], 0.785), "clinex.pv.onnx.v2", 0.5, None)
    assert rec == SentenceEvents(id=ID, text=S, events=(strong.model_copy(update={"source": "clinex.pv.onnx.v2"}),),
                                 model="clinex.pv.onnx.v2", event_probability=0.785)
    assert as_record(ID, S, ([], None), "m", 0.0, 12).offset == 12


def test_record_pairs_is_the_last_step() -> None:
    rec = SentenceEvents(id=ID, text=S, events=(_event(("Effect", 32, 35), ("Treatment", 66, 76)),))
    assert record_pairs(rec) == [Pair(drug="paclitaxel", drug_text="paclitaxel", reaction="plp", reaction_text="PLP",
                                      event_type="Adverse_event", evidence=((0, 77),))]


def test_every_model_kind_declares_how_it_reads_records() -> None:
    from clinex.pv.models.crf import CRFModel
    from clinex.pv.models.decoding import TagDecodingMixin
    from clinex.pv.models.llm import LLMExtractor

    assert (CRFModel.reads_whole_records, TagDecodingMixin.reads_whole_records, LLMExtractor.reads_whole_records) == (
        False, False, True)
    assert all(callable(k.predict_records) for k in (CRFModel, TagDecodingMixin, LLMExtractor))
