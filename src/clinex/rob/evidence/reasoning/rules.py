"""Named rule functions, one small function per way an expert answers a signalling question.

Each rule reads the report's facts (:class:`Context`) and either decides the SQ — a
:class:`Decision` with the response, the rule's name and the sentences that decided
it — or returns None and leaves the SQ to the next rule. :data:`RULES` lists the
rules per SQ in the order they are tried; the first decision wins. The rules follow
RoB 2's guidance per question (Higgins et al., full guidance document, 22 Aug 2019)
and the RoBuster placards (Dhrangadhariya et al., Database 2023):

* **1.1** a predictable sequence (alternation, dates, day of admission, record
  numbers) is N; a random component named (computer, random-number table,
  minimisation, blocks) is Y; "randomised" with no method is NI (guidance: "the only
  information is that the study is randomized").
* **1.2** a predictable sequence is N (the allocation can be foreseen); central /
  web / pharmacy allocation or sealed opaque sequentially numbered envelopes are Y;
  other envelopes or "allocation was concealed" PY; a known or open list N.
* **1.3** baseline imbalance stated (not negated) Y; balanced / no important
  differences N.
* **2.1 / 2.2 / 4.3** from who the blinding statements are about
  (:func:`~clinex.rob.evidence.reasoning.facts.blinding_statements`): an explicit
  statement about that kind of person wins over a design label; a self-reported
  outcome makes the participant the outcome assessor (guidance on 4.3), and an explicit
  statement on outcome assessors is then cited as considered; a sentence about the
  participant flow ("31 in the placebo group were lost to follow-up") is never read as a
  placebo or usual-care design for 2.1/2.2.
* **2.3–2.5** deviations arising from the trial context (crossover, contamination)
  Y, "no crossover" / "all received the allocated intervention" / "no deviations from
  the intended interventions occurred" N; balance by group.
* **2.6 / 2.7** intention-to-treat Y (unless per-protocol is the primary analysis);
  per-protocol, as-treated, completers or post-randomisation exclusions N; 2.7 from
  the share excluded (threshold ``excluded_share``).
* **3.1–3.4** the participant flow (:mod:`~clinex.rob.evidence.reasoning.counts`):
  outcome data for >= ``complete_share`` (95 %) of the randomised is Y (RoBuster
  placard), fewer N; robust sensitivity analyses Y for 3.2; reasons related to
  health Y for 3.3, unrelated PN; differential missingness (``differential_points``)
  Y for 3.4.
* **4.1–4.5** the primary outcome's kind: objective (mortality, laboratory) or
  subjective (scales, ratings, self-report).
* **5.1–5.3** registration and analysis plan; selective reporting of measures or
  analyses; a primary outcome reported with another measure or time point than the
  registered one is 5.2 Y (:func:`outcome_switch`; Sterne et al., BMJ 2019, domain 5).

A question RoB 2 does not ask given the earlier answers ("If Y/PY to ...") is NA.

The rules live in one module per domain (:mod:`.randomisation`, :mod:`.awareness` for
2.1/2.2, :mod:`.deviations`, :mod:`.missing_data`, :mod:`.measurement`,
:mod:`.reporting`); :class:`Decision` and :class:`Context` in :mod:`.decision`. All are
re-exported here.
"""

from __future__ import annotations

from collections.abc import Callable

from clinex.rob.algorithm import is_applicable
from clinex.rob.evidence.reasoning.awareness import (  # noqa: F401  (re-exported: the rules by name)
    deliverers_aware,
    participants_aware,
    placebo_controlled,
    unblindable_comparison,
)
from clinex.rob.evidence.reasoning.decision import Context, Decision
from clinex.rob.evidence.reasoning.deviations import (  # noqa: F401  (re-exported: the rules by name)
    all_analysed,
    deviation_affects,
    deviation_balance,
    deviation_context,
    deviation_none,
    deviation_routine,
    deviation_unknown,
    exclusion_share,
    itt_analysis,
    no_deviations_stated,
    no_exclusion_reported,
    per_protocol_primary,
    switch_share,
)
from clinex.rob.evidence.reasoning.measurement import (  # noqa: F401  (re-exported: the rules by name)
    assessors_aware,
    could_be_influenced,
    likely_influenced,
    measurement_differs,
    measurement_inappropriate,
    outcome_kind,
    self_reported,
)
from clinex.rob.evidence.reasoning.missing_data import (  # noqa: F401  (re-exported: the rules by name)
    balanced_missingness,
    complete_share,
    complete_statement,
    differential_missingness,
    health_reasons,
    modest_loss,
    no_robustness_evidence,
    reasons_unknown,
    robust_to_missing,
    unrelated_reasons,
)
from clinex.rob.evidence.reasoning.randomisation import (  # noqa: F401  (re-exported: the rules by name)
    baseline_balanced,
    baseline_imbalance,
    concealment_adequate,
    concealment_at_assignment,
    concealment_inadequate,
    concealment_partial,
    concealment_unforeseeable,
    predictable_sequence,
    random_component,
    random_list_provided,
    randomised_no_method,
)
from clinex.rob.evidence.reasoning.reporting import (  # noqa: F401  (re-exported: the rules by name)
    _compare_outcomes,
    _time_points,
    analysis_plan,
    complete_reporting,
    multiple_without_plan,
    outcome_switch,
    plan_not_prespecified,
    prespecified_result,
    selective_analysis,
    selective_outcome,
)

__all__ = ["Decision", "Context", "RULES", "decide"]


Rule = Callable[[Context, str], "Decision | None"]

#: Rules per SQ, tried in order (the first decision wins).
RULES: dict[str, tuple[Rule, ...]] = {
    "1.1": (predictable_sequence, random_component, random_list_provided, randomised_no_method),
    "1.2": (predictable_sequence, concealment_inadequate, concealment_adequate, concealment_unforeseeable,
            concealment_at_assignment,
            concealment_partial),
    "1.3": (baseline_imbalance, baseline_balanced),
    "2.1": (participants_aware, unblindable_comparison, placebo_controlled),
    "2.2": (deliverers_aware, unblindable_comparison, placebo_controlled),
    "2.3": (deviation_unknown, deviation_routine, deviation_context, no_deviations_stated, deviation_none),
    "2.4": (deviation_affects,),
    "2.5": (deviation_balance,),
    "2.6": (per_protocol_primary, itt_analysis, all_analysed, no_exclusion_reported),
    "2.7": (switch_share, exclusion_share),
    "3.1": (complete_share, complete_statement),
    "3.2": (robust_to_missing, no_robustness_evidence),
    "3.3": (health_reasons, unrelated_reasons, reasons_unknown),
    "3.4": (differential_missingness, reasons_unknown, balanced_missingness, health_reasons, unrelated_reasons,
            modest_loss),
    "4.1": (measurement_inappropriate,),
    "4.2": (measurement_differs,),
    "4.3": (assessors_aware,),
    "4.4": (could_be_influenced,),
    "4.5": (likely_influenced,),
    "5.1": (plan_not_prespecified, analysis_plan),
    "5.2": (selective_outcome, outcome_switch, complete_reporting, multiple_without_plan, prespecified_result),
    "5.3": (selective_analysis, multiple_without_plan, prespecified_result),
}


def decide(ctx: Context, sq: str, *, conditional: bool = True) -> Decision | None:
    """The SQ's decision: NA when RoB 2 does not ask it, else the first rule's decision.

    Parameters
    ----------
    ctx : Context
        ``ctx.answers`` must hold the earlier SQs' responses.
    sq : str
    conditional : bool, default True
        False: decide even a question RoB 2 would not ask (inspection and tests).

    Returns
    -------
    Decision or None
        None when no rule decides (the caller answers NI or falls back on cues).
    """
    if conditional and not is_applicable(sq, ctx.answers):
        return Decision("NA", "not_asked", (), 1.0)
    for rule in RULES[sq]:
        d = rule(ctx, sq)
        if d is not None:
            return d
    return None


def rule_names() -> dict[str, list[str]]:
    """Rule function names per SQ (documentation and tests)."""
    return {sq: [r.__name__ for r in rules] for sq, rules in RULES.items()}
