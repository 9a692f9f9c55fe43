"""Inter-annotator agreement: pairwise F1, observed agreement, PABAK and Cohen's kappa.

Generic functions over counts or over two equally long sequences of categorical
ratings (one rating per item from each of two raters). Used by ``clinex rob iaa``
(:mod:`clinex.rob.iaa`) and usable for any pair of annotators.

References
----------
Hripcsak G, Rothschild AS. Agreement, the F-measure, and reliability in information
retrieval. J Am Med Inform Assoc 2005;12(3):296-298 (pairwise F1 as agreement when
negatives are undefined).
Byrt T, Bishop J, Carlin JB. Bias, prevalence and kappa. J Clin Epidemiol
1993;46(5):423-429 (PABAK).
Cohen J. A coefficient of agreement for nominal scales. Educ Psychol Meas
1960;20(1):37-46.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from fractions import Fraction

from clinex.errors import EvaluationError
from clinex.metrics.counts import prf

__all__ = ["pairwise_f1", "observed_agreement", "pabak", "cohen_kappa", "truncate"]


def pairwise_f1(tp: int, fp: int, fn: int) -> float:
    """Pairwise F1 between two annotators, ``2TP / (2TP + FP + FN)``.

    Computed exactly by :func:`clinex.metrics.counts.prf` (in Fractions, where
    ``2PR / (P + R)`` equals this form) and rounded once to a float.

    Treating annotator A as gold and B as the prediction, this is the F1 of B
    against A; it is symmetric (swapping A and B swaps FP and FN).

    Parameters
    ----------
    tp : int
        Units (tokens, spans) both annotators labelled.
    fp : int
        Units only the second annotator labelled.
    fn : int
        Units only the first (reference) annotator labelled.

    Returns
    -------
    float
        In [0, 1]; 0.0 when ``tp + fp + fn == 0`` (no unit labelled by anyone).

    Raises
    ------
    ValueError
        A negative count.

    References
    ----------
    Hripcsak & Rothschild, JAMIA 2005;12:296 (F-measure as agreement).
    """
    if min(tp, fp, fn) < 0:
        raise ValueError("counts must be >= 0")
    # exact F1 (= 2TP / (2TP + FP + FN)), rounded once to the nearest float
    return float(prf(Fraction(tp), Fraction(fp), Fraction(fn))[2])


def truncate(value: float | Fraction, decimals: int = 2) -> float:
    """Cut ``value`` to ``decimals`` decimals toward zero (no rounding).

    Exact for :class:`fractions.Fraction` input; for floats a 1e-9 guard absorbs
    binary representation error (``0.29`` * 100 is 28.999999999999996).

    Parameters
    ----------
    value : float or Fraction
    decimals : int

    Returns
    -------
    float
    """
    scale = 10**decimals
    if isinstance(value, Fraction):
        scaled = value * scale
        whole = math.floor(scaled) if scaled >= 0 else math.ceil(scaled)
        return whole / scale
    scaled = value * scale
    whole = math.floor(scaled + 1e-9) if scaled >= 0 else math.ceil(scaled - 1e-9)
    return whole / scale


def _pair(a: Sequence[Hashable], b: Sequence[Hashable]) -> int:
    if len(a) != len(b):
        raise EvaluationError(f"rating lists differ in length ({len(a)} vs {len(b)})")
    if len(a) == 0:
        raise EvaluationError("no items rated by both raters")
    return len(a)


def observed_agreement(a: Sequence[Hashable], b: Sequence[Hashable]) -> float:
    """Proportion of items on which two raters give the same category, P_o.

    Parameters
    ----------
    a, b : sequence of hashable, same length n > 0
        The two raters' categories, item by item.

    Returns
    -------
    float
        In [0, 1].

    Raises
    ------
    EvaluationError
        Different lengths or no items.
    """
    n = _pair(a, b)
    return sum(x == y for x, y in zip(a, b)) / n


def pabak(a: Sequence[Hashable], b: Sequence[Hashable], n_categories: int) -> float:
    """Prevalence- and bias-adjusted kappa, ``(k * P_o - 1) / (k - 1)``.

    For ``k = 2`` this is Byrt et al.'s ``2 P_o - 1``; for ``k`` categories it is
    the multi-category form (chance agreement fixed at ``1/k``).

    Parameters
    ----------
    a, b : sequence of hashable, same length n > 0
        The two raters' categories.
    n_categories : int
        Number of possible categories ``k`` (>= 2), e.g. 3 for RoB 2 risk levels
        (Low / Some concerns / High).

    Returns
    -------
    float
        In [-1/(k-1), 1].

    Raises
    ------
    EvaluationError
        Different lengths or no items.
    ValueError
        ``n_categories < 2``.

    References
    ----------
    Byrt, Bishop & Carlin, J Clin Epidemiol 1993;46:423.
    """
    if n_categories < 2:
        raise ValueError("n_categories must be >= 2")
    po = observed_agreement(a, b)
    return (n_categories * po - 1) / (n_categories - 1)


def cohen_kappa(a: Sequence[Hashable], b: Sequence[Hashable]) -> float:
    """Cohen's kappa, ``(P_o - P_e) / (1 - P_e)`` with P_e from the raters' marginals.

    Computed by :func:`sklearn.metrics.cohen_kappa_score`.

    Parameters
    ----------
    a, b : sequence of hashable, same length n > 0
        The two raters' categories.

    Returns
    -------
    float
        In [-1, 1]; ``nan`` when ``P_e == 1`` (both raters used one and the same
        category throughout, where kappa is undefined).

    Raises
    ------
    EvaluationError
        Different lengths or no items.

    References
    ----------
    Cohen, Educ Psychol Meas 1960;20:37.
    """
    _pair(a, b)
    if len(set(a)) == 1 and set(a) == set(b):
        return float("nan")
    from sklearn.metrics import cohen_kappa_score

    labels = sorted({str(x) for x in (*a, *b)})
    return float(cohen_kappa_score([str(x) for x in a], [str(x) for x in b], labels=labels))
