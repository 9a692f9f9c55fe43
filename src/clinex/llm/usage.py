"""What the LLM calls cost: per-client and per-process counters and the line printed for them.

:class:`Usage` counts answers, requests, cache hits, tokens, retries, repairs, failures,
downgrades, the cost and the quotes grounded; every :class:`clinex.llm.client.LLMClient`
has its own and adds to the process's (:func:`session_usage`), which the CLI resets per
command (:func:`reset_session_usage`) and prints with :func:`format_usage`.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from clinex.llm.grounding import GroundingStats

__all__ = ["Usage", "format_usage", "reset_session_usage", "session_usage"]


@dataclass
class Usage:
    """What the LLM calls cost (thread-safe counters).

    Attributes
    ----------
    calls : int
        Answers asked for (:meth:`LLMClient.complete_json` calls).
    requests : int
        HTTP requests sent (retries and repairs included).
    cache_hits : int
        Calls answered from the cache (no request).
    prompt_tokens, completion_tokens : int
        As the server's ``usage`` reports them (0 when it reports none).
    retries, repairs, failures : int
        Requests repeated after a 429 / 5xx / timeout; re-asks after an invalid
        answer; calls that raised.
    downgraded : int
        Answers the task models turned to NI / not met because none of their
        evidence quotes could be grounded (counted by :meth:`LLMClient.count_downgrade`).
    cost : float
        Price of the tokens, when a price is configured (``priced``).
    response_format : str or None
        The ``response_format`` form of the last answered request (one of
        :data:`clinex.llm.config.RESPONSE_FORMATS` but ``auto``); None before any.
    grounding : GroundingStats
        Quotes grounded / dropped by the task models.
    """

    calls: int = 0
    requests: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    retries: int = 0
    repairs: int = 0
    failures: int = 0
    downgraded: int = 0
    cost: float = 0.0
    priced: bool = False
    response_format: str | None = None
    grounding: GroundingStats = field(default_factory=GroundingStats)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def bump(self, **counts: float) -> None:
        """Add ``counts`` to the named counters."""
        with self._lock:
            for k, v in counts.items():
                setattr(self, k, getattr(self, k) + v)

    def as_dict(self) -> dict[str, Any]:
        """The counters as a JSON-ready dict."""
        out: dict[str, Any] = {k: getattr(self, k) for k in (
            "calls", "requests", "cache_hits", "prompt_tokens", "completion_tokens", "retries", "repairs",
            "failures", "downgraded")}
        out["cost"] = round(self.cost, 6) if self.priced else None
        out["response_format"] = self.response_format
        out.update(self.grounding.as_dict())
        return out


_SESSION = Usage()


def session_usage() -> Usage:
    """The usage of every client of this process since :func:`reset_session_usage`."""
    return _SESSION


def reset_session_usage() -> None:
    """Start counting :func:`session_usage` from zero (the CLI does it per command)."""
    global _SESSION
    _SESSION = Usage()


def format_usage(usage: Usage) -> str:
    """One line for stderr: answers, requests, cache hits, tokens, cost, dropped spans, downgrades,
    and the ``response_format`` form the server accepted.

    ``answers`` counts successful answers only (a call that failed is in ``failures``).
    """
    parts = [
        f"LLM: {usage.calls} answers, {usage.requests} requests, {usage.cache_hits} from cache"
        + (f", {usage.failures} failed" if usage.failures else ""),
        f"{usage.prompt_tokens:,} prompt + {usage.completion_tokens:,} completion tokens",
    ]
    if usage.priced:
        parts.append(f"cost {usage.cost:.4f}")
    g = usage.grounding
    parts.append(f"{g.grounded} spans grounded ({g.fuzzy} fuzzy), {g.ungrounded} ungrounded dropped")
    if usage.downgraded:
        parts.append(f"{usage.downgraded} answers without grounded evidence downgraded to NI / not met")
    if usage.response_format:
        parts.append(f"response_format {usage.response_format}")
    return "; ".join(parts)
