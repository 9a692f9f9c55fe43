"""bench/pv_neural.py: input errors give one [CLX...] line and exit 2, no traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "pv_neural.py"


def _run(args: list[str], tmp_path: Path, timeout: int = 60, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=tmp_path,
        env={**os.environ, **env},
    )


def test_missing_model_folder_exits_2_with_clx006(tmp_path: Path) -> None:
    missing = tmp_path / "no_model"
    proc = _run(["--model", str(missing)], tmp_path)
    assert proc.returncode == 2
    assert proc.stderr == f"[CLX006] {missing}: no model.json in the model directory\n"
    assert "Traceback" not in proc.stderr
    assert proc.stdout == ""


def test_missing_dev_file_exits_2_with_clx001(tmp_path: Path) -> None:
    model = tmp_path / "model"
    model.mkdir()
    (model / "model.json").write_text("{}", encoding="utf-8")  # never loaded: dev fails first
    dev = tmp_path / "absent" / "dev.json"
    proc = _run(["--model", str(model), "--dev", str(dev)], tmp_path)
    assert proc.returncode == 2
    assert proc.stderr == f"[CLX001] {dev}: no such file\n"
    assert "Traceback" not in proc.stderr


def test_clinex_phee_fallback_names_its_dev_file(tmp_path: Path) -> None:
    model = tmp_path / "model"
    model.mkdir()
    (model / "model.json").write_text("{}", encoding="utf-8")
    data = tmp_path / "phee"
    proc = _run(["--model", str(model)], tmp_path, CLINEX_PHEE=str(data))
    assert proc.returncode == 2
    assert proc.stderr == f"[CLX001] {data / 'dev.json'}: no such file\n"


def test_missing_train_data_exits_2_before_training(tmp_path: Path) -> None:
    dev = tmp_path / "dev.json"
    dev.write_text("", encoding="utf-8")  # an empty JSON lines file: zero sentences
    train = tmp_path / "train.json"
    out = tmp_path / "out"
    proc = _run(["--train", str(out), "--dev", str(dev), "--train-data", str(train)], tmp_path)
    assert proc.returncode == 2
    assert proc.stderr == f"[CLX001] {train}: no such file\n"
    assert not out.exists()


def _fake_model(tmp_path: Path) -> Path:
    model = tmp_path / "model"
    model.mkdir()
    (model / "model.json").write_text("{}", encoding="utf-8")  # never loaded: the options fail first
    return model


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--decoder", "beam"], "--decoder must be viterbi or argmax; got 'beam'"),
        (["--limit", "0"], "--limit must be at least 1; got 0"),
        (["--limit", "-5"], "--limit must be at least 1; got -5"),
        (["--speed-sentences", "0"], "--speed-sentences must be at least 1; got 0"),
        (["--train-limit", "-1"], "--train-limit must be at least 1; got -1"),
        (["--threads", "0"], "--threads must be at least 1; got 0"),
        (["--cli-runs", "-1"], "--cli-runs must be at least 0; got -1"),
    ],
)
def test_bad_option_values_exit_2_with_clx001(tmp_path: Path, args: list[str], message: str) -> None:
    proc = _run(["--model", str(_fake_model(tmp_path)), *args], tmp_path)
    assert proc.returncode == 2
    assert proc.stderr == f"[CLX001] {message}\n"
    assert proc.stdout == ""


def test_empty_dev_file_exits_2_naming_it(tmp_path: Path) -> None:
    dev = tmp_path / "empty.json"
    dev.write_text("", encoding="utf-8")
    proc = _run(["--model", str(_fake_model(tmp_path)), "--dev", str(dev)], tmp_path)
    assert proc.returncode == 2
    assert proc.stderr == f"[CLX001] {dev}: no dev sentences in the file\n"
    assert proc.stdout == ""


def test_empty_train_data_exits_2_naming_it(tmp_path: Path) -> None:
    dev = tmp_path / "dev.json"
    dev.write_text("", encoding="utf-8")
    train = tmp_path / "train.json"
    train.write_text("\n", encoding="utf-8")
    out = tmp_path / "out"
    proc = _run(["--train", str(out), "--dev", str(dev), "--train-data", str(train)], tmp_path)
    assert proc.returncode == 2
    assert proc.stderr == f"[CLX001] {train}: no training sentences in the file\n"
    assert not out.exists()


def test_default_onnx_model_figures_and_cli_run(tmp_path: Path, shared_data: Path) -> None:
    """The default model (ONNX): dev figures as the scorer gives them, one whole CLI run."""
    import json

    from clinex.pv.evaluate import flatten, score
    from clinex.pv.formats.phee_json import read_phee_json
    from clinex.pv.models import load_model, shipped_model_dir
    from clinex.pv.types import SentenceEvents

    dev_file = shared_data / "phee" / "json" / "dev.json"
    lines = dev_file.read_text(encoding="utf-8").splitlines()[:6]
    dev = tmp_path / "dev6.json"
    dev.write_text("\n".join(lines) + "\n", encoding="utf-8")
    proc = _run(
        ["--model", "auto", "--dev", str(dev), "--cli-runs", "1", "--negatives", str(tmp_path / "none.txt")],
        tmp_path, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    folder = shipped_model_dir("onnx")
    assert (out["kind"], out["variant"], out["dev_sentences"], out["model"]) == ("onnx", "joint", 6, str(folder))
    gold = read_phee_json(dev)
    pred = load_model("onnx").predict([s.text for s in gold])
    flat = flatten(score(gold, [SentenceEvents(id=s.id, text=s.text, events=tuple(p)) for s, p in zip(gold, pred)]))
    assert out["headline"]["trigger.classification.f1"] == round(flat["trigger.classification.f1"], 4)
    assert out["scores"] == pytest.approx(flat, abs=1e-12)
    assert out["cli.runs"] == 1 and len(out["cli.extract_wall_s"]) == 1
    assert out["cli.sentences_per_s"] == round(6 / out["cli.extract_wall_s_median"], 1)
    assert 50 < out["cli.peak_rss_mb"] < 4000
    size = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
    assert out["model_mb"] == round(size / 1e6, 1) and out["targets_met.model_mb"] is True
    assert out["targets_met.cli_sentences_per_s"] is (out["cli.sentences_per_s"] >= 200)
    assert out["train_minutes"] == pytest.approx(11.3539, abs=1e-4)  # the exported checkpoint's (train + dev)


TRAIN_DEV = Path(__file__).resolve().parents[2] / "bench" / "pv_train_dev.py"


def test_pv_train_dev_refuses_an_existing_output_and_a_folder_without_a_model(tmp_path: Path) -> None:
    """bench/pv_train_dev.py (the v2 recipe) checks its folders before any training."""
    out = tmp_path / "v2"
    out.mkdir()
    run = [sys.executable, str(TRAIN_DEV), "--out", str(out), "--calibrated-from", str(tmp_path)]
    proc = subprocess.run(run, capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == f"[CLX001] {out}: output folder exists; choose a new one\n"
    run[3] = str(tmp_path / "new")
    proc = subprocess.run(run, capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr == f"[CLX001] {tmp_path}: no model.json in the train-only model folder\n"
    assert not (tmp_path / "new").exists()
