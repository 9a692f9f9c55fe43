"""The sentence-level event decision: does a sentence hold any ADE / PTE event at all?

PHEE holds only sentences that contain an event (Sun et al., EMNLP 2022, §3), so a
model trained on it alone has never seen a sentence without one; most sentences of a
real abstract hold none. Both model kinds are therefore trained with sentences of the
ADE corpus that hold no adverse drug effect (Gurulingappa et al., J Biomed Inform
2012; :mod:`clinex.io.ade_corpus`) mixed in as sentences with no trigger, and both
decide a sentence the same way:

* the **event probability** of a sentence is the largest probability, over its
  tokens, that the token belongs to a trigger (the trigger layer's marginal,
  ``1 - P(O)``, for the transformer; the sum of the trigger labels' CRF marginals for
  the CRF);
* a sentence whose event probability is below the model's saved parameter
  ``event_threshold`` gets no event (not even a forced trigger); at or above it, the
  model's events stand (and the one-token trigger fallback may fire).

``event_threshold`` is calibrated after training by :func:`calibrate_threshold` on
a dev part: the largest threshold that keeps at least ``target_recall`` of the dev
sentences holding a gold event. The negatives are split by PubMed id
(:func:`negative_part`) so that no abstract is in two parts and the ``test`` part is
never trained or calibrated on.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from clinex.errors import ModelError
from clinex.io.ade_corpus import NegativeSentence
from clinex.metrics.classification import BinaryCounts
from clinex.pv.types import SentenceEvents

__all__ = [
    "NEGATIVE_PARTS",
    "negative_part",
    "split_negatives",
    "negatives_as_sentences",
    "calibrate_threshold",
    "sentence_counts",
    "event_share",
    "GATE_FEATURES",
    "SentenceGate",
    "apply_gate",
    "fit_gate",
    "add_gate",
    "gate_report",
]

#: Percent ranges of ``sha1(pmid) mod 100``: ``test`` 0-19 (held out), ``dev`` 20-34
#: (calibration and early stopping), ``train`` 35-99.
NEGATIVE_PARTS: dict[str, range] = {"test": range(0, 20), "dev": range(20, 35), "train": range(35, 100)}


def negative_part(pmid: str) -> str:
    """The part (``train`` / ``dev`` / ``test``) a negative sentence's abstract falls in.

    Parameters
    ----------
    pmid : str
        PubMed id of the abstract (or any stable id).

    Returns
    -------
    str
        See :data:`NEGATIVE_PARTS`; deterministic (SHA-1 of the id), the same on
        every machine.
    """
    bucket = int(hashlib.sha1(pmid.encode("utf-8")).hexdigest(), 16) % 100
    return next(name for name, rng in NEGATIVE_PARTS.items() if bucket in rng)


def split_negatives(negatives: Sequence[NegativeSentence]) -> dict[str, list[NegativeSentence]]:
    """Negative sentences by part (:func:`negative_part` of their PubMed id).

    Returns
    -------
    dict[str, list of NegativeSentence]
        Keys ``train``, ``dev``, ``test``, each in file order (possibly empty).
    """
    out: dict[str, list[NegativeSentence]] = {name: [] for name in NEGATIVE_PARTS}
    for neg in negatives:
        out[negative_part(neg.pmid)].append(neg)
    return out


def negatives_as_sentences(negatives: Sequence[NegativeSentence]) -> list[SentenceEvents]:
    """Negative sentences as :class:`SentenceEvents` with no event (training items).

    Ids are ``<pmid>_neg<line>``.
    """
    return [SentenceEvents(id=f"{n.pmid}_neg{n.line}", text=n.text) for n in negatives]


def calibrate_threshold(positive_probs: Sequence[float], target_recall: float) -> float:
    """The largest ``event_threshold`` that keeps ``target_recall`` of the positives.

    Parameters
    ----------
    positive_probs : sequence of float
        Event probabilities of dev sentences that hold a gold event, in [0, 1].
    target_recall : float
        In (0, 1]: the share of those sentences that must keep ``p >= threshold``.

    Returns
    -------
    float
        A threshold in [0, 1], rounded down to 4 decimals (so that the saved value
        still keeps the positives it was chosen for); 0.0 with no positives.

    Raises
    ------
    ModelError
        If ``target_recall`` is outside (0, 1].
    """
    if not 0.0 < target_recall <= 1.0:
        raise ModelError(f"target_recall must be in (0, 1]; got {target_recall}")
    probs = sorted((float(p) for p in positive_probs), reverse=True)
    if not probs:
        return 0.0
    keep = max(1, math.ceil(target_recall * len(probs) - 1e-9))
    return math.floor(probs[keep - 1] * 10_000) / 10_000


def _has(item: SentenceEvents, event_type: str | None) -> bool:
    return any(event_type is None or ev.event_type == event_type for ev in item.events)


def sentence_counts(
    gold: Sequence[SentenceEvents], pred: Sequence[SentenceEvents], event_type: str | None = "Adverse_event"
) -> BinaryCounts:
    """Sentence-level confusion counts: does a sentence hold an event of ``event_type``?

    Parameters
    ----------
    gold, pred : sequence of SentenceEvents
        The same sentences in the same order (gold negatives have no events).
    event_type : str or None, default "Adverse_event"
        The event type asked about; None: any event.

    Returns
    -------
    BinaryCounts
        ``precision``, ``recall``, ``f1`` as properties.

    Raises
    ------
    ModelError
        If the two sequences differ in length.
    """
    if len(gold) != len(pred):
        raise ModelError(f"{len(gold)} gold sentences but {len(pred)} predicted")
    tp = fp = fn = tn = 0
    for g, p in zip(gold, pred):
        gh, ph = _has(g, event_type), _has(p, event_type)
        tp += gh and ph
        fp += ph and not gh
        fn += gh and not ph
        tn += not gh and not ph
    return BinaryCounts(tp=tp, fp=fp, fn=fn, tn=tn)


def event_share(pred: Sequence[SentenceEvents], event_type: str | None = "Adverse_event") -> float:
    """The share of sentences given at least one event of ``event_type`` (0.0 for none)."""
    return sum(_has(p, event_type) for p in pred) / len(pred) if pred else 0.0


# ----------------------------------------------------------------------------- the gate
#: Names of the stacked features, in order (see :class:`SentenceGate`).
GATE_FEATURES: tuple[str, ...] = (
    "text_logit",
    "any_event",
    "adverse_event",
    "treatment",
    "treatment_sub_argument",
    "effect",
    "subject",
    "max_trigger_probability",
    "model_event_probability",
    "gazetteer_drug",
)

_HASH_FEATURES = 2**18

#: Fewest negatives in each of the ``train`` and ``dev`` parts to fit and calibrate a gate
#: (a threshold calibrated against a handful of negatives says nothing).
MIN_PART = 20


@lru_cache(maxsize=1)
def _vectorizers() -> tuple:
    """The two stateless hashing vectorizers (built once per process)."""
    from sklearn.feature_extraction.text import HashingVectorizer

    return (
        HashingVectorizer(ngram_range=(1, 2), n_features=_HASH_FEATURES, alternate_sign=False, norm="l2"),
        HashingVectorizer(
            analyzer="char_wb", ngram_range=(3, 5), n_features=_HASH_FEATURES, alternate_sign=False, norm="l2"
        ),
    )


def _text_matrix(texts: Sequence[str]) -> Any:
    from scipy.sparse import hstack

    return hstack([v.transform(list(texts)) for v in _vectorizers()]).tocsr()


class SentenceGate:
    """A sentence-level "holds an event" classifier stacked on a model's own output.

    Two logistic regressions (scikit-learn, ``class_weight="balanced"``):

    1. a **text model** over hashed word 1-2-grams and character 3-5-grams
       (``HashingVectorizer``, 2**18 features each, L2-normalised; stateless, so
       only the weights are saved), fitted on the training sentences with events
       against the ``train`` part of the negatives;
    2. a **stack** over :data:`GATE_FEATURES`: the text model's logit and what the
       event model itself predicted for the sentence (any event, an ADE, a
       Treatment / Effect / Subject argument, a Treatment sub-argument, the largest
       trigger probability, the model's own event probability, a drug-gazetteer
       hit), fitted on a calibration set (dev sentences with events against the
       ``dev`` part of the negatives), so that it learns how far to trust the model.

    The stack's probability is the sentence's event probability; the model's
    ``event_threshold`` (:func:`calibrate_threshold`) decides.

    Attributes
    ----------
    text_coef_ : numpy.ndarray, shape (2 * 2**18,)
    text_intercept_ : float
    stack_coef_ : numpy.ndarray, shape (len(GATE_FEATURES),)
    stack_intercept_ : float
    """

    def fit_text(self, positives: Sequence[str], negatives: Sequence[str], *, C: float = 4.0) -> "SentenceGate":
        """Fit the text model on sentences with (``positives``) and without events.

        Raises
        ------
        ModelError
            If either list is empty.
        """
        import numpy as np
        from sklearn.linear_model import LogisticRegression

        if not positives or not negatives:
            raise ModelError("the sentence gate needs training sentences with and without events")
        X = _text_matrix(list(positives) + list(negatives))
        y = np.r_[np.ones(len(positives)), np.zeros(len(negatives))]
        clf = LogisticRegression(C=C, max_iter=3000, class_weight="balanced").fit(X, y)
        self.text_coef_ = clf.coef_[0].astype("float32")
        self.text_intercept_ = float(clf.intercept_[0])
        return self

    def text_logits(self, texts: Sequence[str]) -> Any:
        """Text-model logits, shape ``(len(texts),)``.

        Computed by :func:`clinex.pv.hashed_text.hashed_logits` (the same hashed
        features as :func:`_text_matrix`, without importing scikit-learn at run time).
        """
        import numpy as np

        from clinex.pv.hashed_text import hashed_logits

        return np.array(hashed_logits(texts, self.text_coef_, self.text_intercept_, _HASH_FEATURES), dtype="float64")

    def features(self, texts: Sequence[str], detailed: Sequence[tuple[Sequence[Any], float | None]]) -> Any:
        """The stacked features (:data:`GATE_FEATURES`), shape ``(len(texts), 10)``.

        Parameters
        ----------
        texts : sequence of str
        detailed : sequence of (events, float or None)
            The model's events and own event probability per text (ungated).
        """
        import numpy as np

        from clinex.pv.features import has_gazetteer_drug

        logits = self.text_logits(texts) if texts else np.zeros(0)
        rows = []
        for text, (events, p_model), logit in zip(texts, detailed, logits):
            rows.append(
                [
                    float(logit),
                    float(bool(events)),
                    float(any(e.event_type == "Adverse_event" for e in events)),
                    float(any(e.main("Treatment") for e in events)),
                    float(any(e.sub_arguments.get("Treatment") for e in events)),
                    float(any(e.main("Effect") for e in events)),
                    float(any(e.main("Subject") for e in events)),
                    max((float(e.score or 0.0) for e in events), default=0.0),
                    float(p_model or 0.0),
                    float(has_gazetteer_drug(text)),
                ]
            )
        return np.array(rows, dtype="float64").reshape(len(rows), len(GATE_FEATURES))

    def fit_stack(self, features: Any, labels: Sequence[bool], *, C: float = 1.0) -> "SentenceGate":
        """Fit the stack on calibration features (:meth:`features`) and gold labels."""
        import numpy as np
        from sklearn.linear_model import LogisticRegression

        y = np.asarray(labels, dtype=int)
        if len(set(y.tolist())) < 2:
            raise ModelError("the gate's calibration set needs sentences with and without events")
        clf = LogisticRegression(C=C, max_iter=3000, class_weight="balanced").fit(features, y)
        self.stack_coef_ = clf.coef_[0].astype("float64")
        self.stack_intercept_ = float(clf.intercept_[0])
        return self

    def probability(self, texts: Sequence[str], detailed: Sequence[tuple[Sequence[Any], float | None]]) -> list[float]:
        """Event probability of each text, in [0, 1] (4 decimals)."""
        import numpy as np

        if not texts:
            return []
        z = self.features(texts, detailed) @ self.stack_coef_ + self.stack_intercept_
        return [round(float(p), 4) for p in 1.0 / (1.0 + np.exp(-z))]

    # -- persistence ------------------------------------------------------------
    def save(self, folder: Path) -> dict[str, Any]:
        """Write ``gate.npz`` into ``folder``; return the ``model.json`` block describing it."""
        import numpy as np

        np.savez_compressed(
            folder / "gate.npz",
            text_coef=self.text_coef_,
            text_intercept=np.array([self.text_intercept_]),
            stack_coef=self.stack_coef_,
            stack_intercept=np.array([self.stack_intercept_]),
        )
        return {"file": "gate.npz", "features": list(GATE_FEATURES), "hash_features": _HASH_FEATURES}

    @classmethod
    def load(cls, folder: Path, meta: dict[str, Any]) -> "SentenceGate":
        """Read ``gate.npz`` described by the ``model.json`` block ``meta``.

        Raises
        ------
        ModelError
            If the file is missing or damaged, or was made for other features.
        """
        import numpy as np

        path = folder / str(meta.get("file", "gate.npz"))
        if meta.get("features") != list(GATE_FEATURES) or meta.get("hash_features") != _HASH_FEATURES:
            raise ModelError("the sentence gate was saved for other features", path=folder / "model.json", field="gate")
        try:
            with np.load(path, allow_pickle=False) as data:
                gate = cls()
                gate.text_coef_ = data["text_coef"].astype("float32")
                gate.text_intercept_ = float(data["text_intercept"][0])
                gate.stack_coef_ = data["stack_coef"].astype("float64")
                gate.stack_intercept_ = float(data["stack_intercept"][0])
        except (OSError, KeyError, ValueError) as exc:
            raise ModelError(f"cannot read the sentence gate ({type(exc).__name__})", path=path) from None
        if gate.text_coef_.shape != (2 * _HASH_FEATURES,) or gate.stack_coef_.shape != (len(GATE_FEATURES),):
            raise ModelError("the sentence gate's weights have the wrong shape", path=path)
        return gate


def apply_gate(
    gate: SentenceGate | None,
    threshold: float,
    texts: Sequence[str],
    detailed: Sequence[tuple[list[Any], float | None]],
) -> list[tuple[list[Any], float | None]]:
    """Decide each sentence: events kept when its event probability reaches ``threshold``.

    Parameters
    ----------
    gate : SentenceGate or None
        None: the model's own event probability decides.
    threshold : float
        The model's ``event_threshold``; 0 keeps every sentence's events.
    texts : sequence of str
    detailed : sequence of (list of Event, float or None)
        The model's ungated events and own event probability per text.

    Returns
    -------
    list of (list of Event, float or None)
        Events (empty below the threshold) and the deciding probability.
    """
    probs = gate.probability(texts, detailed) if gate is not None else [p for _, p in detailed]
    out = []
    for (events, _), p in zip(detailed, probs):
        keep = p is None or p >= threshold
        out.append((list(events) if keep else [], p))
    return out


def fit_gate(
    predict_detailed: Callable[[Sequence[str]], list[tuple[list[Any], float | None]]],
    train: Sequence[SentenceEvents],
    dev: Sequence[SentenceEvents],
    negatives: Sequence[NegativeSentence],
    *,
    target_recall: float = 0.98,
) -> tuple[SentenceGate, float, dict[str, Any]]:
    """Fit a :class:`SentenceGate` for a model and calibrate its threshold.

    Parameters
    ----------
    predict_detailed : callable
        The model's ungated ``predict_detailed`` (texts -> (events, p) pairs).
    train, dev : sequence of SentenceEvents
        PHEE training and dev sentences (gold).
    negatives : sequence of NegativeSentence
        All negatives; split by :func:`split_negatives`: ``train`` fits the text
        model, ``dev`` the stack and the threshold, ``test`` is not used.
    target_recall : float, default 0.98
        Share of the dev sentences that hold a gold event and to which the model
        gives an event that must keep it (:func:`calibrate_threshold`).

    Returns
    -------
    (SentenceGate, float, dict)
        The gate, the calibrated ``event_threshold`` and a calibration report:
        sizes, ``target_recall``, ``kept_share_at_threshold`` (of the dev sentences
        with a gold event to which the model gives an event, the share kept: at least
        the target), ``dev_recall_at_threshold`` (of all dev sentences with a gold
        event, the share that keeps a predicted event: below the target by the
        model's own misses) and ``dev_negative_share_at_threshold`` (dev-part
        negatives that keep any event).

    Raises
    ------
    ModelError
        If the negatives' train or dev part has fewer than :data:`MIN_PART` sentences.
    """
    parts = split_negatives(negatives)
    if len(parts["train"]) < MIN_PART or len(parts["dev"]) < MIN_PART:
        raise ModelError(
            f"the negatives need at least {MIN_PART} sentences in both their train and dev parts to fit and "
            f"calibrate a gate; got {len(parts['train'])} train, {len(parts['dev'])} dev, {len(parts['test'])} "
            "test (parts are 65 / 15 / 20 % of the PubMed ids, or of the line numbers of plain lines: "
            "clinex.pv.gate.NEGATIVE_PARTS)"
        )
    positives = [s.text for s in train if s.events]
    gate = SentenceGate().fit_text(positives, [n.text for n in parts["train"]])
    dev_pos = [s for s in dev if s.events]
    texts = [s.text for s in dev_pos] + [n.text for n in parts["dev"]]
    detailed = []
    for b in range(0, len(texts), 256):
        detailed += predict_detailed(texts[b : b + 256])
    labels = [True] * len(dev_pos) + [False] * len(parts["dev"])
    gate.fit_stack(gate.features(texts, detailed), labels)
    probs = gate.probability(texts, detailed)
    kept = [p for p, (events, _), y in zip(probs, detailed, labels) if y and events]
    threshold = calibrate_threshold(kept, target_recall)
    n_pos = len(dev_pos)
    report = {
        "target_recall": target_recall,
        "dev_sentences": n_pos,
        "dev_negatives": len(parts["dev"]),
        "train_negatives": len(parts["train"]),
        # the calibrated share (>= target_recall): of the dev sentences with an event that
        # the model gives an event, those kept
        "kept_share_at_threshold": round(sum(p >= threshold for p in kept) / max(1, len(kept)), 4),
        # of all dev sentences with an event, those that keep a predicted event
        "dev_recall_at_threshold": round(
            sum(bool(ev) and p >= threshold for p, (ev, _) in zip(probs[:n_pos], detailed[:n_pos])) / max(1, n_pos), 4
        ),
        "dev_negative_share_at_threshold": round(
            sum(bool(ev) and p >= threshold for p, (ev, _) in zip(probs[n_pos:], detailed[n_pos:]))
            / max(1, len(parts["dev"])),
            4,
        ),
    }
    return gate, threshold, report


def add_gate(
    model: Any,
    train: Sequence[SentenceEvents],
    dev: Sequence[SentenceEvents] | None,
    negatives: Sequence[NegativeSentence],
    *,
    target_recall: float = 0.98,
) -> dict[str, Any]:
    """Fit a sentence gate for a loaded model of any kind and set it on the model.

    Sets ``model.gate_``, ``model.event_threshold`` and ``model.calibration_``
    (saved by the model's ``save``). The model's events are unchanged; only the
    sentence-level decision is added.

    Parameters
    ----------
    model : clinex.pv.steps.SentenceModel
        A model that tags sentences (``predict_ungated``); not one that reads whole
        records (``reads_whole_records``: the ``llm`` kind).
    train, dev, negatives, target_recall
        See :func:`fit_gate`.

    Returns
    -------
    dict
        The calibration report (also ``model.calibration_``).

    Raises
    ------
    ModelError
        Without dev sentences, or if the model reads whole records.
    """
    if not dev:
        raise ModelError("a sentence gate needs dev sentences to calibrate on (give --dev)")
    if model.reads_whole_records:
        raise ModelError(f"{type(model).__name__} reads whole records, not sentences; it cannot take a sentence gate")
    gate, threshold, report = fit_gate(model.predict_ungated, train, dev, negatives, target_recall=target_recall)
    model.gate_, model.event_threshold, model.calibration_ = gate, threshold, {**report, "event_threshold": threshold}
    return model.calibration_


def gate_report(
    gold_dev: Sequence[SentenceEvents],
    pred_dev: Sequence[SentenceEvents],
    pred_negatives: Sequence[SentenceEvents],
) -> dict[str, float | int]:
    """The sentence-level figures of issue 9 for one model.

    Parameters
    ----------
    gold_dev, pred_dev : sequence of SentenceEvents
        PHEE dev sentences (gold) and the model's predictions for them, same order.
    pred_negatives : sequence of SentenceEvents
        The model's predictions for held-out negatives (the ``test`` part of
        :func:`split_negatives`): sentences that hold no ADE.

    Returns
    -------
    dict
        ``negatives_ade_share`` (share of negatives given an Adverse_event),
        ``negatives_event_share`` (any event), ``negatives``; and on the mix of the
        negatives with PHEE dev, sentence-level ADE ``mix_ade_precision``,
        ``mix_ade_recall``, ``mix_ade_f1`` with ``mix_ade_tp`` / ``fp`` / ``fn`` /
        ``tn`` (a sentence is positive when it holds at least one Adverse_event;
        the recall is the PHEE dev sentence-level ADE recall).
    """
    negs = [SentenceEvents(id=p.id, text=p.text) for p in pred_negatives]
    counts = sentence_counts(list(gold_dev) + negs, list(pred_dev) + list(pred_negatives))
    return {
        "negatives": len(pred_negatives),
        "negatives_ade_share": round(event_share(pred_negatives), 4),
        "negatives_event_share": round(event_share(pred_negatives, None), 4),
        "mix_ade_precision": round(counts.precision, 4),
        "mix_ade_recall": round(counts.recall, 4),
        "mix_ade_f1": round(counts.f1, 4),
        "mix_ade_tp": counts.tp,
        "mix_ade_fp": counts.fp,
        "mix_ade_fn": counts.fn,
        "mix_ade_tn": counts.tn,
    }
