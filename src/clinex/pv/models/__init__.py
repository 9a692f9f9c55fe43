"""Registry of PHEE event-extraction models.

A saved model is a folder with ``model.json`` (``{"kind": "crf" | "transformer" | "onnx",
"version": ..., ...}``) and the files its kind needs. :func:`load_model` resolves a
name or a folder; :func:`train` dispatches to the kind's training function.

Names
-----
``auto``
    the best installed model: the shipped ONNX export of the transformer
    (``clinex/resources/models/pv_onnx``; onnxruntime and tokenizers, base
    dependencies, no torch), else the shipped transformer when its libraries
    (``clinex[train]``: torch, transformers) are installed, else the shipped CRF.
``onnx``
    the shipped ONNX model (:mod:`clinex.pv.models.onnx`; the default).
``crf``
    the shipped CRF (``clinex/resources/models/pv_crf``; :mod:`clinex.pv.models.crf`).
``transformer``
    the shipped transformer (:mod:`clinex.pv.models.transformer`, optional
    ``neural`` extra).
a folder path
    any saved model; its ``model.json`` says which kind.

Every model follows the :class:`PVModel` protocol: ``name``, ``predict(texts)``,
``save(path)`` and the class method ``load(path)``.
"""

from __future__ import annotations

import importlib
import json
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from clinex.errors import ModelError
from clinex.pv.types import Event, SentenceEvents

__all__ = [
    "PVModel", "ModelKind", "REGISTRY", "AUTO", "model_names", "check_model_name", "unknown_model_message",
    "clear_cache", "load_model", "model_id", "train", "shipped_model_dir",
]


@dataclass(frozen=True)
class ModelKind:
    """One PHEE model kind: what ``--model NAME``, the web API and ``clinex batch pv`` accept.

    Attributes
    ----------
    name : str
        The kind's name (``crf``), also ``model.json``'s ``kind``.
    module : str
        Module holding the model class and training function (imported lazily).
    model_class, trainer : str
        Names of the model class (with ``load(path)``) and training function in ``module``.
    version : str
        Versioned id of the kind's shipped model (``clinex.pv.crf.v1``), the id
        :func:`model_id` gives it.
    description : str
        One line for help texts.
    shipped : str or None
        Folder under ``clinex/resources/models`` holding the shipped model, if any.
    trainable : bool
        Listed by ``clinex pv train --model`` (False: the ``onnx`` kind is made by
        ``clinex pv export-onnx`` from a trained transformer; ``llm`` is not trained).
    trainer_module : str or None
        Module holding the training function when it is not ``module`` (the ``onnx``
        kind trains a transformer with torch and exports it, so its trainer lives in
        :mod:`clinex.pv.models.transformer.export`); None: ``module``.
    """

    name: str
    module: str
    model_class: str
    trainer: str
    version: str
    description: str
    shipped: str | None = None
    trainer_module: str | None = None
    trainable: bool = True

    def loader(self) -> Any:
        """The kind's model class (its ``load(path)`` reads a model folder)."""
        return _import(self.name, 1)


REGISTRY: dict[str, ModelKind] = {
    "crf": ModelKind(
        "crf", "clinex.pv.models.crf", "CRFModel", "train_crf", "clinex.pv.crf.v1",
        "two linear-chain CRFs over word tokens (python-crfsuite)", shipped="pv_crf",
    ),
    "transformer": ModelKind(
        "transformer", "clinex.pv.models.transformer", "TransformerExtractor", "train_transformer",
        "clinex.pv.transformer.v2", "fine-tuned encoder tagger (needs clinex[train])", shipped="pv_transformer",
    ),
    "onnx": ModelKind(
        "onnx", "clinex.pv.models.onnx", "OnnxExtractor", "train_onnx", "clinex.pv.onnx.v2",
        "the transformer exported to ONNX, run by onnxruntime without torch (the default)", shipped="pv_onnx",
        trainer_module="clinex.pv.models.transformer.export", trainable=False,
    ),
    "llm": ModelKind(
        "llm", "clinex.pv.models.llm", "LLMExtractor", "train_llm", "clinex.pv.llm.v1",
        "an LLM on an OpenAI-compatible server (CLINEX_LLM_* / --llm-*; docs/llm.md); never auto",
        trainable=False,
    ),
}
"""The one list of PHEE model kinds: kind name -> :class:`ModelKind`. Adding a kind here
makes the CLI, the web API and ``clinex batch pv`` accept it."""

AUTO = "auto"
"""The name that picks the first kind in :data:`REGISTRY` order of preference whose
shipped model and libraries are installed (ONNX, then transformer, then CRF): the
ONNX model gives the transformer's events (``tests/pv/test_pv_onnx.py``) without torch."""

_AUTO_ORDER = ("onnx", "transformer", "crf")


def model_names() -> tuple[str, ...]:
    """Every model name accepted besides a folder: ``auto`` and the registry's kinds."""
    return (AUTO, *REGISTRY)


def unknown_model_message(name: str, *, folders: bool = True) -> str:
    """The one message for a model name no surface knows (CLI, web, batch, Python API)."""
    tail = " and not a folder" if folders else ""
    return f"unknown model {name!r}: not one of {', '.join(model_names())}{tail}"


def check_model_name(name: str) -> str:
    """Return ``name`` if it is a registered name (no folders), else raise ModelError."""
    if name not in model_names():
        raise ModelError(unknown_model_message(name, folders=False))
    return name


_CACHE: "OrderedDict[str, PVModel]" = OrderedDict()
_CACHE_SIZE = 4
"""Loaded models kept (least recently used dropped first): a server or a notebook that
loads many model folders does not keep them all in memory."""


@runtime_checkable
class PVModel(Protocol):
    """What every PHEE model offers."""

    name: str

    def predict(self, texts: Sequence[str]) -> list[list[Event]]:
        """Events of each text, offsets into that text."""
        ...

    def save(self, path: str | Path) -> Any:
        """Write the model folder."""
        ...

    @classmethod
    def load(cls, path: str | Path) -> "PVModel":
        """Read a model folder."""
        ...


def model_id(model: Any) -> str:
    """The versioned id of a loaded PHEE model, the same form for every kind.

    The transformer's ``name`` is already its id (``clinex.pv.transformer.v2``); the
    CRF's ``name`` is its short name (``crf``) and its id is ``source``
    (``clinex.pv.crf.v1``, the provenance its events carry).

    Parameters
    ----------
    model : PVModel
        A model from :func:`load_model`.

    Returns
    -------
    str
        The id recorded by ``clinex batch pv`` manifests, the web API and every
        prediction's ``model``; a model loaded from a folder that is not a shipped
        one gets ``+<first 8 hex of the SHA-1 of its model.json>``
        (``clinex.pv.crf.v1+3fa2c9d1``).
    """
    name = str(getattr(model, "name", ""))
    if name.startswith("clinex.pv."):
        base = name
    else:
        source = getattr(model, "source", None)
        base = source if isinstance(source, str) and source else name
    return base + _fingerprint(model)


def _fingerprint(model: Any) -> str:
    """``+<8 hex>`` (SHA-1 of its ``model.json``) for a model loaded from a folder other
    than a shipped one, so that a retrained or re-gated model is not taken for the
    shipped one in outputs and batch manifests; ``""`` otherwise."""
    import hashlib

    folder = getattr(model, "folder_", None)
    if folder is None:
        return ""
    shipped = {d.resolve() for d in map(shipped_model_dir, REGISTRY) if d is not None}
    if Path(folder).resolve() in shipped:
        return ""
    try:
        digest = hashlib.sha1((Path(folder) / "model.json").read_bytes()).hexdigest()
    except OSError:
        return ""
    return "+" + digest[:8]


def clear_cache() -> None:
    """Forget every model :func:`load_model` has cached (e.g. after changing one in place,
    as ``clinex pv gate`` does), so that the next call reads its folder again."""
    _CACHE.clear()


def shipped_model_dir(kind: str) -> Path | None:
    """Folder of the model of ``kind`` shipped inside the package, or None."""
    entry = REGISTRY.get(kind)
    sub = entry.shipped if entry is not None else None
    if sub is None:
        return None
    root = resources.files("clinex.resources") / "models" / sub
    path = Path(str(root))
    return path if (path / "model.json").is_file() else None


def _import(kind: str, attr_index: int) -> Any:
    if kind not in REGISTRY:
        raise ModelError(f"unknown model kind {kind!r}; available: {', '.join(REGISTRY)}")
    entry = REGISTRY[kind]
    module_name = entry.module if attr_index == 1 else (entry.trainer_module or entry.module)
    attr = entry.model_class if attr_index == 1 else entry.trainer
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        raise ModelError(
            f"the {kind!r} model needs {exc.name!r}, which is not installed "
            f"(for the transformer and training: pip install 'clinex[train]')"
        ) from None
    try:
        return getattr(module, attr)
    except AttributeError:
        raise ModelError(f"{module_name} has no {attr}") from None


def _load_dir(folder: Path) -> PVModel:
    meta_path = folder / "model.json"
    if not meta_path.is_file():
        raise ModelError("not a model folder (no model.json)", path=folder)
    try:
        kind = json.loads(meta_path.read_text(encoding="utf-8")).get("kind")
    except (json.JSONDecodeError, UnicodeDecodeError, AttributeError):
        raise ModelError("model.json is not a JSON object", path=meta_path) from None
    if kind not in REGISTRY:
        raise ModelError(
            f"unknown model kind {kind!r}; available: {', '.join(REGISTRY)}", path=meta_path, field="kind"
        )
    cls = REGISTRY[kind].loader()
    model = cls.load(folder)
    model.folder_ = folder
    return model


def load_model(name_or_path: str | Path = "auto") -> PVModel:
    """Load a model by name (``auto``, ``crf``, ``transformer``) or folder path.

    Loaded models are cached per resolved folder, so repeated calls are cheap.

    Parameters
    ----------
    name_or_path : str or Path, default "auto"
        See the module docstring.

    Returns
    -------
    PVModel

    Raises
    ------
    ModelError
        If the name is unknown and no such folder exists, the named model is not
        installed, or the folder does not hold a model.
    """
    key = str(name_or_path)
    if key == AUTO:
        key = _resolve_auto()
    if key in REGISTRY:
        folder = shipped_model_dir(key)
        if folder is None and REGISTRY[key].shipped is None:  # a kind without a folder (llm: server settings)
            return REGISTRY[key].loader()()
        if folder is None:
            raise ModelError(
                f"no shipped {key!r} model in clinex/resources/models; train one with "
                "'clinex pv train' and pass its folder"
            )
    else:
        folder = Path(key)
        if not folder.is_dir():
            raise ModelError(unknown_model_message(key))
    cache_key = str(folder.resolve())
    if cache_key in _CACHE:
        _CACHE.move_to_end(cache_key)
        return _CACHE[cache_key]
    model = _CACHE[cache_key] = _load_dir(folder)
    while len(_CACHE) > _CACHE_SIZE:
        _CACHE.popitem(last=False)
    from clinex.pv.postprocess import warm_up

    warm_up(model)  # the scope pipeline and gazetteer load while the first batch runs
    return model


def _resolve_auto() -> str:
    """The kind ``auto`` names: the first of ONNX, transformer, CRF (then any other
    registered kind) whose shipped model is there and whose libraries import."""
    order = [k for k in _AUTO_ORDER if k in REGISTRY] + [k for k in REGISTRY if k not in _AUTO_ORDER]
    with_model = [k for k in order if shipped_model_dir(k) is not None]
    for kind in with_model[:-1]:
        try:
            REGISTRY[kind].loader()
        except ModelError:  # e.g. the neural extra is not installed: try the next kind
            continue
        return kind
    return with_model[-1] if with_model else (order[-1] if order else AUTO)


def train(
    kind: str,
    train: Sequence[SentenceEvents],
    dev: Sequence[SentenceEvents] | None,
    out: str | Path,
    **params: Any,
) -> PVModel:
    """Train a model of ``kind`` and save it to folder ``out``.

    Dispatches to :func:`clinex.pv.models.crf.train_crf` or
    :func:`clinex.pv.models.transformer.train_transformer` (imported lazily).

    Parameters
    ----------
    kind : str
        A key of :data:`REGISTRY`.
    train, dev : sequence of SentenceEvents
        Training and development sentences with gold events.
    out : str or Path
        Output folder.
    **params
        Passed to the kind's training function.

    Returns
    -------
    PVModel
        The trained model, loaded from ``out``.

    Raises
    ------
    ModelError
        If ``kind`` is unknown or its module is not available.
    """
    fn = _import(kind, 2)
    return fn(train, dev, Path(out), **params)
