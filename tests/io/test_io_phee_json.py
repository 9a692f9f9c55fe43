from __future__ import annotations

import json
from pathlib import Path

import pytest

from clinex.errors import EncodingError, FormatError, InputError, OffsetError, SchemaError
from clinex.pv.formats.phee_json import (
    dumps_phee,
    iter_phee_json,
    parse_phee_line,
    read_phee_json,
    to_phee_dict,
    write_phee_json,
)
from clinex.pv.types import Argument, Event, SentenceEvents
from clinex.text import Span

CONTEXT = "A 54-year-old man developed rash and fever after amoxicillin and clavulanate."
#          0         1         2         3         4         5         6         7
#          0123456789012345678901234567890123456789012345678901234567890123456789012345


def _line() -> str:
    ev = {
        "event_id": "E1",
        "event_type": "Adverse_event",
        "Trigger": {"text": [["developed"]], "start": [[18]], "entity_id": ["T5"]},
        "Effect": {"text": [["rash"], ["fever"]], "start": [[28], [37]], "entity_id": ["T6", "T7"]},
        "Subject": {
            "text": [["A 54-year-old man"]], "start": [[0]], "entity_id": ["T3"],
            "Gender": {"text": [["man"]], "start": [[14]], "entity_id": ["T9"]},
            "Age": {"text": [["54-year-old"]], "start": [[2]], "entity_id": ["T8"]},
        },
        "Treatment": {
            "text": [["amoxicillin", "clavulanate"]], "start": [[49, 65]], "entity_id": ["T4"],
            "Drug": {"text": [["amoxicillin"], ["clavulanate"]], "start": [[49], [65]],
                     "entity_id": ["T10", "T11"]},
            "Combination": [{
                "event_id": "E2", "event_type": "Combination",
                "Trigger": {"text": [["and"]], "start": [[61]], "entity_id": ["T12"]},
                "Drug": {"text": [["amoxicillin"], ["clavulanate"]], "start": [[49], [65]],
                         "entity_id": ["T10", "T11"]},
            }],
        },
        "Severity": {"text": [["fever"]], "start": [[37]], "entity_id": ["T13"], "value": "High"},
    }
    return json.dumps({"id": "1_1", "context": CONTEXT, "is_mult_event": True,
                       "annotations": [{"events": [ev]}]})


def test_parse_builds_events_with_offsets() -> None:
    item = parse_phee_line(_line())
    assert item.id == "1_1" and item.text == CONTEXT
    (ev,) = item.events
    assert ev.event_type == "Adverse_event" and ev.event_id == "E1" and ev.trigger_id == "T5"
    assert (ev.trigger.start, ev.trigger.end, ev.trigger.text) == (18, 27, "developed")
    assert [(a.role, a.span.text, a.entity_id) for a in ev.arguments] == [
        ("Effect", "rash", "T6"), ("Effect", "fever", "T7"),
        ("Subject", "A 54-year-old man", "T3"),
        ("Treatment", "amoxicillin clavulanate", "T4"),
    ]
    treat = ev.main("Treatment")[0].span
    assert treat.offsets() == [(49, 60), (65, 76)] and treat.is_discontinuous
    assert [(a.role, a.span.text) for a in ev.sub_arguments["Subject"]] == [
        ("Gender", "man"), ("Age", "54-year-old"),
    ]
    assert [a.span.text for a in ev.sub_arguments["Treatment"]] == ["amoxicillin", "clavulanate"]
    (combo,) = ev.combinations
    assert combo.trigger.text == "and" and combo.event_id == "E2" and combo.trigger_id == "T12"
    assert [(d.role, d.span.start) for d in combo.drugs] == [("Drug", 49), ("Drug", 65)]
    sev = ev.attribute("Severity")
    assert sev.value == "High" and sev.cue.text == "fever" and sev.entity_id == "T13"
    for span in [ev.trigger, treat, sev.cue]:
        for f in span.fragments:
            assert CONTEXT[f.start:f.end] == f.text


def test_round_trip_is_exact_including_key_order() -> None:
    line = _line()
    assert dumps_phee(parse_phee_line(line)) == line


def test_writer_numbers_missing_ids_and_recomputes_is_mult_event(tmp_path: Path) -> None:
    text = "Aspirin caused gastric bleeding."
    ev = Event(
        event_type="Adverse_event",
        trigger=Span.from_offsets(text, (8, 14)),
        arguments=(Argument(role="Treatment", span=Span.from_offsets(text, (0, 7)), entity_id="T4"),
                   Argument(role="Effect", span=Span.from_offsets(text, (15, 31)))),
        sub_arguments={"Treatment": (Argument(role="Drug", span=Span.from_offsets(text, (0, 7))),)},
    )
    item = SentenceEvents(id="x_1", text=text, events=(ev,))
    d = to_phee_dict(item)
    assert d["is_mult_event"] is False
    out = d["annotations"][0]["events"][0]
    assert out["event_id"] == "E1"
    assert out["Trigger"] == {"text": [["caused"]], "start": [[8]], "entity_id": ["T5"]}
    assert out["Treatment"]["entity_id"] == ["T4"]
    assert out["Treatment"]["Drug"] == {"text": [["Aspirin"]], "start": [[0]], "entity_id": ["T6"]}
    assert out["Effect"]["entity_id"] == ["T7"]
    path = tmp_path / "out" / "pred.json"
    assert write_phee_json([item, item], path) == 2
    back = read_phee_json(path)
    assert len(back) == 2 and back[0].events[0].main("Effect")[0].span.text == "gastric bleeding"
    with pytest.raises(InputError, match="refusing to overwrite"):
        write_phee_json([item], path, overwrite=False)


def test_dev_split_round_trips_byte_for_byte(shared_data: Path) -> None:
    path = shared_data / "phee" / "json" / "dev.json"
    items = read_phee_json(path)
    lines = path.read_text(encoding="utf-8").splitlines()
    assert len(items) == len(lines) == 961
    assert [dumps_phee(it) for it in items] == lines
    by_id = {it.id: it for it in items}
    # corpus quirks kept as given: a truncated drug name, fragments out of text order
    (combo,) = by_id["18159131_4"].events[0].combinations
    assert [d.span.text for d in combo.drugs] == ["tacrolimus", "mycophenolate mofeti", "prednisolone"]
    assert combo.drugs[1].span.offsets() == [(115, 135)]
    treat = by_id["2572964_2"].events[0].main("Treatment")[0].span
    assert [f.start for f in treat.fragments] == [159, 72]
    assert treat.text == "heavy betel nut consumption depot neuroleptics"


def _write(tmp_path: Path, data: bytes) -> Path:
    p = tmp_path / "in.json"
    p.write_bytes(data)
    return p


def test_malformed_json_line_names_file_and_line(tmp_path: Path) -> None:
    good = _line().encode()
    p = _write(tmp_path, good + b"\n\n" + b'{"id": "2", "context": \n' + good + b"\n")
    with pytest.raises(FormatError, match=r"\[CLX002\] .*in\.json:3: not valid JSON"):
        read_phee_json(p)
    seen = []
    items = list(iter_phee_json(p, errors="skip", on_error=seen.append))
    assert [it.id for it in items] == ["1_1", "1_1"]
    assert len(seen) == 1 and seen[0].line == 3


def test_skip_mode_reports_to_stderr(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = _write(tmp_path, b"[1, 2]\n" + _line().encode() + b"\n")
    assert [it.id for it in iter_phee_json(p, errors="skip")] == ["1_1"]
    assert "in.json:1: field '$': expected a JSON object, got list" in capsys.readouterr().err


def test_binary_and_non_utf8_files(tmp_path: Path) -> None:
    p = _write(tmp_path, b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    with pytest.raises(EncodingError, match=r"\[CLX003\] .*in\.json:1: not UTF-8"):
        read_phee_json(p)
    p = _write(tmp_path, _line().encode() + b"\n" + b'{"id": "caf\xe9"}\n')
    with pytest.raises(EncodingError, match=r"in\.json:2: not UTF-8 text \(byte 0xe9"):
        read_phee_json(p)
    p = _write(tmp_path, b"\x00\x01\x02")
    with pytest.raises(EncodingError, match="NUL byte"):
        read_phee_json(p)
    with pytest.raises(InputError, match="no such file"):
        read_phee_json(tmp_path / "missing.json")


def test_bad_offsets_and_unknown_names(tmp_path: Path) -> None:
    bad = _line().replace('"start": [[28], [37]]', '"start": [[29], [37]]')
    with pytest.raises(OffsetError, match=r"f\.json:7: field 'annotations\[0\]\.events\[0\]\.Effect\.text\[0\]\[0\]'"):
        parse_phee_line(bad, path="f.json", line_no=7)
    bad = _line().replace('"start": [[37]], "entity_id": ["T13"]', '"start": [[9999]], "entity_id": ["T13"]')
    with pytest.raises(OffsetError, match="9999-10004"):
        parse_phee_line(bad)
    with pytest.raises(SchemaError, match="unknown event type 'ADE'"):
        parse_phee_line(_line().replace('"Adverse_event"', '"ADE"'))
    with pytest.raises(SchemaError, match=r"field '.*Subject': unknown key 'Drug'; valid: text, start, entity_id, Age, Gender"):
        parse_phee_line(_line().replace('"Gender":', '"Drug":'))
    with pytest.raises(SchemaError, match="unknown key 'Outcome'"):
        parse_phee_line(_line().replace('"Effect":', '"Outcome":'))
    with pytest.raises(SchemaError, match="Severity has value 'Huge'"):
        parse_phee_line(_line().replace('"High"', '"Huge"'))
    with pytest.raises(FormatError, match="field 'context': missing or not a string"):
        parse_phee_line('{"id": "1"}')
    with pytest.raises(FormatError, match="2 'text' instances but 1 'start'"):
        parse_phee_line(_line().replace('"start": [[28], [37]]', '"start": [[28]]'))


def test_prediction_without_ids_or_annotations() -> None:
    item = parse_phee_line('{"id": "s", "context": "No events here."}')
    assert item.events == ()
    assert to_phee_dict(item)["annotations"] == [{"events": []}]
