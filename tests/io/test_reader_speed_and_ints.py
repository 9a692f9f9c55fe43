"""Issue 21: the PHEE JSON reader builds its results without a second pydantic
validation and with the garbage collector paused per batch of lines, and gives the same
objects as validated construction; integers of thousands of digits in ``--param``,
``clinex rob iaa`` records and integer options are ``[CLX]`` / click errors, never a
``ValueError`` traceback."""

from __future__ import annotations

import gc
import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from clinex.errors import ClinexError, FormatError
from clinex.pv.formats import phee_json
from clinex.pv.formats.phee_json import iter_phee_json, parse_phee_line, read_phee_json
from clinex.pv.types import SentenceEvents

BIG = "7" * 5000
CONTEXT = "A 54-year-old man developed rash and fever after amoxicillin and clavulanate."


def _line(i: int = 1, **extra: Any) -> dict[str, Any]:
    ev = {
        "event_id": "E1",
        "event_type": "Adverse_event",
        "Trigger": {"text": [["developed"]], "start": [[18]], "entity_id": ["T5"]},
        "Effect": {"text": [["rash"], ["fever"]], "start": [[28], [37]], "entity_id": ["T6", "T7"]},
        "Subject": {
            "text": [["A 54-year-old man"]], "start": [[0]],
            "Age": {"text": [["54-year-old"]], "start": [[2]], "entity_id": ["T8"]},
        },
        "Treatment": {
            "text": [["amoxicillin", "clavulanate"]], "start": [[49, 65]], "entity_id": ["T4"],
            "Drug": {"text": [["amoxicillin"], ["clavulanate"]], "start": [[49], [65]]},
            "Combination": [{
                "event_id": "E2", "event_type": "Combination",
                "Trigger": {"text": [["and"]], "start": [[61]], "entity_id": ["T12"]},
                "Drug": {"text": [["amoxicillin"], ["clavulanate"]], "start": [[49], [65]],
                         "entity_id": ["T10", "T11"]},
            }],
        },
        "Severity": {"text": [["fever"]], "start": [[37]], "entity_id": ["T13"], "value": "High"},
        "Negated": {"text": [], "start": [], "value": True, "source": ["rule:x"]},
        "model": "crf",
        "trigger_probability": 1,
    }
    return {"id": f"1_{i}", "context": CONTEXT, "is_mult_event": True,
            "annotations": [{"events": [ev]}], "model": "crf", "event_probability": 0, "offset": 3, **extra}


def _validated(value: Any) -> Any:
    """``value`` rebuilt with validating constructors, passing the fields the original
    records as set (what the reader did before it skipped validation)."""
    if isinstance(value, BaseModel):
        return type(value)(**{k: _validated(getattr(value, k)) for k in value.model_fields_set})
    if isinstance(value, tuple):
        return tuple(_validated(v) for v in value)
    if isinstance(value, dict):
        return {k: _validated(v) for k, v in value.items()}
    return value


def _same(a: Any, b: Any, where: str = "$") -> None:
    assert type(a) is type(b), where
    if isinstance(a, BaseModel):
        assert a.model_fields_set == b.model_fields_set, where
        assert list(a.__dict__) == list(b.__dict__), where
        assert (a.__pydantic_extra__, a.__pydantic_private__) == (b.__pydantic_extra__, b.__pydantic_private__)
        for k in a.__dict__:
            _same(a.__dict__[k], b.__dict__[k], f"{where}.{k}")
    elif isinstance(a, tuple | dict):
        assert len(a) == len(b), where
        pairs = zip(a.items(), b.items()) if isinstance(a, dict) else zip(enumerate(a), enumerate(b))
        for (ka, va), (kb, vb) in pairs:
            assert ka == kb, where
            _same(va, vb, f"{where}[{ka}]")
    else:
        assert a == b, where


def test_reader_objects_equal_validated_construction() -> None:
    item = parse_phee_line(json.dumps(_line()), path="p.json", line_no=1)
    want = _validated(item)
    assert item == want
    assert item.model_dump() == want.model_dump()
    assert item.model_dump_json() == want.model_dump_json()
    assert repr(item) == repr(want)
    _same(item, want)
    ev = item.events[0]
    # integer probabilities become floats, as pydantic's float fields make them
    assert (type(ev.score), ev.score, type(item.event_probability)) == (float, 1.0, float)
    assert [(a.name, a.value, a.cue is None, a.source) for a in ev.attributes] == [
        ("Severity", "High", False, None), ("Negated", True, True, "rule:x")
    ]
    assert ev.attributes[0].model_fields_set == {"name", "value", "cue", "entity_id", "source"}
    assert ev.attributes[1].model_fields_set == {"name", "value", "source"}
    assert ev.trigger.model_fields_set == {"fragments"}
    # frozen as before; SentenceEvents stays mutable, with its own fields-set
    with pytest.raises(Exception, match="frozen"):
        ev.trigger.fragments[0].start = 2  # type: ignore[misc]
    other = parse_phee_line(json.dumps(_line(2)))
    item.model = "x"
    assert "model" in item.model_fields_set and other.model == "crf"
    assert other.events[0].trigger.model_fields_set is not ev.trigger.model_fields_set
    assert ev.model_copy(update={"event_id": "E9"}).event_id == "E9"


def test_reader_calls_no_pydantic_validation(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    calls: list[str] = []
    init = BaseModel.__init__

    def counting(self: BaseModel, **data: Any) -> None:
        calls.append(type(self).__name__)
        init(self, **data)

    monkeypatch.setattr(BaseModel, "__init__", counting)
    path = tmp_path / "p.json"
    path.write_text("\n".join(json.dumps(_line(i)) for i in range(3)) + "\n")
    items = read_phee_json(path)
    assert [s.id for s in items] == ["1_0", "1_1", "1_2"] and calls == []
    SentenceEvents(id="a", text="b")
    assert calls == ["SentenceEvents"]


def test_combination_event_id_must_be_a_string() -> None:
    obj = _line()
    obj["annotations"][0]["events"][0]["Treatment"]["Combination"][0]["event_id"] = 5
    with pytest.raises(FormatError) as info:
        parse_phee_line(json.dumps(obj), path="p.json", line_no=4)
    assert str(info.value) == (
        "[CLX002] p.json:4: field 'annotations[0].events[0].Treatment.Combination[0].event_id': "
        "'event_id' must be a string"
    )


def _file(tmp_path: Path, bad: set[int], n: int = 600) -> Path:
    lines = ["{bad" if i in bad else json.dumps(_line(i)) for i in range(1, n + 1)]
    path = tmp_path / "many.json"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_batches_keep_line_order_of_items_and_errors(tmp_path: Path) -> None:
    assert phee_json._BATCH_LINES == 256
    path = _file(tmp_path, {2, 300, 513})
    seen: list[Any] = []
    for item in iter_phee_json(path, "skip", on_error=lambda e: seen.append(e.line)):
        seen.append(item.id)
    want = [f"1_{i}" if i not in (2, 300, 513) else i for i in range(1, 601)]
    assert seen == want
    got: list[str] = []
    with pytest.raises(FormatError) as info:
        for item in iter_phee_json(path):
            got.append(item.id)
    assert got == ["1_1"] and info.value.line == 2
    path = _file(tmp_path, {300})
    got = []
    with pytest.raises(FormatError) as info:
        for item in iter_phee_json(path):
            got.append(item.id)
    assert got == [f"1_{i}" for i in range(1, 300)] and info.value.line == 300


def test_collector_is_restored(tmp_path: Path) -> None:
    path = _file(tmp_path, {300})
    assert gc.isenabled()
    with pytest.raises(ClinexError):
        read_phee_json(path)
    assert gc.isenabled()
    it = iter_phee_json(path, "skip", on_error=lambda e: None)
    next(it)
    assert gc.isenabled()  # not paused while the caller holds an item
    it.close()
    gc.disable()
    try:
        assert len(list(iter_phee_json(path, "skip", on_error=lambda e: None))) == 599
        assert not gc.isenabled()  # a caller's own setting is kept
    finally:
        gc.enable()
    with phee_json._gc_paused():
        with phee_json._gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()


# --------------------------------------------------------------------------- long integers


def _phee_file(tmp_path: Path) -> Path:
    path = tmp_path / "train.json"
    path.write_text(json.dumps(_line()) + "\n")
    return path


def test_pv_train_param_of_5000_digits(cli, tmp_path: Path) -> None:  # noqa: ANN001
    train = _phee_file(tmp_path)
    res = cli("pv", "train", "--model", "crf", "--train", train, "--out", tmp_path / "m", "--param", f"c1={BIG}")
    assert (res.code, res.stdout) == (2, "")
    assert res.stderr == "[CLX001] field '--param c1': integer of 5000 digits; at most 4300 are read\n"
    res = cli("pv", "train", "--model", "crf", "--train", train, "--out", tmp_path / "m",
              "--param", 'c1={"a": [1, ' + BIG + "]}")
    assert res.stderr == "[CLX001] field '--param c1': a[1]: integer of 5000 digits; at most 4300 are read\n"
    res = cli("pv", "train", "--model", "crf", "--train", train, "--out", tmp_path / "m",
              "--param", "c1=" + "[" * 100_000)
    assert (res.code, res.stderr) == (2, "[CLX001] field '--param c1': JSON nested too deeply\n")
    assert not (tmp_path / "m").exists()


@pytest.mark.parametrize("verb", [("pv", "extract", "-i", "{d}/t.txt"), ("cohort", "screen", "{d}/notes")])
def test_integer_options_of_5000_digits_are_clicks_error(cli, tmp_path: Path, verb: tuple[str, ...]) -> None:  # noqa: ANN001
    (tmp_path / "t.txt").write_text("Rash after aspirin.\n")
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "p1.txt").write_text("Record date: 2010-01-01\naspirin\n")
    res = cli(*(v.format(d=tmp_path) for v in verb), "--batch-size", BIG)
    assert (res.code, res.stdout) == (2, "")
    assert ("Invalid value for '--batch-size': Unable to parse input string as an integer, "
            "exceeded maximum size") in res.stderr
    assert "Traceback" not in res.stderr


def test_rob_iaa_record_of_5000_digits_is_reported_and_skipped(cli, tmp_path: Path) -> None:  # noqa: ANN001
    rec = {"document_id": "d1", "domains": [], "overall": "Low", "model": "m"}
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "d1.json").write_text(json.dumps(rec))
    (tmp_path / "b" / "all.jsonl").write_text(
        json.dumps(rec) + "\n" + json.dumps(rec)[:-1] + ', "n": [' + BIG + "]}\n"
    )
    (tmp_path / "b" / "whole.json").write_text('{"document_id": ' + BIG + "}")
    res = cli("rob", "iaa", tmp_path / "a", tmp_path / "b", "--json")
    assert res.code == 0
    warnings = json.loads(res.stdout)["warnings"]
    assert warnings == [
        f"[CLX002] {tmp_path / 'b' / 'all.jsonl'}:2: field 'n[0]': integer of 5000 digits; "
        "at most 4300 are read; skipped",
        f"[CLX002] {tmp_path / 'b' / 'whole.json'}: field 'document_id': integer of 5000 digits; "
        "at most 4300 are read; skipped",
        "no shared document has a text: span agreement not computed",
    ]
    assert res.stderr == "".join(f"warning: {w}\n" for w in warnings)
    assert json.loads(res.stdout)["judgements"][-2] == {
        "scope": "overall", "n": 1, "observed": 1.0, "pabak": 1.0, "kappa": None
    }


def test_cohort_evaluate_scores_file_of_5000_digits_or_deep_nesting(cli, tmp_path: Path) -> None:  # noqa: ANN001
    big, deep = tmp_path / "big.json", tmp_path / "deep.json"
    big.write_text('{"a": ' + BIG + "}")
    deep.write_text("[" * 100_000)
    res = cli("cohort", "evaluate", tmp_path / "x", tmp_path / "y", "--scores", big)
    assert (res.code, res.stderr) == (2, f"[CLX002] {big}: field 'a': integer of 5000 digits; at most 4300 are read\n")
    res = cli("cohort", "evaluate", tmp_path / "x", tmp_path / "y", "--scores", deep)
    assert (res.code, res.stderr) == (2, f"[CLX002] {deep}: JSON nested too deeply\n")
