"""Extraction: Python API with the shipped CRF, the extract/train commands, bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from clinex.pv import extract
from clinex.pv.formats.phee_json import parse_phee_line
from clinex.pv.models import load_model, shipped_model_dir

SHARED_PHEE = Path(__file__).resolve().parents[3] / "shared" / "data" / "phee" / "json"
S1 = "A 54-year-old man, treated with amiodarone, developed thyrotoxicosis."
S2 = "Gynaecomastia is a rarely reported adverse drug reaction due to isoniazid therapy."


def _check_offsets(text: str, events) -> None:  # noqa: ANN001
    spans = []
    for ev in events:
        spans.append(ev.trigger)
        spans += [a.span for a in ev.arguments]
        spans += [a.span for subs in ev.sub_arguments.values() for a in subs]
        spans += [a.cue for a in ev.attributes if a.cue is not None]
    for span in spans:
        for f in span.fragments:
            assert text[f.start : f.end] == f.text


def test_shipped_crf_is_in_the_package_and_small() -> None:
    folder = shipped_model_dir("crf")
    assert folder is not None
    assert folder.parts[-4:] == ("clinex", "resources", "models", "pv_crf")
    size = sum(p.stat().st_size for p in folder.iterdir())
    assert size <= 50_000_000
    assert (folder / "MODEL_CARD.md").is_file()


def test_empty_text_gives_no_events() -> None:
    assert extract("", model="crf") == []
    assert extract("  \n ", model="crf") == []


def test_shipped_crf_exact_spans() -> None:
    (ev,) = extract(S1, model="crf")
    assert ev.event_type == "Adverse_event"
    assert (ev.trigger.start, ev.trigger.end, ev.trigger.text) == (44, 53, "developed")
    assert [(a.role, a.span.start, a.span.end) for a in ev.arguments] == [
        ("Subject", 0, 17),
        ("Treatment", 32, 42),
        ("Effect", 54, 68),
    ]
    assert [(a.role, a.span.text) for a in ev.sub_arguments["Subject"]] == [("Age", "54-year-old"), ("Gender", "man")]
    assert [(a.role, a.span.text) for a in ev.sub_arguments["Treatment"]] == [("Drug", "amiodarone")]
    assert ev.source == "clinex.pv.crf.v1" and 0.5 < ev.score <= 1.0


def test_offsets_point_into_multi_sentence_text() -> None:
    text = S2 + "  " + S1
    events = extract(text, model="crf")
    assert [e.event_type for e in events] == ["Adverse_event", "Adverse_event"]
    _check_offsets(text, events)
    second = events[1]
    assert second.trigger.start == len(S2) + 2 + 44
    assert load_model("crf") is load_model("crf")  # cached


def test_cli_example(cli) -> None:  # noqa: ANN001
    res = cli("pv", "extract", "--example", "--model", "crf")
    assert res.code == 0, res.stderr
    assert res.stdout.startswith("model: clinex.pv.crf.v1\nexample_1: A 63-year-old woman developed")
    assert "E1 Adverse_event trigger" in res.stdout
    assert "Effect     'severe hepatotoxicity' [30:51]" in res.stdout


def test_cli_text_and_stdin_to_phee_json(cli) -> None:  # noqa: ANN001
    res = cli("pv", "extract", "--model", "crf", "-o", "-", "-", stdin=S2 + " " + S1 + "\n")
    assert res.code == 0, res.stderr
    items = [parse_phee_line(line) for line in res.stdout.splitlines()]
    assert [i.id for i in items] == ["stdin_1", "stdin_2"]
    assert items[1].text == S1
    assert items[1].events[0].trigger.text == "developed"
    res = cli("pv", "extract", "--model", "crf", "-o", "-", S1)
    assert parse_phee_line(res.stdout.strip()).id == "text_1"


def test_cli_jsonl_batch_skips_bad_line(cli, tmp_path: Path) -> None:  # noqa: ANN001
    src = tmp_path / "in.jsonl"
    src.write_text(
        json.dumps({"id": "a", "text": S1}) + "\n{not json\n" + json.dumps({"id": "b", "text": ""}) + "\n",
        encoding="utf-8",
    )
    out = tmp_path / "out.json"
    res = cli("pv", "extract", "--model", "crf", "--input", str(src), "--output", str(out))
    assert res.code == 1
    assert f"[CLX002] {src}:2: not valid JSON" in res.stderr
    items = [parse_phee_line(line) for line in out.read_text().splitlines()]
    assert [(i.id, len(i.events)) for i in items] == [("a", 1), ("b", 0)]
    # strict mode: the same file is an error (exit 2) naming file and line
    res = cli("pv", "extract", "--model", "crf", "--strict", "-i", str(src), "-o", str(tmp_path / "x.json"))
    assert res.code == 2 and f"{src}:2:" in res.stderr
    # never overwrite the input file
    res = cli("pv", "extract", "--model", "crf", "-i", str(src), "-o", str(src))
    assert res.code == 2 and "refusing to overwrite" in res.stderr
    assert src.read_text(encoding="utf-8").count("\n") == 3


@pytest.mark.parametrize(
    ("data", "message"),
    [(b"Rash\x00\x01after", ":1: binary file"), (b"Rash after\n\xff\xfe aspirin", ":2: not UTF-8")],
)
def test_cli_binary_or_non_utf8_file(cli, tmp_path: Path, data: bytes, message: str) -> None:  # noqa: ANN001
    src = tmp_path / "notes.txt"
    src.write_bytes(data)
    res = cli("pv", "extract", "--model", "crf", "-i", str(src))
    assert res.code == 2
    assert "[CLX003]" in res.stderr and f"{src}{message}" in res.stderr


def test_cli_brat_folder(cli, tmp_path: Path) -> None:  # noqa: ANN001
    from clinex.pv.formats.brat import read_brat

    src = tmp_path / "report.txt"
    src.write_text(S2 + "\n" + S1 + "\n", encoding="utf-8")
    out = tmp_path / "brat"
    res = cli("pv", "extract", "--model", "crf", "-i", str(src), "--format", "brat", "-o", str(out))
    assert res.code == 0, res.stderr
    assert sorted(p.name for p in out.iterdir()) == ["report_1.ann", "report_1.txt", "report_2.ann", "report_2.txt"]
    back = read_brat(out / "report_2.txt")
    assert back.text == S1
    assert [e.trigger.text for e in back.events] == ["developed"]


def test_cli_unknown_model(cli) -> None:  # noqa: ANN001
    res = cli("pv", "extract", "--model", "no-such-model", S1)
    assert res.code == 2 and "[CLX006]" in res.stderr


def test_cli_train_then_extract(cli, tmp_path: Path) -> None:  # noqa: ANN001
    if not (SHARED_PHEE / "train.json").is_file():
        pytest.skip("../shared/data is not beside this checkout")
    train = tmp_path / "train.json"
    dev = tmp_path / "dev.json"
    train.write_text("".join(open(SHARED_PHEE / "train.json", encoding="utf-8").readlines()[:40]), encoding="utf-8")
    dev.write_text("".join(open(SHARED_PHEE / "dev.json", encoding="utf-8").readlines()[:10]), encoding="utf-8")
    model = tmp_path / "model"
    res = cli("pv", "train", "--train", str(train), "--dev", str(dev), "--out", str(model), "--max-iterations", "30")
    assert res.code == 0, res.stderr
    assert "dev trigger.classification.f1:" in res.stdout
    scores = json.loads((model / "dev_scores.json").read_text())
    assert 0.0 <= scores["trigger"]["classification"]["f1"] <= 1.0
    assert json.loads((model / "model.json").read_text())["params"]["max_iterations"] == 30
    res = cli("pv", "extract", "--model", str(model), "-o", "-", S1)
    assert res.code == 0, res.stderr
    item = parse_phee_line(res.stdout.strip())
    _check_offsets(S1, item.events)
    res = cli("pv", "train", "--train", str(train), "--out", str(tmp_path / "m2"), "--model", "crf", "--encoder", "minilm")
    assert res.code == 2 and "--encoder applies to --model transformer only" in res.stderr


def test_cli_jsonl_non_utf8_line_and_all_bad(cli, tmp_path: Path) -> None:  # noqa: ANN001
    src = tmp_path / "mixed.jsonl"
    src.write_bytes(b'{"id": "a", "text": "caf\xe9 rash"}\n' + json.dumps({"id": 7, "text": S2}).encode() + b"\n")
    res = cli("pv", "extract", "--model", "crf", "-i", str(src), "-o", "-")
    assert res.code == 1
    assert f"[CLX003] {src}:1: not UTF-8" in res.stderr
    (item,) = [parse_phee_line(line) for line in res.stdout.splitlines()]
    assert item.id == "7" and item.events[0].event_type == "Adverse_event"
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a"}\n[1, 2]\n', encoding="utf-8")
    res = cli("pv", "extract", "--model", "crf", "-i", str(bad), "-o", str(tmp_path / "o.json"))
    assert res.code == 2
    assert f"{bad}:1: field 'text': missing field" in res.stderr
    assert f"{bad}:2: field '$': expected a JSON object, got list" in res.stderr
    assert "no usable line (2 bad lines)" in res.stderr
    assert not (tmp_path / "o.json").exists()


def test_cli_extract_says_when_a_file_holds_no_text(tmp_path: Path) -> None:
    """Fresh-user check: an empty .txt gave one empty record and said nothing."""
    src = tmp_path / "empty.txt"
    src.write_bytes(b"")
    res = subprocess.run([sys.executable, "-m", "clinex.cli", "pv", "extract", "-i", str(src), "--model", "crf"],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0
    assert res.stderr == f"warning: {src}: no text (0 bytes); one record with no events\n"
    assert "empty_1" in res.stdout and "(no events)" in res.stdout
