"""Cohort selection for clinical trials (n2c2 2018 Track 1).

Public API: :func:`screen` (one patient → decision per criterion), the
:class:`~clinex.cohort.engine.ScreeningEngine` it uses, and the criterion loader
:func:`~clinex.cohort.criteria.load_criteria`. spaCy and medspaCy load on first use.

``clinex.cohort.screen`` is the function (imported eagerly here so that it is not
shadowed by the submodule of the same name, :mod:`clinex.cohort.screen`).
"""

from __future__ import annotations

from typing import Any

from clinex.cohort.screen import screen

__all__ = ["screen", "ScreeningEngine", "load_criteria"]


def __getattr__(name: str) -> Any:
    if name == "ScreeningEngine":
        from clinex.cohort.engine import ScreeningEngine

        return ScreeningEngine
    if name == "load_criteria":
        from clinex.cohort.criteria import load_criteria

        return load_criteria
    raise AttributeError(f"module 'clinex.cohort' has no attribute {name!r}")
