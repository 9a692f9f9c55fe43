"""What an OpenAI-compatible server sends back, read safely: the reply, the answer, the error text.

:class:`ChatCompletion` is the part of a chat-completions reply clinex reads, validated
as a whole (:meth:`clinex.llm.client.LLMClient.complete_json` refuses anything else);
:func:`parse_json_answer` reads the answer's text as the caller's pydantic type;
:func:`schema_hint` is the one line telling the model the answer's JSON shape; the
error text of a refused request (:func:`_server_message`) and every message built from
a reply go through :func:`redact`, so that the API key never reaches an error, stderr,
the web, a log or the cache.

References
----------
OpenAI API reference, "The chat completion object" and "Structured outputs".
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, StrictStr, ValidationError

__all__ = ["ChatCompletion", "parse_json_answer", "redact", "schema_hint"]

T = TypeVar("T", bound=BaseModel)

_INSTANCE_OF = re.compile(r" or instance of \w+")


class _ReplyMessage(BaseModel):
    model_config = ConfigDict(extra="ignore")
    content: StrictStr | None = None


class _ReplyChoice(BaseModel):
    model_config = ConfigDict(extra="ignore")
    message: _ReplyMessage
    finish_reason: StrictStr | None = None


_Tokens = Annotated[int, Field(strict=True, ge=0, le=10**9)]


class _ReplyUsage(BaseModel):
    model_config = ConfigDict(extra="ignore")
    prompt_tokens: _Tokens | None = None
    completion_tokens: _Tokens | None = None


class ChatCompletion(BaseModel):
    """The part of an OpenAI chat-completions reply that clinex reads, validated as a whole.

    ``choices`` must hold at least one choice whose ``message`` is an object with a
    string (or null) ``content``; ``finish_reason`` is a string or null; ``usage``,
    when present, is an object whose ``prompt_tokens`` and ``completion_tokens`` are
    whole numbers from 0 to 10**9 (strict: no strings, floats or booleans). Other keys
    are ignored, as servers add their own (``id``, ``timings``, ``system_fingerprint``).

    References
    ----------
    OpenAI API reference, "The chat completion object" (``choices[].message.content``,
    ``choices[].finish_reason``, ``usage.prompt_tokens``, ``usage.completion_tokens``).
    """

    model_config = ConfigDict(extra="ignore")
    choices: list[_ReplyChoice] = Field(min_length=1)
    usage: _ReplyUsage | None = None



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


def _server_message(raw: bytes, key: str | None) -> str:
    """The error text of a reply body, without the key (redacted before it is cut to 300 characters)."""
    text = raw.decode("utf-8", errors="replace")
    try:
        body = json.loads(text)
    except ValueError:
        return redact(text, key)[:300].strip()
    err = body.get("error", body.get("detail", body)) if isinstance(body, dict) else body
    if isinstance(err, dict):
        err = err.get("message", err)
    return redact(str(err), key)[:300].strip()


def reply_problems(exc: ValidationError) -> str:
    """The first three problems of a reply that is no :class:`ChatCompletion`: the field
    and what it should be, never the value (it may quote a note)."""
    return "; ".join(
        f"{'.'.join(str(p) for p in e['loc']) or '(top)'}: {_INSTANCE_OF.sub('', e['msg'])}"
        for e in exc.errors()[:3]
    )
