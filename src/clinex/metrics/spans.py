"""Exact-match and token F1 over span strings, with the PHEE text normalisation.

This is the span metric of the PHEE paper (Sun et al., EMNLP 2022, §4.2), computed
the way the authors' released scorer (``evaluate/phee_metric.py`` in
github.com/ZhaoyueSun/PHEE) computes it:

1. **Normalisation** (:func:`normalize_answer`, SQuAD-style): lower-case; every
   ASCII punctuation character (Python's ``string.punctuation``) splits the token
   it is in and is removed (``"54-year-old"`` → ``"54 year old"``); the articles
   *a*, *an*, *the* are removed as whole words (regex ``\\b(a|an|the)\\b``);
   whitespace is folded to single spaces. A span may normalise to ``""``; it is
   still one span (it matches another span that normalises to ``""``) with no tokens.
2. **Per key of one sentence** (:func:`count_spans`): the predicted and gold span
   strings are compared as multisets. Exact-match true positives are
   ``|Counter(pred) & Counter(gold)|``, so a span predicted twice counts twice in
   the predictions and matches at most as many gold copies; the surplus copy is
   a false positive. No one-to-one alignment of spans is searched, so there are
   no ties to break. Token true positives are the size of the intersection of the
   two bags of tokens (all tokens of all spans of the key, after normalisation).
3. **Micro-average**: counts are summed over keys and sentences
   (:class:`SpanCounts` supports ``+``), then P = tp / predicted, R = tp / gold,
   F1 = 2PR / (P + R).

Zero division: a precision with no prediction, a recall with no gold and an F1
with P + R = 0 are **0.0** (as in the released scorer, and sklearn's
``zero_division=0.0``); in particular an empty gold and an empty prediction give
0.0, not 1.0.

References
----------
Sun Z. et al., "PHEE: A Dataset for Pharmacovigilance Event Extraction from Text",
EMNLP 2022, §4.2 (evaluation metrics: EM F1 and token F1).
Rajpurkar P. et al., "SQuAD: 100,000+ Questions for Machine Comprehension of Text",
EMNLP 2016 (the answer normalisation the PHEE scorer adapts).
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

from pydantic import BaseModel, ConfigDict, Field

from clinex.metrics.counts import prf as _prf

__all__ = [
    "PUNCTUATION",
    "normalize_answer",
    "answer_tokens",
    "prf",
    "SpanCounts",
    "count_spans",
    "keyed_counts",
]

#: Characters removed by the normalisation (each also splits the token it is in).
PUNCTUATION: frozenset[str] = frozenset(string.punctuation)

_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_PUNCT_TABLE = {ord(c): " " for c in PUNCTUATION}


def normalize_answer(text: str) -> str:
    """Normalise a span string as the PHEE scorer does.

    Parameters
    ----------
    text : str
        A span string (PHEE scoring passes one string per fragment).

    Returns
    -------
    str
        Lower-cased, punctuation removed (it separates tokens), articles removed,
        whitespace folded; possibly ``""``.

    Examples
    --------
    >>> normalize_answer("A 54-year-old man")
    '54 year old man'
    >>> normalize_answer("The  (IV) route.")
    'iv route'
    >>> normalize_answer("the")
    ''
    """
    lowered = text.lower().translate(_PUNCT_TABLE)
    return " ".join(_ARTICLES.sub(" ", " ".join(lowered.split())).split())


def answer_tokens(text: str) -> list[str]:
    """Tokens of the normalised text (split on whitespace); ``[]`` for ``""``."""
    return normalize_answer(text).split()


def prf(tp: int, n_pred: int, n_gold: int) -> tuple[float, float, float]:
    """Precision, recall and F1 from counts, with 0.0 for every zero division.

    The span form (predicted and gold totals) of :func:`clinex.metrics.counts.prf`,
    which computes it (``fp = n_pred - tp``, ``fn = n_gold - tp``).

    Parameters
    ----------
    tp : int
        True positives.
    n_pred, n_gold : int
        Number of predicted and gold items.

    Returns
    -------
    (precision, recall, f1) : tuple of float
        Fractions in [0, 1].

    Examples
    --------
    >>> prf(1, 2, 4)
    (0.5, 0.25, 0.3333333333333333)
    >>> prf(0, 0, 0)
    (0.0, 0.0, 0.0)
    """
    return _prf(tp, n_pred - tp, n_gold - tp)


class SpanCounts(BaseModel):
    """Exact-match and token counts; add them to micro-average.

    Attributes
    ----------
    tp, n_pred, n_gold : int
        Exact-match true positives, predicted spans, gold spans.
    token_tp, n_pred_tokens, n_gold_tokens : int
        The same for normalised tokens.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    tp: int = Field(0, ge=0)
    n_pred: int = Field(0, ge=0)
    n_gold: int = Field(0, ge=0)
    token_tp: int = Field(0, ge=0)
    n_pred_tokens: int = Field(0, ge=0)
    n_gold_tokens: int = Field(0, ge=0)

    def __add__(self, other: "SpanCounts") -> "SpanCounts":
        if not isinstance(other, SpanCounts):
            return NotImplemented
        # both operands were validated on creation; sums of non-negative ints stay valid
        return SpanCounts.model_construct(
            **{k: getattr(self, k) + getattr(other, k) for k in SpanCounts.model_fields}
        )

    def scores(self) -> dict[str, float]:
        """``em_precision``, ``em_recall``, ``em_f1``, ``token_precision``, ``token_recall``, ``token_f1``."""
        ep, er, ef = prf(self.tp, self.n_pred, self.n_gold)
        tp, tr, tf = prf(self.token_tp, self.n_pred_tokens, self.n_gold_tokens)
        return {
            "em_precision": ep,
            "em_recall": er,
            "em_f1": ef,
            "token_precision": tp,
            "token_recall": tr,
            "token_f1": tf,
        }


def count_spans(gold: Iterable[str], pred: Iterable[str]) -> SpanCounts:
    """Counts for one key of one sentence: gold and predicted span strings as multisets.

    Parameters
    ----------
    gold, pred : iterable of str
        Raw span texts (normalised here with :func:`normalize_answer`).

    Returns
    -------
    SpanCounts

    Examples
    --------
    >>> c = count_spans(["the rash", "fever"], ["rash", "rash", "high fever"])
    >>> (c.tp, c.n_pred, c.n_gold, c.token_tp, c.n_pred_tokens, c.n_gold_tokens)
    (1, 3, 2, 2, 4, 2)
    """
    g = [normalize_answer(s) for s in gold]
    p = [normalize_answer(s) for s in pred]
    g_tok = [t for s in g for t in s.split()]
    p_tok = [t for s in p for t in s.split()]
    return SpanCounts.model_construct(
        tp=sum((Counter(g) & Counter(p)).values()),
        n_pred=len(p),
        n_gold=len(g),
        token_tp=sum((Counter(g_tok) & Counter(p_tok)).values()),
        n_pred_tokens=len(p_tok),
        n_gold_tokens=len(g_tok),
    )


def keyed_counts(
    gold: Sequence[Mapping[str, Sequence[str]]],
    pred: Sequence[Mapping[str, Sequence[str]]],
) -> dict[str, SpanCounts]:
    """Micro-summed counts per key over aligned units (sentences).

    Parameters
    ----------
    gold, pred : sequence of mapping str -> sequence of str
        One mapping per unit, same length and order: key (e.g.
        ``"Adverse_event.Subject"``) to the span strings with that key.

    Returns
    -------
    dict
        Key -> :class:`SpanCounts` summed over units; keys seen in gold or pred.

    Raises
    ------
    ValueError
        If ``gold`` and ``pred`` have different lengths.
    """
    if len(gold) != len(pred):
        raise ValueError(f"{len(gold)} gold units but {len(pred)} predicted units")
    out: dict[str, SpanCounts] = {}
    for g, p in zip(gold, pred):
        for key in list(g) + [k for k in p if k not in g]:
            c = count_spans(g.get(key, ()), p.get(key, ()))
            out[key] = out[key] + c if key in out else c
    return out
