"""Statistics for cohort selection: significance between two runs, annotator agreement.

* :func:`compare_runs` — approximate randomization test (Noreen 1989; Yeh 2000) of
  the official Track 1 measures between two systems scored on the same gold, as
  in Stubbs et al. 2019 (50,000 shuffles, significance level 0.1).
* :func:`agreement` — Cohen's κ per criterion between two annotators.

References
----------
.. [1] Stubbs A, Filannino M, Soysal E, Henry S, Uzuner Ö. Cohort selection for
   clinical trials: n2c2 2018 shared task track 1. JAMIA 2019;26(11):1163-1171,
   sections "Evaluation" (significance) and "Data" (inter-annotator agreement).
.. [2] Noreen EW. Computer-Intensive Methods for Testing Hypotheses. Wiley, 1989.
.. [3] Yeh A. More accurate tests for the statistical significance of result
   differences. COLING 2000.
.. [4] Cohen J. A coefficient of agreement for nominal scales. Educ Psychol Meas
   1960;20(1):37-46.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict

from clinex.cohort.criteria_names import canonical_order
from clinex.cohort.evaluate import evaluate_labels, match_label_dirs
from clinex.cohort.types import MET
from clinex.errors import EvaluationError
from clinex.metrics.counts import prf
from clinex.metrics.significance import RandomizationResult, approximate_randomization

__all__ = [
    "CompareResult",
    "CriterionAgreement",
    "AgreementResult",
    "compare_runs",
    "compare_dirs",
    "agreement",
    "agreement_dirs",
    "count_statistic",
]

LabelTable = Mapping[str, Mapping[str, str]]


class CompareResult(BaseModel):
    """Significance of the differences between run A and run B.

    Attributes
    ----------
    unit : {"patient", "decision"}
        What one shuffle swaps between the runs.
    n_items : int
        Number of swappable items (patients, or patient x criterion decisions).
    alpha : float
        Significance level; ``significant`` lists metrics with ``p_value < alpha``.
    results : dict[str, RandomizationResult]
        Keyed by metric: ``micro.<class>.<precision|recall|f1>``, ``micro.f1``,
        ``macro.<class>.<precision|recall|f1>``, ``macro.f1`` and
        ``<CRITERION>.f1`` (class = ``met`` or ``not met``).
    significant : list of str
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    unit: Literal["patient", "decision"]
    n_items: int
    alpha: float
    results: dict[str, RandomizationResult]
    significant: list[str]


def count_statistic(criteria: list[str]):
    """A vectorised statistic for :func:`approximate_randomization` over Track 1 counts.

    Parameters
    ----------
    criteria : list of str, length C
        Order of the criteria in the statistics vector.

    Returns
    -------
    callable
        Maps summed statistics of shape (..., 4*C) — per criterion the met-class
        ``tp, fp, fn, tn`` — to the official measures (same zero-division rule as
        :mod:`clinex.cohort.evaluate`, both from :func:`clinex.metrics.counts.prf`):
        micro and macro P/R/F1 per class, micro and macro overall F1, and the F1 of
        every criterion.
    """
    n = len(criteria)

    def statistic(totals: np.ndarray) -> dict[str, np.ndarray]:
        t = np.asarray(totals, dtype=float).reshape(*np.shape(totals)[:-1], n, 4)
        tp, fp, fn, tn = t[..., 0], t[..., 1], t[..., 2], t[..., 3]
        out: dict[str, np.ndarray] = {}
        # per class: (tp, fp, fn) with that class positive; not met = met swapped
        sides = {"met": (tp, fp, fn), "not met": (tn, fn, fp)}
        per_f1 = []
        for cls, (a, b, c) in sides.items():
            p, r, f = prf(a.sum(-1), b.sum(-1), c.sum(-1))
            out[f"micro.{cls}.precision"], out[f"micro.{cls}.recall"], out[f"micro.{cls}.f1"] = p, r, f
            pc, rc, fc = prf(a, b, c)
            out[f"macro.{cls}.precision"] = pc.mean(-1)
            out[f"macro.{cls}.recall"] = rc.mean(-1)
            out[f"macro.{cls}.f1"] = fc.mean(-1)
            per_f1.append(fc)
        out["micro.f1"] = (out["micro.met.f1"] + out["micro.not met.f1"]) / 2
        crit_f1 = (per_f1[0] + per_f1[1]) / 2
        out["macro.f1"] = crit_f1.mean(-1)
        for i, crit in enumerate(criteria):
            out[f"{crit}.f1"] = crit_f1[..., i]
        return out

    return statistic


def _item_stats(
    gold: LabelTable, pred: LabelTable, pids: list[str], criteria: list[str], unit: str
) -> np.ndarray:
    n = len(criteria)
    rows = []
    for pid in pids:
        per_patient = np.zeros((n, 4))
        for j, crit in enumerate(criteria):
            g, p = gold[pid][crit] == MET, pred[pid][crit] == MET
            k = 0 if (g and p) else 1 if p else 2 if g else 3
            if unit == "decision":
                row = np.zeros((n, 4))
                row[j, k] = 1
                rows.append(row.ravel())
            else:
                per_patient[j, k] += 1
        if unit == "patient":
            rows.append(per_patient.ravel())
    return np.array(rows)


def compare_runs(
    gold: LabelTable,
    pred_a: LabelTable,
    pred_b: LabelTable,
    *,
    n_shuffles: int = 50_000,
    seed: int | None = 0,
    unit: Literal["patient", "decision"] = "patient",
    alpha: float = 0.1,
    criteria: list[str] | None = None,
) -> CompareResult:
    """Approximate randomization test of the Track 1 measures between two runs.

    Parameters
    ----------
    gold, pred_a, pred_b : mapping patient id -> mapping criterion -> label
        The same patients and criteria throughout (checked as in
        :func:`clinex.cohort.evaluate.evaluate_labels`).
    n_shuffles : int, default 50000
        Shuffles (Stubbs et al. 2019: 50,000).
    seed : int or None, default 0
        Random seed; the same seed gives the same p-values.
    unit : {"patient", "decision"}, default "patient"
        What is swapped: all of a patient's 13 decisions together (patients are the
        independent units; decisions of one patient are correlated), or each
        patient x criterion decision on its own (Yeh's per-item swapping at the
        finest grain).
    alpha : float, default 0.1
        Significance level (Stubbs et al. 2019 used 0.1).
    criteria : list of str, optional
        Default: the gold criteria in canonical order.

    Returns
    -------
    CompareResult

    Raises
    ------
    EvaluationError
        The runs do not line up with gold (see ``evaluate_labels``).
    ValueError
        Unknown ``unit``.
    """
    if unit not in ("patient", "decision"):
        raise ValueError(f"unit must be 'patient' or 'decision', not {unit!r}")
    # validates ids, criteria and labels of both runs against gold
    evaluate_labels(gold, pred_a, criteria=criteria)
    evaluate_labels(gold, pred_b, criteria=criteria)
    pids = sorted(gold)
    if criteria is None:
        criteria = canonical_order(c for pid in pids for c in gold[pid])
    sa = _item_stats(gold, pred_a, pids, criteria, unit)
    sb = _item_stats(gold, pred_b, pids, criteria, unit)
    results = approximate_randomization(
        sa, sb, count_statistic(criteria), n_shuffles=n_shuffles, seed=seed
    )
    return CompareResult(
        unit=unit,
        n_items=sa.shape[0],
        alpha=alpha,
        results=results,
        significant=[k for k, r in results.items() if r.p_value < alpha],
    )


def compare_dirs(
    gold_dir: str | Path, run_a: str | Path, run_b: str | Path, **kwargs
) -> CompareResult:
    """:func:`compare_runs` on three folders of n2c2 XML files matched by name.

    Parameters
    ----------
    gold_dir, run_a, run_b : str or Path
    **kwargs
        Passed to :func:`compare_runs`.

    Raises
    ------
    EvaluationError
        A file missing or extra in a run (named), or a missing label.
    """
    gold, a, criteria = match_label_dirs(gold_dir, run_a)
    _, b, _ = match_label_dirs(gold_dir, run_b)
    return compare_runs(gold, a, b, criteria=criteria, **kwargs)


class CriterionAgreement(BaseModel):
    """Agreement of two annotators on one criterion (or pooled over criteria).

    Attributes
    ----------
    n : int
        Patients (decisions, when pooled) both annotated.
    observed : float
        Proportion of identical labels, P_o.
    kappa : float or None
        Cohen's κ = (P_o - P_e) / (1 - P_e); None when undefined (P_e = 1: both
        annotators gave one and the same label to every patient, so agreement is
        perfect but chance explains all of it).
    a_met, b_met : int
        How many ``met`` labels each annotator gave.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    n: int
    observed: float
    kappa: float | None
    a_met: int
    b_met: int


class AgreementResult(BaseModel):
    """Per-criterion and pooled Cohen's κ between annotators A and B.

    Attributes
    ----------
    n_patients : int
    criteria : dict[str, CriterionAgreement]
        In canonical criterion order.
    pooled : CriterionAgreement
        Over all patient x criterion decisions.
    mean_kappa : float or None
        Mean of the defined per-criterion κ values (None if none is defined).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    n_patients: int
    criteria: dict[str, CriterionAgreement]
    pooled: CriterionAgreement
    mean_kappa: float | None


def _agree(a: list[str], b: list[str]) -> CriterionAgreement:
    from clinex.metrics.agreement import cohen_kappa, observed_agreement

    k = cohen_kappa(a, b)
    return CriterionAgreement(
        n=len(a),
        observed=observed_agreement(a, b),
        kappa=None if math.isnan(k) else k,
        a_met=sum(x == MET for x in a),
        b_met=sum(x == MET for x in b),
    )


def agreement(labels_a: LabelTable, labels_b: LabelTable, *, criteria: list[str] | None = None) -> AgreementResult:
    """Cohen's κ per criterion between two annotators of the same patients.

    Parameters
    ----------
    labels_a, labels_b : mapping patient id -> mapping criterion -> label
        The same patients and criteria on both sides.
    criteria : list of str, optional
        Default: A's criteria in canonical order.

    Returns
    -------
    AgreementResult

    Raises
    ------
    EvaluationError
        Patients or criteria do not line up (named).

    References
    ----------
    Cohen 1960 (κ), computed by :func:`clinex.metrics.agreement.cohen_kappa`
    (scikit-learn's ``cohen_kappa_score``).

    Examples
    --------
    >>> a = {"1": {"X": "met"}, "2": {"X": "met"}, "3": {"X": "not met"}, "4": {"X": "not met"}}
    >>> b = {"1": {"X": "met"}, "2": {"X": "not met"}, "3": {"X": "not met"}, "4": {"X": "not met"}}
    >>> agreement(a, b).criteria["X"].kappa
    0.5
    """
    evaluate_labels(labels_a, labels_b, criteria=criteria)  # line-up checks
    pids = sorted(labels_a)
    if criteria is None:
        criteria = canonical_order(c for pid in pids for c in labels_a[pid])
    per = {}
    pool_a: list[str] = []
    pool_b: list[str] = []
    for crit in criteria:
        a = [str(labels_a[p][crit]) for p in pids]
        b = [str(labels_b[p][crit]) for p in pids]
        per[crit] = _agree(a, b)
        pool_a += a
        pool_b += b
    defined = [r.kappa for r in per.values() if r.kappa is not None]
    return AgreementResult(
        n_patients=len(pids),
        criteria=per,
        pooled=_agree(pool_a, pool_b),
        mean_kappa=sum(defined) / len(defined) if defined else None,
    )


def agreement_dirs(dir_a: str | Path, dir_b: str | Path) -> AgreementResult:
    """:func:`agreement` on two folders of n2c2 XML files matched by name.

    Raises
    ------
    EvaluationError
        A file missing or extra in one folder (named), or a missing label.
    """
    a, b, criteria = match_label_dirs(dir_a, dir_b)
    if not a:
        raise EvaluationError("no patients", path=dir_a)
    return agreement(a, b, criteria=criteria)
