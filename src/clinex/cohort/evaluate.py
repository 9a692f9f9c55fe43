"""Scoring of cohort selection the way the official n2c2 2018 Track 1 scorer does it.

For each criterion and each class (``met`` and ``not met``, each treated in turn
as the positive class) the scorer counts tp/fp/fn/tn over the patients and
reports precision, recall, specificity and F1. Then

* criterion F1 = mean of the met F1 and the not-met F1;
* criterion AUC = ``(sensitivity + specificity) / 2`` of the met class with hard
  labels; when met-confidences are given for every patient of a criterion, and
  the gold labels hold both classes, :func:`sklearn.metrics.roc_auc_score` of
  those scores instead (``auc_from`` says which);
* overall **micro**: counts pooled over criteria per class, measures computed from
  the pooled counts, overall F1 = mean of the two class F1s, AUC from the pooled
  met counts (or, with complete scores, ROC AUC over all pooled decisions);
* overall **macro**: every measure averaged over criteria (overall F1 = mean of
  the criterion F1s, AUC = mean of the criterion AUCs).

Zero division gives 0.0, as in the official script: a class that neither gold nor
prediction uses has P = R = F1 = 0, so a perfect run on a criterion whose gold
labels are all ``met`` scores criterion F1 = 0.5.

Differences from the official script, on purpose: files are matched by name and a
missing or extra file is an error naming it (the official script skips them with a
message); a criterion tag missing from a gold file counts as ``not met`` with a
warning naming the file and the criterion (the n2c2 convention that an absent
criterion is not met; ``track1_eval.py`` itself stops with a ``KeyError`` there),
while one missing from a prediction file is an error naming file and criterion;
the criteria scored are the gold ones (the 13 n2c2 criteria for
n2c2 data), and criteria only the prediction has are listed in
``ignored_criteria``.

References
----------
.. [1] Stubbs A, Filannino M, Soysal E, Henry S, Uzuner Ö. Cohort selection for
   clinical trials: n2c2 2018 shared task track 1. JAMIA 2019;26(11):1163-1171,
   section "Evaluation" (micro-averaged overall F1 as the primary measure).
.. [2] n2c2 2018 Track 1 evaluation script ``track1_eval.py`` (counting, zero
   division, AUC, micro and macro averages).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from clinex.cohort.criteria_names import canonical_order
from clinex.cohort.types import MET, NOT_MET
from clinex.errors import EvaluationError, InputError
from clinex.metrics.classification import BinaryCounts, ClassScores, class_scores, roc_auc

__all__ = [
    "CriterionScores",
    "AverageScores",
    "CohortEvaluation",
    "evaluate_labels",
    "score",
    "evaluate_dirs",
    "load_label_dir",
    "match_label_dirs",
    "format_table",
]

LabelTable = Mapping[str, Mapping[str, str]]
ScoreTable = Mapping[str, Mapping[str, float]]


class CriterionScores(BaseModel):
    """Scores of one criterion.

    Attributes
    ----------
    n : int
        Number of patients.
    met, not_met : ClassScores
        Counts and measures with ``met`` (resp. ``not met``) as the positive class;
        serialised under the keys ``"met"`` and ``"not met"``.
    f1 : float
        ``(met.f1 + not_met.f1) / 2``.
    auc : float
        See the module docstring.
    auc_from : {"labels", "scores"}
        Whether the AUC comes from hard labels or from met-confidences.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    n: int
    met: ClassScores
    not_met: ClassScores = Field(alias="not met")
    f1: float
    auc: float
    auc_from: Literal["labels", "scores"] = "labels"


class AverageScores(BaseModel):
    """Overall (micro or macro) scores.

    Attributes
    ----------
    met, not_met : ClassScores
        Pooled counts and their measures (micro), or measures averaged over
        criteria with counts None (macro).
    f1 : float
        Mean of the two class F1s (micro) or of the criterion F1s (macro).
    auc : float
        See the module docstring.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    met: ClassScores
    not_met: ClassScores = Field(alias="not met")
    f1: float
    auc: float


class CohortEvaluation(BaseModel):
    """Everything the official Track 1 scorer prints, as data.

    Attributes
    ----------
    n_patients : int
    criteria : dict[str, CriterionScores]
        In canonical criterion order.
    micro, macro : AverageScores
    ignored_criteria : list of str
        Criteria present in the predictions but not in gold (not scored).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    n_patients: int
    criteria: dict[str, CriterionScores]
    micro: AverageScores
    macro: AverageScores
    ignored_criteria: list[str] = Field(default_factory=list)


def _label_counts(gold: list[str], pred: list[str]) -> BinaryCounts:
    tp = fp = fn = tn = 0
    for g, p in zip(gold, pred):
        if g == MET and p == MET:
            tp += 1
        elif p == MET:
            fp += 1
        elif g == MET:
            fn += 1
        else:
            tn += 1
    return BinaryCounts(tp=tp, fp=fp, fn=fn, tn=tn)


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def _check_label(value: object, who: str, pid: str, crit: str) -> str:
    if value not in (MET, NOT_MET):
        raise EvaluationError(
            f"{who} patient {pid!r}: label {value!r} is not 'met' or 'not met'", field=crit
        )
    return str(value)


def evaluate_labels(
    gold: LabelTable,
    pred: LabelTable,
    scores: ScoreTable | None = None,
    *,
    criteria: list[str] | None = None,
) -> CohortEvaluation:
    """Score predicted labels against gold labels (official Track 1 measures).

    Parameters
    ----------
    gold, pred : mapping patient id -> mapping criterion -> {"met", "not met"}
        The same patient ids on both sides.
    scores : mapping patient id -> mapping criterion -> float, optional
        Confidence of ``met`` in [0, 1]; used for AUC where complete.
    criteria : list of str, optional
        Criteria to score; default every criterion any gold patient has, in
        canonical order.

    Returns
    -------
    CohortEvaluation

    Raises
    ------
    EvaluationError
        No gold patient, patients missing from or extra in ``pred`` (named), a gold
        or predicted label missing for a scored criterion (patient and criterion
        named), or a label other than met / not met.

    References
    ----------
    See the module docstring (Stubbs et al. 2019; ``track1_eval.py``).
    """
    if not gold:
        raise EvaluationError("no gold patients to score")
    missing = sorted(set(gold) - set(pred))
    extra = sorted(set(pred) - set(gold))
    if missing or extra:
        parts = []
        if missing:
            parts.append(f"missing from the prediction: {', '.join(missing)}")
        if extra:
            parts.append(f"not in gold: {', '.join(extra)}")
        raise EvaluationError("patients do not match; " + "; ".join(parts))
    pids = sorted(gold)
    if criteria is None:
        criteria = canonical_order(c for pid in pids for c in gold[pid])
    if not criteria:
        raise EvaluationError("gold has no labels (no <TAGS>) to score against")
    pred_crits = {c for pid in pids for c in pred[pid]}
    ignored = canonical_order(pred_crits - set(criteria))

    per: dict[str, CriterionScores] = {}
    pooled_g: list[bool] = []
    pooled_s: list[float] = []
    all_scored = scores is not None
    micro = BinaryCounts()
    for crit in criteria:
        g_lab, p_lab, s_val = [], [], []
        for pid in pids:
            if crit not in gold[pid]:
                raise EvaluationError(f"gold patient {pid!r} has no label", field=crit)
            if crit not in pred[pid]:
                raise EvaluationError(f"predicted patient {pid!r} has no label", field=crit)
            g_lab.append(_check_label(gold[pid][crit], "gold", pid, crit))
            p_lab.append(_check_label(pred[pid][crit], "predicted", pid, crit))
            if scores is not None and crit in scores.get(pid, {}):
                s_val.append(float(scores[pid][crit]))
        counts = _label_counts(g_lab, p_lab)
        micro = micro + counts
        auc, auc_from = counts.auc, "labels"
        if scores is not None and len(s_val) == len(pids):
            gpos = [g == MET for g in g_lab]
            pooled_g += gpos
            pooled_s += s_val
            value = roc_auc(gpos, s_val)
            if value is not None:
                auc, auc_from = value, "scores"
        else:
            all_scored = False
        m, nm = class_scores(counts), class_scores(counts.swapped())
        per[crit] = CriterionScores(
            n=len(pids), met=m, not_met=nm, f1=(m.f1 + nm.f1) / 2, auc=auc, auc_from=auc_from
        )

    mi_m, mi_nm = class_scores(micro), class_scores(micro.swapped())
    micro_auc = micro.auc
    if all_scored:
        value = roc_auc(pooled_g, pooled_s)
        if value is not None:
            micro_auc = value

    def _macro(side: str) -> ClassScores:
        rows = [getattr(per[c], side) for c in criteria]
        return ClassScores(
            precision=_mean([r.precision for r in rows]),
            recall=_mean([r.recall for r in rows]),
            specificity=_mean([r.specificity for r in rows]),
            f1=_mean([r.f1 for r in rows]),
        )

    return CohortEvaluation(
        n_patients=len(pids),
        criteria=per,
        micro=AverageScores(met=mi_m, not_met=mi_nm, f1=(mi_m.f1 + mi_nm.f1) / 2, auc=micro_auc),
        macro=AverageScores(
            met=_macro("met"),
            not_met=_macro("not_met"),
            f1=_mean([per[c].f1 for c in criteria]),
            auc=_mean([per[c].auc for c in criteria]),
        ),
        ignored_criteria=ignored,
    )


def score(
    gold: LabelTable,
    pred: LabelTable,
    scores: ScoreTable | None = None,
    *,
    criteria: list[str] | None = None,
) -> dict:
    """:func:`evaluate_labels` as a plain dict (JSON-ready; class keys ``"met"``/``"not met"``).

    Parameters
    ----------
    gold, pred : mapping patient id -> mapping criterion -> {"met", "not met"}
    scores : mapping patient id -> mapping criterion -> float, optional
        Met-confidences for AUC.
    criteria : list of str, optional

    Returns
    -------
    dict
        Keys ``n_patients``, ``criteria`` (per criterion: ``n``, ``met``,
        ``not met``, ``f1``, ``auc``, ``auc_from``), ``micro``, ``macro``,
        ``ignored_criteria``.

    Raises
    ------
    EvaluationError
        See :func:`evaluate_labels`.

    Examples
    --------
    >>> gold = {"1": {"A": "met"}, "2": {"A": "not met"}}
    >>> pred = {"1": {"A": "met"}, "2": {"A": "met"}}
    >>> r = score(gold, pred)
    >>> r["criteria"]["A"]["met"]["precision"], r["criteria"]["A"]["f1"], r["micro"]["auc"]
    (0.5, 0.3333333333333333, 0.5)
    """
    return evaluate_labels(gold, pred, scores, criteria=criteria).model_dump(by_alias=True)


def load_label_dir(folder: str | Path) -> dict[str, tuple[Path, dict[str, str]]]:
    """Labels of every ``*.xml`` file of a folder, keyed by file name.

    Parameters
    ----------
    folder : str or Path

    Returns
    -------
    dict
        ``{"001.xml": (path, {"ABDOMINAL": "met", ...}), ...}``.

    Raises
    ------
    InputError
        ``folder`` does not exist, or is a file (the message says what is expected:
        a folder of n2c2 XML files, e.g. ``clinex cohort screen -o FOLDER``'s; for a
        screen ``.json`` file, that ``clinex cohort evaluate`` reads it with ``--scores``).
    FormatError, EncodingError
        A file cannot be read (evaluation stops: a skipped file would change the
        scores).
    """
    from clinex.cohort.formats.n2c2_xml import read_patient

    folder = Path(folder)
    if not folder.is_dir():
        raise InputError(_not_a_folder(folder), path=folder)
    out = {}
    for f in sorted(folder.glob("*.xml")):
        if f.is_file():
            out[f.name] = (f, dict(read_patient(f).labels))
    return out


def _not_a_folder(path: Path) -> str:
    """What a gold or prediction argument must be, said for ``path`` that is not a folder."""
    expected = "expected a folder of n2c2 XML files (NNN.xml, as `clinex cohort screen -o FOLDER` writes)"
    if not path.exists():
        return f"no such folder; {expected}"
    hint = ""
    if path.suffix.lower() == ".json":
        hint = " (a `clinex cohort screen` .json file goes to `clinex cohort evaluate --scores`, for AUC)"
    return f"is a file, not a folder; {expected}{hint}"


def match_label_dirs(
    gold_dir: str | Path, pred_dir: str | Path, *, warnings: list[str] | None = None
) -> tuple[dict[str, dict[str, str]], dict[str, dict[str, str]], list[str]]:
    """Read and line up a gold folder and a prediction folder of n2c2 XML files.

    Parameters
    ----------
    gold_dir, pred_dir : str or Path
        Folders of ``*.xml`` files, matched by file name.
    warnings : list, optional
        Receives one line per gold file lacking a criterion tag that another gold
        file has, e.g. ``"warning: gold/003.xml: no <HBA1C> tag; scored as 'not met'"``;
        that label is then ``not met`` (as n2c2 reads an absent criterion).

    Returns
    -------
    gold, pred : dict file name -> dict criterion -> label
    criteria : list of str
        The gold criteria, in canonical order.

    Raises
    ------
    EvaluationError
        No gold file, a file missing from or extra in ``pred_dir`` (named), a gold
        file without any labels or a prediction file lacking a criterion (file and
        criterion named).
    InputError, FormatError, EncodingError
        A folder is missing or a file cannot be read.
    """
    gold = load_label_dir(gold_dir)
    pred = load_label_dir(pred_dir)
    if not gold:
        raise EvaluationError("gold folder holds no *.xml file", path=gold_dir)
    missing = sorted(set(gold) - set(pred))
    extra = sorted(set(pred) - set(gold))
    if missing or extra:
        parts = []
        if missing:
            parts.append(f"missing from {pred_dir}: {', '.join(missing)}")
        if extra:
            parts.append(f"extra in {pred_dir} (not in {gold_dir}): {', '.join(extra)}")
        raise EvaluationError("files do not match; " + "; ".join(parts))
    criteria = canonical_order(c for _, labels in gold.values() for c in labels)
    for name, (path, labels) in gold.items():
        if not labels:
            raise EvaluationError("gold file has no labels (<TAGS>)", path=path)
        for crit in criteria:
            if crit not in labels:
                labels[crit] = NOT_MET
                if warnings is not None:
                    warnings.append(f"warning: {path}: no <{crit}> tag; scored as 'not met'")
            if crit not in pred[name][1]:
                raise EvaluationError("prediction file has no label", path=pred[name][0], field=crit)
    return (
        {n: lab for n, (_, lab) in gold.items()},
        {n: lab for n, (_, lab) in pred.items()},
        criteria,
    )


def _score_value(value: object, pid: str, crit: str) -> float:
    if isinstance(value, Mapping):
        value = value.get("score")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise EvaluationError(f"patient {pid!r}: score {value!r} is not a number", field=crit)
    return float(value)


def evaluate_dirs(
    gold_dir: str | Path,
    pred_dir: str | Path,
    *,
    scores: ScoreTable | None = None,
) -> dict:
    """Score a folder of predicted n2c2 XML files against a folder of gold files.

    Parameters
    ----------
    gold_dir, pred_dir : str or Path
        Folders of ``*.xml`` files, matched by file name.
    scores : mapping, optional
        ``{file stem or file name: {criterion: met-confidence}}`` for AUC; a value
        may also be an object with a ``"score"`` key (the JSON that
        ``clinex cohort screen`` writes).

    Returns
    -------
    dict
        As :func:`score`, plus ``gold_dir``, ``pred_dir`` and ``warnings`` (one
        line per gold file and criterion scored as ``not met`` for a missing tag).

    Raises
    ------
    EvaluationError
        No gold file, a file missing from or extra in ``pred_dir`` (named), a gold
        file without any labels or a prediction file without a criterion (file
        and criterion named).
    InputError, FormatError, EncodingError
        A folder is missing or a file cannot be read.

    References
    ----------
    n2c2 2018 Track 1 evaluation script (``python track1_eval.py GOLD SYSTEM``).

    Notes
    -----
    A gold file lacking a criterion tag that other gold files have is scored as
    ``not met`` for it; the result's ``warnings`` names each such file and
    criterion (``clinex cohort evaluate`` prints them on stderr).
    """
    warnings: list[str] = []
    gold, pred, criteria = match_label_dirs(gold_dir, pred_dir, warnings=warnings)
    sc = None
    if scores is not None:
        sc = {}
        for name in gold:
            stem = Path(name).stem
            row = scores.get(name, scores.get(stem))
            if row is None:
                continue
            if not isinstance(row, Mapping):
                raise EvaluationError(f"scores of patient {stem!r} are not an object {{criterion: score}}")
            sc[name] = {crit: _score_value(v, stem, crit) for crit, v in row.items()}
    result = score(gold, pred, sc, criteria=criteria)
    return {"gold_dir": str(gold_dir), "pred_dir": str(pred_dir), **result, "warnings": warnings}


def format_table(result: Mapping) -> list[list[str]]:
    """Rows of the official scorer's table from a :func:`score` dict.

    Parameters
    ----------
    result : dict
        Output of :func:`score` or :func:`evaluate_dirs`.

    Returns
    -------
    list of list of str
        Header row, then one row per criterion, then ``Overall (micro)`` and
        ``Overall (macro)``; columns: met P, R, specificity, F1; not-met P, R, F1;
        overall F1; AUC (4 decimals).
    """
    head = ["", "met P", "met R", "met Spec", "met F1", "not met P", "not met R", "not met F1", "F1", "AUC"]

    def row(name: str, r: Mapping) -> list[str]:
        m, nm = r["met"], r["not met"]
        vals = [m["precision"], m["recall"], m["specificity"], m["f1"], nm["precision"], nm["recall"], nm["f1"], r["f1"], r["auc"]]
        return [name] + [f"{v:.4f}" for v in vals]

    rows = [head] + [row(c, r) for c, r in result["criteria"].items()]
    rows.append(row("Overall (micro)", result["micro"]))
    rows.append(row("Overall (macro)", result["macro"]))
    return rows
