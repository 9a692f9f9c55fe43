"""Participant numbers of a trial report: randomised, analysed and lost, per arm.

SQ 3.1 asks whether outcome data were available for all, or nearly all, randomised
participants; the RoBuster placard makes "nearly all" a number (>= 95 %). SQ 3.4 and
2.7 need the per-arm picture (differential missingness, exclusions from the
analysis). Reports give these numbers in the flow of participants (CONSORT 2010 item
13a: "for each group, the numbers of participants who were randomly assigned ... and
were analysed for the primary outcome"), in many phrasings:

* randomised: "A total of 240 patients were randomly assigned (120 to each group)",
  "We randomised 96 children", "Of the 120 participants randomised ...";
* analysed: "58 of 60 in the intervention group and 40 of 60 in the control group
  provided primary outcome data", "196 were included in the primary analysis";
* lost: "Four participants were lost to follow-up", "12 withdrew"; per arm, "Outcome
  data were missing for 37 patients (18%) in the dressing group and 8 patients (4%) in
  the standard care group", "59 participants (22%) in the application group and 54
  (20%) in the brief advice group could not be contacted".

:func:`find_counts` reads every sentence; :func:`flow` combines the counts into one
:class:`Flow` (randomised total and per arm, analysed total and per arm), each number
with the sentence it came from.

References
----------
Schulz KF, Altman DG, Moher D. CONSORT 2010 statement. BMJ 2010;340:c332 (item 13a).
Dhrangadhariya A et al. RoBuster. Database 2023 (SQ 3.1 placard: >= 95 %).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

__all__ = ["Count", "Flow", "parse_number", "find_counts", "consort_counts", "flow"]

_WORDS = {
    "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14,
    "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19,
    "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70,
    "eighty": 80, "ninety": 90, "no": 0, "none": 0,
}
_UNITS = "|".join(sorted(_WORDS, key=len, reverse=True))
_WORD_NUM = (rf"(?:(?:{_UNITS})[- ](?:hundred|thousand)(?:(?:,? and |[- ])(?:{_UNITS})(?:[- ](?:{_UNITS}))?)?"
             rf"|(?:{_UNITS})(?:[- ](?:{_UNITS}))?)")
# digits with "," or a (thin) space between thousands ("1,200", "12 406": Lancet style)
_NUM = r"(\d{1,3}(?:,\d{3})+(?!\d)|\d{1,3}(?:[ \u2009\u202f]\d{3})+(?![\d.])|\d{1,6}|" + _WORD_NUM + r")"
_WHO = (r"(?:participants?|patients?|subjects?|children|women|men|infants|adults|individuals|"
        r"people|persons|pupils|students|mothers|neonates|babies|volunteers|residents|cases|eyes|teeth)")
_GAP = r"(?:[\w\-]+ ){0,4}?"

_RANDOMISED = [
    re.compile(rf"\b{_NUM} (?:[\w\-]+ ){{0,3}}?{_WHO} (?:were |was |had been |being )?(?:randomly (?:assigned|allocated)|randomi[sz]ed|underwent randomi[sz]ation|enrolled and randomi[sz]ed)\b", re.I),
    re.compile(rf"\b{_NUM} (?:were |was |had been )(?:\w+ly )?(?:randomly (?:assigned|allocated)|randomi[sz]ed)\b", re.I),
    # "432 patients from 75 centres in 16 countries were randomised" (CONSORT-TM PMC3103669)
    re.compile(rf"\b{_NUM} {_WHO} (?:from|at|in|across) [^.;()]{{0,60}}? (?:were |was )(?:randomly (?:assigned|allocated)|randomi[sz]ed)\b", re.I),
    re.compile(rf"\b{_NUM} (?:[\w\-]+ ){{0,3}}?{_WHO} (?:entered|were entered into|were enrolled in) the (?:trial|study)\b", re.I),
    re.compile(rf"\b(?:randomi[sz]ed|randomly (?:assigned|allocated)) (?:a total of )?{_NUM} {_GAP}{_WHO}", re.I),
    re.compile(rf"\b(?:of|among|from) (?:the|all|these)? ?{_NUM} {_GAP}(?:randomi[sz]ed|randomly (?:assigned|allocated))\b", re.I),
    re.compile(rf"\brandomi[sz]ation of {_NUM}\b", re.I),
    re.compile(rf"\b{_NUM} (?:randomi[sz]ed|randomly assigned|randomly allocated) {_WHO}", re.I),
    # "Smokers recruited through community pharmacies (n = 540) were randomly assigned"
    re.compile(rf"\(n ?= ?{_NUM}\) (?:were |was )?(?:randomly (?:assigned|allocated)|randomi[sz]ed)\b", re.I),
    # a bare count with the arms in brackets ("1800 randomised (900 per group)", "160
    # allocated (80 TXA, 80 placebo)": flow lines of a results section)
    re.compile(rf"\b{_NUM} (?:randomi[sz]ed|allocated)(?= \(\s*\d)", re.I),
]
# arms in brackets, number first: "(80 TXA, 80 placebo)"
_BRACKET_ARMS = re.compile(r"^\s*\((\d{1,6}) [A-Za-z][\w-]*(?: [\w-]+)?, (\d{1,6}) [A-Za-z][\w-]*(?: [\w-]+)?\)")
_ANALYSED_WORDS = re.compile(
    r"\b(analy[sz]ed|analy[sz]is|analyses|included|completed|provided|outcome data|followed[- ]up|follow[- ]up|"
    r"assessed|available|contributed|evaluable|finished|remained|obtained|population|leaving|result|results|"
    r"scans?|samples?|data|scores?|measured|measurements?|visits?|questionnaires?|returned|diary|diaries|"
    r"surveillance|ascertained|known|tested|examined|seen|interviewed|evaluated|contacted|followed|excluded|"
    r"comprised|set|per[- ]protocol|confined|restricted)\b", re.I)
_ANALYSIS_WORDS = re.compile(r"\b(analy[sz]ed|analy[sz]is|analyses|population|leaving|evaluable|per[- ]protocol|confined|"
                             r"analysis set|full analysis)\b", re.I)
# "a of b" pairs count as data availability only in sentences saying so; "Healing was seen
# in 18 of 30 patients" is a result.
_AVAILABILITY = re.compile(
    r"\b(available|analy[sz]ed|included|completed|provided|followed[- ]up|returned|obtained|assessed|measured|"
    r"evaluable|contributed|remained|examined|data|scans?|samples?|questionnaires?|diar(y|ies)|follow[- ]up|"
    r"surveillance|ascertained|known|per[- ]protocol|population|set|scores?)\b", re.I)
_PAIR = re.compile(rf"\b{_NUM}(?: (?:of|out of) (?:the )?| ?/ ?){_NUM}\b", re.I)
# An outcome result given per arm with its denominators ("Eight of 12 patients in group 1
# and only 1 of 12 in group 2 were responders", "(115/159 ...) and (105/154 ...)"): when the
# denominators add up to the randomised number, every randomised participant has outcome
# data (CONSORT 2010 item 16: numbers analysed per group; issue 22 item 4).
# "Loss to follow-up was only 2.7%", "attrition was 4%": the share lost, no counts
_LOST_SHARE = re.compile(r"\b(?:loss(?:es)? to follow[- ]?up|lost to follow[- ]?up|attrition|drop[- ]?out rate|withdrawal rate)"
                         r"\b[^.;%]{0,30}?\b(?:was|were|of)\b[^.;%\d]{0,15}?(\d{1,2}(?:[.·]\d+)?) ?%", re.I)
_RESULT_PAIR = re.compile(rf"\b{_NUM} (?:of|out of) (?:the )?{_NUM}\b|\(\s*{_NUM} ?/ ?{_NUM}\b|(?<![\d/.])(\d{{1,6}})/(\d{{1,6}})\b(?![/.]\d)", re.I)
_ANALYSED = [
    re.compile(rf"\b{_NUM} (?:{_WHO} )?(?:in|from) the (?:[\w\-]+ ){{1,3}}?(?:group|arm) and {_NUM} (?:{_WHO} )?(?:in|from) the (?:[\w\-]+ ){{1,3}}?(?:group|arm) "
               rf"(?:completed|had|provided|returned|were (?:assessed|followed|analy[sz]ed|available))\b", re.I),
    re.compile(rf"\b{_NUM} {_GAP}(?:were |was )?(?:included in (?:the )?(?:primary |final |efficacy |main )?analys[ie]s|analy[sz]ed|"
               rf"completed (?:the )?(?:study|trial|follow[- ]?up|treatment|intervention|\d+[- ]\w+|assessment)|"
               rf"(?:had|provided|contributed) (?:complete |primary )?(?:outcome )?data|"
               rf"(?:were |was )?available for (?:the )?(?:primary )?(?:analysis|outcome|follow[- ]?up)|"
               rf"(?:were |was )?assessed (?:at|for) (?:the )?(?:primary|final|\d+))", re.I),
    re.compile(rf"\b(?:analy[sz]ed|analys[ie]s (?:included|comprised)|(?:population|analysis) (?:comprised|included|consisted of)|"
               rf"which (?:therefore )?(?:included|comprised)|leaving|(?:confined|restricted|limited) to the) (?:all )?{_NUM}\b", re.I),
    re.compile(rf"\b(?:data|results?|scans?|samples?|measurements?|assessments?|scores?|questionnaires?|records?|"
               rf"information|status|values?|outcomes?)\b[^.;]{{0,40}}?"
               rf"\b(?:were |was )?(?:available|complete|obtained|collected|completed|returned|recorded) (?:for|from|in|on|by) (?:all )?{_NUM}\b", re.I),
    # an outcome measure without "data" but with one number per arm ("Day-3 haemoglobin
    # available for 79 and 80"); the two-arm shape is what marks it as a flow statement
    re.compile(rf"^(?![^.;]*?\b(?:medication|drugs?|treatments?|therap(?:y|ies)|devices?|rescue|interventions?|staff|beds?)\b)"
               rf"[^.;]{{0,60}}?\b(?:were |was )?(?:available|complete|obtained) for {_NUM}(?= (?:and|vs\.?|versus) \d)", re.I),
    re.compile(rf"\b(?:completed|assessed|followed up|returned) by {_NUM}\b", re.I),
    re.compile(rf"\b(?:was|were) (?:thus |also |then )?(?:measured|assessed|recorded|obtained|available|known) (?:in|for|from|on) {_NUM}\b", re.I),

    re.compile(rf"\b{_NUM} (?:{_WHO} )?(?:were |was )(?:examined|assessed|seen|reviewed|interviewed|tested|measured|"
               rf"followed up|evaluated|scanned|contacted)\b", re.I),
    re.compile(rf"\b{_NUM} (?:{_WHO} )?(?:had|provided|contributed|completed|returned|attended|underwent) (?:a |an |the |their )?(?:[\w\-]+ ){{0,3}}?"
               rf"(?:scans?|assessments?|data|measurements?|samples?|visits?|questionnaires?|follow[- ]?up|scores?|results?|evaluations?|interviews?)\b", re.I),
    # any outcome measure as the subject ("Radiographs at 6 months were available for all 240
    # randomised patients", "Data were complete for all 160 participants"), the people named
    re.compile(rf"^(?!(?:[^.;]*?\b(?:medication|drugs?|treatments?|therap(?:y|ies)|devices?|rescue|interventions?|staff|beds?)\b)"
               rf"[^.;]*?\b(?:were|was) (?:available|complete|obtained)\b)"
               rf"[^.;]*?\b(?:were|was) (?:available|complete|obtained|collected|recorded) (?:for|from|in|on) "
               rf"(?:all |each of the |the )?{_NUM} (?:randomi[sz]ed |enrolled |included |allocated )?{_WHO}\b", re.I),
]
_LOST = re.compile(
    rf"\b{_NUM} {_GAP}(?:were |was |had been |had |have )?(?:lost to follow[- ]?up|withdr[ae]w\w*|dropped out|discontinued|"
    rf"did not (?:complete|attend|return|provide)|were excluded|was excluded|were not (?:assessed|analy[sz]ed|followed))", re.I)
_EXCLUDED = re.compile(
    rf"\b{_NUM} (?:[\w\-]+ ){{0,3}}?{_WHO}\b[^.;]{{0,160}}?(?:were |was |had been )?(?:excluded|removed) from (?:the |all )?(?:[\w\-]+ ){{0,2}}?(?:analys[ie]s|set|population)\b", re.I)
# "165 and 161 were randomised to double or standard dose": two arms (CONSORT-TM PMC3668094)
_RANDOMISED_TWO = re.compile(
    rf"\b{_NUM} and {_NUM} (?:{_WHO} )?(?:were |was )(?:randomly (?:assigned|allocated)|randomi[sz]ed)\b", re.I)
# "606 patients were assigned to the magnesium group (two lost to follow-up), 597 to the
# placebo": two arms, counted one by one (CONSORT-TM PMC3391717)
_ASSIGNED_ARMS = re.compile(
    rf"\b{_NUM} (?:{_WHO} )?(?:were |was )?(?:randomly )?(?:assigned|allocated|randomi[sz]ed) to (?:the |a )?(?:[\w\-]+ ){{0,3}}?"
    rf"(?:group|arm|placebo)\b[^.;]{{0,80}}?,\s*(?:and |while |whereas )?{_NUM} (?:{_WHO} )?(?:were )?(?:to|in) (?:the |a )?", re.I)
# "270 participants were allocated to each group": two arms of that number (QA4 report 5)
_RANDOMISED_EACH = re.compile(
    rf"\b{_NUM} {_GAP}{_WHO} (?:were |was )?(?:randomly )?(?:allocated|assigned|randomi[sz]ed) to each (?:group|arm)\b", re.I)
# Per-arm missing outcome data in one sentence: "Outcome data were missing for 37 patients
# (18%) in the dressing group and 8 patients (4%) in the standard care group", "59
# participants (22%) in the application group and 54 (20%) in the brief advice group could
# not be contacted" (QA4 reports 3 and 5; percentages are blanked before matching).
_ARM_PAIR = rf"{_NUM} (?:{_WHO} )?in the (?:[\w\-]+ ){{1,3}}?(?:group|arm),? and {_NUM} (?:{_WHO} )?in the (?:[\w\-]+ ){{1,3}}?(?:group|arm)"
_MISSING_ARMS = [
    re.compile(rf"\b(?:outcome |primary outcome |follow[- ]?up )?(?:data|outcomes?|assessments?|measurements?|scores?) "
               rf"(?:were|was) (?:missing|unavailable|not available|not obtained) for {_ARM_PAIR}", re.I),
    re.compile(rf"\b{_ARM_PAIR},? (?:could not be (?:contacted|traced|reached|followed up|found|assessed)|"
               rf"were (?:lost to follow[- ]?up|missing|not (?:contacted|traced|reached|assessed|followed up))|"
               rf"had (?:no|missing) (?:primary )?(?:outcome )?data|did not (?:complete|attend|return|provide))", re.I),
]
_EACH = re.compile(r"\bin (?:each|both) (?:group|arm)s?\b|\bper (?:group|arm)\b", re.I)
_ARM = re.compile(
    rf"\b{_NUM} (?:{_WHO} )?(?:were )?(?:to|in|into|allocated to|assigned to|receiving) (?:the |a |an )?(?:[\w\-]+ ){{0,3}}?(?:group|arm)\b"
    rf"|\b{_NUM} per (?:group|arm)\b|\(n ?= ?{_NUM}\)|\b{_NUM} to (?:each|both)\b"
    rf"|\b{_NUM} (?:were )?(?:allocated |assigned |randomi[sz]ed )?to (?:the )?[\w\-]+(?: [\w\-]+)?(?= and\b|,|\)|;|\.|$)", re.I)
# Sample-size and planning sentences ("Assuming a 20% drop-out rate, 100 randomised
# participants were required") state no flow.
# A negation right after an outcome-data verb ("had not returned", "were not assessed").
_NOT_AFTER = re.compile(r"\s+(?:not|no|never)\b", re.I)
_PLANNING = re.compile(r"\b(assum\w+|power|sample size|were (required|needed)|would be (required|needed)|"
                       r"to detect|anticipat\w+|expected (\d+ ?% )?(drop|attrition|loss)|"
                       r"(allow|allowing|account|accounting) for\b[^.;]{0,40}\b(drop|attrition|loss|withdraw))\w*", re.I)
# People who left before randomisation (run-in, screening failures) are no part of the flow
# of the randomised ("207 participants withdrew ... and were not randomised": CONSORT-TM
# PMC3502035)
_NOT_RANDOMISED = re.compile(r"\b(were|was|being) not randomi[sz]ed\b|\b(before|prior to) randomi[sz]ation\b|"
                             r"\brun[- ]in\b|\bscreen(ing)? failures?\b", re.I)
_RANDOMISED_VERB = re.compile(r"(?<!not )\b(were|was) (randomly (assigned|allocated)|randomi[sz]ed)\b", re.I)
#: The same test, public for the evidence models (cue votes of domain 3).
PLANNING = _PLANNING
# "All had 3-month mRS data", "All participants provided primary outcome data": outcome
# data for every randomised participant, without a number (own choice: the subject must be
# a bare "all" or "all" + a people word, the object outcome data or an assessment).
_ALL_HAD = re.compile(
    rf"^\s*All(?: (?:the )?(?:randomi[sz]ed |enrolled )?{_WHO})? (?:had|provided|contributed|completed) "
    r"(?:(?:the|their|a|an) )?(?:[\w\-]+ ){0,3}?(?:outcome )?(?:data|assessments?|follow[- ]?up|scans?|measurements?)\b", re.I)
_PCTS = re.compile(r"\b\d{1,6} \(\s*(\d+(?:\.\d+)?)\s*%\s*\)")


def _pcts(raw: str) -> tuple[float, ...]:
    return tuple(float(x) for x in _PCTS.findall(raw))


# "390 (intervention 197, control 193) provided data": a bracketed aside with numbers
# is left out before matching the statement around it.
_ASIDE = re.compile(r"\s?\((?:[A-Za-z][\w-]* \d+(?:, | and |; |\))){2}")
# "245 (98.8%)": a percentage in brackets after a number is blanked before matching.
_PERCENT = re.compile(r"\(\s*\d+(?:\.\d+)?\s*%\s*\)|\[\s*\d+(?:\.\d+)?\s*%\s*\]")
_PERCENT_AFTER = re.compile(r"^\s*\(\s*\d+(?:\.\d+)?\s*%\s*\)")


#: Digits of the longest number read as a count: a trial randomises at most some
#: hundred thousand participants; longer digit runs (identifiers, fuzzed input) are not counts.
MAX_COUNT_DIGITS = 9


def parse_number(token: str) -> int | None:
    """An integer from digits ("1,200", "96") or a number word ("four").

    Returns
    -------
    int or None
        None when ``token`` is not a number, and for digit runs that cannot be a
        count of participants: other scripts' digits and superscripts ("²", which
        ``str.isdigit`` accepts and ``int`` refuses) and runs of more than
        :data:`MAX_COUNT_DIGITS` digits (Python refuses ``int`` past 4,300).

    Examples
    --------
    >>> parse_number("1,200"), parse_number("four"), parse_number("²"), parse_number("9" * 5000)
    (1200, 4, None, None)
    """
    t = re.sub(r"[,\u2009\u202f]|(?<=\d) (?=\d{3}\b)", "", token.strip().lower())
    if t.isdigit():
        return int(t) if t.isascii() and len(t) <= MAX_COUNT_DIGITS else None
    if t in _WORDS:
        return _WORDS[t]
    total, current = 0, 0
    for w in re.split(r"[\s-]+", t):
        if w == "and":
            continue
        if w == "hundred":
            current = max(current, 1) * 100
        elif w == "thousand":
            total += max(current, 1) * 1000
            current = 0
        elif w in _WORDS:
            current += _WORDS[w]
        else:
            return None
    return total + current


@dataclass(frozen=True)
class Count:
    """One number statement of a sentence.

    Attributes
    ----------
    kind : str
        ``"randomised"``, ``"analysed"`` or ``"lost"``.
    total : int or None
        The number of participants (None when only per-arm numbers were given).
    per_arm : tuple of int
        Per-arm numbers in text order (empty when not given). For ``"analysed"`` from
        "a of b" pairs, the ``a``; the ``b`` are in ``of_arm``.
    of_arm : tuple of int
        Per-arm denominators of "a of b" pairs (randomised per arm).
    start, end : int
        The sentence's offsets into the document text.
    percents : tuple of float
        Percentages given in brackets after numbers of the statement ("141 (90%) and
        142 (92%)"), in text order; the share when the randomised number is not given.
    """

    kind: str
    total: int | None
    per_arm: tuple[int, ...] = ()
    of_arm: tuple[int, ...] = ()
    start: int = 0
    end: int = 0
    percents: tuple[float, ...] = ()


def _num(m: re.Match[str]) -> int | None:
    for g in m.groups():
        if g is not None:
            return parse_number(g)
    return None


def _arms(text: str) -> tuple[int, ...]:
    vals = []
    for m in _ARM.finditer(text):
        v = _num(m)
        if v is None:
            continue
        if re.search(r"\b(each|both|per)\b", m.group(0), re.I):
            return (v, v) if not vals else tuple(vals)
        vals.append(v)
    if len(vals) == 1 and re.search(r"\bper (group|arm)\b|\beach (group|arm)\b|\bto (each|both)\b", text, re.I):
        return (vals[0], vals[0])
    return tuple(vals) if len(vals) >= 2 else ()


_LOSS_WORDS = re.compile(r"\b(lost|loss(es)?|withdr\w+|dropped out|drop[- ]?outs?|discontinu\w+|missing|not seen|not completed|"
                         r"did not (complete|attend|return))\b", re.I)
_GAIN_WORDS = re.compile(r"(?<!not )(?<!never )\b(completed|available|analy[sz]ed|provided|contributed|returned|remained|obtained|measured|"
                         r"known|assessed|followed[- ]up|collected|recorded|examined|ascertained)\b", re.I)


def _kind(text: str) -> str:
    """``"analysis"`` when the sentence is about who was analysed, ``"lost"`` when its numbers
    count losses ("Loss to follow-up was 2.7% (33 of 1209)"), else ``"outcome"``."""
    if _LOSS_WORDS.search(text) and not _GAIN_WORDS.search(text):
        return "lost"
    return "analysis" if _ANALYSIS_WORDS.search(text) else "outcome"


def find_counts(text: str, offset: int = 0) -> list[Count]:
    """Number statements of one sentence.

    Parameters
    ----------
    text : str
        The sentence.
    offset : int
        The sentence's start in the document (for :attr:`Count.start`).

    Returns
    -------
    list of Count
        Kinds ``randomised``, ``outcome`` (participants with outcome data),
        ``excluded`` (left out of the analysis: "38 participants ... excluded from the
        primary analysis"),
        ``outcome_all`` (outcome data for every randomised participant, no number:
        "All had 3-month mRS data"; :func:`flow` gives it the randomised number),
        ``analysis`` (participants in the analysis: "included in the analysis",
        "the per-protocol population comprised", "leaving 119") and ``lost``; at most
        one of each kind per sentence.
    """
    out: list[Count] = []
    end = offset + len(text)
    if _PLANNING.search(text) or (_NOT_RANDOMISED.search(text) and not _RANDOMISED_VERB.search(text)):
        return out
    raw = text
    text = re.sub(r" {2,}", " ", _ASIDE.sub("", _PERCENT.sub("", text)))
    two = _RANDOMISED_TWO.search(text) or _ASSIGNED_ARMS.search(text)
    if two and None not in (a2 := (parse_number(two.group(1)), parse_number(two.group(2)))):
        out.append(Count("randomised", a2[0] + a2[1], a2, (), offset, end))  # type: ignore[operator,arg-type]
    for pat in () if out else _RANDOMISED:
        m = pat.search(text)
        if m:
            total = _num(m)
            if total is not None and total > 3:  # "the sequence of the two study visits was randomized" counts no participants
                arms = _arms(text[m.end():]) or _arms(text)
                br = _BRACKET_ARMS.match(raw[raw.find(m.group(0)) + len(m.group(0)):]) if m.group(0) in raw else None
                if not arms and br:
                    arms = (int(br.group(1)), int(br.group(2)))
                if arms and sum(arms) != total:
                    arms = ()
                out.append(Count("randomised", total, arms, (), offset, end))
                break
    if not out:
        m = _RANDOMISED_EACH.search(text)
        v = _num(m) if m else None
        if v and v > 1:
            out.append(Count("randomised", 2 * v, (v, v), (), offset, end))
    if _ANALYSED_WORDS.search(text):
        pairs = []
        for m in (_PAIR.finditer(text) if _AVAILABILITY.search(text) else ()):
            a, b = parse_number(m.group(1)), parse_number(m.group(2))
            if a is not None and b is not None and 0 <= a <= b and b > 1:
                pairs.append((a, b))
                if _EACH.match(text, m.end()) or re.match(r"\s*(?:[\w-]+\s+){0,2}in (?:each|both) (?:group|arm)s?\b", text[m.end():]):
                    pairs.append((a, b))  # "59 of 60 in each group"
        if len(pairs) >= 3:
            # "99 of 102 ... and 97 of 102 ... (196 of 204)": a pair that sums the others
            for i, (a, b) in enumerate(pairs):
                rest = pairs[:i] + pairs[i + 1:]
                if a == sum(x for x, _ in rest):
                    # the arms' denominators may be a subset ("265 of 269 ... (398 of 412 randomised)")
                    pairs = rest if b == sum(y for _, y in rest) else [(a, b)]
                    break
        leaving = [v for v in (parse_number(x) for x in re.findall(rf"\bleaving {_NUM}\b", text, re.I)) if v is not None]
        if len(leaving) >= 2:
            out.append(Count("analysis", sum(leaving), tuple(leaving), (), offset, end))
        elif len(pairs) >= 2 and len({b for _, b in pairs}) <= len(pairs):
            kind = _kind(text)
            if kind == "lost":  # "missing for 9 of 60 and 12 of 61": the others have data
                pairs, kind = [(b - a, b) for a, b in pairs], "outcome"
            out.append(Count(kind, sum(a for a, _ in pairs), tuple(a for a, _ in pairs),
                             tuple(b for _, b in pairs), offset, end))
        elif len(pairs) == 1 and (not out or out[0].total == pairs[0][1]):
            a, b = pairs[0]
            kind = _kind(text)
            if kind == "lost":  # "Outcome data were missing for 18 of 120": 102 of 120 have data
                a, kind = b - a, "outcome"
            arms = _arms(text)
            out.append(Count(kind, a, arms if sum(arms) == a else (), (b,), offset, end))
        else:
            for pat in _ANALYSED:
                m = pat.search(text)
                if m and _NOT_AFTER.match(text, m.end()):
                    continue  # "28 participants ... had not returned the questionnaire": missing, not analysed
                if m:
                    total = _num(m)
                    if total is not None and total > 0:
                        first = next(i for i in range(1, (m.lastindex or 1) + 1) if m.group(i) is not None)
                        arms = _arms(text[m.start(first):])
                        two = re.match(rf"((?:\s*,\s*{_NUM})*)\s*,?\s*(?:and|vs\.?|versus|v)\s+{_NUM}\b", text[m.end(first):])
                        more = ([parse_number(x) for x in re.findall(rf"{_NUM}", two.group(1))] + [parse_number(two.group(two.lastindex))]
                                if two and not arms else [])
                        both = [parse_number(g) for g in m.groups() if g is not None]
                        if pat is _ANALYSED[0] and len(both) == 2 and None not in both:
                            arms = tuple(both)  # type: ignore[assignment]  # "246 ... from the X group and 259 ... from the Y group completed"
                            total = sum(arms)
                        elif more and all(v is not None for v in more):  # "available for 141 and 142 participants"
                            arms = (total, *more)  # type: ignore[arg-type]
                            total = sum(arms)
                        elif len(arms) >= 2 and arms[0] == total:
                            total = sum(arms)  # "57 participants in the training group and 58 in ..."
                        elif arms and sum(arms) != total:
                            arms = ()
                        kind = "analysis" if _ANALYSIS_WORDS.search(m.group(0)) or (
                            _ANALYSIS_WORDS.search(text) and not re.search(r"\b(data|available|obtained)\b", text, re.I)
                        ) else "outcome"
                        out.append(Count(kind, total, arms, (), offset, end, _pcts(raw) if total else ()))
                        break
    if not any(c.kind in ("outcome", "analysis") for c in out) and _ALL_HAD.search(text):
        out.append(Count("outcome_all", None, (), (), offset, end))
    share = _LOST_SHARE.search(raw)
    if share and not any(c.kind in ("outcome", "analysis", "lost") for c in out):
        out.append(Count("lost_share", None, (), (), offset, end, (float(share.group(1).replace("·", ".")),)))
    if not any(c.kind in ("outcome", "analysis", "outcome_all") for c in out):
        dens = []
        for m in _RESULT_PAIR.finditer(text):
            nums = [parse_number(g) for g in m.groups() if g is not None]
            if len(nums) == 2 and None not in nums and 0 <= nums[0] <= nums[1]:  # type: ignore[operator]
                dens.append(nums[1])
        if len(dens) >= 2:
            out.append(Count("denominators", sum(dens), tuple(dens), (), offset, end))  # type: ignore[arg-type]
    ex = [v for v in (_num(m) for m in _EXCLUDED.finditer(text)) if v]
    if ex:
        out.append(Count("excluded", sum(ex), (), (), offset, end))
    for pat in _MISSING_ARMS:
        m = pat.search(text)
        arms = tuple(parse_number(g) for g in m.groups() if g is not None) if m else ()
        if len(arms) == 2 and all(v is not None for v in arms):
            out.append(Count("lost", sum(arms), arms, (), offset, end))  # type: ignore[arg-type]
            return out
    lost = [(m, _num(m)) for m in _LOST.finditer(text)]
    lost = [(m, v) for m, v in lost if v]  # "No child withdrew ..." states no loss
    if lost:
        m = lost[0][0]
        total = sum(v for _, v in lost)
        if total is not None:
            per_arm = tuple(
                v for v in (parse_number(x) for x in re.findall(rf"\b{_NUM} (?:in|from) the\b", text, re.I))
                if v is not None
            )
            if _EACH.search(m.group(0)) or _EACH.search(text[m.start():m.end() + 20]):
                per_arm, total = (total, total), 2 * total
            out.append(Count("lost", total, per_arm if len(per_arm) >= 2 else (), (), offset, end))
    return out


_N_EQ = r"\(\s*n\s*=\s*(\d{1,6})\s*\)"
_CONSORT_ALLOCATED = re.compile(rf"\bAllocated to\b[^()\n]{{0,80}}?{_N_EQ}", re.I)
_CONSORT_RANDOMISED = re.compile(rf"\bRandomi[sz]ed\s*{_N_EQ}", re.I)
_CONSORT_ANALYSED = re.compile(rf"\bAnaly[sz]ed\b[^()\n]{{0,60}}?{_N_EQ}", re.I)


def consort_counts(text: str) -> list[Count]:
    """Numbers of a CONSORT flow diagram given as text ("Randomised (n=300)", "Allocated
    to intervention (n=150)", "Analysed (n=143)"; CONSORT 2010 flow diagram boxes).

    Parameters
    ----------
    text : str
        The whole document (diagram boxes are often cut into several segments).

    Returns
    -------
    list of Count
        A ``randomised`` count (total and per-arm numbers of the "Allocated" boxes) and an
        ``analysis`` count (the "Analysed" boxes, which may include imputed participants:
        the outcome-data number only when no sentence gives one) when the diagram has two
        or more of them;
        offsets are those of the first box of each kind.
    """
    out: list[Count] = []
    alloc = list(_CONSORT_ALLOCATED.finditer(text))
    rand = _CONSORT_RANDOMISED.search(text)
    arms = tuple(int(m.group(1)) for m in alloc)
    if len(arms) >= 2 or rand:
        total = int(rand.group(1)) if rand else sum(arms)
        first = rand or alloc[0]
        out.append(Count("randomised", total, arms if sum(arms) == total else (), (), first.start(), first.end()))
    anal = list(_CONSORT_ANALYSED.finditer(text))
    if len(anal) >= 2:
        per = tuple(int(m.group(1)) for m in anal)
        out.append(Count("analysis", sum(per), per, arms if len(arms) == len(per) else (),
                         anal[0].start(), anal[-1].end()))
    return out


@dataclass
class Flow:
    """The participant flow of one trial, as far as the text gives it.

    Attributes
    ----------
    randomised : int or None
    randomised_arms : tuple of int
    outcome : int or None
        Participants with outcome data (SQ 3.1).
    outcome_arms : tuple of int
    analysed : int or None
        Participants in the analysis (SQ 2.6/2.7); falls back on ``outcome``.
    evidence : list of (int, int)
        Offsets of the sentences the outcome numbers came from.
    analysis_evidence : list of (int, int)
        Offsets of the sentences the analysis numbers came from.
    """

    randomised: int | None = None
    randomised_arms: tuple[int, ...] = ()
    outcome: int | None = None
    outcome_arms: tuple[int, ...] = ()
    analysed: int | None = None
    evidence: list[tuple[int, int]] = field(default_factory=list)
    analysis_evidence: list[tuple[int, int]] = field(default_factory=list)

    outcome_percents: tuple[float, ...] = ()
    outcome_from_analysis: bool = False

    @property
    def share(self) -> float | None:
        """Participants with outcome data / randomised; without a randomised number the
        mean of the percentages the report gives with the outcome numbers; else None."""
        if (not self.randomised or self.outcome is None) and self.outcome_percents:
            return sum(self.outcome_percents) / len(self.outcome_percents) / 100
        if not self.randomised or self.outcome is None or self.outcome > self.randomised:
            return None
        return self.outcome / self.randomised

    @property
    def analysed_share(self) -> float | None:
        """Participants analysed / randomised (outcome numbers when no analysis number)."""
        n = self.analysed if self.analysed is not None else self.outcome
        if not self.randomised or n is None or n > self.randomised:
            return None
        return n / self.randomised

    def missing_shares(self) -> tuple[float, ...]:
        """Per-arm share of randomised participants without outcome data (empty if unknown)."""
        if (len(self.outcome_arms) >= 2 and len(self.randomised_arms) == len(self.outcome_arms)
                and all(r > 0 and a <= r for a, r in zip(self.outcome_arms, self.randomised_arms))):
            return tuple(1 - a / r for a, r in zip(self.outcome_arms, self.randomised_arms))
        return ()


def _pick(f: Flow, cands: list[Count]) -> Count | None:
    """The statement about the most participants that fits the randomised number
    (smaller numbers in the flow are subgroups: reasons, exclusions, events)."""
    fits = []
    for c in cands:
        if c.of_arm and (f.randomised is None or sum(c.of_arm) == f.randomised or max(c.of_arm) == f.randomised):
            fits.append(c)
        elif c.total is not None and (f.randomised is None or c.total <= f.randomised) and not c.of_arm:
            fits.append(c)
    return max(fits, key=lambda c: (c.total or 0, c.start)) if fits else None


def flow(counts: Sequence[Count]) -> Flow:
    """Combine a document's number statements into one :class:`Flow`.

    The randomised total is the first ``randomised`` statement. The outcome number is
    the largest ``outcome`` statement not above it ("a of b" pairs give per-arm numbers
    and, without a randomised statement, the randomised per arm), else the randomised
    total minus every ``lost`` number, else the largest ``analysis`` statement; an
    ``outcome_all`` statement after the randomised one counts as an ``outcome`` statement
    of the randomised total and arms. The
    analysed number is the largest ``analysis`` statement (else randomised minus
    ``excluded``).

    Parameters
    ----------
    counts : sequence of Count
        All statements of the document, in text order.

    Returns
    -------
    Flow
    """
    f = Flow()
    rand = [c for c in counts if c.kind == "randomised"]
    outc = [c for c in counts if c.kind == "outcome"]
    if rand and rand[0].total:
        # "All had 3-month mRS data": every randomised participant
        outc += [Count("outcome", rand[0].total, rand[0].per_arm, (), c.start, c.end)
                 for c in counts if c.kind == "outcome_all" and c.start > rand[0].start]
    anal = [c for c in counts if c.kind == "analysis"]
    lost = [c for c in counts if c.kind == "lost"]
    if rand:
        pick = rand[0]
        f.randomised, f.randomised_arms = pick.total, pick.per_arm
        if not pick.per_arm:  # "(n = 540) were randomly assigned" ... "270 ... allocated to each group"
            f.randomised_arms = next((c.per_arm for c in rand[1:] if c.total == pick.total and c.per_arm), ())
    c = _pick(f, outc)
    if c is None:
        a = _pick(f, anal)
        # an analysed number stands for the outcome data unless losses are counted and the
        # analysed number has no per-arm denominators ("385 analysed per protocol")
        if a is not None and (not (f.randomised is not None and lost) or a.of_arm):
            c = a
            f.outcome_from_analysis = True
    if c is not None:
        f.outcome = sum(c.per_arm) if c.per_arm and c.of_arm else c.total
        f.outcome_arms = c.per_arm
        f.outcome_percents = c.percents
        if c.of_arm and (f.randomised is None or not f.randomised_arms):
            if len(c.of_arm) >= 2:
                f.randomised_arms = c.of_arm
            if f.randomised is None:
                f.randomised = sum(c.of_arm) if len(c.of_arm) >= 2 else c.of_arm[0]
        if rand:
            f.evidence.append((rand[0].start, rand[0].end))
        f.evidence.append((c.start, c.end))
    elif f.randomised is not None and lost:
        n_lost = sum(x.total or 0 for x in lost)
        if n_lost <= f.randomised:
            f.outcome = f.randomised - n_lost
            f.evidence.append((rand[0].start, rand[0].end))
            f.evidence.extend((x.start, x.end) for x in lost)
            if f.randomised_arms and all(len(x.per_arm) == len(f.randomised_arms) for x in lost):
                f.outcome_arms = tuple(
                    r - sum(x.per_arm[i] for x in lost) for i, r in enumerate(f.randomised_arms)
                )
    if f.outcome is None and not f.outcome_percents and not lost:
        ls = next((x for x in counts if x.kind == "lost_share"), None)
        if ls is not None:  # "Loss to follow-up was only 2.7%"
            f.outcome_percents = (100 - ls.percents[0],)
            f.evidence = [(ls.start, ls.end)]
    if f.outcome is None and f.randomised:
        # per-arm denominators of a result that add up to the randomised number: all analysed
        den = next((x for x in counts if x.kind == "denominators" and x.total == f.randomised
                    and (not f.randomised_arms or sorted(x.per_arm) == sorted(f.randomised_arms))), None)
        if den is not None:
            f.outcome, f.outcome_arms = f.randomised, den.per_arm
            f.evidence = ([(rand[0].start, rand[0].end)] if rand else []) + [(den.start, den.end)]
    a = _pick(f, anal)
    excluded = [c for c in counts if c.kind == "excluded"]
    if a is None and excluded and f.randomised and sum(c.total or 0 for c in excluded) < f.randomised:
        f.analysed = f.randomised - sum(c.total or 0 for c in excluded)
        f.analysis_evidence = ([(rand[0].start, rand[0].end)] if rand else []) + [(c.start, c.end) for c in excluded]
    elif a is not None:
        f.analysed = sum(a.per_arm) if a.per_arm and a.of_arm else a.total
        f.analysis_evidence = ([(rand[0].start, rand[0].end)] if rand else []) + [(a.start, a.end)]
    else:
        f.analysis_evidence = list(f.evidence)
    if len(f.evidence) == 2 and f.evidence[0] == f.evidence[1]:
        f.evidence = f.evidence[:1]
    return f
