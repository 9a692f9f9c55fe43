"""FastAPI app serving the three tasks and one static page.

Endpoints (JSON in, JSON out; the OpenAPI schema is at ``/openapi.json``):

- ``GET /`` — the single-page UI (``static/index.html``).
- ``GET /api/health`` — ``{"status": "ok", "version": ...}``.
- ``POST /api/pv/extract`` — body ``{"text": str, "model": "auto"|"crf"|"transformer",
  "unit": "text"|"record"}``; returns ``{"model", "record", "sentences"}``: ``model`` is the
  loaded model's versioned id (``clinex.pv.crf.v1``, ``clinex.pv.transformer.v1``; see
  :func:`clinex.pv.models.model_id`), ``record`` the whole posted text in the PHEE JSON
  schema with offsets into the posted text (the events of :func:`clinex.pv.extract`;
  ``unit="record"`` passes the text to the model whole, never split, as a JSON line of
  ``clinex pv extract -i x.jsonl`` or ``clinex batch pv``), ``sentences`` the sentences found in the text, each as ``{"start", "end", "record"}``:
  the sentence's character offsets in the posted text and its events in the PHEE
  JSON schema (offsets into the sentence, so add ``start`` for the posted text).
  Empty or blank text gives one record with that text and no events, as
  ``clinex pv extract ""``.
- ``POST /api/cohort/screen?filename=NAME.xml`` — body: the bytes of one n2c2 XML
  patient file; returns ``{criterion: {"label", "score", "evidence": [...]}}``, each
  evidence item flat as :func:`clinex.cohort.screen.evidence_record` (the layout of
  ``clinex cohort screen -o x.json`` and ``clinex batch cohort``).
- ``POST /api/rob/assess?filename=NAME.pdf[&model=auto|rules|cues|sentence]`` — body: the
  bytes of one trial (PDF, text, JATS XML); returns the
  :class:`~clinex.rob.types.TrialAssessment` (``source`` = the uploaded file name).

Reliability
-----------
- The three task endpoints run their CPU work in a bounded pool of worker threads
  (``workers``), never on the event loop, so ``/api/health`` and the page stay quick.
  At most ``workers + queue`` task requests are admitted at once; one more gets HTTP 503
  with ``Retry-After`` before its body is read.
- Every request body is limited to ``max_upload`` bytes: a larger ``Content-Length`` is
  refused with 413 before anything is read, and a chunked body is counted as it streams
  in and refused with 413 as soon as it passes the limit. Uploads stream to disk.
- Any ``filename`` is accepted: only its last path component is kept, control
  characters (NUL included) are dropped, long names are shortened; the bytes go to a
  private temporary folder that is removed after every request, failed ones included.
- Every failure has one shape, ``{"error": {"code": "CLXnnn", "message": ..., "field": ...}}``:
  a :class:`~clinex.errors.ClinexError` is 422 (its message names the uploaded file,
  never the server's temporary path), a bad request 422 (``field`` names the parameter),
  an unknown path 404, a wrong method 405, a too-large body 413, a full queue 503, and
  an unexpected error 500 with a generic message (the traceback goes to the server log
  only).

The limits come from :func:`create_app`'s arguments, else from the environment
(``CLINEX_WEB_MAX_UPLOAD`` bytes, ``CLINEX_WEB_WORKERS``, ``CLINEX_WEB_QUEUE``), so
``clinex serve`` can be tuned without code.
"""

from __future__ import annotations

import gc
import json
import math
import os
import re
import shutil
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable
from importlib import resources
from pathlib import Path
from typing import Any, Literal

import anyio
import anyio.to_thread
from fastapi import FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, Response
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException

from clinex import __version__
from clinex.errors import ClinexError, InputError, SchemaError

__all__ = ["create_app"]

_MAX_UPLOAD = 50 * 1024 * 1024  # bytes; a 300-page PDF is well below this
_WORKERS = min(4, os.cpu_count() or 1)  # threads running task work at once
_QUEUE = 32  # task requests admitted beyond the running ones
_HEAVY = frozenset({"/api/pv/extract", "/api/cohort/screen", "/api/rob/assess"})
_MAX_DISK_NAME = 200  # bytes of a temporary file's name (file systems allow 255)
_MAX_NAME = 255  # characters of the uploaded name kept for messages and ``source``


Scope = dict[str, Any]
Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


class PVRequest(BaseModel):
    """Body of ``POST /api/pv/extract``: text to split into sentences, and the model name."""

    text: str = Field(max_length=1_000_000)
    model: str = "auto"
    unit: Literal["text", "record"] = "text"


# ----------------------------------------------------------------------------- errors


def _error_content(code: str, message: str, field: str | None = None) -> dict[str, Any]:
    """The one error shape of every failed request."""
    return {"error": {"code": code, "message": message, "field": field}}


def _error(status: int, code: str, message: str, field: str | None = None,
           headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse(status_code=status, content=_error_content(code, message, field), headers=headers)


class _BodyTooLarge(HTTPException):
    """Raised from ``receive`` when a streamed body passes the limit (FastAPI re-raises
    an HTTPException met while reading a body, so every route answers 413)."""

    def __init__(self, limit: int) -> None:
        super().__init__(413, _too_large_message(limit), headers={"Connection": "close"})


def _too_large_message(limit: int) -> str:
    size = f"{limit // (1024 * 1024)} MB" if limit >= 1024 * 1024 else f"{limit} bytes"
    return str(InputError(f"request body larger than {size}", field="body"))


async def _send_error(send: Send, status: int, content: dict[str, Any],
                      headers: dict[str, str] | None = None) -> None:
    """Answer from the middleware itself (before the app or the body is touched)."""
    body = json.dumps(content).encode("utf-8")
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    raw += [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})


# ----------------------------------------------------------------------------- worker pool


_GC_LOCK = threading.Lock()
_gc_baseline = [0]  # objects frozen after the last full collection


def _settle_garbage() -> None:
    """Collect what a task left, then freeze the survivors (models, caches) out of the
    collector's sight (:func:`gc.freeze`).

    A full collection walks every tracked object while holding the GIL: with loaded
    models that is 0.2-0.7 s, during which the event loop (and ``/api/health``) stalls.
    Collecting right after each task, with everything older frozen, walks only what is
    new. Freezing can keep cyclic garbage of a task still running in another thread, so
    once the frozen set has grown by half since the last full collection, it is
    unfrozen and collected in full (rarely: the growth is geometric).
    """
    if not _GC_LOCK.acquire(blocking=False):  # one thread at a time; a busy one skips
        return
    try:
        full = not _gc_baseline[0] or gc.get_freeze_count() > 1.5 * _gc_baseline[0]
        if full:
            gc.unfreeze()
        gc.collect()
        gc.freeze()
        if full:
            _gc_baseline[0] = gc.get_freeze_count()
    finally:
        _GC_LOCK.release()


class _Pool:
    """Bounded worker threads for task work, and admission of task requests.

    ``admit`` lets in at most ``workers + queue`` requests (counted on the event loop,
    so a plain integer is enough); ``run`` runs a function on one of ``workers`` threads.
    """

    def __init__(self, workers: int, queue: int) -> None:
        self.workers = workers
        self.queue = queue
        self.active = 0
        self._limiter: anyio.CapacityLimiter | None = None
        self._seconds = 1.0  # running mean of one task's duration, for Retry-After

    def admit(self) -> bool:
        if self.active >= self.workers + self.queue:
            return False
        self.active += 1
        return True

    def release(self) -> None:
        self.active -= 1

    def retry_after(self) -> int:
        """Seconds until a slot is likely free: the queue ahead, at the mean duration."""
        return max(1, min(120, math.ceil(self._seconds * self.active / self.workers)))

    async def run(self, fn: Callable[..., Any], *args: Any) -> Response:
        """``fn(*args)`` on a worker thread, encoded as a JSON response there too (encoding
        a large result on the event loop would stall every other request)."""
        if self._limiter is None:  # created inside the event loop it belongs to
            self._limiter = anyio.CapacityLimiter(self.workers)

        def timed() -> bytes:
            start = time.perf_counter()
            try:
                return json.dumps(fn(*args), ensure_ascii=False, allow_nan=False,
                                  separators=(",", ":")).encode("utf-8")
            finally:
                self._seconds = 0.8 * self._seconds + 0.2 * (time.perf_counter() - start)
                _settle_garbage()

        body = await anyio.to_thread.run_sync(timed, limiter=self._limiter)
        return Response(content=body, media_type="application/json")


class _Guard:
    """ASGI middleware: body limit (Content-Length, then while streaming) and admission
    of task requests; answers 413 / 503 itself, before the body is read."""

    def __init__(self, app: ASGIApp, *, max_upload: int, pool: _Pool) -> None:
        self.app = app
        self.max_upload = max_upload
        self.pool = pool

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
                msg = str(InputError("Content-Length is not a number", field="body"))
                await _send_error(send, 400, _error_content("CLX001", msg, "body"), {"Connection": "close"})
                return
            if length > limit:
                await _send_error(send, 413, _error_content("CLX001", _too_large_message(limit), "body"),
                                  {"Connection": "close"})
                return
        heavy = scope.get("method") == "POST" and scope.get("path") in _HEAVY
        if heavy and not self.pool.admit():
            msg = str(ClinexError(
                f"server busy ({self.pool.active} task requests running or waiting); try again later"
            ))
            await _send_error(send, 503, _error_content("CLX000", msg),
                              {"Retry-After": str(self.pool.retry_after())})
            return
        received = 0

        async def limited() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise _BodyTooLarge(limit)
            return message

        started = False

        async def tracked(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, limited, tracked)
        except _BodyTooLarge as exc:  # normally answered by the app's handler already
            if not started:
                await _send_error(send, 413, _error_content("CLX001", exc.detail, "body"), exc.headers)
        finally:
            if heavy:
                self.pool.release()


# ----------------------------------------------------------------------------- uploads

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_SUFFIX = re.compile(r"\.[A-Za-z0-9]{1,10}$")


def _display_name(filename: str) -> str:
    """The uploaded name as messages and ``source`` show it: its last path component,
    without control characters, valid UTF-8, at most 255 characters (suffix kept)."""
    name = re.split(r"[/\\]", filename)[-1]
    name = _CONTROL.sub("", name).encode("utf-8", "replace").decode("utf-8").strip()
    if name in {"", ".", ".."}:
        raise InputError("filename must name a file", field="filename")
    if len(name) > _MAX_NAME:
        m = _SUFFIX.search(name)
        suffix = m.group(0) if m else ""
        name = name[: _MAX_NAME - len(suffix)] + suffix
    return name


def _disk_name(display: str) -> str:
    """The temporary file's name: the display name if it fits, else ``upload`` with its
    suffix (the readers choose by suffix; n2c2 patient ids are the stem)."""
    try:
        if len(os.fsencode(display)) <= _MAX_DISK_NAME and not display.startswith("-"):
            return display
    except UnicodeError:
        pass
    m = _SUFFIX.search(display)
    return "upload" + (m.group(0) if m else "")


async def _upload(request: Request, folder: Path, display: str) -> Path:
    """Stream the body into ``folder`` (the size limit is enforced by :class:`_Guard`)."""
    path = folder / _disk_name(display)
    with path.open("wb") as out:
        async for chunk in request.stream():
            out.write(chunk)
    return path


def _renamed(exc: ClinexError, folder: Path, display: str) -> ClinexError:
    """The same error, naming the uploaded file instead of the server's temporary copy."""
    where = str(folder)
    if exc.path is not None and exc.path.startswith(where):
        exc.path = display
    if where in exc.message:
        exc.message = exc.message.replace(where + os.sep, "").replace(where, "")
    return exc


def _check_pv_model(name: str) -> None:
    """Only the registry's model names (:data:`clinex.pv.models.REGISTRY`): a web client
    must not probe server paths."""
    from clinex.pv.models import model_names, unknown_model_message

    if name not in model_names():
        raise SchemaError(unknown_model_message(name, folders=False), field="model")


def _check_rob_model(name: str) -> None:
    """Only the registry's evidence model names (:data:`clinex.rob.evidence.REGISTRY`)."""
    from clinex.rob.evidence import model_names, unknown_model_message

    if name not in model_names():
        raise SchemaError(unknown_model_message(name, files=False), field="model")


# ----------------------------------------------------------------------------- task work (worker threads)


_PV_LOCK = threading.Lock()  # one loaded model per kind, shared: the CRF tagger and the
# fast tokenizers are not thread-safe, so pv work runs one request at a time


def _pv_work(text: str, model_name: str, unit: str = "text") -> dict[str, Any]:
    """``record``: the whole text, offsets into the text given (the same
    :func:`clinex.pv.pipeline.extract_text` as :func:`clinex.pv.extract`, or with
    ``unit="record"`` the record path of ``clinex pv extract -i x.jsonl``);
    ``sentences``: the same events per sentence (for the page), offsets into that
    sentence, which starts at ``start`` in the text."""
    from clinex.pv.formats.phee_json import to_phee_dict
    from clinex.pv.models import load_model, model_id
    from clinex.pv.pipeline import extract_text_sentences

    with _PV_LOCK:
        model = load_model(model_name)
        whole, sentences = extract_text_sentences(text, model=model, sentence_prefix="s", split=unit == "text")
    out = [{"start": start, "end": end, "record": to_phee_dict(item)} for start, end, item in sentences]
    return {"model": model_id(model), "record": to_phee_dict(whole), "sentences": out}


def _cohort_work(path: Path) -> dict[str, Any]:
    from clinex.cohort import screen
    from clinex.cohort.formats.n2c2_xml import read_patient
    from clinex.cohort.screen import decisions_to_dict

    return decisions_to_dict(screen(read_patient(path)))


def _rob_work(path: Path, model: str, display: str) -> dict[str, Any]:
    from clinex.rob.assess import assess_path
    from clinex.rob.evidence import load_evidence_model

    result = assess_path(path, model=load_evidence_model(model))
    return result.model_copy(update={"source": display}).model_dump(mode="json")


# ----------------------------------------------------------------------------- app


def _setting(value: int | None, env: str, default: int, minimum: int) -> int:
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


def create_app(
    *, max_upload: int | None = None, workers: int | None = None, queue: int | None = None
) -> FastAPI:
    """Build the FastAPI application (models load lazily on first request).

    Parameters
    ----------
    max_upload : int, optional
        Largest request body in bytes (default ``CLINEX_WEB_MAX_UPLOAD``, else 50 MB);
        a larger one is answered 413 without being read.
    workers : int, optional
        Worker threads running task work at once (default ``CLINEX_WEB_WORKERS``, else
        ``min(4, CPUs)``).
    queue : int, optional
        Task requests admitted beyond the running ones (default ``CLINEX_WEB_QUEUE``,
        else 32); one more is answered 503 with ``Retry-After``.

    Returns
    -------
    fastapi.FastAPI

    Raises
    ------
    InputError
        A setting below its minimum (1 byte, 1 worker, 0 queue) or not a number.
    """
    limit = _setting(max_upload, "CLINEX_WEB_MAX_UPLOAD", _MAX_UPLOAD, 1)
    pool = _Pool(_setting(workers, "CLINEX_WEB_WORKERS", _WORKERS, 1), _setting(queue, "CLINEX_WEB_QUEUE", _QUEUE, 0))
    app = FastAPI(title="clinex", version=__version__)
    app.state.pool = pool
    app.add_middleware(_Guard, max_upload=limit, pool=pool)

    @app.exception_handler(ClinexError)
    async def _clinex_error(_: Request, exc: ClinexError) -> JSONResponse:
        return _error(422, exc.code, str(exc), exc.field)

    @app.exception_handler(RequestValidationError)
    async def _bad_request(_: Request, exc: RequestValidationError) -> JSONResponse:
        errors = exc.errors()
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e.get('loc', ())[1:]) or 'body'}: {e.get('msg', 'invalid')}"
            for e in errors
        )
        first = errors[0].get("loc", ()) if errors else ()
        field = ".".join(str(p) for p in first[1:]) or (str(first[0]) if first else None)
        err = InputError(f"bad request ({problems})")
        return _error(422, err.code, str(err), field)

    @app.exception_handler(HTTPException)
    async def _http_error(request: Request, exc: HTTPException) -> JSONResponse:
        if isinstance(exc, _BodyTooLarge):
            return _error(413, "CLX001", exc.detail, "body", dict(exc.headers or {}))
        path = request.url.path[:200]
        if exc.status_code == 404:
            message = f"no such endpoint: {path}"
        elif exc.status_code == 405:
            allowed = (exc.headers or {}).get("Allow", "")
            message = f"method {request.method} not allowed for {path}" + (f"; allowed: {allowed}" if allowed else "")
        else:
            message = str(exc.detail)
        code = "CLX001" if exc.status_code < 500 else "CLX000"
        err = InputError(message) if code == "CLX001" else ClinexError(message)
        return _error(exc.status_code, code, str(err), None, dict(exc.headers or {}))

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        # the server re-raises it after this answer, so its log has the traceback
        err = ClinexError(f"internal error ({type(exc).__name__}) in {request.url.path[:200]}; "
                          "the server log has the details")
        return _error(500, err.code, str(err))

    @app.get("/", response_class=HTMLResponse)
    def index() -> str:
        return resources.files("clinex.web").joinpath("static/index.html").read_text("utf-8")

    @app.get("/api/health")
    async def health() -> dict[str, str]:
        return {"status": "ok", "version": __version__}

    @app.post("/api/pv/extract", response_model=dict[str, Any])
    async def pv_extract(req: PVRequest) -> Response:
        _check_pv_model(req.model)
        return await pool.run(_pv_work, req.text, req.model, req.unit)

    async def _with_upload(request: Request, filename: str, work: Callable[..., dict[str, Any]],
                           *args: Any) -> Response:
        display = _display_name(filename)
        folder = Path(tempfile.mkdtemp(prefix="clinex-web-"))
        try:
            path = await _upload(request, folder, display)
            return await pool.run(work, path, *args)
        except ClinexError as exc:
            raise _renamed(exc, folder, display) from None
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    @app.post("/api/cohort/screen", response_model=dict[str, Any])
    async def cohort_screen(request: Request, filename: str = Query(...)) -> Response:
        return await _with_upload(request, filename, _cohort_work)

    @app.post("/api/rob/assess", response_model=dict[str, Any])
    async def rob_assess(
        request: Request, filename: str = Query(...), model: str = Query("auto")
    ) -> Response:
        _check_rob_model(model)
        display = _display_name(filename)
        return await _with_upload(request, filename, _rob_work, model, display)

    return app
