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

:data:`REGISTRY` is a :class:`clinex.registry.Registry`, the one registry type of every
task (lookup by name or folder, ``auto``, caching, the known-name check).

Every model follows the :class:`PVModel` protocol: ``name``, ``predict(texts)``,
``save(path)`` and the class method ``load(path)``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from clinex.errors import ModelError
from clinex.pv.types import Event, SentenceEvents
from clinex.registry import AUTO, ModelKind, Registry

__all__ = [
    "PVModel", "ModelKind", "REGISTRY", "AUTO", "model_names", "check_model_name", "unknown_model_message",
    "clear_cache", "load_model", "model_id", "train", "shipped_model_dir",
]


def _kind_of(folder: Path) -> str:
    """The ``kind`` a model folder's ``model.json`` records.

    Raises
    ------
    ModelError
        No ``model.json``, not a JSON object, or a kind that is not registered.
    """
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
    return str(kind)


def _kind(name: str, cls: str, version: str, description: str, **more: Any) -> ModelKind:
    """A PHEE kind: its class in ``clinex.pv.models.<name>``, no factory (shipped folder or class)."""
    missing = (f"no shipped {name!r} model in clinex/resources/models; train one with "
               "'clinex pv train' and pass its folder")
    return ModelKind(name, None, version, description, module=f"clinex.pv.models.{name}", model_class=cls,
                     missing=missing, **more)


REGISTRY: Registry = Registry("pv", [
    _kind("crf", "CRFModel", "clinex.pv.crf.v1", "two linear-chain CRFs over word tokens (python-crfsuite)",
          shipped="pv_crf", trainer="train_crf", trainable=True),
    _kind("transformer", "TransformerExtractor", "clinex.pv.transformer.v2",
          "fine-tuned encoder tagger (needs clinex[train])", shipped="pv_transformer",
          trainer="train_transformer", trainable=True),
    _kind("onnx", "OnnxExtractor", "clinex.pv.onnx.v2",
          "the transformer exported to ONNX, run by onnxruntime without torch (the default)", shipped="pv_onnx",
          trainer="train_onnx", trainer_module="clinex.pv.models.transformer.export"),
    _kind("llm", "LLMExtractor", "clinex.pv.llm.v1",
          "an LLM on an OpenAI-compatible server (CLINEX_LLM_* / --llm-*; docs/llm.md); never auto",
          trainer="train_llm", cache=False),
], auto=("onnx", "transformer", "crf"), paths="folder", auto_first=True, kind_of=_kind_of,
   install_hint=" (for the transformer and training: pip install 'clinex[train]')", keep_folder=True)
"""The one list of PHEE model kinds (a :class:`clinex.registry.Registry`): kind name ->
:class:`~clinex.registry.ModelKind`. Adding a kind here makes the CLI, the web API and
``clinex batch pv`` accept it. ``auto`` picks the first installed of ONNX, transformer,
CRF: the ONNX model gives the transformer's events (``tests/pv/test_pv_onnx.py``) without
torch."""


def model_names() -> tuple[str, ...]:
    """Every model name accepted besides a folder: ``auto`` and the registry's kinds."""
    return REGISTRY.names()


def unknown_model_message(name: str, *, folders: bool = True) -> str:
    """The one message for a model name no surface knows (CLI, web, batch, Python API)."""
    return REGISTRY.unknown_message(name, paths=folders)


def check_model_name(name: str) -> str:
    """Return ``name`` if it is a registered name (no folders), else raise ModelError."""
    return REGISTRY.check_name(name)


@runtime_checkable
class PVModel(Protocol):
    """What every PHEE model offers.

    Attributes
    ----------
    name : str
        The kind's name or versioned id (:func:`model_id`).
    reads_whole_records : bool
        True for a kind that reads a record whole (``llm``): the pipeline
        (:func:`clinex.pv.pipeline.extract_records`) then calls :meth:`predict_records`
        on the records; False for a kind that tags sentences, whose steps the pipeline
        runs itself (:class:`clinex.pv.steps.SentenceModel`: ``predict_ungated``, then
        decode, scope, gate and the effect rule).
    """

    name: str
    reads_whole_records: bool

    def predict(self, texts: Sequence[str]) -> list[list[Event]]:
        """Events of each text, offsets into that text."""
        ...

    def predict_records(self, texts: Sequence[str], ids: Sequence[str] | None = None) -> list[Any]:
        """Events of each record (a list of Event), or the error of a record that failed."""
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
    REGISTRY.clear_cache()


def shipped_model_dir(kind: str) -> Path | None:
    """Folder of the model of ``kind`` shipped inside the package, or None."""
    return REGISTRY.shipped_dir(kind)


def _trainer(kind: str) -> Any:
    """The training function of ``kind`` (imported now)."""
    if kind not in REGISTRY:
        raise ModelError(f"unknown model kind {kind!r}; available: {', '.join(REGISTRY)}")
    return REGISTRY[kind].import_trainer(REGISTRY.install_hint)


def load_model(name_or_path: str | Path = "auto") -> PVModel:
    """Load a model by name (``auto``, ``crf``, ``transformer``, ``onnx``, ``llm``) or folder path.

    Loaded models are cached by :data:`REGISTRY` (per resolved folder), so repeated calls
    are cheap. A lookup starts no thread and loads nothing else: the scope pipeline and
    the gazetteer load at their first use (or up front with :func:`clinex.pv.steps.prepare`).

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
    return REGISTRY.load(name_or_path)


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
    fn = _trainer(kind)
    return fn(train, dev, Path(out), **params)
