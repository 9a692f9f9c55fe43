"""Approximate randomization test for the difference between two systems.

Both systems' outputs on the same items are compared. Under the null hypothesis
that the systems are interchangeable, swapping the two outputs of any item does not
change the distribution of the metric difference. Each shuffle swaps every item's
outputs with probability 1/2 and recomputes the difference; the two-sided p-value
is ``p = (c + 1) / (n + 1)``, where ``c`` counts the shuffles whose absolute
difference is at least the observed one and ``n`` is the number of shuffles.

For speed, a system's output on an item is given as a vector of additive
*sufficient statistics* (e.g. that item's tp, fp, fn); the metric is a function of
the summed vectors. This covers every metric computed from pooled counts
(precision, recall, F1, micro and macro averages over criteria), which is the case
Yeh (2000) studies. All shuffles of a run are drawn from one seeded NumPy
generator, so a run is reproducible.

References
----------
.. [1] Noreen EW. Computer-Intensive Methods for Testing Hypotheses: An
   Introduction. Wiley, 1989 (approximate randomization, the (c+1)/(n+1) rule).
.. [2] Yeh A. More accurate tests for the statistical significance of result
   differences. COLING 2000, pp. 947-953 (randomization for P, R and F-score).
.. [3] Stubbs A et al. Cohort selection for clinical trials: n2c2 2018 shared task
   track 1. JAMIA 2019;26(11):1163-1171 (approximate randomization, 50,000
   shuffles, significance level 0.1).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np
from pydantic import BaseModel, ConfigDict

__all__ = ["RandomizationResult", "approximate_randomization"]

#: Vectorised metric: summed statistics of shape (..., k) -> {name: array of shape (...)}.
Statistic = Callable[[np.ndarray], Mapping[str, np.ndarray]]


class RandomizationResult(BaseModel):
    """Outcome of the test for one metric.

    Attributes
    ----------
    metric : str
    a, b : float
        The metric of system A and of system B.
    diff : float
        ``a - b``.
    p_value : float
        ``(c + 1) / (n_shuffles + 1)``, two-sided; in (0, 1].
    n_shuffles : int
    seed : int or None
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    metric: str
    a: float
    b: float
    diff: float
    p_value: float
    n_shuffles: int
    seed: int | None


def approximate_randomization(
    stats_a: np.ndarray,
    stats_b: np.ndarray,
    statistic: Statistic,
    *,
    n_shuffles: int = 50_000,
    seed: int | None = 0,
    chunk: int = 2_000,
) -> dict[str, RandomizationResult]:
    """Two-sided approximate randomization test between systems A and B.

    Parameters
    ----------
    stats_a, stats_b : ndarray of shape (n_items, k)
        Per-item additive statistics of each system's output on the same items in
        the same order (e.g. tp, fp, fn per item).
    statistic : callable
        Maps summed statistics of shape (..., k) to ``{metric name: values of shape
        (...)}``; it must work on a batch (leading axes).
    n_shuffles : int, default 50000
        Number of random shuffles ``n`` (Stubbs et al. 2019 used 50,000).
    seed : int or None, default 0
        Seed of :func:`numpy.random.default_rng`; None draws a fresh one (not
        reproducible).
    chunk : int, default 2000
        Shuffles evaluated per batch (memory ~ chunk * n_items floats).

    Returns
    -------
    dict[str, RandomizationResult]
        One result per metric the statistic returns.

    Raises
    ------
    ValueError
        Shapes differ or are not 2-D, no items, or ``n_shuffles < 1``.

    Notes
    -----
    Identical systems have observed difference 0, every shuffle reaches it, and
    ``p = 1``. A shuffle counts when ``|d| >= |d_obs| - 1e-12`` (floating-point
    tolerance).

    References
    ----------
    Noreen 1989; Yeh 2000, section 3 (see the module docstring).

    Examples
    --------
    >>> a = np.array([[1.0], [1.0], [1.0], [1.0]])
    >>> b = np.array([[0.0], [0.0], [0.0], [0.0]])
    >>> r = approximate_randomization(a, b, lambda s: {"sum": s[..., 0]}, n_shuffles=999, seed=1)
    >>> r["sum"].diff, r["sum"].p_value < 0.2
    (4.0, True)
    """
    a = np.asarray(stats_a, dtype=float)
    b = np.asarray(stats_b, dtype=float)
    if a.ndim != 2 or a.shape != b.shape:
        raise ValueError(f"stats_a and stats_b must be 2-D of the same shape, got {a.shape} and {b.shape}")
    if a.shape[0] == 0:
        raise ValueError("no items to compare")
    if n_shuffles < 1:
        raise ValueError("n_shuffles must be >= 1")
    rng = np.random.default_rng(seed)
    tot_a, tot_b = a.sum(axis=0), b.sum(axis=0)
    obs_a, obs_b = statistic(tot_a), statistic(tot_b)
    names = list(obs_a)
    observed = {k: abs(float(obs_a[k]) - float(obs_b[k])) for k in names}
    delta = b - a  # swapping item i moves delta[i] from A's total to B's (and back)
    count = {k: 0 for k in names}
    done = 0
    while done < n_shuffles:
        m = min(chunk, n_shuffles - done)
        swap = (rng.random((m, a.shape[0])) < 0.5).astype(float)
        shift = swap @ delta  # (m, k)
        sa, sb = statistic(tot_a + shift), statistic(tot_b - shift)
        for k in names:
            d = np.abs(np.asarray(sa[k], dtype=float) - np.asarray(sb[k], dtype=float))
            count[k] += int(np.count_nonzero(d >= observed[k] - 1e-12))
        done += m
    return {
        k: RandomizationResult(
            metric=k,
            a=float(obs_a[k]),
            b=float(obs_b[k]),
            diff=float(obs_a[k]) - float(obs_b[k]),
            p_value=(count[k] + 1) / (n_shuffles + 1),
            n_shuffles=n_shuffles,
            seed=seed,
        )
        for k in names
    }
