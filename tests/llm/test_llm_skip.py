"""A record whose LLM reply is garbage is reported by id and skipped; the others are
written and the exit status is 1 -- in `pv extract`, `rob assess`, `cohort screen` and
`clinex batch pv` (issue 21), against the scripted server (tests/llm_server.py)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from llm_server import ScriptedServer

S1 = "Rash after aspirin."
S3 = "Fever after penicillin."
A1 = {"events": [{"event_type": "Adverse_event", "trigger": "after",
                  "arguments": [{"role": "Effect", "text": "Rash"}, {"role": "Treatment", "text": "aspirin"}]}]}
A3 = {"events": [{"event_type": "Adverse_event", "trigger": "after",
                  "arguments": [{"role": "Effect", "text": "Fever"}, {"role": "Treatment", "text": "penicillin"}]}]}
STRING_MESSAGE = {"raw": {"choices": [{"message": "I am not an object"}]}}
SHAPE_ERROR = ("the server's reply is not a chat-completions response (choices.0.message: Input should be a valid "
               "dictionary; is the base URL an OpenAI-compatible /v1 root?)")
LLAMA_CPP_500 = {"status": 500, "error": "1 validation error:\n  {'type': 'literal_error', 'loc': ('body', "
                 "'response_format', 'type'), 'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema'}"}


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
    monkeypatch.setenv("CLINEX_LLM_RETRIES", "1")


def _pv_input(tmp_path: Path) -> Path:
    src = tmp_path / "three.jsonl"
    src.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in
                           (("a1", S1), ("b2", "GARBAGE-CASE sentence."), ("a3", S3))), encoding="utf-8")
    return src


def test_pv_extract_garbage_reply_skipped_others_written(cli, server: ScriptedServer, tmp_path: Path) -> None:
    server.script([{"match": "Rash after", "responses": [{"content": A1}]},
                   {"match": "GARBAGE-CASE", "responses": [STRING_MESSAGE]},
                   {"match": "Fever after", "responses": [{"content": A3}]}])
    pred = tmp_path / "p.json"
    res = cli("pv", "extract", "--input", _pv_input(tmp_path), "--model", "llm", "--output", pred)
    assert res.code == 1, res.stderr
    assert "Traceback" not in res.stderr
    assert (f"skipped: [CLX009] LLM server {server.url} (model 'scripted'): document record b2: "
            + SHAPE_ERROR) in res.stderr
    rows = [json.loads(x) for x in pred.read_text().splitlines()]
    assert [r["id"] for r in rows] == ["a1", "a3"]
    got = [(r["id"], e["Trigger"]["start"], e["Effect"]["text"], e["Effect"]["start"], e["Treatment"]["start"])
           for r in rows for e in r["annotations"][0]["events"]]
    assert got == [("a1", [[5]], [["Rash"]], [[0]], [[11]]), ("a3", [[6]], [["Fever"]], [[0]], [[12]])]


def test_pv_extract_negotiates_with_a_server_that_refuses_json_schema(cli, server: ScriptedServer,
                                                                     tmp_path: Path) -> None:
    refuse = {"json_schema": LLAMA_CPP_500}
    server.script([{"match": "Rash after", "refuse": refuse, "responses": [{"content": A1}]},
                   {"match": "", "refuse": refuse, "responses": [{"content": A3}]}])
    src = tmp_path / "two.jsonl"
    src.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in (("a1", S1), ("a3", S3))),
                   encoding="utf-8")
    pred = tmp_path / "p.json"
    res = cli("pv", "extract", "--input", src, "--model", "llm", "--output", pred, "--no-cache")
    assert res.code == 0, res.stderr
    assert [json.loads(x)["id"] for x in pred.read_text().splitlines()] == ["a1", "a3"]
    formats = server.stats()["formats"]
    # both records may go out before the first refusal comes back; none is retried in the refused form
    assert formats.count("json_object_schema") == 2 and 1 <= formats.count("json_schema") <= 2
    assert len(formats) == formats.count("json_object_schema") + formats.count("json_schema")
    assert "response_format json_object_schema" in res.stderr


def test_batch_pv_garbage_reply_is_an_item_error(server: ScriptedServer, tmp_path: Path) -> None:
    from clinex.batch import read_results, run_batch

    server.script([{"match": "Rash after", "responses": [{"content": A1}]},
                   {"match": "GARBAGE", "responses": [{"raw": {"choices": [{"message": {"content": 42}}]}}]}])
    good, bad = tmp_path / "good.txt", tmp_path / "bad.txt"
    good.write_text(S1 + "\n", encoding="utf-8")
    bad.write_text("GARBAGE input line.\n", encoding="utf-8")
    summary = run_batch("pv", [good, bad], tmp_path / "out", model="llm")
    assert [e.id for e in summary.errors] == ["bad_1"]
    assert summary.errors[0].message.endswith(
        "document record bad_1: the server's reply is not a chat-completions response (choices.0.message.content: "
        "Input should be a valid string; is the base URL an OpenAI-compatible /v1 root?)")
    rows = read_results(tmp_path / "out", "SELECT id, n_events, model FROM results ORDER BY id")
    assert rows == [("good_1", 1, "clinex.pv.llm.v1:scripted")]


COHORT_GOOD = "\nRecord date: 2072-03-03\n\nSpeaks English fluently.\n"
COHORT_BAD = "\nRecord date: 2073-01-01\n\nGARBAGE-CASE note.\n"


def _n2c2(text: str) -> str:
    return (f'<?xml version="1.0" encoding="UTF-8" ?>\n<PatientMatching>\n<TEXT><![CDATA[{text}]]></TEXT>\n'
            "<TAGS>\n</TAGS>\n</PatientMatching>\n")


def test_cohort_screen_garbage_reply_skipped_others_written(cli, server: ScriptedServer, tmp_path: Path) -> None:
    server.script([{"match": "GARBAGE-CASE", "responses": [{"content": "x", "usage": {"prompt_tokens": "many"}}]},
                   {"match": "Criterion ENGLISH:", "responses": [
                       {"content": {"decision": "met", "evidence": ["Speaks English fluently."]}}]},
                   {"match": "", "responses": [{"content": {"decision": "not met", "evidence": []}}]}])
    inputs = tmp_path / "in"
    inputs.mkdir()
    (inputs / "201.xml").write_text(_n2c2(COHORT_GOOD), encoding="utf-8")
    (inputs / "202.xml").write_text(_n2c2(COHORT_BAD), encoding="utf-8")
    out = tmp_path / "o.json"
    res = cli("cohort", "screen", inputs, "--model", "llm", "--output", out, "--quiet")
    assert res.code == 1, res.stderr
    assert "Traceback" not in res.stderr
    assert "[CLX009] LLM server" in res.stderr and "document patient 202 (criterion " in res.stderr
    assert ("the server's reply is not a chat-completions response (usage.prompt_tokens: Input should be a valid "
            "integer;") in res.stderr
    dec = json.loads(out.read_text())
    assert sorted(dec) == ["201"]
    start = COHORT_GOOD.index("Speaks")
    eng = dec["201"]["ENGLISH"]
    assert eng["label"] == "met" and [(e["start"], e["end"]) for e in eng["evidence"]] == [(start, start + 24)]
    assert {k for k, v in dec["201"].items() if v["label"] == "met"} == {"ENGLISH"}


CASE = Path(__file__).parents[1] / "data" / "rob_cases" / "01_relcomide_cough"


def test_rob_assess_garbage_reply_skips_that_report(cli, server: ScriptedServer, tmp_path: Path) -> None:
    import yaml

    key = yaml.safe_load(CASE.with_suffix(".key.yaml").read_text(encoding="utf-8"))
    rules = [{"name": "garbage", "match": "GARBAGE-CASE", "responses": [{"raw": {"choices": "none"}}]}]
    for sq, resp in key["responses"].items():
        answer = {"answer": "NI" if resp == "NA" else resp, "evidence": list(key["evidence"].get(sq, []))}
        rules.append({"name": sq, "match": f"Signalling question {sq} (", "responses": [{"content": answer}]})
    server.script(rules)
    good = tmp_path / "01_relcomide_cough.txt"
    shutil.copy(CASE.with_suffix(".txt"), good)
    bad = tmp_path / "02_garbage.txt"
    bad.write_text("Methods\nGARBAGE-CASE. Patients were randomised to drug or placebo.\n", encoding="utf-8")
    out = tmp_path / "out"
    res = cli("rob", "assess", good, bad, "--model", "llm", "--output", out, "--no-plot")
    assert res.code == 1, res.stderr
    assert "Traceback" not in res.stderr
    assert f"skipped {bad}: [CLX009] LLM server {server.url} (model 'scripted'): document 02_garbage (SQ " in res.stderr
    assert ("the server's reply is not a chat-completions response (choices: Input should be a valid list; is the "
            "base URL an OpenAI-compatible /v1 root?)") in res.stderr
    assert "1 of 2 input(s) skipped" in res.stderr
    assert sorted(p.name for p in out.glob("*.rob.json")) == ["01_relcomide_cough.rob.json"]
    result = json.loads((out / "01_relcomide_cough.rob.json").read_text())
    answers = {a["sq"]: a["response"] for d in result["domains"] for a in d["answers"]}
    # the key's own answers come back wherever the key has evidence to ground
    assert answers["1.1"] == key["responses"]["1.1"] and answers["3.1"] == key["responses"]["3.1"]
