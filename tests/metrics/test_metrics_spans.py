from __future__ import annotations

import pytest

from clinex.metrics.spans import SpanCounts, answer_tokens, count_spans, keyed_counts, normalize_answer, prf


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("A 54-year-old man", "54 year old man"),
        ("The  (IV)\troute.", "iv route"),
        ("anti-TNF-alpha", "anti tnf alpha"),
        ("a.m. dosing", "m dosing"),  # punctuation splits "a.m." and the article "a" goes
        ("another theory", "another theory"),  # articles only as whole words
        ("the", ""),
        ("Thé café", "thé café"),  # non-ASCII letters are kept, only ASCII punctuation goes
        ("", ""),
    ],
)
def test_normalize_answer(raw: str, expected: str) -> None:
    assert normalize_answer(raw) == expected


def test_answer_tokens() -> None:
    assert answer_tokens("5-FU, i.v.") == ["5", "fu", "i", "v"]
    assert answer_tokens("an") == []


def test_prf_and_zero_division() -> None:
    assert prf(1, 2, 4) == (0.5, 0.25, pytest.approx(1 / 3))
    assert prf(0, 0, 5) == (0.0, 0.0, 0.0)
    assert prf(0, 3, 0) == (0.0, 0.0, 0.0)
    assert prf(0, 0, 0) == (0.0, 0.0, 0.0)


def test_count_spans_multisets_and_duplicates() -> None:
    # gold normalises to [rash, fever]; pred to [rash, rash, high fever]
    c = count_spans(["the rash", "fever"], ["rash", "Rash.", "high fever"])
    assert (c.tp, c.n_pred, c.n_gold) == (1, 3, 2)  # the second "rash" is a false positive
    # tokens: gold {rash, fever}, pred {rash x2, high, fever}
    assert (c.token_tp, c.n_pred_tokens, c.n_gold_tokens) == (2, 4, 2)
    s = c.scores()
    assert s["em_precision"] == pytest.approx(1 / 3) and s["em_recall"] == 0.5
    assert s["em_f1"] == pytest.approx(2 * 1 / (3 + 2))
    assert s["token_precision"] == 0.5 and s["token_recall"] == 1.0
    assert s["token_f1"] == pytest.approx(2 / 3)
    # a duplicated gold span is matched by as many predicted copies only
    c = count_spans(["fever", "fever"], ["fever", "fever", "fever"])
    assert (c.tp, c.n_pred, c.n_gold, c.token_tp) == (2, 3, 2, 2)


def test_empty_normalised_span_is_a_span_without_tokens() -> None:
    c = count_spans(["the"], ["A"])
    assert (c.tp, c.n_pred, c.n_gold) == (1, 1, 1)
    assert (c.token_tp, c.n_pred_tokens, c.n_gold_tokens) == (0, 0, 0)
    assert c.scores()["token_f1"] == 0.0 and c.scores()["em_f1"] == 1.0


def test_keyed_counts_micro_sums_over_units() -> None:
    gold = [{"Effect": ["rash"], "Subject": ["a man"]}, {"Effect": ["fever", "cough"]}]
    pred = [{"Effect": ["rash"], "Treatment": ["aspirin"]}, {}]
    out = keyed_counts(gold, pred)
    assert out["Effect"] == SpanCounts(tp=1, n_pred=1, n_gold=3, token_tp=1, n_pred_tokens=1, n_gold_tokens=3)
    assert out["Subject"] == SpanCounts(n_gold=1, n_gold_tokens=1)
    assert out["Treatment"] == SpanCounts(n_pred=1, n_pred_tokens=1)
    total = out["Effect"] + out["Subject"] + out["Treatment"]
    assert (total.tp, total.n_pred, total.n_gold) == (1, 2, 4)
    with pytest.raises(ValueError, match="2 gold units but 1 predicted"):
        keyed_counts(gold, pred[:1])
