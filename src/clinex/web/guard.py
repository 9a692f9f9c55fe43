"""Admission, body limits and the worker pool of the web app.

:class:`Guard` is the ASGI middleware between the security layer
(:mod:`clinex.web.security`) and the FastAPI routes. For every request it

- refuses a declared ``Content-Length`` above ``max_upload`` (413) and counts a streamed
  body, refusing it (413) as soon as it passes the limit;
- gives the body a deadline (:class:`BodyDeadline`): ``body_timeout`` seconds after the
  headers, plus one second per ``min_rate`` bytes received (the rule of Apache httpd's
  ``mod_reqtimeout``, whose default is ``body=20,MinRate=500``); a body that has not
  arrived by then is answered 408 and its admission slot released;
- admits task requests (the ``POST`` endpoints in :data:`HEAVY`): at most ``per_client``
  at once from one peer address (one more is 429) and ``workers + queue`` in all (one
  more is 503), both with ``Retry-After`` and before the body is read.

:class:`Pool` runs task work on ``workers`` threads with a time limit (504 past it).
"""

from __future__ import annotations

import gc
import json
import math
import os
import re
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.to_thread
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException

from clinex.errors import ClinexError, InputError

__all__ = [
    "HEAVY", "BodyDeadline", "BodyTimedOut", "BodyTooLarge", "File", "Guard", "Pool", "TimedOut",
    "ascii_name", "content_length_message", "error", "error_content", "send_error", "setting",
]

Scope = dict[str, Any]
Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

HEAVY = frozenset({
    "/api/pv/extract", "/api/pv/upload", "/api/cohort/screen", "/api/cohort/patient",
    "/api/rob/assess", "/api/rob/report", "/api/rob/plot", "/api/rob/robvis", "/api/rob/json",
})
"""The task endpoints (``POST``): admitted by :class:`Guard`, run on :class:`Pool`."""


def setting(value: int | None, env: str, default: int, minimum: int) -> int:
    """A whole-number setting: ``value`` if given, else ``$env``, else ``default``.

    Parameters
    ----------
    value : int or None
        The value passed in code (``create_app(...)``, a ``clinex serve`` option).
    env : str
        The environment variable read when ``value`` is None; also the field named in errors.
    default : int
        Used when neither is set.
    minimum : int
        The smallest value accepted.

    Raises
    ------
    InputError
        The variable is not a whole number, or the value is below ``minimum``.
    """
    if value is None:
        raw = os.environ.get(env)
        if raw is None:
            return default
        try:
            value = int(raw)
        except ValueError:
            raise InputError(f"{env}={raw!r} is not a whole number", field=env) from None
    if value < minimum:
        raise InputError(f"must be at least {minimum}, got {value}", field=env)
    return value


# ----------------------------------------------------------------------------- errors


def error_content(code: str, message: str, field: str | None = None) -> dict[str, Any]:
    """The one error shape of every failed request."""
    return {"error": {"code": code, "message": message, "field": field}}


def error(status: int, code: str, message: str, field: str | None = None,
          headers: dict[str, str] | None = None) -> JSONResponse:
    """A failed request's answer from a route or exception handler."""
    return JSONResponse(status_code=status, content=error_content(code, message, field), headers=headers)


async def send_error(send: Send, status: int, content: dict[str, Any],
                     headers: dict[str, str] | None = None) -> None:
    """Answer from a middleware itself (before the app or the body is touched)."""
    body = json.dumps(content).encode("utf-8")
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    raw += [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})


class BodyTooLarge(HTTPException):
    """Raised from ``receive`` when a streamed body passes the limit (FastAPI re-raises
    an HTTPException met while reading a body, so every route answers 413)."""

    def __init__(self, limit: int) -> None:
        super().__init__(413, too_large_message(limit), headers={"Connection": "close"})


class BodyTimedOut(HTTPException):
    """Raised from ``receive`` when the body has not arrived by its deadline (answered
    408 with ``Connection: close``, so the slow client's connection goes too)."""

    def __init__(self, received: int, seconds: float, timeout: int, min_rate: int) -> None:
        message = str(InputError(
            f"request body not received in time ({received} bytes in {seconds:.0f} s; the limit is "
            f"{timeout} s, CLINEX_WEB_BODY_TIMEOUT, plus 1 s per {min_rate} bytes received, "
            "CLINEX_WEB_BODY_MIN_RATE)", field="body"))
        super().__init__(408, message, headers={"Connection": "close"})


def content_length_message() -> str:
    """The message of a 400 for a ``Content-Length`` that is not a number of at most 19 digits
    (h11 refuses longer ones; 19 digits are far past any upload limit), whoever sees it
    first (:class:`Guard`, or the HTTP server's parser in :mod:`clinex.web.server`)."""
    return str(InputError("Content-Length is not a number of at most 19 digits", field="body"))


def too_large_message(limit: int) -> str:
    """The message of a 413: the limit in MB (or bytes, below 1 MB)."""
    size = f"{limit // (1024 * 1024)} MB" if limit >= 1024 * 1024 else f"{limit} bytes"
    return str(InputError(f"request body larger than {size}", field="body"))


class TimedOut(Exception):
    """A task request ran past the time limit (answered 504)."""

    def __init__(self, seconds: int) -> None:
        super().__init__(seconds)
        self.seconds = seconds


# ----------------------------------------------------------------------------- worker pool


_GC_LOCK = threading.Lock()
_gc_baseline = [0]  # objects frozen after the last full collection
_gc_calls = [0]  # settles since the frozen set was last counted
_GC_COUNT_EVERY = 200  # settles between two counts of the frozen set (see below)


def _settle_garbage() -> None:
    """Collect what a task left, then freeze the survivors (models, caches) out of the
    collector's sight (:func:`gc.freeze`).

    A full collection walks every tracked object while holding the GIL: with loaded
    models that is 0.2-0.7 s, during which the event loop (and ``/api/health``) stalls.
    Collecting right after each task, with everything older frozen, walks only what is
    new. Freezing can keep cyclic garbage of a task still running in another thread, so
    once the frozen set has grown by half since the last full collection, it is
    unfrozen and collected in full (rarely: the growth is geometric). Counting the
    frozen set (:func:`gc.get_freeze_count`) walks it too (35 ms for the ~580,000
    objects of a loaded CRF on this machine, measured), so it is counted only every
    200th settle: a one-sentence PV request is ~7 ms of work, and counting on each would
    multiply it by six (bench/web_load.py).
    """
    if not _GC_LOCK.acquire(blocking=False):  # one thread at a time; a busy one skips
        return
    try:
        full = not _gc_baseline[0]
        _gc_calls[0] += 1
        if not full and _gc_calls[0] >= _GC_COUNT_EVERY:
            _gc_calls[0] = 0
            full = gc.get_freeze_count() > 1.5 * _gc_baseline[0]
        if full:
            gc.unfreeze()
        gc.collect()
        gc.freeze()
        if full:
            _gc_baseline[0] = gc.get_freeze_count()
            _gc_calls[0] = 0
    finally:
        _GC_LOCK.release()


@dataclass(frozen=True)
class File:
    """A download: its bytes, media type and the file name offered to the browser."""

    content: bytes
    media_type: str
    filename: str


def ascii_name(name: str) -> str:
    """A download name safe inside a quoted ``Content-Disposition`` value."""
    return re.sub(r'[^A-Za-z0-9._-]', "_", name)[:200] or "download"


class Pool:
    """Bounded worker threads for task work, and admission of task requests.

    ``admit`` lets in at most ``per_client`` requests from one peer address and
    ``workers + queue`` in all (counted on the event loop, so plain integers are enough);
    ``run`` runs a function on one of ``workers`` threads.

    Parameters
    ----------
    workers : int
        Threads running task work at once.
    queue : int
        Task requests admitted beyond the running ones.
    timeout : int
        Seconds of work per task request (504 past it).
    per_client : int
        Task requests admitted at once from one peer address.
    """

    def __init__(self, workers: int, queue: int, timeout: int, per_client: int) -> None:
        self.workers = workers
        self.queue = queue
        self.timeout = timeout
        self.per_client = per_client
        self.active = 0
        self.by_client: dict[str, int] = {}
        self._limiter: anyio.CapacityLimiter | None = None
        self._seconds = 1.0  # running mean of one task's duration, for Retry-After

    def admit(self, client: str) -> int:
        """Admit one task request of ``client`` (its peer address).

        Returns
        -------
        int
            0 when admitted (call :meth:`release` when it ends), 429 when this client
            already has ``per_client`` requests in, 503 when the server has
            ``workers + queue``.
        """
        if self.by_client.get(client, 0) >= self.per_client:
            return 429
        if self.active >= self.workers + self.queue:
            return 503
        self.active += 1
        self.by_client[client] = self.by_client.get(client, 0) + 1
        return 0

    def release(self, client: str) -> None:
        """End one admitted request of ``client``."""
        self.active -= 1
        left = self.by_client[client] - 1
        if left:
            self.by_client[client] = left
        else:
            del self.by_client[client]

    def retry_after(self, active: int | None = None) -> int:
        """Seconds until a slot is likely free: ``active`` requests (default all) ahead,
        at the mean duration of one, on ``workers`` threads; 1 to 120."""
        ahead = self.active if active is None else active
        return max(1, min(120, math.ceil(self._seconds * ahead / self.workers)))

    async def run(self, fn: Callable[..., Any], *args: Any) -> Response:
        """``fn(*args)`` on a worker thread, encoded there too (encoding a large result on
        the event loop would stall every other request): a dict as JSON, a :class:`File`
        as a download. Raises :class:`TimedOut` after ``timeout`` seconds."""
        if self._limiter is None:  # created inside the event loop it belongs to
            self._limiter = anyio.CapacityLimiter(self.workers)

        def timed() -> bytes | File:
            start = time.perf_counter()
            try:
                result = fn(*args)
                if isinstance(result, File):
                    return result
                return json.dumps(result, ensure_ascii=False, allow_nan=False,
                                  separators=(",", ":")).encode("utf-8")
            finally:
                self._seconds = 0.8 * self._seconds + 0.2 * (time.perf_counter() - start)
                _settle_garbage()

        try:
            with anyio.fail_after(self.timeout):
                body = await anyio.to_thread.run_sync(timed, limiter=self._limiter, abandon_on_cancel=True)
        except TimeoutError:
            raise TimedOut(self.timeout) from None
        if isinstance(body, File):
            return Response(content=body.content, media_type=body.media_type,
                            headers={"Content-Disposition": f'attachment; filename="{ascii_name(body.filename)}"'})
        return Response(content=body, media_type="application/json")


# ----------------------------------------------------------------------------- the guard


@dataclass(frozen=True)
class BodyDeadline:
    """How long a request body may take: ``timeout`` seconds from the end of the
    headers, plus one second per ``min_rate`` bytes received.

    The rule and the defaults (20 s, 500 bytes/s) are those of Apache httpd's
    ``mod_reqtimeout`` (``RequestReadTimeout body=20,MinRate=500``): a client sending
    one byte every 2 s is cut off after about 20 s, while a 50 MB upload at 500 bytes/s
    or faster always completes.
    """

    timeout: int = 20
    min_rate: int = 500

    def seconds_left(self, elapsed: float, received: int) -> float:
        """Seconds the body may still take, after ``elapsed`` seconds and ``received`` bytes."""
        return self.timeout + received / self.min_rate - elapsed


class Guard:
    """ASGI middleware: body limit and deadline, and admission of task requests.

    Answers 400 (a ``Content-Length`` that is not a number), 413 (too large), 429
    (this client's cap), 503 (the server's) itself before the body is read, and makes
    ``receive`` raise :class:`BodyTooLarge` (413) or :class:`BodyTimedOut` (408) while it
    is read. Refusals before the body close the connection (``Connection: close``), so a
    client that keeps sending holds no socket.
    """

    def __init__(self, app: ASGIApp, *, max_upload: int, pool: Pool, deadline: BodyDeadline) -> None:
        self.app = app
        self.max_upload = max_upload
        self.pool = pool
        self.deadline = deadline

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.max_upload
        declared = [v for k, v in scope.get("headers", []) if k.lower() == b"content-length"]
        if declared:
            try:
                length = int(declared[0])
            except ValueError:
                length = -1
            if length < 0:
                await send_error(send, 400, error_content("CLX001", content_length_message(), "body"),
                                 {"Connection": "close"})
                return
            if length > limit:
                await send_error(send, 413, error_content("CLX001", too_large_message(limit), "body"),
                                 {"Connection": "close"})
                return
        heavy = scope.get("method") == "POST" and scope.get("path") in HEAVY
        client = (scope.get("client") or ("unknown", 0))[0]
        if heavy:
            refused = self.pool.admit(client)
            if refused == 429:
                mine = self.pool.by_client.get(client, 0)
                msg = str(InputError(
                    f"too many task requests from this client at once ({mine} running or waiting; the limit "
                    "is CLINEX_WEB_PER_CLIENT); wait for one to finish"))
                await send_error(send, 429, error_content("CLX001", msg),
                                 {"Retry-After": str(self.pool.retry_after(mine)), "Connection": "close"})
                return
            if refused == 503:
                msg = str(ClinexError(
                    f"server busy ({self.pool.active} task requests running or waiting); try again later"
                ))
                await send_error(send, 503, error_content("CLX000", msg),
                                 {"Retry-After": str(self.pool.retry_after()), "Connection": "close"})
                return
        received = 0
        complete = False
        start = time.monotonic()
        deadline = self.deadline

        async def limited() -> Message:
            nonlocal received, complete
            if complete:  # the body is in: later calls wait for a disconnect, with no deadline
                return await receive()
            left = deadline.seconds_left(time.monotonic() - start, received)
            message = None
            if left > 0:
                with anyio.move_on_after(left):
                    message = await receive()
            if message is None:
                raise BodyTimedOut(received, time.monotonic() - start, deadline.timeout, deadline.min_rate)
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise BodyTooLarge(limit)
                complete = not message.get("more_body", False)
            else:
                complete = True
            return message

        started = False

        async def tracked(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, limited, tracked)
        except (BodyTooLarge, BodyTimedOut) as exc:  # normally answered by the app's handler already
            if not started:
                await send_error(send, exc.status_code, error_content("CLX001", exc.detail, "body"), exc.headers)
        finally:
            if heavy:
                self.pool.release(client)
