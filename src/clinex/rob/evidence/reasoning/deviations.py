"""RoB 2 domain 2 rules (bias due to deviations from intended interventions), SQs 2.3-2.7.

* **2.3-2.5** deviations arising from the trial context (crossover, contamination)
  Y, "no crossover" / "all received the allocated intervention" / "no deviations from
  the intended interventions occurred" N; balance by group.
* **2.6 / 2.7** intention-to-treat Y (unless per-protocol is the primary analysis);
  per-protocol, as-treated, completers or post-randomisation exclusions N; 2.7 from
  the share excluded (threshold ``excluded_share``).

2.1 and 2.2 (who knew the allocation) are in :mod:`~clinex.rob.evidence.reasoning.awareness`.

References
----------
Higgins JPT et al. RoB 2 full guidance document, 22 Aug 2019 (domain 2).
"""

from __future__ import annotations

import re

from clinex.rob.evidence.reasoning.decision import Context, Decision, _d, _hedged

__all__ = [
    "all_analysed",
    "deviation_affects",
    "deviation_balance",
    "deviation_context",
    "deviation_none",
    "deviation_routine",
    "deviation_unknown",
    "exclusion_share",
    "itt_analysis",
    "no_deviations_stated",
    "no_exclusion_reported",
    "per_protocol_primary",
    "switch_share",
]


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
