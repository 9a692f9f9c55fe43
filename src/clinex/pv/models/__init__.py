"""Registry of PHEE event-extraction models.

A saved model is a folder with ``model.json`` (``{"kind": "crf" | "transformer",
"version": ..., ...}``) and the files its kind needs. :func:`load_model` resolves a
name or a folder; :func:`train` dispatches to the kind's training function.

Names
-----
``auto``
    the best installed model: the shipped transformer
    (``clinex/resources/models/pv_transformer``) when present and its libraries
    (``clinex[neural]``: torch, transformers) are installed, else the shipped CRF.
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
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from clinex.errors import ModelError
from clinex.pv.types import Event, SentenceEvents

__all__ = ["PVModel", "KINDS", "NAMES", "clear_cache", "load_model", "model_id", "train", "shipped_model_dir"]

KINDS = {
    "crf": ("clinex.pv.models.crf", "CRFModel", "train_crf"),
    "transformer": ("clinex.pv.models.transformer", "TransformerExtractor", "train_transformer"),
}
"""kind -> (module, model class, training function); modules import lazily."""

NAMES = ("auto", "crf", "transformer")
_SHIPPED = {"crf": "pv_crf", "transformer": "pv_transformer"}
_CACHE: dict[str, "PVModel"] = {}


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

    The transformer's ``name`` is already its id (``clinex.pv.transformer.v1``); the
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
    shipped = {d.resolve() for d in map(shipped_model_dir, _SHIPPED) if d is not None}
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
    sub = _SHIPPED.get(kind)
    if sub is None:
        return None
    root = resources.files("clinex.resources") / "models" / sub
    path = Path(str(root))
    return path if (path / "model.json").is_file() else None


def _import(kind: str, attr_index: int) -> Any:
    if kind not in KINDS:
        raise ModelError(f"unknown model kind {kind!r}; available: {', '.join(KINDS)}")
    module_name = KINDS[kind][0]
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        raise ModelError(
            f"the {kind!r} model needs {exc.name!r}, which is not installed "
            f"(for the transformer: pip install 'clinex[neural]')"
        ) from None
    try:
        return getattr(module, KINDS[kind][attr_index])
    except AttributeError:
        raise ModelError(f"{module_name} has no {KINDS[kind][attr_index]}") from None


def _load_dir(folder: Path) -> PVModel:
    meta_path = folder / "model.json"
    if not meta_path.is_file():
        raise ModelError("not a model folder (no model.json)", path=folder)
    try:
        kind = json.loads(meta_path.read_text(encoding="utf-8")).get("kind")
    except (json.JSONDecodeError, UnicodeDecodeError, AttributeError):
        raise ModelError("model.json is not a JSON object", path=meta_path) from None
    if kind not in KINDS:
        raise ModelError(
            f"unknown model kind {kind!r}; available: {', '.join(KINDS)}", path=meta_path, field="kind"
        )
    cls = _import(kind, 1)
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
    if key == "auto" and shipped_model_dir("transformer") is not None:
        try:
            _import("transformer", 1)
        except ModelError:  # the neural extra is not installed: use the CRF
            key = "crf"
    if key in ("auto", "crf", "transformer"):
        kinds = ["transformer", "crf"] if key == "auto" else [key]
        folder = next((d for d in map(shipped_model_dir, kinds) if d is not None), None)
        if folder is None:
            raise ModelError(
                f"no shipped {key!r} model in clinex/resources/models; train one with "
                "'clinex pv train' and pass its folder"
            )
    else:
        folder = Path(key)
        if not folder.is_dir():
            raise ModelError(
                f"unknown model {key!r}: not one of {', '.join(NAMES)} and not a folder"
            )
    cache_key = str(folder.resolve())
    if cache_key not in _CACHE:
        _CACHE[cache_key] = _load_dir(folder)
    return _CACHE[cache_key]


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
    kind : {"crf", "transformer"}
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
