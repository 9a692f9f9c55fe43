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
with the sentence it came from. The numbers, the :class:`Count` record and the phrasings
are in :mod:`~clinex.rob.evidence.reasoning.count_phrases`, the flow in
:mod:`~clinex.rob.evidence.reasoning.participant_flow` (both re-exported here).

References
----------
Schulz KF, Altman DG, Moher D. CONSORT 2010 statement. BMJ 2010;340:c332 (item 13a).
Dhrangadhariya A et al. RoBuster. Database 2023 (SQ 3.1 placard: >= 95 %).
"""

from __future__ import annotations

import re

from clinex.rob.evidence.reasoning.count_phrases import (
    _ALL_HAD,
    _ANALYSED,
    _ANALYSED_WORDS,
    _ANALYSIS_WORDS,
    _ARM,
    _ASIDE,
    _ASSIGNED_ARMS,
    _AVAILABILITY,
    _BRACKET_ARMS,
    _EACH,
    _EXCLUDED,
    _LOST,
    _LOST_SHARE,
    _MISSING_ARMS,
    _NOT_AFTER,
    _NOT_RANDOMISED,
    _NUM,
    _PAIR,
    _PCTS,
    _PERCENT,
    _PLANNING,
    _RANDOMISED,
    _RANDOMISED_EACH,
    _RANDOMISED_TWO,
    _RANDOMISED_VERB,
    _RESULT_PAIR,
    Count,
    parse_number,
)
from clinex.rob.evidence.reasoning.participant_flow import Flow, flow

__all__ = ["Count", "Flow", "parse_number", "find_counts", "consort_counts", "flow"]

#: The same test, public for the evidence models (cue votes of domain 3).
PLANNING = _PLANNING


def _pcts(raw: str) -> tuple[float, ...]:
    return tuple(float(x) for x in _PCTS.findall(raw))






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


def _randomised_arms(text: str, raw: str, m: re.Match[str], total: int) -> tuple[int, ...]:
    """Per-arm numbers of a randomised statement: after the match, else anywhere in the
    sentence, else in brackets right after it ("160 allocated (80 TXA, 80 placebo)");
    empty unless they add up to ``total``."""
    arms = _arms(text[m.end():]) or _arms(text)
    br = _BRACKET_ARMS.match(raw[raw.find(m.group(0)) + len(m.group(0)):]) if m.group(0) in raw else None
    if not arms and br:
        arms = (int(br.group(1)), int(br.group(2)))
    if arms and sum(arms) != total:
        arms = ()
    return arms


def _randomised_count(text: str, raw: str, offset: int, end: int) -> Count | None:
    """The sentence's ``randomised`` statement: two arms counted one by one, else the first
    pattern of :data:`_RANDOMISED` with more than three participants, else "N allocated to
    each group"; None when the sentence states none."""
    two = _RANDOMISED_TWO.search(text) or _ASSIGNED_ARMS.search(text)
    if two and None not in (a2 := (parse_number(two.group(1)), parse_number(two.group(2)))):
        return Count("randomised", a2[0] + a2[1], a2, (), offset, end)  # type: ignore[operator,arg-type]
    for pat in _RANDOMISED:
        m = pat.search(text)
        if m:
            total = _num(m)
            if total is not None and total > 3:  # "the sequence of the two study visits was randomized" counts no participants
                return Count("randomised", total, _randomised_arms(text, raw, m, total), (), offset, end)
    m = _RANDOMISED_EACH.search(text)
    v = _num(m) if m else None
    if v and v > 1:
        return Count("randomised", 2 * v, (v, v), (), offset, end)
    return None


def _availability_pairs(text: str) -> list[tuple[int, int]]:
    """"a of b" pairs of a sentence about data availability, a pair "in each group" twice;
    a pair that sums the others stands for them (or alone, when only its ``a`` sums them)."""
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
                return rest if b == sum(y for _, y in rest) else [(a, b)]
    return pairs


def _pairs_count(text: str, pairs: list[tuple[int, int]], offset: int, end: int) -> Count:
    """The count of two or more per-arm "a of b" pairs; pairs of a sentence about losses
    count the others ("missing for 9 of 60 and 12 of 61": 51 and 49 have data)."""
    kind = _kind(text)
    if kind == "lost":  # "missing for 9 of 60 and 12 of 61": the others have data
        pairs, kind = [(b - a, b) for a, b in pairs], "outcome"
    return Count(kind, sum(a for a, _ in pairs), tuple(a for a, _ in pairs), tuple(b for _, b in pairs), offset, end)


def _pair_count(text: str, pair: tuple[int, int], offset: int, end: int) -> Count:
    """The count of one "a of b" pair (``b`` the randomised number), with per-arm numbers
    of the sentence that add up to it."""
    a, b = pair
    kind = _kind(text)
    if kind == "lost":  # "Outcome data were missing for 18 of 120": 102 of 120 have data
        a, kind = b - a, "outcome"
    arms = _arms(text)
    return Count(kind, a, arms if sum(arms) == a else (), (b,), offset, end)


def _statement_arms(pat: re.Pattern[str], m: re.Match[str], text: str, total: int) -> tuple[int, tuple[int, ...]]:
    """Total and per-arm numbers of an analysed statement matched by ``pat``: one number
    per arm named in the match or listed after its number ("available for 141 and 142"),
    else the arms of the sentence that add up to the total."""
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
    return total, arms


def _statement_kind(m: re.Match[str], text: str) -> str:
    """``"analysis"`` when the matched statement (or a sentence without outcome-data
    words) is about who was analysed, else ``"outcome"``."""
    return "analysis" if _ANALYSIS_WORDS.search(m.group(0)) or (
        _ANALYSIS_WORDS.search(text) and not re.search(r"\b(data|available|obtained)\b", text, re.I)
    ) else "outcome"


def _analysed_statement(text: str, raw: str, offset: int, end: int) -> Count | None:
    """The first statement of :data:`_ANALYSED` with a positive number not followed by a
    negation ("28 participants ... had not returned the questionnaire": missing, not
    analysed)."""
    for pat in _ANALYSED:
        m = pat.search(text)
        if m and _NOT_AFTER.match(text, m.end()):
            continue  # "28 participants ... had not returned the questionnaire": missing, not analysed
        if m:
            total = _num(m)
            if total is not None and total > 0:
                total, arms = _statement_arms(pat, m, text, total)
                return Count(_statement_kind(m, text), total, arms, (), offset, end, _pcts(raw) if total else ())
    return None


def _analysed_count(text: str, raw: str, out: list[Count], offset: int, end: int) -> Count | None:
    """The sentence's outcome-data or analysis statement: two or more "leaving N", else
    "a of b" pairs (one pair only when its ``b`` is the sentence's randomised number),
    else an :data:`_ANALYSED` statement."""
    pairs = _availability_pairs(text)
    leaving = [v for v in (parse_number(x) for x in re.findall(rf"\bleaving {_NUM}\b", text, re.I)) if v is not None]
    if len(leaving) >= 2:
        return Count("analysis", sum(leaving), tuple(leaving), (), offset, end)
    if len(pairs) >= 2 and len({b for _, b in pairs}) <= len(pairs):
        return _pairs_count(text, pairs, offset, end)
    if len(pairs) == 1 and (not out or out[0].total == pairs[0][1]):
        return _pair_count(text, pairs[0], offset, end)
    return _analysed_statement(text, raw, offset, end)


def _outcome_all(text: str, raw: str, out: list[Count], offset: int, end: int) -> Count | None:
    """``outcome_all`` ("All had 3-month mRS data") when no outcome or analysis number was read."""
    if not any(c.kind in ("outcome", "analysis") for c in out) and _ALL_HAD.search(text):
        return Count("outcome_all", None, (), (), offset, end)
    return None


def _lost_share(text: str, raw: str, out: list[Count], offset: int, end: int) -> Count | None:
    """``lost_share`` ("Loss to follow-up was only 2.7%") when no count was read."""
    share = _LOST_SHARE.search(raw)
    if share and not any(c.kind in ("outcome", "analysis", "lost") for c in out):
        return Count("lost_share", None, (), (), offset, end, (float(share.group(1).replace("·", ".")),))
    return None


def _denominators(text: str, raw: str, out: list[Count], offset: int, end: int) -> Count | None:
    """``denominators``: two or more denominators of per-arm results ("8 of 12 ... and 1 of
    12 ...") when no outcome data were read."""
    if any(c.kind in ("outcome", "analysis", "outcome_all") for c in out):
        return None
    dens = []
    for m in _RESULT_PAIR.finditer(text):
        nums = [parse_number(g) for g in m.groups() if g is not None]
        if len(nums) == 2 and None not in nums and 0 <= nums[0] <= nums[1]:  # type: ignore[operator]
            dens.append(nums[1])
    if len(dens) >= 2:
        return Count("denominators", sum(dens), tuple(dens), (), offset, end)  # type: ignore[arg-type]
    return None


def _excluded(text: str, raw: str, out: list[Count], offset: int, end: int) -> Count | None:
    """``excluded``: participants left out of the analysis, summed."""
    ex = [v for v in (_num(m) for m in _EXCLUDED.finditer(text)) if v]
    return Count("excluded", sum(ex), (), (), offset, end) if ex else None


def _missing_arms(text: str, offset: int, end: int) -> Count | None:
    """``lost`` per arm from one sentence of :data:`_MISSING_ARMS`."""
    for pat in _MISSING_ARMS:
        m = pat.search(text)
        arms = tuple(parse_number(g) for g in m.groups() if g is not None) if m else ()
        if len(arms) == 2 and all(v is not None for v in arms):
            return Count("lost", sum(arms), arms, (), offset, end)  # type: ignore[arg-type]
    return None


def _lost_count(text: str, offset: int, end: int) -> Count | None:
    """``lost``: the sum of the sentence's loss statements ("No child withdrew" states no
    loss), per arm when it gives one number per group or says "in each group"."""
    lost = [(m, _num(m)) for m in _LOST.finditer(text)]
    lost = [(m, v) for m, v in lost if v]  # "No child withdrew ..." states no loss
    if not lost:
        return None
    m = lost[0][0]
    total = sum(v for _, v in lost)
    per_arm = tuple(
        v for v in (parse_number(x) for x in re.findall(rf"\b{_NUM} (?:in|from) the\b", text, re.I))
        if v is not None
    )
    if _EACH.search(m.group(0)) or _EACH.search(text[m.start():m.end() + 20]):
        per_arm, total = (total, total), 2 * total
    return Count("lost", total, per_arm if len(per_arm) >= 2 else (), (), offset, end)


#: Statements read after the randomised and analysed ones, in this order; each sees the
#: counts read before it.
_LATER = (_outcome_all, _lost_share, _denominators, _excluded)


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
    end = offset + len(text)
    if _PLANNING.search(text) or (_NOT_RANDOMISED.search(text) and not _RANDOMISED_VERB.search(text)):
        return []
    raw = text
    text = re.sub(r" {2,}", " ", _ASIDE.sub("", _PERCENT.sub("", text)))
    out: list[Count] = []
    randomised = _randomised_count(text, raw, offset, end)
    if randomised is not None:
        out.append(randomised)
    analysed = _analysed_count(text, raw, out, offset, end) if _ANALYSED_WORDS.search(text) else None
    if analysed is not None:
        out.append(analysed)
    for step in _LATER:
        c = step(text, raw, out, offset, end)
        if c is not None:
            out.append(c)
    missing = _missing_arms(text, offset, end)
    lost = _lost_count(text, offset, end) if missing is None else missing
    if lost is not None:
        out.append(lost)
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
