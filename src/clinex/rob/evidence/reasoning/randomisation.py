"""RoB 2 domain 1 rules (bias arising from the randomisation process), SQs 1.1-1.3.

* **1.1** a predictable sequence (alternation, dates, day of admission, record
  numbers) is N; a random component named (computer, random-number table,
  minimisation, blocks) is Y; "randomised" with no method is NI.
* **1.2** a predictable sequence is N (the allocation can be foreseen); central /
  web / pharmacy allocation or sealed opaque sequentially numbered envelopes are Y;
  other envelopes or "allocation was concealed" without a method NI; a known or open list N.
* **1.3** baseline imbalance stated (not negated) Y; balanced / no important
  differences N.

References
----------
Higgins JPT et al. RoB 2 full guidance document, 22 Aug 2019 (domain 1).
"""

from __future__ import annotations

import re

from clinex.rob.evidence.reasoning.decision import Context, Decision, _d, _hedged
from clinex.rob.evidence.reasoning.facts import Finding

__all__ = [
    "baseline_balanced",
    "baseline_imbalance",
    "concealment_adequate",
    "concealment_at_assignment",
    "concealment_inadequate",
    "concealment_partial",
    "concealment_unforeseeable",
    "predictable_sequence",
    "random_component",
    "random_list_provided",
    "randomised_no_method",
]


def predictable_sequence(ctx: Context, sq: str) -> Decision | None:
    """1.1 N and 1.2 N: alternation, dates, day of admission, record numbers (guidance 1.1/1.2)."""
    f = ctx.first("sequence_predictable", sq)
    return _d("N", "predictable_sequence", f, weight=0.9) if f else None


def random_component(ctx: Context, sq: str) -> Decision | None:
    """1.1 Y: a random component is named (computer, random-number table, minimisation)."""
    f = ctx.first("sequence_random", sq)
    return _d("Y", "random_component", f, weight=0.9, hedged=_hedged(f)) if f else None


def random_list_provided(ctx: Context, sq: str) -> Decision | None:
    """1.1 PY: a randomisation list supplied by an institute, unit or statistician (a random
    component is likely but not described)."""
    f = ctx.first("sequence_list_external", sq)
    return _d("PY", "randomisation_list_provided", f, weight=0.7) if f else None


def randomised_no_method(ctx: Context, sq: str) -> Decision | None:
    """1.1 NI: only "randomised" is said (guidance 1.1: answer No information)."""
    f = ctx.first("randomised_only", sq)
    return _d("NI", "randomised_no_method", f, weight=0.5) if f else None


def concealment_inadequate(ctx: Context, sq: str) -> Decision | None:
    """1.2 N: an open list, translucent envelopes, foreseeable assignments; or "not concealed"."""
    f = ctx.first("concealment_inadequate", sq)
    if f:
        return _d("N", "concealment_inadequate", f, weight=0.9)
    for name in ("concealment_statement", "concealment_adequate", "concealment_envelopes"):
        g = ctx.first(name, sq, affirmed=False)
        if g is not None:
            return _d("N", f"{name}_negated", g, weight=0.85)
    return None


def concealment_adequate(ctx: Context, sq: str) -> Decision | None:
    """1.2 Y: central / web / pharmacy allocation, sealed opaque sequentially numbered envelopes."""
    f = ctx.first("concealment_adequate", sq)
    return _d("Y", "concealment_adequate", f, weight=0.9, hedged=_hedged(f)) if f else None


def concealment_unforeseeable(ctx: Context, sq: str) -> Decision | None:
    """1.2 Y: recruiting staff "could neither see nor influence upcoming assignments", or
    allocation by the trial's own platform."""
    f = ctx.first("concealment_unforeseeable", sq)
    return _d("Y", "assignment_unforeseeable", f, weight=0.8) if f else None


def concealment_at_assignment(ctx: Context, sq: str) -> Decision | None:
    """1.2 PY: the allocation is made at the moment of assignment (a coin tossed, lots drawn
    after consent), so it cannot be known beforehand."""
    f = ctx.first("concealment_at_assignment", sq)
    return _d("PY", "allocated_at_assignment", f, weight=0.7) if f else None


def concealment_partial(ctx: Context, sq: str) -> Decision | None:
    """1.2 NI: envelopes without the safeguards (opaque, sealed, sequentially numbered), or
    "allocation was concealed" with no method: not enough to judge (guidance 1.2); the
    sentence is shown as the evidence considered."""
    for name in ("concealment_envelopes", "concealment_statement"):
        f = ctx.first(name, sq)
        if f:
            return _d("NI", f"{name}_without_method", f, weight=0.5)
    return None


def _baseline_findings(ctx: Context, name: str, sq: str) -> list[Finding]:
    """Findings of ``name`` in sentences that compare the randomised groups at baseline
    (``baseline_context`` and not ``baseline_not_comparison``; RoB 2 guidance 1.3: an
    outcome's change from baseline, a regression on baseline values, eligibility or a
    non-randomised group compare nothing at randomisation)."""
    pats = ctx.data.patterns
    return [f for f in ctx.find(name, sq)
            if pats["baseline_context"].search(f.sentence.text)
            and not pats["baseline_not_comparison"].search(f.sentence.text)]


def baseline_imbalance(ctx: Context, sq: str) -> Decision | None:
    """1.3 Y: an imbalance at baseline is stated; N when it is negated ("no imbalance");
    PN when the report calls it compatible with chance, but Y again when it is "larger than
    expected by chance" / "not compatible with chance" (guidance 1.3: imbalances beyond
    chance suggest a problem with the randomisation; QA3 2026-12-01). Only sentences that
    compare the randomised groups at baseline (:func:`_baseline_findings`)."""
    found = _baseline_findings(ctx, "baseline_imbalance", sq)
    if not found:
        return None
    f = found[0]
    if f.assertion.negated:
        return _d("N", "baseline_imbalance_negated", f, weight=0.75)
    if ((ctx.data.patterns["baseline_by_chance"].search(f.sentence.text)
         or re.search(r"\bchance (imbalances?|differences?)\b", f.sentence.text, re.I))
            and not re.search(r"\b(more|larger|greater|bigger) than (would be )?expected|\bbeyond\b|\bunlikely to be|"
                              r"\bnot (be )?(explained|attributable|compatible|consistent)|\b(in|not )compatible with",
                              f.sentence.text, re.I)):
        return _d("PN", "imbalance_compatible_with_chance", f, weight=0.7)
    return _d("Y", "baseline_imbalance", f, weight=0.75, hedged=_hedged(f))


def baseline_balanced(ctx: Context, sq: str) -> Decision | None:
    """1.3 N: baseline characteristics similar / no important differences (only sentences
    comparing the randomised groups at baseline, :func:`_baseline_findings`)."""
    f = next((x for x in _baseline_findings(ctx, "baseline_balanced", sq) if x.affirmed), None)
    return _d("N", "baseline_balanced", f, weight=0.8, hedged=_hedged(f)) if f else None
