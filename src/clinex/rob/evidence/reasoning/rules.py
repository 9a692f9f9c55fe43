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
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from clinex.rob.algorithm import is_applicable
from clinex.rob.evidence.assertion import AssertionScope
from clinex.rob.evidence.reasoning.counts import Flow
from clinex.rob.evidence.reasoning.facts import (
    BlindingStatement,
    Finding,
    ReasoningData,
    Sentence,
    find,
)

__all__ = ["Decision", "Context", "RULES", "decide"]

_YES = ("Y", "PY")
_NO = ("N", "PN")


@dataclass(frozen=True)
class Decision:
    """A rule's answer to one SQ.

    Attributes
    ----------
    response : str
        Y, PY, PN, N or NI.
    rule : str
        The rule's name (provenance ``<model>:<sq>/<rule>``).
    sentences : tuple of Sentence
        The deciding sentences (empty only for NA).
    weight : float
        Confidence in (0, 1].
    considered : tuple of (Sentence, str)
        Sentences a reviewer should see were weighed but did not decide (e.g. an
        explicit statement on outcome assessors when the participant is the assessor
        of a self-reported outcome), each with the rule name its evidence span carries;
        cited right after the first deciding sentence.
    """

    response: str
    rule: str
    sentences: tuple[Sentence, ...] = ()
    weight: float = 0.8
    considered: tuple[tuple[Sentence, str], ...] = ()


@dataclass
class Context:
    """What the rules of one document read.

    Attributes
    ----------
    data : ReasoningData
    scope : AssertionScope
    sentences : list of Sentence
        All of the report's; a pattern is read only in ``own`` (``pointers`` for the
        ``pointer_patterns`` of ``reasoning.yaml``).
    blinding : list of BlindingStatement
    flow : Flow
    flow_sentences : list of Sentence
        Sentences the outcome-data numbers came from.
    analysis_sentences : list of Sentence
        Sentences the analysed numbers came from.
    answers : dict of str to str
        Responses decided so far (RoB 2 order), for the conditional questions.
    own : frozenset of int or None
        Indices of the sentences that may decide (None: all): statements about this trial.
    pointers : frozenset of int or None
        Indices of the sentences a pointer to registration or protocol may come from.
    """

    data: ReasoningData
    scope: AssertionScope
    sentences: list[Sentence]
    blinding: list[BlindingStatement]
    flow: Flow
    flow_sentences: list[Sentence]
    analysis_sentences: list[Sentence] = field(default_factory=list)
    answers: dict[str, str] = field(default_factory=dict)
    own: frozenset[int] | None = None
    pointers: frozenset[int] | None = None
    _cache: dict[str, list[Finding]] = field(default_factory=dict)

    def find(self, name: str, sq: str | None = None) -> list[Finding]:
        """Findings of pattern ``name``, in the SQ's section reading order when given."""
        if name not in self._cache:
            allowed = self.pointers if name in self.data.pointer_patterns else self.own
            self._cache[name] = find(self.data, self.scope, name,
                                     [s for s in self.sentences if allowed is None or s.index in allowed])
        found = self._cache[name]
        if sq is None:
            return found
        return sorted(found, key=lambda f: (self.data.rank(sq, f.sentence.section), f.sentence.index))

    def first(self, name: str, sq: str, *, affirmed: bool | None = True) -> Finding | None:
        """The first finding in reading order; ``affirmed`` True/False filters on negation."""
        for f in self.find(name, sq):
            if affirmed is None or f.assertion.negated != affirmed:
                return f
        return None


def _d(response: str, rule: str, *found: Finding | Sentence | None, weight: float = 0.8,
       hedged: bool = False) -> Decision:
    sents = tuple(dict.fromkeys(x.sentence if isinstance(x, Finding) else x for x in found if x is not None))
    if hedged:
        response = {"Y": "PY", "N": "PN"}.get(response, response)
        weight *= 0.8
    return Decision(response, rule, sents, weight)


def _hedged(*found: Finding | None) -> bool:
    return any(f is not None and f.assertion.hedged for f in found)


# ---------------------------------------------------------------- domain 1


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


# ---------------------------------------------------------------- blinding


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


# ---------------------------------------------------------------- domain 2


def deviation_routine(ctx: Context, sq: str) -> Decision | None:
    """2.3 PN: the deviations reported are ones that also happen in routine care, not
    because of the trial (guidance 2.3: only deviations arising from the trial context count)."""
    f = ctx.first("deviation_routine", sq, affirmed=None)
    return _d("PN", "deviation_not_trial_context", f, weight=0.7) if f else None


def deviation_unknown(ctx: Context, sq: str) -> Decision | None:
    """2.3 NI: the report says deviations or crossover were not recorded."""
    f = ctx.first("deviation_unknown", sq, affirmed=None)
    return _d("NI", "deviations_not_recorded", f, weight=0.6) if f else None


def deviation_context(ctx: Context, sq: str) -> Decision | None:
    """2.3 Y: crossover, contamination or switching arising from the trial context."""
    f = ctx.first("deviation", sq)
    return _d("Y", "deviation_reported", f, weight=0.75, hedged=_hedged(f)) if f else None


def deviation_none(ctx: Context, sq: str) -> Decision | None:
    """2.3 N: everyone received the allocated intervention, or "no crossover"."""
    f = ctx.first("deviation_none", sq)
    if f:
        return _d("N", "received_as_allocated", f, weight=0.8)
    g = ctx.first("deviation", sq, affirmed=False)
    return _d("N", "deviation_negated", g, weight=0.8) if g else None


#: "no other / further deviations": the sentence reports that some occurred.
_NO_OTHER = re.compile(r"\b(no|none|not any) (other|further|additional|more)\b", re.I)

#: A negation right after a deviation statement ("... did not occur", "... were not observed").
_NONE_AFTER = re.compile(r"\W*((in|among|by) [\w -]{1,30}?)?\b(did not|didn't|never|were not|was not) "
                         r"(occur|happen|arise|observed|seen|noted|identified|detected)\b", re.I)


def no_deviations_stated(ctx: Context, sq: str) -> Decision | None:
    """2.3 N: the report states plainly that nobody deviated from the intended
    interventions ("No deviations from the intended interventions occurred.", "There
    were no deviations from the intended intervention.").

    RoB 2 counts for 2.3 only deviations that arose because of the trial context, and
    answers Y/PY only when there is evidence or strong reason to believe that the trial
    context led to the protocol interventions not being implemented, or to interventions
    the protocol does not allow (Sterne et al., BMJ 2019;366:l4898, domain 2; Higgins et
    al., RoB 2 full guidance document, 22 Aug 2019, elaboration of SQ 2.3). A report that
    no deviation from the intended interventions occurred leaves none that could have
    arisen from the trial context: N. Tried after :func:`deviation_context`, so a crossover
    or contamination the report describes elsewhere still decides Y.
    """
    f = ctx.first("deviation_intended", sq, affirmed=False)
    if f is not None and _NO_OTHER.search(f.sentence.text[max(0, f.start - 20):f.start + 1]):
        f = None  # "no other deviations from the intended interventions": some did occur
    if f is None:  # the negation after the match: "Deviations from ... did not occur."
        f = next((g for g in ctx.find("deviation_intended", sq)
                  if g.affirmed and _NONE_AFTER.match(g.sentence.text[g.end:])), None)
    return _d("N", "no_deviations_stated", f, weight=0.8) if f else None


def deviation_affects(ctx: Context, sq: str) -> Decision | None:
    """2.4: "unlikely to have affected" PN, "could have affected" PY; deviations in the trial
    context reported without either PY (guidance 2.4), PN when the sentence counts them and
    they are at most ``excluded_share`` of the smallest randomised arm."""
    f = ctx.first("deviation_no_effect", sq, affirmed=None)
    if f:
        return _d("PN", "deviation_unlikely_to_affect", f, weight=0.7)
    g = ctx.first("deviation_effect", sq, affirmed=None)
    if g:
        return _d("PY", "deviation_could_affect", g, weight=0.7)
    h = ctx.first("deviation", sq)
    if h is None:
        return None
    n = _people_count(h.sentence.text)
    arm = min(ctx.flow.randomised_arms) if ctx.flow.randomised_arms else None
    if n and arm and n / arm <= ctx.data.thresholds["excluded_share"]:  # "No participants ...": no count
        # "Three patients in the standard care group obtained a device privately" of 120 per
        # arm: too few to affect the outcome (clinex's threshold, as for 2.7)
        return _d("PN", "few_deviations", h, weight=0.55)
    return _d("PY", "deviation_likely_affects", h, weight=0.55)


_PEOPLE = re.compile(r"^\W*(\d{1,6}|[A-Za-z]+(?:-[a-z]+)?) (?:[\w-]+ ){0,2}?(?:patients?|participants?|subjects?|children|women|men|"
                     r"infants|pupils|people)\b", re.I)


def _people_count(text: str) -> int | None:
    """The number of people a sentence starts with ("Three patients in the ... group ..."), else None."""
    from clinex.rob.evidence.reasoning.counts import parse_number

    m = _PEOPLE.match(text)
    return parse_number(m.group(1)) if m else None


def deviation_balance(ctx: Context, sq: str) -> Decision | None:
    """2.5 ("Were these deviations from intended intervention balanced between groups?"):
    deviations balanced between groups Y; in one group only, unequal, or a balance
    statement negated ("the deviations were not balanced between groups") N."""
    balanced = ctx.data.patterns["deviation_balanced"]
    for f in ctx.find("deviation", sq):
        txt = f.sentence.text
        if ctx.data.patterns["deviation_unbalanced"].search(txt):
            return _d("N", "deviation_unbalanced", f, weight=0.7)
        m = balanced.search(txt)
        if m:
            (a,) = ctx.scope.check(txt, [(m.start(), m.end())])
            if a.negated:
                return _d("N", "deviation_balance_negated", f, weight=0.7)
            return _d("Y", "deviation_balanced", f, weight=0.7)
    f = ctx.first("deviation_unbalanced", sq, affirmed=None)
    if f:
        return _d("N", "deviation_unbalanced", f, weight=0.6)
    # a balance statement of its own about the deviations ("These deviations were not
    # balanced between the groups."), never one about baseline characteristics
    for g in ctx.find("deviation_balanced", sq):
        if _DEVIATION_WORD.search(g.sentence.text):
            return _d("N" if g.assertion.negated else "Y",
                      "deviation_balance_negated" if g.assertion.negated else "deviation_balanced", g, weight=0.6)
    return None


_DEVIATION_WORD = re.compile(r"\b(deviations?|crossovers?|cross(ed)?[- ]over|switch(es|ed|ing)|departures?|contamination)\b",
                             re.I)


def per_protocol_primary(ctx: Context, sq: str) -> Decision | None:
    """2.6 N: per-protocol / as-treated / completers, or exclusions after randomisation
    (not for missing outcome data, which is domain 3), unless intention-to-treat is named
    the primary analysis or the per-protocol analysis is a secondary one."""
    for f in ctx.find("per_protocol", sq):
        if not f.affirmed:
            continue
        low = f.sentence.text.lower()
        if ctx.data.patterns["missing_not_pp"].search(f.sentence.text):
            continue
        if ctx.data.patterns["secondary_analysis"].search(low):
            continue
        if re.search(r"\bincluded in the (itt|intention[- ]to[- ]treat|full analysis)\b", low):
            continue  # "though included in the ITT analyses, they were excluded from the per-protocol ..."
        if re.search(r"\b(on|at|before) (the )?(screening|baseline|enrol+ment|entry|study entry|randomi[sz]ation|day 0)\b",
                     low) and not re.search(r"\b(after|following) (the )?randomi[sz]ation\b", low):
            # "we included only patients with RT-PCR proved infection on screening (day 0)": an
            # exclusion on data from before randomisation (guidance 2.6 accepts it)
            continue
        if ctx.first("itt_primary", sq) is not None:
            return None
        return _d("N", "per_protocol_analysis", f, weight=0.85)
    return None


def itt_analysis(ctx: Context, sq: str) -> Decision | None:
    """2.6 Y: intention-to-treat, or participants analysed in the groups they were
    randomised to; N when negated; modified ITT PY."""
    f = ctx.first("itt", sq, affirmed=None)
    m = ctx.first("mitt", sq)
    if f is None and m is None:
        return None
    if f is not None and f.assertion.negated:
        return _d("N", "itt_negated", f, weight=0.8)
    if m:
        dosed = next((x for x in ctx.find("mitt_dosed", sq) if x.affirmed and x.sentence is m.sentence), None)
        if dosed is not None:
            # guidance 2.6: leaving out randomised participants who never started the
            # intervention is not an analysis of all randomised participants
            return _d("PN", "modified_itt_excludes_undosed", m, weight=0.7)  # the same sentence defines it
        return _d("PY", "modified_itt", m, weight=0.7)
    assert f is not None
    return _d("Y", "intention_to_treat", f, weight=0.9, hedged=_hedged(f))


def all_analysed(ctx: Context, sq: str) -> Decision | None:
    """2.6 Y: the analysed numbers equal the randomised numbers."""
    fl = ctx.flow
    if fl.randomised and fl.analysed == fl.randomised:
        return _d("Y", "all_randomised_analysed", *ctx.analysis_sentences, weight=0.75)
    return None


def no_exclusion_reported(ctx: Context, sq: str) -> Decision | None:
    """2.6 PY: the report gives its participant flow and reports no per-protocol,
    as-treated or other exclusion from the analysis: participants are taken as analysed in
    their randomised groups, those without outcome data left out (RoB 2 guidance 2.6: such
    an available-case analysis is appropriate; the missing data are domain 3's). How the
    blind reviewers of the CONSORT-TM tuning keys answered such reports (e.g. 184 of 188
    analysed, no analysis set named)."""
    fl = ctx.flow
    share = fl.analysed_share if fl.analysed_share is not None else fl.share
    if share is None:
        return None
    if any(f.affirmed for f in ctx.find("per_protocol", sq)):
        return None
    sents = ctx.analysis_sentences or ctx.flow_sentences
    return _d("PY", "no_exclusion_reported", *sents, weight=0.55) if sents else None


def switch_share(ctx: Context, sq: str) -> Decision | None:
    """2.7 Y: in an analysis not by assignment, more than ``excluded_share`` of an arm
    received the other intervention ("34 of 272 (12.5%) ... underwent appendicectomy")."""
    from clinex.rob.evidence.reasoning.counts import parse_number

    limit = ctx.data.thresholds["excluded_share"]
    for f in ctx.find("deviation", sq):
        if not f.affirmed:
            continue
        for m in re.finditer(r"\b(\d[\d,]*|[A-Za-z-]+) (?:of|out of) (\d[\d,]*)\b", f.sentence.text):
            a, b = parse_number(m.group(1)), parse_number(m.group(2))
            if a is not None and b and 0 < a <= b and a / b > limit:
                return _d("Y", "substantial_switches", f, weight=0.7)
    return None


def exclusion_share(ctx: Context, sq: str) -> Decision | None:
    """2.7 from the share of randomised participants left out of the analysis
    (> ``excluded_share``: Y, else N; clinex's threshold, RoB 2 gives none)."""
    share = ctx.flow.analysed_share
    if share is None:
        return None
    limit = ctx.data.thresholds["excluded_share"]
    why = next((f for f in ctx.find("per_protocol", sq)
                if f.affirmed and not ctx.data.patterns["missing_not_pp"].search(f.sentence.text)), None)
    sents = ([why.sentence] if why else []) + [s for s in ctx.analysis_sentences if why is None or s is not why.sentence]
    if 1 - share > limit:
        return _d("Y", "substantial_exclusions", *sents, weight=0.75)
    return _d("N", "few_exclusions", *sents, weight=0.7)


# ---------------------------------------------------------------- domain 3


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


# ---------------------------------------------------------------- domain 4


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


# ---------------------------------------------------------------- domain 5


def plan_not_prespecified(ctx: Context, sq: str) -> Decision | None:
    """5.1 N: post hoc analyses, retrospective registration, "not registered". A post hoc
    analysis (or one "after unblinding") that is not of the primary outcome says nothing
    about the plan of the result assessed (RoB 2 guidance 5.1 is about the analysis of the outcome being assessed;
    issue 22: "any post hoc sentence makes 5.1 N even beside a prespecified analysis plan")."""
    for f in ctx.find("post_hoc", sq):
        if not f.affirmed:
            continue
        cue = f.sentence.text[f.start:f.end]
        if (re.search(r"\bpost[- ]?hoc\b|\bafter (unblinding|the data were)", cue, re.I)
                and not re.search(r"\bprimary (outcome|end ?point|analysis|efficacy)\b(?![^.;]{0,20}\bwas used\b)|"
                                  r"\b(changed|redefined|switched|modified|altered|replaced)\b", f.sentence.text, re.I)):
            continue  # a post hoc analysis of something else says nothing of the assessed result's plan
        return _d("N", "not_prespecified", f, weight=0.75)
    g = ctx.first("registration", sq, affirmed=False) or ctx.first("analysis_plan", sq, affirmed=False)
    return _d("N", "plan_negated", g, weight=0.75) if g else None


def analysis_plan(ctx: Context, sq: str) -> Decision | None:
    """5.1 Y: a pre-specified analysis plan or protocol; PY for a registration number alone."""
    f = ctx.first("analysis_plan", sq)
    if f:
        return _d("Y", "prespecified_plan", f, ctx.first("registration", sq), weight=0.85, hedged=_hedged(f))
    g = ctx.first("registration", sq)
    if g:
        prospective = "prospective" in g.sentence.text.lower() or "protocol" in g.sentence.text.lower()
        return _d("Y" if prospective else "PY", "registered", g, weight=0.75)
    return None


def selective_outcome(ctx: Context, sq: str) -> Decision | None:
    """5.2 Y: results reported selectively from several measures or time points."""
    f = ctx.first("selective_outcome", sq)
    return _d("Y", "selective_outcome_reporting", f, weight=0.85, hedged=_hedged(f)) if f else None


def selective_analysis(ctx: Context, sq: str) -> Decision | None:
    """5.3 Y: one of several analyses reported, chosen on its result."""
    f = ctx.first("selective_analysis", sq)
    return _d("Y", "selective_analysis_reporting", f, weight=0.8, hedged=_hedged(f)) if f else None


#: A time point in an outcome phrase: "at 6 months", "within 24 hours", "30-day", "at 3 and
#: 6 months" (every number of a list takes the unit after it), "day 28", "week 12".
_NUM = r"(?:\d+(?:\.\d+)?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|eighteen|twenty(?:-four)?|thirty|forty(?:-eight)?|sixty|seventy(?:-two)?|ninety)"
_UNIT = r"(?P<unit>hours?|hrs?|h|days?|weeks?|wks?|months?|mo|years?|yrs?)"
_TIME = re.compile(rf"\b(?P<nums>{_NUM}(?:\s*(?:,|and|or|to|-|\u2013)\s*{_NUM})*)[- ]?{_UNIT}\b"
                   rf"|\b(?P<unit2>day|week|month|year)[- ]?(?P<num2>\d+)\b", re.I)
_DAYS = {"h": 1 / 24, "d": 1.0, "w": 7.0, "m": 30.44, "y": 365.25}
#: Function words and the words of a time point: never what tells two measures apart.
_FUNCTION = frozenset(
    "a an the of on in at by with as and or to for from after within over during up until was were is are be "
    "been its their his her this that which who using used any all each per than between".split())
_TOKEN = re.compile(r"[A-Za-z][A-Za-z0-9'-]*")
#: An abbreviation (two or more capitals: "ODI", "PONV", "PHQ-9"): it may stand for the words
#: of the other phrase ("PONV" for "nausea or vomiting"), so measures are then never called different.
_ACRONYM = re.compile(r"\b[A-Za-z]*[A-Z][A-Za-z0-9-]*[A-Z][A-Za-z0-9-]*\b")


def _time_points(phrase: str) -> set[float]:
    """The time points of an outcome phrase, in days ("at 3 and 6 months" -> {91.3, 182.6}).

    Parameters
    ----------
    phrase : str

    Returns
    -------
    set of float
        Days, rounded to 0.1 (a month is 30.44 days, a year 365.25: mean Gregorian lengths).
    """
    from clinex.rob.evidence.reasoning.counts import parse_number

    out: set[float] = set()
    for m in _TIME.finditer(phrase):
        if m.group("nums"):
            unit = m.group("unit").lower()
            nums = re.findall(_NUM, m.group("nums"), re.I)
        else:
            unit, nums = m.group("unit2").lower(), [m.group("num2")]
        for n in nums:
            value = float(n) if n[0].isdigit() else parse_number(n)
            if value is not None:
                out.add(round(value * _DAYS[unit[0]], 1))
    return out


def _outcome_phrase(data_pattern: re.Pattern[str], text: str) -> str | None:
    """The outcome phrase (named groups ``o1``, ``o2`` ...) of the first match, or None."""
    m = data_pattern.search(text)
    if m is None:
        return None
    return next((v for k, v in m.groupdict().items() if k.startswith("o") and v), None)


def _compare_outcomes(registered: str, reported: str) -> str | None:
    """``"different"``, ``"same"`` or None (cannot tell) for two primary-outcome phrases.

    Different: both name a time point and no time point is shared (6 months vs 12 months,
    within 10 % in days), or their words share nothing (function and time words left out)
    and neither holds an abbreviation that could stand for the other's words. Same: they share
    a word and the same time points (or neither names one); "pain at 3 and 6 months" against
    "pain at 3 months" is neither. clinex's own, deliberately conservative rule (the 10 %
    tolerance lets "26 weeks" equal "6 months"): an undecidable pair is None and never a switch.

    Parameters
    ----------
    registered, reported : str
        The outcome phrases (``registered_primary`` / ``reported_primary`` groups).

    Returns
    -------
    str or None
    """
    t1, t2 = _time_points(registered), _time_points(reported)

    def near(a: float, b: float) -> bool:
        return abs(a - b) <= 0.1 * max(a, b)

    times_differ = bool(t1 and t2) and not any(near(a, b) for a in t1 for b in t2)
    times_same = (all(any(near(a, b) for b in t2) for a in t1) and all(any(near(a, b) for a in t1) for b in t2))

    def words(x: str) -> set[str]:
        x = _TIME.sub(" ", x)
        return {w.lower().strip("'-") for w in _TOKEN.findall(x)} - _FUNCTION - {""}

    w1, w2 = words(registered), words(reported)
    shared = w1 & w2
    acronyms = {a.lower() for a in _ACRONYM.findall(registered + " " + reported)}
    measures_differ = bool(w1 and w2) and not shared and not acronyms
    if times_differ or measures_differ:
        return "different"
    if shared and times_same:
        return "same"
    return None


def outcome_switch(ctx: Context, sq: str) -> Decision | None:
    """5.2: the primary outcome the registry or protocol names compared with the one the
    report states or presents.

    RoB 2 domain 5 asks whether the result was selected from multiple eligible outcome
    measurements (scales, definitions, time points) within the outcome domain (Sterne et al.,
    BMJ 2019;366:l4898, domain 5, SQ 5.2; Higgins et al., full guidance document, 22 Aug
    2019: a result reported for a measure or time point other than the pre-specified one is
    evidence of selection). "The registered primary outcome was disability on the Oswestry
    Disability Index at 12 months" with "The primary outcome was pain intensity at 6 months"
    (or "in this report, pain at 6 months is presented as the primary outcome") is Y, citing
    the report's sentence, then the registered one. When both sentences name the same
    measure and time point the outcome is as planned: N when the plan was pre-specified
    (5.1 Y/PY), PN otherwise (``reported_as_registered``).

    Conservative (clinex's own choice): both sentences must be found and must name clearly
    different measures or time points (:func:`_compare_outcomes`); a registered-outcome
    sentence that says it is the one reported here ("as in this report", pattern
    ``as_planned``) is never a switch; and a pair that cannot be told apart decides nothing.
    """
    reg_pat, rep_pat = ctx.data.patterns["registered_primary"], ctx.data.patterns["reported_primary"]
    registered = [f for f in ctx.find("registered_primary", sq) if not f.assertion.negated]
    if not registered:
        return None
    r = registered[0]
    if ctx.data.patterns["as_planned"].search(r.sentence.text):
        return None
    r_phrase = _outcome_phrase(reg_pat, r.sentence.text)
    reported = [f for f in ctx.find("reported_primary", sq)
                if f.sentence != r.sentence and not reg_pat.search(f.sentence.text)]
    if r_phrase is None:
        return None
    verdicts = [(f, _compare_outcomes(r_phrase, _outcome_phrase(rep_pat, f.sentence.text) or "")) for f in reported]
    # "registered with ODI at 12 months as the primary outcome; in this report, pain at 6 months is
    # presented as the primary outcome": the report's statement after the registered one
    m = reg_pat.search(r.sentence.text)
    tail = _outcome_phrase(rep_pat, r.sentence.text[m.end():]) if m else None
    if tail is not None:
        verdicts.insert(0, (r, _compare_outcomes(r_phrase, tail)))
    if any(v == "same" for _, v in verdicts):
        same = next(f for f, v in verdicts if v == "same")
        if any(v == "different" for _, v in verdicts):
            return None  # the report names both: cannot tell which result was selected
        if ctx.answers.get("5.1") in _YES:
            return _d("N", "reported_as_registered", same, r, weight=0.75)
        return _d("PN", "reported_as_registered", same, r, weight=0.6)
    switched = next((f for f, v in verdicts if v == "different"), None)
    return _d("Y", "outcome_switched_from_registered", switched, r, weight=0.8) if switched else None


def complete_reporting(ctx: Context, sq: str) -> Decision | None:
    """5.2 PN: results are given for every time point or measure (nothing to select from)."""
    f = ctx.first("complete_reporting", sq)
    return _d("PN", "all_results_reported", f, weight=0.6) if f else None


def multiple_without_plan(ctx: Context, sq: str) -> Decision | None:
    """5.2 / 5.3 PY: several eligible measures or time points (5.2), or several analyses
    (5.3), are reported or mentioned and the analysis was not pre-specified (5.1 N/PN):
    nothing stops the result from having been selected (guidance 5.2/5.3)."""
    if ctx.answers.get("5.1") not in _NO:
        return None
    f = ctx.first("multiple_measures" if sq == "5.2" else "multiple_analyses", sq)
    return _d("PY", "several_eligible_results_no_plan", f, weight=0.6) if f else None


def prespecified_result(ctx: Context, sq: str) -> Decision | None:
    """5.2 / 5.3: a single primary outcome (5.2) or analysis (5.3) as planned: N when the plan
    was pre-specified (5.1 Y/PY), PN otherwise."""
    names = ("as_planned", "single_outcome", "primary_outcome") if sq == "5.2" else ("as_planned", "single_analysis")
    if sq == "5.3" and ctx.answers.get("5.1") in _YES:
        names = (*names, "analysis_any")  # a pre-specified plan and an analysis described: N
    f = next((x for x in (ctx.first(n, sq) for n in names) if x is not None), None)
    if f is None:
        return None
    if ctx.answers.get("5.1") in _YES:
        return _d("N", "as_prespecified", f, weight=0.7)
    return _d("PN", "single_reported", f, weight=0.55)


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


