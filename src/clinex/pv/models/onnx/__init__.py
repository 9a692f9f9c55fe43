"""The neural PHEE extractor without torch: the exported graph run by onnxruntime.

A model folder of kind ``onnx`` (written by
:func:`clinex.pv.models.transformer.export.export_onnx`, ``clinex pv export-onnx``)
holds ``model.onnx`` (the MiniLM encoder and every tag layer of a ``joint``
transformer extractor in one graph), ``tokenizer.json`` (read with the
``tokenizers`` library), the sentence gate (``gate.npz``) and ``model.json``.
:class:`OnnxExtractor` tokenizes, runs the graph in length-sorted batches and decodes
with the same code as the torch model (:class:`clinex.pv.models.decoding.TagDecodingMixin`:
Viterbi, trigger fallback, joint assignment, cue lexicon; the gate, the attribute scope
and the other steps after the model are the pipeline's, :mod:`clinex.pv.steps`), so the
two kinds give the same events from the same probabilities.

Nothing here imports torch or transformers (``tests/pv/test_pv_onnx.py`` checks it).

Threads
-------
onnxruntime's intra-op pool gets the package's one thread setting,
:func:`clinex.threads.intra_op_threads`: ``CLINEX_THREADS`` when set, else the cores this
process may run on, at most 4 (a larger default would oversubscribe machines where
several processes share the cores; ``clinex batch --workers N`` splits them). The inter-op pool
has 1 thread: the graph is one chain of layers with nothing to run in parallel.
Idle pool threads do not spin (``session.intra_op.allow_spinning = 0``), which
matters on shared cores.
"""

from __future__ import annotations

import importlib.util

# onnxruntime and tokenizers are base dependencies; failing at import (e.g. in an
# environment built without them) lets the model registry fall back to another kind.
for _dep in ("onnxruntime", "tokenizers"):
    if importlib.util.find_spec(_dep) is None:
        raise ModuleNotFoundError(f"No module named '{_dep}'", name=_dep)

from clinex.pv.models.onnx.model import ONNX_NAME, OnnxExtractor, session_threads  # noqa: E402

__all__ = ["OnnxExtractor", "ONNX_NAME", "session_threads"]
