"""Binary classification measures from confusion counts: P, R, specificity, F1, AUC.

Conventions follow the n2c2 2018 Track 1 evaluation script: every ratio whose
denominator is zero is **0.0** (``zero_division=0.0``), F1 is 0.0 when
precision + recall is 0, and the AUC of hard labels is the mean of sensitivity
and specificity (the area under the ROC "curve" through the single operating
point). With real-valued scores the AUC is :func:`sklearn.metrics.roc_auc_score`.

References
----------
.. [1] n2c2 2018 Track 1 evaluation script ``track1_eval.py`` (class ``Measures``:
   zero-division rule, ``auc = (sensitivity + specificity) / 2``).
.. [2] Stubbs A, Filannino M, Soysal E, Henry S, Uzuner Ö. Cohort selection for
   clinical trials: n2c2 2018 shared task track 1. JAMIA 2019;26(11):1163-1171,
   section "Evaluation".
.. [3] Sokolova M, Lapalme G. A systematic analysis of performance measures for
   classification tasks. Inf Process Manag 2009;45(4):427-437 (the formulas).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

from pydantic import BaseModel, ConfigDict, Field

from clinex.metrics.counts import f1_from, prf  # f1_from: re-exported (public here too)

__all__ = ["BinaryCounts", "ClassScores", "confusion_counts", "class_scores", "safe_div", "f1_from", "roc_auc"]


def safe_div(num: float, den: float, zero_division: float = 0.0) -> float:
    """``num / den``, or ``zero_division`` when ``den == 0`` (official n2c2 rule: 0.0)."""
    return zero_division if den == 0 else num / den


class BinaryCounts(BaseModel):
    """Confusion counts for one class treated as positive.

    Attributes
    ----------
    tp, fp, fn, tn : int
        True positives (gold and prediction both the class), false positives
        (prediction only), false negatives (gold only), true negatives (neither).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    tp: int = Field(0, ge=0)
    fp: int = Field(0, ge=0)
    fn: int = Field(0, ge=0)
    tn: int = Field(0, ge=0)

    def __add__(self, other: "BinaryCounts") -> "BinaryCounts":
        return BinaryCounts(
            tp=self.tp + other.tp, fp=self.fp + other.fp, fn=self.fn + other.fn, tn=self.tn + other.tn
        )

    def swapped(self) -> "BinaryCounts":
        """The counts of the other class of a binary task (tp<->tn, fp<->fn)."""
        return BinaryCounts(tp=self.tn, fp=self.fn, fn=self.fp, tn=self.tp)

    @property
    def precision(self) -> float:
        """``tp / (tp + fp)``; 0.0 when nothing was predicted positive."""
        return prf(self.tp, self.fp, self.fn)[0]

    @property
    def recall(self) -> float:
        """``tp / (tp + fn)`` (= sensitivity); 0.0 when no gold positive."""
        return prf(self.tp, self.fp, self.fn)[1]

    @property
    def specificity(self) -> float:
        """``tn / (tn + fp)``; 0.0 when no gold negative."""
        return safe_div(self.tn, self.tn + self.fp)

    @property
    def f1(self) -> float:
        """``2PR / (P + R)``; 0.0 when ``P + R == 0`` (:func:`clinex.metrics.counts.prf`)."""
        return prf(self.tp, self.fp, self.fn)[2]

    @property
    def auc(self) -> float:
        """AUC of hard labels: ``(recall + specificity) / 2`` (official n2c2 rule)."""
        return (self.recall + self.specificity) / 2


class ClassScores(BaseModel):
    """Counts and measures of one class.

    Attributes
    ----------
    tp, fp, fn, tn : int or None
        Confusion counts (pooled counts for micro averages; None for macro
        averages, which average the measures, not the counts).
    precision, recall, specificity, f1 : float
        In [0, 1]; see :class:`BinaryCounts` for the zero-division rule.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    tp: int | None = None
    fp: int | None = None
    fn: int | None = None
    tn: int | None = None
    precision: float
    recall: float
    specificity: float
    f1: float


def class_scores(counts: BinaryCounts) -> ClassScores:
    """Measures of one class from its counts.

    Parameters
    ----------
    counts : BinaryCounts

    Returns
    -------
    ClassScores

    Examples
    --------
    >>> s = class_scores(BinaryCounts(tp=2, fp=1, fn=1, tn=0))
    >>> round(s.precision, 4), round(s.recall, 4), s.specificity, round(s.f1, 4)
    (0.6667, 0.6667, 0.0, 0.6667)
    """
    return ClassScores(
        tp=counts.tp,
        fp=counts.fp,
        fn=counts.fn,
        tn=counts.tn,
        precision=counts.precision,
        recall=counts.recall,
        specificity=counts.specificity,
        f1=counts.f1,
    )


def confusion_counts(
    gold: Sequence[Hashable], pred: Sequence[Hashable], positive: Hashable
) -> BinaryCounts:
    """Count tp/fp/fn/tn of class ``positive`` over paired gold and predicted labels.

    Parameters
    ----------
    gold, pred : sequence of hashable, same length n
        Labels item by item.
    positive : hashable
        The class counted as positive (e.g. ``"met"``).

    Returns
    -------
    BinaryCounts

    Raises
    ------
    ValueError
        The sequences differ in length.

    Examples
    --------
    >>> confusion_counts(["met", "met", "not met"], ["met", "not met", "met"], "met")
    BinaryCounts(tp=1, fp=1, fn=1, tn=0)
    """
    if len(gold) != len(pred):
        raise ValueError(f"gold and pred differ in length ({len(gold)} vs {len(pred)})")
    tp = fp = fn = tn = 0
    for g, p in zip(gold, pred):
        gp, pp = g == positive, p == positive
        if gp and pp:
            tp += 1
        elif pp:
            fp += 1
        elif gp:
            fn += 1
        else:
            tn += 1
    return BinaryCounts(tp=tp, fp=fp, fn=fn, tn=tn)


def roc_auc(gold_positive: Sequence[bool], scores: Sequence[float]) -> float | None:
    """Area under the ROC curve of real-valued scores.

    Parameters
    ----------
    gold_positive : sequence of bool, length n
        True where the gold label is the positive class.
    scores : sequence of float, length n
        Confidence of the positive class.

    Returns
    -------
    float or None
        :func:`sklearn.metrics.roc_auc_score`; None when the gold labels hold a
        single class (the ROC curve is undefined).
    """
    if len(gold_positive) != len(scores):
        raise ValueError("gold_positive and scores differ in length")
    if len(set(bool(g) for g in gold_positive)) < 2:
        return None
    from sklearn.metrics import roc_auc_score

    return float(roc_auc_score([bool(g) for g in gold_positive], list(scores)))
