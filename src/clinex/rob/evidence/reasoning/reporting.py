"""RoB 2 domain 5 rules (bias in selection of the reported result), SQs 5.1-5.3.

Registration and analysis plan; selective reporting of measures or analyses; a primary
outcome reported with another measure or time point than the registered one is 5.2 Y
(:func:`outcome_switch`).

References
----------
Higgins JPT et al. RoB 2 full guidance document, 22 Aug 2019 (domain 5).
Sterne JAC et al. RoB 2: a revised tool for assessing risk of bias in randomised
trials. BMJ 2019;366:l4898 (domain 5).
"""

from __future__ import annotations

import re

from clinex.rob.evidence.reasoning.decision import _NO, _YES, Context, Decision, _d, _hedged

__all__ = [
    "analysis_plan",
    "complete_reporting",
    "multiple_without_plan",
    "outcome_switch",
    "plan_not_prespecified",
    "prespecified_result",
    "selective_analysis",
    "selective_outcome",
]


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
