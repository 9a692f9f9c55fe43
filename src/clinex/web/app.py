"""FastAPI app serving the three tasks, their page and their API docs, all from this machine.

Pages (every asset served by the app itself; nothing is fetched from another host):

- ``GET /`` — the page (``static/index.html``, ``static/app.css``, ``static/app.js``: plain
  HTML, CSS and JavaScript, no build step) with three views: pharmacovigilance,
  risk of bias, cohort selection.
- ``GET /docs``, ``GET /redoc`` — Swagger UI and ReDoc from the files shipped in
  ``fastapi-offline`` (under ``/static-offline-docs``); the schema is ``/openapi.json``.

JSON API (every offset is characters into the text the client gave, half-open, counted in
Unicode code points, i.e. Python ``str`` indices: a page in JavaScript, whose strings index
UTF-16 units, converts them; ``static/app.js`` does). The endpoints that read a raw file
body declare it in ``/openapi.json`` as a required binary ``requestBody`` (so Swagger UI's
"Try it out" can send a file), and the download endpoints their media types. Endpoints:

- ``GET /api/health`` — ``{"status": "ok", "version": ...}``.
- ``GET /api/limits`` — ``{"max_upload": bytes, "timeout": seconds}`` of this server.
- ``GET /api/models`` — ``{"pv": [...], "rob": [...], "cohort": [...]}``: the model names
  each task endpoint accepts (the registries' kinds and ``auto``).
- ``POST /api/pv/extract[?format=phee|brat|csv]`` — body ``{"text": str, "model":
  "auto"|"crf"|"transformer", "unit": "text"|"record"}``. Returns ``{"model", "id",
  "record", "sentences", "counts", "table", "drugs"}`` (see :func:`clinex.web.views.pv_document`):
  ``model`` the loaded model's versioned id, ``record`` the whole text in the PHEE JSON
  schema with offsets into the posted text (the events of :func:`clinex.pv.extract`;
  ``unit="record"`` passes the text to the model whole, as one JSON line of ``clinex pv
  extract -i x.jsonl``), ``sentences`` each sentence's ``start`` / ``end`` in the text,
  the indices of its events in ``record`` and its ``counts``, ``counts`` the record's
  event counts (:mod:`clinex.pv.counts`: ``n_events``, ``n_adverse``, ``n_therapeutic``
  count asserted events only; ``n_*_negated`` the negated ones). Empty or blank text gives one record with no
  events. With ``format``, the same extraction as a download: PHEE JSON lines of the
  sentence records (ids ``text_1``, ``text_2``...: what ``clinex pv extract -i text.txt -o
  x.json`` writes), a zip of brat ``.txt``/``.ann`` pairs (``clinex pv extract --format
  brat``), or the event table as CSV (one row per event; ``record`` is the sentence
  record's id, as in the PHEE download, with the sentence's offsets into the text,
  :data:`clinex.web.views.PV_TABLE_COLUMNS`).
- ``POST /api/pv/upload?filename=NAME[&model=...][&format=...]`` — body: a ``.txt`` file
  (split into sentences, as above) or JSON lines (``.jsonl``/``.json``/``.ndjson``, or a
  first ``{``: ``{"id", "text"}`` or PHEE ``context`` records, each passed whole);
  returns ``{"model", "documents": [...]}``, one document as above per input record.
- ``POST /api/rob/assess?filename=NAME[&model=auto|rules|cues|sentence]`` — body: one
  trial (PDF, text, JATS XML); returns the :class:`~clinex.rob.types.TrialAssessment`
  (``source`` = the uploaded file name).
- ``POST /api/rob/report?filename=NAME[&model=...]`` — the same, as ``{"assessment",
  "html"}``: ``html`` is :func:`clinex.rob.report.render_html`, the report ``clinex rob
  assess`` writes.
- ``POST /api/rob/plot``, ``POST /api/rob/robvis``, ``POST /api/rob/json`` — body
  ``{"assessments": [...]}`` (assessments as returned above); the traffic-light PNG of
  :func:`clinex.rob.plot.plot_traffic_light`, the robvis CSV of
  :func:`clinex.rob.robvis.write_robvis_csv`, and the ``<label>.rob.json`` files of
  :func:`clinex.rob.report.write_json` (one file, or a zip of several), labelled as
  ``clinex rob assess`` names its outputs.
- ``POST /api/cohort/screen?filename=NAME.xml[&model=auto|rules]`` — body: the bytes of one
  n2c2 XML patient file; returns ``{criterion: {"label", "score", "evidence": [...]}}``,
  each evidence item as :func:`clinex.cohort.screen.evidence_record` (the layout of
  ``clinex cohort screen -o x.json``).
- ``POST /api/cohort/patient[?format=xml|json|csv]`` — body ``{"files": [{"name", "text"}],
  "criteria": [{"name", "text"}], "model"}``: one n2c2 XML file, or the dated ``.txt``
  notes of one patient (read as a notes folder,
  :func:`clinex.cohort.formats.notes_folder.read_notes_folder`), and optional criterion
  YAML files (default the 13 n2c2 criteria). Returns :func:`clinex.web.views.cohort_view`;
  with ``format``, the file ``clinex cohort screen`` writes (n2c2 XML with TAGS filled,
  JSON, CSV; :func:`clinex.cohort.screen.write_decisions`).

Safety and reliability
----------------------
- ``clinex serve`` binds 127.0.0.1 unless told otherwise.
- The task endpoints run their CPU work in a bounded pool of worker threads
  (``workers``), never on the event loop, so ``/api/health`` and the page stay quick.
  At most ``workers + queue`` task requests are admitted at once, and at most
  ``per_client`` from one peer address; one more gets HTTP 503 (429 for the per-client
  cap) with ``Retry-After`` before its body is read (:mod:`clinex.web.guard`).
- Slow clients cannot hold the server: a request body has ``body_timeout`` seconds plus
  one per ``body_min_rate`` bytes (408 past it, its slot released), and ``clinex serve``
  closes a connection that has not sent its headers within ``header_timeout`` seconds
  (:mod:`clinex.web.server`).
- The ``Host`` header must name this server (400), cross-site ``POST`` requests are
  refused (403; a form's body type not sent by the app's own page: 415), and every answer
  carries Content-Security-Policy, X-Frame-Options, nosniff and Referrer-Policy headers
  (:mod:`clinex.web.security`).
- Every task request has ``timeout`` seconds of work; past it the answer is 504 (the
  worker thread cannot be interrupted: it finishes in the background and its result is
  dropped).
- Every request body is limited to ``max_upload`` bytes: a larger ``Content-Length`` is
  refused with 413 before anything is read, and a chunked body is counted as it streams
  in and refused with 413 as soon as it passes the limit. Uploads stream to disk.
- Uploads are sniffed before a reader sees them: a ``.pdf`` must start with ``%PDF``, an
  ``.xml`` must parse with defusedxml (no entity expansion, no external DTD).
- Any ``filename`` is accepted: only its last path component is kept, control
  characters (NUL included) are dropped, long names are shortened; the bytes go to a
  private temporary folder that is removed after every request, failed ones included.
- Every failure has one shape, ``{"error": {"code": "CLXnnn", "message": ..., "field": ...}}``:
  a :class:`~clinex.errors.ClinexError` is 422 (its message names the uploaded file,
  never the server's temporary path), a bad request 422 (``field`` names the parameter;
  a JSON body that is not a JSON object at all, e.g. not JSON, is ``field`` ``body`` and
  the message shows the object expected, ``{"text": "..."}``),
  an unknown path 404, a wrong method 405, a too-large body 413, a body or headers too
  slow 408, a bad ``Host`` 400, a cross-site request 403 or 415, this client's cap 429,
  a full queue 503, a request past its time limit 504, and an unexpected error 500 with a generic message
  (the traceback goes to the server log only).

The limits come from :func:`create_app`'s arguments, else from the environment
(``CLINEX_WEB_MAX_UPLOAD`` bytes, ``CLINEX_WEB_WORKERS``, ``CLINEX_WEB_QUEUE``,
``CLINEX_WEB_TIMEOUT`` seconds, ``CLINEX_WEB_PER_CLIENT``, ``CLINEX_WEB_BODY_TIMEOUT``
seconds, ``CLINEX_WEB_BODY_MIN_RATE`` bytes/s, ``CLINEX_WEB_ALLOWED_HOSTS``; and
``CLINEX_WEB_HEADER_TIMEOUT`` seconds for ``clinex serve``), so ``clinex serve`` can be
tuned without code; docs/batch-and-web.md ("Web limits and errors") lists them.

Model choice follows the one settings rule of every surface (:class:`clinex.surface.Settings`):
the request's ``model`` (query or body field) when given (a registry name only: a web client
must not name server paths), else the server's ``CLINEX_<TASK>_MODEL``, else ``auto``.

This module is generic (routes, errors, the guard); the task work runs in
:mod:`clinex.web.tasks`, which reaches each task through its surface adapter
(``clinex.<task>.surface``); uploads are named, stored and sniffed by :mod:`clinex.web.uploads`.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from fastapi import FastAPI, Query, Request
from fastapi.responses import HTMLResponse, Response
from fastapi.staticfiles import StaticFiles
from fastapi_offline import FastAPIOffline
from pydantic import BaseModel, Field, field_validator

from clinex import __version__
from clinex.cohort import surface as cohort
from clinex.errors import ClinexError, ModelError
from clinex.io import limits
from clinex.pv import surface as pv
from clinex.rob import surface as rob
from clinex.surface import Settings, model_env
from clinex.web.errors import add_error_handlers
from clinex.web.guard import BodyDeadline, Guard, Pool
from clinex.web.guard import setting as _setting
from clinex.web.security import Security
from clinex.web.tasks import cohort_patient_work as _cohort_patient_work
from clinex.web.tasks import cohort_work as _cohort_work
from clinex.web.tasks import criteria_folders
from clinex.web.tasks import pv_upload_work as _pv_upload_work
from clinex.web.tasks import pv_work as _pv_work
from clinex.web.tasks import rob_json_work as _rob_json_work
from clinex.web.tasks import rob_plot_work as _rob_plot_work
from clinex.web.tasks import rob_report_work as _rob_report_work
from clinex.web.tasks import rob_robvis_work as _rob_robvis_work
from clinex.web.tasks import rob_work as _rob_work
from clinex.web.uploads import display_name, renamed, scrub, sniff, upload

__all__ = ["create_app"]

_MAX_UPLOAD = 50 * 1024 * 1024  # bytes; a 300-page PDF is well below this
_WORKERS = min(4, os.cpu_count() or 1)  # threads running task work at once
_QUEUE = 64  # task requests admitted beyond the running ones (issue 14: 50 concurrent clients get in)
_TIMEOUT = 300  # seconds of work per task request; a 300-page PDF takes well under this
_PER_CLIENT = 16  # task requests admitted at once from one peer address (see create_app)
_PVFormat = Literal["phee", "brat", "csv"]  # downloads of PV results
_CohortFormat = Literal["xml", "json", "csv"]  # downloads of cohort results



def _pv_text_schema(schema: dict[str, Any]) -> None:
    schema["maxLength"] = limits.MAX_PV_TEXT_CHARS  # read when /openapi.json is made, as the check reads it


class PVRequest(BaseModel):
    """Body of ``POST /api/pv/extract``: text to split into sentences, and the model name."""

    # text: at most clinex.io.limits.MAX_PV_TEXT_CHARS characters, checked while the body is
    # validated (before the request waits for a worker) by the PV pipeline's own check, so the
    # answer is its [CLX002] message (docs/batch-and-web.md, "Limits")

    text: str = Field(json_schema_extra=_pv_text_schema)
    model: str = "auto"
    unit: Literal["text", "record"] = "text"

    @field_validator("text")
    @classmethod
    def _not_too_long(cls, text: str) -> str:
        if len(text) > limits.MAX_PV_TEXT_CHARS:
            pv.records_from_text(text, "text")  # raises the pipeline's FormatError before any splitting
        return text



# ----------------------------------------------------------------------------- model choice

#: The one model-name check of each task (its surface's registry names; a web client must not probe server paths).
_CHECKS: dict[str, Callable[[str], None]] = {
    "pv": pv.check_model_name, "rob": rob.check_model_name, "cohort": cohort.check_model_name,
}


def _model(task: str, given: str | None) -> str:
    """The model of one task request: the client's ``model`` when given, else
    ``CLINEX_<TASK>_MODEL``, else ``auto`` (:meth:`clinex.surface.Settings.resolve`); on the
    web either must be a registry name (a model folder would put a server path in answers).

    Raises
    ------
    ModelError
        The model is not a name the task's registry holds (``field`` ``model``).
    """
    model = Settings.resolve(task, model=given).model
    if given is not None:
        _CHECKS[task](given)
        return model
    try:  # the server's variable: a registry name too, and never echoed (it may be a path)
        _CHECKS[task](model)
    except ClinexError:
        raise ModelError(f"the server's {model_env(task)} names no {task} model this server offers; "
                         "name one in the request or ask the server's operator", field="model") from None
    return model


def _query_model(task: str, request: Request, model: str) -> str:
    """:func:`_model` of a query parameter ``model`` (given only when the query has it)."""
    return _model(task, model if "model" in request.query_params else None)


def _body_model(task: str, body: BaseModel) -> str:
    """:func:`_model` of a body field ``model`` (given only when the body has it)."""
    return _model(task, body.model if "model" in body.model_fields_set else None)  # type: ignore[attr-defined]


# ----------------------------------------------------------------------------- request bodies


class NamedText(BaseModel):
    """One uploaded text file: its name (only the last path component is used) and text."""

    name: str = Field(min_length=1, max_length=1000)
    text: str


class CohortRequest(BaseModel):
    """Body of ``POST /api/cohort/patient``."""

    files: list[NamedText] = Field(min_length=1, max_length=10_000)
    criteria: list[NamedText] = Field(default_factory=list, max_length=1000)
    model: str = "auto"


class AssessmentsRequest(BaseModel):
    """Body of ``POST /api/rob/plot`` and ``POST /api/rob/robvis``: assessments as
    ``/api/rob/assess`` returns them."""

    assessments: list[dict[str, Any]] = Field(max_length=10_000)


# ----------------------------------------------------------------------------- OpenAPI and bad bodies

_BINARY = {"schema": {"type": "string", "format": "binary"}}


def _raw_body(*media_types: str, description: str) -> dict[str, Any]:
    """``openapi_extra`` of an endpoint that reads its raw body (FastAPI sees no body
    parameter, so it declares none): a required binary body, so that Swagger UI's "Try it
    out" offers a file chooser. ``application/octet-stream`` comes first (any file)."""
    return {"requestBody": {"required": True, "description": description,
                            "content": {m: _BINARY for m in ("application/octet-stream", *media_types)}}}


def _downloads(*media_types: str) -> dict[int | str, dict[str, Any]]:
    """``responses`` of an endpoint that answers a file with ``format``: the JSON view and
    each download's media type."""
    return {200: {"description": "the JSON result, or with `format` a download",
                  "content": {"application/json": {}, **{m: _BINARY for m in media_types}}}}


# ----------------------------------------------------------------------------- app


_REDOC_JS = "/static-offline-docs/redoc.standalone.js"
_REDOC_LOGO = "https://cdn.redoc.ly/redoc/logo-mini.svg"  # the one remote asset ReDoc 2 loads itself


def _local_redoc(app: FastAPI) -> None:
    """Serve fastapi-offline's ReDoc bundle with its sidebar logo pointing at the local
    favicon: ReDoc 2 draws ``<img src="https://cdn.redoc.ly/redoc/logo-mini.svg">`` in every
    page, the only request to another host the docs would make
    (``tests/surfaces/test_web_browser.py`` records every request the docs pages make)."""
    import fastapi_offline
    from starlette.routing import Route

    bundle = Path(fastapi_offline.__file__).parent / "static" / "redoc.standalone.js"
    cache: list[bytes] = []

    async def redoc_js(_: Request) -> Response:
        if not cache:
            text = bundle.read_text("utf-8")
            cache.append(text.replace(_REDOC_LOGO, "/static-offline-docs/favicon.png").encode("utf-8"))
        return Response(cache[0], media_type="text/javascript; charset=utf-8")

    app.router.routes.insert(0, Route(_REDOC_JS, redoc_js, methods=["GET"], include_in_schema=False))


# ----------------------------------------------------------------------------- app


def _info_routes(app: FastAPI, static: Any, limit: int, pool: Pool) -> None:
    """The page, ``/api/health``, ``/api/limits`` and ``/api/models``."""

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    def index() -> str:
        return static.joinpath("index.html").read_text("utf-8")

    @app.get("/api/health")
    async def health() -> dict[str, str]:
        """``{"status": "ok", "version": ...}``."""
        return {"status": "ok", "version": __version__}

    @app.get("/api/limits")
    async def limits() -> dict[str, int]:
        """``{"max_upload": bytes, "timeout": seconds}``: the page checks file sizes before sending."""
        return {"max_upload": limit, "timeout": pool.timeout}

    @app.get("/api/models")
    async def models() -> dict[str, list[str]]:
        """The model names each task endpoint accepts (its registry's kinds and ``auto``)."""
        return {"pv": list(pv.model_names()), "rob": list(rob.model_names()), "cohort": list(cohort.model_names())}


async def _with_upload(pool: Pool, request: Request, display: str, work: Callable[..., Any], *args: Any) -> Response:
    """Stream the body to a private folder, sniff it, run ``work(path, *args)`` in the pool;
    errors name the uploaded file; the folder goes in every case."""
    folder = Path(tempfile.mkdtemp(prefix="clinex-web-"))
    try:
        path = await upload(request, folder, display)
        sniff(path, display)
        return await pool.run(work, path, *args)
    except ClinexError as exc:
        raise renamed(exc, folder, display) from None
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _pv_routes(app: FastAPI, pool: Pool) -> None:
    """``/api/pv/extract`` and ``/api/pv/upload``."""

    @app.post("/api/pv/extract", response_model=dict[str, Any],
              responses=_downloads("application/zip", "text/csv"))
    async def pv_extract(req: PVRequest, format: _PVFormat | None = Query(None)) -> Response:  # noqa: A002
        """Events of pasted text (offsets into it); with ``format``, a download."""
        return await pool.run(_pv_work, req.text, _body_model("pv", req), req.unit, format)

    @app.post("/api/pv/upload", response_model=dict[str, Any], responses=_downloads("application/zip", "text/csv"),
              openapi_extra=_raw_body("text/plain", "application/x-ndjson",
                                      description="a .txt file, or JSON lines of {id, text} or PHEE records"))
    async def pv_upload(request: Request, filename: str = Query(...), model: str = Query("auto"),
                        format: _PVFormat | None = Query(None)) -> Response:  # noqa: A002
        """Events of an uploaded .txt or JSON-lines file; with ``format``, a download."""
        chosen = _query_model("pv", request, model)
        display = display_name(filename)
        return await _with_upload(pool, request, display, _pv_upload_work, display, chosen, format)


def _cohort_routes(app: FastAPI, pool: Pool) -> None:
    """``/api/cohort/screen`` and ``/api/cohort/patient``."""

    @app.post("/api/cohort/screen", response_model=dict[str, Any],
              openapi_extra=_raw_body("application/xml", description="one n2c2 XML patient file"))
    async def cohort_screen(request: Request, filename: str = Query(...), model: str = Query("auto")) -> Response:
        """Decisions for one n2c2 XML patient file (the body)."""
        chosen = _query_model("cohort", request, model)
        display = display_name(filename)
        return await _with_upload(pool, request, display, _cohort_work, display, chosen)

    @app.post("/api/cohort/patient", response_model=dict[str, Any], responses=_downloads("application/xml", "text/csv"))
    async def cohort_patient(req: CohortRequest, format: _CohortFormat | None = Query(None)  # noqa: A002
                             ) -> Response:
        """One patient (n2c2 XML or dated notes) with optional criteria; the page's view or a download."""
        chosen = _body_model("cohort", req)
        files = [(display_name(f.name), f.text) for f in req.files]
        criteria = [(display_name(f.name), f.text) for f in req.criteria]
        folder = Path(tempfile.mkdtemp(prefix="clinex-web-"))
        try:
            return await pool.run(_cohort_patient_work, folder, files, criteria, chosen, format)
        except ClinexError as exc:
            raise scrub(exc, [folder, *criteria_folders()]) from None
        finally:
            shutil.rmtree(folder, ignore_errors=True)


def _trial_body() -> dict[str, Any]:
    """``openapi_extra`` of an endpoint that reads one trial report."""
    return _raw_body("application/pdf", "text/plain", "application/xml",
                     description="one trial report: PDF, text or JATS XML")


def _rob_routes(app: FastAPI, pool: Pool) -> None:
    """``/api/rob/assess``, ``/api/rob/report`` (one uploaded trial) and the downloads of
    posted assessments (``/api/rob/plot``, ``/api/rob/json``, ``/api/rob/robvis``)."""

    @app.post("/api/rob/assess", response_model=dict[str, Any], openapi_extra=_trial_body())
    async def rob_assess(request: Request, filename: str = Query(...), model: str = Query("auto")) -> Response:
        """The RoB 2 assessment of one trial report (the body)."""
        chosen = _query_model("rob", request, model)
        display = display_name(filename)
        return await _with_upload(pool, request, display, _rob_work, chosen, display)

    @app.post("/api/rob/report", response_model=dict[str, Any], openapi_extra=_trial_body())
    async def rob_report(request: Request, filename: str = Query(...), model: str = Query("auto")) -> Response:
        """The assessment and the HTML report ``clinex rob assess`` writes."""
        chosen = _query_model("rob", request, model)
        display = display_name(filename)
        return await _with_upload(pool, request, display, _rob_report_work, chosen, display)

    @app.post("/api/rob/plot", response_class=Response,
              responses={200: {"description": "the traffic-light plot", "content": {"image/png": _BINARY}}})
    async def rob_plot(req: AssessmentsRequest) -> Response:
        """Traffic-light plot (PNG) of the posted assessments."""
        return await pool.run(_rob_plot_work, req.assessments)

    @app.post("/api/rob/json", response_class=Response, responses={200: {
        "description": "one .rob.json file, or a zip of several",
        "content": {"application/json": {}, "application/zip": _BINARY}}})
    async def rob_json(req: AssessmentsRequest) -> Response:
        """The assessments as the CLI's ``.rob.json`` files (one file, or a zip of several)."""
        return await pool.run(_rob_json_work, req.assessments)

    @app.post("/api/rob/robvis", response_class=Response,
              responses={200: {"description": "the robvis CSV", "content": {"text/csv": _BINARY}}})
    async def rob_robvis(req: AssessmentsRequest) -> Response:
        """robvis CSV of the posted assessments."""
        return await pool.run(_rob_robvis_work, req.assessments)


def _hosts(allowed_hosts: tuple[str, ...] | list[str] | None) -> tuple[str, ...]:
    """``allowed_hosts`` joined with the comma-separated ``CLINEX_WEB_ALLOWED_HOSTS``."""
    return tuple(allowed_hosts or ()) + tuple(
        h.strip() for h in os.environ.get("CLINEX_WEB_ALLOWED_HOSTS", "").split(",") if h.strip())


def create_app(
    *, max_upload: int | None = None, workers: int | None = None, queue: int | None = None,
    timeout: int | None = None, per_client: int | None = None, body_timeout: int | None = None,
    body_min_rate: int | None = None, allowed_hosts: tuple[str, ...] | list[str] | None = None,
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
        else 64); one more is answered 503 with ``Retry-After``.
    timeout : int, optional
        Seconds of work per task request (default ``CLINEX_WEB_TIMEOUT``, else 300);
        past it the answer is 504.
    per_client : int, optional
        Task requests admitted at once from one peer address (default
        ``CLINEX_WEB_PER_CLIENT``, else 16); one more is answered 429 with ``Retry-After``.
        16 leaves a browser (at most 6 connections per host) and a script uploading in
        parallel room, while one client can take at most 16 of the default 68 slots.
        Behind a reverse proxy every request has the proxy's address: raise it there.
    body_timeout : int, optional
        Seconds a request body may take after the headers (default
        ``CLINEX_WEB_BODY_TIMEOUT``, else 20), plus one second per ``body_min_rate``
        bytes received; past it the answer is 408 (:class:`clinex.web.guard.BodyDeadline`).
    body_min_rate : int, optional
        Bytes per second that extend the body's deadline by one second (default
        ``CLINEX_WEB_BODY_MIN_RATE``, else 500; Apache httpd ``mod_reqtimeout``'s defaults).
    allowed_hosts : sequence of str, optional
        ``Host`` names accepted besides ``localhost``, ``127.0.0.1``, ``::1`` and the
        address the connection came in on; joined with the comma-separated
        ``CLINEX_WEB_ALLOWED_HOSTS``. ``*`` accepts any (behind a proxy that checks it).

    Returns
    -------
    fastapi.FastAPI

    Raises
    ------
    InputError
        A setting below its minimum (1 byte, 1 worker, 0 queue, 1 second, 1 request per
        client, 1 byte per second) or not a number.
    """
    limit = _setting(max_upload, "CLINEX_WEB_MAX_UPLOAD", _MAX_UPLOAD, 1)
    pool = Pool(_setting(workers, "CLINEX_WEB_WORKERS", _WORKERS, 1), _setting(queue, "CLINEX_WEB_QUEUE", _QUEUE, 0),
                _setting(timeout, "CLINEX_WEB_TIMEOUT", _TIMEOUT, 1),
                _setting(per_client, "CLINEX_WEB_PER_CLIENT", _PER_CLIENT, 1))
    deadline = BodyDeadline(_setting(body_timeout, "CLINEX_WEB_BODY_TIMEOUT", BodyDeadline.timeout, 1),
                            _setting(body_min_rate, "CLINEX_WEB_BODY_MIN_RATE", BodyDeadline.min_rate, 1))
    hosts = _hosts(allowed_hosts)
    for task, check in _CHECKS.items():  # a bad $CLINEX_<TASK>_MODEL stops the server before it listens
        settings = Settings.resolve(task)
        if settings.model_from == "env":
            settings.load(check)
    app = FastAPIOffline(title="clinex", version=__version__,
                         description="Clinical text to structured, checkable evidence; runs on this machine.")
    app.state.pool = pool
    inner = app.build_middleware_stack
    # Security goes outside everything, Starlette's own error middleware included, so that
    # every answer (a 500 too) carries its headers and no cross-site request reaches a route
    app.build_middleware_stack = lambda: Security(inner(), allowed_hosts=hosts)  # type: ignore[method-assign]
    app.add_middleware(Guard, max_upload=limit, pool=pool, deadline=deadline)
    _local_redoc(app)
    static = resources.files("clinex.web").joinpath("static")
    app.mount("/static", StaticFiles(directory=str(static)), name="static")
    add_error_handlers(app)
    _info_routes(app, static, limit, pool)
    _pv_routes(app, pool)
    _cohort_routes(app, pool)
    _rob_routes(app, pool)
    return app
