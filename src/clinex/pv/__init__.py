"""Pharmacovigilance event extraction (PHEE; Sun et al., EMNLP 2022).

Public API: :func:`extract` (text -> events), the result types :class:`Event`,
:class:`Argument`, :class:`Attribute`, and :class:`SentenceEvents`.
"""

from __future__ import annotations

from clinex.pv.types import Argument, Attribute, Event, SentenceEvents

__all__ = ["Argument", "Attribute", "Event", "SentenceEvents", "extract"]


def extract(text: str, *, model: str = "auto") -> list[Event]:
    """Extract ADE / PTE events from ``text`` (see :mod:`clinex.pv.pipeline`)."""
    from clinex.pv.pipeline import extract as _extract

    return _extract(text, model=model)
