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
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from clinex.cohort.types import Decision, Patient
from clinex.errors import ModelError

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


@dataclass(frozen=True)
class CohortKind:
    """One cohort model kind: what ``--model NAME`` accepts on every surface.

    Attributes
    ----------
    name : str
        The kind's name (``rules``).
    factory : callable
        ``factory(criteria, **options) -> CohortModel``; ``criteria`` as in
        :func:`clinex.cohort.screen`; ``options`` are kind-specific (none for ``rules``).
    version : str
        Versioned id of the kind (``clinex.cohort.rules.v1``), recorded in outputs.
    description : str
        One line for help texts.
    """

    name: str
    factory: Callable[..., CohortModel]
    version: str
    description: str


def _rules(criteria: Criteria = "n2c2", *, batch_size: int | None = None, **options: Any) -> CohortModel:
    """The cached engine for ``criteria``; ``batch_size`` (record pieces per ``nlp.pipe``
    call) gives a shallow copy, so the shared engine is never changed under another caller."""
    if options:
        raise ModelError(f"the rules model takes no options but batch_size; got {', '.join(sorted(options))}")
    engine = get_engine(criteria)
    if batch_size is None or batch_size == engine.batch_size:  # type: ignore[attr-defined]
        return engine
    if batch_size < 1:
        raise ModelError(f"batch_size must be >= 1; got {batch_size}")
    clone = copy.copy(engine)
    clone.batch_size = batch_size  # type: ignore[attr-defined]
    return clone


def _llm(criteria: Criteria = "n2c2", **options: Any) -> CohortModel:
    from clinex.cohort.llm import make_llm_model

    return make_llm_model(criteria, **options)


_ENGINES: OrderedDict[tuple[str, ...], CohortModel] = OrderedDict()
_MAX_ENGINES = 8
"""Fitted engines kept (least recently used dropped first): a server screening with
many criterion files does not grow without bound."""


def get_engine(criteria: Criteria = "n2c2") -> CohortModel:
    """The cached, fitted :class:`~clinex.cohort.engine.ScreeningEngine` for ``criteria``.

    Criterion files are keyed by path and modification time, so an edited file is
    loaded again; the medspaCy pipeline itself is shared when the phrases are equal.
    """
    from clinex.cohort.engine import ScreeningEngine

    specs = [criteria] if isinstance(criteria, (str, Path)) else list(criteria)
    # files are keyed with their modification time: an edited criterion file is reloaded
    key = tuple(
        f"{Path(s).resolve()}@{Path(s).stat().st_mtime_ns}" if Path(s).is_file() else str(Path(s).resolve()) if Path(s).exists() else str(s)
        for s in specs
    )
    eng = _ENGINES.get(key)
    if eng is None:
        eng = _ENGINES[key] = ScreeningEngine(specs).fit()
        while len(_ENGINES) > _MAX_ENGINES:
            _ENGINES.popitem(last=False)
    else:
        _ENGINES.move_to_end(key)
    return eng


REGISTRY: dict[str, CohortKind] = {
    "rules": CohortKind(
        "rules", _rules, "clinex.cohort.rules.v1",
        "declarative criteria: medspaCy concepts with ConText, labs and time windows (the default)",
    ),
    "llm": CohortKind(
        "llm", _llm, "clinex.cohort.llm.v1",
        "one prompt per criterion over all notes to an LLM on an OpenAI-compatible server (docs/llm.md)",
    ),
}
"""The one list of cohort model kinds: name -> :class:`CohortKind`."""

AUTO = "auto"
"""The default name; it picks :data:`AUTO_KIND`."""
AUTO_KIND = "rules"


def model_names() -> tuple[str, ...]:
    """Every model name the surfaces accept: the registry's kinds and ``auto``."""
    return (*REGISTRY, AUTO)


def unknown_model_message(name: str) -> str:
    """The one message for a cohort model name no surface knows (CLI, web, batch, API)."""
    return f"unknown cohort model {name!r}: not one of {', '.join(model_names())}"


def check_model_name(name: str) -> str:
    """Return the kind ``name`` stands for (``auto`` resolved).

    Raises
    ------
    ModelError
        If ``name`` is not in :func:`model_names`.
    """
    if name not in model_names():
        raise ModelError(unknown_model_message(name))
    return AUTO_KIND if name == AUTO else name


def get_model(name: str = AUTO, criteria: Criteria = "n2c2", **options: Any) -> CohortModel:
    """The cohort model ``name`` for ``criteria`` (cached by the kind where it can be).

    Parameters
    ----------
    name : str, default "auto"
        A name of :func:`model_names`.
    criteria : str, Path or list of them, default "n2c2"
        The packaged set name, or criterion files / folders.
    **options
        Kind-specific options (e.g. a server URL for an LLM kind).

    Raises
    ------
    ModelError
        Unknown name, or options the kind does not take.
    """
    return REGISTRY[check_model_name(name)].factory(criteria, **options)
