"""RoB 2 domain 4 rules (bias in measurement of the outcome), SQs 4.1-4.5.

From the primary outcome's kind: objective (mortality, laboratory) or subjective
(scales, ratings, self-report). A self-reported outcome makes the participant the
outcome assessor (guidance on 4.3), and an explicit statement on outcome assessors is
then cited as considered.

References
----------
Higgins JPT et al. RoB 2 full guidance document, 22 Aug 2019 (domain 4).
"""

from __future__ import annotations

import re

from clinex.rob.evidence.reasoning.awareness import _aware, _statement
from clinex.rob.evidence.reasoning.decision import Context, Decision, _d
from clinex.rob.evidence.reasoning.facts import BlindingStatement, Finding, Sentence

__all__ = [
    "assessors_aware",
    "could_be_influenced",
    "likely_influenced",
    "measurement_differs",
    "measurement_inappropriate",
    "outcome_kind",
    "self_reported",
]


def _primary(ctx: Context, sq: str) -> Finding | None:
    return ctx.first("primary_outcome", sq)


def _outcome_window(f: Finding) -> str:
    """The primary-outcome clause (the sentence cut at ";" and at ", and" after the
    match) without what follows "secondary" after the match."""
    text = f.sentence.text
    a = text.rfind(";", 0, f.start) + 1
    cut = re.search(r";|, (and|but|while|whereas) ", text[f.end:])
    text = text[a: f.end + cut.start() if cut else len(text)]
    i = text.lower().find("secondary", f.end - a)
    return text[:i] if i > 0 else text


def outcome_kind(ctx: Context) -> tuple[str | None, Finding | None]:
    """``"objective"``, ``"subjective"`` or None for the primary outcome, and its finding."""
    f = _primary(ctx, "4.1")
    if f is None:
        return None, None
    window = _outcome_window(f)
    if ctx.data.patterns["objective_outcome"].search(window):
        return "objective", f
    if ctx.data.patterns["subjective_outcome"].search(window):
        return "subjective", f
    return None, f


def self_reported(ctx: Context) -> Finding | None:
    """The primary outcome sentence when the outcome is self-reported (questionnaire, diary);
    without a primary-outcome sentence, the first sentence saying an outcome was self-reported."""
    f = _primary(ctx, "4.3")
    if f is not None:
        return f if ctx.data.patterns["self_reported"].search(_outcome_window(f)) else None
    return ctx.first("self_reported", "4.3")


def measurement_inappropriate(ctx: Context, sq: str) -> Decision | None:
    """4.1 N: a validated or standard measure, or a defined primary outcome (guidance 4.1:
    inappropriate measurement is rare and then stated)."""
    f = ctx.first("valid_measure", sq)
    if f:
        return _d("N", "validated_measure", f, weight=0.8)
    p = _primary(ctx, sq)
    return _d("N", "defined_primary_outcome", p, weight=0.6) if p else None


def measurement_differs(ctx: Context, sq: str) -> Decision | None:
    """4.2: different assessment schedules by group Y; the same method in both groups N;
    a primary outcome measured by design in all participants N."""
    f = ctx.first("different_measure", sq)
    if f:
        return _d("Y", "different_ascertainment", f, weight=0.7)
    g = ctx.first("same_measure", sq)
    if g:
        return _d("N", "same_method_both_groups", g, weight=0.8)
    p = _primary(ctx, sq)
    return _d("N", "same_outcome_by_design", p, weight=0.55) if p else None


def _explicit(ctx: Context, sq: str, actor: str) -> BlindingStatement | None:
    """The best statement naming ``actor`` (not one implied by a design label)."""
    b = _statement(ctx, sq, actor)
    return b if b is not None and not b.implied else None


def assessors_aware(ctx: Context, sq: str) -> Decision | None:
    """4.3: who assessed the outcome, and whether they knew the allocation (guidance 4.3).

    In order:

    1. A participant-reported primary outcome (questionnaire, diary, pain on a visual
       analogue scale "reported by the patient"): the outcome assessor is the participant
       (RoB 2 guidance on 4.3), so the statements about participants decide — "The surgeon
       could not be blinded but patients were." is 4.3 N; the surgeon's awareness is for
       2.2, not 4.3. Evidence: the participants' sentence, then an explicit statement on
       outcome assessors as considered (``assessors_<blinded|aware>_considered``: the
       reviewer sees it was weighed), then the outcome sentence.
    2. An explicit statement on outcome assessors, or a design label covering them. It
       also wins over step 1 when the self-report was found only outside a primary-outcome
       sentence (which outcome it is about is then unknown).
    3. A primary outcome participant-reported by its nature (pain, symptoms, quality of
       life: pattern ``participant_reported_kind``) whose sentence names nobody else as
       assessing it, with an explicit statement about participants: PN when they were
       blinded, PY when aware (guidance 4.3; probable, hence PN/PY).
    4. Nobody named as assessing, and carers known to be aware: they record the outcome
       (guidance 4.3); a hint, hence PY.
    """
    sr = self_reported(ctx)
    primary = _primary(ctx, sq)
    assessor = _explicit(ctx, sq, "assessors")
    if sr is not None and (primary is not None or assessor is None):
        d = _aware(ctx, sq, "participants", "self_reported_participants")
        if d is not None:
            considered: tuple[tuple[Sentence, str], ...] = ()
            if assessor is not None and assessor.sentence not in (*d.sentences, sr.sentence):
                considered = ((assessor.sentence,
                               f"assessors_{'blinded' if assessor.blinded else 'aware'}_considered"),)
            return Decision(d.response, d.rule, (*d.sentences, sr.sentence), d.weight, considered)
    d = _aware(ctx, sq, "assessors", "assessors")
    if d is not None:
        return d
    participants = _explicit(ctx, sq, "participants")
    if primary is not None and participants is not None:
        window = _outcome_window(primary)
        if (ctx.data.patterns["participant_reported_kind"].search(window)
                and not ctx.data.patterns["objective_outcome"].search(window)
                and not any(ctx.data.actors[a].search(window) for a in ("assessors", "deliverers"))):
            rule = f"participant_reported_kind_participants_{'blinded' if participants.blinded else 'aware'}"
            return _d("PN" if participants.blinded else "PY", rule, participants.sentence, primary,
                      weight=0.6)
    # nobody named as assessing: in a trial whose carers knew the allocation they record
    # the outcome (guidance 4.3); a hint, hence PY
    carers = [b for b in ctx.blinding if b.actor == "deliverers" and not b.blinded and not b.implied]
    if carers:
        return _d("PY", "carers_aware_no_assessor_named", carers[0].sentence, weight=0.55)
    return None


def could_be_influenced(ctx: Context, sq: str) -> Decision | None:
    """4.4: an objective outcome N; a subjective one Y when assessors were aware (PY when
    unknown)."""
    kind, f = outcome_kind(ctx)
    if kind == "objective":
        return _d("N", "objective_outcome", f, weight=0.8)
    if kind == "subjective":
        return _d("Y" if ctx.answers.get("4.3") == "Y" else "PY", "subjective_outcome", f, weight=0.75)
    return None


def likely_influenced(ctx: Context, sq: str) -> Decision | None:
    """4.5: a subjective outcome assessed with knowledge of the allocation PY; objective PN."""
    kind, f = outcome_kind(ctx)
    if kind == "subjective":
        return _d("PY", "subjective_outcome_aware_assessor", f, weight=0.65)
    if kind == "objective":
        return _d("PN", "objective_outcome", f, weight=0.65)
    return None
