"""PV work stays linear in the input on hostile shapes (issue 21): nested brackets,
long runs without spaces, a run-on sentence of many events."""

from __future__ import annotations

import functools
import time
from typing import Any

import pytest

from clinex.pv.postprocess import drop_wordless_spans, retype_therapeutic
from clinex.pv.scope import apply_attribute_scope
from clinex.pv.types import Argument, Combination, Event
from clinex.text import Span


@functools.lru_cache(maxsize=1)
def _tokenizer() -> Any:
    import spacy

    return spacy.blank("en").tokenizer


def _spacy_tokens(text: str) -> list[tuple[str, str]]:
    return [(t.text, t.whitespace_) for t in _tokenizer()(text)]


def _bounded_tokens(text: str, max_run: int = 100) -> list[tuple[str, str]]:
    from clinex.context_rules import BoundedTokenizer

    doc = BoundedTokenizer(_tokenizer(), max_run=max_run)(text)
    assert doc.text == text
    return [(t.text, t.whitespace_) for t in doc]


@pytest.mark.parametrize(
    "text",
    [
        "She did not develop neutropenia (ANC > 1.5 x 10(9)/L) while on clozapine.",
        "glipizide-trimethoprim/sulfamethoxazole  caused\nhypoglycaemia.",
        "((((aspirin))))  ",
    ],
)
def test_bounded_tokenizer_is_spacy_on_ordinary_text(text: str) -> None:
    assert _bounded_tokens(text) == _spacy_tokens(text)


def test_bounded_tokenizer_cuts_a_long_run_into_words_and_marks() -> None:
    text = "x " + "(" * 3 + "ab" + ")" * 3 + "  y."
    # the 8-character run is over max_run=4: cut by the wrapper, the rest by spaCy
    assert _bounded_tokens(text, max_run=4) == [
        ("x", " "), ("(", ""), ("(", ""), ("(", ""), ("ab", ""), (")", ""), (")", ""), (")", " "),
        (" ", ""), ("y.", ""),
    ]
    # spaCy's own affix rules give the same tokens for this run
    assert _spacy_tokens(text) == _bounded_tokens(text, max_run=4)


def test_bounded_tokenizer_on_10000_nested_pairs_is_fast() -> None:
    text = "(" * 10_000 + "aspirin" + ")" * 10_000
    start = time.process_time()
    tokens = _bounded_tokens(text)
    assert time.process_time() - start < 1.0  # spaCy alone: minutes (quadratic suffix search)
    assert len(tokens) == 20_001 and tokens[10_000] == ("aspirin", "")


def test_bounded_tokenizer_keeps_phee_dev_tokens(shared_data) -> None:
    from clinex.pv.formats.phee_json import read_phee_json

    path = shared_data / "phee" / "json" / "dev.json"
    if not path.is_file():
        pytest.skip("PHEE dev not in shared data")
    texts = [r.text for r in read_phee_json(path)]
    assert len(texts) == 961
    assert all(_bounded_tokens(t) == _spacy_tokens(t) for t in texts)


def _negated_event(text: str) -> Event:
    s = text.index("develop")
    e = text.index("neutropenia")
    return Event(
        event_type="Adverse_event",
        trigger=Span.from_offsets(text, (s, s + 7)),
        arguments=(Argument(role="Effect", span=Span.from_offsets(text, (e, e + 11))),),
    )


def test_scope_on_2000_nested_pairs_is_exact_and_fast() -> None:
    inner = "The patient did not develop neutropenia while on clozapine."
    text = "([{" * 2000 + inner + "}])" * 2000
    start = time.process_time()
    out = apply_attribute_scope(text, [_negated_event(text)])
    assert time.process_time() - start < 3.0  # was 60 s for 20,000 tokens (quadratic)
    cue = 6000 + inner.index("not")
    assert [(a.name, a.value, a.cue.start, a.cue.end, a.cue.text, a.source) for a in out[0].attributes] == [
        ("Negated", True, cue, cue + 3, "not", "rule:neg.not")
    ]


def test_scope_on_a_sentence_over_spacy_max_length() -> None:
    # spaCy's make_doc refuses texts over 1,000,000 characters (E088): the tokenizer is called itself
    inner = "The patient did not develop neutropenia."
    text = "a" * 1_000_001 + " " + inner
    out = apply_attribute_scope(text, [_negated_event(text)])
    assert [(a.name, a.cue.start, a.cue.text) for a in out[0].attributes] == [
        ("Negated", 1_000_002 + inner.index("not"), "not")
    ]


def test_wordless_trigger_and_arguments_are_dropped() -> None:
    text = "([{ The rash ([ after amoxicillin )] and {[ resolved"
    span = lambda s, n=0: Span.from_offsets(text, (text.index(s), text.index(s) + len(s)))  # noqa: E731
    brackets = Event(event_type="Adverse_event", trigger=span("([{"),
                     arguments=(Argument(role="Effect", span=span("rash")),))
    assert drop_wordless_spans(brackets) is None
    ev = Event(
        event_type="Adverse_event",
        trigger=span("after"),
        arguments=(Argument(role="Effect", span=span("The rash")), Argument(role="Treatment", span=span(")]")),
                   Argument(role="Treatment", span=span("amoxicillin"))),
        sub_arguments={"Drug": (Argument(role="Drug", span=span("{[")), Argument(role="Drug", span=span("amoxicillin")))},
        combinations=(Combination(drugs=(Argument(role="Drug", span=span("{[")),)),),
    )
    kept = drop_wordless_spans(ev)
    assert kept is not None
    assert [(a.role, a.span.text) for a in kept.arguments] == [("Effect", "The rash"), ("Treatment", "amoxicillin")]
    assert {r: [a.span.text for a in v] for r, v in kept.sub_arguments.items()} == {"Drug": ["amoxicillin"]}
    assert kept.combinations == ()
    plain = Event(event_type="Adverse_event", trigger=span("after"), arguments=(Argument(role="Effect", span=span("The rash")),))
    assert drop_wordless_spans(plain) is plain


def test_retype_reads_the_three_words_after_an_effectless_trigger() -> None:
    text = "Rituximab induced\n complete   remission of the lymphoma."
    ev = Event(event_type="Adverse_event", trigger=Span.from_offsets(text, (10, 17)),
               arguments=(Argument(role="Treatment", span=Span.from_offsets(text, (0, 9))),))
    assert retype_therapeutic(text, ev).event_type == "Potential_therapeutic_event"
    far = "Rituximab induced a b c remission."
    ev2 = Event(event_type="Adverse_event", trigger=Span.from_offsets(far, (10, 17)),
                arguments=(Argument(role="Treatment", span=Span.from_offsets(far, (0, 9))),))
    assert retype_therapeutic(far, ev2).event_type == "Adverse_event"  # "remission" is the fourth word


def test_extract_on_300_nested_triples_keeps_only_the_real_event() -> None:
    from clinex.pv.pipeline import extract_records, text_records

    inner = "The patient did not develop neutropenia while on clozapine."
    text = "([{" * 300 + inner + "}])" * 300
    out = extract_records([(i, s) for i, s, _ in text_records(text, "x")])
    events = [e for rec in out for e in rec.events]
    # the model also tags bracket runs as a trigger and a Treatment: never PHEE spans, dropped
    assert [(e.event_type, e.trigger.start, e.trigger.text) for e in events] == [("Adverse_event", 920, "develop")]
    ev = events[0]
    assert [(a.span.start, a.span.text) for a in ev.main("Effect")] == [(928, "neutropenia")]
    assert [(a.name, a.value, a.cue.start, a.cue.text, a.source) for a in ev.attributes] == [
        ("Negated", True, 916, "not", "rule:neg.not")
    ]


def _extract_seconds(text: str) -> float:
    from clinex.pv.pipeline import extract_records, text_records

    start = time.perf_counter()
    extract_records([(i, s) for i, s, _ in text_records(text, "x")])
    return time.perf_counter() - start


@pytest.mark.wallclock
def test_20kb_of_nested_brackets_is_linear_and_within_seconds() -> None:
    from clinex.pv.pipeline import extract_records

    extract_records([("w", "Aspirin caused a rash.")])  # load the model and the scope pipeline
    half = _extract_seconds("([{" * 1667 + "word" + "}])" * 1667)  # 10 KB
    full = _extract_seconds("([{" * 3333 + "word" + "}])" * 3333)  # 20 KB
    ordinary = _extract_seconds("A 45-year-old woman developed a rash after amoxicillin. " * 370)  # 20 KB
    assert full < 20.0, full  # was 32 s on the tester's machine, 165 s here (quadratic)
    assert full < 2.6 * half, (half, full)  # linear: twice the text, about twice the time
    assert full < 6.0 * ordinary, (ordinary, full)  # one sub-word token per bracket: ~4x the tokens


def test_texts_over_the_documented_limit_are_refused_before_model_work(monkeypatch) -> None:
    from clinex.errors import FormatError
    from clinex.io import limits
    from clinex.pv.pipeline import extract_records, text_records

    assert limits.MAX_PV_TEXT_CHARS == 1_000_000
    monkeypatch.setattr(limits, "MAX_PV_TEXT_CHARS", 40)
    ok = "Amoxicillin caused a rash. She recovered."  # 41 characters: one over
    assert len(text_records(ok[:40], "note")) == 2
    with pytest.raises(FormatError) as exc:
        text_records(ok, "note")
    assert str(exc.value) == (
        "[CLX002] field 'text': note: 41 characters, more than MAX_PV_TEXT_CHARS = 40 (clinex.io.limits); "
        "split it into several files or JSON-lines records"
    )
    with pytest.raises(FormatError) as exc:
        extract_records([("r1", "Fine."), ("r2", ok)], model="no-such-model-is-loaded")
    assert str(exc.value).startswith("[CLX002] field 'text': record r2: 41 characters, more than")


def test_cli_names_the_file_of_a_text_over_the_limit(tmp_path, monkeypatch, cli) -> None:
    from clinex.io import limits

    monkeypatch.setattr(limits, "MAX_PV_TEXT_CHARS", 40)
    src = tmp_path / "case.txt"
    src.write_text("Amoxicillin caused a rash. She recovered.", encoding="utf-8")
    out = tmp_path / "events.json"
    result = cli("pv", "extract", "--input", src, "--output", out)
    assert result.code == 2
    assert result.stderr.strip() == (
        f"[CLX002] {src}: field 'text': case: 41 characters, more than MAX_PV_TEXT_CHARS = 40 "
        "(clinex.io.limits); split it into several files or JSON-lines records"
    )
    assert not out.exists()
