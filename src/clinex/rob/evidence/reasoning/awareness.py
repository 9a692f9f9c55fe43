"""Rules on who knew the allocation: SQs 2.1 and 2.2 (participants, carers and people
delivering the interventions), and the blinding statements read for 4.3
(:mod:`~clinex.rob.evidence.reasoning.measurement`).

An explicit statement about that kind of person
(:func:`~clinex.rob.evidence.reasoning.facts.blinding_statements`) wins over a design
label; a sentence about the participant flow ("31 in the placebo group were lost to
follow-up") is never read as a placebo or usual-care design.

References
----------
Higgins JPT et al. RoB 2 full guidance document, 22 Aug 2019 (2.1, 2.2).
"""

from __future__ import annotations

from clinex.rob.evidence.reasoning.decision import Context, Decision, _d
from clinex.rob.evidence.reasoning.facts import BlindingStatement, Finding

__all__ = ["deliverers_aware", "participants_aware", "placebo_controlled", "unblindable_comparison"]


def _statement(ctx: Context, sq: str, actor: str) -> BlindingStatement | None:
    cands = [b for b in ctx.blinding if b.actor == actor]
    if not cands:
        return None
    return min(cands, key=lambda b: (b.implied, ctx.data.rank(sq, b.sentence.section),
                                     b.blinded, b.sentence.index))


def _aware(ctx: Context, sq: str, actor: str, rule: str) -> Decision | None:
    b = _statement(ctx, sq, actor)
    if b is None:
        return None
    response = "N" if b.blinded else "Y"
    name = f"{rule}_{'blinded' if b.blinded else 'aware'}{'_implied' if b.implied else ''}"
    # a blinding implied by a design label ("a double-blind trial") without saying who was
    # blinded is PN, not N (the blind reviewers of the CONSORT-TM tuning keys, 9 of 9)
    return _d(response, name, b.sentence, weight=0.75 if b.implied else 0.9,
              hedged=b.hedged or (b.implied and b.blinded))


def participants_aware(ctx: Context, sq: str) -> Decision | None:
    """2.1: the blinding statements about participants (RoB 2 guidance 2.1)."""
    return _aware(ctx, sq, "participants", "participants")


def deliverers_aware(ctx: Context, sq: str) -> Decision | None:
    """2.2: the blinding statements about carers and people delivering the interventions."""
    return _aware(ctx, sq, "deliverers", "deliverers")


def _design_mention(ctx: Context, name: str, sq: str) -> Finding | None:
    """The first affirmed finding of ``name`` outside a sentence about the participant
    flow ("31 in the placebo group were lost to follow-up" says nothing about who knew
    the allocation)."""
    flow_words = ctx.data.patterns["participant_flow"]
    return next((f for f in ctx.find(name, sq) if not f.assertion.negated and not flow_words.search(f.sentence.text)),
                None)


def unblindable_comparison(ctx: Context, sq: str) -> Decision | None:
    """2.1/2.2 PY: behavioural, surgical or physiotherapy intervention vs usual care or waiting list."""
    f = _design_mention(ctx, "unblindable", sq)
    return _d("PY", "unblindable_comparison", f, weight=0.6) if f else None


def placebo_controlled(ctx: Context, sq: str) -> Decision | None:
    """2.1/2.2 PN: a matching placebo or sham (guidance: blinding is then likely)."""
    f = _design_mention(ctx, "placebo", sq)
    return _d("PN", "placebo_controlled", f, weight=0.6) if f else None
