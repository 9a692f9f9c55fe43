"""`clinex pv extract --model llm` end to end against the scripted server, scored by `clinex pv evaluate`."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
from llm_server import ScriptedServer

KEY = "sk-pv-0b9d-secret"
S1 = "A 45-year-old woman developed severe rash after aspirin 100 mg."
S2 = "Metoprolol was effective in treating lithium tremor."


def _gold_line(sid: str, text: str, events: list[dict]) -> str:
    return json.dumps({"id": sid, "context": text, "is_mult_event": False, "annotations": [{"events": events}]})


def _arg(text: str, s: str, **subs: str) -> dict:
    node = {"text": [[s]], "start": [[text.index(s)]], "entity_id": ["T1"]}
    for role, sub in subs.items():
        node[role] = {"text": [[sub]], "start": [[text.index(sub)]], "entity_id": ["T2"]}
    return node


GOLD = "\n".join([
    _gold_line("s1", S1, [{"event_id": "E1", "event_type": "Adverse_event", "Trigger": _arg(S1, "developed"),
                           "Subject": _arg(S1, "A 45-year-old woman", Age="45-year-old"),
                           "Treatment": _arg(S1, "aspirin 100 mg", Drug="aspirin"),
                           "Effect": _arg(S1, "severe rash")}]),
    _gold_line("s2", S2, [{"event_id": "E1", "event_type": "Potential_therapeutic_event",
                           "Trigger": _arg(S2, "treating"), "Treatment": _arg(S2, "Metoprolol", Drug="Metoprolol"),
                           "Effect": _arg(S2, "lithium tremor")}]),
]) + "\n"

A1 = {"events": [{"event_type": "Adverse_event", "trigger": "developed", "arguments": [
    {"role": "Subject", "text": "A 45-year-old woman"}, {"role": "Treatment", "text": "aspirin 100 mg"},
    {"role": "Effect", "text": "severe rash"}, {"role": "Effect", "text": "hives"}],
    "sub_arguments": [{"main": "Subject", "role": "Age", "text": "45-year-old"},
                      {"main": "Treatment", "role": "Drug", "text": "aspirin"}],
    "severity": {"cue": "severe", "level": "High"}, "negated": "no"}]}
A2 = {"events": [{"event_type": "Potential_therapeutic_event", "trigger": "effective", "arguments": [
    {"role": "Treatment", "text": "Metoprolol"}, {"role": "Effect", "text": "lithium tremor"}],
    "sub_arguments": [{"main": "Treatment", "role": "Drug", "text": "Metoprolol"}]}]}


@pytest.fixture(scope="module")
def server():
    with ScriptedServer() as srv:
        yield srv


@pytest.fixture
def env(server: ScriptedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("CLINEX_LLM_BASE_URL", server.url)
    monkeypatch.setenv("CLINEX_LLM_MODEL", "scripted")
    monkeypatch.setenv("CLINEX_LLM_API_KEY", KEY)
    monkeypatch.setenv("CLINEX_LLM_CACHE", str(tmp_path / "cache.sqlite"))
    monkeypatch.setenv("CLINEX_LLM_BACKOFF", "0.01")
    monkeypatch.setenv("CLINEX_LLM_TIMEOUT", "2")
    server.script([{"match": "severe rash", "responses": [{"content": "{not json"}, {"content": A1}]},
                   {"match": "lithium tremor", "responses": [{"status": 429, "error": "wait"}, {"content": A2}]}])
    gold = tmp_path / "gold.json"
    gold.write_text(GOLD, encoding="utf-8")
    return gold


def test_pv_extract_llm_end_to_end_and_evaluate(cli, env: Path, server: ScriptedServer, tmp_path: Path) -> None:
    pred = tmp_path / "pred.json"
    res = cli("pv", "extract", "--input", env, "--model", "llm", "--output", pred)
    assert res.code == 0, res.stderr
    # s1: one malformed answer repaired; s2: one 429 retried -> 4 requests
    assert server.stats()["requests"] == 4
    # tokens as the server counts them (words): 3 answered requests, the repair turn carrying
    # the bad answer and the repair request
    from clinex.llm.client import schema_hint
    from clinex.llm.prompts import load_prompt
    from clinex.pv.models.llm import PVAnswer

    pr = load_prompt("pv")
    words = lambda t: len(t.split())  # noqa: E731
    sent = server.stats()["last_bodies"][0]["messages"][0]["content"]
    assert sent == pr.render("system").strip() + "\n" + schema_hint(PVAnswer)  # the keys, also for json_object servers
    assert schema_hint(PVAnswer).startswith('Reply with one JSON object of this shape: {"events": [{"event_type": '
                                            '"Adverse_event"|"Potential_therapeutic_event", "trigger": string, ')
    system = words(sent)
    assert PVAnswer.model_json_schema()["required"] == ["events"]  # "{}" is not an answer
    repair = next(b["messages"][-1]["content"] for b in server.stats()["last_bodies"] if len(b["messages"]) == 4)
    prompt = (system + words(f"Sentence: {S1}")) * 2 + words("{not json") + words(repair) + system + words(f"Sentence: {S2}")
    completion = words("{not json") + words(json.dumps(A1)) + words(json.dumps(A2))
    # grounded: s1 trigger + 3 arguments + 2 sub-arguments + the severity cue, s2 trigger + 2 + 1;
    # 'hives' and the negation cue 'no' (not a word of s1: too short for a fuzzy match) dropped
    assert (f"LLM: 2 answers, 4 requests, 0 from cache; {prompt} prompt + {completion} completion tokens; "
            "11 spans grounded (0 fuzzy), 2 ungrounded dropped") in res.stderr
    rows = [json.loads(x) for x in pred.read_text().splitlines()]
    ev1 = rows[0]["annotations"][0]["events"][0]
    assert ev1["event_type"] == "Adverse_event"
    assert ev1["Trigger"]["start"] == [[20]] and ev1["Trigger"]["text"] == [["developed"]]
    assert ev1["Effect"]["text"] == [["severe rash"]] and ev1["Effect"]["start"] == [[30]]  # 'hives' dropped
    assert ev1["Treatment"]["Drug"]["start"] == [[48]] and ev1["Subject"]["Age"]["start"] == [[2]]
    assert (ev1["Severity"]["text"], ev1["Severity"]["start"], ev1["Severity"]["value"]) == ([["severe"]], [[30]], "High")
    assert "Negated" not in ev1
    assert rows[1]["annotations"][0]["events"][0]["Trigger"]["start"] == [[15]]  # 'effective'
    out = cli("pv", "evaluate", "--gold", env, "--pred", pred, "--json")
    assert out.code == 0, out.stderr
    scores = json.loads(out.stdout)
    # triggers: 'developed' right, 'effective' for 'treating' wrong: 1 TP, 1 FP, 1 FN
    assert scores["trigger.identification.f1"] == pytest.approx(0.5)
    assert scores["trigger.identification.precision"] == pytest.approx(0.5)
    assert scores["trigger.identification.token_recall"] == pytest.approx(0.5)  # 'treating' has no token found
    # both sentences get their event type right
    assert scores["event_classification.f1"] == pytest.approx(1.0)
    # rerun: every answer from the cache, no request
    again = cli("pv", "extract", "--input", env, "--model", "llm", "--output", pred, "--force")
    assert again.code == 0 and server.stats()["requests"] == 4
    assert "LLM: 2 answers, 0 requests, 2 from cache" in again.stderr
    for r in (res, out, again):
        assert KEY not in r.stdout + r.stderr
    nocache = cli("pv", "extract", "--input", env, "--model", "llm", "--output", pred, "--force", "--no-cache")
    assert nocache.code == 0 and server.stats()["requests"] == 6  # the scripts' last turns: 1 request each


def test_pv_few_shot_bm25_demonstrations(cli, env: Path, server: ScriptedServer, tmp_path: Path) -> None:
    train = tmp_path / "train.json"
    t1 = "Severe rash developed after penicillin."
    t2 = "Insulin controlled the hyperglycemia."
    train.write_text("\n".join([
        GOLD.splitlines()[0],  # S1 itself: BM25's best match, but never its own demonstration
        _gold_line("t1", t1, [{"event_id": "E1", "event_type": "Adverse_event", "Trigger": _arg(t1, "developed"),
                               "Effect": _arg(t1, "Severe rash"), "Treatment": _arg(t1, "penicillin")}]),
        _gold_line("t2", t2, [{"event_id": "E1", "event_type": "Potential_therapeutic_event",
                               "Trigger": _arg(t2, "controlled"), "Treatment": _arg(t2, "Insulin")}]),
    ]) + "\n", encoding="utf-8")
    folder = tmp_path / "llm_model"
    folder.mkdir()
    (folder / "model.json").write_text(json.dumps({"kind": "llm", "shots": 1, "train_file": str(train)}))
    src = tmp_path / "one.jsonl"
    src.write_text(json.dumps({"id": "x", "text": S1}) + "\n", encoding="utf-8")
    server.script([{"match": "severe rash", "responses": [{"content": A1}]}])
    res = cli("pv", "extract", "--input", src, "--model", str(folder), "--output", "-")
    assert res.code == 0, res.stderr
    msgs = server.stats()["last_bodies"][-1]["messages"]
    assert [m["role"] for m in msgs] == ["system", "user", "assistant", "user"]  # k = 1 demonstration
    assert msgs[1]["content"] == f"Sentence: {t1}"  # the BM25 neighbour (shares 'severe', 'rash', 'developed')
    assert json.loads(msgs[2]["content"]) == {"events": [{"event_type": "Adverse_event", "trigger": "developed",
                                              "arguments": [{"role": "Effect", "text": "Severe rash"},
                                                            {"role": "Treatment", "text": "penicillin"}],
                                              "sub_arguments": []}]}
    assert msgs[3]["content"] == f"Sentence: {S1}"


def test_pv_llm_server_down_exit_2(cli, env: Path, tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    res = cli("pv", "extract", "--input", env, "--model", "llm", "--llm-url", f"http://127.0.0.1:{port}/v1",
              "--llm-key", KEY, "--output", tmp_path / "p.json")
    assert res.code == 2
    import re

    # the two sentences go out at once: whichever fails first is named
    assert re.search(rf"\[CLX009\] LLM server http://127\.0\.0\.1:{port}/v1 \(model 'scripted'\): "
                     r"document record s[12]: cannot connect", res.stderr), res.stderr
    assert "skipped" not in res.stderr and "Traceback" not in res.stderr
    assert KEY not in res.stdout + res.stderr and not (tmp_path / "p.json").exists()


S3 = "She developed rash on day 2 and later developed fever on day 5."


def test_pv_failed_record_named_by_id_and_skipped(cli, env: Path, server: ScriptedServer, tmp_path: Path) -> None:
    src = tmp_path / "three.jsonl"
    src.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in
                           (("a1", S1), ("a2", "Nothing useful here."), ("a3", S3))), encoding="utf-8")
    fever = {"event_type": "Adverse_event", "trigger": "developed", "arguments": [{"role": "Effect", "text": "fever"}]}
    rash = {"event_type": "Adverse_event", "trigger": "developed", "arguments": [{"role": "Effect", "text": "rash"}]}
    server.script([{"match": "severe rash", "responses": [{"content": A1}]},
                   {"match": "Nothing useful", "responses": [{"content": "I cannot answer that."}]},
                   # fever first, and the rash event twice (identical: kept once)
                   {"match": "later developed", "responses": [{"content": {"events": [fever, rash, rash]}}]}])
    pred = tmp_path / "p.json"
    res = cli("pv", "extract", "--input", src, "--model", "llm", "--output", pred)
    assert res.code == 1, res.stderr
    assert ("skipped: [CLX009] LLM server " + server.url + " (model 'scripted'): document record a2: no valid JSON "
            "answer after 3 tries: not JSON") in res.stderr
    assert "text 2 of 3" not in res.stderr
    assert "2 records, 3 events asserted (3 adverse, 0 therapeutic), 0 negated -> " in res.stderr
    assert "1 bad lines or failed records skipped" in res.stderr
    assert "LLM: 2 answers, 5 requests, 0 from cache, 1 failed;" in res.stderr  # a2: 1 ask + 2 repairs
    rows = [json.loads(x) for x in pred.read_text().splitlines()]
    assert [r["id"] for r in rows] == ["a1", "a3"]
    assert {r["model"] for r in rows} == {"clinex.pv.llm.v1:scripted"}  # the server's model in the versioned id
    evs = rows[1]["annotations"][0]["events"]
    # each 'developed' grounds at the occurrence nearest its own effect: fever (48) -> 38, rash (14) -> 4
    assert [(e["Effect"]["text"], e["Effect"]["start"], e["Trigger"]["start"]) for e in evs] == [
        ([["fever"]], [[48]], [[38]]), ([["rash"]], [[14]], [[4]])]


def test_pv_key_echoed_in_401_never_printed_and_bad_key_exit_2(cli, env: Path, server: ScriptedServer,
                                                               tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    server.script([{"match": "", "responses": [{"status": 401, "error": "Incorrect API key provided: {key}"}]}])
    res = cli("pv", "extract", "--input", env, "--model", "llm", "--output", tmp_path / "p.json")
    assert res.code == 2
    assert "(HTTP 401: Incorrect API key provided: ***); check CLINEX_LLM_API_KEY" in res.stderr
    assert KEY not in res.stdout + res.stderr and server.stats()["auth"][0] == f"Bearer {KEY}"
    monkeypatch.setenv("CLINEX_LLM_API_KEY", "sk-cl\u00e9-secret\n")
    res = cli("pv", "extract", "--input", env, "--model", "llm", "--output", tmp_path / "p.json")
    assert res.code == 2 and "Traceback" not in res.stderr
    assert "[CLX001]" in res.stderr and "CLINEX_LLM_API_KEY (or --llm-key) holds a character" in res.stderr
    assert "secret" not in res.stderr
    monkeypatch.setenv("CLINEX_LLM_API_KEY", KEY + "  \n")  # whitespace around the key is stripped
    server.script([{"match": "", "responses": [{"content": {"events": []}}]}])
    res = cli("pv", "extract", "--input", env, "--model", "llm", "--output", tmp_path / "p.json")
    assert res.code == 0, res.stderr
    assert server.stats()["auth"] == [f"Bearer {KEY}"] * 2
