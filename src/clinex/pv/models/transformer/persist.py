"""The transformer extractor's model folder: ``model.json``, ``encoder/``, ``heads.safetensors``.

:class:`PersistenceMixin` gives :class:`~clinex.pv.models.transformer.TransformerExtractor`
:meth:`~PersistenceMixin.save` and :meth:`~PersistenceMixin.load`. The encoder is
stored in Hugging Face layout with float16 weights; ``model.json`` records the kind,
:data:`~clinex.pv.models.tagging.FORMAT_VERSION`, the tag layers and the
parameters, and loading refuses a folder whose layers differ from this code's.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Self

from clinex.errors import ModelError
from clinex.io.modes import apply_default_modes
from clinex.pv.attributes import CUE_LABELS, CueLexiconDetector
from clinex.pv.models.tagging import FORMAT_VERSION, LAYERS, MODEL_NAME
from clinex.pv.models.transformer.network import build_net

__all__ = ["PersistenceMixin"]


class PersistenceMixin:
    """Saving and loading of :class:`~clinex.pv.models.transformer.TransformerExtractor`."""

    def _load_heads(self, heads_path: Path) -> None:
        """Load the tag layers' weights (``heads.safetensors``) into ``net_``.

        Raises
        ------
        ModelError
            If the file is missing, damaged or made for other tag layers.
        """
        from safetensors.torch import load_file

        if not heads_path.is_file():
            raise ModelError("no such heads.safetensors", path=heads_path)
        try:
            heads = load_file(str(heads_path))
            missing = self.net_.load_state_dict(heads, strict=False)
        except Exception as exc:  # noqa: BLE001 - SafetensorError, size-mismatch RuntimeError, ...
            raise ModelError(
                f"cannot load the tag layers: {type(exc).__name__}: {str(exc).splitlines()[0][:300]}", path=heads_path
            ) from None
        if missing.unexpected_keys or any(not k.startswith("encoder.") for k in missing.missing_keys):
            raise ModelError("heads.safetensors does not match the tag layers", path=heads_path)

    def save(self, path: str | Path) -> None:
        """Write the model directory (``model.json``, ``encoder/``, ``heads.safetensors``).

        The encoder weights are stored as float16 (half the size; predictions are
        computed in float32 after loading).

        Raises
        ------
        ModelError
            If the model is not fitted.
        """
        import torch
        from safetensors.torch import save_file
        from transformers.utils import logging as hf_logging

        self._check_fitted()
        hf_logging.disable_progress_bar()
        path = Path(path)
        (path / "encoder").mkdir(parents=True, exist_ok=True)
        enc = copy.deepcopy(self.net_.encoder).to("cpu").to(torch.float16)
        enc.save_pretrained(str(path / "encoder"), safe_serialization=True)
        self.tokenizer_.save_pretrained(str(path / "encoder"))
        heads = {
            k: v.detach().to("cpu").float().contiguous()
            for k, v in self.net_.state_dict().items()
            if not k.startswith("encoder.")
        }
        save_file(heads, str(path / "heads.safetensors"))
        meta = {
            "kind": "transformer",
            "name": MODEL_NAME,
            "format_version": FORMAT_VERSION,
            "layers": {k: list(v) for k, v in LAYERS.items()},
            "params": self.get_params(),
            "best_epoch": getattr(self, "best_epoch_", None),
            "history": getattr(self, "history_", []),
            "train_minutes": getattr(self, "train_minutes_", None),
            "gate": self.gate_.save(path) if getattr(self, "gate_", None) is not None else None,
            "calibration": getattr(self, "calibration_", None),
            "attribute_lexicon": (
                dict(sorted(self.attribute_lexicon_.lexicon_.items()))
                if getattr(self, "attribute_lexicon_", None) is not None
                else None
            ),
        }
        from clinex.io.atomic import write_atomic

        write_atomic(path / "model.json", json.dumps(meta, indent=2) + "\n", force=True)
        apply_default_modes(path)  # safetensors writes 0600 files

    @classmethod
    def load(cls, path: str | Path) -> Self:
        """Load a model directory written by :meth:`save`.

        Raises
        ------
        ModelError
            If ``model.json`` is missing, not of kind ``transformer``, from another
            format version, or its tag layers differ from this code's; or torch,
            transformers or safetensors is not installed.
        """
        try:
            import torch
            from safetensors.torch import load_file  # noqa: F401 - checked here, used by _load_heads
        except ModuleNotFoundError as exc:
            raise ModelError(
                f"the transformer model needs '{exc.name}'; install it with: pip install 'clinex[train]'",
                path=path,
            ) from None

        from clinex.pv.models.encoders import load_encoder, load_tokenizer
        from clinex.pv.models.meta import read_tagger_meta

        path = Path(path)
        meta, meta_path = read_tagger_meta(path, "transformer", FORMAT_VERSION)
        params = meta.get("params")
        if not isinstance(params, dict) or not isinstance(params.get("encoder"), str):
            raise ModelError(
                "params must be an object with the training parameters, including 'encoder'",
                path=meta_path,
                field="params",
            )
        params = dict(params)
        params.setdefault("attributes", "model")  # saved before the parameter existed
        encoder = params.pop("encoder")
        try:
            model = cls(encoder, **params)
            model._check_params()
        except TypeError as exc:
            raise ModelError(f"unknown parameter in params: {exc}", path=meta_path, field="params") from None
        except ModelError as exc:
            raise ModelError(exc.message, path=meta_path, field="params") from None
        if not (path / "encoder").is_dir():
            raise ModelError("the model folder has no encoder/ folder (weights and tokenizer)", path=path)
        if model._lexicon_names():
            lexicon = meta.get("attribute_lexicon")
            if not isinstance(lexicon, dict) or any(v not in CUE_LABELS for v in lexicon.values()):
                raise ModelError(
                    "attributes use the cue lexicon but attribute_lexicon is missing or has unknown labels",
                    path=meta_path,
                    field="attribute_lexicon",
                )
            model.attribute_lexicon_ = CueLexiconDetector()
            model.attribute_lexicon_.lexicon_ = dict(lexicon)
        model.tokenizer_ = load_tokenizer(path / "encoder")
        enc = load_encoder(path / "encoder")
        model.net_ = build_net(enc, float(model.dropout))
        heads_path = path / "heads.safetensors"
        if not heads_path.is_file():
            raise ModelError("no heads.safetensors (the tag layers' weights) in the model folder", path=path)
        model._load_heads(heads_path)
        model._check_max_length(enc)
        model.net_.to(model._torch_device()).eval()
        model.encoder_config_ = enc.config.to_dict()
        model.gate_ = None
        if meta.get("gate") is not None:
            from clinex.pv.gate import SentenceGate

            model.gate_ = SentenceGate.load(path, meta["gate"])
        model.calibration_ = meta.get("calibration")
        model.history_ = meta.get("history", [])
        model.best_epoch_ = meta.get("best_epoch")
        model.train_minutes_ = meta.get("train_minutes")
        if torch.cuda.is_available() and model.device == "auto":
            model.net_.to("cuda")
        return model

