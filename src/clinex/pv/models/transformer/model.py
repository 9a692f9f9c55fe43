"""The transformer extractor's estimator: parameters, their checks, the shared input pipeline.

:class:`TransformerExtractor` puts together the training loop (:mod:`.train`),
prediction (:mod:`.predict`) and the model folder (:mod:`.persist`); see the package
docstring (:mod:`clinex.pv.models.transformer`) for the architecture.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from clinex.errors import ModelError
from clinex.pv.models.tagging import EVENT_LAYERS, IGNORE, MODEL_NAME
from clinex.pv.models.transformer.persist import PersistenceMixin
from clinex.pv.models.transformer.predict import PredictionMixin
from clinex.pv.models.transformer.train import TrainingMixin

__all__ = ["TransformerExtractor"]

_VARIANTS = ("pairwise", "conditioned", "joint")
_FALLBACK_GATES = ("drug", "evidence", "always")
#: Smallest ``max_length``: two special tokens plus a short clause (PHEE sentences average
#: about 30 words; a window this small only guards against nonsense values such as 1).
_MIN_MAX_LENGTH = 16


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


class TransformerExtractor(TrainingMixin, PredictionMixin, PersistenceMixin):
    """PHEE event extractor fine-tuning a local transformer encoder.

    Parameters
    ----------
    encoder : str or Path, default "minilm"
        ``"minilm"`` (offline all-MiniLM-L6-v2) or a Hugging Face directory (BioBERT ...).
    variant : {"pairwise", "conditioned", "joint"}, default "pairwise"
        How the event layers see the trigger (see the package docstring): one encoder
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
        ``torch.set_num_threads`` on CPU (None: :func:`clinex.threads.intra_op_threads`).
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
        negations, :mod:`clinex.pv.steps`). The event probability is
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
        modifiers (:mod:`clinex.pv.scope`, the pipeline's scope step: :mod:`clinex.pv.steps`)
        after the attribute sources above; False keeps them as they are.
    no_effect_min_prob : float, default 0.0
        An Adverse_event without an Effect argument is kept only if its trigger
        probability reaches this value (:func:`clinex.pv.effect_rules.keep_event`);
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

    Notes
    -----
    The methods come from three mixins, one job each:
    :class:`~clinex.pv.models.transformer.train.TrainingMixin` (:meth:`fit`),
    :class:`~clinex.pv.models.transformer.predict.PredictionMixin` (:meth:`predict`,
    :meth:`predict_detailed`, :meth:`predict_ungated`) and
    :class:`~clinex.pv.models.transformer.persist.PersistenceMixin` (:meth:`save`,
    :meth:`load`). This class holds the parameters, their checks and the input
    pipeline (tokenizing and batching) that training and prediction share.
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

        from clinex.threads import intra_op_threads

        # the one deliberate setting (clinex.threads) unless the model names its own count
        torch.set_num_threads(int(self.threads) if self.threads else intra_op_threads())
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


    # -- inputs (training and prediction) ------------------------------------------
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
            out["trigger"] = pad_rows([b["trigger"] for b in batch], IGNORE)
            rows = [i for i, b in enumerate(batch) for _ in b["events"]]
            evs = [e for b in batch for e in b["events"]]
            out["ev_rows"] = torch.tensor(rows, dtype=torch.long, device=device)
            out["ev_marker"] = pad_rows([m for m, _ in evs], 0) if evs else None
            out["ev_labels"] = {n: pad_rows([lab[n] for _, lab in evs], IGNORE) for n in EVENT_LAYERS} if evs else {}
        return out
