"""Reading a neural model folder's ``model.json``: the checks both neural kinds share."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from clinex.errors import ModelError
from clinex.pv.models.tagging import LAYERS

__all__ = ["read_tagger_meta"]


def read_tagger_meta(folder: str | Path, kind: str, format_version: int) -> tuple[dict[str, Any], Path]:
    """``model.json`` of a tagger folder (``transformer`` or ``onnx``), checked.

    Parameters
    ----------
    folder : str or Path
        The model folder.
    kind : str
        The ``kind`` the file must name.
    format_version : int
        The ``format_version`` this clinex version reads.

    Returns
    -------
    (dict, Path)
        The parsed object and the path of ``model.json`` (for later error messages).

    Raises
    ------
    ModelError
        No ``model.json``; not JSON (with its line); not an object of ``kind``; another
        format version; tag layers other than :data:`clinex.pv.models.tagging.LAYERS`;
        ``params`` not an object. Each names ``model.json`` and the field.
    """
    path = Path(folder)
    meta_path = path / "model.json"
    if not meta_path.is_file():
        raise ModelError("no model.json in the model directory", path=path)
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ModelError(f"model.json is not JSON: {exc.msg}", path=meta_path, line=exc.lineno) from None
    if not isinstance(meta, dict) or meta.get("kind") != kind:
        found = meta.get("kind") if isinstance(meta, dict) else None
        raise ModelError(f"kind is '{found}', not '{kind}'", path=meta_path, field="kind")
    if meta.get("format_version") != format_version:
        raise ModelError(
            f"format version {meta.get('format_version')} is not {format_version}",
            path=meta_path, field="format_version",
        )
    if meta.get("layers") != {k: list(v) for k, v in LAYERS.items()}:
        raise ModelError("tag layers differ from this clinex version", path=meta_path, field="layers")
    if not isinstance(meta.get("params"), dict):
        raise ModelError("params must be an object", path=meta_path, field="params")
    return meta, meta_path
