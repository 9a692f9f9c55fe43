"""Integers of any length in JSON lines, PHEE JSON and brat offsets (issue 21): a value
past Python's 4,300-digit int-conversion limit is a ``[CLX]`` error for its line (the
other lines are still read), never a ``ValueError`` traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clinex.errors import FormatError, OffsetError
from clinex.io.textfile import MAX_INT_DIGITS, iter_json_lines, parse_json
from clinex.pv.formats.brat import iter_brat_dir, read_brat, to_ann
from clinex.pv.formats.phee_json import dumps_phee, parse_phee_line, read_phee_json

BIG = "7" * 5000


def test_the_limit_is_pythons_default() -> None:
    import sys

    assert MAX_INT_DIGITS == 4300 == sys.int_info.default_max_str_digits


def test_integers_up_to_the_limit_are_read_and_longer_ones_name_the_field() -> None:
    assert parse_json('{"n": -' + "9" * 4300 + "}")["n"] == -int("9" * 4300)
    with pytest.raises(FormatError) as info:
        parse_json('{"a": {"b": [1, [' + "1" * 4301 + "]]}}", path="x.jsonl", line=4)
    assert str(info.value) == "[CLX002] x.jsonl:4: field 'a.b[1][0]': integer of 4301 digits; at most 4300 are read"
    with pytest.raises(FormatError) as info:
        parse_json("-" + BIG)
    assert str(info.value) == "[CLX002] field '$': integer of 5000 digits; at most 4300 are read"


def test_a_whole_file_syntax_error_names_its_own_line() -> None:
    with pytest.raises(FormatError) as info:
        parse_json('{\n  "a": 1,\n  "b": ,\n}', path="ann.json")
    assert str(info.value) == "[CLX002] ann.json:3: not valid JSON: Expecting value (column 8)"


def test_json_lines_decoder_reports_the_line_and_goes_on() -> None:
    data = ('{"id": 1}\n{"id": "x", "meta": {"k": ' + BIG + '}}\n{"id": 3}\n').encode()
    got = list(iter_json_lines(data, path="t.jsonl"))
    assert [n for n, _ in got] == [1, 2, 3]
    assert got[0][1] == {"id": 1} and got[2][1] == {"id": 3}
    assert str(got[1][1]) == "[CLX002] t.jsonl:2: field 'meta.k': integer of 5000 digits; at most 4300 are read"


def test_pv_extract_skips_the_line_and_writes_the_others(cli, tmp_path: Path) -> None:  # noqa: ANN001
    src = tmp_path / "in.jsonl"
    src.write_text(
        json.dumps({"id": "a", "text": "Rash after amoxicillin."}) + "\n"
        + '{"id": ' + BIG + ', "text": "Fever after aspirin."}\n'
        + json.dumps({"id": "c", "text": "No complaints."}) + "\n",
        encoding="utf-8",
    )
    out = tmp_path / "out.json"
    res = cli("pv", "extract", "--model", "crf", "-i", src, "-o", out)
    assert res.code == 1
    assert f"[CLX002] {src}:2: field 'id': integer of 5000 digits; at most 4300 are read\n" in res.stderr
    assert "Traceback" not in res.stderr and "ValueError" not in res.stderr
    assert [parse_phee_line(line).id for line in out.read_text(encoding="utf-8").splitlines()] == ["a", "c"]


def _phee(start: str) -> str:
    return ('{"id": "s1", "context": "Rash on drug.", "annotations": [{"events": [{"event_type": '
            '"Adverse_event", "Trigger": {"text": [["on"]], "start": [[' + start + "]]}}]}]}")


def test_pv_evaluate_names_file_line_and_field(cli, tmp_path: Path) -> None:  # noqa: ANN001
    gold = tmp_path / "gold.json"
    gold.write_text(_phee("5") + "\n", encoding="utf-8")
    pred = tmp_path / "pred.json"
    pred.write_text(_phee("5") + "\n" + _phee(BIG).replace('"s1"', '"s2"') + "\n", encoding="utf-8")
    res = cli("pv", "evaluate", "--gold", gold, "--pred", pred)
    assert res.code == 2 and res.stdout == ""
    assert res.stderr == (f"[CLX002] {pred}:2: field 'annotations[0].events[0].Trigger.start[0][0]': "
                          "integer of 5000 digits; at most 4300 are read\n")
    # the reader itself skips that line in skip mode
    from clinex.pv.formats.phee_json import iter_phee_json

    errors: list = []
    assert [it.id for it in iter_phee_json(pred, "skip", on_error=errors.append)] == ["s1"]
    assert [e.code for e in errors] == ["CLX002"]
    with pytest.raises(FormatError, match="integer of 5000 digits"):
        read_phee_json(pred)


def test_phee_line_with_long_entity_number_is_written() -> None:
    line = _phee("5").replace('"start": [[5]]', '"start": [[5]], "entity_id": ["T' + BIG + '"]')
    item = parse_phee_line(line)
    assert item.events[0].trigger_id == "T" + BIG
    again = json.loads(dumps_phee(item))
    assert again["annotations"][0]["events"][0]["event_id"] == "E1"  # numbered, no ValueError
    assert again["annotations"][0]["events"][0]["Trigger"]["entity_id"] == ["T" + BIG]


def test_brat_offset_of_thousands_of_digits(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "a.txt").write_text("Rash on drug.\n", encoding="utf-8")
    (tmp_path / "a.ann").write_text("T1\tAdverse_event 5 7\ton\nE1\tAdverse_event:T1\n", encoding="utf-8")
    (tmp_path / "b.txt").write_text("Rash on drug.\n", encoding="utf-8")
    (tmp_path / "b.ann").write_text(f"T1\tAdverse_event 5 7\ton\nT2\tEffect 0 {BIG}\tRash\n", encoding="utf-8")
    with pytest.raises(OffsetError) as info:
        read_brat(tmp_path / "b.txt")
    assert str(info.value) == (f"[CLX004] {tmp_path / 'b.ann'}:2: offset of 5000 digits falls outside "
                               "a text of 13 characters")
    # zeros in front change nothing
    (tmp_path / "b.ann").write_text("T1\tAdverse_event " + "0" * 5000 + "5 7\ton\nE1\tAdverse_event:T1\n",
                                    encoding="utf-8")
    assert read_brat(tmp_path / "b.txt").events[0].trigger.offsets() == [(5, 7)]
    (tmp_path / "b.ann").write_text(f"T1\tAdverse_event 5 7\ton\nT2\tEffect 0 {BIG}\tRash\n", encoding="utf-8")
    assert [it.id for it in iter_brat_dir(tmp_path, errors="skip")] == ["a"]
    assert f"[CLX004] {tmp_path / 'b.ann'}:2: offset of 5000 digits" in capsys.readouterr().err
    # a T id with thousands of digits is written back without a ValueError
    (tmp_path / "a.ann").write_text(f"T{BIG}\tAdverse_event 5 7\ton\nE1\tAdverse_event:T{BIG}\n",
                                    encoding="utf-8")
    assert to_ann(read_brat(tmp_path / "a.txt")) == f"T{BIG}\tAdverse_event 5 7\ton\nE1\tAdverse_event:T{BIG}\n"
