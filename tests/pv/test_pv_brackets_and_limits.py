"""QA defects of `clinex pv extract`: unmatched brackets at span edges, malformed
arguments, and one JSON-lines record over MAX_PV_TEXT_CHARS failing a whole file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clinex.pv.postprocess import drop_malformed_spans, drop_wordless_spans, finish
from clinex.pv.types import Argument, Combination, Event
from clinex.text import Span


def _at(text: str, piece: str, nth: int = 0) -> tuple[int, int]:
    start = -1
    for _ in range(nth + 1):
        start = text.index(piece, start + 1)
    return start, start + len(piece)


def _span(text: str, *pieces: str) -> Span:
    return Span.from_offsets(text, [_at(text, p) for p in pieces])


def _arg(text: str, role: str, *pieces: str) -> Argument:
    return Argument(role=role, span=_span(text, *pieces))


def _nested(sentence: str) -> str:
    """``sentence`` inside 5,000 alternating ``([{`` (about 1,700 of each) and their partners."""
    opener = ("([{" * 1700)[:5000]
    return opener + sentence + "".join({"(": ")", "[": "]", "{": "}"}[c] for c in reversed(opener))


def _offsets(event: Event) -> dict[str, list[tuple[int, int, str]]]:
    out = {"trigger": [(event.trigger.start, event.trigger.end, event.trigger.text)]}
    for a in event.arguments:
        out.setdefault(a.role, []).append((a.span.start, a.span.end, a.span.text))
    for main, vals in event.sub_arguments.items():
        for a in vals:
            out.setdefault(f"{main}.{a.role}", []).append((a.span.start, a.span.end, a.span.text))
    return out


def _exact(text: str, event: Event) -> None:
    spans = [event.trigger, *(a.span for a in event.arguments),
             *(a.span for vals in event.sub_arguments.values() for a in vals),
             *(d.span for c in event.combinations for d in c.drugs)]
    for span in spans:
        for f in span.fragments:
            assert text[f.start:f.end] == f.text


# ----------------------------------------------------------------------------- the step


def test_unmatched_edge_brackets_are_trimmed_with_exact_offsets() -> None:
    text = "Patient 3 (rash after amoxicillin) recovered."
    ev = Event(
        event_type="Adverse_event",
        trigger=_span(text, "after"),
        arguments=(_arg(text, "Subject", "Patient 3"), _arg(text, "Effect", "(rash"),
                   _arg(text, "Treatment", "amoxicillin)")),
        sub_arguments={"Treatment": (_arg(text, "Drug", "amoxicillin)"),)},
    )
    out = drop_malformed_spans(text, ev)
    assert out is not None
    assert _offsets(out) == {
        "trigger": [(16, 21, "after")],
        "Subject": [(0, 9, "Patient 3")],
        "Effect": [(11, 15, "rash")],
        "Treatment": [(22, 33, "amoxicillin")],
        "Treatment.Drug": [(22, 33, "amoxicillin")],
    }
    _exact(text, out)


def test_runs_of_brackets_whitespace_and_triggers_are_trimmed() -> None:
    text = "((((( Rash developed after [ amoxicillin ) .)))))"
    ev = Event(
        event_type="Adverse_event",
        trigger=_span(text, "( Rash developed"),  # an unmatched "(" on a trigger too
        arguments=(_arg(text, "Effect", "((((( Rash"), _arg(text, "Treatment", "[ amoxicillin )")),
    )
    out = drop_malformed_spans(text, ev)
    assert out is not None
    assert _offsets(out) == {
        "trigger": [(6, 20, "Rash developed")],
        "Effect": [(6, 10, "Rash")],
        "Treatment": [(29, 40, "amoxicillin")],
    }
    _exact(text, out)


def test_balanced_brackets_stay_and_an_unchanged_event_is_returned_as_is() -> None:
    text = "Serum IL-2 (interleukin-2) rose after (rash) [x] amoxicillin ([high dose])."
    ev = Event(
        event_type="Adverse_event",
        trigger=_span(text, "rose"),
        arguments=(_arg(text, "Effect", "IL-2 (interleukin-2)"), _arg(text, "Effect", "(rash)"),
                   _arg(text, "Treatment", "amoxicillin ([high dose])")),
        sub_arguments={"Treatment": (_arg(text, "Dosage", "([high dose])"),)},
    )
    assert drop_malformed_spans(text, ev) is ev


def test_brackets_pair_across_the_fragments_of_a_discontinuous_span() -> None:
    text = "The (skin rash and the fever) after amoxicillin (oral) )"
    both = Event(event_type="Adverse_event", trigger=_span(text, "after"),
                 arguments=(_arg(text, "Effect", "(skin rash", "fever)"),))
    assert drop_malformed_spans(text, both) is both
    lone = Event(event_type="Adverse_event", trigger=_span(text, "after"),
                 arguments=(_arg(text, "Effect", "(skin rash", "the fever"),))
    out = drop_malformed_spans(text, lone)
    assert out is not None and [a.span.offsets() for a in out.arguments] == [[(5, 14), (19, 28)]]
    assert out.arguments[0].span.text == "skin rash the fever"


def test_mismatched_pairs_are_unmatched() -> None:
    text = "rash (] after ([x)] amoxicillin"
    ev = Event(event_type="Adverse_event", trigger=_span(text, "after"),
               arguments=(_arg(text, "Effect", "rash (]"), _arg(text, "Treatment", "([x)] amoxicillin")))
    out = drop_malformed_spans(text, ev)
    assert out is not None
    # "(]" pairs nothing; in "([x)]" the ")" does not close "[", which "]" then closes
    assert _offsets(out) == {"trigger": [(8, 13, "after")], "Effect": [(0, 4, "rash")],
                             "Treatment": [(15, 31, "[x)] amoxicillin")]}
    _exact(text, out)


def test_empty_arguments_and_a_trigger_left_empty_are_dropped() -> None:
    text = "( rash after amoxicillin )"
    ev = Event(
        event_type="Adverse_event",
        trigger=_span(text, "after"),
        arguments=(_arg(text, "Effect", "( rash"),
                   Argument(role="Treatment", span=Span.from_offsets(text, (0, 1))),
                   Argument(role="Treatment", span=Span.from_offsets(text, (12, 12)))),
        sub_arguments={"Treatment": (_arg(text, "Drug", "amoxicillin )"),)},
    )
    out = drop_malformed_spans(text, ev)
    assert out is not None
    # both Treatments are empty once trimmed and dropped
    assert _offsets(out) == {"trigger": [(7, 12, "after")], "Effect": [(2, 6, "rash")],
                             "Treatment.Drug": [(13, 24, "amoxicillin")]}
    bracket = Event(event_type="Adverse_event", trigger=Span.from_offsets(text, (25, 26)),
                    arguments=(_arg(text, "Effect", "rash"),))
    assert drop_malformed_spans(text, bracket) is None


def test_a_sub_argument_that_is_another_roles_argument_without_its_own_main_is_dropped() -> None:
    text = "Rash developed after amoxicillin and clavulanate for otitis."
    orphan = Event(
        event_type="Adverse_event",
        trigger=_span(text, "developed"),
        arguments=(_arg(text, "Effect", "Rash"),),
        sub_arguments={"Treatment": (_arg(text, "Drug", "Rash"), _arg(text, "Drug", "amoxicillin")),
                       "Subject": (_arg(text, "Disorder", "otitis"),)},
        combinations=(Combination(trigger=_span(text, "and"), drugs=(_arg(text, "Drug", "amoxicillin"),
                                                                     _arg(text, "Drug", "clavulanate"))),),
    )
    out = drop_malformed_spans(text, orphan)
    assert out is not None
    # the Drug "Rash" is the Effect; the drug the model found without its Treatment is kept
    assert _offsets(out) == {"trigger": [(5, 14, "developed")], "Effect": [(0, 4, "Rash")],
                             "Treatment.Drug": [(21, 32, "amoxicillin")], "Subject.Disorder": [(53, 59, "otitis")]}
    assert out.combinations == orphan.combinations
    # with its Treatment there, a Drug on the Effect's characters is left to the model
    # (and PHEE puts a Treatment's indication outside the Treatment span)
    whole = orphan.model_copy(update={
        "arguments": (*orphan.arguments, _arg(text, "Treatment", "amoxicillin and clavulanate")),
        "sub_arguments": {"Treatment": (_arg(text, "Drug", "Rash"), _arg(text, "Disorder", "otitis"))},
    })
    assert drop_malformed_spans(text, whole) is whole


def test_trimming_is_linear_on_thousands_of_nested_brackets() -> None:
    import time

    text = _nested("Rash developed after amoxicillin.")
    ev = Event(event_type="Adverse_event", trigger=_span(text, "developed"),
               arguments=(Argument(role="Effect", span=Span.from_offsets(text, (0, 5004))),))
    t0 = time.perf_counter()
    out = drop_malformed_spans(text, ev)
    assert time.perf_counter() - t0 < 0.5
    assert out is not None and _offsets(out)["Effect"] == [(5000, 5004, "Rash")]


def test_finish_applies_the_step_to_every_model_kind() -> None:
    text = "Patient 3 (rash after amoxicillin) recovered."
    ev = Event(event_type="Adverse_event", trigger=_span(text, "after"),
               arguments=(_arg(text, "Effect", "(rash"), _arg(text, "Treatment", "amoxicillin)")))
    [(events, prob)] = finish([text], [([ev], 0.9)], attribute_scope=False)
    assert prob == 0.9
    assert [_offsets(e) for e in events] == [
        {"trigger": [(16, 21, "after")], "Effect": [(11, 15, "rash")], "Treatment": [(22, 33, "amoxicillin")]}
    ]


def test_phee_gold_spans_are_left_alone_but_one(shared_data: Path) -> None:
    """Of the 4,009 PHEE train + dev events, the step changes one: its Dosage "(200 mg"."""
    from clinex.pv.formats.phee_json import read_phee_json

    changed = []
    for split in ("train", "dev"):
        for item in read_phee_json(shared_data / "phee" / "json" / f"{split}.json"):
            for ev in item.events:
                out = drop_malformed_spans(item.text, ev)
                if out is not ev:
                    changed.append((item.id, ev, out))
    assert [i for i, _, _ in changed] == ["12365708_3"]
    _, before, after = changed[0]
    assert [a.span.text for a in before.sub_arguments["Treatment"]] == ["amiodarone HCl", "(200 mg", "day"]
    assert [a.span.text for a in after.sub_arguments["Treatment"]] == ["amiodarone HCl", "200 mg", "day"]


# ----------------------------------------------------------------------------- the shipped model


def test_extract_trims_the_testers_brackets() -> None:
    from clinex.pv.pipeline import extract_records, text_records

    text = "Patient 3 (rash after amoxicillin) recovered."
    [rec] = extract_records([(i, s) for i, s, _ in text_records(text, "t")])
    assert [_offsets(e) for e in rec.events] == [{
        "trigger": [(16, 21, "after")],
        "Subject": [(0, 9, "Patient 3")],
        "Effect": [(11, 15, "rash")],
        "Treatment": [(22, 33, "amoxicillin")],
        "Treatment.Drug": [(22, 33, "amoxicillin")],
    }]
    nested = "(((((Rash developed after amoxicillin.)))))"
    [rec] = extract_records([("n", nested)])
    assert [(e.trigger.start, e.trigger.text, [(a.role, a.span.start, a.span.text) for a in e.arguments])
            for e in rec.events] == [
        (10, "developed", [("Effect", 5, "Rash"), ("Treatment", 26, "amoxicillin")])
    ]


def test_nested_brackets_give_no_orphan_drug() -> None:
    """1,700-odd ``([{`` around the sentence: the model tags an event with no Treatment and a
    Drug "Rash" at 5000 (written as a Treatment with empty text); the step drops that Drug
    and, with it gone, the sentence gate keeps no event."""
    from clinex.pv.models import load_model
    from clinex.pv.pipeline import extract_records

    text = _nested("Rash developed after amoxicillin.")
    model = load_model("auto")
    [(raw, _)] = model.predict_ungated([text])
    # the model's other two events have a bracket for a trigger ("{([{", "}"): step 0 drops them
    [worded] = [w for e in raw if (w := drop_wordless_spans(e)) is not None]
    assert _offsets(worded) == {"trigger": [(5005, 5014, "developed")], "Effect": [(5000, 5004, "Rash")],
                                "Treatment.Drug": [(5000, 5004, "Rash")]}
    cleaned = drop_malformed_spans(text, worded)
    assert cleaned is not None
    assert _offsets(cleaned) == {"trigger": [(5005, 5014, "developed")], "Effect": [(5000, 5004, "Rash")]}
    [rec] = extract_records([("nest", text)], model=model)
    assert rec.events == ()


# ----------------------------------------------------------------------------- a record over the limit

_LIMIT_MESSAGE = ("field 'text': record big: 1,000,001 characters, more than MAX_PV_TEXT_CHARS = 1,000,000 "
                  "(clinex.io.limits); split it into several files or JSON-lines records")


@pytest.fixture
def pv_over(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``pv_over.jsonl`` in the working folder: records a, big (1,000,001 characters), c."""
    monkeypatch.chdir(tmp_path)
    src = tmp_path / "pv_over.jsonl"
    src.write_text(
        json.dumps({"id": "a", "text": "Rash developed after amoxicillin."}) + "\n"
        + json.dumps({"id": "big", "text": "x" * 1_000_001}) + "\n"
        + json.dumps({"id": "c", "context": "She developed hepatitis after isoniazid."}) + "\n",
        encoding="utf-8",
    )
    return src


def test_jsonl_records_skips_or_raises_on_a_record_over_the_limit(pv_over: Path) -> None:
    from clinex.errors import FormatError
    from clinex.pv.pipeline import jsonl_records

    seen: list[str] = []
    data = pv_over.read_bytes()
    recs = list(jsonl_records(data, path="pv_over.jsonl", on_error=lambda e: seen.append(str(e))))
    assert [(r.id, r.line) for r in recs] == [("a", 1), ("c", 3)]
    assert seen == [f"[CLX002] pv_over.jsonl:2: {_LIMIT_MESSAGE}"]
    with pytest.raises(FormatError) as exc:
        list(jsonl_records(data, path="pv_over.jsonl", errors="raise"))
    assert (exc.value.path, exc.value.line, exc.value.field) == ("pv_over.jsonl", 2, "text")
    assert str(exc.value) == f"[CLX002] pv_over.jsonl:2: {_LIMIT_MESSAGE}"


def test_cli_skips_the_record_over_the_limit(pv_over: Path, cli) -> None:  # noqa: ANN001
    res = cli("pv", "extract", "--model", "crf", "--input", "pv_over.jsonl", "-o", "x.json")
    assert res.code == 1
    lines = res.stderr.splitlines()
    assert lines[0] == f"skipped: [CLX002] pv_over.jsonl:2: {_LIMIT_MESSAGE}"
    assert lines[-1] == "1 bad lines or failed records skipped (see above); exit status 1"
    written = [json.loads(line)["id"] for line in Path("x.json").read_text("utf-8").splitlines()]
    assert written == ["a", "c"]
    strict = cli("pv", "extract", "--model", "crf", "--strict", "--input", "pv_over.jsonl", "-o", "y.json")
    assert (strict.code, strict.stderr.strip()) == (2, f"[CLX002] pv_over.jsonl:2: {_LIMIT_MESSAGE}")
    assert not Path("y.json").exists()


def test_web_upload_skips_the_record_over_the_limit(pv_over: Path) -> None:
    from fastapi.testclient import TestClient

    from clinex.web.app import create_app

    client = TestClient(create_app())
    resp = client.post("/api/pv/upload", params={"filename": "pv_over.jsonl", "model": "crf"},
                       content=pv_over.read_bytes())
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert [d["record"]["id"] for d in body["documents"]] == ["a", "c"]
    assert body["skipped"] == [f"[CLX002] pv_over.jsonl:2: {_LIMIT_MESSAGE}"]


def test_batch_names_file_and_line_of_the_record_over_the_limit(pv_over: Path, cli) -> None:  # noqa: ANN001
    from clinex.batch import read_results, run_batch

    summary = run_batch("pv", [pv_over], pv_over.parent / "out", model="crf", partition_size=1)
    assert (summary.n_items, summary.n_rows) == (2, 2)
    assert [(e.id, e.message) for e in summary.errors] == [
        (f"{pv_over}:2", f"[CLX002] {pv_over}:2: {_LIMIT_MESSAGE}")
    ]
    assert sorted(i for (i,) in read_results(pv_over.parent / "out", "SELECT id FROM results")) == ["a", "c"]
    res = cli("batch", "pv", "pv_over.jsonl", "--output", "out2", "--model", "crf")
    assert res.code == 1
    assert f"skipped pv_over.jsonl:2: [CLX002] pv_over.jsonl:2: {_LIMIT_MESSAGE}" in res.stderr.splitlines()
