"""Model folders of the CRF (:class:`clinex.pv.models.crf.CRFModel`): ``save`` and ``load``.

A saved model is a folder::

    model.json       {"kind": "crf", "version": 1, "params": {...}, "labels": {...}, ...}
    <layer>.crfsuite one CRFsuite model per layer of the layout (:data:`_LAYOUTS`)

plus the sentence gate's files when the model has one (:mod:`clinex.pv.gate`).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from clinex.errors import ModelError

__all__ = ["FORMAT_VERSION", "CRFPersistence"]

FORMAT_VERSION = 1
_LAYOUTS = {
    "joint": ("args", "attr"),
    "split": ("main", "sub", "attr"),
    "hybrid": ("args", "sub", "attr"),
    "full": ("args", "main", "sub", "attr"),
}


class CRFPersistence:
    """``save`` and ``load`` of :class:`~clinex.pv.models.crf.CRFModel` (its folder format)."""

    def save(self, path: str | Path) -> Path:
        """Write ``model.json`` and the CRFsuite files into folder ``path``.

        Raises
        ------
        ModelError
            If the model is not fitted.
        """
        self._check_fitted()
        out = Path(path)
        out.mkdir(parents=True, exist_ok=True)
        for layer in self.layers:
            src = self.model_dir_ / f"{layer}.crfsuite"
            if src.resolve() != (out / src.name).resolve():
                shutil.copyfile(src, out / src.name)
        meta = {
            "kind": "crf",
            "version": FORMAT_VERSION,
            "name": self.name,
            "params": self.get_params(),
            "labels": self.labels_,
            "n_train": self.n_train_,
            "gate": self.gate_.save(out) if getattr(self, "gate_", None) is not None else None,
            "calibration": getattr(self, "calibration_", None),
            "files": [f"{layer}.crfsuite" for layer in self.layers],
        }
        from clinex.io.atomic import write_atomic

        write_atomic(out / "model.json", json.dumps(meta, indent=2) + "\n", force=True)
        return out

    @classmethod
    def load(cls, path: str | Path) -> Any:
        """Load a model folder written by :meth:`save`.

        Raises
        ------
        ModelError
            If ``model.json`` or a CRFsuite file is missing, or the folder holds
            another kind of model or an unknown format version.
        """
        folder = Path(path)
        meta_path = folder / "model.json"
        if not meta_path.is_file():
            raise ModelError("no model.json in the model folder", path=folder)
        try:
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ModelError(f"model.json is not valid JSON ({exc})", path=meta_path) from None
        if meta.get("kind") != "crf":
            raise ModelError(f"expected a 'crf' model, found {meta.get('kind')!r}", path=meta_path, field="kind")
        if meta.get("version") != FORMAT_VERSION:
            raise ModelError(
                f"model format version {meta.get('version')!r} is not supported (expected {FORMAT_VERSION})",
                path=meta_path,
                field="version",
            )
        params = dict(meta.get("params", {}))
        params.setdefault("layout", "joint")  # folders written before layouts existed
        params.setdefault("extras", [])
        params.setdefault("joint_iterations", params.get("max_iterations", 100))
        params.setdefault("main_extras", params["extras"])
        model = cls(name=meta.get("name", "crf"), **params)
        if model.layout not in _LAYOUTS:
            raise ModelError(f"unknown layout {model.layout!r}", path=meta_path, field="params.layout")
        for layer in model.layers:
            if not (folder / f"{layer}.crfsuite").is_file():
                raise ModelError(f"missing {layer}.crfsuite", path=folder)
        model.model_dir_ = folder
        model.labels_ = meta["labels"]
        model.n_train_ = meta.get("n_train", 0)
        model.gate_ = None
        if meta.get("gate") is not None:
            from clinex.pv.gate import SentenceGate

            model.gate_ = SentenceGate.load(folder, meta["gate"])
        model.calibration_ = meta.get("calibration")
        model._taggers = {}
        return model
