"""One client for any OpenAI-compatible chat-completions server (vLLM, llama.cpp server, Ollama).

:meth:`LLMClient.complete_json` sends ``POST {base_url}/chat/completions`` with
temperature 0, a seed and ``response_format`` holding the JSON schema of a pydantic
result type (``model_json_schema()``), then:

* **parse, repair, retry**: the answer's text is read as JSON (a Markdown code fence
  or text around one ``{...}`` object is tolerated) and validated against the type;
  when that fails the server is shown its answer and the validation error and asked
  again, up to ``max_repairs`` times (servers that ignore ``response_format`` still
  get there);
* **backoff**: a 429, a 5xx or a timeout is retried ``max_retries`` times, waiting
  ``backoff`` seconds, doubled each time (``Retry-After`` is honoured up to 30 s);
* **concurrency**: at most ``concurrency`` requests are in flight (a semaphore; the
  task models run their prompts through :meth:`LLMClient.map`, a thread pool of the
  same size);
* **cache**: a validated answer is stored in the on-disk cache (:mod:`clinex.llm.cache`)
  under the key of the first request; nothing from a failed call is stored;
* **usage**: prompt and completion tokens (as the server reports them in ``usage``),
  requests, cache hits, retries, repairs and, with a price per 1,000 tokens
  configured, the cost, per client and for the whole process (:func:`session_usage`).

Every failure is an :class:`~clinex.errors.LLMError` naming the server and the
document. The key is never shown: every message built from a server reply has the
configured key (alone or as ``Bearer <key>``) replaced by ``***`` (:func:`redact`)
before it reaches an error, stderr, the web, a log or the cache, because some
servers echo it ("Incorrect API key provided: sk-...").

Every prompt is told the shape of the answer (:func:`schema_hint`, appended to the
first system message and to each repair request), so that a server that ignores
``response_format`` (``CLINEX_LLM_RESPONSE_FORMAT=json_object`` or ``none``) still
knows the keys. An answer cut off at ``max_tokens`` (``finish_reason: "length"``)
that is not valid JSON is an error saying so, not a repair.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from clinex.errors import LLMError
from clinex.llm.cache import LLMCache, cache_key
from clinex.llm.config import LLMSettings
from clinex.llm.grounding import GroundingStats

__all__ = ["LLMClient", "Usage", "session_usage", "reset_session_usage", "format_usage", "parse_json_answer",
           "shared_client", "redact", "schema_hint"]

T = TypeVar("T", bound=BaseModel)
R = TypeVar("R")

_RETRY_AFTER_CAP = 30.0
_CONTEXT_ERROR = re.compile(
    r"context[_ ](length|window|size)|maximum context|context_length_exceeded|(prompt|input|request) is too long"
    r"|too many tokens|n_ctx|exceeds? the (model'?s? )?(maximum|context)|maximum.{0,20}tokens", re.I
)
"""A 400/413/422 about the prompt's length (vLLM "maximum context length is 4096 tokens",
llama.cpp "exceeds the available context size", OpenAI ``context_length_exceeded``); the
bare word "context" is not enough (a schema error may quote a field of that name)."""
_FORMAT_ERROR = re.compile(r"response_format|json_schema|structured output|guided[_ ]decoding", re.I)
"""A 400 refusing the ``response_format`` (servers without JSON-schema output)."""


def redact(message: str, key: str | None) -> str:
    """``message`` with ``key`` (and ``Bearer <key>``) replaced by ``***``.

    Parameters
    ----------
    message : str
        Text built from a server reply (an error body, an answer).
    key : str or None
        The configured API key; None or empty leaves ``message`` as it is.
    """
    if not key:
        return message
    return message.replace(f"Bearer {key}", "***").replace(key, "***")


def _shape(schema: Mapping[str, Any], defs: Mapping[str, Any], depth: int = 0) -> str:
    if "$ref" in schema:
        return _shape(defs.get(str(schema["$ref"]).rsplit("/", 1)[-1], {}), defs, depth)
    for union in ("anyOf", "oneOf"):
        if union in schema:
            alts = [_shape(a, defs, depth) for a in schema[union]]
            return " or ".join(dict.fromkeys(alts))
    if "enum" in schema:
        return "|".join(json.dumps(v) for v in schema["enum"])
    if "const" in schema:
        return json.dumps(schema["const"])
    kind = schema.get("type")
    if kind == "object" or "properties" in schema:
        if depth > 4:
            return "{...}"
        req = set(schema.get("required", []))
        inner = ", ".join(f'"{k}"{"" if k in req else "?"}: {_shape(v, defs, depth + 1)}'
                          for k, v in schema.get("properties", {}).items())
        return "{" + inner + "}"
    if kind == "array":
        return "[" + _shape(schema.get("items", {}), defs, depth + 1) + ", ...]"
    return {"string": "string", "integer": "integer", "number": "number", "boolean": "true|false",
            "null": "null"}.get(str(kind), "value")


def schema_hint(result_type: type[BaseModel]) -> str:
    """One line telling the model the JSON shape of ``result_type`` (from its pydantic schema).

    ``"key"?`` marks an optional key, ``a|b`` the allowed values, ``[x, ...]`` a list.

    Examples
    --------
    >>> from clinex.rob.evidence.llm import RoBAnswer  # doctest: +SKIP
    >>> schema_hint(RoBAnswer)  # doctest: +SKIP
    'Reply with one JSON object of this shape: {"answer": "Y"|"PY"|"PN"|"N"|"NI", "evidence"?: [string, ...]}'
    """
    schema = result_type.model_json_schema()
    return "Reply with one JSON object of this shape: " + _shape(schema, schema.get("$defs", {}))


@dataclass
class Usage:
    """What the LLM calls cost (thread-safe counters).

    Attributes
    ----------
    calls : int
        Answers asked for (:meth:`LLMClient.complete_json` calls).
    requests : int
        HTTP requests sent (retries and repairs included).
    cache_hits : int
        Calls answered from the cache (no request).
    prompt_tokens, completion_tokens : int
        As the server's ``usage`` reports them (0 when it reports none).
    retries, repairs, failures : int
        Requests repeated after a 429 / 5xx / timeout; re-asks after an invalid
        answer; calls that raised.
    downgraded : int
        Answers the task models turned to NI / not met because none of their
        evidence quotes could be grounded (counted by :meth:`LLMClient.count_downgrade`).
    cost : float
        Price of the tokens, when a price is configured (``priced``).
    grounding : GroundingStats
        Quotes grounded / dropped by the task models.
    """

    calls: int = 0
    requests: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    retries: int = 0
    repairs: int = 0
    failures: int = 0
    downgraded: int = 0
    cost: float = 0.0
    priced: bool = False
    grounding: GroundingStats = field(default_factory=GroundingStats)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def bump(self, **counts: float) -> None:
        """Add ``counts`` to the named counters."""
        with self._lock:
            for k, v in counts.items():
                setattr(self, k, getattr(self, k) + v)

    def as_dict(self) -> dict[str, Any]:
        """The counters as a JSON-ready dict."""
        out: dict[str, Any] = {k: getattr(self, k) for k in (
            "calls", "requests", "cache_hits", "prompt_tokens", "completion_tokens", "retries", "repairs",
            "failures", "downgraded")}
        out["cost"] = round(self.cost, 6) if self.priced else None
        out.update(self.grounding.as_dict())
        return out


_SESSION = Usage()


def session_usage() -> Usage:
    """The usage of every client of this process since :func:`reset_session_usage`."""
    return _SESSION


def reset_session_usage() -> None:
    """Start counting :func:`session_usage` from zero (the CLI does it per command)."""
    global _SESSION
    _SESSION = Usage()


def format_usage(usage: Usage) -> str:
    """One line for stderr: answers, requests, cache hits, tokens, cost, dropped spans, downgrades.

    ``answers`` counts successful answers only (a call that failed is in ``failures``).
    """
    parts = [
        f"LLM: {usage.calls} answers, {usage.requests} requests, {usage.cache_hits} from cache"
        + (f", {usage.failures} failed" if usage.failures else ""),
        f"{usage.prompt_tokens:,} prompt + {usage.completion_tokens:,} completion tokens",
    ]
    if usage.priced:
        parts.append(f"cost {usage.cost:.4f}")
    g = usage.grounding
    parts.append(f"{g.grounded} spans grounded ({g.fuzzy} fuzzy), {g.ungrounded} ungrounded dropped")
    if usage.downgraded:
        parts.append(f"{usage.downgraded} answers without grounded evidence downgraded to NI / not met")
    return "; ".join(parts)


def parse_json_answer(content: str, result_type: type[T]) -> T:
    """Read a model's answer as ``result_type``.

    Tolerates a Markdown code fence and text around one ``{...}`` object.

    Raises
    ------
    ValueError
        Not JSON, or JSON that does not validate (the message says why, for the repair prompt).
    """
    text = content.strip()
    fence = re.match(r"^```[a-zA-Z]*\s*\n?(.*?)\n?```\s*$", text, flags=re.S)
    if fence:
        text = fence.group(1).strip()
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        lo, hi = text.find("{"), text.rfind("}")
        if lo < 0 or hi <= lo:
            raise ValueError(f"not JSON ({exc.msg} at character {exc.pos})") from None
        try:
            obj = json.loads(text[lo : hi + 1])
        except json.JSONDecodeError as exc2:
            raise ValueError(f"not JSON ({exc2.msg} at character {exc2.pos + lo})") from None
    try:
        return result_type.model_validate(obj)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or '(top)'}: {e['msg']}" for e in exc.errors()[:5]
        )
        raise ValueError(f"JSON does not follow the schema ({problems})") from None


def _server_message(resp: Any, key: str | None) -> str:
    """The error text of a reply, without the key (redacted before it is cut to 300 characters)."""
    try:
        body = resp.json()
    except ValueError:
        return redact(resp.text, key)[:300].strip()
    err = body.get("error", body.get("detail", body)) if isinstance(body, dict) else body
    if isinstance(err, dict):
        err = err.get("message", err)
    return redact(str(err), key)[:300].strip()


class LLMClient:
    """A chat-completions client with structured output, retries, a cache and usage counts.

    Parameters
    ----------
    settings : LLMSettings
        Server and call settings (:func:`clinex.llm.config.resolve_settings`).
    cache : LLMCache or None or "auto", default "auto"
        The answer cache; ``"auto"`` opens ``settings.cache_path`` (or the default
        file) when ``settings.cache`` is on, else uses none.
    transport : httpx transport, optional
        For tests of the client itself; the task tests use a real local server.
    """

    def __init__(self, settings: LLMSettings, *, cache: LLMCache | None | str = "auto", transport: Any = None) -> None:
        import httpx

        self.settings = settings
        if cache == "auto":
            cache = LLMCache(settings.cache_path) if settings.cache else None
        self.cache: LLMCache | None = cache  # type: ignore[assignment]
        self.usage = Usage(priced=settings.price_prompt is not None or settings.price_completion is not None)
        self._semaphore = threading.Semaphore(settings.concurrency)
        headers = {"Content-Type": "application/json"}
        if settings.api_key:
            headers["Authorization"] = f"Bearer {settings.api_key}"
        self._http = httpx.Client(
            timeout=httpx.Timeout(settings.timeout),
            headers=headers,
            transport=transport,
            limits=httpx.Limits(max_connections=settings.concurrency),
        )
        self._url = settings.base_url.rstrip("/") + "/chat/completions"

    def __repr__(self) -> str:
        return f"LLMClient(server={self.settings.server!r}, model={self.settings.model!r})"

    # ------------------------------------------------------------------ counting
    def _bump(self, **counts: float) -> None:
        self.usage.bump(**counts)
        session = session_usage()
        if self.usage.priced:
            session.priced = True
        session.bump(**counts)

    def count_downgrade(self) -> None:
        """Count one answer turned to NI / not met for want of grounded evidence."""
        self._bump(downgraded=1)

    def count_grounding(self, grounding: Any) -> None:
        """Count one :func:`clinex.llm.grounding.ground` result here and in the session."""
        self.usage.grounding.add(grounding)
        session_usage().grounding.add(grounding)

    # ------------------------------------------------------------------ requests
    def _params(self, name: str, result_type: type[BaseModel]) -> dict[str, Any]:
        s = self.settings
        params: dict[str, Any] = {"temperature": 0, "seed": s.seed, "max_tokens": s.max_tokens}
        if s.response_format == "json_schema":
            params["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": name, "schema": result_type.model_json_schema(), "strict": True},
            }
        elif s.response_format == "json_object":
            params["response_format"] = {"type": "json_object"}
        return params

    def _fail(self, what: str, document: str, *, systemic: bool = False) -> LLMError:
        """The error of a failed call; ``systemic`` marks one every document would meet
        (server down, wrong URL or model, key refused, response format refused), so that
        a multi-document run stops at once instead of failing each document in turn
        (attribute ``systemic`` of the error)."""
        self._bump(failures=1)
        err = LLMError(redact(f"LLM server {self.settings.server} (model {self.settings.model!r}): "
                              f"document {document}: {what}", self.settings.api_key))
        err.systemic = systemic  # type: ignore[attr-defined]
        return err

    def _post(self, body: dict[str, Any], document: str) -> dict[str, Any]:
        import httpx

        s = self.settings
        attempts = s.max_retries + 1
        last = ""
        for attempt in range(attempts):
            wait_s = s.backoff * (2 ** attempt)
            with self._semaphore:
                self._bump(requests=1)
                try:
                    resp = self._http.post(self._url, json=body)
                except httpx.TimeoutException:
                    last = f"no answer within {s.timeout:g} s"
                    resp = None
                except (httpx.ConnectError, httpx.UnsupportedProtocol, httpx.InvalidURL) as exc:
                    raise self._fail(f"cannot connect ({type(exc).__name__}); is the server running "
                                     f"and the URL right?", document, systemic=True) from None
                except httpx.HTTPError as exc:
                    last = f"{type(exc).__name__}"
                    resp = None
            if resp is not None:
                code = resp.status_code
                if code == 200:
                    try:
                        data = resp.json()
                        data["choices"][0]["message"]
                    except (ValueError, KeyError, IndexError, TypeError):
                        raise self._fail("the server's reply is not a chat-completions response "
                                         "(is the base URL an OpenAI-compatible /v1 root?)", document,
                                         systemic=True) from None
                    return data
                msg = _server_message(resp, s.api_key)
                if code == 429 or code >= 500:
                    last = f"HTTP {code}: {msg}"
                    ra = resp.headers.get("Retry-After", "")
                    if ra.replace(".", "", 1).isdigit():
                        wait_s = max(wait_s, min(float(ra), _RETRY_AFTER_CAP))
                elif code == 404:
                    if "model" in msg.lower():
                        raise self._fail(f"model {s.model!r} not found (HTTP 404: {msg})", document, systemic=True)
                    raise self._fail(f"no chat-completions endpoint at {s.server}/chat/completions (HTTP 404: "
                                     f"{msg or 'not found'}); the base URL usually ends in /v1", document,
                                     systemic=True)
                elif code in (401, 403):
                    raise self._fail(f"the server refused the request (HTTP {code}: {msg}); check "
                                     "CLINEX_LLM_API_KEY / --llm-key", document, systemic=True)
                elif code in (400, 422) and _FORMAT_ERROR.search(msg) and s.response_format == "json_schema":
                    raise self._fail(f"the server refused the JSON-schema response_format (HTTP {code}: {msg}); "
                                     "set CLINEX_LLM_RESPONSE_FORMAT=json_object (or none)", document,
                                     systemic=True)
                elif code in (400, 413, 422) and _CONTEXT_ERROR.search(msg):
                    raise self._fail(f"the prompt does not fit the model's context (HTTP {code}: {msg}); "
                                     f"set CLINEX_LLM_CONTEXT to the server's context size "
                                     f"(now {s.context_tokens})", document)
                else:
                    raise self._fail(f"HTTP {code}: {msg}", document)
            if attempt + 1 < attempts:
                self._bump(retries=1)
                time.sleep(wait_s)
        raise self._fail(f"{last} (after {attempts} attempts)", document)

    def _record_usage(self, data: Mapping[str, Any]) -> None:
        u = data.get("usage") or {}
        p = int(u.get("prompt_tokens") or 0)
        c = int(u.get("completion_tokens") or 0)
        cost = (p * (self.settings.price_prompt or 0.0) + c * (self.settings.price_completion or 0.0)) / 1000.0
        self._bump(prompt_tokens=p, completion_tokens=c, cost=cost)

    def complete_json(
        self,
        messages: Sequence[Mapping[str, str]],
        result_type: type[T],
        *,
        document: str,
        name: str = "answer",
    ) -> T:
        """Ask for an answer of ``result_type``; from the cache when it holds one.

        Parameters
        ----------
        messages : list of {"role", "content"}
            The prompt.
        result_type : pydantic model class
            What the answer must validate as; its JSON schema is sent.
        document : str
            Document id, for error messages.
        name : str, default "answer"
            Schema name sent with ``response_format``.

        Returns
        -------
        result_type instance

        Raises
        ------
        LLMError
            Server unreachable, an HTTP error, retries used up, or no valid answer
            after ``max_repairs`` re-asks. Nothing is cached then.
        """
        msgs = [dict(m) for m in messages]
        hint = schema_hint(result_type)
        if msgs and msgs[0].get("role") == "system":
            msgs[0]["content"] = f"{msgs[0].get('content', '').rstrip()}\n{hint}"
        else:
            msgs.insert(0, {"role": "system", "content": hint})
        params = self._params(name, result_type)
        key = cache_key(self.settings.model, msgs, params)
        if self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None:
                try:
                    answer = parse_json_answer(hit, result_type)
                except ValueError:
                    pass  # an entry from an older schema: ask again
                else:
                    self._bump(cache_hits=1, calls=1)
                    return answer
        convo = list(msgs)
        problem = ""
        for attempt in range(self.settings.max_repairs + 1):
            if attempt:
                self._bump(repairs=1)
            data = self._post({"model": self.settings.model, "messages": convo, **params}, document)
            self._record_usage(data)
            choice = data["choices"][0]
            content = redact(choice["message"].get("content") or "", self.settings.api_key)
            try:
                answer = parse_json_answer(content, result_type)
            except ValueError as exc:
                problem = str(exc)
                if choice.get("finish_reason") == "length":
                    raise self._fail(f"answer cut off at max_tokens ({self.settings.max_tokens}); raise "
                                     "CLINEX_LLM_MAX_TOKENS", document) from None
                convo = [*convo, {"role": "assistant", "content": content}, {
                    "role": "user",
                    "content": f"That answer cannot be used: {problem}. Reply again with only one JSON object "
                               f"that follows the schema, nothing else. {hint}",
                }]
                continue
            if self.cache is not None:
                self.cache.put(key, self.settings.model, answer.model_dump_json())
            self._bump(calls=1)
            return answer
        raise self._fail(f"no valid JSON answer after {self.settings.max_repairs + 1} tries: {problem}", document)

    def map(self, fn: Callable[[Any], R], items: Iterable[Any]) -> list[R]:
        """``[fn(x) for x in items]`` on ``concurrency`` threads, in input order.

        The first exception is raised once the running calls end; calls not started
        yet are cancelled.
        """
        todo = list(items)
        if len(todo) <= 1 or self.settings.concurrency == 1:
            return [fn(x) for x in todo]
        with ThreadPoolExecutor(max_workers=self.settings.concurrency) as pool:
            futures = [pool.submit(fn, x) for x in todo]
            done, pending = wait(futures, return_when=FIRST_EXCEPTION)
            for f in pending:
                f.cancel()
            for f in futures:
                if f.done() and not f.cancelled() and f.exception() is not None:
                    raise f.exception()  # type: ignore[misc]
            return [f.result() for f in futures]

    def close(self) -> None:
        """Close the HTTP connections (and the cache)."""
        self._http.close()
        if self.cache is not None:
            self.cache.close()


_SHARED: OrderedDict[tuple[LLMSettings, str | None], LLMClient] = OrderedDict()
_SHARED_MAX = 8
"""Clients kept by :func:`shared_client` (least recently used closed first), so that a web
server building a model per request does not open a connection pool and a cache
handle each time."""
_SHARED_LOCK = threading.Lock()


def shared_client(settings: LLMSettings) -> LLMClient:
    """The process-wide :class:`LLMClient` for ``settings`` (made on first use)."""
    key = (settings, settings.api_key)
    with _SHARED_LOCK:
        client = _SHARED.get(key)
        if client is None:
            client = _SHARED[key] = LLMClient(settings)
            while len(_SHARED) > _SHARED_MAX:
                _, old = _SHARED.popitem(last=False)
                old.close()
        else:
            _SHARED.move_to_end(key)
        return client
