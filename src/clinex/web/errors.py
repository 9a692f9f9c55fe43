"""The web app's errors, all in one shape: ``{"error": {"code": "CLXnnn", "message", "field"}}``.

:func:`add_error_handlers` installs the handlers :func:`clinex.web.app.create_app` uses: a
:class:`~clinex.errors.ClinexError` is 422; a request FastAPI cannot validate 422 (``field``
the parameter, ``body`` for a body that is not a JSON object at all, with what it must look
like); an unknown path 404, a wrong method 405, a too-large or too-slow body 413 / 408, a
request past its time limit 504, and an unexpected error 500 with a generic message (the
traceback goes to the server log only). The module docstring of :mod:`clinex.web.app` lists
every status.
"""

from __future__ import annotations

import re
import sys
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect

from clinex.errors import ClinexError, InputError, ModelError
from clinex.web.guard import BodyTimedOut, BodyTooLarge, TimedOut
from clinex.web.guard import error as _error

__all__ = ["add_error_handlers"]

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



def add_error_handlers(app: FastAPI) -> None:
    """Every failure in the one shape ``{"error": {"code", "message", "field"}}`` (the module docstring lists them)."""

    @app.exception_handler(ClinexError)
    async def _clinex_error(_: Request, exc: ClinexError) -> JSONResponse:
        if isinstance(exc, ModelError) and exc.path is not None:  # where a model lies is the server's
            exc = ModelError(exc.message, field=exc.field or "model")
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

    app.exception_handler(RequestValidationError)(_bad_request)
    app.exception_handler(HTTPException)(_http_error)

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        # the server re-raises it after this answer, so its log has the traceback
        err = ClinexError(f"internal error ({type(exc).__name__}) in {request.url.path[:200]}; "
                          "the server log has the details")
        return _error(500, err.code, str(err))


async def _bad_request(request: Request, exc: RequestValidationError) -> JSONResponse:
    """A request FastAPI could not validate: 422, ``field`` the first bad parameter (``body``
    for a body that is not a JSON object at all)."""
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


async def _http_error(request: Request, exc: HTTPException) -> JSONResponse:
    """An HTTP error (404, 405, 408, 413, an unreadable body...) in the one shape."""
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
