"""Provenance of predictions in every output: model id, event and trigger probability,
and each attribute's source, through PHEE JSON, brat and the CLI listing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clinex.errors import FormatError
from clinex.pv.formats.brat import read_brat, to_ann, write_brat
from clinex.pv.formats.phee_json import dumps_phee, parse_phee_line, to_phee_dict
from clinex.pv.types import Argument, Attribute, Event, SentenceEvents
from clinex.text import Span

TEXT = "The patient did not develop severe neutropenia while on clozapine."


def _item() -> SentenceEvents:
    def sp(word: str) -> Span:
        k = TEXT.index(word)
        return Span.from_offsets(TEXT, (k, k + len(word)))

    ev = Event(
        event_type="Adverse_event",
        trigger=sp("develop"),
        arguments=(
            Argument(role="Subject", span=sp("The patient")),
            Argument(role="Effect", span=sp("severe neutropenia")),
            Argument(role="Treatment", span=sp("clozapine")),
        ),
        sub_arguments={"Treatment": (Argument(role="Drug", span=sp("clozapine")),)},
        attributes=(
            Attribute(name="Negated", value=True, cue=sp("not"), source="rule:neg.not"),
            Attribute(name="Severity", value="High", cue=sp("severe"), source="model"),
        ),
        score=0.8123,
        source="clinex.pv.crf.v1",
    )
    return SentenceEvents(id="s1", text=TEXT, events=(ev,), model="clinex.pv.crf.v1", event_probability=0.9312)


def test_phee_json_carries_and_reads_back_provenance() -> None:
    item = _item()
    d = to_phee_dict(item)
    assert d["model"] == "clinex.pv.crf.v1" and d["event_probability"] == 0.9312
    ev = d["annotations"][0]["events"][0]
    assert ev["model"] == "clinex.pv.crf.v1" and ev["trigger_probability"] == 0.8123
    assert ev["Negated"] == {"text": [["not"]], "start": [[16]], "entity_id": ["T6"], "value": True,
                             "source": ["rule:neg.not"]}
    assert ev["Severity"]["source"] == ["model"]
    back = parse_phee_line(dumps_phee(item))
    assert back.model == item.model and back.event_probability == item.event_probability
    (bev,) = back.events
    assert (bev.score, bev.source) == (0.8123, "clinex.pv.crf.v1")
    assert [(a.name, a.cue.text, a.source) for a in bev.attributes] == [
        ("Negated", "not", "rule:neg.not"), ("Severity", "severe", "model")
    ]


def test_gold_lines_get_no_provenance_keys(shared_data: Path) -> None:
    line = (shared_data / "phee" / "json" / "dev.json").read_text(encoding="utf-8").splitlines()[0]
    assert dumps_phee(parse_phee_line(line)) == line


@pytest.mark.parametrize(
    "patch, field",
    [
        ({"event_probability": 1.5}, "event_probability"),
        ({"model": 3}, "model"),
    ],
)
def test_bad_sentence_provenance_names_the_field(patch: dict, field: str) -> None:
    d = {**to_phee_dict(_item()), **patch}
    with pytest.raises(FormatError, match=field):
        parse_phee_line(json.dumps(d), path="p.json", line_no=7)


def test_bad_attribute_source_names_the_field() -> None:
    d = to_phee_dict(_item())
    d["annotations"][0]["events"][0]["Negated"]["source"] = ["a", "b"]
    with pytest.raises(FormatError, match=r"Negated\.source"):
        parse_phee_line(json.dumps(d))


def test_brat_notes_carry_and_read_back_provenance(tmp_path: Path) -> None:
    item = _item()
    ann = to_ann(item)
    notes = [line for line in ann.splitlines() if line.startswith("#")]
    assert notes == [
        "#1\tAnnotatorNotes E1\tmodel=clinex.pv.crf.v1; trigger_probability=0.8123; event_probability=0.9312; "
        "Negated@16-19=rule:neg.not; Severity@28-34=model",
        "#2\tAnnotatorNotes T5\tClozapine (DrugBank DB00363)",  # the drug's gazetteer entry (clinex.pv.normalise)
    ]
    write_brat(item, tmp_path)
    back = read_brat(tmp_path / "s1.txt")
    assert back.model == "clinex.pv.crf.v1" and back.event_probability == 0.9312
    (bev,) = back.events
    assert (bev.score, bev.source) == (0.8123, "clinex.pv.crf.v1")
    assert sorted((a.name, a.source) for a in bev.attributes) == [("Negated", "rule:neg.not"), ("Severity", "model")]


def test_cli_listing_names_model_probabilities_and_sources(cli) -> None:  # noqa: ANN001
    res = cli("pv", "extract", "--model", "crf", "The patient did not develop neutropenia while on clozapine.")
    assert res.code == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[0] == "model: clinex.pv.crf.v1"
    assert lines[1] == "text_1: The patient did not develop neutropenia while on clozapine."
    assert lines[2].startswith("  event probability 0.")
    assert "     Negated=True cue 'not' [16:19] (rule:neg.not)" in lines


def test_batch_rows_carry_model_and_event_probability(tmp_path: Path) -> None:
    from clinex.batch import read_results, run_batch

    src = tmp_path / "in.jsonl"
    src.write_text(
        '{"id": "a", "text": "The patient did not develop neutropenia while on clozapine."}\n'
        '{"id": "b", "text": "   "}\n',
        encoding="utf-8",
    )
    run_batch("pv", [src], tmp_path / "out", model="crf")
    rows = {r[0]: r[1:] for r in read_results(tmp_path / "out", "SELECT id, model, event_probability, phee_json FROM results")}
    assert rows["a"][0] == "clinex.pv.crf.v1" and 0.0 < rows["a"][1] <= 1.0
    assert rows["b"][:2] == ("clinex.pv.crf.v1", None)
    record = json.loads(rows["a"][2])
    assert record["event_probability"] == rows["a"][1]
    (ev,) = record["annotations"][0]["events"]
    assert ev["Negated"]["source"] == ["rule:neg.not"] and ev["model"] == "clinex.pv.crf.v1"


def test_api_on_several_sentences_keeps_attribute_sources() -> None:
    import clinex.pv

    text = "Informed consent was obtained.  The patient did not develop neutropenia while on clozapine."
    events = clinex.pv.extract(text, model="crf")
    assert [(a.name, a.cue.text, a.cue.start, a.source) for e in events for a in e.attributes] == [
        ("Negated", "not", 48, "rule:neg.not")
    ]
    assert text[48:51] == "not"


def test_batch_folder_with_an_unreadable_file_goes_on(tmp_path: Path) -> None:
    from clinex.batch import read_results, run_batch

    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "a.txt").write_text("Rash developed after amoxicillin.", encoding="utf-8")
    (folder / "b.txt").write_bytes(b"\x00\x01binary")
    (folder / "c.txt").write_text("Hepatitis developed after isoniazid.", encoding="utf-8")
    summary = run_batch("pv", [folder], tmp_path / "out", model="crf")
    assert sorted(r[0] for r in read_results(tmp_path / "out", "SELECT id FROM results")) == ["a_1", "c_1"]
    assert [e.id for e in summary.errors] == [str(folder / "b.txt")]
    assert "binary file (NUL byte)" in summary.errors[0].message


def test_a_model_from_another_folder_is_told_apart(tmp_path: Path) -> None:
    import hashlib
    import shutil

    from clinex.pv.models import load_model, model_id, shipped_model_dir
    from clinex.pv.pipeline import extract_records

    copy = tmp_path / "my_crf"
    shutil.copytree(shipped_model_dir("crf"), copy)
    meta = (copy / "model.json").read_bytes()
    expected = "clinex.pv.crf.v1+" + hashlib.sha1(meta).hexdigest()[:8]
    assert model_id(load_model(str(copy))) == expected
    assert model_id(load_model("crf")) == "clinex.pv.crf.v1"
    (item,) = extract_records([("a", TEXT)], model=str(copy))
    assert item.model == expected and {e.source for e in item.events} == {expected}


def test_a_lone_surrogate_is_one_bad_line_not_a_crash(cli, tmp_path: Path) -> None:  # noqa: ANN001
    src = tmp_path / "s.jsonl"
    src.write_text(
        '{"id": "a", "text": "Rash \\ud800 after amoxicillin."}\n{"id": "b", "text": "Rash developed after amoxicillin."}\n',
        encoding="utf-8",
    )
    out = tmp_path / "o.json"
    res = cli("pv", "extract", "--model", "crf", "-i", src, "-o", out)
    assert res.code == 1
    assert f"skipped: [CLX003] {src}:1: a string holds a lone surrogate escape" in res.stderr
    assert [json.loads(line)["id"] for line in out.read_text(encoding="utf-8").splitlines()] == ["b"]

    from clinex.batch import read_results, run_batch

    summary = run_batch("pv", [src], tmp_path / "out", model="crf")
    assert [r[0] for r in read_results(tmp_path / "out", "SELECT id FROM results")] == ["b"]
    assert [e.id for e in summary.errors] == [f"{src}:1"]


def test_extract_records_names_the_record_with_a_lone_surrogate() -> None:
    from clinex.errors import InputError
    from clinex.pv.pipeline import extract_records

    with pytest.raises(InputError, match="record r7.*lone surrogate"):
        extract_records([("r7", "Rash \ud800 after amoxicillin.")], model="crf")


def test_a_nul_byte_in_one_json_line_spoils_only_that_line(cli, tmp_path: Path) -> None:  # noqa: ANN001
    src = tmp_path / "n.jsonl"
    src.write_bytes(
        b'{"id": "a", "text": "Rash developed after amoxicillin."}\n{"id": "b", "text": "bad\x00line"}\n'
        b'{"id": "c", "text": "Hepatitis developed after isoniazid."}\n'
    )
    out = tmp_path / "o.json"
    res = cli("pv", "extract", "--model", "crf", "-i", src, "-o", out)
    assert res.code == 1 and f"[CLX003] {src}:2: binary data (NUL byte)" in res.stderr
    assert [json.loads(line)["id"] for line in out.read_text(encoding="utf-8").splitlines()] == ["a", "c"]
    binary = tmp_path / "b.jsonl"
    binary.write_bytes(b"\x00\x01\x02 not json\n")
    res = cli("pv", "extract", "--model", "crf", "-i", binary, "-o", tmp_path / "b.json")
    assert res.code == 2 and "binary file (NUL byte)" in res.stderr
