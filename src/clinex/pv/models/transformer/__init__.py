"""A trainable transformer extractor for PHEE events: trigger-conditioned tagging.

Architecture
------------
The PHEE paper (Sun et al., EMNLP 2022, §5) names three open problems for event
extraction on its data: nested main/sub-argument spans, discontinuous arguments and
several events per sentence. This model meets them as follows.

1. **Trigger layer.** The encoder reads the sentence; a linear layer tags sub-word
   tokens with ``B/I/C-<event type>`` (``Adverse_event``, ``Potential_therapeutic_event``).
2. **Event layers, once per predicted trigger** (several events per sentence). In the
   default ``variant="pairwise"`` every token's hidden state ``h_i`` is combined with
   the trigger's pooled state ``t`` and a learned embedding of the token's signed
   distance to the trigger, ``[h_i; t; h_i * t; d(i - trigger)]``, through one
   hidden layer; four independent tag layers then label the tokens *for that
   event*: main arguments (Subject, Treatment, Effect), sub-arguments
   (``Subject.Age`` ... ``Treatment.Drug`` ...), Combination sub-events (their trigger
   and drugs) and attribute cues (``Speculated``, ``Negated``, ``Severity.<value>``).
   Separate layers let a sub-argument sit inside its main argument (nesting).
3. **Discontinuous spans.** Besides ``B`` (begin) and ``I`` (inside) each layer has
   ``C`` (first token of a *further fragment* of the preceding span with the same
   label), so ``"lithium ... tremor"`` decodes to one two-fragment :class:`Span`.

Variants (compared in the model card and docs/pv.md):

``pairwise`` (default)
    one encoder pass per sentence, trigger-conditioned event layers as above.
``conditioned``
    a second encoder pass per trigger with a learned marker vector added to the
    trigger tokens' input embeddings (more expressive, twice the encoder cost).
``joint``
    no conditioning: the event layers tag the union of all events' arguments in one
    pass and each span is attached to the nearest trigger.

CPU training: ``freeze_layers`` keeps the embeddings and the lowest blocks fixed; with
a BERT-like encoder their output is computed once and cached, so an epoch only runs
the upper blocks (the MiniLM default trains within the 45-minute budget on 2 cores).
On a GPU, CUDA with bfloat16 autocast is used automatically.

Modules (one job each): :mod:`.tags` (tag scheme, Viterbi, decoding), :mod:`.network`
(the torch module), :mod:`.model` (:class:`TransformerExtractor`: parameters and
inputs), :mod:`.train` (training loop, :func:`quick_scores`), :mod:`.predict`
(prediction and decoding into events), :mod:`.persist` (the model folder),
:mod:`.card` (dev scores, model card) and :mod:`.build` (:func:`train_transformer`).

A trained model is a directory: ``model.json`` (``{"kind": "transformer", ...}``),
``encoder/`` (Hugging Face layout, weights stored as float16), ``heads.safetensors``
and ``MODEL_CARD.md``.

References
----------
Sun, Z. et al. PHEE: A Dataset for Pharmacovigilance Event Extraction from Text.
EMNLP 2022 (§3 annotation scheme, §4.2 evaluation, §5 open problems).
"""

from __future__ import annotations

import importlib.util

# The neural extra must be installed; failing at import lets the model registry fall
# back to the CRF for ``auto`` (torch itself is imported lazily, inside the methods).
for _dep in ("torch", "transformers", "safetensors"):
    if importlib.util.find_spec(_dep) is None:
        raise ModuleNotFoundError(f"No module named '{_dep}'", name=_dep)

from clinex.pv.models.tagging import (  # noqa: E402
    FORMAT_VERSION,
    LAYERS,
    MODEL_NAME,
    decode_tags,
    encode_tags,
    event_layer_spans,
    n_tags,
    viterbi_tags,
)
from clinex.pv.models.transformer.build import train_transformer  # noqa: E402
from clinex.pv.models.transformer.card import evaluate_model, write_model_card  # noqa: E402
from clinex.pv.models.transformer.model import TransformerExtractor  # noqa: E402
from clinex.pv.models.transformer.train import quick_scores  # noqa: E402

__all__ = [
    "LAYERS",
    "TransformerExtractor",
    "train_transformer",
    "MODEL_NAME",
    "FORMAT_VERSION",
    "n_tags",
    "encode_tags",
    "decode_tags",
    "viterbi_tags",
    "event_layer_spans",
    "quick_scores",
    "evaluate_model",
    "write_model_card",
]
