"""Agreement statistics on hand-computed cases."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest

from clinex.errors import EvaluationError
from clinex.metrics.agreement import cohen_kappa, observed_agreement, pabak, pairwise_f1, truncate


def test_pairwise_f1() -> None:
    assert pairwise_f1(3, 1, 2) == pytest.approx(6 / 9)
    assert pairwise_f1(0, 0, 0) == 0.0
    assert pairwise_f1(0, 4, 0) == 0.0
    assert pairwise_f1(5, 0, 0) == 1.0
    assert pairwise_f1(2, 1, 3) == pairwise_f1(2, 3, 1)  # symmetric
    with pytest.raises(ValueError):
        pairwise_f1(-1, 0, 0)


def test_observed_and_pabak() -> None:
    a = ["Low", "Low", "High", "Some concerns"]
    b = ["Low", "High", "High", "Some concerns"]
    assert observed_agreement(a, b) == 0.75
    assert pabak(a, b, 3) == pytest.approx((3 * 0.75 - 1) / 2)  # 0.625
    assert pabak(a, b, 2) == pytest.approx(0.5)  # Byrt: 2 Po - 1
    assert pabak(["x"], ["y"], 3) == pytest.approx(-0.5)
    with pytest.raises(EvaluationError):
        observed_agreement(a, b[:2])
    with pytest.raises(EvaluationError):
        pabak([], [], 3)
    with pytest.raises(ValueError):
        pabak(a, b, 1)


def test_cohen_kappa_textbook_table() -> None:
    # 50 items: yes/yes 20, no/no 15, yes/no 5, no/yes 10 -> Po 0.7, Pe 0.5, kappa 0.4
    a = ["y"] * 20 + ["n"] * 15 + ["y"] * 5 + ["n"] * 10
    b = ["y"] * 20 + ["n"] * 15 + ["n"] * 5 + ["y"] * 10
    assert cohen_kappa(a, b) == pytest.approx(0.4)
    assert cohen_kappa(a, a) == pytest.approx(1.0)
    assert math.isnan(cohen_kappa(["Low"] * 3, ["Low"] * 3))


def test_truncate() -> None:
    assert truncate(0.29 * 100 / 100 * 100) == 29.0
    assert truncate(12.765714) == 12.76
    assert truncate(Fraction(10878571, 1000000)) == 10.87
    assert truncate(-1.239) == -1.23
    assert truncate(31.72) == 31.72
