"""clinex.llm against a real scripted HTTP server (tests/llm_server.py): retries, repair,
cache, errors, grounding, settings; no model needed."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
from llm_server import ScriptedServer
from pydantic import BaseModel

from clinex.errors import InputError, LLMError
from clinex.llm.cache import LLMCache
from clinex.llm.client import LLMClient, format_usage, parse_json_answer, schema_hint
from clinex.llm.config import LLMSettings, cli_overrides, resolve_settings
from clinex.llm.grounding import FUZZY_THRESHOLD, ground
from clinex.llm.prompts import load_prompt

KEY = "sk-test-7c1f0e-secret"
HINT = 'Reply with one JSON object of this shape: {"label": string, "quotes"?: [string, ...]}'


class Answer(BaseModel):
    label: str
    quotes: list[str] = []


@pytest.fixture(scope="module")
def server():
    with ScriptedServer() as srv:
        yield srv


def _client(server: ScriptedServer, tmp_path: Path, **kw) -> LLMClient:
    s = LLMSettings(base_url=server.url, model="scripted", api_key=KEY, timeout=kw.pop("timeout", 2.0),
                    backoff=0.01, max_retries=kw.pop("max_retries", 2), cache_path=tmp_path / "c.sqlite", **kw)
    return LLMClient(s)


def _ask(client: LLMClient, question: str) -> Answer:
    return client.complete_json([{"role": "user", "content": question}], Answer, document="doc-7")


def test_valid_answer_request_body_usage_and_cache(server: ScriptedServer, tmp_path: Path) -> None:
    server.script([{"match": "Q1", "responses": [{"content": {"label": "yes", "quotes": ["a b"]}}]}])
    c = _client(server, tmp_path, price_prompt=2.0, price_completion=4.0)
    assert _ask(c, "Q1 is it so") == Answer(label="yes", quotes=["a b"])
    st = server.stats()
    assert st["requests"] == 1 and st["auth"] == [f"Bearer {KEY}"]
    body = st["last_bodies"][0]
    assert body["temperature"] == 0 and body["seed"] == 0 and body["model"] == "scripted"
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["schema"] == Answer.model_json_schema()
    # the shape of the answer comes first, as a system message (no system message was given)
    assert schema_hint(Answer) == HINT
    assert body["messages"] == [{"role": "system", "content": HINT}, {"role": "user", "content": "Q1 is it so"}]
    # usage: 4 prompt words + the 13 of the hint, the answer '{"label": "yes", "quotes": ["a b"]}' is 5 words
    assert (c.usage.prompt_tokens, c.usage.completion_tokens) == (17, 5)
    assert c.usage.cost == pytest.approx((17 * 2.0 + 5 * 4.0) / 1000)
    again = _client(server, tmp_path)  # a new client, same cache file
    assert _ask(again, "Q1 is it so") == Answer(label="yes", quotes=["a b"])
    assert server.stats()["requests"] == 1  # cache hit: no new request
    assert again.usage.cache_hits == 1 and again.usage.requests == 0
    nocache = LLMClient(LLMSettings(base_url=server.url, model="scripted", cache=False, timeout=2))
    _ask(nocache, "Q1 is it so")
    assert server.stats()["requests"] == 2


def test_malformed_json_is_repaired(server: ScriptedServer, tmp_path: Path) -> None:
    server.script([{"match": "Q2", "responses": [{"content": "Sure! {label: yes"},
                                                  {"content": '```json\n{"label": "no"}\n```'}]}])
    c = _client(server, tmp_path)
    assert _ask(c, "Q2") == Answer(label="no", quotes=[])
    st = server.stats()
    assert st["requests"] == 2 and c.usage.repairs == 1
    repair = st["last_bodies"][1]["messages"]
    assert [m["role"] for m in repair] == ["system", "user", "assistant", "user"]
    assert repair[2]["content"] == "Sure! {label: yes" and repair[3]["content"].startswith("That answer cannot be used")
    assert repair[3]["content"].endswith("nothing else. " + HINT)  # the keys again, in the repair request


def test_not_json_after_repairs_is_an_error_and_not_cached(server: ScriptedServer, tmp_path: Path) -> None:
    server.script([{"match": "Q3", "responses": [{"content": '{"wrong": 1}'}]}])
    c = _client(server, tmp_path, max_repairs=1)
    with pytest.raises(LLMError) as exc:
        _ask(c, "Q3")
    msg = str(exc.value)
    assert msg.startswith("[CLX009] LLM server http://127.0.0.1:") and "document doc-7" in msg
    assert "no valid JSON answer after 2 tries" in msg and "label: Field required" in msg
    assert server.stats()["requests"] == 2
    assert len(LLMCache(tmp_path / "c.sqlite")) == 0


def test_429_then_success_backs_off(server: ScriptedServer, tmp_path: Path) -> None:
    server.script([{"match": "Q4", "responses": [{"status": 429, "error": "slow down"},
                                                  {"status": 503, "error": "busy"},
                                                  {"content": {"label": "ok"}}]}])
    c = _client(server, tmp_path)
    assert _ask(c, "Q4").label == "ok"
    assert server.stats()["requests"] == 3 and c.usage.retries == 2


def test_hang_past_timeout_fails_after_retries_and_caches_nothing(server: ScriptedServer, tmp_path: Path) -> None:
    server.script([{"match": "Q5", "responses": [{"delay": 1.0, "content": {"label": "late"}}]}])
    c = _client(server, tmp_path, timeout=0.3, max_retries=1)
    with pytest.raises(LLMError, match=r"document doc-7: no answer within 0.3 s \(after 2 attempts\)"):
        _ask(c, "Q5")
    assert server.stats()["requests"] == 2
    assert len(LLMCache(tmp_path / "c.sqlite")) == 0
    server.script([{"match": "Q5", "responses": [{"content": {"label": "now"}}]}])
    assert _ask(c, "Q5").label == "now"  # asked again: nothing was cached from the failure
    assert server.stats()["requests"] == 1


def test_wrong_model_wrong_url_server_down_context_length(server: ScriptedServer, tmp_path: Path) -> None:
    server.script([{"match": "", "responses": [{"content": {"label": "x"}}]}])
    s = LLMSettings(base_url=server.url, model="no-such-model", api_key=KEY, cache=False, backoff=0.01, timeout=2)
    with pytest.raises(LLMError) as exc:
        _ask(LLMClient(s), "Q6")
    assert "model 'no-such-model' not found (HTTP 404: model 'no-such-model' not found)" in str(exc.value)
    s = LLMSettings(base_url=server.root + "/api", model="scripted", cache=False, timeout=2)
    with pytest.raises(LLMError, match=r"no chat-completions endpoint at http://127\.0\.0\.1:\d+/api/chat"):
        _ask(LLMClient(s), "Q6")
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    s = LLMSettings(base_url=f"http://127.0.0.1:{port}/v1", model="scripted", cache=False, timeout=2)
    with pytest.raises(LLMError, match=rf"LLM server http://127\.0\.0\.1:{port}/v1 .*cannot connect"):
        _ask(LLMClient(s), "Q6")
    server.script([{"match": "Q7", "responses": [
        {"status": 400, "error": "This model's maximum context length is 4096 tokens"}]}])
    with pytest.raises(LLMError, match="the prompt does not fit the model's context"):
        _ask(_client(server, tmp_path), "Q7")
    assert server.stats()["requests"] == 1  # a 400 is not retried


def test_key_never_shown() -> None:
    s = LLMSettings(base_url=f"http://user:{KEY}@127.0.0.1:9/v1", model="m", api_key=KEY, cache=False, timeout=2)
    assert KEY not in repr(s) and KEY not in str(s) and KEY not in json.dumps(s.public())
    assert s.server == "http://127.0.0.1:9/v1" and KEY not in repr(LLMClient(s))
    with pytest.raises(LLMError) as exc:
        _ask(LLMClient(s), "Q")
    assert KEY not in str(exc.value)


def test_settings_precedence(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("CLINEX_LLM_BASE_URL", "CLINEX_LLM_MODEL", "CLINEX_LLM_API_KEY", "CLINEX_LLM_TIMEOUT"):
        monkeypatch.delenv(var, raising=False)
    with pytest.raises(LLMError, match="no LLM server configured: set CLINEX_LLM_BASE_URL"):
        resolve_settings()
    monkeypatch.setenv("CLINEX_LLM_BASE_URL", "http://env/v1")
    monkeypatch.setenv("CLINEX_LLM_MODEL", "env-model")
    monkeypatch.setenv("CLINEX_LLM_TIMEOUT", "7.5")
    s = resolve_settings({"model": "folder-model", "shots": 3})
    assert (s.base_url, s.model, s.timeout, s.shots) == ("http://env/v1", "env-model", 7.5, 3)
    with cli_overrides(model="cli-model", api_key=None):
        assert resolve_settings().model == "cli-model"
        assert resolve_settings(model="arg").model == "arg"
    monkeypatch.setenv("CLINEX_LLM_TIMEOUT", "soon")
    with pytest.raises(InputError, match="CLINEX_LLM_TIMEOUT: not a number: 'soon'"):
        resolve_settings()


def test_grounding_exact_normalised_fuzzy_and_dropped() -> None:
    text = "Rash after aspirin.\nThe  patient stopped Aspirin; the rash resolved."
    assert ground(text, "aspirin") == type(ground(text, "aspirin"))(11, 18, "exact", 100.0)
    g = ground(text, "aspirin", hint=40)
    assert (g.start, g.end) == (11, 18)  # exact (case-sensitive) occurrence wins over nearer 'Aspirin'
    g = ground(text, "the patient stopped aspirin")
    assert (g.start, g.end, g.method) == (20, 48, "exact-normalised") and text[g.start:g.end] == "The  patient stopped Aspirin"
    g = ground(text, "the rash resolvd")
    assert g.method == "fuzzy" and text[g.start:g.end] == "the rash resolved" and g.score >= FUZZY_THRESHOLD
    assert ground(text, "penicillin allergy") is None and ground(text, "   ") is None
    g = ground(text, "rash", window=(20, len(text)))
    assert (g.start, g.end) == (54, 58)  # the occurrence inside the window


def test_parse_and_prompts() -> None:
    assert parse_json_answer('Here: {"label": "a"} done', Answer).label == "a"
    with pytest.raises(ValueError, match="not JSON"):
        parse_json_answer("no braces", Answer)
    p = load_prompt("rob")
    assert p.id == "rob.v1" and "$question" in p.parts["user"]
    from clinex.errors import FormatError

    with pytest.raises(FormatError, match=r"rob\.yaml: field 'user': placeholder \$sq has no value"):
        p.render("user")


def test_concurrency_limit_and_no_key_in_logs(server: ScriptedServer, tmp_path: Path,
                                              caplog: pytest.LogCaptureFixture) -> None:
    import logging
    import time

    deadline = time.monotonic() + 3
    while server.stats()["inflight"] and time.monotonic() < deadline:  # a hang of an earlier test may still sleep
        time.sleep(0.05)
    server.script([{"match": "slow", "responses": [{"delay": 0.15, "content": {"label": "ok"}}]}])
    c = _client(server, tmp_path, concurrency=2, cache=False)
    with caplog.at_level(logging.DEBUG):
        labels = c.map(lambda i: _ask(c, f"slow {i}").label, range(6))
    assert labels == ["ok"] * 6
    st = server.stats()
    assert st["requests"] == 6 and st["max_inflight"] == 2  # never more than `concurrency` at once
    assert caplog.records and KEY not in caplog.text  # httpx logs each request at DEBUG; no key in them


def test_failed_call_in_map_raises_that_error(server: ScriptedServer, tmp_path: Path) -> None:
    server.script([{"match": "bad", "responses": [{"status": 418, "error": "teapot"}]},
                   {"match": "", "responses": [{"content": {"label": "ok"}}]}])
    c = _client(server, tmp_path, concurrency=3, cache=False)
    with pytest.raises(LLMError, match=r"document doc-7: HTTP 418: teapot"):
        c.map(lambda q: _ask(c, q), ["good 1", "bad", "good 2"])
    assert c.usage.failures == 1


def test_grounding_respects_word_boundaries() -> None:
    text = "I know of no rash; rashes later."
    g = ground(text, "no")
    assert (g.start, g.end) == (10, 12)  # the word, not the 'no' inside 'know'
    assert ground("I know it.", "no") is None  # too short for a fuzzy match, and only inside a word
    g = ground(text, "rashe")  # a cut word: fuzzy, widened to the whole word
    assert g.method == "fuzzy" and text[g.start:g.end] == "rashes"


def test_key_echoed_by_the_server_is_redacted(server: ScriptedServer, tmp_path: Path) -> None:
    server.script([
        {"match": "Q401", "responses": [{"status": 401, "error": "Incorrect API key provided: {key}."}]},
        {"match": "Q404", "responses": [{"status": 404, "error": "no route; headers: Authorization: {authorization}"}]},
        {"match": "Q500", "responses": [{"status": 500, "error": "crashed serving {key}"}]},
    ])
    c = _client(server, tmp_path, max_retries=0)
    with pytest.raises(LLMError) as exc:
        _ask(c, "Q401")
    assert str(exc.value).endswith("document doc-7: the server refused the request (HTTP 401: Incorrect API key "
                                   "provided: ***.); check CLINEX_LLM_API_KEY / --llm-key")
    assert exc.value.systemic is True
    with pytest.raises(LLMError) as exc:
        _ask(c, "Q404")
    assert "(HTTP 404: no route; headers: Authorization: ***)" in str(exc.value)
    with pytest.raises(LLMError) as exc:
        _ask(c, "Q500")
    assert "HTTP 500: crashed serving *** (after 1 attempts)" in str(exc.value)
    assert exc.value.systemic is False  # a 5xx may be this document's; a refused key is every document's
    assert server.stats()["auth"] == [f"Bearer {KEY}"] * 3  # the key was sent, and echoed


def test_http_400_classification_and_cut_off_answer(server: ScriptedServer, tmp_path: Path) -> None:
    server.script([
        {"match": "Qschema", "responses": [{"status": 400, "error": "Invalid schema for response_format 'answer': "
                                            "In context=('properties', 'label'), 'additionalProperties' is required"}]},
        {"match": "Qfield", "responses": [{"status": 400, "error": "unknown field 'context' in request"}]},
        {"match": "Qlen", "responses": [{"content": '{"label": "a very long ans', "finish_reason": "length"}]},
    ])
    c = _client(server, tmp_path, response_format="json_schema")  # forced: never negotiated away
    with pytest.raises(LLMError) as exc:
        _ask(c, "Qschema")
    assert "the server refused the json_schema response_format (HTTP 400: Invalid schema" in str(exc.value)
    assert str(exc.value).endswith("set CLINEX_LLM_RESPONSE_FORMAT=auto to negotiate (or none)")
    assert exc.value.systemic is True
    with pytest.raises(LLMError) as exc:
        _ask(c, "Qfield")
    assert str(exc.value).endswith("document doc-7: HTTP 400: unknown field 'context' in request")  # not "context size"
    with pytest.raises(LLMError) as exc:
        _ask(c, "Qlen")
    assert str(exc.value).endswith("document doc-7: answer cut off at max_tokens (1024); raise CLINEX_LLM_MAX_TOKENS")
    assert server.stats()["requests"] == 3  # no retry, no repair
    assert (c.usage.calls, c.usage.failures) == (0, 3)  # answers count successes only
    assert format_usage(c.usage).startswith("LLM: 0 answers, 3 requests, 0 from cache, 3 failed; ")


def test_json_object_mode_still_tells_the_keys(server: ScriptedServer, tmp_path: Path) -> None:
    server.script([{"match": "Qobj", "responses": [{"content": {"label": "x"}}]}])
    c = _client(server, tmp_path, response_format="json_object")
    got = c.complete_json([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Qobj"}], Answer,
                          document="d")
    assert got == Answer(label="x")
    body = server.stats()["last_bodies"][-1]
    assert body["response_format"] == {"type": "json_object"}
    assert body["messages"][0] == {"role": "system", "content": "Be brief.\n" + HINT}


def test_bad_key_values_and_prices(tmp_path: Path) -> None:
    with pytest.raises(InputError) as exc:
        LLMSettings(base_url="http://x/v1", model="m", api_key="sk-\u00e9t\u00e9-secret")
    msg = str(exc.value)
    assert msg.startswith("[CLX001]") and "CLINEX_LLM_API_KEY (or --llm-key) holds a character" in msg
    assert "secret" not in msg and "\u00e9" not in msg
    with pytest.raises(InputError, match="CLINEX_LLM_API_KEY"):
        LLMSettings(base_url="http://x/v1", model="m", api_key="sk-a\nsk-b")
    assert LLMSettings(base_url="http://x/v1", model="m", api_key="  sk-ok\n").api_key == "sk-ok"
    with pytest.raises(InputError, match=r"LLM setting price_prompt out of range: -1\.0"):
        LLMSettings(base_url="http://x/v1", model="m", price_prompt=-1.0)


def test_cache_file_is_private(tmp_path: Path) -> None:
    import os
    import stat

    old = os.umask(0o022)
    try:
        c = LLMCache(tmp_path / "sub" / "cache.sqlite")
    finally:
        os.umask(old)
    c.put("k", "m", "{}")
    assert stat.S_IMODE((tmp_path / "sub" / "cache.sqlite").stat().st_mode) == 0o600
    c.close()


def test_grounding_keeps_numbers_and_avoids_taken_spans() -> None:
    text = "The INR rose to 8 on day 3 after warfarin was doubled."
    assert ground(text, "INR rose to 9 on day 3") is None  # score 95, but another number
    g = ground(text, "INR rose to 8 on dy 3")  # a copying slip: kept, widened to the last number
    assert (g.method, text[g.start:g.end]) == ("fuzzy", "INR rose to 8 on day 3")
    t2 = "Rash developed on day 2; fever developed on day 5."
    assert (ground(t2, "developed").start, ground(t2, "developed", avoid={(5, 14)}).start) == (5, 31)
    assert ground(t2, "developed", hint=40).start == 31
    assert ground("x developed y", "developed", avoid={(2, 11)}).start == 2  # the only occurrence
