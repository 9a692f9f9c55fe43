"""FastAPI app serving the three tasks and one static page.

Endpoints (JSON in, JSON out; the OpenAPI schema is at ``/openapi.json``):

- ``GET /`` — the single-page UI (``static/index.html``).
- ``GET /api/health`` — ``{"status": "ok", "version": ...}``.
- ``POST /api/pv/extract`` — body ``{"text": str, "model": "auto"|"crf"|"transformer"}``;
  returns ``{"model", "sentences"}``: ``model`` is the loaded model's versioned id
  (``clinex.pv.crf.v1``, ``clinex.pv.transformer.v1``; see :func:`clinex.pv.models.model_id`),
  ``sentences`` the sentences found in the text, each as ``{"start", "end", "record"}``:
  the sentence's character offsets in the posted text and its events in the PHEE
  JSON schema (offsets into the sentence, so add ``start`` for the posted text).
  Empty or blank text gives one record with that text and no events, as
  ``clinex pv extract ""``.
- ``POST /api/cohort/screen?filename=NAME.xml`` — body: the bytes of one n2c2 XML
  patient file; returns ``{criterion: {"label", "score", "evidence": [...]}}``, each
  evidence item flat as :func:`clinex.cohort.screen.evidence_record` (the layout of
  ``clinex cohort screen -o x.json`` and ``clinex batch cohort``).
- ``POST /api/rob/assess?filename=NAME.pdf[&model=auto|cues|sentence]`` — body: the
  bytes of one trial (PDF, text, JATS XML); returns the
  :class:`~clinex.rob.types.TrialAssessment` (``source`` = the uploaded file name).

A :class:`~clinex.errors.ClinexError` becomes HTTP 422 with ``{"code", "message"}``
(the message names the uploaded file name, never the server's temporary path);
uploaded bytes are written to a private temporary folder that is removed afterwards.
"""

from __future__ import annotations

import tempfile
from importlib import resources
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse
from pydantic import BaseModel, Field

from clinex import __version__
from clinex.errors import ClinexError, InputError, SchemaError

__all__ = ["create_app"]

_MAX_UPLOAD = 50 * 1024 * 1024  # bytes; a 300-page PDF is well below this


class PVRequest(BaseModel):
    """Body of ``POST /api/pv/extract``: text to split into sentences, and the model name."""

    text: str = Field(max_length=1_000_000)
    model: str = "auto"


def _safe_name(filename: str) -> str:
    name = Path(filename).name
    if not name or name in {".", ".."}:
        raise InputError("filename must name a file", field="filename")
    return name


async def _upload(request: Request, filename: str) -> Path:
    body = await request.body()
    if len(body) > _MAX_UPLOAD:
        raise InputError(f"upload larger than {_MAX_UPLOAD // (1024 * 1024)} MB", field="body")
    folder = Path(tempfile.mkdtemp(prefix="clinex-web-"))
    path = folder / _safe_name(filename)
    path.write_bytes(body)
    return path


PV_MODELS = ("auto", "crf", "transformer")
ROB_MODELS = ("auto", "cues", "sentence")


def _check_model(name: str, allowed: tuple[str, ...], field: str) -> None:
    """Only installed models by name: a web client must not probe server paths."""
    if name not in allowed:
        raise SchemaError(f"unknown model {name!r}; valid: {', '.join(allowed)}", field=field)


def _renamed(exc: ClinexError, path: Path, filename: str) -> ClinexError:
    """The same error, naming the uploaded file instead of the server's temporary copy."""
    if exc.path == str(path):
        exc.path = _safe_name(filename)
    return exc


def _cleanup(path: Path) -> None:
    for p in path.parent.iterdir():
        p.unlink()
    path.parent.rmdir()


def create_app() -> FastAPI:
    """Build the FastAPI application (models load lazily on first request).

    Returns
    -------
    fastapi.FastAPI
    """
    app = FastAPI(title="clinex", version=__version__)

    @app.exception_handler(ClinexError)
    async def _clinex_error(_: Request, exc: ClinexError) -> JSONResponse:
        return JSONResponse(status_code=422, content={"code": exc.code, "message": str(exc)})

    @app.exception_handler(RequestValidationError)
    async def _bad_request(_: Request, exc: RequestValidationError) -> JSONResponse:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e.get('loc', ())[1:]) or 'body'}: {e.get('msg', 'invalid')}"
            for e in exc.errors()
        )
        err = InputError(f"bad request ({problems})")
        return JSONResponse(status_code=422, content={"code": err.code, "message": str(err)})

    @app.get("/", response_class=HTMLResponse)
    def index() -> str:
        return resources.files("clinex.web").joinpath("static/index.html").read_text("utf-8")

    @app.get("/api/health")
    def health() -> dict[str, str]:
        return {"status": "ok", "version": __version__}

    @app.post("/api/pv/extract")
    def pv_extract(req: PVRequest) -> dict[str, Any]:
        from clinex.io.phee_json import to_phee_dict
        from clinex.pv.models import load_model, model_id
        from clinex.pv.pipeline import extract_records, sentence_pieces

        _check_model(req.model, PV_MODELS, "model")
        pieces = sentence_pieces(req.text)
        model = load_model(req.model)
        items = extract_records([(f"s{i}", t) for i, (_, _, t) in enumerate(pieces, start=1)], model=model)
        out = [
            {"start": start, "end": end, "record": to_phee_dict(item)}
            for (start, end, _), item in zip(pieces, items)
        ]
        return {"model": model_id(model), "sentences": out}

    @app.post("/api/cohort/screen")
    async def cohort_screen(request: Request, filename: str = Query(...)) -> dict[str, Any]:
        from clinex.cohort import screen
        from clinex.cohort.screen import decisions_to_dict
        from clinex.io.n2c2_xml import read_patient

        path = await _upload(request, filename)
        try:
            decisions = screen(read_patient(path))
        except ClinexError as exc:
            raise _renamed(exc, path, filename) from None
        finally:
            _cleanup(path)
        return decisions_to_dict(decisions)

    @app.post("/api/rob/assess")
    async def rob_assess(
        request: Request, filename: str = Query(...), model: str = Query("auto")
    ) -> dict[str, Any]:
        from clinex.rob.assess import assess_path
        from clinex.rob.evidence import load_evidence_model

        _check_model(model, ROB_MODELS, "model")
        path = await _upload(request, filename)
        try:
            result = assess_path(path, model=load_evidence_model(model))
        except ClinexError as exc:
            raise _renamed(exc, path, filename) from None
        finally:
            _cleanup(path)
        return result.model_copy(update={"source": path.name}).model_dump(mode="json")

    return app
