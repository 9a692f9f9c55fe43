"""RoB 2 domain 3 rules (bias due to missing outcome data), SQs 3.1-3.4.

From the participant flow (:mod:`~clinex.rob.evidence.reasoning.counts`): outcome data
for >= ``complete_share`` (95 %) of the randomised is Y for 3.1 (RoBuster placard),
fewer N; robust sensitivity analyses Y for 3.2; reasons related to health Y for 3.3,
unrelated PN; differential missingness (``differential_points``) Y for 3.4.

References
----------
Higgins JPT et al. RoB 2 full guidance document, 22 Aug 2019 (domain 3).
Dhrangadhariya A et al. RoBuster. Database 2023 (SQ 3.1 placard: >= 95 %).
"""

from __future__ import annotations

import re

from clinex.rob.evidence.reasoning.decision import _NO, Context, Decision, _d, _hedged
from clinex.rob.evidence.reasoning.facts import Finding

__all__ = [
    "balanced_missingness",
    "complete_share",
    "complete_statement",
    "differential_missingness",
    "health_reasons",
    "modest_loss",
    "no_robustness_evidence",
    "reasons_unknown",
    "robust_to_missing",
    "unrelated_reasons",
]


def complete_share(ctx: Context, sq: str) -> Decision | None:
    """3.1 from numbers: outcome data for >= ``complete_share`` of the randomised (RoBuster
    placard: 95 %) Y, else N."""
    share = ctx.flow.share
    if share is None:
        return None
    if ctx.flow.outcome_from_analysis and any(
            re.search(r"\b(per[- ]protocol|excluded|adher\w*|complian\w*|compliers?)\b", s.text, re.I)
            for s in ctx.flow_sentences):
        return None  # the number analysed per protocol says nothing about missing outcome data
    if share >= ctx.data.thresholds["complete_share"]:
        return _d("Y", "outcome_data_95pct", *ctx.flow_sentences, weight=0.9)
    if share >= ctx.data.thresholds["modest_loss_share"]:
        return _d("PN", "outcome_data_85_95pct", *ctx.flow_sentences, weight=0.8)
    return _d("N", "outcome_data_below_85pct", *ctx.flow_sentences, weight=0.9)


def complete_statement(ctx: Context, sq: str) -> Decision | None:
    """3.1 Y: "all participants completed", "no losses to follow-up"."""
    f = ctx.first("complete_all", sq)
    return _d("Y", "complete_follow_up", f, weight=0.85, hedged=_hedged(f)) if f else None


def robust_to_missing(ctx: Context, sq: str) -> Decision | None:
    """3.2 Y: sensitivity analyses / imputation show the result is robust (guidance 3.2)."""
    f = ctx.first("robust", sq)
    return _d("Y", "robust_sensitivity_analysis", f, weight=0.8) if f else None


def no_robustness_evidence(ctx: Context, sq: str) -> Decision | None:
    """3.2 N: data are missing (3.1 N/PN) and nothing shows the result is not biased
    (naive methods such as LOCF or complete-case analysis cited when present)."""
    if ctx.answers.get("3.1") not in _NO:
        return None
    f = ctx.first("naive_missing", sq)
    return _d("N", "no_evidence_not_biased", f or (ctx.flow_sentences[0] if ctx.flow_sentences else None),
              weight=0.7)


_MISSING = re.compile(
    r"\b(lost|losses|loss to|withdr(ew|awals?|awn)|drop(ped)?[- ]?outs?|discontinu\w*|missing|missed|stopped|excluded|"
    r"did not (complete|attend|return|provide)|not (tested|assessed|available|followed|contacted)|"
    r"without (an? )?([\w-]+ ){0,2}(data|scores?|assessments?|follow[- ]?up|outcomes?|tests?|scans?|diar(y|ies))|"
    r"no follow[- ]?up|declined (the |a |further )?(visit|assessment|follow[- ]?up|to)|had died|died before|"
    r"non-?completion|completion rates?|rates? of completion)\b", re.I)


#: Where reasons for missing outcome data are read (participant flow: CONSORT 2010 item 13b
#: is reported in Results; the abstract and front matter summarise it). Eligibility in the
#: Methods and speculation in the Discussion give no reason for this trial's losses.
_REASON_SECTIONS = ("results", "abstract", "front")


def _reason_sentences(ctx: Context, sq: str, name: str) -> list[Finding]:
    return [f for f in ctx.find(name, sq)
            if f.sentence.section in _REASON_SECTIONS
            and (f.affirmed or f.assertion.cue == "rob.assertion.v1:neg.without")
            and _MISSING.search(f.sentence.text)
            and not re.match(r"\W*(no|none|neither)\b", f.sentence.text, re.I)]  # "No participant discontinued because of ..."  # "the 20 pupils without a score had moved"


def reasons_unknown(ctx: Context, sq: str) -> Decision | None:
    """3.3 / 3.4 NI: the report says the reasons for missing data were not collected."""
    f = ctx.first("reasons_unknown", sq, affirmed=None)
    return _d("NI", "reasons_not_collected", f, weight=0.6) if f else None


def health_reasons(ctx: Context, sq: str) -> Decision | None:
    """3.3 Y / 3.4 PY: losses for reasons related to health (adverse events, lack of
    efficacy, deterioration; guidance 3.3)."""
    found = _reason_sentences(ctx, sq, "missing_reason_health")
    if not found:
        return None
    if sq == "3.4":
        return _d("PY", "missing_for_health_reasons", found[0], weight=0.7)
    return _d("Y", "missing_for_health_reasons", found[0], weight=0.75)


def unrelated_reasons(ctx: Context, sq: str) -> Decision | None:
    """3.3 PN / 3.4 N: losses for reasons unrelated to the outcome (moved away, personal)."""
    found = _reason_sentences(ctx, sq, "missing_reason_unrelated")
    if not found:
        return None
    return _d("PN" if sq == "3.3" else "N", "missing_for_unrelated_reasons", found[0], weight=0.7)


def differential_missingness(ctx: Context, sq: str) -> Decision | None:
    """3.4 Y: the arms' missing shares differ by >= ``differential_points``; PN when equal."""
    shares = ctx.flow.missing_shares()
    if not shares:
        return None
    if max(shares) - min(shares) >= ctx.data.thresholds["differential_points"]:
        return _d("Y", "differential_missingness", *ctx.flow_sentences, weight=0.8)
    return None


def balanced_missingness(ctx: Context, sq: str) -> Decision | None:
    """3.4 PN: losses stated to be similar between groups, or per-arm missing shares within
    ``differential_points`` of each other."""
    found = _reason_sentences(ctx, sq, "missing_balanced")
    if found:
        return _d("PN", "missingness_balanced", found[0], weight=0.65)
    shares = ctx.flow.missing_shares()
    if shares and max(shares) - min(shares) < ctx.data.thresholds["differential_points"]:
        return _d("PN", "similar_missing_shares", *ctx.flow_sentences, weight=0.6)
    return None


def modest_loss(ctx: Context, sq: str) -> Decision | None:
    """3.4 PN: a modest loss (outcome data for ``modest_loss_share`` to ``complete_share`` of
    the randomised), no health-related reason for it found and no difference between the
    arms found (the rules before this one): missingness is unlikely to depend on the true
    value (RoB 2 guidance 3.4 asks for a judgement; threshold and reading are clinex's, see
    ``reasoning.yaml``)."""
    share = ctx.flow.share
    if share is None or not (ctx.data.thresholds["modest_loss_share"] <= share < ctx.data.thresholds["complete_share"]):
        return None
    return _d("PN", "modest_loss", *ctx.flow_sentences, weight=0.55) if ctx.flow_sentences else None
