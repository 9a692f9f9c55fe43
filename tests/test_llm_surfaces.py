"""The ``llm`` kinds on the other surfaces: the web API and ``clinex batch`` (settings from the environment)."""

from __future__ import annotations

from pathlib import Path

import pytest
from llm_server import ScriptedServer

S1 = "Rash after aspirin."
A1 = {"events": [{"event_type": "Adverse_event", "trigger": "after",
                  "arguments": [{"role": "Effect", "text": "Rash"}, {"role": "Treatment", "text": "aspirin"}]}]}


@pytest.fixture(scope="module")
def server():
    with ScriptedServer() as srv:
        yield srv


@pytest.fixture(autouse=True)
def env(server: ScriptedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLINEX_LLM_BASE_URL", server.url)
    monkeypatch.setenv("CLINEX_LLM_MODEL", "scripted")
    monkeypatch.setenv("CLINEX_LLM_CACHE", str(tmp_path / "cache.sqlite"))
    monkeypatch.setenv("CLINEX_LLM_BACKOFF", "0.01")
    monkeypatch.setenv("CLINEX_LLM_TIMEOUT", "2")
    monkeypatch.setenv("CLINEX_LLM_RETRIES", "0")
    server.script([{"match": "Rash after aspirin", "responses": [{"content": A1}]},
                   {"match": "BROKEN", "responses": [{"status": 500, "error": "down"}]},
                   {"match": "", "responses": [{"content": {"events": []}}]}])


def test_web_lists_and_runs_llm(server: ScriptedServer) -> None:
    from fastapi.testclient import TestClient

    from clinex.web.app import create_app

    client = TestClient(create_app())
    models = client.get("/api/models").json()
    assert all("llm" in models[task] for task in ("pv", "rob", "cohort")), models
    resp = client.post("/api/pv/extract", json={"text": S1, "model": "llm"})
    assert resp.status_code == 200, resp.text
    assert server.stats()["requests"] == 1
    body = resp.json()
    assert body["model"] == "clinex.pv.llm.v1"
    event = body["record"]["annotations"][0]["events"][0]
    assert (event["Trigger"]["text"], event["Trigger"]["start"]) == ([["after"]], [[5]])
    assert event["Treatment"]["start"] == [[11]] and event["Effect"]["start"] == [[0]]


def test_batch_pv_llm_reports_the_failed_document_and_goes_on(server: ScriptedServer, tmp_path: Path) -> None:
    from clinex.batch import read_results, run_batch

    good, bad = tmp_path / "good.txt", tmp_path / "bad.txt"
    good.write_text(S1 + "\n", encoding="utf-8")
    bad.write_text("BROKEN input line.\n", encoding="utf-8")
    summary = run_batch("pv", [good, bad], tmp_path / "out", model="llm")
    assert [e.id for e in summary.errors] == ["bad_1"]
    assert "[CLX009]" in summary.errors[0].message and "HTTP 500: down (after 1 attempts)" in summary.errors[0].message
    rows = read_results(tmp_path / "out", "SELECT id, n_events, model FROM results ORDER BY id")
    assert rows == [("good_1", 1, "clinex.pv.llm.v1")]
