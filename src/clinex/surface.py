"""The surface layer's task-independent pieces: items, settings, exit status, the surface registry.

Every surface (``clinex <task> ...``, ``clinex batch``, the web app) reaches a task through
one adapter, ``clinex.<task>.surface``: inputs -> :class:`Item` (or :class:`ItemError`) ->
results -> rows and files. This module holds what the adapters and the surfaces share and
knows no task:

- :class:`Item`, :class:`ItemError`: one unit of work, and one input that could not be one.
- :class:`TaskSurface`: what a task's adapter offers batch mode (columns, expand, process,
  model resolution, and the batch options it takes).
- :class:`Settings`: the settings of one run, resolved once: an explicit option, then the
  ``CLINEX_<TASK>_MODEL`` environment variable, then the default (``auto``), the same for
  every task and surface.
- :func:`exit_status` and :func:`finish`: the one exit status for partial failure (0 every
  item done, 1 some skipped, 2 none done).
- :func:`get_surface`: a task's adapter by name (imported on first use, so this module
  imports no task).
- :func:`folder_files` and :func:`cached_model`: a folder input's files, and one model per
  worker process.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clinex.errors import ClinexError, InputError, SchemaError

__all__ = [
    "Item",
    "ItemError",
    "TaskSurface",
    "Settings",
    "SURFACES",
    "DEFAULT_MODEL",
    "model_env",
    "exit_status",
    "finish",
    "get_surface",
    "takes_option",
    "option_owner",
    "folder_files",
    "cached_model",
]

DEFAULT_MODEL = "auto"
"""Every task's default model: its registry's ``auto`` entry."""

SURFACES: dict[str, str] = {
    "pv": "clinex.pv.surface",
    "cohort": "clinex.cohort.surface",
    "rob": "clinex.rob.surface",
}
"""Task name -> the module of its surface adapter (each defines ``SURFACE``), in the order
error messages list them."""


@dataclass(frozen=True)
class Item:
    """One unit of work: an id and the payload the task's ``process`` understands."""

    id: str
    payload: Any


@dataclass(frozen=True)
class ItemError:
    """An input that could not be processed: where it is and why (no note text)."""

    id: str
    message: str


@dataclass(frozen=True)
class TaskSurface:
    """How a task takes part in batch mode (and what the other surfaces share of it).

    Attributes
    ----------
    name : str
        Task name (``"pv"``, ``"cohort"``, ``"rob"``).
    columns : dict[str, str]
        Result columns and their DuckDB types, in order.
    expand : callable
        ``expand(path) -> iterator of Item | ItemError``: items of one input path.
    process : callable
        ``process(items, **options) -> (rows, errors)``: rows are dicts with exactly ``columns``.
    resolve_model : callable, optional
        ``resolve_model(spec, criteria) -> (spec workers load, manifest record)``: builds the
        model once before any item (an error stops the run before anything is written).
    batch_options : tuple of str
        The task-specific options of :func:`clinex.batch.run_batch` this task takes
        (``"criteria"``, ``"drugs"``, ``"batch_size"``).
    criteria : callable, optional
        ``criteria(values) -> list of str``: validated criteria (``[]`` for the default).
    screen : callable, optional
        ``screen(values) -> TermScreen``: the ``drugs`` screen.
    item_text : callable, optional
        ``item_text(item) -> str``: the text a screen matches.
    """

    name: str
    columns: dict[str, str]
    expand: Callable[[Path], Iterator[Item | ItemError]]
    process: Callable[..., tuple[list[dict[str, Any]], list[ItemError]]]
    resolve_model: Callable[[str, Sequence[str]], tuple[str, dict[str, str]]] | None = None
    batch_options: tuple[str, ...] = ()
    criteria: Callable[[Sequence[str]], list[str]] | None = None
    screen: Callable[[list[str]], Any] | None = None
    item_text: Callable[[Item], str] | None = None


def model_env(task: str) -> str:
    """The environment variable naming ``task``'s default model: ``CLINEX_<TASK>_MODEL``.

    Examples
    --------
    >>> model_env("pv")
    'CLINEX_PV_MODEL'
    """
    return f"CLINEX_{task.upper()}_MODEL"


@dataclass(frozen=True)
class Settings:
    """The settings of one run of one task, resolved once (:meth:`resolve`).

    Attributes
    ----------
    task : str
    model : str
        The model spec: a registry name, or a model folder or file.
    model_from : {"option", "env", "default"}
        Where ``model`` came from.
    """

    task: str
    model: str
    model_from: str = field(default="default")

    @classmethod
    def resolve(cls, task: str, *, model: str | Path | None = None,
                environ: Mapping[str, str] | None = None) -> Settings:
        """An explicit option, then ``CLINEX_<TASK>_MODEL``, then ``auto``.

        Parameters
        ----------
        task : str
            ``pv``, ``rob`` or ``cohort``.
        model : str or Path, optional
            The ``--model`` option (None or empty: not given; an empty variable is not set either).
        environ : mapping, optional
            The environment (default ``os.environ``).

        Examples
        --------
        >>> Settings.resolve("rob", model="cues").model
        'cues'
        >>> Settings.resolve("rob", environ={"CLINEX_ROB_MODEL": "rules"})
        Settings(task='rob', model='rules', model_from='env')
        >>> Settings.resolve("cohort", environ={}).model
        'auto'
        >>> Settings.resolve("pv", environ={"CLINEX_PV_MODEL": ""}).model
        'auto'
        """
        env = os.environ if environ is None else environ
        if model:
            return cls(task, str(model), "option")
        value = env.get(model_env(task), "").strip()
        if value:  # set and not empty (``export CLINEX_PV_MODEL=`` clears it)
            return cls(task, value, "env")
        return cls(task, DEFAULT_MODEL, "default")

    def load(self, loader: Callable[[str], Any]) -> Any:
        """``loader(self.model)``; a model named by the environment variable that fails
        says so (the user may not know the variable is set).

        Raises
        ------
        ClinexError
            What ``loader`` raises; when :attr:`model_from` is ``"env"`` the message ends
            ``(the model named by $CLINEX_<TASK>_MODEL)``.

        Examples
        --------
        >>> def load(name):
        ...     raise SchemaError(f"unknown model {name!r}")
        >>> try:
        ...     Settings.resolve("pv", environ={"CLINEX_PV_MODEL": "bogus"}).load(load)
        ... except SchemaError as exc:
        ...     print(exc)
        [CLX005] unknown model 'bogus' (the model named by $CLINEX_PV_MODEL)
        """
        try:
            return loader(self.model)
        except ClinexError as exc:
            if self.model_from != "env":
                raise
            raise type(exc)(f"{exc.message} (the model named by ${model_env(self.task)})", path=exc.path,
                            line=exc.line, field=exc.field) from None


def exit_status(done: int, skipped: int) -> int:
    """The one exit status of a run that may skip some of its items.

    Parameters
    ----------
    done : int
        Items (or rows) processed.
    skipped : int
        Items reported and skipped.

    Returns
    -------
    int
        0 when nothing was skipped; 1 when some were skipped and others done; 2 when
        nothing was done and something was skipped.

    Examples
    --------
    >>> exit_status(3, 0), exit_status(3, 1), exit_status(0, 2), exit_status(0, 0)
    (0, 1, 2, 0)
    """
    if not skipped:
        return 0
    return 2 if not done else 1


def finish(status: int) -> None:
    """Leave a command with ``status`` (:func:`exit_status`): return on 0, else raise SystemExit.

    SystemExit, not ``typer.Exit``: with ``standalone_mode=False`` click returns
    ``typer.Exit``'s code instead of raising it; SystemExit leaves the same way under the
    root entry point (:func:`clinex.cli.main`), typer's CliRunner and ``python -m``.
    """
    if status:
        raise SystemExit(status)


def get_surface(task: str) -> TaskSurface:
    """The surface adapter of ``task`` (``clinex.<task>.surface.SURFACE``), imported on first use.

    Raises
    ------
    SchemaError
        Unknown task; the message lists the valid ones.

    Examples
    --------
    >>> get_surface("rob").name
    'rob'
    """
    if task not in SURFACES:
        raise SchemaError(f"unknown task '{task}'; valid: {', '.join(SURFACES)}")
    return importlib.import_module(SURFACES[task]).SURFACE


def takes_option(task: str, option: str) -> bool:
    """Whether ``task``'s surface takes the batch ``option`` (``criteria``, ``drugs``,
    ``batch_size``); False for an unknown task."""
    return task in SURFACES and option in get_surface(task).batch_options


def option_owner(option: str) -> str:
    """The task whose surface takes the batch ``option`` (named when another task refuses it).

    Examples
    --------
    >>> option_owner("criteria"), option_owner("drugs")
    ('cohort', 'pv')
    """
    return next(t for t in SURFACES if takes_option(t, option))


def folder_files(path: Path, suffixes: tuple[str, ...], label: str | None = None) -> Iterator[Path | ItemError]:
    """A file as given; a folder's files with ``suffixes`` (any case, name order), or one
    :class:`ItemError` naming a folder that holds none of them (``.xml.gz``-like suffixes
    match the name's end; ``label``: the folder as the user wrote it, default ``path``)."""
    if path.is_dir():
        found = sorted(p for p in path.iterdir() if p.is_file() and (
            p.suffix.lower() in suffixes or p.name.lower().endswith(tuple(s for s in suffixes if s.count(".") > 1))))
        if not found:
            where = path if label is None else label
            yield ItemError(str(path), str(InputError(f"folder without {'/'.join(suffixes)} files", path=where)))
        yield from found
    else:
        yield path


_CACHE: dict[str, Any] = {}
_CACHE_SIZE = 2
"""Models kept per worker process (a run uses one; the oldest is dropped beyond this)."""


def cached_model(key: str, make: Callable[[], Any]) -> Any:
    """One model per worker process, built on first use (bounded: :data:`_CACHE_SIZE`)."""
    if key not in _CACHE:
        while len(_CACHE) >= _CACHE_SIZE:
            _CACHE.pop(next(iter(_CACHE)))
        _CACHE[key] = make()
    return _CACHE[key]
