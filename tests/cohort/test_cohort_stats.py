"""Approximate randomization between two runs, and Cohen's kappa between annotators."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest
from cohort_tables import GOLD, PRED  # noqa: E402  (tests/ is on sys.path)

from clinex.cohort.evaluate import score
from clinex.cohort.formats.n2c2_xml import write_patient
from clinex.cohort.stats import agreement, compare_runs, count_statistic
from clinex.cohort.types import Patient
from clinex.errors import EvaluationError
from clinex.metrics.significance import approximate_randomization


def write_dir(folder: Path, table: dict) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for pid, labels in table.items():
        write_patient(Patient(id=pid, text=f"Record date: 2071-01-01\n{pid}", labels=labels), folder / f"{pid}.xml")
    return folder


def flipped(table: dict, rate: float, seed: int) -> dict:
    rng = random.Random(seed)
    flip = {"met": "not met", "not met": "met"}
    return {p: {c: (flip[v] if rng.random() < rate else v) for c, v in labs.items()} for p, labs in table.items()}


# --------------------------------------------------------------------------- generic test


def test_two_items_p_value_is_one_half() -> None:
    # |A - B| = 2 is reached when both items are swapped or neither: probability 1/2
    a, b = np.ones((2, 1)), np.zeros((2, 1))
    r = approximate_randomization(a, b, lambda s: {"sum": s[..., 0]}, n_shuffles=20_000, seed=7)["sum"]
    assert (r.a, r.b, r.diff) == (2.0, 0.0, 2.0)
    assert r.p_value == pytest.approx(0.5, abs=0.02)


def test_seeded_and_identical_runs() -> None:
    rng = np.random.default_rng(0)
    a = rng.integers(0, 3, size=(30, 3)).astype(float)
    b = rng.integers(0, 3, size=(30, 3)).astype(float)
    stat = lambda s: {"x": s[..., 0] / (1 + s[..., 1])}  # noqa: E731
    r1 = approximate_randomization(a, b, stat, n_shuffles=3_000, seed=11)
    r2 = approximate_randomization(a, b, stat, n_shuffles=3_000, seed=11)
    assert r1 == r2
    same = approximate_randomization(a, a, stat, n_shuffles=500, seed=11)["x"]
    assert same.diff == 0.0 and same.p_value == 1.0
    with pytest.raises(ValueError, match="same shape"):
        approximate_randomization(a, b[:3], stat)


# --------------------------------------------------------------------------- cohort compare


def test_count_statistic_matches_the_scorer() -> None:
    from clinex.cohort.stats import _item_stats

    crits = ["ABDOMINAL", "HBA1C"]
    totals = _item_stats(GOLD, PRED, sorted(GOLD), crits, "patient").sum(axis=0)
    stat = count_statistic(crits)(totals)
    ref = score(GOLD, PRED)
    assert float(stat["micro.f1"]) == pytest.approx(ref["micro"]["f1"])  # 17/35
    assert float(stat["macro.f1"]) == pytest.approx(ref["macro"]["f1"])  # 11/24
    assert float(stat["micro.met.precision"]) == pytest.approx(0.5)
    assert float(stat["micro.not met.recall"]) == pytest.approx(1 / 3)
    assert float(stat["macro.met.recall"]) == pytest.approx(0.75)
    assert float(stat["HBA1C.f1"]) == pytest.approx(0.25)


def test_compare_identical_runs_p_is_one() -> None:
    r = compare_runs(GOLD, PRED, PRED, n_shuffles=200, seed=3)
    assert all(x.p_value == 1.0 and x.diff == 0.0 for x in r.results.values())
    assert r.significant == [] and r.n_items == 3 and r.unit == "patient"


def test_compare_perfect_vs_noisy_run_is_significant(shared_data: Path) -> None:
    from clinex.cohort.formats.n2c2_xml import read_patients

    gold = {p.id: p.labels for p in read_patients(shared_data / "cohort_synthetic" / "dev")}
    noisy = flipped(gold, 0.3, seed=5)
    r = compare_runs(gold, gold, noisy, n_shuffles=2_000, seed=1)
    assert r.results["micro.f1"].a == 1.0 and r.results["micro.f1"].diff > 0.2
    assert r.results["micro.f1"].p_value < 0.01 and "micro.f1" in r.significant
    again = compare_runs(gold, gold, noisy, n_shuffles=2_000, seed=1)
    assert again == r
    d = compare_runs(gold, gold, noisy, n_shuffles=500, seed=1, unit="decision")
    assert d.n_items == 36 * 13


def test_compare_cli(tmp_path: Path, cli) -> None:
    gold = write_dir(tmp_path / "gold", GOLD)
    a = write_dir(tmp_path / "a", PRED)
    b = write_dir(tmp_path / "b", PRED)
    res = cli("cohort", "compare", gold, a, b, "--shuffles", "100", "--seed", "4", "--json")
    assert res.code == 0
    out = json.loads(res.stdout)
    assert out["results"]["micro.f1"]["p_value"] == 1.0 and out["results"]["micro.f1"]["seed"] == 4
    res = cli("cohort", "compare", gold, a, b, "--shuffles", "100")
    assert res.code == 0 and "micro.f1" in res.stdout
    (b / "3.xml").unlink()
    res = cli("cohort", "compare", gold, a, b)
    assert res.code == 2 and "3.xml" in res.stderr


# --------------------------------------------------------------------------- agreement


def test_kappa_hand_case_and_undefined() -> None:
    # ABDOMINAL: A = m m n n, B = m n n n -> Po 3/4, Pe .5*.25 + .5*.75 = 1/2, kappa 1/2
    # ENGLISH: both 'met' throughout -> Pe = 1, kappa undefined (None)
    a = {str(i): {"ABDOMINAL": x, "ENGLISH": "met"} for i, x in enumerate(["met", "met", "not met", "not met"])}
    b = {str(i): {"ABDOMINAL": x, "ENGLISH": "met"} for i, x in enumerate(["met", "not met", "not met", "not met"])}
    r = agreement(a, b)
    ab = r.criteria["ABDOMINAL"]
    assert (ab.n, ab.observed, ab.kappa, ab.a_met, ab.b_met) == (4, 0.75, pytest.approx(0.5), 2, 1)
    en = r.criteria["ENGLISH"]
    assert en.kappa is None and en.observed == 1.0
    # pooled over 8 decisions: A met 6, B met 5, Po 7/8, Pe (6*5 + 2*3)/64 = 36/64
    assert r.pooled.kappa == pytest.approx((7 / 8 - 36 / 64) / (1 - 36 / 64))
    assert r.mean_kappa == pytest.approx(0.5)
    with pytest.raises(EvaluationError, match="missing from the prediction: 3"):
        agreement(a, {k: v for k, v in b.items() if k != "3"})


def test_agreement_cli(tmp_path: Path, cli) -> None:
    a = write_dir(tmp_path / "a", GOLD)
    b = write_dir(tmp_path / "b", PRED)
    res = cli("cohort", "agreement", a, b, "--json")
    assert res.code == 0
    out = json.loads(res.stdout)
    # ABDOMINAL: A m n n, B m m n -> Po 2/3, Pe (1*2 + 2*1)/9 = 4/9, kappa (2/3-4/9)/(5/9) = 2/5
    assert out["criteria"]["ABDOMINAL"]["kappa"] == pytest.approx(0.4)
    res = cli("cohort", "agreement", a, b)
    assert res.code == 0 and "pooled" in res.stdout
