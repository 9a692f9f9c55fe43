"""The LLM server options of the task commands, declared once.

:func:`llm_options` adds ``--llm-url``, ``--llm-model``, ``--llm-key`` and
``--no-cache`` to a typer command (``clinex pv extract``, ``clinex rob assess``,
``clinex cohort screen``). The values reach every LLM model built while the command
runs (:func:`clinex.llm.config.cli_overrides`); unset options fall back to the
``CLINEX_LLM_*`` environment variables. When the command made any LLM call, one
line with the requests, cache hits, tokens, cost and dropped spans is printed on
stderr at the end (also when the command fails). The key is never echoed: typer's
help shows no default for it.
"""

from __future__ import annotations

import functools
import inspect
import sys
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["llm_options", "OPTION_NAMES"]

F = TypeVar("F", bound=Callable[..., Any])

OPTION_NAMES = ("llm_url", "llm_model", "llm_key", "no_cache")


def _parameters() -> list[inspect.Parameter]:
    import typer

    kw = inspect.Parameter.KEYWORD_ONLY
    return [
        inspect.Parameter("llm_url", kw, annotation=str | None, default=typer.Option(
            None, "--llm-url", help="--model llm: OpenAI-compatible server root, e.g. http://127.0.0.1:8080/v1 "
            "(default $CLINEX_LLM_BASE_URL).")),
        inspect.Parameter("llm_model", kw, annotation=str | None, default=typer.Option(
            None, "--llm-model", help="--model llm: the server's model name (default $CLINEX_LLM_MODEL).")),
        inspect.Parameter("llm_key", kw, annotation=str | None, default=typer.Option(
            None, "--llm-key", help="--model llm: API key (default $CLINEX_LLM_API_KEY; prefer the variable: "
            "options show in the process list).", show_default=False)),
        inspect.Parameter("no_cache", kw, annotation=bool, default=typer.Option(
            False, "--no-cache", help="--model llm: neither read nor write the LLM answer cache.")),
    ]


def llm_options(fn: F) -> F:
    """Decorate a typer command function (below ``@app.command()``) with the LLM options.

    The wrapped function is called without the four options; they apply as
    :func:`~clinex.llm.config.cli_overrides` while it runs.
    """
    sig = inspect.signature(fn, eval_str=True)
    extra = _parameters()

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        from clinex.llm.client import format_usage, reset_session_usage, session_usage
        from clinex.llm.config import cli_overrides

        url, model, key, no_cache = (kwargs.pop(n, None) for n in OPTION_NAMES)
        reset_session_usage()
        with cli_overrides(base_url=url, model=model, api_key=key, cache=False if no_cache else None):
            try:
                return fn(*args, **kwargs)
            finally:
                usage = session_usage()
                if usage.calls or usage.failures:
                    print(format_usage(usage), file=sys.stderr)

    params = [*sig.parameters.values(), *extra]
    wrapper.__signature__ = sig.replace(parameters=params)  # type: ignore[attr-defined]
    wrapper.__annotations__ = {p.name: p.annotation for p in params if p.annotation is not inspect.Parameter.empty}
    if sig.return_annotation is not inspect.Signature.empty:
        wrapper.__annotations__["return"] = sig.return_annotation
    return wrapper  # type: ignore[return-value]
