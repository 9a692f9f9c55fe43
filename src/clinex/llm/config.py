"""Settings of an OpenAI-compatible chat-completions server.

Every setting comes, in this order of precedence, from an explicit argument, from
the command line (``--llm-url``, ``--llm-model``, ``--llm-key``, ``--no-cache``:
:func:`cli_overrides`), from the environment, or from the default below.

========================== ============================== ==========================
setting                    environment variable           default
========================== ============================== ==========================
``base_url``               ``CLINEX_LLM_BASE_URL``        none (required)
``model``                  ``CLINEX_LLM_MODEL``           none (required)
``api_key``                ``CLINEX_LLM_API_KEY``         none (no ``Authorization``)
``timeout``                ``CLINEX_LLM_TIMEOUT``         60 s per request, in all
``max_retries``            ``CLINEX_LLM_RETRIES``         3 (after the first try)
``backoff``                ``CLINEX_LLM_BACKOFF``         1 s, doubled each retry
``max_repairs``            ``CLINEX_LLM_REPAIRS``         2 (re-asks for valid JSON)
``concurrency``            ``CLINEX_LLM_CONCURRENCY``     4 requests in flight
``seed``                   ``CLINEX_LLM_SEED``            0
``max_tokens``             ``CLINEX_LLM_MAX_TOKENS``      1024 per answer
``context_tokens``         ``CLINEX_LLM_CONTEXT``         8192
``response_format``        ``CLINEX_LLM_RESPONSE_FORMAT`` ``auto`` (negotiated)
``max_reply_bytes``        ``CLINEX_LLM_MAX_REPLY_BYTES`` 4,194,304 (4 MiB a reply)
``price_prompt``           ``CLINEX_LLM_PRICE_PROMPT``    none (per 1,000 tokens)
``price_completion``       ``CLINEX_LLM_PRICE_COMPLETION`` none (per 1,000 tokens)
``cache``                  ``CLINEX_LLM_NO_CACHE=1`` off  on
``cache_path``             ``CLINEX_LLM_CACHE``           ``$CLINEX_DATA/llm/cache.sqlite``
``shots``                  ``CLINEX_LLM_SHOTS``           0 (PV demonstrations)
``train_file``             ``CLINEX_LLM_PV_TRAIN``        none (PHEE JSON for shots)
========================== ============================== ==========================

Temperature is always 0 (greedy decoding, as the anchors report their runs) and a
seed is sent, so that a server that honours both answers the same prompt the same
way. The 1 s backoff doubling up to 3 retries (1 + 2 + 4 s of waiting) and the
4 requests in flight are clinex's own choices: they suit a local server; raise
``concurrency`` for a vLLM server with many slots.

``timeout`` is an overall deadline for one request (connect, send, wait, read the
whole reply), not a limit per read: a server that drips its reply byte by byte is cut
off when it passes (:mod:`clinex.llm.client`). ``max_reply_bytes`` caps the body of
one reply: 4 MiB is clinex's own choice, some 500 times the JSON of a 1,024-token
answer (about 4-8 KB), so only a broken or hostile server reaches it.

The API key is kept out of ``repr``, ``str`` and every message (:attr:`LLMSettings.api_key`).
"""

from __future__ import annotations

import contextlib
import contextvars
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from clinex.errors import InputError, LLMError

__all__ = ["LLMSettings", "ENV", "resolve_settings", "cli_overrides", "redact_url"]

ENV: dict[str, str] = {
    "base_url": "CLINEX_LLM_BASE_URL",
    "model": "CLINEX_LLM_MODEL",
    "api_key": "CLINEX_LLM_API_KEY",
    "timeout": "CLINEX_LLM_TIMEOUT",
    "max_retries": "CLINEX_LLM_RETRIES",
    "backoff": "CLINEX_LLM_BACKOFF",
    "max_repairs": "CLINEX_LLM_REPAIRS",
    "concurrency": "CLINEX_LLM_CONCURRENCY",
    "seed": "CLINEX_LLM_SEED",
    "max_tokens": "CLINEX_LLM_MAX_TOKENS",
    "context_tokens": "CLINEX_LLM_CONTEXT",
    "response_format": "CLINEX_LLM_RESPONSE_FORMAT",
    "max_reply_bytes": "CLINEX_LLM_MAX_REPLY_BYTES",
    "price_prompt": "CLINEX_LLM_PRICE_PROMPT",
    "price_completion": "CLINEX_LLM_PRICE_COMPLETION",
    "cache_path": "CLINEX_LLM_CACHE",
    "shots": "CLINEX_LLM_SHOTS",
    "train_file": "CLINEX_LLM_PV_TRAIN",
}
"""Setting name -> environment variable (``cache`` is turned off by ``CLINEX_LLM_NO_CACHE=1``)."""

NO_CACHE_ENV = "CLINEX_LLM_NO_CACHE"
RESPONSE_FORMATS = ("auto", "json_schema", "json_object_schema", "json_object", "none")
"""``auto`` negotiates (:class:`clinex.llm.client.LLMClient`); the others force one ``response_format``:
``{"type": "json_schema", "json_schema": {...}}`` (OpenAI, vLLM, llama.cpp's ``llama-server``, Ollama),
``{"type": "json_object", "schema": {...}}`` (llama-cpp-python's server: grammar-constrained),
``{"type": "json_object"}`` (any JSON) or none at all."""


@dataclass(frozen=True, repr=False)
class LLMSettings:
    """Where the server is and how to call it (see the module docstring for defaults).

    Attributes
    ----------
    base_url : str
        The server's OpenAI-compatible root, ending before ``/chat/completions``
        (``http://127.0.0.1:8080/v1``).
    model : str
        The model name the server knows.
    api_key : str or None
        Sent as ``Authorization: Bearer``; never shown (``repr=False``). Surrounding
        whitespace is stripped; a key with any other character outside printable
        ASCII is an :class:`~clinex.errors.InputError` naming ``CLINEX_LLM_API_KEY``
        (HTTP headers carry ASCII only), never showing the key.
    timeout : float
        Seconds one request may take in all (connect, send, wait and read the whole
        reply): an overall deadline, not a limit per read.
    max_retries : int
        Retries after a 429, a 5xx or a timeout.
    backoff : float
        Seconds before the first retry; doubled for each further one.
    max_repairs : int
        Times the server is asked again when its answer is not valid JSON for the schema.
    concurrency : int
        Requests in flight at once (threads and a semaphore).
    seed : int
    max_tokens : int
        Most tokens per answer.
    context_tokens : int
        The model's context size; prompts are cut to fit (RoB sections, cohort records).
    response_format : {"auto", "json_schema", "json_object_schema", "json_object", "none"}
        What is asked for in ``response_format`` (:data:`RESPONSE_FORMATS`); ``auto``
        tries ``json_schema``, then ``json_object_schema``, then none, as the server
        accepts them, once per client.
    max_reply_bytes : int
        Largest reply body read, in bytes (at least 1,024); a larger reply is refused
        as soon as the cap is passed, without reading the rest.
    price_prompt, price_completion : float or None
        Price per 1,000 prompt / completion tokens (not negative); the cost is printed when set.
    cache : bool
        Use the on-disk cache (:mod:`clinex.llm.cache`).
    cache_path : Path or None
        Cache file; None = ``$CLINEX_DATA/llm/cache.sqlite``.
    shots : int
        PV demonstrations per prompt (0 = zero-shot).
    train_file : Path or None
        PHEE JSON file the PV demonstrations are chosen from.
    """

    base_url: str
    model: str
    api_key: str | None = field(default=None, repr=False, compare=False)
    timeout: float = 60.0
    max_retries: int = 3
    backoff: float = 1.0
    max_repairs: int = 2
    concurrency: int = 4
    seed: int = 0
    max_tokens: int = 1024
    context_tokens: int = 8192
    response_format: str = "auto"
    max_reply_bytes: int = 4 * 1024 * 1024
    price_prompt: float | None = None
    price_completion: float | None = None
    cache: bool = True
    cache_path: Path | None = None
    shots: int = 0
    train_file: Path | None = None

    def __post_init__(self) -> None:
        if self.api_key is not None:
            key = self.api_key.strip()  # a trailing newline from `cat key.txt` or a pasted space
            if any(not (" " < ch < "\x7f") for ch in key):
                # never show the key, not even a part of it
                raise InputError(f"{ENV['api_key']} (or --llm-key) holds a character that cannot be sent in an "
                                 "HTTP header (non-ASCII, a space or a control character); check the key",
                                 field=ENV["api_key"])
            object.__setattr__(self, "api_key", key or None)
        for name in ("base_url", "model"):
            object.__setattr__(self, name, str(getattr(self, name)).strip())
        checks = (
            ("timeout", self.timeout > 0), ("max_retries", self.max_retries >= 0),
            ("backoff", self.backoff >= 0), ("max_repairs", self.max_repairs >= 0),
            ("concurrency", self.concurrency >= 1), ("max_tokens", self.max_tokens >= 1),
            ("context_tokens", self.context_tokens >= 256), ("shots", self.shots >= 0),
            ("max_reply_bytes", self.max_reply_bytes >= 1024),
            ("price_prompt", self.price_prompt is None or self.price_prompt >= 0),
            ("price_completion", self.price_completion is None or self.price_completion >= 0),
        )
        for name, ok in checks:
            if not ok:
                raise InputError(f"LLM setting {name} out of range: {getattr(self, name)!r}", field=name)
        if self.response_format not in RESPONSE_FORMATS:
            raise InputError(
                f"LLM setting response_format {self.response_format!r} not in {', '.join(RESPONSE_FORMATS)}",
                field="response_format",
            )

    def __repr__(self) -> str:
        body = ", ".join(f"{k}={v!r}" for k, v in self.public().items())
        return f"LLMSettings({body})"

    @property
    def server(self) -> str:
        """The base URL without credentials, as messages show it."""
        return redact_url(self.base_url)

    def public(self) -> dict[str, Any]:
        """The settings as a JSON-ready dict without the key (``api_key`` says only whether one is set)."""
        out: dict[str, Any] = {}
        for f in fields(self):
            v = getattr(self, f.name)
            if f.name == "api_key":
                out["api_key"] = "set" if v else None
            elif f.name == "base_url":
                out[f.name] = self.server
            else:
                out[f.name] = str(v) if isinstance(v, Path) else v
        return out


def redact_url(url: str) -> str:
    """``url`` without a ``user:password@`` part (a key may hide there)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<unparsable URL>"
    if parts.username or parts.password:
        host = parts.hostname or ""
        if parts.port:
            host += f":{parts.port}"
        parts = parts._replace(netloc=host)
    return urlunsplit(parts)


_CLI: contextvars.ContextVar[Mapping[str, Any] | None] = contextvars.ContextVar("clinex_llm_cli", default=None)


@contextlib.contextmanager
def cli_overrides(**values: Any) -> Iterator[None]:
    """Settings given on the command line, for every :func:`resolve_settings` inside the block.

    ``None`` values are ignored (the option was not given).
    """
    token = _CLI.set({k: v for k, v in values.items() if v is not None})
    try:
        yield
    finally:
        _CLI.reset(token)


def _convert(name: str, raw: Any, source: str) -> Any:
    types = {f.name: f.type for f in fields(LLMSettings)}
    kind = str(types[name])
    if not isinstance(raw, str):
        return Path(raw) if "Path" in kind and raw is not None else raw
    try:
        if kind.startswith("int"):
            return int(raw)
        if kind.startswith("float"):
            return float(raw)
        if kind.startswith("bool"):
            return raw.strip().lower() in ("1", "true", "yes", "on")
    except ValueError:
        raise InputError(f"{source}: not a number: {raw!r}", field=name) from None
    if "Path" in kind:
        return Path(raw).expanduser()
    return raw


def resolve_settings(options: Mapping[str, Any] | None = None, **overrides: Any) -> LLMSettings:
    """The settings from ``overrides``, then ``options``, the command line, the environment.

    Parameters
    ----------
    options : mapping, optional
        Settings from a model folder's ``model.json`` (below the command line and
        the environment, above the defaults).
    **overrides
        Explicit settings (highest precedence); ``None`` values are ignored.

    The precedence is: ``overrides`` > command line > environment > ``options`` >
    defaults, so that a model folder's ``model.json`` gives defaults a user can
    change without editing it.

    Returns
    -------
    LLMSettings

    Raises
    ------
    LLMError
        No server URL or no model name anywhere.
    InputError
        A setting that is not a number or is out of range.
    """
    names = [f.name for f in fields(LLMSettings)]
    merged: dict[str, Any] = {}
    for k, v in (options or {}).items():
        if k in names and v is not None:
            merged[k] = _convert(k, v, f"model.json: {k}")
    for name, var in ENV.items():
        raw = os.environ.get(var)
        if raw not in (None, ""):
            merged[name] = _convert(name, raw, var)
    if os.environ.get(NO_CACHE_ENV, "").strip().lower() in ("1", "true", "yes", "on"):
        merged["cache"] = False
    for k, v in {**(_CLI.get() or {}), **{k: v for k, v in overrides.items() if v is not None}}.items():
        if k not in names:
            raise InputError(f"unknown LLM setting {k!r}; known: {', '.join(names)}", field=k)
        merged[k] = _convert(k, v, k)
    missing = [n for n in ("base_url", "model") if not merged.get(n)]
    if missing:
        how = " and ".join(f"{ENV[n]} (or --llm-{'url' if n == 'base_url' else 'model'})" for n in missing)
        raise LLMError(f"no LLM server configured: set {how}")
    return LLMSettings(**merged)


def with_settings(settings: LLMSettings, **changes: Any) -> LLMSettings:
    """A copy of ``settings`` with ``changes`` (same checks)."""
    return replace(settings, **changes)
