"""bench/pv_neural.py: input errors give one [CLX...] line and exit 2, no traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "bench" / "pv_neural.py"


def _run(args: list[str], tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        capture_output=True,
        text=True,
        timeout=60,
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
