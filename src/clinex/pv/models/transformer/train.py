"""The transformer extractor's training loop: items, frozen-block cache, fine-tuning.

:class:`TrainingMixin` gives :class:`~clinex.pv.models.transformer.TransformerExtractor`
its :meth:`~TrainingMixin.fit`; :func:`quick_scores` is the dev score that picks the
epoch kept. Frozen-block outputs are shared by the fits of one process through a
cache bounded in bytes and entries (:data:`HIDDEN_CACHE_BYTES`,
:data:`HIDDEN_CACHE_ITEMS`; least recently used entries go first).
"""

from __future__ import annotations

import copy
import json
import math
import random
import re
import time
from collections import Counter, OrderedDict
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self

from clinex.errors import ModelError
from clinex.metrics.spans import prf
from clinex.pv.attributes import CueLexiconDetector
from clinex.pv.models.tagging import EVENT_LAYERS, IGNORE, LAYERS, encode_tags, event_layer_spans
from clinex.pv.models.transformer.network import build_net, layer_stack
from clinex.pv.types import Event, SentenceEvents
from clinex.text import Span

__all__ = ["TrainingMixin", "quick_scores", "HIDDEN_CACHE_BYTES", "HIDDEN_CACHE_ITEMS"]

#: Most bytes of frozen-block outputs kept for later fits of the same process (2 GiB:
#: the PHEE train, dev and ADE-negative sentences through MiniLM take about 1.2 GiB).
HIDDEN_CACHE_BYTES = 2 * 1024**3
#: Most entries (sentences) of that cache.
HIDDEN_CACHE_ITEMS = 100_000


class _BoundedCache:
    """Least-recently-used map of tensors, bounded in total bytes and in entries.

    Parameters
    ----------
    max_bytes, max_items : int
        Bounds; an entry larger than ``max_bytes`` on its own is not kept.
    """

    def __init__(self, max_bytes: int, max_items: int) -> None:
        self.max_bytes = max_bytes
        self.max_items = max_items
        self._data: OrderedDict[Hashable, Any] = OrderedDict()
        self.nbytes = 0

    @staticmethod
    def _size(value: Any) -> int:
        return int(value.element_size() * value.nelement())

    def __len__(self) -> int:
        return len(self._data)

    def get(self, key: Hashable) -> Any:
        """The value of ``key`` (now the most recently used), or None."""
        value = self._data.get(key)
        if value is not None:
            self._data.move_to_end(key)
        return value

    def put(self, key: Hashable, value: Any) -> None:
        """Store ``value``, dropping the least recently used entries past the bounds."""
        old = self._data.pop(key, None)
        if old is not None:
            self.nbytes -= self._size(old)
        size = self._size(value)
        if size > self.max_bytes or self.max_items < 1:
            return
        self._data[key] = value
        self.nbytes += size
        while self.nbytes > self.max_bytes or len(self._data) > self.max_items:
            _, dropped = self._data.popitem(last=False)
            self.nbytes -= self._size(dropped)

    def clear(self) -> None:
        self._data.clear()
        self.nbytes = 0


#: Frozen-block outputs shared by the fits of one process (variants compared on the
#: same encoder compute them once): (encoder dir, depth, max_length, text) -> tensor.
_HIDDEN_CACHE = _BoundedCache(HIDDEN_CACHE_BYTES, HIDDEN_CACHE_ITEMS)


@dataclass
class _FitData:
    """What one :meth:`TrainingMixin.fit` trains and scores on: training and negative items
    (``pool``: both, in that order), the negatives drawn per epoch, the cached depth and
    the dev texts and items."""

    items: list[dict[str, Any]]
    neg_items: list[dict[str, Any]]
    n_neg: int
    depth: int
    dev_texts: list[str]
    dev_toks: list[dict[str, Any]]

    @property
    def pool(self) -> list[dict[str, Any]]:
        """Training items, then negatives."""
        return self.items + self.neg_items

    def total_steps(self, bsz: int, epochs: int) -> int:
        """Optimiser steps of the whole run (for the learning-rate schedule)."""
        return math.ceil((len(self.items) + self.n_neg) / bsz) * epochs

    def batches(self, bsz: int, rng: random.Random) -> list[list[int]]:
        """One epoch's batches of indices into :attr:`pool`: every item and ``n_neg`` drawn
        negatives, shuffled; chunks of 50 batches sorted by length (less padding)."""
        pool = self.pool
        order = list(range(len(self.items)))
        order += [len(self.items) + k for k in rng.sample(range(len(self.neg_items)), self.n_neg)]
        rng.shuffle(order)
        batches = []
        for c in range(0, len(order), bsz * 50):
            part = sorted(order[c : c + bsz * 50], key=lambda i: len(pool[i]["input_ids"]))
            batches += [part[b : b + bsz] for b in range(0, len(part), bsz)]
        rng.shuffle(batches)
        return batches


@dataclass
class _FitRun:
    """The state of one :meth:`TrainingMixin.fit` across epochs: clock, device, log, the
    shuffling RNG, time budget and early stopping (best score, its weights, bad epochs)."""

    start: float
    device: Any
    say: Callable[[str], None]
    rng: random.Random
    budget: float | None = None
    out_of_time: bool = False
    best: float = -1.0
    best_state: Any = None
    bad: int = 0

    @staticmethod
    def ce(logits: Any, gold: Any) -> Any:
        """Summed cross-entropy over the gold tags that count, divided by their number (None without one)."""
        from torch import nn

        count = int((gold != IGNORE).sum())
        if not count:
            return None
        loss_fn = nn.CrossEntropyLoss(ignore_index=IGNORE, reduction="sum")
        return loss_fn(logits.float().reshape(-1, logits.shape[-1]), gold.reshape(-1)) / count


class TrainingMixin:
    """Training of :class:`~clinex.pv.models.transformer.TransformerExtractor` (:meth:`fit`).

    Uses the estimator's parameters and input pipeline (``_tokenize``, ``_marker``,
    ``_collate``, ``_max_tokens``, ...) and, for dev scores and checkpoints, its
    ``_predict`` and ``save``.
    """

    def _items(self, sentences: Sequence[SentenceEvents]) -> list[dict[str, Any]]:
        """One item per sentence: token ids, trigger tags and per-event (marker, tags)."""
        toks = self._tokenize([s.text for s in sentences])
        items = []
        for sent, tok in zip(sentences, toks):
            offs = tok["offsets"]
            trig = encode_tags(offs, [(ev.event_type, ev.trigger) for ev in sent.events], LAYERS["trigger"])
            events = []
            if self.variant == "joint":
                union: dict[str, list[tuple[str, Span]]] = {n: [] for n in EVENT_LAYERS}
                for ev in sent.events:
                    for name, spans in event_layer_spans(ev).items():
                        union[name].extend(spans)
                events.append(
                    ([0] * len(offs), {n: encode_tags(offs, union[n], LAYERS[n]) for n in EVENT_LAYERS})
                )
            else:
                for ev in sent.events:
                    spans = event_layer_spans(ev)
                    events.append(
                        (
                            self._marker(offs, ev.trigger),
                            {n: encode_tags(offs, spans[n], LAYERS[n]) for n in EVENT_LAYERS},
                        )
                    )
            items.append({"input_ids": tok["input_ids"], "trigger": trig, "events": events})
        return items


    def _freeze(self) -> int:
        """Freeze embeddings and the first blocks; return the cache depth (0 = no cache)."""
        k = int(self.freeze_layers)
        if k <= 0:
            return 0
        enc = self.net_.encoder
        emb = getattr(enc, "embeddings", None) or enc.get_input_embeddings()
        for p in emb.parameters():
            p.requires_grad = False
        stack = layer_stack(enc)
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
        # this fit's states are held here (the shared cache may drop old ones when full)
        found = {k: v for k in dict.fromkeys(keys) if (v := _HIDDEN_CACHE.get(k)) is not None}
        todo = [i for i, k in enumerate(keys) if k not in found]
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
                    found[keys[i]] = hs[r, : len(items[i]["input_ids"])].to("cpu").clone()
                    _HIDDEN_CACHE.put(keys[i], found[keys[i]])
                if n % 10 == 0:
                    say(f"cached {b + len(part)}/{len(todo)} sentences")
        for it, key in zip(items, keys):
            it["cache"] = found[key]

    def fit(
        self,
        train: Sequence[SentenceEvents],
        dev: Sequence[SentenceEvents] | None = None,
        *,
        negatives: Sequence[SentenceEvents] = (),
        out: Path | None = None,
        log: Callable[[str], None] | None = None,
    ) -> Self:
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
        run = _FitRun(start=time.monotonic(), device=device, say=say, rng=random.Random(self.seed))
        self._load_network(train, device)
        data = self._fit_data(train, dev, negatives, run)
        opt, sched = self._optimizer(data.total_steps(int(self.batch_size), int(self.epochs)))
        run.budget = None if self.max_minutes is None else float(self.max_minutes) * 60.0
        self.history_: list[dict[str, Any]] = []
        self.best_epoch_: int | None = None
        for epoch in range(1, int(self.epochs) + 1):
            total_loss, n_steps = self._train_epoch(epoch, data, opt, sched, run)
            record: dict[str, Any] = {
                "epoch": epoch,
                "loss": total_loss / max(1, n_steps),
                "steps": n_steps,
                "complete": not run.out_of_time,
            }
            if dev and n_steps:
                record["dev"] = self._dev_epoch(epoch, dev, data, run, out)
            record["minutes"] = (time.monotonic() - run.start) / 60
            self.history_.append(record)
            say(json.dumps(record))
            if run.out_of_time or (dev and run.bad >= int(self.patience)):
                break
        for it in data.pool + data.dev_toks:
            it.pop("cache", None)
        if not any(rec.get("steps") for rec in self.history_):
            raise ModelError(
                f"training stopped before its first step (max_minutes={self.max_minutes} was used up by "
                "loading and caching); raise max_minutes"
            )
        if run.best_state is not None:
            self.net_.load_state_dict(run.best_state)
        self.train_minutes_ = (time.monotonic() - run.start) / 60
        self.net_.eval()
        return self

    def _load_network(self, train: Sequence[SentenceEvents], device: Any) -> None:
        """Load the tokenizer and encoder, build the network (heads from ``init_heads`` if
        given) on ``device``, and fit the attribute lexicon when one is used."""
        from clinex.pv.models.encoders import load_encoder, load_tokenizer, resolve_encoder

        path = resolve_encoder(self.encoder)
        self.encoder_path_ = path
        if self._lexicon_names():
            self.attribute_lexicon_ = CueLexiconDetector().fit(train)
        self.tokenizer_ = load_tokenizer(path)
        encoder_model = load_encoder(path)
        self._check_max_length(encoder_model)
        self.net_ = build_net(encoder_model, float(self.dropout))
        if self.init_heads:
            self._load_heads(Path(self.init_heads))
        self.net_.to(device)

    def _fit_data(self, train: Sequence[SentenceEvents], dev: Sequence[SentenceEvents] | None,
                  negatives: Sequence[SentenceEvents], run: _FitRun) -> _FitData:
        """The tokenised training, negative and dev items, frozen blocks' outputs cached on them."""
        items = self._items(train)
        # negatives supervise the trigger layer only (all O): their drugs and effects
        # are not arguments of an event, but would be the same words in PHEE
        neg_items = [{**it, "events": []} for it in self._items(negatives)] if negatives else []
        depth = self._freeze()
        dev_texts = [s.text for s in dev] if dev else []
        dev_toks = self._tokenize(dev_texts) if dev else []
        if depth:
            self._cache(items, [s.text for s in train], depth, run.device, run.say)
            if neg_items:
                self._cache(neg_items, [s.text for s in negatives], depth, run.device, run.say)
            if dev:
                self._cache(dev_toks, dev_texts, depth, run.device, run.say)
        run.say(
            f"{len(train)} sentences, {sum(len(i['events']) for i in items)} event items; "
            f"device {run.device}; cached blocks {depth}"
        )
        n_neg = min(len(neg_items), int(round(float(self.negative_ratio) * len(items))))
        return _FitData(items, neg_items, n_neg, depth, dev_texts, dev_toks)

    def _optimizer(self, total: int) -> tuple[Any, Any]:
        """AdamW (encoder ``lr``, heads ``head_lr``) and its linear warm-up and decay schedule over ``total`` steps."""
        import torch

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

        return opt, torch.optim.lr_scheduler.LambdaLR(opt, factor)

    def _train_epoch(self, epoch: int, data: _FitData, opt: Any, sched: Any, run: _FitRun) -> tuple[float, int]:
        """One pass over the shuffled batches; the summed loss and the steps taken (stops
        early, setting ``run.out_of_time``, when ``max_minutes`` is used up)."""
        import torch

        self.net_.train()
        batches = data.batches(int(self.batch_size), run.rng)
        pool = data.pool
        total_loss, n_steps = 0.0, 0
        for step, idx in enumerate(batches):
            if run.budget is not None and time.monotonic() - run.start > run.budget:
                run.out_of_time = True
                break
            kept = self._batch_losses(self._collate([pool[i] for i in idx], run.device), data.depth, run)
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
                run.say(
                    f"epoch {epoch} step {step}/{len(batches)} loss {total_loss / n_steps:.4f} "
                    f"({(time.monotonic() - run.start) / 60:.1f} min)"
                )
        return total_loss, n_steps

    def _batch_losses(self, batch: dict[str, Any], depth: int, run: _FitRun) -> list[Any]:
        """The mean cross-entropy of each tag layer on one batch (layers without a gold tag left out)."""
        import torch

        device = run.device
        with torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=device.type == "cuda"):
            if "cache" in batch:
                h = self.net_.encode_top(batch["cache"], batch["attention_mask"], depth)
            else:
                h = self.net_.encode(batch["input_ids"], batch["attention_mask"])
            losses = [run.ce(self.net_.trigger_logits(h), batch["trigger"])]
            if batch["ev_marker"] is not None:
                rows = batch["ev_rows"]
                if self.variant == "conditioned":
                    he = self.net_.encode(
                        batch["input_ids"][rows], batch["attention_mask"][rows], batch["ev_marker"]
                    )
                else:
                    he = h[rows]
                ev = self.net_.event_logits(he, batch["ev_marker"])
                losses += [run.ce(ev[n], batch["ev_labels"][n]) for n in EVENT_LAYERS]
        return [x for x in losses if x is not None]

    def _dev_epoch(self, epoch: int, dev: Sequence[SentenceEvents], data: _FitData, run: _FitRun,
                   out: Path | None) -> dict[str, float]:
        """Score the epoch on ``dev`` (:func:`quick_scores`); keep (and save to ``out``) the
        weights of the best epoch so far, else count a bad epoch."""
        dev_pred = self._predict(data.dev_texts, data.dev_toks, data.depth)
        scores = quick_scores(dev, dev_pred)
        if scores["selection"] > run.best:
            run.best, run.bad = scores["selection"], 0
            self.dev_predictions_ = dev_pred
            run.best_state = copy.deepcopy(self.net_.state_dict())
            self.best_epoch_ = epoch
            self.train_minutes_ = (time.monotonic() - run.start) / 60
            if out is not None:
                self.save(out)
        else:
            run.bad += 1
        return scores


def _norm(text: str) -> str:
    """PHEE-style normalisation: lower case, no punctuation, no articles (§4.2).

    Kept apart from :func:`clinex.metrics.spans.normalize_answer` (the released PHEE
    scorer's): this one also drops non-ASCII punctuation (``[^\\w\\s]``, e.g. ``–``,
    ``’``) and keeps ``_``, so the ``attr`` score of :func:`quick_scores` (recorded in
    model cards and training histories) stays what it was.
    """
    words = re.sub(r"[^\w\s]", " ", text.lower()).split()
    return " ".join(w for w in words if w not in ("a", "an", "the"))


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
    out["attr"] = prf(tp, n_pred, n_gold)[2]
    out["selection"] = (out["trigger"] + out["main"] + out["sub"]) / 3
    return out


def _attr_keys(events: Sequence[Event]) -> list[tuple[str, ...]]:
    return [
        (a.name, str(a.value), _norm(a.cue.text) if a.cue else "") for ev in events for a in ev.attributes
    ]

