"""One client for any OpenAI-compatible chat-completions server (vLLM, llama.cpp server, Ollama).

:meth:`LLMClient.complete_json` sends ``POST {base_url}/chat/completions`` with
temperature 0, a seed and ``response_format`` holding the JSON schema of a pydantic
result type (``model_json_schema()``), then:

* **parse, repair, retry**: the answer's text is read as JSON (a Markdown code fence
  or text around one ``{...}`` object is tolerated) and validated against the type;
  when that fails the server is shown its answer (its first :data:`REPAIR_ECHO_CHARS`
  characters) and the validation error and asked again, up to ``max_repairs`` times
  (servers that ignore ``response_format`` still get there);
* **backoff**: a 429, a 5xx or a timeout is retried ``max_retries`` times, waiting
  ``backoff`` seconds, doubled each time (``Retry-After`` is honoured up to 30 s);
* **the reply, validated as a whole**: a 200 reply is read as a stream and refused once
  its body passes ``max_reply_bytes`` (the rest is never read); it must be JSON of the
  shape of :class:`ChatCompletion` (``choices[*].message.content`` a string or null,
  ``finish_reason`` a string or null, ``usage`` token counts whole numbers); anything
  else is an :class:`~clinex.errors.LLMError` for that document, neither repaired nor
  cached;
* **an overall deadline**: ``timeout`` bounds the whole request (connect, send, wait,
  read every byte of the reply), not each read: a watchdog shuts the connection's
  socket when it passes, so a server that drips its reply is cut off on time (and the
  request counts as timed out). Connections are therefore not kept alive between
  requests: each request has its own socket for the watchdog to shut;
* **negotiated structured output** (``response_format = "auto"``, the default): the
  first request asks for ``{"type": "json_schema", ...}``; a 400, 422 or 500 whose
  error names ``response_format`` / ``json_schema`` (llama-cpp-python's server answers
  500) moves the client to ``{"type": "json_object", "schema": {...}}`` (the form
  llama-cpp-python turns into a grammar), and a refusal of that to no
  ``response_format``; the same request is sent again at once (no retry, no backoff)
  and the client keeps the accepted form for every later request
  (:attr:`LLMClient.response_format_`). A forced form (``CLINEX_LLM_RESPONSE_FORMAT``)
  is never changed: its refusal is an error every document would meet (``systemic``);
* **concurrency**: at most ``concurrency`` requests are in flight (a semaphore; the
  task models run their prompts through :meth:`LLMClient.map`, a thread pool of the
  same size);
* **cache**: a validated answer is stored in the on-disk cache (:mod:`clinex.llm.cache`)
  under the key of the first request (model, messages, sampling parameters and the
  answer's schema, not the negotiated ``response_format`` form, so a rerun hits the
  cache before any negotiation); nothing from a failed, invalid or oversized reply is
  stored;
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
import socket
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from clinex.errors import LLMError
from clinex.llm.cache import LLMCache, cache_key
from clinex.llm.config import ENV, LLMSettings
from clinex.llm.replies import (
    ChatCompletion,
    _server_message,
    parse_json_answer,
    redact,
    reply_problems,
    schema_hint,
)
from clinex.llm.usage import Usage, format_usage, reset_session_usage, session_usage

__all__ = ["LLMClient", "Usage", "ChatCompletion", "session_usage", "reset_session_usage", "format_usage",
           "parse_json_answer", "shared_client", "redact", "schema_hint", "REPAIR_ECHO_CHARS", "NEGOTIATION"]

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
"""A 400, 422 or 500 refusing the ``response_format`` (servers without JSON-schema output;
llama-cpp-python's server answers ``json_schema`` with a 500)."""

NEGOTIATION = ("json_schema", "json_object_schema", "none")
"""The forms ``response_format = "auto"`` tries, in order (see the module docstring)."""

REPAIR_ECHO_CHARS = 4000
"""Most characters of an invalid answer shown back to the server in a repair request
(clinex's own choice: a 1,024-token answer is about 4,000 characters); a longer one is
cut there and marked, so a runaway answer is never sent back whole."""

_ERROR_BODY_BYTES = 64 * 1024
"""Most bytes of an error (non-200) body read for its message."""


class _Expired(Exception):
    """The overall deadline of a request passed."""


class _TooLarge(Exception):
    """The reply's body passed ``max_reply_bytes``."""


class _FormatRefused(Exception):
    """The server refused the ``response_format`` form ``fmt`` (negotiation moves on)."""

    def __init__(self, fmt: str, detail: str) -> None:
        super().__init__(detail)
        self.fmt = fmt
        self.detail = detail


class _Watchdog:
    """Shuts a request's socket when its overall deadline passes.

    The socket is learnt from httpcore's ``trace`` extension (``connect_tcp`` /
    ``start_tls`` complete); shutting it down makes a blocked read return at once, so
    neither a slow first byte nor a dripped body outlives the deadline.
    """

    def __init__(self, seconds: float) -> None:
        self._lock = threading.Lock()
        self._sock: Any = None
        self._done = False
        self.fired = False
        self._timer = threading.Timer(max(seconds, 0.0), self._fire)
        self._timer.daemon = True
        self._timer.start()

    def trace(self, name: str, info: Mapping[str, Any]) -> None:
        if name not in ("connection.connect_tcp.complete", "connection.start_tls.complete"):
            return
        stream = info.get("return_value")
        sock = stream.get_extra_info("socket") if stream is not None else None
        with self._lock:
            self._sock = sock
            if self.fired:
                self._shut()

    def _shut(self) -> None:
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except (OSError, AttributeError):
            pass

    def _fire(self) -> None:
        with self._lock:
            if self._done:
                return
            self.fired = True
            if self._sock is not None:
                self._shut()

    def cancel(self) -> None:
        with self._lock:
            self._done = True
        self._timer.cancel()




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

    Attributes
    ----------
    response_format_ : str
        The ``response_format`` form in use: the forced one, or under ``auto`` the
        one negotiation reached so far (one of :data:`NEGOTIATION`).
    format_refusals_ : list of str
        Under ``auto``, one line per form the server refused (form, HTTP status, its
        message), in order.
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
        headers["Accept-Encoding"] = "identity"  # the size cap counts the bytes as sent
        self._http = httpx.Client(
            timeout=httpx.Timeout(settings.timeout),
            headers=headers,
            transport=transport,
            # no keep-alive: each request has its own socket, which its watchdog may shut
            limits=httpx.Limits(max_connections=settings.concurrency, max_keepalive_connections=0),
        )
        self._url = settings.base_url.rstrip("/") + "/chat/completions"
        self._format_lock = threading.Lock()
        self.response_format_ = NEGOTIATION[0] if settings.response_format == "auto" else settings.response_format
        self.format_refusals_: list[str] = []

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
    def _params(self, name: str, result_type: type[BaseModel], fmt: str) -> dict[str, Any]:
        s = self.settings
        params: dict[str, Any] = {"temperature": 0, "seed": s.seed, "max_tokens": s.max_tokens}
        if fmt == "json_schema":
            params["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": name, "schema": result_type.model_json_schema(), "strict": True},
            }
        elif fmt == "json_object_schema":
            params["response_format"] = {"type": "json_object", "schema": result_type.model_json_schema()}
        elif fmt == "json_object":
            params["response_format"] = {"type": "json_object"}
        return params

    def _refused(self, fmt: str, detail: str) -> None:
        """Under ``auto``: the server refused ``fmt``; move to the next form (once, whichever thread sees it)."""
        with self._format_lock:
            if self.response_format_ == fmt and fmt != NEGOTIATION[-1]:
                self.response_format_ = NEGOTIATION[NEGOTIATION.index(fmt) + 1]
                self.format_refusals_.append(f"{fmt}: {detail}")

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

    def _send(self, body: dict[str, Any]) -> tuple[int, Any, bytes]:
        """One HTTP exchange within the overall deadline: (status, headers, body bytes).

        A 200 body is read up to ``max_reply_bytes`` (:class:`_TooLarge` past it, the
        rest unread); an error body up to 64 KiB. :class:`_Expired` when the deadline
        passes, whichever phase the request is in.
        """
        import httpx

        s = self.settings
        deadline = time.monotonic() + s.timeout
        watchdog = _Watchdog(s.timeout)
        try:
            with self._http.stream("POST", self._url, json=body, extensions={"trace": watchdog.trace}) as resp:
                ok = resp.status_code == 200
                cap = s.max_reply_bytes if ok else _ERROR_BODY_BYTES
                declared = resp.headers.get("Content-Length", "")
                if ok and declared.isdigit() and int(declared) > cap:
                    raise _TooLarge
                buf = bytearray()
                for chunk in resp.iter_bytes():
                    buf += chunk
                    if len(buf) > cap:
                        if ok:
                            raise _TooLarge
                        del buf[cap:]
                        break
                    if time.monotonic() > deadline:
                        raise _Expired
                return resp.status_code, resp.headers, bytes(buf)
        except httpx.TimeoutException:
            raise _Expired from None
        except httpx.HTTPError:
            if watchdog.fired:
                raise _Expired from None
            raise
        finally:
            watchdog.cancel()

    def _reply(self, raw: bytes, document: str) -> ChatCompletion:
        """A 200 body validated as a whole (:class:`ChatCompletion`), else an LLMError for ``document``."""
        try:
            data = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            raise self._fail("the server's reply is not JSON (is the base URL an OpenAI-compatible /v1 root?)",
                             document) from None
        try:
            return ChatCompletion.model_validate(data)
        except ValidationError as exc:
            problems = reply_problems(exc)
            raise self._fail(f"the server's reply is not a chat-completions response ({problems}; is the base "
                             "URL an OpenAI-compatible /v1 root?)", document) from None

    def _post(self, body: dict[str, Any], document: str, fmt: str) -> ChatCompletion:
        """Send ``body`` (response form ``fmt``) and return the validated reply, retrying a
        429, a 5xx, a timeout or a transport error ``max_retries`` times with backoff
        (``Retry-After`` honoured up to :data:`_RETRY_AFTER_CAP` s)."""
        import httpx

        s = self.settings
        attempts = s.max_retries + 1
        last = ""
        for attempt in range(attempts):
            wait_s = s.backoff * (2 ** attempt)
            code: int | None = None
            with self._semaphore:
                self._bump(requests=1)
                try:
                    code, headers, raw = self._send(body)
                except _Expired:
                    last = f"no answer within {s.timeout:g} s"
                except _TooLarge:
                    raise self._fail(f"the server's reply is larger than {s.max_reply_bytes:,} bytes "
                                     f"({ENV['max_reply_bytes']}); reading stopped there", document) from None
                except (httpx.ConnectError, httpx.UnsupportedProtocol, httpx.InvalidURL) as exc:
                    raise self._fail(f"cannot connect ({type(exc).__name__}); is the server running "
                                     f"and the URL right?", document, systemic=True) from None
                except httpx.HTTPError as exc:
                    last = f"{type(exc).__name__}"
            if code is not None:
                if code == 200:
                    return self._reply(raw, document)
                last = self._retryable(code, _server_message(raw, s.api_key), body, document, fmt)
                ra = headers.get("Retry-After", "")
                if ra.replace(".", "", 1).isdigit():
                    wait_s = max(wait_s, min(float(ra), _RETRY_AFTER_CAP))
            if attempt + 1 < attempts:
                self._bump(retries=1)
                time.sleep(wait_s)
        raise self._fail(f"{last} (after {attempts} attempts)", document)

    def _retryable(self, code: int, msg: str, body: dict[str, Any], document: str, fmt: str) -> str:
        """What a 429 or 5xx answer says (``"HTTP code: message"``), to retry; any other
        status (and a refused ``response_format``) raises: :class:`_FormatRefused` under
        ``auto``, else an LLMError saying what to set (``systemic`` when every document
        would meet it)."""
        s = self.settings
        if code in (400, 422, 500) and "response_format" in body and _FORMAT_ERROR.search(msg):
            if s.response_format == "auto":
                raise _FormatRefused(fmt, f"HTTP {code}: {msg}")
            raise self._fail(f"the server refused the {fmt} response_format (HTTP {code}: {msg}); "
                             "set CLINEX_LLM_RESPONSE_FORMAT=auto to negotiate (or none)", document,
                             systemic=True)
        if code == 429 or code >= 500:
            return f"HTTP {code}: {msg}"
        if code == 404:
            if "model" in msg.lower():
                raise self._fail(f"model {s.model!r} not found (HTTP 404: {msg})", document, systemic=True)
            raise self._fail(f"no chat-completions endpoint at {s.server}/chat/completions (HTTP 404: "
                             f"{msg or 'not found'}); the base URL usually ends in /v1", document,
                             systemic=True)
        if code in (401, 403):
            raise self._fail(f"the server refused the request (HTTP {code}: {msg}); check "
                             "CLINEX_LLM_API_KEY / --llm-key", document, systemic=True)
        if code in (400, 413, 422) and _CONTEXT_ERROR.search(msg):
            raise self._fail(f"the prompt does not fit the model's context (HTTP {code}: {msg}); "
                             f"set CLINEX_LLM_CONTEXT to the server's context size "
                             f"(now {s.context_tokens})", document)
        raise self._fail(f"HTTP {code}: {msg}", document)

    def _record_usage(self, data: ChatCompletion) -> None:
        u = data.usage
        p = (u.prompt_tokens or 0) if u is not None else 0
        c = (u.completion_tokens or 0) if u is not None else 0
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
            Server unreachable, an HTTP error, retries used up, a reply that is not a
            chat-completions response (:class:`ChatCompletion`) or is larger than
            ``max_reply_bytes``, no reply within ``timeout`` seconds, or no valid
            answer after ``max_repairs`` re-asks. Nothing is cached then.
        """
        msgs = [dict(m) for m in messages]
        hint = schema_hint(result_type)
        if msgs and msgs[0].get("role") == "system":
            msgs[0]["content"] = f"{msgs[0].get('content', '').rstrip()}\n{hint}"
        else:
            msgs.insert(0, {"role": "system", "content": hint})
        # the cache key holds the answer's schema, not the form of response_format negotiated
        sampling = self._params(name, result_type, "none")
        key = cache_key(self.settings.model, msgs, {**sampling, "schema": result_type.model_json_schema()})
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
            while True:  # negotiation: the same request again in the next form, until one is accepted
                fmt = self.response_format_
                try:
                    data = self._post({"model": self.settings.model, "messages": convo,
                                       **self._params(name, result_type, fmt)}, document, fmt)
                except _FormatRefused as exc:
                    self._refused(exc.fmt, exc.detail)
                    continue
                break
            self._record_usage(data)
            session_usage().response_format = fmt
            self.usage.response_format = fmt
            choice = data.choices[0]
            content = redact(choice.message.content or "", self.settings.api_key)
            try:
                answer = parse_json_answer(content, result_type)
            except ValueError as exc:
                problem = str(exc)
                if choice.finish_reason == "length":
                    raise self._fail(f"answer cut off at max_tokens ({self.settings.max_tokens}); raise "
                                     "CLINEX_LLM_MAX_TOKENS", document) from None
                if len(content) > REPAIR_ECHO_CHARS:  # never send a runaway answer back whole
                    content = (content[:REPAIR_ECHO_CHARS]
                               + f" [... cut here: the answer had {len(content):,} characters]")
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
