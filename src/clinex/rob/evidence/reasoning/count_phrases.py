"""Numbers and phrasings of participant counts: :func:`parse_number`, the :class:`Count`
record, and one regular expression per way a report states participants randomised,
analysed, lost or excluded (CONSORT 2010 item 13a).

Each pattern carries the report that called for it in a comment. The patterns are read by
:mod:`~clinex.rob.evidence.reasoning.counts` only (their names stay private to the two);
:class:`Count` and :func:`parse_number` are public there (re-exported).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

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
# "All had 3-month mRS data", "All participants provided primary outcome data": outcome
# data for every randomised participant, without a number (own choice: the subject must be
# a bare "all" or "all" + a people word, the object outcome data or an assessment).
_ALL_HAD = re.compile(
    rf"^\s*All(?: (?:the )?(?:randomi[sz]ed |enrolled )?{_WHO})? (?:had|provided|contributed|completed) "
    r"(?:(?:the|their|a|an) )?(?:[\w\-]+ ){0,3}?(?:outcome )?(?:data|assessments?|follow[- ]?up|scans?|measurements?)\b", re.I)
_PCTS = re.compile(r"\b\d{1,6} \(\s*(\d+(?:\.\d+)?)\s*%\s*\)")


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
