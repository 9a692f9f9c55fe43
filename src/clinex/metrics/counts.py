"""Precision, recall and F1 from confusion counts: the one place clinex computes them.

Every score in clinex that is a precision, a recall or an F1 comes from
:func:`prf` (directly or through a thin wrapper that fixes its input type):

* :func:`clinex.metrics.spans.prf` (and through it :func:`clinex.pv.evaluate.score`
  and the transformer's dev selection score): PHEE EM and token F1 [1]_;
* :class:`clinex.metrics.classification.BinaryCounts` (``clinex cohort evaluate``,
  the PV sentence gate): the n2c2 2018 Track 1 measures [2]_;
* :func:`clinex.cohort.stats.count_statistic`: the same n2c2 measures, vectorised
  over randomization samples (numpy arrays);
* :func:`clinex.metrics.agreement.pairwise_f1` and :mod:`clinex.rob.iaa`: pairwise
  F1 as agreement [3]_ and RoBuster's token-level IAA, exact in Fractions.

Formulas and zero division
--------------------------
``P = tp / (tp + fp)``, ``R = tp / (tp + fn)``, ``F1 = 2PR / (P + R)``; every
ratio whose denominator is zero is **0** (sklearn's ``zero_division=0.0``; the
rule of the PHEE released scorer and of the n2c2 2018 Track 1 script). So no
prediction gives P = 0, no gold gives R = 0, and an empty gold with an empty
prediction gives (0, 0, 0), not 1.0.

The F1 is computed from P and R (the order of operations of the released
scorers, and of every clinex caller before this module), so float results are
bit-identical to what those callers computed. With
:class:`fractions.Fraction` inputs everything is exact, and then
``2PR / (P + R) == 2tp / (2tp + fp + fn)`` (the pairwise agreement form).

Input types
-----------
* ``int`` / ``float``: returns floats (``0.0`` on a zero division).
* :class:`fractions.Fraction`: returns Fractions (``Fraction(0)`` on a zero
  division), so a caller that truncates (RoBuster's 2-decimal figures) stays exact.
* :class:`numpy.ndarray` or numpy scalar (any broadcastable shapes): returns float64 arrays,
  element-wise, with 0.0 where a denominator is 0. numpy is not imported here.

References
----------
.. [1] Sun Z. et al., "PHEE: A Dataset for Pharmacovigilance Event Extraction from
   Text", EMNLP 2022, §4.2; scorer ``evaluate/phee_metric.py`` in
   github.com/ZhaoyueSun/PHEE.
.. [2] Stubbs A. et al., Cohort selection for clinical trials: n2c2 2018 shared
   task track 1. JAMIA 2019;26(11):1163-1171 (``track1_eval.py``, class ``Measures``).
.. [3] Hripcsak G, Rothschild AS. Agreement, the F-measure, and reliability in
   information retrieval. JAMIA 2005;12(3):296-298.
.. [4] Sokolova M, Lapalme G. A systematic analysis of performance measures for
   classification tasks. Inf Process Manag 2009;45(4):427-437 (the formulas).
"""

from __future__ import annotations

import sys
from fractions import Fraction
from typing import Any, TypeVar

__all__ = ["prf", "f1_from", "ratio"]

T = TypeVar("T")


def _is_array(x: Any) -> bool:
    np = sys.modules.get("numpy")  # an array can only exist once numpy is imported
    return np is not None and isinstance(x, (np.ndarray, np.generic))


def ratio(num: Any, den: Any) -> Any:
    """``num / den``, or 0 where ``den == 0`` (see the module docstring for types).

    Examples
    --------
    >>> ratio(1, 4), ratio(1, 0)
    (0.25, 0.0)
    >>> ratio(Fraction(1), Fraction(3)), ratio(Fraction(1), Fraction(0))
    (Fraction(1, 3), Fraction(0, 1))
    """
    if _is_array(num) or _is_array(den):
        import numpy as np

        out = np.zeros(np.broadcast(num, den).shape)
        np.divide(num, den, out=out, where=np.asarray(den) != 0)
        return out
    if den == 0:
        return Fraction(0) if isinstance(num, Fraction) or isinstance(den, Fraction) else 0.0
    return num / den


def prf(tp: T, fp: T, fn: T) -> tuple[T, T, T] | tuple[float, float, float]:
    """Precision, recall and F1 from true positives, false positives, false negatives.

    Parameters
    ----------
    tp, fp, fn : int, float, Fraction or numpy.ndarray
        Counts (>= 0; not checked, so arrays stay fast).

    Returns
    -------
    (precision, recall, f1)
        In [0, 1]; floats for int/float input, Fractions for Fraction input,
        float64 arrays for array input. 0 for every zero division.

    Examples
    --------
    >>> prf(1, 1, 3)
    (0.5, 0.25, 0.3333333333333333)
    >>> prf(0, 0, 0)
    (0.0, 0.0, 0.0)
    >>> prf(Fraction(2), Fraction(1), Fraction(1))
    (Fraction(2, 3), Fraction(2, 3), Fraction(2, 3))
    """
    p = ratio(tp, tp + fp)
    r = ratio(tp, tp + fn)
    return p, r, f1_from(p, r)


def f1_from(precision: Any, recall: Any) -> Any:
    """Harmonic mean ``2PR / (P + R)``; 0 when ``P + R == 0`` (the last step of :func:`prf`).

    For callers that hold a precision and a recall but not the counts.

    Examples
    --------
    >>> f1_from(0.5, 0.25), f1_from(0.0, 0.0)
    (0.3333333333333333, 0.0)
    """
    return ratio(2 * precision * recall, precision + recall)
