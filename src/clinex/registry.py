"""One registry type for the model kinds of every task (PV, RoB, cohort).

Each task keeps one :class:`Registry` (``clinex.pv.models.REGISTRY``,
``clinex.rob.evidence.REGISTRY``, ``clinex.cohort.models.REGISTRY``): a mapping of kind
name to :class:`ModelKind`, the one entry shape. The registry does the same for every
task:

* **lookup** -- :meth:`Registry.load` takes a registered name, ``auto``, a saved model
  (a folder for PV, a file for RoB) or a model object (returned as it is);
* **auto** -- :meth:`Registry.resolve_auto`: the first kind of the task's preference
  order whose model is there (a shipped folder or a trained file) and whose libraries
  import; the last one is taken without that check, so that loading it says what is
  missing;
* **caching** -- a least-recently-used cache of ``cache_size`` models keyed by where the
  model was read from (resolved path and the modification time of its model file) or,
  for a kind built by a factory, by the kind and the arguments it was built with; kinds
  whose models read settings when built (``llm``: server, key) are never cached;
* **one known-name check** -- :meth:`Registry.check_name` (what the web API calls: a web
  client names registered models only, never a server path) and the one message for an
  unknown name, :meth:`Registry.unknown_message`.

A lookup never starts a thread or warms anything up: callers that want a warm-up call
it themselves.
"""

from __future__ import annotations

import importlib
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from clinex.errors import ModelError

__all__ = ["AUTO", "ModelKind", "Registry"]

AUTO = "auto"
"""The name every task's registry resolves to its preferred available kind."""


@dataclass(frozen=True)
class ModelKind:
    """One registered model kind: what ``--model NAME``, the web API and batch accept.

    Attributes
    ----------
    name : str
        The kind's name (``crf``, ``rules``), also the ``kind`` a saved model records.
    factory : callable or None
        ``factory(*args, **options) -> model``: builds the model the name stands for
        (RoB ``cues``; cohort kinds take the criteria). None: the model is the shipped
        folder (``shipped``), the file at ``path``, or else ``model_class()``.
    version : str
        Versioned id of the model the name loads (``clinex.pv.crf.v1``): provenance of
        every prediction.
    description : str
        One line for help texts.
    module, model_class : str or None
        Module (imported lazily) and class whose ``load(path)`` reads a saved model of
        this kind; None: the kind cannot be read from a path.
    shipped : str or None
        Folder under ``clinex/resources/models`` holding the shipped model.
    path : callable or None
        ``path() -> Path``: where the named model is read from when it is not shipped
        (RoB ``sentence``: the model ``clinex rob train`` writes).
    missing : str
        The message when the shipped folder or the file at ``path`` is not there.
    trainer, trainer_module : str or None
        Training function and its module (None: ``module``).
    trainable : bool
        Offered by the task's ``train`` verb.
    cache : bool
        Whether loaded models of this kind are cached (False for kinds that read
        settings when built, such as ``llm``).
    """

    name: str
    factory: Callable[..., Any] | None
    version: str
    description: str
    module: str | None = None
    model_class: str | None = None
    shipped: str | None = None
    path: Callable[[], Path] | None = None
    missing: str = ""
    trainer: str | None = None
    trainer_module: str | None = None
    trainable: bool = False
    cache: bool = True

    def loader(self, *args: Any, **options: Any) -> Any:
        """Build the model the name stands for, uncached (``Registry.load`` caches)."""
        if self.factory is not None:
            return self.factory(*args, **options)
        location = self.location()
        if location is not None:
            return self.import_class().load(location)
        self.check_installed()
        return self.import_class()(*args, **options)

    def check_installed(self) -> None:
        """Raise ModelError (:attr:`missing`, with the path looked at) when the kind's model
        is a shipped folder or a trained file that is not there."""
        if (self.shipped is not None or self.path is not None) and self.location() is None:
            where = self.path() if self.path is not None else None
            raise ModelError(self.missing or f"no {self.name!r} model installed", path=where)

    def location(self) -> Path | None:
        """The shipped folder or trained file the name loads, if it is there."""
        if self.shipped is not None:
            path = Path(str(resources.files("clinex.resources") / "models" / self.shipped))
            return path if (path / "model.json").is_file() else None
        if self.path is not None:
            path = self.path()
            return path if path.exists() else None
        return None

    def import_class(self, hint: str = "") -> Any:
        """The model class (``module.model_class``), imported now.

        Raises
        ------
        ModelError
            The module or one of its libraries is not installed (``hint`` says how to
            install it), or the kind names no class.
        """
        if self.module is None or self.model_class is None:
            raise ModelError(f"the {self.name!r} model cannot be read from a path")
        return _import_attr(self.name, self.module, self.model_class, hint)

    def import_trainer(self, hint: str = "") -> Any:
        """The training function (``trainer_module.trainer``), imported now.

        Raises
        ------
        ModelError
            The kind is not trained by clinex, or a library is missing.
        """
        module = self.trainer_module or self.module
        if module is None or self.trainer is None:
            raise ModelError(f"the {self.name!r} model is not trained by clinex")
        return _import_attr(self.name, module, self.trainer, hint)


def _import_attr(kind: str, module_name: str, attr: str, hint: str = "") -> Any:
    """``module_name.attr``, imported lazily; a missing library is a ModelError naming it."""
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        raise ModelError(f"the {kind!r} model needs {exc.name!r}, which is not installed{hint}") from None
    try:
        return getattr(module, attr)
    except AttributeError:
        raise ModelError(f"{module_name} has no {attr}") from None


def _freeze(value: Any) -> Hashable:
    """A cache key part for an argument: files by resolved path and modification time,
    folders by resolved path, sequences and mappings element by element."""
    if isinstance(value, (str, Path)):
        p = Path(value)
        if p.is_file():
            return f"{p.resolve()}@{p.stat().st_mtime_ns}"
        return str(p.resolve()) if p.exists() else str(value)
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((str(k), _freeze(v)) for k, v in value.items()))
    hash(value)  # TypeError: not cacheable
    return value


def _stamp(path: Path) -> str:
    """``resolved@mtime`` of a saved model (its ``model.json`` for a folder)."""
    marker = path / "model.json" if path.is_dir() else path
    try:
        mtime = marker.stat().st_mtime_ns
    except OSError:
        mtime = 0
    return f"{path.resolve()}@{mtime}"


class Registry(dict[str, ModelKind]):
    """The model kinds of one task: kind name -> :class:`ModelKind`, with lookup and caching.

    Parameters
    ----------
    task : str
        The task (``pv``, ``rob``, ``cohort``), for messages.
    kinds : iterable of ModelKind
        In listing order.
    auto : sequence of str
        The preference order ``auto`` resolves in (:meth:`resolve_auto`).
    noun : str, default "model"
        What an unknown name is called in messages (``evidence model``).
    paths : {"folder", "file"} or None
        What a saved model is (None: the task saves no models; only names are taken).
    auto_first : bool, default False
        List ``auto`` before the kinds (PV) or after them.
    cache_size : int, default 4
        Loaded models kept, least recently used dropped first.
    kind_of : callable or None
        ``kind_of(path) -> str``: the kind a saved model records (raises ModelError naming
        the file when it cannot tell).
    install_hint : str, default ""
        Appended to the message for a missing library.
    keep_folder : bool, default False
        Set ``model.folder_`` to the path a model was read from (PV model ids carry a
        fingerprint of folders that are not the shipped ones).

    Examples
    --------
    >>> reg = Registry("demo", [ModelKind("echo", lambda: "an echo model", "demo.echo.v1", "test")],
    ...                auto=("echo",))
    >>> reg.names(), reg.resolve("auto"), reg.load("auto")
    (('echo', 'auto'), 'echo', 'an echo model')
    >>> reg.unknown_message("nosuch")
    "unknown model 'nosuch': not one of echo, auto"
    """

    def __init__(
        self,
        task: str,
        kinds: Iterable[ModelKind],
        *,
        auto: Sequence[str],
        noun: str = "model",
        paths: Literal["folder", "file"] | None = None,
        auto_first: bool = False,
        cache_size: int = 4,
        kind_of: Callable[[Path], str] | None = None,
        install_hint: str = "",
        keep_folder: bool = False,
    ) -> None:
        super().__init__((k.name, k) for k in kinds)
        self.task = task
        self.auto = tuple(auto)
        self.noun = noun
        self.paths = paths
        self.auto_first = auto_first
        self.cache_size = cache_size
        self.kind_of = kind_of
        self.install_hint = install_hint
        self.keep_folder = keep_folder
        self._cache: OrderedDict[Hashable, Any] = OrderedDict()

    # ------------------------------------------------------------------ names

    def names(self) -> tuple[str, ...]:
        """Every name accepted besides a path: the kinds and ``auto``."""
        return (AUTO, *self) if self.auto_first else (*self, AUTO)

    def is_known(self, name: str) -> bool:
        """Whether ``name`` is a registered kind or ``auto`` (paths are not names)."""
        return name in self.names()

    def unknown_message(self, name: str, *, paths: bool = True) -> str:
        """The one message for a name no surface knows (``paths``: say it is no path either)."""
        tail = {"folder": " and not a folder", "file": " and not an existing file"}.get(self.paths or "", "")
        return f"unknown {self.noun} {name!r}: not one of {', '.join(self.names())}{tail if paths else ''}"

    def check_name(self, name: str, *, field: str | None = None) -> str:
        """Return ``name`` if it is a registered name (``auto`` included; no paths).

        This is the check of every surface that must not open server paths (the web API).

        Raises
        ------
        ModelError
            Not a registered name; ``field`` is set on the error (``"model"``).
        """
        if not self.is_known(name):
            raise ModelError(self.unknown_message(name, paths=False), field=field)
        return name

    def resolve(self, name: str) -> str:
        """The kind ``name`` stands for (``auto`` resolved).

        Raises
        ------
        ModelError
            Not a registered name.
        """
        self.check_name(name)
        return self.resolve_auto() if name == AUTO else name

    def resolve_auto(self) -> str:
        """The kind ``auto`` names: the first of :attr:`auto` whose shipped folder or
        trained file is there (kinds with neither always are) and whose libraries import;
        the last candidate without the import check."""
        candidates = [
            k for k in self.auto
            if k in self and (self[k].location() is not None or (self[k].shipped is None and self[k].path is None))
        ]
        for kind in candidates[:-1]:
            entry = self[kind]
            if entry.factory is None and entry.module is not None:
                try:
                    entry.import_class(self.install_hint)
                except ModelError:  # e.g. the neural extra is not installed: try the next kind
                    continue
            return kind
        if candidates:
            return candidates[-1]
        return self.auto[-1] if self.auto else AUTO

    # ------------------------------------------------------------------ loading

    def load(self, spec: Any = AUTO, *args: Any, **options: Any) -> Any:
        """The model ``spec`` names: a registered name, ``auto``, a saved model's path, or a
        model object (returned as it is).

        Parameters
        ----------
        spec : str, Path or model, default "auto"
        *args, **options
            Passed to the kind's factory (cohort: the criteria; ``llm``: server settings).

        Returns
        -------
        object
            The model (cached as the module docstring says).

        Raises
        ------
        ModelError
            Unknown name and no such path, a missing library or shipped model, or a path
            that holds no model of a registered kind.
        """
        if not isinstance(spec, (str, Path)):
            return spec
        key = str(spec)
        if key == AUTO:
            key = self.resolve_auto()
        if key in self:
            return self._named(self[key], args, options)
        path = Path(key)
        found = {"folder": path.is_dir, "file": path.is_file}.get(self.paths or "", lambda: False)()
        if not found:
            raise ModelError(self.unknown_message(key))
        return self._cached(("path", _stamp(path)), lambda: self.read(path))

    def _named(self, kind: ModelKind, args: tuple, options: dict) -> Any:
        """The model a registered kind stands for, through the cache."""
        if kind.factory is None:
            location = kind.location()
            if location is not None and not args and not options:
                kind.import_class(self.install_hint)  # a missing library fails, cached model or not
                return self._cached(("path", _stamp(location)), lambda: self.read(location, kind.name))
            kind.check_installed()
            build: Callable[[], Any] = lambda: kind.import_class(self.install_hint)(*args, **options)  # noqa: E731
        else:
            build = lambda: kind.factory(*args, **options)  # type: ignore[misc]  # noqa: E731
        if not kind.cache:
            return build()
        try:
            key: Hashable = ("kind", kind, _freeze(args), _freeze(options))
        except TypeError:  # an option that cannot be a key (a client object): not cached
            return build()
        return self._cached(key, build)

    def read(self, path: Path, kind: str | None = None) -> Any:
        """Read the saved model at ``path`` (uncached): its kind from ``kind_of``.

        Raises
        ------
        ModelError
            The path records no registered kind, or the kind cannot be read from a path.
        """
        if kind is None:
            kind = self.kind_of(path) if self.kind_of is not None else None
            if kind not in self:
                raise ModelError(f"unknown model kind {kind!r}; available: {', '.join(self)}", path=path,
                                 field="kind")
        model = self[kind].import_class(self.install_hint).load(path)
        if self.keep_folder:
            model.folder_ = path
        return model

    def _cached(self, key: Hashable, build: Callable[[], Any]) -> Any:
        """``build()`` once per key, least recently used dropped past ``cache_size``."""
        if key in self._cache:
            self._cache.move_to_end(key)
            return self._cache[key]
        model = self._cache[key] = build()
        while len(self._cache) > self.cache_size:
            self._cache.popitem(last=False)
        return model

    def clear_cache(self) -> None:
        """Forget every cached model (e.g. after changing a model folder in place)."""
        self._cache.clear()

    def shipped_dir(self, kind: str) -> Path | None:
        """Folder of the model of ``kind`` shipped inside the package, or None."""
        entry = self.get(kind)
        return entry.location() if entry is not None and entry.shipped is not None else None
