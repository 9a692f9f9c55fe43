"""Export a trained transformer extractor to an ``onnx`` model folder (no torch at run time).

:func:`export_onnx` writes the encoder and every tag layer as ONE ONNX graph
(``model.onnx``) and copies what the decoding needs next to it: the tokenizer
(``tokenizer.json``), the sentence gate (``gate.npz``), the cue lexicon and the
decoding parameters (``model.json``, ``kind: "onnx"``). The folder is read by
:class:`clinex.pv.models.onnx.OnnxExtractor`, which runs it with ``onnxruntime``
and the ``tokenizers`` library and decodes with the same code as the torch model
(:mod:`clinex.pv.models.tagging`).

The graph
---------
Inputs ``input_ids`` and ``attention_mask`` (int64, ``[batch, tokens]``, both axes
dynamic); outputs the softmax probabilities of each tag layer, ``trigger``,
``main``, ``sub``, ``comb`` and ``attr`` (float32, ``[batch, tokens, n_tags]``).
Only the ``joint`` variant can be one graph: its event layers see no trigger
(``marker`` all zero), so they are computed in the same pass. ``pairwise`` and
``conditioned`` need a second, trigger-conditioned pass per predicted trigger and
are refused (:class:`~clinex.errors.ModelError`).

Quantisation
------------
``quantize="int8"`` applies ``onnxruntime.quantization.quantize_dynamic`` (int8
weights of the MatMul / Gemm nodes, activations quantised per batch at run time).
Whether int8 is good enough is decided by the dev figures, not here: the shipped
folder's ``MODEL_CARD.md`` records the comparison (issue 12: every dev figure
within 0.003 of the torch model).

This module needs torch and onnx (the ``train`` extra).
"""

from __future__ import annotations

import json
import shutil
import tempfile
import warnings
from pathlib import Path
from typing import Any

from clinex.errors import ModelError
from clinex.pv.models.onnx.model import ONNX_FORMAT_VERSION, ONNX_NAME, OUTPUTS

__all__ = ["export_onnx", "train_onnx"]

#: ONNX opset of the export (17: LayerNormalization is one node; onnxruntime >= 1.14 runs it).
_OPSET = 17
#: Parameters the ONNX model's decoding reads (the rest only matter to training).
_DECODE_PARAMS = (
    "variant", "max_length", "predict_batch_size", "decoder", "trigger_fallback", "attributes",
    "join_adjacent", "fallback_gate", "event_threshold", "attribute_scope", "no_effect_min_prob",
)


def _graph_module(model: Any) -> Any:
    """A torch module: ``(input_ids, attention_mask) -> softmax of every tag layer``."""
    import torch
    from torch import nn

    net = model.net_

    class _Graph(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.net = net

        def forward(self, input_ids: Any, attention_mask: Any) -> tuple[Any, ...]:
            h = self.net.encode(input_ids, attention_mask)
            marker = torch.zeros_like(attention_mask)
            trig = self.net.trigger_logits(h).softmax(-1)
            ev = self.net.event_logits(h, marker)
            return (trig, *(ev[name].softmax(-1) for name in OUTPUTS[1:]))

    return _Graph().eval()


def _fuse(src: Path, dst: Path, config: Any) -> None:
    """Write ``src`` with onnxruntime's BERT fusions to ``dst`` (see ``fuse`` of :func:`export_onnx`)."""
    from onnxruntime.transformers.optimizer import optimize_model

    opt = optimize_model(
        str(src), model_type="bert", num_heads=int(config.num_attention_heads),
        hidden_size=int(config.hidden_size), opt_level=0,
    )
    opt.save_model_to_file(str(dst))


def _store_half(src: Path, dst: Path, min_size: int = 1024) -> bool:
    """Write ``src`` to ``dst`` with exact-in-float16 float32 weights stored as float16.

    Each float32 initializer of at least ``min_size`` values whose float16 rounding
    gives back the same float32 values becomes a float16 initializer plus a
    ``Cast`` node (to float32) under the original name. Returns whether any was
    converted.
    """
    import numpy as np
    import onnx
    from onnx import helper, numpy_helper

    model = onnx.load(str(src))
    graph = model.graph
    casts = []
    keep = []
    for init in graph.initializer:
        if init.data_type != onnx.TensorProto.FLOAT:
            keep.append(init)
            continue
        arr = numpy_helper.to_array(init)
        half = arr.astype(np.float16)
        if arr.size < min_size or not np.array_equal(half.astype(np.float32), arr):
            keep.append(init)
            continue
        keep.append(numpy_helper.from_array(half, init.name + "__fp16"))
        casts.append(helper.make_node("Cast", [init.name + "__fp16"], [init.name], to=onnx.TensorProto.FLOAT))
    del graph.initializer[:]
    graph.initializer.extend(keep)
    nodes = list(graph.node)
    del graph.node[:]
    graph.node.extend(casts + nodes)
    onnx.save(model, str(dst))
    return bool(casts)


def export_onnx(
    model_dir: str | Path,
    out: str | Path,
    *,
    quantize: str | None = None,
    fuse: bool = True,
    half_storage: bool = True,
    opset: int = _OPSET,
) -> Path:
    """Export the transformer model folder ``model_dir`` to the ``onnx`` folder ``out``.

    Parameters
    ----------
    model_dir : str or Path
        A folder written by :meth:`TransformerExtractor.save` (``kind: "transformer"``).
    out : str or Path
        Output folder (created; files of the same names are replaced).
    quantize : {None, "int8"}, default None
        None: float32 graph. ``"int8"``: dynamic int8 quantisation of the weights
        (``onnxruntime.quantization.quantize_dynamic``, ``QInt8`` weights).
    fuse : bool, default True
        Fuse attention, skip-LayerNorm and bias-GELU into onnxruntime's contrib
        operators (``onnxruntime.transformers.optimizer``, ``model_type="bert"``): the
        same arithmetic in fewer nodes; on the PHEE dev split it gave the same events
        on all 961 sentences and about 1.4x faster encoding on 2 cores.
    half_storage : bool, default True
        Store float32 weights that are exactly representable in float16 as float16
        initializers followed by a ``Cast`` to float32 (folded into float32 constants
        when onnxruntime loads the graph, so the arithmetic stays float32). Lossless
        for the shipped checkpoint, whose encoder is saved in float16
        (:meth:`TransformerExtractor.save`); it halves the file (92 MB -> 46 MB for
        MiniLM-L6). Weights that are not exact stay float32. Ignored with ``quantize``.
    opset : int, default 17
        ONNX opset of the export.

    Returns
    -------
    Path
        ``out``.

    Raises
    ------
    ModelError
        If the folder is not a transformer model, its variant is not ``joint``, the
        tokenizer has no ``tokenizer.json``, ``quantize`` is unknown, or torch / onnx /
        onnxruntime are missing.
    """
    if quantize not in (None, "int8"):
        raise ModelError(f"quantize must be None or 'int8'; got {quantize!r}", field="quantize")
    try:
        import torch  # noqa: F401  (checked here: every step below needs it)
    except ModuleNotFoundError:
        raise ModelError("exporting needs torch; install it with: pip install 'clinex[train]'") from None
    model_dir, out = Path(model_dir), Path(out)
    model, tok_file, meta = _load_joint(model_dir)
    model.net_.to("cpu").float().eval()
    enc = model.net_.encoder
    if hasattr(enc, "set_attn_implementation"):
        enc.set_attn_implementation("eager")  # plain MatMul/Softmax attention in the graph
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        fp32 = Path(tmp) / "model.fp32.onnx"
        _trace(model, fp32, opset)
        if fuse:
            fused = Path(tmp) / "model.fused.onnx"
            _fuse(fp32, fused, enc.config)
            fp32 = fused
        stored = _store_graph(fp32, out / "model.onnx", quantize, half_storage)
    shutil.copyfile(tok_file, out / "tokenizer.json")
    gate = meta.get("gate")
    if gate is not None:
        shutil.copyfile(model_dir / gate["file"], out / gate["file"])
    graph = {
        "file": "model.onnx",
        "inputs": ["input_ids", "attention_mask"],
        "outputs": list(OUTPUTS),
        "quantization": quantize or "none",
        "weights_stored_as": stored,
        "fused": bool(fuse),
        "opset": opset,
    }
    from clinex.io.atomic import write_atomic

    write_atomic(out / "model.json", json.dumps(_onnx_meta(model, meta, graph), indent=2) + "\n", force=True)
    return out


def _load_joint(model_dir: Path) -> tuple[Any, Path, dict[str, Any]]:
    """The transformer model of ``model_dir``, its ``tokenizer.json`` and its ``model.json``.

    Raises
    ------
    ModelError
        The variant is not ``joint``, or the encoder folder has no ``tokenizer.json``.
    """
    from clinex.pv.models.transformer.model import TransformerExtractor

    model = TransformerExtractor.load(model_dir)
    if model.variant != "joint":
        raise ModelError(
            f"only the 'joint' variant exports to one ONNX graph; this model is '{model.variant}' "
            "(its event layers need a second, trigger-conditioned pass per trigger)",
            path=model_dir / "model.json",
            field="params.variant",
        )
    tok_file = model_dir / "encoder" / "tokenizer.json"
    if not tok_file.is_file():
        raise ModelError("the encoder folder has no tokenizer.json (a fast tokenizer is needed)", path=tok_file)
    meta = json.loads((model_dir / "model.json").read_text(encoding="utf-8"))
    return model, tok_file, meta


def _trace(model: Any, dst: Path, opset: int) -> None:
    """Trace the float32 graph of ``model`` (:func:`_graph_module`) to the ONNX file ``dst``:
    both inputs and every output with dynamic batch and token axes."""
    import torch

    graph = _graph_module(model)
    ids = torch.tensor([[101, 1996, 5776, 2018, 1037, 23438, 1012, 102]] * 2, dtype=torch.long)
    mask = torch.ones_like(ids)
    mask[1, -2:] = 0
    axes = {"input_ids": {0: "batch", 1: "tokens"}, "attention_mask": {0: "batch", 1: "tokens"}}
    axes.update({name: {0: "batch", 1: "tokens"} for name in OUTPUTS})
    with torch.inference_mode(), warnings.catch_warnings():
        # The tracer notes that Python branches on tensor shapes become constants;
        # the one in transformers' mask code compares the mask's length with the
        # input's, equal for every input of this graph, and the advanced-indexing
        # note concerns negative indices, which the graph never uses.
        warnings.simplefilter("ignore", torch.jit.TracerWarning)
        warnings.filterwarnings("ignore", message="Exporting aten::index operator", category=UserWarning)
        torch.onnx.export(
            graph,
            (ids, mask),
            str(dst),
            input_names=["input_ids", "attention_mask"],
            output_names=list(OUTPUTS),
            dynamic_axes=axes,
            opset_version=opset,
            do_constant_folding=True,
            dynamo=False,
        )


def _store_graph(src: Path, target: Path, quantize: str | None, half_storage: bool) -> str:
    """Write the float32 graph ``src`` to ``target``: int8-quantised, with float16
    storage (:func:`_store_half`) or as it is; returns how its weights are stored
    (``"int8"``, ``"float16"`` or ``"float32"``)."""
    if quantize == "int8":
        from onnxruntime.quantization import QuantType, quantize_dynamic

        quantize_dynamic(
            str(src), str(target), weight_type=QuantType.QInt8,
            extra_options={"DefaultTensorType": 1},  # 1 = FLOAT: types of the fused contrib ops' outputs
        )
        return "int8"
    if half_storage:
        return "float16" if _store_half(src, target) else "float32"
    shutil.copyfile(src, target)
    return "float32"


def _onnx_meta(model: Any, meta: dict[str, Any], graph: dict[str, Any]) -> dict[str, Any]:
    """The ``model.json`` of the ONNX folder: the ``graph`` entry, the tokenizer's, and
    what the decoding reads of the transformer's ``meta`` (layers, decoding parameters,
    gate, calibration, cue lexicon) with where it came from."""
    params = meta.get("params", {})
    max_positions = getattr(model, "max_positions_", None)
    pad_id = int(model.tokenizer_.pad_token_id or 0)
    return {
        "kind": "onnx",
        "name": ONNX_NAME,
        "format_version": ONNX_FORMAT_VERSION,
        "graph": graph,
        "tokenizer": {"file": "tokenizer.json", "pad_id": pad_id, "max_positions": max_positions},
        "layers": meta["layers"],
        "params": {k: params[k] for k in _DECODE_PARAMS if k in params},
        "gate": meta.get("gate"),
        "calibration": meta.get("calibration"),
        "attribute_lexicon": meta.get("attribute_lexicon"),
        "exported_from": {
            "name": meta.get("name"),
            "encoder": params.get("encoder"),
            "best_epoch": meta.get("best_epoch"),
            "train_minutes": meta.get("train_minutes"),
        },
    }


def train_onnx(
    train: Any,
    dev: Any,
    out: str | Path,
    *,
    quantize: str | None = "int8",
    **params: Any,
) -> Any:
    """Train a ``joint`` transformer extractor and export it: the ``onnx`` kind's trainer.

    The torch model is written to ``out/transformer`` (kept so that it can be
    re-exported or scored with torch), then :func:`export_onnx` writes the ONNX
    folder to ``out``.

    Parameters
    ----------
    train, dev : list of SentenceEvents
        As in :func:`~clinex.pv.models.transformer.build.train_transformer`.
    out : str or Path
        The ONNX model folder to write.
    quantize : {None, "int8"}, default "int8"
        See :func:`export_onnx` (the shipped model's choice; its card gives the dev figures).
    **params
        Passed to :func:`~clinex.pv.models.transformer.build.train_transformer`;
        ``variant`` must be ``joint`` (the default here).

    Returns
    -------
    OnnxExtractor
        The exported model, loaded from ``out``.

    Raises
    ------
    ModelError
        If ``variant`` is not ``joint``, or as :func:`export_onnx`.
    """
    from clinex.pv.models.onnx import OnnxExtractor
    from clinex.pv.models.transformer.build import train_transformer

    params.setdefault("variant", "joint")
    if params["variant"] != "joint":
        raise ModelError(f"the onnx kind trains the 'joint' variant only; got '{params['variant']}'", field="variant")
    out = Path(out)
    train_transformer(list(train), list(dev or []), out / "transformer", **params)
    export_onnx(out / "transformer", out, quantize=quantize)
    return OnnxExtractor.load(out)
