""":class:`OnnxExtractor`: the exported transformer extractor run by onnxruntime.

See the package docstring (:mod:`clinex.pv.models.onnx`) for the folder layout and
the thread settings.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Self

from clinex.errors import ModelError
from clinex.pv.models.decoding import TagDecodingMixin
from clinex.pv.types import Event

__all__ = ["OnnxExtractor", "ONNX_NAME", "ONNX_FORMAT_VERSION", "OUTPUTS", "THREADS_ENV", "MAX_BATCH_TOKENS", "session_threads"]

#: Versioned id of the exported models (``model.json`` ``name``, ``Event.source``).
ONNX_NAME = "clinex.pv.onnx.v2"
#: Version of the folder layout (``model.json`` keys, graph inputs and outputs).
ONNX_FORMAT_VERSION = 1
#: Graph outputs in order: softmax probabilities of the trigger layer, then the event layers.
OUTPUTS = ("trigger", "main", "sub", "comb", "attr")
#: Environment variable overriding the intra-op thread count (see :func:`session_threads`).
THREADS_ENV = "CLINEX_THREADS"
#: Default intra-op threads: at most this many (the reference machine's 2 cores).
#: Most padded tokens (rows x width) per graph call (:meth:`OnnxExtractor._batches`); a
#: documented own choice: 60 PHEE dev sentences of the mean length (34.2 sub-words, with the
#: special tokens; longest 104) fit in one call,
#: while a call holding a 104-token sentence takes at most 19 rows.
MAX_BATCH_TOKENS = 2048

#: ``model.json`` ``params`` the decoding reads, with their defaults (those of
#: :class:`~clinex.pv.models.transformer.TransformerExtractor`).
_PARAMS: dict[str, Any] = {
    "variant": "joint",
    "max_length": 192,
    "predict_batch_size": 64,
    "decoder": "viterbi",
    "trigger_fallback": 0.0,
    "attributes": "model",
    "join_adjacent": "main,sub",
    "fallback_gate": "drug",
    "event_threshold": 0.0,
    "attribute_scope": True,
    "no_effect_min_prob": 0.0,
}


def session_threads(environ: dict[str, str] | None = None) -> int:
    """The intra-op thread count of the onnxruntime session: the package's one thread
    setting, :func:`clinex.threads.intra_op_threads` (``CLINEX_THREADS`` when set, else
    the process's cores, at most 4).

    Parameters
    ----------
    environ : dict, optional
        Environment to read (default ``os.environ``).

    Returns
    -------
    int

    Raises
    ------
    ModelError
        If ``CLINEX_THREADS`` is not a whole number >= 1.
    """
    from clinex.errors import InputError
    from clinex.threads import intra_op_threads

    try:
        return intra_op_threads(environ)
    except InputError:
        raw = (os.environ if environ is None else environ).get(THREADS_ENV, "")
        raise ModelError(f"{THREADS_ENV} must be a whole number >= 1; got {raw!r}", field=THREADS_ENV) from None


class OnnxExtractor(TagDecodingMixin):
    """PHEE event extractor running an exported ``joint`` transformer graph with onnxruntime.

    Build it with :meth:`load` (a folder from
    :func:`clinex.pv.models.transformer.export.export_onnx`); the parameters are the
    decoding parameters of the exported model (``model.json`` ``params``; the meaning
    of each is that of :class:`~clinex.pv.models.transformer.TransformerExtractor`).

    Parameters
    ----------
    params : dict
        Decoding parameters (keys of ``_PARAMS``; missing ones take its defaults).

    Attributes
    ----------
    session_ : onnxruntime.InferenceSession
    tokenizer_ : tokenizers.Tokenizer
    gate_ : SentenceGate or None
    attribute_lexicon_ : CueLexiconDetector or None
    threads_ : int
        Intra-op threads of the session (:func:`session_threads`).
    """

    name = ONNX_NAME

    def __init__(self, **params: Any) -> None:
        unknown = set(params) - set(_PARAMS)
        if unknown:
            raise ModelError(f"unknown parameter(s) for the onnx model: {', '.join(sorted(unknown))}", field="params")
        for key, default in _PARAMS.items():
            setattr(self, key, params.get(key, default))

    def get_params(self) -> dict[str, Any]:
        """The decoding parameters (JSON-serialisable)."""
        return {k: getattr(self, k) for k in _PARAMS}

    def _check_params(self) -> None:
        """Raise ModelError for a parameter the decoding cannot use."""
        if self.variant != "joint":
            raise ModelError(f"the onnx model runs the 'joint' variant only; got '{self.variant}'", field="variant")
        if self.decoder not in ("viterbi", "argmax"):
            raise ModelError(f"decoder must be 'viterbi' or 'argmax'; got '{self.decoder}'", field="decoder")
        if self.fallback_gate not in ("drug", "evidence", "always"):
            raise ModelError(f"fallback_gate must be drug, evidence or always; got '{self.fallback_gate}'")
        for key in ("max_length", "predict_batch_size"):
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ModelError(f"{key} must be an integer >= 1; got {value!r}", field=key)
        for key in ("event_threshold", "no_effect_min_prob"):
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 <= value <= 1.0:
                raise ModelError(f"{key} must be a number in [0, 1]; got {value!r}", field=key)
        self._lexicon_names()
        self._join_layers()

    # -- inputs -------------------------------------------------------------------------
    def _check_fitted(self) -> None:
        if not hasattr(self, "session_"):
            raise ModelError("OnnxExtractor is not loaded; use OnnxExtractor.load(folder)")

    def _max_tokens(self) -> int:
        """Tokens per window: ``max_length``, capped at the encoder's position embeddings."""
        limit = getattr(self, "max_positions_", None)
        return min(int(self.max_length), limit) if limit else int(self.max_length)

    def _tokenize(self, texts: Sequence[str]) -> list[dict[str, Any]]:
        """Sub-word ids and character offsets (special tokens included, offsets ``(0, 0)``)."""
        encs = self.tokenizer_.encode_batch(list(texts), add_special_tokens=True)
        return [{"input_ids": list(e.ids), "offsets": [tuple(o) for o in e.offsets]} for e in encs]

    def _word_offsets(self, text: str) -> list[tuple[int, int]]:
        """Character offsets of the sub-word tokens of ``text``, without special tokens."""
        return [tuple(o) for o in self._plain_tokenizer_.encode(text, add_special_tokens=False).offsets]

    # -- prediction ---------------------------------------------------------------------
    def _batches(self, toks: Sequence[dict[str, Any]]) -> list[list[int]]:
        """Indexes of ``toks`` in graph calls: sorted by length, at most ``predict_batch_size``
        rows and :data:`MAX_BATCH_TOKENS` padded tokens per call.

        Sorting keeps the padding small; the token budget splits a batch that mixes
        short and long texts, so that the short ones are not padded to the longest
        (attention cost grows with the square of the padded width).
        """
        order = sorted(range(len(toks)), key=lambda i: len(toks[i]["input_ids"]))
        batches: list[list[int]] = []
        current: list[int] = []
        for i in order:
            n = len(toks[i]["input_ids"])
            if current and (len(current) >= int(self.predict_batch_size) or (len(current) + 1) * n > MAX_BATCH_TOKENS):
                batches.append(current)
                current = []
            current.append(i)
        if current:
            batches.append(current)
        return batches

    def _predict(
        self, texts: list[str], toks: list[dict[str, Any]], depth: int = 0, probs: list[float] | None = None
    ) -> list[list[Event]]:
        """Run the graph on tokenized texts in length-sorted batches and decode each batch.

        ``depth`` is accepted for the shared interface and must be 0 (no cached hidden
        states here); ``probs`` receives each text's own event probability.
        """
        import numpy as np

        if depth:
            raise ModelError("the onnx model cannot start from cached hidden states (depth must be 0)")
        events: list[list[Event]] = [[] for _ in texts]
        for idx in self._batches(toks):
            width = max(len(toks[i]["input_ids"]) for i in idx)
            ids = np.full((len(idx), width), self.pad_id_, dtype=np.int64)
            mask = np.zeros((len(idx), width), dtype=np.int64)
            for r, i in enumerate(idx):
                n = len(toks[i]["input_ids"])
                ids[r, :n] = toks[i]["input_ids"]
                mask[r, :n] = 1
            out = dict(zip(OUTPUTS, self.session_.run(list(OUTPUTS), {"input_ids": ids, "attention_mask": mask})))

            def event_probs(rows: list[int], markers: list[list[int]], out: dict[str, Any] = out) -> dict[str, Any]:
                # joint variant: the event layers saw no trigger marker (export notes)
                return {n: out[n][rows] for n in OUTPUTS[1:]}

            self._decode_batch(texts, toks, idx, out["trigger"], event_probs, events, probs)
        return self._lexicon_attributes(texts, events)

    # -- the model folder ---------------------------------------------------------------
    @classmethod
    def load(cls, path: str | Path) -> Self:
        """Load an ``onnx`` model folder.

        Raises
        ------
        ModelError
            If ``model.json`` is missing, not JSON, not of kind ``onnx``, of another
            format version or other tag layers; if the graph or tokenizer is missing
            or unreadable; if ``CLINEX_THREADS`` is invalid.
        """
        import onnxruntime as ort
        from tokenizers import Tokenizer

        from clinex.pv.models.meta import read_tagger_meta

        path = Path(path)
        meta, meta_path = read_tagger_meta(path, "onnx", ONNX_FORMAT_VERSION)
        params = meta["params"]
        try:
            model = cls(**params)
            model._check_params()
        except ModelError as exc:
            raise ModelError(exc.message, path=meta_path, field="params") from None
        graph = meta.get("graph") or {}
        tok_meta = meta.get("tokenizer") or {}
        onnx_file = path / str(graph.get("file", "model.onnx"))
        tok_file = path / str(tok_meta.get("file", "tokenizer.json"))
        for f in (onnx_file, tok_file):
            if not f.is_file():
                raise ModelError("file named in model.json is missing", path=f)
        try:
            tokenizer = Tokenizer.from_file(str(tok_file))
        except Exception as exc:  # noqa: BLE001 - the tokenizers library raises plain Exception
            raise ModelError(f"cannot read the tokenizer: {str(exc)[:200]}", path=tok_file) from None
        tokenizer.no_padding()
        plain = Tokenizer.from_file(str(tok_file))
        plain.no_padding()
        plain.no_truncation()
        max_positions = tok_meta.get("max_positions")
        model.max_positions_ = int(max_positions) if isinstance(max_positions, int) and max_positions > 2 else None
        tokenizer.enable_truncation(model._max_tokens())
        model.tokenizer_, model._plain_tokenizer_ = tokenizer, plain
        model.pad_id_ = int(tok_meta.get("pad_id", 0))
        model.threads_ = session_threads()
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = model.threads_
        opts.inter_op_num_threads = 1
        opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        # idle pool threads sleep instead of spinning: on a machine whose cores are
        # shared (the reference machine runs several processes on 2 cores) spinning
        # threads take the cores the working ones need
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        try:
            model.session_ = ort.InferenceSession(str(onnx_file), sess_options=opts, providers=["CPUExecutionProvider"])
        except Exception as exc:  # noqa: BLE001 - onnxruntime raises its own Fail / InvalidGraph types
            raise ModelError(f"cannot load the ONNX graph: {str(exc).splitlines()[0][:300]}", path=onnx_file) from None
        names = [o.name for o in model.session_.get_outputs()]
        if names != list(OUTPUTS):
            raise ModelError(f"graph outputs are {names}, expected {list(OUTPUTS)}", path=onnx_file)
        model.gate_ = None
        if meta.get("gate") is not None:
            from clinex.pv.gate import SentenceGate

            model.gate_ = SentenceGate.load(path, meta["gate"])
        model.attribute_lexicon_ = None
        if model._lexicon_names():
            from clinex.pv.attributes import CUE_LABELS, CueLexiconDetector

            lexicon = meta.get("attribute_lexicon")
            if not isinstance(lexicon, dict) or any(v not in CUE_LABELS for v in lexicon.values()):
                raise ModelError(
                    "attributes use the cue lexicon but attribute_lexicon is missing or has unknown labels",
                    path=meta_path, field="attribute_lexicon",
                )
            model.attribute_lexicon_ = CueLexiconDetector()
            model.attribute_lexicon_.lexicon_ = dict(lexicon)
        model.calibration_ = meta.get("calibration")
        model.meta_ = meta
        model.source_dir_ = path
        return model

    def save(self, path: str | Path) -> None:
        """Write the model folder (graph, tokenizer, gate, ``model.json`` with the current parameters).

        Used by ``clinex pv gate`` to store a new gate and ``event_threshold``.

        Raises
        ------
        ModelError
            If the model is not loaded.
        """
        self._check_fitted()
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        meta = json.loads(json.dumps(self.meta_))
        src = Path(self.source_dir_)
        for name in (meta["graph"].get("file", "model.onnx"), meta["tokenizer"].get("file", "tokenizer.json")):
            if (src / name).resolve() != (path / name).resolve():
                shutil.copyfile(src / name, path / name)
        meta["params"] = self.get_params()
        meta["gate"] = self.gate_.save(path) if getattr(self, "gate_", None) is not None else None
        meta["calibration"] = getattr(self, "calibration_", None)
        from clinex.io.atomic import write_atomic

        write_atomic(path / "model.json", json.dumps(meta, indent=2) + "\n", force=True)
