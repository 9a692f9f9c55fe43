"""The tag scheme, kept under its old name: it lives in :mod:`clinex.pv.models.tagging`
(torch-free, shared with the ONNX model)."""

from __future__ import annotations

from clinex.pv.models.tagging import (
    EVENT_LAYERS,
    FORMAT_VERSION,
    IGNORE,
    LAYERS,
    MODEL_NAME,
    decode_tags,
    encode_tags,
    event_layer_spans,
    n_tags,
    viterbi_tags,
)

__all__ = [
    "MODEL_NAME",
    "FORMAT_VERSION",
    "LAYERS",
    "EVENT_LAYERS",
    "IGNORE",
    "n_tags",
    "encode_tags",
    "decode_tags",
    "viterbi_tags",
    "event_layer_spans",
]
