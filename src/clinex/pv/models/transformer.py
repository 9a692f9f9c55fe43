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

A trained model is a directory: ``model.json`` (``{"kind": "transformer", ...}``),
``encoder/`` (Hugging Face layout, weights stored as float16), ``heads.safetensors``
and ``MODEL_CARD.md``.

References
----------
Sun, Z. et al. PHEE: A Dataset for Pharmacovigilance Event Extraction from Text.
EMNLP 2022 (§3 annotation scheme, §4.2 evaluation, §5 open problems).
"""

from __future__ import annotations

import copy
import importlib.util
import json
import math
import os
import platform
import random
import re
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from clinex.errors import ModelError
from clinex.io.modes import apply_default_modes
from clinex.pv.attributes import CUE_LABELS, CueLexiconDetector, cues_to_attributes, event_cues
from clinex.pv.features import has_gazetteer_drug
from clinex.pv.types import Argument, Combination, Event, SentenceEvents
from clinex.text import Span

__all__ = ["LAYERS", "TransformerExtractor", "train_transformer", "MODEL_NAME"]

# The neural extra must be installed; failing at import lets the model registry fall
# back to the CRF for ``auto`` (torch itself is imported lazily, inside the methods).
for _dep in ("torch", "transformers", "safetensors"):
    if importlib.util.find_spec(_dep) is None:
        raise ModuleNotFoundError(f"No module named '{_dep}'", name=_dep)

MODEL_NAME = "clinex.pv.transformer.v1"
FORMAT_VERSION = 1

#: Tag layers and their labels (PHEE appendix A roles; sub-roles keyed by main role).
LAYERS: dict[str, tuple[str, ...]] = {
    "trigger": ("Adverse_event", "Potential_therapeutic_event"),
    "main": ("Subject", "Treatment", "Effect"),
    "sub": (
        "Subject.Age",
        "Subject.Gender",
        "Subject.Population",
        "Subject.Race",
        "Subject.Disorder",
        "Treatment.Drug",
        "Treatment.Dosage",
        "Treatment.Freq",
        "Treatment.Route",
        "Treatment.Time_elapsed",
        "Treatment.Duration",
        "Treatment.Disorder",
    ),
    "comb": ("Combination.Trigger", "Combination.Drug"),
    "attr": CUE_LABELS,
}
_EVENT_LAYERS = ("main", "sub", "comb", "attr")
_VARIANTS = ("pairwise", "conditioned", "joint")
_FALLBACK_GATES = ("drug", "evidence", "always")
#: Smallest ``max_length``: two special tokens plus a short clause (PHEE sentences average
#: about 30 words; a window this small only guards against nonsense values such as 1).
_MIN_MAX_LENGTH = 16
#: Attribute names a cue lexicon can supply (``attributes`` parameter).
_ATTRIBUTE_NAMES = ("Speculated", "Negated", "Severity")
_IGNORE = -100

#: Frozen-block outputs shared by the fits of one process (variants compared on the
#: same encoder compute them once): (encoder dir, depth, max_length, text) -> tensor.
_HIDDEN_CACHE: dict[tuple[str, int, int, str], Any] = {}


# ----------------------------------------------------------------------------- tags
def n_tags(layer: str) -> int:
    """Number of tags of ``layer``: ``O`` plus ``B``, ``I``, ``C`` per label."""
    return 1 + 3 * len(LAYERS[layer])


def encode_tags(
    offsets: Sequence[tuple[int, int]],
    spans: Sequence[tuple[str, Span]],
    labels: Sequence[str],
) -> list[int]:
    """Tag sub-word tokens with ``O`` / ``B`` / ``I`` / ``C`` for labelled spans.

    Parameters
    ----------
    offsets : sequence of (int, int)
        Character offsets of each token (special tokens have ``start == end``).
    spans : sequence of (str, Span)
        Labelled spans; a discontinuous span's later fragments start with ``C``.
        A span overlapping tokens already tagged is skipped (first come, by start).
    labels : sequence of str
        The layer's labels; label ``k`` has tags ``1+3k`` (B), ``2+3k`` (I), ``3+3k`` (C).

    Returns
    -------
    list of int
        One tag id per token; ``-100`` (ignored by the loss) on special tokens.
    """
    index = {lab: k for k, lab in enumerate(labels)}
    tags = [0 if e > s else _IGNORE for s, e in offsets]
    for label, span in sorted(spans, key=lambda x: (x[1].start, -x[1].end)):
        k = index.get(label)
        if k is None:
            continue
        per_frag = [
            [t for t, (s, e) in enumerate(offsets) if e > s and s < f.end and f.start < e]
            for f in sorted(span.fragments, key=lambda f: f.start)
        ]
        if any(tags[t] != 0 for toks in per_frag for t in toks) or not any(per_frag):
            continue
        first = True
        for toks in per_frag:
            for n, t in enumerate(toks):
                if n:
                    tags[t] = 2 + 3 * k
                else:
                    tags[t] = (1 if first else 3) + 3 * k
            if toks:
                first = False
    return tags


def decode_tags(
    text: str,
    offsets: Sequence[tuple[int, int]],
    tags: Sequence[int],
    labels: Sequence[str],
    scores: Sequence[float] | None = None,
    join_adjacent: bool = False,
) -> list[tuple[str, Span, float]]:
    """Turn token tags back into labelled character spans.

    ``I`` after a token of another label starts a new span (lenient BIO repair);
    ``C`` adds a fragment to the last span with the same label. Fragment ends are
    widened to whole words (a sub-word tag never cuts a word); spans that become
    identical by this widening (two ``B`` pieces of one word) are kept once.

    Parameters
    ----------
    text : str
        The sentence.
    offsets : sequence of (int, int)
        Token character offsets (as given to :func:`encode_tags`).
    tags : sequence of int
        Tag ids, one per token.
    labels : sequence of str
        The layer's labels.
    scores : sequence of float, optional
        Per-token confidence; a span's score is the mean over its tokens.
    join_adjacent : bool, default False
        Read ``B-X`` right after a ``B/I/C-X`` token, with only whitespace between
        them, as ``I-X``: two spans of one label that touch become one. PHEE almost
        never has such pairs (15 among the train split's gold main and sub-arguments
        of one event, 5 in dev), while a tagger
        often restarts a span after a determiner or a modifier (``the | patient``,
        ``depot | neuroleptics``); see docs/pv.md ("Neural extractor") for the dev
        figures.

    Returns
    -------
    list of (str, Span, float)
        Label, span (fragments in text order) and score, in order of first token.
    """
    spans: list[list[Any]] = []  # [label, [[s, e], ...], [token scores]]
    current: list[Any] | None = None  # the open fragment [s, e] of spans[-1]
    current_label: str | None = None
    current_span: list[Any] = []
    for t, (s, e) in enumerate(offsets):
        tag = int(tags[t])
        if e <= s or tag <= 0:
            current = None
            continue
        k, kind = divmod(tag - 1, 3)
        label = labels[k]
        sc = float(scores[t]) if scores is not None else 1.0
        if kind == 0 and join_adjacent and current is not None and current_label == label:
            kind = 1 if not text[current[1] : s].strip() else 0
        if kind == 1 and current is not None and current_label == label:
            current[1] = e
            current_span[2].append(sc)
            continue
        target = None
        if kind == 2:
            target = next((sp for sp in reversed(spans) if sp[0] == label), None)
        if target is None:
            target = [label, [], []]
            spans.append(target)
        current = [s, e]
        target[1].append(current)
        target[2].append(sc)
        current_label, current_span = label, target
    out: list[tuple[str, Span, float]] = []
    seen: set[tuple[str, tuple[tuple[int, int], ...]]] = set()
    for label, frags, scs in spans:
        pairs = []
        for s, e in frags:
            while s > 0 and text[s - 1].isalnum() and text[s].isalnum():
                s -= 1
            while e < len(text) and text[e].isalnum() and text[e - 1].isalnum():
                e += 1
            pairs.append((s, e))
        merged: list[tuple[int, int]] = []
        for s, e in sorted(pairs):
            if merged and s <= merged[-1][1]:
                merged[-1] = (merged[-1][0], max(merged[-1][1], e))
            else:
                merged.append((s, e))
        if (label, tuple(merged)) in seen:  # word pieces of one word tagged B twice
            continue
        seen.add((label, tuple(merged)))
        out.append((label, Span.from_offsets(text, merged, label=label), sum(scs) / len(scs)))
    return out


def viterbi_tags(logp: Any, n_labels: int) -> list[int]:
    """Best tag sequence under the ``O``/``B``/``I``/``C`` constraints.

    ``I-k`` may only follow ``B-k``, ``I-k`` or ``C-k`` and cannot open a sequence;
    the best path maximises the sum of token log-probabilities (first-order
    constrained decoding, which keeps exact-match spans whole where an argmax per
    token can break them).

    Parameters
    ----------
    logp : numpy.ndarray, shape (n_tokens, 1 + 3 * n_labels)
        Log-probabilities of the tags of each (real, non-special) token.
    n_labels : int
        Labels of the layer.

    Returns
    -------
    list of int
        One tag id per token.
    """
    import numpy as np

    n_tok, n = logp.shape
    if n_tok == 0:
        return []
    inside = np.zeros(n, dtype=bool)
    penalty = np.zeros((n, n))
    for k in range(n_labels):
        i_tag = 2 + 3 * k
        inside[i_tag] = True
        ok = np.zeros(n, dtype=bool)
        ok[[1 + 3 * k, 2 + 3 * k, 3 + 3 * k]] = True
        penalty[~ok, i_tag] = -1e9
    score = logp[0] + np.where(inside, -1e9, 0.0)
    back = np.zeros((n_tok, n), dtype=np.int64)
    for t in range(1, n_tok):
        cand = score[:, None] + penalty
        back[t] = cand.argmax(0)
        score = cand.max(0) + logp[t]
    path = [int(score.argmax())]
    for t in range(n_tok - 1, 0, -1):
        path.append(int(back[t, path[-1]]))
    return path[::-1]


def event_layer_spans(event: Event) -> dict[str, list[tuple[str, Span]]]:
    """The labelled spans of one event for each event layer (main/sub/comb/attr)."""
    out: dict[str, list[tuple[str, Span]]] = {name: [] for name in _EVENT_LAYERS}
    out["main"] = [(a.role, a.span) for a in event.arguments]
    for main, args in event.sub_arguments.items():
        out["sub"].extend((f"{main}.{a.role}", a.span) for a in args)
    for comb in event.combinations:
        if comb.trigger is not None:
            out["comb"].append(("Combination.Trigger", comb.trigger))
        out["comb"].extend(("Combination.Drug", d.span) for d in comb.drugs)
    out["attr"] = event_cues(event)
    return out


# ----------------------------------------------------------------------------- network
#: Relative distances to the trigger (sub-word tokens) beyond this share one embedding.
_MAX_DIST = 32


def _layer_stack(encoder: Any) -> Any:
    """The transformer blocks of a BERT-like encoder (``encoder.encoder.layer``), or None."""
    from torch import nn

    layers = getattr(getattr(encoder, "encoder", None), "layer", None)
    return layers if isinstance(layers, nn.ModuleList) else None


def _build_net(encoder: Any, dropout: float, dist_dim: int = 32) -> Any:
    import torch
    from torch import nn

    class _Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            hidden = int(encoder.config.hidden_size)
            self.encoder = encoder
            self.marker = nn.Parameter(torch.randn(hidden) * 0.02)
            self.dropout = nn.Dropout(dropout)
            self.trigger = nn.Linear(hidden, n_tags("trigger"))
            self.dist = nn.Embedding(2 * _MAX_DIST + 1, dist_dim)
            self.pair = nn.Sequential(
                nn.Linear(3 * hidden + dist_dim, hidden), nn.GELU(), nn.Dropout(dropout)
            )
            self.heads = nn.ModuleDict({name: nn.Linear(hidden, n_tags(name)) for name in _EVENT_LAYERS})

        def encode(self, input_ids: Any, attention_mask: Any, marker: Any = None) -> Any:
            emb = self.encoder.get_input_embeddings()(input_ids)
            if marker is not None:
                emb = emb + marker.unsqueeze(-1).to(emb.dtype) * self.marker
            return self.encoder(inputs_embeds=emb, attention_mask=attention_mask).last_hidden_state

        def encode_top(self, hidden: Any, attention_mask: Any, start: int) -> Any:
            """Run blocks ``start..`` on cached hidden states (BERT-like encoders)."""
            mask = (1.0 - attention_mask[:, None, None, :].to(hidden.dtype)) * torch.finfo(hidden.dtype).min
            for layer in _layer_stack(self.encoder)[start:]:
                out = layer(hidden, attention_mask=mask)
                hidden = out[0] if isinstance(out, tuple) else out
            return hidden

        def trigger_logits(self, h: Any) -> Any:
            return self.trigger(self.dropout(h))

        def event_logits(self, h: Any, marker: Any) -> dict[str, Any]:
            h = self.dropout(h)
            m = marker.unsqueeze(-1).to(h.dtype)
            n = m.sum(1)
            pooled = torch.where(n > 0, (h * m).sum(1) / n.clamp(min=1.0), h[:, 0])
            start = marker.float().argmax(1)  # first trigger token (0 = [CLS] without trigger)
            pos = torch.arange(h.shape[1], device=h.device)[None, :] - start[:, None]
            d = self.dist(pos.clamp(-_MAX_DIST, _MAX_DIST) + _MAX_DIST).to(h.dtype)
            t = pooled.unsqueeze(1).expand_as(h)
            x = self.pair(torch.cat([h, t, h * t, d], dim=-1))
            return {name: head(x) for name, head in self.heads.items()}

    return _Net()


# ----------------------------------------------------------------------------- estimator
class TransformerExtractor:
    """PHEE event extractor fine-tuning a local transformer encoder.

    Parameters
    ----------
    encoder : str or Path, default "minilm"
        ``"minilm"`` (offline all-MiniLM-L6-v2) or a Hugging Face directory (BioBERT ...).
    variant : {"pairwise", "conditioned", "joint"}, default "pairwise"
        How the event layers see the trigger (see the module docstring): one encoder
        pass and trigger-conditioned tag layers (``pairwise``), a second encoder pass
        per trigger with a trigger marker in the input (``conditioned``), or no
        conditioning with arguments assigned to the nearest trigger (``joint``).
    max_length : int, default 192
        Longest input in sub-word tokens; longer sentences are truncated.
    epochs : int, default 6
        Most training epochs.
    batch_size : int, default 16
        Sentences per step.
    lr : float, default 2e-4
        Peak AdamW learning rate of the encoder (linear warm-up and decay).
    head_lr : float, default 1e-3
        Learning rate of the tag layers, distance embedding and trigger marker.
    warmup : float, default 0.1
        Fraction of steps of linear warm-up.
    weight_decay : float, default 0.01
    dropout : float, default 0.1
        Dropout on the encoder output before the tag layers.
    freeze_layers : int, default 2
        Keep the embeddings and the first ``freeze_layers`` transformer blocks fixed.
        With a BERT-like encoder and a one-pass variant their output is computed once
        and cached, so an epoch costs only the upper blocks (a CPU speed-up).
    patience : int, default 2
        Epochs without a better dev score before stopping early.
    max_minutes : float or None, default 40.0
        Wall-clock budget of training (minutes, counting the frozen-block cache);
        training stops at the first batch past it and the best dev checkpoint is
        kept. None: no budget.
    seed : int, default 13
    threads : int or None, default None
        ``torch.set_num_threads`` on CPU (None leaves torch's default).
    device : str, default "auto"
        ``"auto"`` uses CUDA with bfloat16 autocast when present, else CPU.
    predict_batch_size : int, default 64
    decoder : {"viterbi", "argmax"}, default "viterbi"
        Constrained best path over the BIO/C tags (:func:`viterbi_tags`) or the most
        probable tag per token.
    trigger_fallback : float or None, default 0.0
        When a sentence gets no trigger, take its most trigger-like token (highest
        probability of not being ``O``) as a one-word trigger if that probability is
        at least this value. Every PHEE sentence holds at least one event (the corpus
        was sampled that way, paper §3), so for PHEE-like input a low value trades a
        little precision for recall; None switches it off (plain text may hold no
        event).
    attributes : str, default "lexicon"
        Where event attributes come from: the event pass's own cue tags (``model``),
        or a :class:`~clinex.pv.attributes.CueLexiconDetector` (default
        ``min_precision=0.2``, ``min_count=2``) fitted on the training sentences and
        applied to the predicted events (``lexicon``), or a comma-separated list of
        attribute names (``"Speculated"``, ``"Speculated,Severity"``) taken from the
        lexicon while the others come from the cue tags. On the PHEE dev split with
        the shipped run-E weights the lexicon gave Speculated / Negated / Severity
        EM F1 0.553 / 0.391 / 0.514 against 0.498 / 0.387 / 0.459 from the cue tags
        (docs/pv.md, "Neural extractor"). Models saved without this key load as
        ``model``.
    join_adjacent : str, default "main,sub"
        Comma-separated tag layers (``trigger``, ``main``, ``sub``, ``comb``,
        ``attr``) in which two touching spans of one label are read as one span
        (:func:`decode_tags`, ``join_adjacent``); ``""`` switches it off. A decoding
        rule only (no retraining): on the PHEE dev split with the run-H weights it
        raised main-argument EM F1 from 0.627 to 0.637 and sub-argument EM F1 from
        0.698 to 0.702; joining triggers lowered trigger F1 (0.689 to 0.684) and
        joining combination drugs lowered sub-argument F1 slightly (docs/pv.md).

    event_threshold : float, default 0.0
        The sentence-level event decision (:mod:`clinex.pv.gate`): a sentence whose
        event probability is below this value keeps no event (but confirmed
        negations, :func:`clinex.pv.postprocess.finish`). The event probability is
        the model's :class:`~clinex.pv.gate.SentenceGate` when it has one, else the
        largest, over its tokens, of ``1 - P(O)`` in the trigger layer. 0 switches
        the decision off. Saved with the model; :func:`train_transformer` (with
        negatives) and ``clinex pv gate`` calibrate it
        (:func:`clinex.pv.gate.calibrate_threshold`).
    negative_ratio : float, default 1.0
        With negatives (sentences without an event) passed to :meth:`fit`: how many
        are drawn afresh each epoch per training sentence with events (so 1.0 mixes
        them one to one); all of them when fewer are given.
    attribute_scope : bool, default True
        Decide Negated / Speculated by cue scope and Severity from the Effect's
        modifiers (:mod:`clinex.pv.scope`, via :func:`clinex.pv.postprocess.finish`)
        after the attribute sources above; False keeps them as they are.
    no_effect_min_prob : float, default 0.0
        An Adverse_event without an Effect argument is kept only if its trigger
        probability reaches this value (:func:`clinex.pv.postprocess.finish`, step 3);
        0 keeps them all. The shipped model uses 0.5 (chosen on PHEE dev: with the gate, Trig-C 0.6788 -> 0.6834, main 0.6345 -> 0.6362, sub 0.6938 -> 0.6963, ADE sentence recall 0.963 -> 0.956, held-out negatives given an ADE 29.5 % -> 26.1 %).
    init_heads : str or None, default None
        A ``heads.safetensors`` of a saved model to start the tag layers from (with
        ``encoder`` set to that model's ``encoder/`` folder: a warm start, e.g. to
        continue training a model with negatives). None: fresh tag layers.

    Attributes
    ----------
    net_ : torch.nn.Module
        Encoder plus tag layers.
    tokenizer_ : transformers fast tokenizer
    history_ : list of dict
        Per epoch: loss, dev scores, minutes.
    train_minutes_ : float
        Training wall-clock time.
    best_epoch_ : int or None
        The epoch whose weights were kept.
    """

    name = MODEL_NAME

    def __init__(
        self,
        encoder: str | Path = "minilm",
        *,
        variant: str = "pairwise",
        max_length: int = 192,
        epochs: int = 6,
        batch_size: int = 16,
        lr: float = 2e-4,
        head_lr: float = 1e-3,
        warmup: float = 0.1,
        weight_decay: float = 0.01,
        dropout: float = 0.1,
        freeze_layers: int = 2,
        patience: int = 2,
        max_minutes: float | None = 40.0,
        seed: int = 13,
        threads: int | None = None,
        device: str = "auto",
        predict_batch_size: int = 64,
        decoder: str = "viterbi",
        trigger_fallback: float | None = 0.0,
        attributes: str = "lexicon",
        join_adjacent: str = "main,sub",
        fallback_gate: str = "drug",
        event_threshold: float = 0.0,
        negative_ratio: float = 1.0,
        attribute_scope: bool = True,
        init_heads: str | None = None,
        no_effect_min_prob: float = 0.0,
    ) -> None:
        self.encoder = encoder
        self.variant = variant
        self.max_length = max_length
        self.epochs = epochs
        self.batch_size = batch_size
        self.lr = lr
        self.head_lr = head_lr
        self.warmup = warmup
        self.weight_decay = weight_decay
        self.dropout = dropout
        self.freeze_layers = freeze_layers
        self.patience = patience
        self.max_minutes = max_minutes
        self.seed = seed
        self.threads = threads
        self.device = device
        self.predict_batch_size = predict_batch_size
        self.decoder = decoder
        self.trigger_fallback = trigger_fallback
        self.attributes = attributes
        self.join_adjacent = join_adjacent
        self.fallback_gate = fallback_gate
        self.event_threshold = event_threshold
        self.negative_ratio = negative_ratio
        self.attribute_scope = attribute_scope
        self.init_heads = init_heads
        self.no_effect_min_prob = no_effect_min_prob

    # -- parameters ---------------------------------------------------------------
    def get_params(self) -> dict[str, Any]:
        """The constructor parameters (JSON-serialisable)."""
        keys = (
            "variant max_length epochs batch_size lr head_lr warmup weight_decay dropout "
            "freeze_layers patience max_minutes seed threads device predict_batch_size decoder "
            "trigger_fallback attributes join_adjacent fallback_gate event_threshold negative_ratio "
            "attribute_scope init_heads no_effect_min_prob"
        ).split()
        return {"encoder": str(self.encoder), **{k: getattr(self, k) for k in keys}}

    def _check_params(self) -> None:
        if self.variant not in _VARIANTS:
            raise ModelError(f"variant must be one of {', '.join(_VARIANTS)}; got '{self.variant}'")
        for key in ("max_length", "epochs", "batch_size", "predict_batch_size", "patience", "seed"):
            _check_number(self, key, int)
        for key in ("freeze_layers", "threads"):
            _check_number(self, key, int, optional=key == "threads")
        for key in ("lr", "head_lr", "warmup", "weight_decay", "dropout", "event_threshold", "negative_ratio",
                    "no_effect_min_prob"):
            _check_number(self, key, float)
        if not 0.0 <= self.event_threshold <= 1.0:
            raise ModelError(f"event_threshold must be in [0, 1]; got {self.event_threshold}")
        if self.negative_ratio < 0:
            raise ModelError(f"negative_ratio must be >= 0; got {self.negative_ratio}")
        for key in ("max_minutes", "trigger_fallback"):
            _check_number(self, key, float, optional=True)
        for key in ("max_length", "epochs", "batch_size", "predict_batch_size", "patience"):
            if int(getattr(self, key)) < 1:
                raise ModelError(f"{key} must be >= 1; got {getattr(self, key)}")
        if int(self.max_length) < _MIN_MAX_LENGTH:
            raise ModelError(
                f"max_length must be at least {_MIN_MAX_LENGTH} sub-word tokens (a window has to hold "
                f"a clause); got {self.max_length}"
            )
        for key in ("lr", "head_lr"):
            if not float(getattr(self, key)) > 0:
                raise ModelError(f"{key} must be > 0; got {getattr(self, key)}")
        if self.threads is not None and int(self.threads) < 1:
            raise ModelError(f"threads must be >= 1 or null; got {self.threads}")
        if self.max_minutes is not None and not float(self.max_minutes) > 0:
            raise ModelError(f"max_minutes must be > 0 or null; got {self.max_minutes}")
        if not isinstance(self.device, str) or not re.fullmatch(r"auto|cpu|mps|cuda(:\d+)?", self.device):
            raise ModelError(f"device must be 'auto', 'cpu', 'cuda', 'cuda:N' or 'mps'; got '{self.device}'")
        if not 0 <= self.warmup < 1 or not 0 <= self.dropout < 1:
            raise ModelError("warmup and dropout must be in [0, 1)")
        if self.decoder not in ("viterbi", "argmax"):
            raise ModelError(f"decoder must be 'viterbi' or 'argmax'; got '{self.decoder}'")
        self._lexicon_names()
        self._join_layers()
        if self.fallback_gate not in _FALLBACK_GATES:
            raise ModelError(
                f"fallback_gate must be one of {', '.join(_FALLBACK_GATES)}; got '{self.fallback_gate}'"
            )
        if not isinstance(self.attribute_scope, bool):
            raise ModelError(f"attribute_scope must be true or false; got {self.attribute_scope!r}")
        if int(self.freeze_layers) < 0:
            raise ModelError(f"freeze_layers must be >= 0; got {self.freeze_layers}")

    def _check_max_length(self, encoder: Any) -> None:
        """Remember the encoder's position limit; see :meth:`_max_tokens`."""
        limit = getattr(encoder.config, "max_position_embeddings", None)
        self.max_positions_ = limit if isinstance(limit, int) and limit > 2 else None

    def _max_tokens(self) -> int:
        """Tokens per window: ``max_length``, capped at the encoder's position embeddings.

        A larger ``max_length`` (e.g. 100000) would index past the position table and
        crash; longer texts are cut into windows by :meth:`_pieces` instead.
        """
        limit = getattr(self, "max_positions_", None)
        return min(int(self.max_length), limit) if limit else int(self.max_length)

    def _torch_device(self) -> Any:
        import torch

        if self.threads:
            torch.set_num_threads(int(self.threads))
        if self.device == "auto":
            return torch.device("cuda" if torch.cuda.is_available() else "cpu")
        if self.device == "mps" and not torch.backends.mps.is_available():
            raise ModelError("device 'mps' was asked for but this torch build has no MPS support; use device=auto or cpu")
        if str(self.device).startswith("cuda") and not torch.cuda.is_available():
            raise ModelError(
                f"device '{self.device}' was asked for but this torch build sees no CUDA GPU; "
                "use device=auto or device=cpu"
            )
        return torch.device(self.device)

    # -- items --------------------------------------------------------------------
    def _tokenize(self, texts: Sequence[str]) -> list[dict[str, Any]]:
        enc = self.tokenizer_(
            list(texts),
            truncation=True,
            max_length=self._max_tokens(),
            return_offsets_mapping=True,
        )
        return [
            {"input_ids": list(ids), "offsets": [tuple(o) for o in offs]}
            for ids, offs in zip(enc["input_ids"], enc["offset_mapping"])
        ]

    @staticmethod
    def _marker(offsets: Sequence[tuple[int, int]], trigger: Span) -> list[int]:
        return [1 if e > s and trigger.overlaps(s, e) else 0 for s, e in offsets]

    def _items(self, sentences: Sequence[SentenceEvents]) -> list[dict[str, Any]]:
        """One item per sentence: token ids, trigger tags and per-event (marker, tags)."""
        toks = self._tokenize([s.text for s in sentences])
        items = []
        for sent, tok in zip(sentences, toks):
            offs = tok["offsets"]
            trig = encode_tags(offs, [(ev.event_type, ev.trigger) for ev in sent.events], LAYERS["trigger"])
            events = []
            if self.variant == "joint":
                union: dict[str, list[tuple[str, Span]]] = {n: [] for n in _EVENT_LAYERS}
                for ev in sent.events:
                    for name, spans in event_layer_spans(ev).items():
                        union[name].extend(spans)
                events.append(
                    ([0] * len(offs), {n: encode_tags(offs, union[n], LAYERS[n]) for n in _EVENT_LAYERS})
                )
            else:
                for ev in sent.events:
                    spans = event_layer_spans(ev)
                    events.append(
                        (
                            self._marker(offs, ev.trigger),
                            {n: encode_tags(offs, spans[n], LAYERS[n]) for n in _EVENT_LAYERS},
                        )
                    )
            items.append({"input_ids": tok["input_ids"], "trigger": trig, "events": events})
        return items

    def _collate(self, batch: Sequence[dict[str, Any]], device: Any) -> dict[str, Any]:
        import torch

        width = max(len(b["input_ids"]) for b in batch)
        pad = int(self.tokenizer_.pad_token_id or 0)

        def pad_rows(rows: Sequence[Sequence[int]], value: int) -> Any:
            return torch.tensor([list(r) + [value] * (width - len(r)) for r in rows], device=device)

        out: dict[str, Any] = {
            "input_ids": pad_rows([b["input_ids"] for b in batch], pad),
            "attention_mask": pad_rows([[1] * len(b["input_ids"]) for b in batch], 0),
        }
        if "cache" in batch[0]:
            hid = batch[0]["cache"].shape[-1]
            cache = torch.zeros(len(batch), width, hid)
            for i, b in enumerate(batch):
                cache[i, : b["cache"].shape[0]] = b["cache"].float()
            out["cache"] = cache.to(device)
        if "trigger" in batch[0]:
            out["trigger"] = pad_rows([b["trigger"] for b in batch], _IGNORE)
            rows = [i for i, b in enumerate(batch) for _ in b["events"]]
            evs = [e for b in batch for e in b["events"]]
            out["ev_rows"] = torch.tensor(rows, dtype=torch.long, device=device)
            out["ev_marker"] = pad_rows([m for m, _ in evs], 0) if evs else None
            out["ev_labels"] = {n: pad_rows([lab[n] for _, lab in evs], _IGNORE) for n in _EVENT_LAYERS} if evs else {}
        return out

    # -- training -----------------------------------------------------------------
    def _freeze(self) -> int:
        """Freeze embeddings and the first blocks; return the cache depth (0 = no cache)."""
        k = int(self.freeze_layers)
        if k <= 0:
            return 0
        enc = self.net_.encoder
        emb = getattr(enc, "embeddings", None) or enc.get_input_embeddings()
        for p in emb.parameters():
            p.requires_grad = False
        stack = _layer_stack(enc)
        if stack is None:
            return 0
        if k > len(stack):
            raise ModelError(f"freeze_layers must be at most {len(stack)} (the encoder's blocks); got {k}")
        for layer in stack[:k]:
            for p in layer.parameters():
                p.requires_grad = False
        return k if self.variant != "conditioned" else 0

    def _cache(
        self,
        items: list[dict[str, Any]],
        texts: Sequence[str],
        depth: int,
        device: Any,
        say: Callable[[str], None],
    ) -> None:
        """Store the frozen blocks' output (hidden states ``depth``) in each item."""
        import torch

        self.net_.eval()
        keys = [(str(self.encoder_path_), depth, self._max_tokens(), t) for t in texts]
        todo = [i for i, k in enumerate(keys) if k not in _HIDDEN_CACHE]
        todo.sort(key=lambda i: len(items[i]["input_ids"]))
        bs = int(self.predict_batch_size)
        with torch.inference_mode():
            for n, b in enumerate(range(0, len(todo), bs)):
                part = todo[b : b + bs]
                batch = self._collate([{"input_ids": items[i]["input_ids"]} for i in part], device)
                hs = self.net_.encoder(
                    input_ids=batch["input_ids"],
                    attention_mask=batch["attention_mask"],
                    output_hidden_states=True,
                ).hidden_states[depth]
                for r, i in enumerate(part):
                    _HIDDEN_CACHE[keys[i]] = hs[r, : len(items[i]["input_ids"])].to("cpu").clone()
                if n % 10 == 0:
                    say(f"cached {b + len(part)}/{len(todo)} sentences")
        for it, key in zip(items, keys):
            it["cache"] = _HIDDEN_CACHE[key]

    def fit(
        self,
        train: Sequence[SentenceEvents],
        dev: Sequence[SentenceEvents] | None = None,
        *,
        negatives: Sequence[SentenceEvents] = (),
        out: Path | None = None,
        log: Callable[[str], None] | None = None,
    ) -> "TransformerExtractor":
        """Fine-tune the encoder and tag layers on ``train``.

        Parameters
        ----------
        train : sequence of SentenceEvents
            Gold sentences.
        dev : sequence of SentenceEvents, optional
            Gold sentences for early stopping: after each epoch the mean of the
            trigger, main-argument and sub-argument classification EM F1 reported by
            :mod:`clinex.pv.evaluate` (PHEE §4.2, see :func:`quick_scores`) is computed and the best epoch's weights are kept
            (and saved to ``out``).
        negatives : sequence of SentenceEvents, default ()
            Sentences without an event (ADE corpus negatives, :mod:`clinex.pv.gate`):
            each epoch draws ``negative_ratio`` of them per training sentence; every
            token of them is ``O`` in the trigger layer (the event layers are not
            trained on them).
        out : Path, optional
            Directory to save the best checkpoint to after every improving epoch.
        log : callable, optional
            Receives one progress line at a time (e.g. ``print``).

        Returns
        -------
        TransformerExtractor
            ``self``, fitted.

        Raises
        ------
        ModelError
            On invalid parameters, a missing encoder, or empty training data.
        """
        import numpy as np
        import torch
        from torch import nn

        from clinex.pv.models.encoders import load_encoder, load_tokenizer, resolve_encoder

        self._check_params()
        if not train:
            raise ModelError("no training sentences")
        if dev is not None and not dev:
            raise ModelError("no dev sentences (the dev file is empty); leave --dev out to train without one")
        say = log or (lambda _msg: None)
        random.seed(self.seed)
        np.random.seed(self.seed)
        torch.manual_seed(self.seed)
        device = self._torch_device()
        start = time.monotonic()
        path = resolve_encoder(self.encoder)
        self.encoder_path_ = path
        if self._lexicon_names():
            self.attribute_lexicon_ = CueLexiconDetector().fit(train)
        self.tokenizer_ = load_tokenizer(path)
        encoder_model = load_encoder(path)
        self._check_max_length(encoder_model)
        self.net_ = _build_net(encoder_model, float(self.dropout))
        if self.init_heads:
            self._load_heads(Path(self.init_heads))
        self.net_.to(device)
        items = self._items(train)
        # negatives supervise the trigger layer only (all O): their drugs and effects
        # are not arguments of an event, but would be the same words in PHEE
        neg_items = [{**it, "events": []} for it in self._items(negatives)] if negatives else []
        depth = self._freeze()
        dev_texts = [s.text for s in dev] if dev else []
        dev_toks = self._tokenize(dev_texts) if dev else []
        if depth:
            self._cache(items, [s.text for s in train], depth, device, say)
            if neg_items:
                self._cache(neg_items, [s.text for s in negatives], depth, device, say)
            if dev:
                self._cache(dev_toks, dev_texts, depth, device, say)
        say(
            f"{len(train)} sentences, {sum(len(i['events']) for i in items)} event items; "
            f"device {device}; cached blocks {depth}"
        )
        bsz = int(self.batch_size)
        n_neg = min(len(neg_items), int(round(float(self.negative_ratio) * len(items))))
        pool = items + neg_items
        total = math.ceil((len(items) + n_neg) / bsz) * int(self.epochs)
        enc_params = [p for p in self.net_.encoder.parameters() if p.requires_grad]
        enc_ids = {id(p) for p in self.net_.encoder.parameters()}
        other = [p for p in self.net_.parameters() if id(p) not in enc_ids]
        opt = torch.optim.AdamW(
            [{"params": enc_params, "lr": float(self.lr)}, {"params": other, "lr": float(self.head_lr)}],
            weight_decay=float(self.weight_decay),
        )
        warm = max(1, int(total * float(self.warmup)))

        def factor(step: int) -> float:
            if step < warm:
                return (step + 1) / warm
            return max(0.0, (total - step) / max(1, total - warm))

        sched = torch.optim.lr_scheduler.LambdaLR(opt, factor)
        loss_fn = nn.CrossEntropyLoss(ignore_index=_IGNORE, reduction="sum")
        use_amp = device.type == "cuda"
        rng = random.Random(self.seed)
        budget = None if self.max_minutes is None else float(self.max_minutes) * 60.0
        best, best_state, bad = -1.0, None, 0
        self.history_: list[dict[str, Any]] = []
        self.best_epoch_: int | None = None
        out_of_time = False

        def ce(logits: Any, gold: Any) -> Any:
            count = int((gold != _IGNORE).sum())
            if not count:
                return None
            return loss_fn(logits.float().reshape(-1, logits.shape[-1]), gold.reshape(-1)) / count

        for epoch in range(1, int(self.epochs) + 1):
            self.net_.train()
            # Length-bucketed shuffling: sort chunks of 50 batches by length (less padding).
            order = list(range(len(items)))
            order += [len(items) + k for k in rng.sample(range(len(neg_items)), n_neg)]
            rng.shuffle(order)
            batches = []
            for c in range(0, len(order), bsz * 50):
                part = sorted(order[c : c + bsz * 50], key=lambda i: len(pool[i]["input_ids"]))
                batches += [part[b : b + bsz] for b in range(0, len(part), bsz)]
            rng.shuffle(batches)
            total_loss, n_steps = 0.0, 0
            for step, idx in enumerate(batches):
                if budget is not None and time.monotonic() - start > budget:
                    out_of_time = True
                    break
                batch = self._collate([pool[i] for i in idx], device)
                with torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=use_amp):
                    if "cache" in batch:
                        h = self.net_.encode_top(batch["cache"], batch["attention_mask"], depth)
                    else:
                        h = self.net_.encode(batch["input_ids"], batch["attention_mask"])
                    losses = [ce(self.net_.trigger_logits(h), batch["trigger"])]
                    if batch["ev_marker"] is not None:
                        rows = batch["ev_rows"]
                        if self.variant == "conditioned":
                            he = self.net_.encode(
                                batch["input_ids"][rows], batch["attention_mask"][rows], batch["ev_marker"]
                            )
                        else:
                            he = h[rows]
                        ev = self.net_.event_logits(he, batch["ev_marker"])
                        losses += [ce(ev[n], batch["ev_labels"][n]) for n in _EVENT_LAYERS]
                kept = [x for x in losses if x is not None]
                if not kept:
                    continue
                loss = torch.stack(kept).sum()
                opt.zero_grad()
                loss.backward()
                torch.nn.utils.clip_grad_norm_(self.net_.parameters(), 1.0)
                opt.step()
                sched.step()
                total_loss += float(loss.detach())
                n_steps += 1
                if step % 50 == 0:
                    say(
                        f"epoch {epoch} step {step}/{len(batches)} loss {total_loss / n_steps:.4f} "
                        f"({(time.monotonic() - start) / 60:.1f} min)"
                    )
            record: dict[str, Any] = {
                "epoch": epoch,
                "loss": total_loss / max(1, n_steps),
                "steps": n_steps,
                "complete": not out_of_time,
            }
            if dev and n_steps:
                dev_pred = self._predict(dev_texts, dev_toks, depth)
                scores = quick_scores(dev, dev_pred)
                record["dev"] = scores
                if scores["selection"] > best:
                    best, bad = scores["selection"], 0
                    self.dev_predictions_ = dev_pred
                    best_state = copy.deepcopy(self.net_.state_dict())
                    self.best_epoch_ = epoch
                    self.train_minutes_ = (time.monotonic() - start) / 60
                    if out is not None:
                        self.save(out)
                else:
                    bad += 1
            record["minutes"] = (time.monotonic() - start) / 60
            self.history_.append(record)
            say(json.dumps(record))
            if out_of_time or (dev and bad >= int(self.patience)):
                break
        for it in pool + dev_toks:
            it.pop("cache", None)
        if not any(rec.get("steps") for rec in self.history_):
            raise ModelError(
                f"training stopped before its first step (max_minutes={self.max_minutes} was used up by "
                "loading and caching); raise max_minutes"
            )
        if best_state is not None:
            self.net_.load_state_dict(best_state)
        self.train_minutes_ = (time.monotonic() - start) / 60
        self.net_.eval()
        return self

    # -- prediction ---------------------------------------------------------------
    def _check_fitted(self) -> None:
        if not hasattr(self, "net_"):
            raise ModelError("TransformerExtractor is not fitted yet; call 'fit' or 'load' first")

    def predict(self, texts: list[str]) -> list[list[Event]]:
        """Extract events from each sentence (see :meth:`predict_detailed`).

        Returns
        -------
        list of list of Event
        """
        return [events for events, _ in self.predict_detailed(texts)]

    def predict_detailed(self, texts: list[str]) -> list[tuple[list[Event], float]]:
        """Extract events from each sentence, with the sentence's event probability.

        :meth:`predict_ungated`, then :func:`clinex.pv.postprocess.finish_model`
        (attribute scope, the sentence-level decision, the effect rule).

        Parameters
        ----------
        texts : list of str
            Sentences (PHEE contexts); each is processed on its own.

        Returns
        -------
        list of (list of Event, float)
            Per text, its events with offsets into that text, ``source`` set to the
            model name and variant, ``score`` to the trigger's mean token probability;
            and the text's event probability in [0, 1] (the gate's when the model has
            one, else the model's own: :mod:`clinex.pv.gate`).

        Raises
        ------
        ModelError
            If the model is not fitted.
        """
        from clinex.pv.postprocess import finish_model

        texts = list(texts)
        return finish_model(self, texts, self.predict_ungated(texts))

    def predict_ungated(self, texts: list[str]) -> list[tuple[list[Event], float]]:
        """Events and the model's own event probability per text, before the last steps.

        The model's own event probability is the largest ``1 - P(O)`` of the trigger
        layer over the text's tokens (the largest over its windows for a long text;
        :mod:`clinex.pv.gate`); neither the gate, ``event_threshold``, the attribute
        scope nor the effect rule is applied.

        Raises
        ------
        ModelError
            If the model is not fitted.
        """
        self._check_fitted()
        if not texts:
            return []
        texts = list(texts)
        toks = self._tokenize(texts)
        # a text that fills its window may have been truncated: cut it into windows
        long = {i for i, t in enumerate(toks) if len(t["input_ids"]) >= self._max_tokens()}
        if not long:
            probs: list[float] = [0.0] * len(texts)
            return list(zip(self._predict(texts, toks, 0, probs), probs))
        pieces = [self._pieces(t) if i in long else [(0, t)] for i, t in enumerate(texts)]
        from clinex.pv.pipeline import shift_event

        flat = [(i, off, piece) for i, ps in enumerate(pieces) for off, piece in ps]
        piece_texts = [piece for _, _, piece in flat]
        cut = [k for k, (i, _, _) in enumerate(flat) if i in long]
        piece_toks = [toks[i] for i, _, _ in flat]  # texts that fit keep their tokens
        for k, tok in zip(cut, self._tokenize([piece_texts[k] for k in cut])):
            piece_toks[k] = tok
        piece_probs: list[float] = [0.0] * len(piece_texts)
        preds = self._predict(piece_texts, piece_toks, 0, piece_probs)
        out: list[list[Event]] = [[] for _ in texts]
        best = [0.0] * len(texts)
        for (i, off, _), events, p in zip(flat, preds, piece_probs):
            out[i].extend(shift_event(ev, off, texts[i]) for ev in events)
            best[i] = max(best[i], p)
        return list(zip(out, best))

    def _pieces(self, text: str) -> list[tuple[int, str]]:
        """Cut a text longer than :meth:`_max_tokens` tokens into pieces that fit.

        A piece ends at a sentence start (:func:`clinex.text.split_sentences`) when
        one falls inside the window, else at a word start, else after ``max_length - 2``
        tokens (room for the special tokens). Each piece is tagged on its own and its
        events are shifted back into ``text`` (so nothing past the encoder's window is
        silently lost; a sentence longer than the window is still cut).

        Returns
        -------
        list of (int, str)
            Character offset of each piece in ``text`` and its text; ``[(0, text)]``
            when the text fits.
        """
        limit = max(1, self._max_tokens() - 2)
        enc = self.tokenizer_(text, add_special_tokens=False, return_offsets_mapping=True, verbose=False)
        offs = [(s, e) for s, e in enc["offset_mapping"] if e > s]
        if len(offs) <= limit:
            return [(0, text)]
        from clinex.text import split_sentences

        sentence_starts = {sp.start for sp in split_sentences(text)}
        word_starts = {k for k, (s, _) in enumerate(offs) if s == 0 or text[s - 1].isspace()}
        pieces: list[tuple[int, str]] = []
        i = 0
        while i < len(offs):
            j = min(i + limit, len(offs))
            if j < len(offs):
                window = range(j, i, -1)
                j = next((k for k in window if offs[k][0] in sentence_starts), None) or next(
                    (k for k in window if k in word_starts), j
                )
            start = offs[i][0] if i else 0
            end = offs[j][0] if j < len(offs) else len(text)
            pieces.append((start, text[start:end]))
            i = j
        return pieces

    def _predict(
        self, texts: list[str], toks: list[dict[str, Any]], depth: int, probs: list[float] | None = None
    ) -> list[list[Event]]:
        """Predict from tokenized texts; with ``depth`` > 0 from their cached hidden states.

        ``probs``, when given (one slot per text), receives each text's own event
        probability (the largest ``1 - P(O)`` of the trigger layer).
        """
        import torch

        device = next(self.net_.parameters()).device
        use_amp = device.type == "cuda"
        order = sorted(range(len(toks)), key=lambda i: len(toks[i]["input_ids"]))
        events: list[list[Event]] = [[] for _ in texts]
        bs = int(self.predict_batch_size)
        self.net_.eval()

        def tags(logits: Any, rows: list[int]) -> tuple[list[list[int]], list[list[float]]]:
            """Tags and their probabilities per row; ``rows`` index ``toks`` (valid tokens)."""
            prob = logits.float().softmax(-1)
            sc, tg = prob.max(-1)
            tg_l, sc_l = tg.cpu().tolist(), sc.cpu().tolist()
            if self.decoder != "viterbi":
                return tg_l, sc_l
            n_labels = (prob.shape[-1] - 1) // 3
            logp = prob.clamp_min(1e-12).log().cpu().numpy()
            pr = prob.cpu().numpy()
            for r, i in enumerate(rows):
                valid = [t for t, (s, e) in enumerate(toks[i]["offsets"]) if e > s]
                path = viterbi_tags(logp[r, valid], n_labels)
                for t, tag in zip(valid, path):
                    tg_l[r][t] = tag
                    sc_l[r][t] = float(pr[r, t, tag])
            return tg_l, sc_l

        with torch.inference_mode():
            for b in range(0, len(order), bs):
                idx = order[b : b + bs]
                batch = self._collate([toks[i] for i in idx], device)
                with torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=use_amp):
                    if depth:
                        h = self.net_.encode_top(batch["cache"], batch["attention_mask"], depth)
                    else:
                        h = self.net_.encode(batch["input_ids"], batch["attention_mask"])
                    trig_logits = self.net_.trigger_logits(h)
                    tg, sc = tags(trig_logits, idx)
                triggers = [
                    decode_tags(texts[i], toks[i]["offsets"], tg[r], LAYERS["trigger"], sc[r], "trigger" in self._join_layers())
                    for r, i in enumerate(idx)
                ]
                p_trig = trig_logits.float().softmax(-1).cpu().numpy()
                if probs is not None:
                    for r, i in enumerate(idx):
                        valid = [t for t, (s, e) in enumerate(toks[i]["offsets"]) if e > s]
                        p_event = float(1.0 - p_trig[r, valid, 0].min()) if valid else 0.0
                        probs[i] = round(min(1.0, max(0.0, p_event)), 4)
                forced: set[int] = set()
                if self.trigger_fallback is not None and not all(triggers):
                    for r, i in enumerate(idx):
                        if not triggers[r]:
                            triggers[r] = self._fallback_trigger(texts[i], toks[i]["offsets"], p_trig[r])
                            forced.add(i)
                if self.variant == "joint":
                    pairs = [(r, None) for r in range(len(idx))]
                    markers = [[0] * h.shape[1] for _ in idx]
                else:
                    pairs = [(r, t) for r, trig in enumerate(triggers) for t in trig]
                    markers = [
                        self._marker(toks[idx[r]]["offsets"], t[1]) + [0] * (h.shape[1] - len(toks[idx[r]]["offsets"]))
                        for r, t in pairs
                    ]
                if not pairs:
                    continue
                rows = torch.tensor([r for r, _ in pairs], dtype=torch.long, device=device)
                marker = torch.tensor(markers, device=device)
                with torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=use_amp):
                    if self.variant == "conditioned":
                        he = self.net_.encode(batch["input_ids"][rows], batch["attention_mask"][rows], marker)
                    else:
                        he = h[rows]
                    ev_logits = self.net_.event_logits(he, marker)
                    ev_rows = [idx[r] for r, _ in pairs]
                    ev_tags = {n: tags(ev_logits[n], ev_rows) for n in _EVENT_LAYERS}
                for p, (r, trig) in enumerate(pairs):
                    i = idx[r]
                    layer = {
                        n: decode_tags(
                            texts[i], toks[i]["offsets"], ev_tags[n][0][p], LAYERS[n], ev_tags[n][1][p],
                            n in self._join_layers(),
                        )
                        for n in _EVENT_LAYERS
                    }
                    if trig is not None:
                        events[i].append(self._event(trig[0], trig[1], trig[2], layer))
                    else:
                        events[i] = self._joint_events(triggers[r], layer)
                for i in set(idx):
                    if i in forced and not self._fallback_allowed(texts[i], events[i]):
                        events[i] = []
                    elif self._bare(texts[i], events[i]):
                        events[i] = []
        return self._lexicon_attributes(texts, events)

    def _join_layers(self) -> frozenset[str]:
        """The tag layers decoded with ``join_adjacent`` (see that parameter).

        Raises
        ------
        ModelError
            If a name is not a tag layer.
        """
        if not self.join_adjacent:
            return frozenset()
        names = frozenset(n.strip() for n in str(self.join_adjacent).split(",") if n.strip())
        if not names <= set(LAYERS):
            raise ModelError(
                f"join_adjacent must be a comma-separated list of {', '.join(LAYERS)} or empty; "
                f"got '{self.join_adjacent}'"
            )
        return names

    def _lexicon_names(self) -> frozenset[str]:
        """The attribute names the cue lexicon supplies (see ``attributes``)."""
        if self.attributes == "model":
            return frozenset()
        if self.attributes == "lexicon":
            return frozenset(_ATTRIBUTE_NAMES)
        names = frozenset(n.strip() for n in str(self.attributes).split(","))
        if not names or not names <= set(_ATTRIBUTE_NAMES):
            raise ModelError(
                "attributes must be 'model', 'lexicon' or a comma-separated list of "
                f"{', '.join(_ATTRIBUTE_NAMES)}; got '{self.attributes}'"
            )
        return names

    def _lexicon_attributes(self, texts: list[str], events: list[list[Event]]) -> list[list[Event]]:
        """Take the attributes named by ``attributes`` from the cue lexicon, the rest from the tags."""
        lexicon = getattr(self, "attribute_lexicon_", None)
        names = self._lexicon_names()
        if not names or lexicon is None:
            return events
        out = []
        for text, evs in zip(texts, events):
            merged = []
            for ev, lex in zip(evs, lexicon.predict(text, evs)):
                attrs = [a for a in ev.attributes if a.name not in names]
                attrs += [a for a in lex.attributes if a.name in names]
                attrs.sort(key=lambda a: a.cue.start if a.cue is not None else -1)
                merged.append(ev.model_copy(update={"attributes": tuple(attrs)}))
            out.append(merged)
        return out

    def _bare(self, text: str, events: Sequence[Event]) -> bool:
        """True when every event has no argument besides its own trigger word and the
        sentence has no gazetteer drug: "Abstract", "Informed consent was obtained."
        (dropped unless ``fallback_gate="always"``; no dev event is lost)."""
        if self.fallback_gate == "always" or not events:
            return False
        for ev in events:
            if any(not a.span.overlaps(ev.trigger.start, ev.trigger.end) for a in ev.arguments):
                return False
        return not has_gazetteer_drug(text)

    def _fallback_allowed(self, text: str, events: Sequence[Event]) -> bool:
        """Whether events built on a forced trigger are kept (see ``fallback_gate``)."""
        if self.fallback_gate == "always":
            return True
        for ev in events:
            # evidence: a Treatment sub-argument or a combination drug other than the
            # forced trigger word itself ("Figure" in "Figure 1." was tagged both)
            drugs = [a.span for a in ev.sub_arguments.get("Treatment", ())]
            drugs += [d.span for c in ev.combinations for d in c.drugs]
            if any(not sp.overlaps(ev.trigger.start, ev.trigger.end) for sp in drugs):
                return True
            if self.fallback_gate == "evidence" and any(
                a.role in ("Treatment", "Effect") and not a.span.overlaps(ev.trigger.start, ev.trigger.end)
                for a in ev.arguments
            ):
                return True
        return has_gazetteer_drug(text)

    def _fallback_trigger(
        self, text: str, offsets: Sequence[tuple[int, int]], probs: Any
    ) -> list[tuple[str, Span, float]]:
        """The most trigger-like token when none was tagged (see ``trigger_fallback``)."""
        valid = [t for t, (s, e) in enumerate(offsets) if e > s]
        if not valid:
            return []
        not_o = 1.0 - probs[valid, 0]
        best = int(not_o.argmax())
        if float(not_o[best]) < float(self.trigger_fallback or 0.0):
            return []
        t = valid[best]
        n_labels = len(LAYERS["trigger"])
        k = max(range(n_labels), key=lambda j: probs[t, 1 + 3 * j] + probs[t, 2 + 3 * j])
        tags = [0] * len(offsets)
        tags[t] = 1 + 3 * k
        return [
            (label, span, float(not_o[best]))
            for label, span, _ in decode_tags(text, offsets, tags, LAYERS["trigger"])
        ]

    def _joint_events(
        self,
        triggers: list[tuple[str, Span, float]],
        layer: dict[str, list[tuple[str, Span, float]]],
    ) -> list[Event]:
        """Events of the joint variant: each span goes to the nearest trigger."""
        if not triggers:
            return []
        per: list[dict[str, list[tuple[str, Span, float]]]] = [
            {n: [] for n in _EVENT_LAYERS} for _ in triggers
        ]
        for name in _EVENT_LAYERS:
            for item in layer[name]:
                k = min(range(len(triggers)), key=lambda j: abs(triggers[j][1].start - item[1].start))
                per[k][name].append(item)
        return [self._event(et, ts, sc, lay) for (et, ts, sc), lay in zip(triggers, per)]

    def _event(
        self, etype: str, trigger: Span, score: float, layer: dict[str, list[tuple[str, Span, float]]]
    ) -> Event:
        args = tuple(Argument(role=lab, span=sp) for lab, sp, _ in layer["main"])
        subs: dict[str, list[Argument]] = {}
        for lab, sp, _ in layer["sub"]:
            main, role = lab.split(".", 1)
            subs.setdefault(main, []).append(Argument(role=role, span=sp))
        comb_trig = [sp for lab, sp, _ in layer["comb"] if lab == "Combination.Trigger"]
        comb_drugs = [Argument(role="Drug", span=sp) for lab, sp, _ in layer["comb"] if lab == "Combination.Drug"]
        combos: tuple[Combination, ...] = ()
        if comb_drugs:
            combos = (Combination(trigger=comb_trig[0] if comb_trig else None, drugs=tuple(comb_drugs)),)
        attrs = cues_to_attributes([(lab, sp) for lab, sp, _ in layer["attr"]])
        return Event(
            event_type=etype,
            trigger=trigger,
            arguments=args,
            sub_arguments={k: tuple(v) for k, v in subs.items()},
            combinations=combos,
            attributes=attrs,
            score=round(score, 4),
            source=f"{MODEL_NAME}:{self.variant}",
        )

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

    # -- persistence --------------------------------------------------------------
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
        (path / "model.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
        apply_default_modes(path)  # safetensors writes 0600 files

    @classmethod
    def load(cls, path: str | Path) -> "TransformerExtractor":
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
                f"the transformer model needs '{exc.name}'; install it with: pip install 'clinex[neural]'",
                path=path,
            ) from None

        from clinex.pv.models.encoders import load_encoder, load_tokenizer

        path = Path(path)
        meta_path = path / "model.json"
        if not meta_path.is_file():
            raise ModelError("no model.json in the model directory", path=path)
        try:
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise ModelError(f"model.json is not JSON: {exc.msg}", path=meta_path, line=exc.lineno) from exc
        if meta.get("kind") != "transformer":
            raise ModelError(f"kind is '{meta.get('kind')}', not 'transformer'", path=meta_path, field="kind")
        if meta.get("format_version") != FORMAT_VERSION:
            raise ModelError(
                f"format version {meta.get('format_version')} is not {FORMAT_VERSION}",
                path=meta_path,
                field="format_version",
            )
        if meta.get("layers") != {k: list(v) for k, v in LAYERS.items()}:
            raise ModelError("tag layers differ from this clinex version", path=meta_path, field="layers")
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
        model.net_ = _build_net(enc, float(model.dropout))
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


# ----------------------------------------------------------------------------- scoring
def _norm(text: str) -> str:
    """PHEE-style normalisation: lower case, no punctuation, no articles (§4.2)."""
    import re

    words = re.sub(r"[^\w\s]", " ", text.lower()).split()
    return " ".join(w for w in words if w not in ("a", "an", "the"))


def _check_number(model: Any, key: str, kind: type, optional: bool = False) -> None:
    """Coerce parameter ``key`` of ``model`` to ``kind`` (int or float) or raise ModelError."""
    value = getattr(model, key)
    if value is None and optional:
        return
    try:
        if isinstance(value, bool) or (kind is int and float(value) != int(value)):
            raise ValueError
        setattr(model, key, kind(value))
    except (TypeError, ValueError):
        what = "an integer" if kind is int else "a number"
        raise ModelError(f"{key} must be {what}{' or null' if optional else ''}; got {value!r}") from None


def quick_scores(gold: Sequence[SentenceEvents], pred: Sequence[Sequence[Event]]) -> dict[str, float]:
    """Dev scores used for early stopping: the reported EM F1 rows plus attributes.

    ``trigger``, ``main`` and ``sub`` are the classification EM F1 rows of
    :func:`clinex.pv.evaluate.score` (``trigger.classification.f1``,
    ``arguments.classification.{main,sub}.em_f1``: per event type, one string per
    fragment, micro-averaged), so the epoch kept is the one with the best reported
    scores. ``attr`` is the micro EM F1 over (attribute, value, normalised cue)
    triples, which also checks the severity value.

    Parameters
    ----------
    gold : sequence of SentenceEvents
        Gold sentences.
    pred : sequence of sequence of Event
        Predicted events, one list per gold sentence, in the same order.

    Returns
    -------
    dict
        ``trigger``, ``main``, ``sub``, ``attr`` F1 in [0, 1] and ``selection`` (the
        mean of the first three).

    References
    ----------
    Sun et al., PHEE, EMNLP 2022, §4.2 (EM F1, normalisation).
    """
    from clinex.pv.evaluate import flatten, score

    preds = [SentenceEvents(id=s.id, text=s.text, events=tuple(p)) for s, p in zip(gold, pred)]
    flat = flatten(score(list(gold), preds))
    out = {
        "trigger": flat["trigger.classification.f1"],
        "main": flat["arguments.classification.main.em_f1"],
        "sub": flat["arguments.classification.sub.em_f1"],
    }
    tp = n_gold = n_pred = 0
    for sent, events in zip(gold, pred):
        gc, pc = Counter(_attr_keys(sent.events)), Counter(_attr_keys(events))
        tp += sum((gc & pc).values())
        n_gold += sum(gc.values())
        n_pred += sum(pc.values())
    prec = tp / n_pred if n_pred else 0.0
    rec = tp / n_gold if n_gold else 0.0
    out["attr"] = 2 * prec * rec / (prec + rec) if prec + rec else 0.0
    out["selection"] = (out["trigger"] + out["main"] + out["sub"]) / 3
    return out


def _attr_keys(events: Sequence[Event]) -> list[tuple[str, ...]]:
    return [
        (a.name, str(a.value), _norm(a.cue.text) if a.cue else "") for ev in events for a in ev.attributes
    ]


# ----------------------------------------------------------------------------- entry
def train_transformer(
    train: list[SentenceEvents],
    dev: list[SentenceEvents],
    out: Path,
    *,
    encoder: str = "minilm",
    negatives: Sequence[Any] = (),
    target_recall: float = 0.98,
    command: str | None = None,
    log: Callable[[str], None] | None = None,
    **params: Any,
) -> TransformerExtractor:
    """Train a :class:`TransformerExtractor`, save it to ``out`` with a model card.

    Parameters
    ----------
    train, dev : list of SentenceEvents
        Gold training sentences and dev sentences (early stopping and reported scores).
    out : Path
        Model directory to write (``model.json``, ``encoder/``, ``heads.safetensors``,
        ``MODEL_CARD.md``); the best checkpoint so far is written after every
        improving epoch, so an interrupted run still leaves a usable model.
    encoder : str, default "minilm"
        ``"minilm"`` or a local Hugging Face directory.
    negatives : sequence of NegativeSentence, default ()
        Sentences without an ADE (:func:`clinex.io.ade_corpus.read_ade_negatives`),
        split by :func:`clinex.pv.gate.split_negatives`: the ``train`` part is mixed
        into training (see :meth:`TransformerExtractor.fit`), then a sentence gate
        is fitted and its ``event_threshold`` calibrated with the ``dev`` part and
        ``dev`` (:func:`clinex.pv.gate.add_gate`); the ``test`` part is not used.
    target_recall : float, default 0.98
        See :func:`clinex.pv.gate.fit_gate`.
    command : str, optional
        The command line to record in the model card (default: ``sys.argv``).
    log : callable, optional
        Progress lines sink.
    **params
        Any :class:`TransformerExtractor` parameter (``variant``, ``epochs``,
        ``max_minutes``, ``lr``, ...).

    Returns
    -------
    TransformerExtractor
        The fitted model (best dev epoch).

    Raises
    ------
    ModelError
        On bad parameters or a missing encoder.
    """
    model = TransformerExtractor(encoder, **params)
    out = Path(out)
    from clinex.pv.gate import add_gate, negatives_as_sentences, split_negatives

    mixed = negatives_as_sentences(split_negatives(negatives)["train"]) if negatives else []
    model.fit(train, dev, negatives=mixed, out=out, log=log)
    pred = getattr(model, "dev_predictions_", None)
    if negatives:
        add_gate(model, train, dev, negatives, target_recall=target_recall)
        pred = model.predict([s.text for s in dev])
    model.save(out)
    dev_scores: dict[str, Any] = {}
    if dev:
        dev_scores = evaluate_model(model, dev, pred)
    write_model_card(model, out, train=train, dev=dev, dev_scores=dev_scores, command=command)
    return model


def evaluate_model(
    model: TransformerExtractor,
    dev: Sequence[SentenceEvents],
    pred: Sequence[Sequence[Event]] | None = None,
) -> dict[str, Any]:
    """Dev scores with the project scorer (:mod:`clinex.pv.evaluate`) when installed.

    Parameters
    ----------
    model : TransformerExtractor
    dev : sequence of SentenceEvents
        Gold sentences.
    pred : sequence of list of Event, optional
        The model's predictions for ``dev`` when already computed (e.g. the best
        epoch's, kept by :meth:`TransformerExtractor.fit`); predicted here otherwise.

    Returns
    -------
    dict
        The flattened scorer output, or the :func:`quick_scores` fallback under
        ``"quick"`` when the scorer cannot be imported.
    """
    if pred is None:
        pred = model.predict([s.text for s in dev])
    result: dict[str, Any] = {"quick": quick_scores(dev, pred)}
    try:
        from clinex.pv.evaluate import flatten, score
    except ImportError:
        return result
    preds = [SentenceEvents(id=s.id, text=s.text, events=tuple(p)) for s, p in zip(dev, pred)]
    result["scorer"] = flatten(score(list(dev), preds))
    return result


def write_model_card(
    model: TransformerExtractor,
    out: Path,
    *,
    train: Sequence[SentenceEvents],
    dev: Sequence[SentenceEvents] | None,
    dev_scores: dict[str, Any],
    command: str | None = None,
) -> Path:
    """Write ``MODEL_CARD.md`` (data, command, hyper-parameters, dev scores, time)."""
    import torch

    out = Path(out)
    cmd = command or " ".join(os.path.basename(a) if i == 0 else a for i, a in enumerate(sys.argv))
    n_events = sum(len(s.events) for s in train)
    lines = [
        f"# {MODEL_NAME} ({model.variant})",
        "",
        "Trigger-conditioned transformer tagger for PHEE events; see clinex.pv.models.transformer.",
        "",
        "## Data",
        f"- train: {len(train)} sentences, {n_events} events",
        (
            f"- dev: {len(dev)} sentences, {sum(len(s.events) for s in dev)} events (early stopping and scores)"
            if dev
            else "- dev: none (no early stopping; the last epoch is kept, no dev scores)"
        ),
        "",
        "## Command",
        f"    {cmd}",
        "",
        "## Hyper-parameters",
        "```json",
        json.dumps(model.get_params(), indent=2),
        "```",
        "",
        "## Training",
        f"- time: {getattr(model, 'train_minutes_', float('nan')):.1f} min; "
        + (f"best epoch {getattr(model, 'best_epoch_', None)}" if dev else "no dev split: the last epoch is kept"),
        f"- hardware: {platform.machine()}, torch {torch.__version__}, "
        f"{'CUDA ' + torch.cuda.get_device_name(0) if torch.cuda.is_available() else f'CPU, {torch.get_num_threads()} threads'}",
        "",
        "| epoch | loss | dev trigger | dev main | dev sub | dev attr | minutes |"
        if dev
        else "| epoch | loss | minutes |",
        "| --- | --- | --- | --- | --- | --- | --- |" if dev else "| --- | --- | --- |",
    ]
    for rec in getattr(model, "history_", []):
        d = rec.get("dev", {})
        dev_cells = "".join(f" {d.get(k, float('nan')):.4f} |" for k in ("trigger", "main", "sub", "attr"))
        lines.append(
            f"| {rec['epoch']}{'' if rec.get('complete', True) else ' (partial)'} | {rec['loss']:.4f} |"
            + (dev_cells if dev else "")
            + f" {rec['minutes']:.1f} |"
        )
    if dev:
        lines += ["", "## Dev scores (best epoch)", "```json", json.dumps(dev_scores, indent=2), "```"]
    lines.append("")
    card = out / "MODEL_CARD.md"
    card.write_text("\n".join(lines), encoding="utf-8")
    return card
