"""Registry of cohort-selection models (n2c2 2018 Track 1).

A cohort model decides every criterion of a criterion set for one patient. Every
surface -- :func:`clinex.cohort.screen`, ``clinex cohort screen --model``, the web API's
cohort endpoint and ``clinex batch cohort --model`` -- picks one by name from
:data:`REGISTRY`, so adding a kind here makes all of them accept it.

Names
-----
``rules``
    the declarative criterion engine (:class:`clinex.cohort.engine.ScreeningEngine`:
    medspaCy concepts with ConText, labs, time windows), the default.
``auto``
    the default kind (:data:`AUTO_KIND`).

Every model follows :class:`CohortModel`: ``name`` (versioned id), ``screen(patient)``,
``screen_many(patients)`` and ``check_size(patient)``.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from clinex.cohort.types import Decision, Patient
from clinex.errors import ModelError
from clinex.registry import AUTO, ModelKind, Registry

__all__ = [
    "CohortModel", "CohortKind", "REGISTRY", "AUTO", "AUTO_KIND", "model_names", "check_model_name",
    "unknown_model_message", "get_model", "get_engine",
]

Criteria = str | Path | Sequence[str | Path]


@runtime_checkable
class CohortModel(Protocol):
    """What every cohort model offers."""

    name: str

    def screen(self, patient: Patient) -> dict[str, Decision]:
        """Criterion name -> decision (label, score, evidence with offsets into ``patient.text``)."""
        ...

    def screen_many(self, patients: Iterable[Patient]) -> Iterator[tuple[Patient, dict[str, Decision]]]:
        """(patient, decisions) for each patient, in input order."""
        ...

    def check_size(self, patient: Patient) -> None:
        """Raise :class:`~clinex.errors.InputError` naming the patient if it is too long to screen."""
        ...


CohortKind = ModelKind
"""A cohort model kind: the one entry shape of every task's registry
(:class:`clinex.registry.ModelKind`; ``CohortKind(name, factory, version, description)``,
``factory(criteria, **options) -> CohortModel``)."""


def _rules(criteria: Criteria = "n2c2", *, batch_size: int | None = None, **options: Any) -> CohortModel:
    """The fitted engine for ``criteria``; ``batch_size`` (record pieces per ``nlp.pipe``
    call) gives a shallow copy of the cached one, so the shared engine is never changed
    under another caller."""
    if options:
        raise ModelError(f"the rules model takes no options but batch_size; got {', '.join(sorted(options))}")
    if batch_size is None:
        from clinex.cohort.engine import ScreeningEngine

        return ScreeningEngine([criteria] if isinstance(criteria, (str, Path)) else list(criteria)).fit()
    engine = get_engine(criteria)
    if batch_size == engine.batch_size:  # type: ignore[attr-defined]
        return engine
    if batch_size < 1:
        raise ModelError(f"batch_size must be >= 1; got {batch_size}")
    clone = copy.copy(engine)
    clone.batch_size = batch_size  # type: ignore[attr-defined]
    return clone


def _llm(criteria: Criteria = "n2c2", **options: Any) -> CohortModel:
    from clinex.cohort.llm import make_llm_model

    return make_llm_model(criteria, **options)


def get_engine(criteria: Criteria = "n2c2") -> CohortModel:
    """The cached, fitted :class:`~clinex.cohort.engine.ScreeningEngine` for ``criteria``.

    Criterion files are keyed by path and modification time, so an edited file is
    loaded again; the medspaCy pipeline itself is shared when the phrases are equal.
    """
    return REGISTRY.load("rules", criteria)


REGISTRY: Registry = Registry("cohort", [
    ModelKind("rules", _rules, "clinex.cohort.rules.v1",
              "declarative criteria: medspaCy concepts with ConText, labs and time windows (the default)"),
    ModelKind("llm", _llm, "clinex.cohort.llm.v1",
              "one prompt per criterion over all notes to an LLM on an OpenAI-compatible server (docs/llm.md)",
              cache=False),
], auto=("rules",), noun="cohort model", cache_size=8)
"""The one list of cohort model kinds (a :class:`clinex.registry.Registry`): name ->
:class:`~clinex.registry.ModelKind`. Fitted engines are cached by the registry (eight,
least recently used dropped first; criterion files keyed by path and modification time,
so an edited file is loaded again)."""

AUTO_KIND = "rules"
"""The kind ``auto`` picks (the first and only kind of ``REGISTRY.auto``)."""


def model_names() -> tuple[str, ...]:
    """Every model name the surfaces accept: the registry's kinds and ``auto``."""
    return REGISTRY.names()


def unknown_model_message(name: str) -> str:
    """The one message for a cohort model name no surface knows (CLI, web, batch, API)."""
    return REGISTRY.unknown_message(name)


def check_model_name(name: str) -> str:
    """Return the kind ``name`` stands for (``auto`` resolved).

    Raises
    ------
    ModelError
        If ``name`` is not in :func:`model_names`.
    """
    return REGISTRY.resolve(name)


def get_model(name: str | Path | CohortModel = AUTO, criteria: Criteria = "n2c2", **options: Any) -> CohortModel:
    """The cohort model ``name`` for ``criteria`` (cached by :data:`REGISTRY`).

    Parameters
    ----------
    name : str, Path or CohortModel, default "auto"
        A name of :func:`model_names`, or a model object (returned as it is; cohort
        models are not saved, so a path is an unknown name).
    criteria : str, Path or list of them, default "n2c2"
        The packaged set name, or criterion files / folders.
    **options
        Kind-specific options (e.g. a server URL for an LLM kind).

    Raises
    ------
    ModelError
        Unknown name, options the kind does not take, or options given with a model object.
    """
    if not isinstance(name, (str, Path)):
        if options:
            raise ModelError(f"options ({', '.join(sorted(options))}) are for a model name, not a model object")
        return name
    return REGISTRY.load(check_model_name(str(name)), criteria, **options)
