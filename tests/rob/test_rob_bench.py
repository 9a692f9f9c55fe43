"""bench/rob.py finds its corpus or says how to name it (QA defect 3)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench" / "rob.py"


def _bench_module():
    spec = importlib.util.spec_from_file_location("clinex_bench_rob", BENCH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_missing_corpus_message_suggests_data_option(tmp_path: Path) -> None:
    res = subprocess.run([sys.executable, str(BENCH), "--data", str(tmp_path / "nowhere")],
                         capture_output=True, text=True, timeout=60, check=False)
    assert res.returncode == 1
    assert "--data PATH" in res.stderr and str(tmp_path / "nowhere") in res.stderr


def test_default_corpus_is_shared_data_beside_the_repository(monkeypatch, tmp_path: Path) -> None:
    mod = _bench_module()
    monkeypatch.setenv("CLINEX_DATA", str(tmp_path))
    cands = mod._candidates()
    assert cands == [ROOT.parent / "shared" / "data" / "rob_preliminary", tmp_path / "rob_preliminary"]
    expected = cands[0] if mod._is_corpus(cands[0]) else cands[1]
    assert mod._default_data() == expected
