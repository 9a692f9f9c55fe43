"""QA defects of the PHEE part: no-drug text, one record = one unit, CLI errors, overwrite rules."""

from __future__ import annotations

import builtins
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from clinex.errors import ModelError
from clinex.pv.formats.phee_json import parse_phee_line, read_phee_json
from clinex.pv.models import load_model, shipped_model_dir
from clinex.pv.models.crf import CRFModel
from clinex.pv.pipeline import extract_record, extract_records

ROOT = Path(__file__).resolve().parents[2]
S1 = "A 54-year-old man, treated with amiodarone, developed thyrotoxicosis."
S2 = "Gynaecomastia is a rarely reported adverse drug reaction due to isoniazid therapy."
NO_DRUG = ("The weather was nice today.", "Table 1.", "CASE REPORT")


# --- 1. no forced trigger without evidence ------------------------------------------------
@pytest.mark.parametrize("text", NO_DRUG)
def test_text_without_drug_event_gets_no_event(text: str) -> None:
    assert extract_record("x", text, model="crf").events == ()


def test_forced_trigger_gate_is_a_model_setting() -> None:
    model = CRFModel.load(shipped_model_dir("crf"))
    assert model.fallback_gate == "evidence"
    model.fallback_gate = "always"  # the old behaviour: every sentence gets an event
    (ev,), _ = model.predict_one_detailed("The weather was nice today.")  # before the sentence gate
    assert ev.score is not None and ev.score < 0.5  # the forced trigger's own probability
    assert model.predict_one("The weather was nice today.") == []  # the sentence gate drops it
    model.fallback_gate = "sometimes"
    with pytest.raises(ModelError, match="fallback_gate must be one of evidence, always"):
        model.fit([])


def test_min_trigger_prob_option(cli) -> None:
    (ev,) = extract_record("x", S1, model="crf").events
    assert 0.5 < ev.score < 0.95
    res = cli("pv", "extract", "--model", "crf", "-o", "-", "--min-trigger-prob", "0.95", S1)
    assert res.code == 0, res.stderr
    assert parse_phee_line(res.stdout.strip()).events == ()
    res = cli("pv", "extract", "--model", "crf", "-o", "-", "--min-trigger-prob", "0.5", S1)
    assert len(parse_phee_line(res.stdout.strip()).events) == 1
    res = cli("pv", "extract", "--model", "crf", "--min-trigger-prob", "1.5", S1)
    assert res.code == 2 and "--min-trigger-prob must be in [0, 1]" in res.stderr


# --- 3. a JSON-lines record is one unit -----------------------------------------------------
def test_json_record_is_not_split_but_plain_text_is(cli, tmp_path: Path) -> None:
    whole = S2 + " " + S1
    src = tmp_path / "in.jsonl"
    src.write_text(json.dumps({"id": "r1", "text": whole}) + "\n", encoding="utf-8")
    res = cli("pv", "extract", "--model", "crf", "-i", str(src), "-o", "-")
    assert res.code == 0, res.stderr
    (item,) = [parse_phee_line(line) for line in res.stdout.splitlines()]
    assert (item.id, item.text) == ("r1", whole)
    direct = extract_record("r1", whole, model="crf")

    def key(it):  # score and source are not part of PHEE JSON
        return [(e.event_type, e.trigger.start, e.trigger.end, [(a.role, a.span.start) for a in e.arguments])
                for e in it.events]

    assert key(item) == key(direct) and len(direct.events) >= 1
    txt = tmp_path / "in.txt"
    txt.write_text(whole + "\n", encoding="utf-8")
    res = cli("pv", "extract", "--model", "crf", "-i", str(txt), "-o", "-")
    items = [parse_phee_line(line) for line in res.stdout.splitlines()]
    assert [(i.id, i.text) for i in items] == [("in_1", S2), ("in_2", S1)]


def test_phee_record_starting_with_number_is_one_unit(shared_data: Path) -> None:
    (gold,) = [s for s in read_phee_json(shared_data / "phee" / "json" / "dev.json") if s.id == "10456689_2"]
    assert gold.text.startswith("1.\n")
    pred = extract_record(gold.id, gold.text, model="crf")
    assert pred.text == gold.text
    assert all(e.trigger.text != "1" for e in pred.events)


def test_cli_extract_then_evaluate_equals_bench(cli, tmp_path: Path, shared_data: Path) -> None:
    lines = (shared_data / "phee" / "json" / "dev.json").read_text(encoding="utf-8").splitlines(keepends=True)
    gold = tmp_path / "dev100.json"
    gold.write_text("".join(lines[:100]), encoding="utf-8")
    pred = tmp_path / "p.json"
    res = cli("pv", "extract", "--model", "crf", "-i", str(gold), "-o", str(pred))
    assert res.code == 0, res.stderr
    res = cli("pv", "evaluate", "--gold", str(gold), "--pred", str(pred), "--json")
    assert res.code == 0, res.stderr
    cli_scores = json.loads(res.stdout)
    bench = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "pv.py"), "--dev", str(gold), "--repeat", "1", "--cli-runs", "0",
         "--no-sharing"],  # the scores only: the timing figures are the bench's own business
        capture_output=True, text=True, check=True, timeout=300,
    )
    summary = json.loads(bench.stdout.strip().splitlines()[-1])
    assert summary["dev_sentences"] == 100
    assert len(cli_scores) > 150
    assert {k: summary[k] for k in cli_scores} == cli_scores


# --- 6. / 7. train errors ------------------------------------------------------------------
def test_train_transformer_without_torch(cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_import = builtins.__import__

    def no_torch(name: str, *args, **kwargs):
        if name.split(".")[0] in ("torch", "transformers"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_torch)
    train = tmp_path / "train.json"
    train.write_text("", encoding="utf-8")
    res = cli("pv", "train", "--model", "transformer", "--train", str(train), "--out", str(tmp_path / "m"))
    assert res.code == 2
    assert "[CLX006]" in res.stderr
    assert "install the train extra: pip install 'clinex[train]'" in res.stderr
    assert "Traceback" not in res.stderr + res.stdout


def test_train_unknown_param_lists_valid_names(cli, tmp_path: Path) -> None:
    train = tmp_path / "train.json"
    train.write_text("", encoding="utf-8")
    res = cli("pv", "train", "--train", str(train), "--out", str(tmp_path / "m"), "--param", "foo=1")
    assert res.code == 2 and "[CLX001]" in res.stderr
    assert "unknown --param foo for --model crf; valid names: c1, c2, max_iterations" in res.stderr
    assert "fallback_gate" in res.stderr and "Traceback" not in res.stderr


# --- 8. / 9. / 10. writers -------------------------------------------------------------------
def test_unwritable_output_is_a_clean_error(cli, tmp_path: Path) -> None:
    blocker = tmp_path / "file.txt"
    blocker.write_text("x", encoding="utf-8")
    target = blocker / "out.json"
    res = cli("pv", "extract", "--model", "crf", "-o", str(target), S1)
    assert res.code == 2
    assert f"[CLX001] {target}: cannot write the output file" in res.stderr
    res = cli("pv", "extract", "--model", "crf", "--format", "brat", "-o", str(target), S1)
    assert res.code == 2 and f"{target}: cannot create the output folder" in res.stderr


def test_phee_output_mode_follows_umask(cli, tmp_path: Path) -> None:
    old = os.umask(0o027)
    try:
        res = cli("pv", "extract", "--model", "crf", "-o", str(tmp_path / "a.json"), S1)
    finally:
        os.umask(old)
    assert res.code == 0, res.stderr
    assert (tmp_path / "a.json").stat().st_mode & 0o777 == 0o640


def test_empty_text_gives_one_record_without_events(cli, tmp_path: Path) -> None:
    res = cli("pv", "extract", "--model", "crf", "")
    assert res.code == 0 and res.stdout == "model: clinex.pv.crf.v1\ntext_1: \n  (no events)\n"
    out = tmp_path / "e.json"
    res = cli("pv", "extract", "--model", "crf", "", "-o", str(out))
    assert res.code == 0
    assert out.read_text(encoding="utf-8") == (
        '{"id": "text_1", "context": "", "is_mult_event": false, "annotations": [{"events": []}], '
        '"model": "clinex.pv.crf.v1", "offset": 0}\n'
    )
    assert [(i.id, i.text, i.events) for i in extract_records([("a", ""), ("b", " ")], model="crf")] == [
        ("a", "", ()),
        ("b", " ", ()),
    ]


# --- 11. bench without data ------------------------------------------------------------------
def test_bench_without_dev_file_exits_2(tmp_path: Path) -> None:
    res = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "pv.py"), "--dev", str(tmp_path / "none.json")],
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert res.returncode == 2
    assert "pass --dev PATH" in res.stderr and "Traceback" not in res.stderr


# --- 12. overwrite rules ----------------------------------------------------------------------
def test_existing_outputs_need_force(cli, tmp_path: Path) -> None:
    out = tmp_path / "o.json"
    out.write_text("keep\n", encoding="utf-8")
    res = cli("pv", "extract", "--model", "crf", "-o", str(out), S1)
    assert res.code == 2 and f"{out}: output file exists; pass --force to replace it" in res.stderr
    assert out.read_text(encoding="utf-8") == "keep\n"
    res = cli("pv", "extract", "--model", "crf", "-o", str(out), "--force", S1)
    assert res.code == 0 and parse_phee_line(out.read_text(encoding="utf-8")).id == "text_1"
    brat = tmp_path / "brat"
    assert cli("pv", "extract", "--model", "crf", "--format", "brat", "-o", str(brat), S1).code == 0
    res = cli("pv", "extract", "--model", "crf", "--format", "brat", "-o", str(brat), S1)
    assert res.code == 2 and "pass --force to replace it" in res.stderr
    assert cli("pv", "extract", "--model", "crf", "--format", "brat", "-o", str(brat), "--force", S2).code == 0
    assert (brat / "text_1.txt").read_text(encoding="utf-8") == S2 + "\n"
    model = tmp_path / "model"
    model.mkdir()
    (model / "model.json").write_text("{}", encoding="utf-8")
    res = cli("pv", "train", "--train", str(out), "--out", str(model))
    assert res.code == 2 and f"{model}: model folder exists and is not empty; pass --force" in res.stderr
    other = tmp_path / "notes"
    other.mkdir()
    (other / "a.txt").write_text("x", encoding="utf-8")
    res = cli("pv", "train", "--train", str(out), "--out", str(other), "--force")
    assert res.code == 2 and "holds files but no model.json; refusing to replace it" in res.stderr


# --- 14. evaluate output, folder input ---------------------------------------------------------
def test_evaluate_flat_json_nested_and_coverage_warning(cli, tmp_path: Path) -> None:
    gold = tmp_path / "gold.json"
    items = extract_records([("a", S1), ("b", S2)], model=load_model("crf"))
    from clinex.pv.formats.phee_json import write_phee_json

    write_phee_json(items, gold)
    pred = tmp_path / "pred.json"
    write_phee_json(items[:1], pred)
    res = cli("pv", "evaluate", "--gold", str(gold), "--pred", str(pred), "--json")
    assert res.code == 0, res.stderr
    flat = json.loads(res.stdout)
    assert flat["trigger.classification.f1"] == pytest.approx(2 * 1.0 * 0.5 / 1.5)  # P 1, R 1/2
    assert "arguments.classification.main.em_f1" in flat and "per_role.Effect.em_f1" in flat
    assert all(not isinstance(v, dict) for v in flat.values())
    assert "warning: predictions for 1 of 2 gold sentences; the rest count as missed" in res.stderr
    res = cli("pv", "evaluate", "--gold", str(gold), "--pred", str(gold), "--json", "--nested")
    nested = json.loads(res.stdout)
    assert nested["trigger"]["classification"]["f1"] == 1.0 and res.stderr == ""


def test_extract_input_folder_says_folder(cli, tmp_path: Path) -> None:
    res = cli("pv", "extract", "--model", "crf", "-i", str(tmp_path))
    assert res.code == 2 and f"{tmp_path}: is a folder" in res.stderr


# --- 2. a second event of the other type --------------------------------------------------------
def test_second_event_of_other_type_is_kept() -> None:
    text = "Amiodarone caused hypothyroidism, and levothyroxine improved her symptoms."
    events = extract_record("x", text, model="crf").events
    assert [(e.event_type, e.trigger.text) for e in events] == [
        ("Adverse_event", "caused"),
        ("Potential_therapeutic_event", "improved"),
    ]
    assert [(a.role, a.span.text) for a in events[0].arguments] == [
        ("Treatment", "Amiodarone"),
        ("Effect", "hypothyroidism"),
    ]
    assert [(a.role, a.span.text) for a in events[1].arguments] == [("Treatment", "levothyroxine")]
    model = CRFModel.load(shipped_model_dir("crf"))
    model.other_type_trigger_min = 1.1  # off: the tagger's single event with both drugs ...
    (raw,), _ = model.predict_ungated([text])[0]
    assert [a.span.text for a in raw.arguments if a.role == "Treatment"] == ["Amiodarone", "levothyroxine"]
    # ... is one event per clause after clinex.pv.links.split_links (issue 23)
    assert [(e.event_type, e.trigger.text, [a.span.text for a in e.main("Treatment")])
            for e in model.predict_one(text)] == [
        ("Adverse_event", "caused", ["Amiodarone"]), ("Potential_therapeutic_event", "improved", ["levothyroxine"])]


def test_empty_jsonl_warns_and_empty_dev_is_refused(cli, tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("", encoding="utf-8")
    out = tmp_path / "out.json"
    res = cli("pv", "extract", "--model", "crf", "-i", str(empty), "-o", str(out))
    assert res.code == 0 and out.read_text() == ""
    assert f"warning: {empty}: no records (empty JSON lines input)" in res.stderr
    train = tmp_path / "train.json"
    train.write_text(
        '{"id": "1", "context": "Rash after aspirin.", "annotations": [{"events": [{"event_type": '
        '"Adverse_event", "Trigger": {"text": [["after"]], "start": [[5]]}}]}]}\n',
        encoding="utf-8",
    )
    res = cli("pv", "train", "--train", str(train), "--dev", str(empty), "--out", str(tmp_path / "m"))
    assert res.code == 2
    assert f"[CLX001] {empty}: no dev sentences in the file; leave --dev out" in res.stderr
    assert not (tmp_path / "m").exists()


def test_plain_text_sentence_records_carry_their_offset_in_the_file(cli, tmp_path: Path) -> None:
    """A .txt input is cut into sentence records; each names where it starts in the file,
    so an event span maps back to the document (offset + span start), and the offset
    round-trips through PHEE JSON; JSON-lines records (their own documents) carry none."""
    from clinex.pv.formats.phee_json import read_phee_json

    text = "A 60-year-old man developed rash after amoxicillin. He recovered.\n\nNo events here.\n"
    src = tmp_path / "case.txt"
    src.write_text(text, encoding="utf-8")
    out = tmp_path / "case.json"
    res = cli("pv", "extract", "--model", "crf", "-i", str(src), "-o", str(out))
    assert res.code == 0, res.stderr
    items = read_phee_json(out)
    assert [(i.id, i.offset, i.text) for i in items] == [
        ("case_1", 0, "A 60-year-old man developed rash after amoxicillin."),
        ("case_2", 52, "He recovered."),
        ("case_3", 67, "No events here."),
    ]
    assert all(text[i.offset : i.offset + len(i.text)] == i.text for i in items)
    drug = items[0].events[0].main("Treatment")[0].span
    assert text[items[0].offset + drug.start : items[0].offset + drug.end] == "amoxicillin"
    jl = tmp_path / "r.jsonl"
    jl.write_text('{"id": "r1", "text": "Rash after amoxicillin."}\n', encoding="utf-8")
    res = cli("pv", "extract", "--model", "crf", "-i", str(jl), "-o", str(tmp_path / "r.json"))
    assert res.code == 0 and [i.offset for i in read_phee_json(tmp_path / "r.json")] == [None]


ABSTRACT = (
    "A 45-year-old woman developed Stevens-Johnson syndrome after lamotrigine. Her rash resolved after "
    "treatment with intravenous immunoglobulin. Two months later she developed hepatotoxicity on valproate. "
    "Clozapine caused agranulocytosis in a second patient. No neutropenia was seen with olanzapine."
)


def test_a_record_of_several_sentences_is_read_sentence_by_sentence() -> None:
    """Stop 19: an abstract given as one JSON record got 2 events, one making IVIG a cause
    of SJS; read sentence by sentence it gets the 5 events, offsets into the record."""
    (item,) = extract_records([("abs", ABSTRACT)])
    got = [(e.event_type, e.trigger.start, [(a.role, a.span.text) for a in e.arguments if a.role != "Subject"],
            [a.name for a in e.attributes]) for e in item.events]
    assert got == [
        ("Adverse_event", 20, [("Effect", "Stevens-Johnson syndrome"), ("Treatment", "lamotrigine")], []),
        ("Potential_therapeutic_event", 92, [("Effect", "rash resolved"), ("Treatment", "intravenous immunoglobulin")], []),
        ("Adverse_event", 162, [("Effect", "hepatotoxicity"), ("Treatment", "valproate")], []),
        ("Adverse_event", 211, [("Treatment", "Clozapine"), ("Effect", "agranulocytosis")], []),
        ("Adverse_event", 274, [("Effect", "neutropenia"), ("Treatment", "olanzapine")], ["Negated"]),
    ]
    assert all(ABSTRACT[a.span.start : a.span.end] == a.span.text for e in item.events for a in e.arguments)
    assert item.text == ABSTRACT and item.offset is None
