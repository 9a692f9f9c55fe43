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
    assert body["model"] == "clinex.pv.llm.v1:scripted"
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
    assert rows == [("good_1", 1, "clinex.pv.llm.v1:scripted")]


KEY = "sk-web-91ce-secret"


def test_web_error_names_the_record_and_never_the_key(server: ScriptedServer, monkeypatch: pytest.MonkeyPatch) -> None:
    from fastapi.testclient import TestClient

    from clinex.web.app import create_app

    monkeypatch.setenv("CLINEX_LLM_API_KEY", KEY)
    server.script([{"match": "", "responses": [{"status": 401, "error": "Incorrect API key provided: {key}"}]}])
    client = TestClient(create_app())
    resp = client.post("/api/pv/extract", json={"text": S1, "model": "llm"})
    assert resp.status_code == 422
    assert KEY not in resp.text and server.stats()["auth"] == [f"Bearer {KEY}"]
    msg = resp.json()["error"]["message"] if "error" in resp.json() else resp.text
    assert "document record " in msg and "(HTTP 401: Incorrect API key provided: ***)" in msg


def test_llm_models_refuse_to_be_made_without_a_server(cli, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from clinex.cohort.llm import LLMCohortModel
    from clinex.errors import LLMError
    from clinex.pv.models.llm import LLMExtractor
    from clinex.rob.evidence.llm import LLMEvidenceModel

    monkeypatch.delenv("CLINEX_LLM_BASE_URL")
    want = "[CLX009] no LLM server configured: set CLINEX_LLM_BASE_URL (or --llm-url)"
    for make in (LLMExtractor, LLMEvidenceModel, LLMCohortModel):
        with pytest.raises(LLMError) as exc:
            make()
        assert str(exc.value) == want
    folder = tmp_path / "pats"
    folder.mkdir()
    for i in range(3):
        (folder / f"{i}.txt").write_text("Record date: 2070-01-01\n\nNote.\n", encoding="utf-8")
    res = cli("cohort", "screen", folder, "--model", "llm", "--output", tmp_path / "o.json", "--quiet")
    assert res.code == 2 and res.stderr.count("[CLX009] no LLM server configured") == 1, res.stderr
    assert not (tmp_path / "o.json").exists()


def test_batch_resumed_with_another_llm_model_is_refused(server: ScriptedServer, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    import json

    from clinex.batch import run_batch
    from clinex.errors import InputError

    good = tmp_path / "good.txt"
    good.write_text(S1 + "\n", encoding="utf-8")
    run_batch("pv", [good], tmp_path / "out", model="llm")
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["model"] == "clinex.pv.llm.v1:scripted"
    monkeypatch.setenv("CLINEX_LLM_MODEL", "another-model")
    with pytest.raises(InputError) as exc:
        run_batch("pv", [good], tmp_path / "out", model="llm")
    assert "clinex.pv.llm.v1:scripted" in str(exc.value) and "clinex.pv.llm.v1:another-model" in str(exc.value)
