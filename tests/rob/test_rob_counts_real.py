"""Participant-flow numbers in the shapes real trial publications use (CONSORT-TM articles;
issue 22 item 4: 3.1-3.4 from the flow counts, never from sample-size allowances)."""

from __future__ import annotations

import pytest

from clinex.rob.evidence.reasoning.counts import find_counts, flow


def _kinds(text: str) -> list[tuple]:
    return [(c.kind, c.total, c.per_arm, c.of_arm) for c in find_counts(text)]


@pytest.mark.parametrize(("text", "expected"), [
    ("Five hundred seventy-eight patients were randomized to monthly or quarterly dosing regimens.",
     [("randomised", 578, (), ())]),
    ("Of 326 patients, 165 and 161 were randomised to double or standard dose oseltamivir, respectively.",
     [("randomised", 326, (165, 161), ())]),
    ("432 patients from 75 centres in 16 countries were randomised to treatment; 391 patients (90.5%) "
     "completed the study (fig 1).",
     [("randomised", 432, (), ()), ("outcome", 391, (), ())]),
    ("Loss to follow-up was only 2·7% (33 of 1209).", [("outcome", 1176, (), (1209,))]),
    ("Outcome data were missing for 18 of 120 participants (15%).", [("outcome", 102, (), (120,))]),
    ("Loss to follow-up was only 2.7%.", [("lost_share", None, (), ())]),
    ("Eight of 12 patients (67%) in group 1 and only 1 of 12 (8%) in group 2 were responders at M1.",
     [("denominators", 24, (12, 12), ())]),
    # sample-size allowances state no flow
    ("To allow for study withdrawals, our target sample size was 300 patients.", []),
    ("Therefore, thirty-two patients were recruited taking into account an expected 10% drop-out rate.", []),
])
def test_flow_numbers_of_real_sentences(text: str, expected: list[tuple]) -> None:
    assert _kinds(text) == expected


def test_result_denominators_equal_to_the_randomised_mean_all_have_data() -> None:
    first = "Twenty-four patients were randomised."
    counts = find_counts(first) + find_counts(
        "Eight of 12 patients (67%) in group 1 and only 1 of 12 (8%) in group 2 were responders at M1.", 100)
    f = flow(counts)
    assert (f.randomised, f.outcome, f.outcome_arms, f.share) == (24, 24, (12, 12), 1.0)
    assert f.evidence == [(0, len(first)), (100, 193)]  # the result sentence is 93 characters
    # denominators that do not add up to the randomised number say nothing
    f = flow(find_counts("Thirty patients were randomised.") + find_counts("Eight of 12 and 1 of 12 responded.", 50))
    assert f.outcome is None and f.share is None


def test_share_lost_without_counts_gives_the_outcome_share() -> None:
    f = flow(find_counts("1209 children were randomised.") + find_counts("Loss to follow-up was only 2.7%.", 40))
    assert f.outcome is None and f.share == pytest.approx(0.973)
    assert f.evidence == [(40, 72)]


def test_randomised_number_from_an_a_of_b_statement_with_exclusions() -> None:
    """No 'randomised' statement: the randomised number comes from '28 of the 32'; an
    exclusion count then must not need one (an IndexError on CONSORT-TM PMC3036630 once)."""
    counts = (find_counts("Twenty-eight of the 32 patients completed the study.")
              + find_counts("Five patients were excluded from the analysis.", 60))
    f = flow(counts)
    assert (f.randomised, f.outcome, f.analysed) == (32, 28, 27)
    assert f.analysis_evidence == [(60, 106)]


def test_arms_counted_one_by_one_with_their_losses() -> None:
    # CONSORT-TM PMC3391717 shape
    t = "606 patients were assigned to the magnesium group (two lost to follow-up), 597 to the placebo (one lost to follow-up)."
    counts = find_counts(t)
    assert [(c.kind, c.total, c.per_arm) for c in counts] == [("randomised", 1203, (606, 597)), ("lost", 3, ())]
    assert flow(counts).outcome == 1200


@pytest.mark.parametrize(("text", "expected"), [
    # fresh-user QA on CONSORT-TM PMC5264229 and PMC3502035
    ("Two hundred and forty-six patients from the SB2 treatment group and 259 patients from the INF treatment "
     "group completed the week 30 visit.", [("outcome", 505, (246, 259), ())]),
    ("A further 207 (9.5%) participants withdrew from the study (56 (2.6%) experienced an adverse event) and were "
     "not randomised (fig 2).", []),
    ("Of 300 patients screened before randomisation, 200 were randomised.", [("randomised", 200, (), ())]),
])
def test_flow_numbers_of_real_sentences_qa(text: str, expected: list[tuple]) -> None:
    assert _kinds(text) == expected
