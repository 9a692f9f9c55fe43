"""Binary classification measures with the official n2c2 zero-division rule."""

from __future__ import annotations

import pytest

from clinex.metrics.classification import (
    BinaryCounts,
    class_scores,
    confusion_counts,
    f1_from,
    roc_auc,
    safe_div,
)


def test_counts_and_measures_by_hand() -> None:
    gold = ["met", "met", "met", "not met", "not met"]
    pred = ["met", "met", "not met", "met", "not met"]
    c = confusion_counts(gold, pred, "met")
    assert c == BinaryCounts(tp=2, fp=1, fn=1, tn=1)
    assert c.precision == pytest.approx(2 / 3)
    assert c.recall == pytest.approx(2 / 3)
    assert c.specificity == pytest.approx(1 / 2)
    assert c.f1 == pytest.approx(2 / 3)
    assert c.auc == pytest.approx((2 / 3 + 1 / 2) / 2)
    other = confusion_counts(gold, pred, "not met")
    assert other == c.swapped() == BinaryCounts(tp=1, fp=1, fn=1, tn=2)
    assert other.precision == pytest.approx(1 / 2) and other.specificity == pytest.approx(2 / 3)


def test_zero_division_is_zero_like_the_official_scorer() -> None:
    none_predicted = BinaryCounts(tp=0, fp=0, fn=3, tn=2)
    assert none_predicted.precision == 0.0 and none_predicted.recall == 0.0 and none_predicted.f1 == 0.0
    assert none_predicted.auc == 0.5
    unused = BinaryCounts(tp=0, fp=0, fn=0, tn=4)  # a class neither side uses
    s = class_scores(unused)
    assert (s.precision, s.recall, s.f1, s.specificity) == (0.0, 0.0, 0.0, 1.0)
    assert safe_div(1, 0) == 0.0 and safe_div(1, 0, 1.0) == 1.0 and f1_from(0.0, 0.0) == 0.0


def test_counts_add_and_validate() -> None:
    assert BinaryCounts(tp=1, fn=2) + BinaryCounts(fp=3, tn=4) == BinaryCounts(tp=1, fp=3, fn=2, tn=4)
    with pytest.raises(ValueError):
        BinaryCounts(tp=-1)
    with pytest.raises(ValueError, match="differ in length"):
        confusion_counts(["met"], [], "met")


def test_roc_auc_from_scores() -> None:
    # positives 0.3, 0.8 vs negative 0.6: one of two pairs ordered correctly
    assert roc_auc([True, True, False], [0.3, 0.8, 0.6]) == 0.5
    assert roc_auc([True, False, False], [0.9, 0.4, 0.2]) == 1.0
    assert roc_auc([True, True], [0.1, 0.2]) is None  # one class only: undefined
