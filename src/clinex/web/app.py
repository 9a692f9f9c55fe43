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
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import tempfile
import threading
import zipfile
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from fastapi import FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from fastapi_offline import FastAPIOffline
from pydantic import BaseModel, Field, field_validator
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect

from clinex import __version__
from clinex.errors import ClinexError, FormatError, InputError, ModelError, SchemaError
from clinex.io import limits
from clinex.web.guard import BodyDeadline, BodyTimedOut, BodyTooLarge, Guard, Pool, TimedOut
from clinex.web.guard import File as _File
from clinex.web.guard import error as _error
from clinex.web.guard import setting as _setting
from clinex.web.security import Security

__all__ = ["create_app"]

_MAX_UPLOAD = 50 * 1024 * 1024  # bytes; a 300-page PDF is well below this
_WORKERS = min(4, os.cpu_count() or 1)  # threads running task work at once
_QUEUE = 64  # task requests admitted beyond the running ones (issue 14: 50 concurrent clients get in)
_TIMEOUT = 300  # seconds of work per task request; a 300-page PDF takes well under this
_PER_CLIENT = 16  # task requests admitted at once from one peer address (see create_app)
_MAX_DISK_NAME = 200  # bytes of a temporary file's name (file systems allow 255)
_MAX_NAME = 255  # characters of the uploaded name kept for messages and ``source``
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
            from clinex.pv.pipeline import text_records

            text_records(text, "text")  # raises the pipeline's FormatError before any splitting
        return text


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
    """Stream the body into ``folder`` (the size limit is enforced by :class:`clinex.web.guard.Guard`)."""
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


def _scrub(exc: ClinexError, folders: list[Path]) -> ClinexError:
    """The same error without the server's folders: paths under them keep only their
    file name (a criterion file's content-hash folder goes too)."""
    for folder in folders:
        pattern = re.compile(re.escape(str(folder)) + r"(?:[/\\](?:[0-9a-f]{32}|patient))?[/\\]?")
        if exc.path is not None:
            exc.path = pattern.sub("", exc.path)
        exc.message = pattern.sub("", exc.message)
    return exc


def _check_pv_model(name: str) -> None:
    """Only the registry's model names (:data:`clinex.pv.models.REGISTRY`): a web client
    must not probe server paths."""
    from clinex.pv.models import model_names, unknown_model_message

    if name not in model_names():
        raise ModelError(unknown_model_message(name, folders=False), field="model")


def _check_cohort_model(name: str) -> None:
    """Only the registry's cohort model names (:data:`clinex.cohort.models.REGISTRY`)."""
    from clinex.cohort.models import model_names, unknown_model_message

    if name not in model_names():
        raise ModelError(unknown_model_message(name), field="model")


def _check_rob_model(name: str) -> None:
    """Only the registry's evidence model names (:data:`clinex.rob.evidence.REGISTRY`)."""
    from clinex.rob.evidence import model_names, unknown_model_message

    if name not in model_names():
        raise ModelError(unknown_model_message(name, files=False), field="model")


# ----------------------------------------------------------------------------- sniffing


def _sniff(path: Path, display: str) -> None:
    """Refuse an upload whose bytes do not match its name, before a reader opens it.

    A ``.pdf`` must start with ``%PDF`` (the PDF header, ISO 32000-1 section 7.5.2; clinex
    does not accept the junk before it that some readers tolerate); an ``.xml`` must be
    well-formed XML as defusedxml parses it (entity declarations and external DTDs are
    refused).

    Raises
    ------
    FormatError
        Naming the uploaded file (never the server's temporary path).
    """
    suffix = Path(display).suffix.lower()
    if suffix == ".pdf":
        with path.open("rb") as fh:
            head = fh.read(5)
        if not head.startswith(b"%PDF"):
            what = "an empty file" if not head else "it does not start with %PDF"
            raise FormatError(f"not a PDF file ({what})", path=display)
    elif suffix == ".xml":
        from xml.etree.ElementTree import ParseError

        from defusedxml import ElementTree
        from defusedxml.common import DefusedXmlException

        try:
            ElementTree.parse(str(path))
        except ParseError as exc:
            line = exc.position[0] if getattr(exc, "position", None) else None
            raise FormatError(f"not well-formed XML ({str(exc).split(':')[0]})", path=display, line=line) from None
        except DefusedXmlException as exc:
            raise FormatError(f"XML refused ({type(exc).__name__}: entities and external DTDs are not read)",
                              path=display) from None


# ----------------------------------------------------------------------------- task work (worker threads)


_PV_LOCK = threading.Lock()  # one loaded model per kind, shared: the CRF tagger and the
# fast tokenizers are not thread-safe, so pv work runs one request at a time
_PLOT_LOCK = threading.Lock()  # matplotlib's rc settings are process-wide


def _pv_records(records: list[tuple[str, str]], model_name: str) -> tuple[str, list[Any]]:
    """(model id, records) of JSON-lines records, each passed to the model whole."""
    from clinex.pv.models import load_model, model_id
    from clinex.pv.pipeline import extract_records

    with _PV_LOCK:
        model = load_model(model_name)
        items = extract_records(records, model=model)
    return model_id(model), items


def _pv_text(text: str, model_name: str, unit: str, name: str) -> tuple[str, Any, list[Any]]:
    """(model id, whole record, [(start, end, sentence record)]) of plain text."""
    from clinex.pv.models import load_model, model_id
    from clinex.pv.pipeline import extract_text_sentences

    with _PV_LOCK:
        model = load_model(model_name)
        whole, sentences = extract_text_sentences(text, model=model, record_id=name, split=unit == "text")
    return model_id(model), whole, sentences


def _pv_export(fmt: str, name: str, items: list[Any], rows: list[dict[str, Any]]) -> _File:
    """The download of PV results: PHEE JSON lines, a zip of brat pairs, or the event table."""
    from clinex.web.views import pv_csv

    if fmt == "csv":
        return _File(pv_csv(rows).encode("utf-8"), "text/csv; charset=utf-8", f"{name}.events.csv")
    folder = Path(tempfile.mkdtemp(prefix="clinex-web-"))
    try:
        if fmt == "phee":
            from clinex.pv.formats.phee_json import write_phee_json

            out = folder / "out.json"
            write_phee_json(items, out)
            return _File(out.read_bytes(), "application/json", f"{name}.phee.json")
        from clinex.pv.formats.brat import write_brat

        notes: list[str] = []
        for item in items:
            write_brat(item, folder / "brat", on_warning=notes.append)
        buf = folder / "brat.zip"
        with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
            for p in sorted((folder / "brat").iterdir()):
                z.write(p, p.name)
            if notes:
                z.writestr("WARNINGS.txt", "\n".join(notes) + "\n")
        return _File(buf.read_bytes(), "application/zip", f"{name}.brat.zip")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _pv_work(text: str, model_name: str, unit: str = "text", fmt: str | None = None) -> Any:
    """Pasted text: the page's view (:func:`clinex.web.views.pv_document`) or a download."""
    from clinex.web.views import pv_document

    mid, whole, sentences = _pv_text(text, model_name, unit, "text")
    doc = pv_document(whole, sentences)
    if fmt is not None:
        return _pv_export(fmt, "text", [item for _, _, item in sentences], doc["table"])
    return {"model": mid, **doc}


def _pv_upload_work(path: Path, display: str, model_name: str, fmt: str | None) -> Any:
    """An uploaded ``.txt`` (split into sentences) or JSON-lines file (one result per record)."""
    from clinex.io.textfile import decode_text
    from clinex.web.views import pv_document

    data = path.read_bytes()
    stem = Path(display).stem or "text"
    skipped: list[str] = []
    from clinex.io.jsonl import is_jsonl

    if is_jsonl(display, data):
        from clinex.pv.pipeline import jsonl_records

        # as `clinex pv extract`: a bad line (a text over MAX_PV_TEXT_CHARS too) is reported
        # (``skipped``) and the others go on
        records = [(r.id, r.text) for r in jsonl_records(data, path=display, errors="skip",
                                                         on_error=lambda exc: skipped.append(str(exc)))]
        if skipped and not records:
            raise InputError(f"no usable line ({len(skipped)} bad lines; first: {skipped[0]})", path=display)
        if not records:
            raise InputError("no records (empty JSON lines file)", path=display)
        mid, items = _pv_records(records, model_name)
        docs = [pv_document(item, [(0, len(item.text), item)]) for item in items]
        sentence_items = items
    else:
        text = decode_text(data, path=display)
        mid, whole, sentences = _pv_text(text, model_name, "text", stem)
        docs = [pv_document(whole, sentences)]
        sentence_items = [item for _, _, item in sentences]
    if fmt is not None:
        return _pv_export(fmt, stem, sentence_items, [row for d in docs for row in d["table"]])
    return {"model": mid, "documents": docs, "skipped": skipped}


def _read_patient(path: Path, display: str) -> Any:
    from clinex.cohort.formats.n2c2_xml import read_patient

    return read_patient(path).model_copy(update={"source": display})


def _cohort_work(path: Path, display: str, model: str) -> dict[str, Any]:
    from clinex.cohort import screen
    from clinex.cohort.screen import decisions_to_dict

    return decisions_to_dict(screen(_read_patient(path, display), model=model))


_CRITERIA_DIR: list[Path] = []  # one folder per server process for uploaded criterion files
_CRITERIA_LOCK = threading.Lock()


def _criteria_paths(criteria: list[tuple[str, str]]) -> list[Path]:
    """Uploaded criterion files, stored once per distinct content.

    The screening engine is cached by criterion file path and modification time
    (:func:`clinex.cohort.screen.get_engine`), so the same criteria uploaded again reuse
    one engine instead of building (and keeping) a new one per request: each file goes to
    ``<process folder>/<sha256 of name and text>/<name>`` and is never rewritten. The
    folder is removed when the process exits.
    """
    import atexit
    import hashlib

    with _CRITERIA_LOCK:
        if not _CRITERIA_DIR:
            folder = Path(tempfile.mkdtemp(prefix="clinex-web-criteria-"))
            atexit.register(shutil.rmtree, folder, True)
            _CRITERIA_DIR.append(folder)
        paths = []
        for name, text in criteria:
            digest = hashlib.sha256(f"{name}\0{text}".encode("utf-8", "surrogatepass")).hexdigest()[:32]
            p = _CRITERIA_DIR[0] / digest / _disk_name(name)
            if not p.exists():
                p.parent.mkdir(exist_ok=True)
                tmp = p.with_name(p.name + ".part")
                tmp.write_text(text, encoding="utf-8")
                tmp.replace(p)
            paths.append(p)
        return paths


def _cohort_patient_work(folder: Path, files: list[tuple[str, str]], criteria: list[tuple[str, str]],
                         model: str, fmt: str | None) -> Any:
    """One patient from an n2c2 XML file or dated notes, screened by :func:`clinex.cohort.screen`."""
    from clinex.cohort import screen
    from clinex.cohort.models import REGISTRY, check_model_name
    from clinex.cohort.screen import date_warning, write_decisions
    from clinex.web.views import cohort_view

    xml = [n for n, _ in files if n.lower().endswith(".xml")]
    if len(xml) > 1:
        raise InputError(f"{len(xml)} XML files given ({', '.join(xml[:3])}{', ...' if len(xml) > 3 else ''}): "
                         "choose one n2c2 XML file (one patient)", field="files")
    if xml and len(files) > 1:
        raise InputError("give one n2c2 XML file, or the .txt notes of one patient, not both", field="files")
    if not xml:
        bad = [n for n, _ in files if not n.lower().endswith(".txt")]
        if bad:
            raise InputError(f"{bad[0]}: expected an n2c2 .xml file or dated .txt notes", field="files")
    if xml:
        path = folder / _disk_name(files[0][0])
        path.write_text(files[0][1], encoding="utf-8")
        _sniff(path, files[0][0])
        patient = _read_patient(path, files[0][0])
    else:
        from clinex.cohort.formats.notes_folder import read_notes_folder

        notes = folder / "patient"
        notes.mkdir()
        for name, text in files:
            target = notes / _disk_name(name)
            if target.exists():
                raise InputError(f"two notes named {name!r}", field="files")
            target.write_text(text, encoding="utf-8")
        pid = Path(files[0][0]).stem if len(files) == 1 else "patient"
        patient = read_notes_folder(notes, patient_id=pid).model_copy(
            update={"source": ", ".join(n for n, _ in files)})
    crit: Any = _criteria_paths(criteria) if criteria else "n2c2"
    decisions = screen(patient, crit, model=model)
    if fmt is not None:
        suffix = {"json": ".json", "csv": ".csv", "xml": ""}[fmt]
        out = folder / ("out" + suffix)
        write_decisions([(patient, decisions)], out)
        if fmt == "xml":
            return _File((out / f"{patient.id}.xml").read_bytes(), "application/xml", f"{patient.id}.xml")
        media = "application/json" if fmt == "json" else "text/csv; charset=utf-8"
        return _File(out.read_bytes(), media, f"{patient.id}.cohort{suffix}")
    version = REGISTRY[check_model_name(model)].version
    return cohort_view(patient, decisions, version, date_warning(patient))


def _rob_load(path: Path, display: str) -> Any:
    from clinex.rob.assess import load_trial

    doc = load_trial(path)
    return doc.model_copy(update={"meta": {**doc.meta, "source": display}})


def _rob_work(path: Path, model: str, display: str) -> dict[str, Any]:
    from clinex.rob.assess import assess
    from clinex.rob.evidence import load_evidence_model

    result = assess(_rob_load(path, display), load_evidence_model(model))
    return result.model_copy(update={"source": display}).model_dump(mode="json")


def _rob_report_work(path: Path, model: str, display: str) -> dict[str, Any]:
    """The assessment and the CLI's HTML report of it (:func:`clinex.rob.report.render_html`)."""
    from clinex.rob.assess import assess
    from clinex.rob.evidence import load_evidence_model
    from clinex.rob.report import render_html

    document = _rob_load(path, display)
    result = assess(document, load_evidence_model(model)).model_copy(update={"source": display})
    return {"assessment": result.model_dump(mode="json"), "html": render_html(result, document)}


def _assessments(raw: list[dict[str, Any]]) -> list[Any]:
    from pydantic import ValidationError

    from clinex.rob.types import TrialAssessment

    if not raw:
        raise InputError("no assessments", field="assessments")
    out = []
    for k, a in enumerate(raw):
        try:
            out.append(TrialAssessment.model_validate(a))
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first.get("loc", ()))
            raise SchemaError(f"assessment {k + 1}: {where}: {first.get('msg', 'invalid')}",
                              field="assessments") from None
    return out


def _rob_plot_work(raw: list[dict[str, Any]]) -> _File:
    from clinex.rob.plot import plot_traffic_light
    from clinex.web.views import rob_labels

    items = _assessments(raw)
    folder = Path(tempfile.mkdtemp(prefix="clinex-web-"))
    try:
        with _PLOT_LOCK:
            png, _ = plot_traffic_light(items, folder / "traffic_light.png", labels=rob_labels(items), dpi=100)
        return _File(png.read_bytes(), "image/png", "traffic_light.png")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _rob_json_work(raw: list[dict[str, Any]]) -> _File:
    """The ``<label>.rob.json`` files ``clinex rob assess`` writes (:func:`clinex.rob.report.write_json`):
    the file itself for one trial, a zip of them for several."""
    from clinex.rob.report import write_json
    from clinex.web.views import rob_labels

    items = _assessments(raw)
    labels = rob_labels(items)
    folder = Path(tempfile.mkdtemp(prefix="clinex-web-"))
    try:
        paths = [write_json(a, folder / "json" / f"{_disk_name(label)}.rob.json") for a, label in zip(items, labels)]
        if len(paths) == 1:
            return _File(paths[0].read_bytes(), "application/json", paths[0].name)
        out = folder / "rob.zip"
        with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
            for p in paths:
                z.write(p, p.name)
        return _File(out.read_bytes(), "application/zip", "rob-json.zip")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _rob_robvis_work(raw: list[dict[str, Any]]) -> _File:
    from clinex.rob.robvis import robvis_rows, write_robvis_csv
    from clinex.web.views import rob_labels

    items = _assessments(raw)
    folder = Path(tempfile.mkdtemp(prefix="clinex-web-"))
    try:
        out = write_robvis_csv(robvis_rows(items, rob_labels(items)), folder / "robvis.csv")
        return _File(out.read_bytes(), "text/csv; charset=utf-8", "robvis.csv")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


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

#: What each JSON endpoint's body looks like, for the message of a body that is not a JSON object.
_BODY_EXAMPLES = {
    "/api/pv/extract": '{"text": "..."}',
    "/api/cohort/patient": '{"files": [{"name": "...", "text": "..."}]}',
    "/api/rob/plot": '{"assessments": [...]}',
    "/api/rob/robvis": '{"assessments": [...]}',
    "/api/rob/json": '{"assessments": [...]}',
}
_JSON_KINDS = {list: "a JSON array", str: "a JSON string", int: "a JSON number", float: "a JSON number",
               bool: "a JSON true/false"}


def _whole_body_problem(errors: list[Any], path: str) -> str | None:
    """What is wrong with a request body that is not a JSON object at all (not JSON,
    empty, an array...), with what it must look like; None when the problem is inside
    the object (then each field is named as usual).

    FastAPI reports a JSON syntax error at ``("body", <character>)``, which would read
    as a field named after the character position.
    """
    for e in errors:
        loc = tuple(e.get("loc", ()))
        if not loc or loc[0] != "body":
            continue
        kind = e.get("type")
        if kind == "json_invalid":
            detail = (e.get("ctx") or {}).get("error", "JSON decode error")
            where = f" at character {loc[1]}" if len(loc) > 1 and isinstance(loc[1], int) else ""
            what = f"not valid JSON ({detail}{where})"
        elif len(loc) == 1 and kind == "missing":
            what = "empty"
        elif len(loc) == 1 and kind in {"model_attributes_type", "dict_type"}:
            value = e.get("input")
            if isinstance(value, (bytes, bytearray)):
                what = "not read as JSON (send it with Content-Type: application/json)"
            else:
                what = _JSON_KINDS.get(type(value), "not a JSON object")
                what = f"{what}, not an object" if what.startswith("a JSON") else what
        else:
            continue
        example = _BODY_EXAMPLES.get(path)
        return what + (f"; the body must be a JSON object like {example}" if example else
                       "; the body must be a JSON object")
    return None


_INT_DIGITS = re.compile(r"value has (\d+) digits")


def _unreadable_body(exc: HTTPException) -> str | None:
    """What kept a JSON body from being read at all, when FastAPI's "There was an error
    parsing the body" (a 400) hides it; None for any other HTTP error.

    FastAPI turns a :class:`json.JSONDecodeError` into a validation error (answered by
    :func:`_whole_body_problem`), but every other exception of :func:`json.loads` into that
    400, raised ``from`` the original: arrays or objects nested deeper than the parser's
    recursion limit (:class:`RecursionError`), an integer longer than
    :func:`sys.get_int_max_str_digits` (4,300 digits by default; Python 3.11's limit on
    integer parsing, CVE-2020-10735), or bytes that are not UTF-8.
    """
    cause = exc.__cause__
    if exc.status_code != 400 or cause is None:
        return None
    if isinstance(cause, RecursionError):
        return "JSON nested too deeply (arrays or objects inside each other); send a flatter body"
    if isinstance(cause, UnicodeDecodeError):
        return f"not UTF-8 (byte 0x{cause.object[cause.start]:02x} at position {cause.start})"
    digits = _INT_DIGITS.search(str(cause)) if isinstance(cause, ValueError) else None
    if digits is not None:
        return (f"a JSON integer of {int(digits.group(1)):,} digits; at most {sys.get_int_max_str_digits():,} "
                "digits are read")
    return None


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
    hosts = tuple(allowed_hosts or ()) + tuple(
        h.strip() for h in os.environ.get("CLINEX_WEB_ALLOWED_HOSTS", "").split(",") if h.strip())
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

    @app.exception_handler(ClinexError)
    async def _clinex_error(_: Request, exc: ClinexError) -> JSONResponse:
        return _error(422, exc.code, str(exc), exc.field)

    @app.exception_handler(ClientDisconnect)
    async def _gone(_: Request, __: ClientDisconnect) -> JSONResponse:
        # the client closed its connection mid-body: nobody reads this answer, nothing to log
        return _error(400, "CLX001", str(InputError("the client closed the connection before the body was complete",
                                                    field="body")), "body")

    @app.exception_handler(TimedOut)
    async def _timed_out(_: Request, exc: TimedOut) -> JSONResponse:
        err = ClinexError(f"the request took longer than {exc.seconds} s (CLINEX_WEB_TIMEOUT) and was stopped")
        return _error(504, err.code, str(err))

    @app.exception_handler(RequestValidationError)
    async def _bad_request(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = exc.errors()
        whole = _whole_body_problem(errors, request.url.path)
        if whole is not None:
            return _error(422, "CLX001", str(InputError(f"bad request (body: {whole})")), "body")
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e.get('loc', ())[1:]) or 'body'}: {e.get('msg', 'invalid')}"
            for e in errors[:5]
        )
        first = errors[0].get("loc", ()) if errors else ()
        field = ".".join(str(p) for p in first[1:]) or (str(first[0]) if first else None)
        err = InputError(f"bad request ({problems})")
        return _error(422, err.code, str(err), field)

    @app.exception_handler(HTTPException)
    async def _http_error(request: Request, exc: HTTPException) -> JSONResponse:
        if isinstance(exc, (BodyTooLarge, BodyTimedOut)):
            return _error(exc.status_code, "CLX001", exc.detail, "body", dict(exc.headers or {}))
        unreadable = _unreadable_body(exc)
        if unreadable is not None:
            return _error(422, "CLX001", str(InputError(f"bad request (body: {unreadable})")), "body")
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
        from clinex.cohort.models import model_names as cohort_names
        from clinex.pv.models import model_names as pv_names
        from clinex.rob.evidence import model_names as rob_names

        return {"pv": list(pv_names()), "rob": list(rob_names()), "cohort": list(cohort_names())}

    @app.post("/api/pv/extract", response_model=dict[str, Any],
              responses=_downloads("application/zip", "text/csv"))
    async def pv_extract(req: PVRequest, format: _PVFormat | None = Query(None)) -> Response:  # noqa: A002
        """Events of pasted text (offsets into it); with ``format``, a download."""
        _check_pv_model(req.model)
        return await pool.run(_pv_work, req.text, req.model, req.unit, format)

    async def _with_upload(request: Request, filename: str, work: Callable[..., Any], *args: Any) -> Response:
        display = _display_name(filename)
        folder = Path(tempfile.mkdtemp(prefix="clinex-web-"))
        try:
            path = await _upload(request, folder, display)
            _sniff(path, display)
            return await pool.run(work, path, *args)
        except ClinexError as exc:
            raise _renamed(exc, folder, display) from None
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    @app.post("/api/pv/upload", response_model=dict[str, Any], responses=_downloads("application/zip", "text/csv"),
              openapi_extra=_raw_body("text/plain", "application/x-ndjson",
                                      description="a .txt file, or JSON lines of {id, text} or PHEE records"))
    async def pv_upload(request: Request, filename: str = Query(...), model: str = Query("auto"),
                        format: _PVFormat | None = Query(None)) -> Response:  # noqa: A002
        """Events of an uploaded .txt or JSON-lines file; with ``format``, a download."""
        _check_pv_model(model)
        display = _display_name(filename)
        return await _with_upload(request, filename, _pv_upload_work, display, model, format)

    @app.post("/api/cohort/screen", response_model=dict[str, Any],
              openapi_extra=_raw_body("application/xml", description="one n2c2 XML patient file"))
    async def cohort_screen(request: Request, filename: str = Query(...), model: str = Query("auto")) -> Response:
        """Decisions for one n2c2 XML patient file (the body)."""
        _check_cohort_model(model)
        display = _display_name(filename)
        return await _with_upload(request, filename, _cohort_work, display, model)

    @app.post("/api/cohort/patient", response_model=dict[str, Any], responses=_downloads("application/xml", "text/csv"))
    async def cohort_patient(req: CohortRequest, format: _CohortFormat | None = Query(None)  # noqa: A002
                             ) -> Response:
        """One patient (n2c2 XML or dated notes) with optional criteria; the page's view or a download."""
        _check_cohort_model(req.model)
        files = [(_display_name(f.name), f.text) for f in req.files]
        criteria = [(_display_name(f.name), f.text) for f in req.criteria]
        folder = Path(tempfile.mkdtemp(prefix="clinex-web-"))
        try:
            return await pool.run(_cohort_patient_work, folder, files, criteria, req.model, format)
        except ClinexError as exc:
            raise _scrub(exc, [folder, *_CRITERIA_DIR]) from None
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    @app.post("/api/rob/assess", response_model=dict[str, Any], openapi_extra=_raw_body(
        "application/pdf", "text/plain", "application/xml", description="one trial report: PDF, text or JATS XML"))
    async def rob_assess(request: Request, filename: str = Query(...), model: str = Query("auto")) -> Response:
        """The RoB 2 assessment of one trial report (the body)."""
        _check_rob_model(model)
        display = _display_name(filename)
        return await _with_upload(request, filename, _rob_work, model, display)

    @app.post("/api/rob/report", response_model=dict[str, Any], openapi_extra=_raw_body(
        "application/pdf", "text/plain", "application/xml", description="one trial report: PDF, text or JATS XML"))
    async def rob_report(request: Request, filename: str = Query(...), model: str = Query("auto")) -> Response:
        """The assessment and the HTML report ``clinex rob assess`` writes."""
        _check_rob_model(model)
        display = _display_name(filename)
        return await _with_upload(request, filename, _rob_report_work, model, display)

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

    return app
