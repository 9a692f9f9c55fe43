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
* lost: "Four participants were lost to follow-up", "12 withdrew".

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

__all__ = ["Count", "Flow", "parse_number", "find_counts", "flow"]

_WORDS = {
    "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14,
    "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19,
    "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70,
    "eighty": 80, "ninety": 90, "no": 0, "none": 0,
}
_NUM = r"(\d{1,3}(?:,\d{3})+|\d{1,6}|" + "|".join(sorted(_WORDS, key=len, reverse=True)) + r")"
_WHO = (r"(?:participants?|patients?|subjects?|children|women|men|infants|adults|individuals|"
        r"people|persons|pupils|students|mothers|neonates|babies|volunteers|residents|cases|eyes|teeth)")
_GAP = r"(?:[\w\-]+ ){0,4}?"

_RANDOMISED = [
    re.compile(rf"\b{_NUM} {_GAP}(?:were |was |had been |being )?(?:randomly (?:assigned|allocated)|randomi[sz]ed|underwent randomi[sz]ation|enrolled and randomi[sz]ed)\b", re.I),
    re.compile(rf"\b(?:randomi[sz]ed|randomly (?:assigned|allocated)) (?:a total of )?{_NUM} {_GAP}{_WHO}", re.I),
    re.compile(rf"\b(?:of|among|from) (?:the|all|these)? ?{_NUM} {_GAP}(?:randomi[sz]ed|randomly (?:assigned|allocated))\b", re.I),
    re.compile(rf"\brandomi[sz]ation of {_NUM}\b", re.I),
]
_ANALYSED_WORDS = re.compile(
    r"\b(analy[sz]ed|analy[sz]is|included|completed|provided|outcome data|followed[- ]up|follow[- ]up|"
    r"assessed|available|contributed|evaluable|finished|remained)\b", re.I)
_PAIR = re.compile(rf"\b{_NUM} (?:of|out of|/) (?:the )?{_NUM}\b", re.I)
_ANALYSED = [
    re.compile(rf"\b{_NUM} {_GAP}(?:were |was )?(?:included in (?:the )?(?:primary |final |efficacy )?analys[ie]s|analy[sz]ed|"
               rf"completed (?:the )?(?:study|trial|follow[- ]?up|treatment|intervention|\d+[- ]\w+|assessment)|"
               rf"had (?:complete |primary )?(?:outcome )?data|provided (?:primary )?(?:outcome )?data|"
               rf"(?:were |was )?available for (?:the )?(?:primary )?(?:analysis|outcome|follow[- ]?up)|"
               rf"(?:were |was )?assessed (?:at|for) (?:the )?(?:primary|final|\d+))", re.I),
    re.compile(rf"\b(?:analy[sz]ed|analysis (?:included|comprised)|data (?:were |was )?(?:available|obtained) (?:for|from)) (?:all )?{_NUM} {_GAP}{_WHO}", re.I),
    re.compile(rf"\b(?:primary )?(?:outcome )?data (?:were |was )?(?:available|obtained|collected) (?:for|from|in|on) {_NUM}\b", re.I),
]
_LOST = re.compile(
    rf"\b{_NUM} {_GAP}(?:were |was |had been )?(?:lost to follow[- ]?up|withdr[ae]w\w*|dropped out|discontinued|"
    rf"did not (?:complete|attend|return|provide)|were excluded|was excluded|were not (?:assessed|analy[sz]ed|followed))", re.I)
_ARM = re.compile(
    rf"\b{_NUM} (?:{_WHO} )?(?:were )?(?:to|in|into|allocated to|assigned to|receiving) (?:the |a |an )?(?:[\w\-]+ ){{0,3}}?(?:group|arm)\b"
    rf"|\b{_NUM} per (?:group|arm)\b|\(n ?= ?{_NUM}\)", re.I)
_PERCENT_AFTER = re.compile(r"^\s*\(\s*\d+(?:\.\d+)?\s*%\s*\)")


def parse_number(token: str) -> int | None:
    """An integer from digits ("1,200", "96") or a number word ("four").

    Returns
    -------
    int or None
        None when ``token`` is not a number.
    """
    t = token.strip().lower().replace(",", "")
    if t.isdigit():
        return int(t)
    return _WORDS.get(t)


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
    """

    kind: str
    total: int | None
    per_arm: tuple[int, ...] = ()
    of_arm: tuple[int, ...] = ()
    start: int = 0
    end: int = 0


def _num(m: re.Match[str]) -> int | None:
    for g in m.groups():
        if g is not None:
            return parse_number(g)
    return None


def _arms(text: str) -> tuple[int, ...]:
    vals = []
    for m in _ARM.finditer(text):
        v = _num(m)
        if v is not None:
            vals.append(v)
    if len(vals) == 1 and re.search(r"\bper (group|arm)\b|\beach (group|arm)\b", text, re.I):
        return (vals[0], vals[0])
    return tuple(vals) if len(vals) >= 2 else ()


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
        Randomised, analysed and lost statements found (at most one of each kind).
    """
    out: list[Count] = []
    end = offset + len(text)
    for pat in _RANDOMISED:
        m = pat.search(text)
        if m:
            total = _num(m)
            if total is not None and total > 1:
                arms = _arms(text[m.end():]) or _arms(text)
                if arms and sum(arms) != total and not (len(set(arms)) == 1 and len(arms) * arms[0] == total):
                    arms = ()
                out.append(Count("randomised", total, arms, (), offset, end))
                break
    if _ANALYSED_WORDS.search(text):
        pairs = []
        for m in _PAIR.finditer(text):
            a, b = parse_number(m.group(1)), parse_number(m.group(2))
            if a is not None and b is not None and 0 <= a <= b and b > 1:
                pairs.append((a, b))
        if len(pairs) >= 2:
            out.append(Count("analysed", sum(a for a, _ in pairs), tuple(a for a, _ in pairs),
                             tuple(b for _, b in pairs), offset, end))
        elif len(pairs) == 1 and not any(c.kind == "randomised" for c in out):
            a, b = pairs[0]
            out.append(Count("analysed", a, (), (b,), offset, end))
        else:
            for pat in _ANALYSED:
                m = pat.search(text)
                if m:
                    total = _num(m)
                    if total is not None:
                        out.append(Count("analysed", total, _arms(text[m.end():]), (), offset, end))
                        break
    m = _LOST.search(text)
    if m:
        total = _num(m)
        rest = text[m.end():]
        per_arm = tuple(
            v for v in (parse_number(x) for x in re.findall(rf"\b{_NUM} (?:in|from) the\b", text, re.I)) if v is not None
        )
        if total is not None:
            out.append(Count("lost", total, per_arm if len(per_arm) >= 2 else (), (), offset, end))
        elif rest:
            pass
    return out


@dataclass
class Flow:
    """The participant flow of one trial, as far as the text gives it.

    Attributes
    ----------
    randomised : int or None
    randomised_arms : tuple of int
    analysed : int or None
        Participants with outcome data (or in the analysis).
    analysed_arms : tuple of int
    evidence : list of (int, int)
        Offsets of the sentences the numbers came from.
    """

    randomised: int | None = None
    randomised_arms: tuple[int, ...] = ()
    analysed: int | None = None
    analysed_arms: tuple[int, ...] = ()
    evidence: list[tuple[int, int]] = field(default_factory=list)

    @property
    def share(self) -> float | None:
        """Analysed / randomised, or None when either is unknown."""
        if not self.randomised or self.analysed is None or self.analysed > self.randomised:
            return None
        return self.analysed / self.randomised

    def missing_shares(self) -> tuple[float, ...]:
        """Per-arm share of randomised participants without outcome data (empty if unknown)."""
        if (len(self.analysed_arms) >= 2 and len(self.randomised_arms) == len(self.analysed_arms)
                and all(r > 0 and a <= r for a, r in zip(self.analysed_arms, self.randomised_arms))):
            return tuple(1 - a / r for a, r in zip(self.analysed_arms, self.randomised_arms))
        return ()


def flow(counts: Sequence[Count]) -> Flow:
    """Combine a document's number statements into one :class:`Flow`.

    The randomised total is the first ``randomised`` statement whose number is at
    least every analysed number; the analysed number is the last ``analysed``
    statement not above it ("a of b" pairs give per-arm numbers and, when no
    randomised statement was found, the randomised per arm), else the randomised
    total minus every ``lost`` number.

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
    anal = [c for c in counts if c.kind == "analysed"]
    lost = [c for c in counts if c.kind == "lost"]
    if rand:
        pick = rand[0]
        f.randomised, f.randomised_arms = pick.total, pick.per_arm
        f.evidence.append((pick.start, pick.end))
    for c in reversed(anal):
        if c.of_arm and (f.randomised is None or sum(c.of_arm) == f.randomised):
            f.analysed = sum(c.per_arm) if c.per_arm else c.total
            f.analysed_arms = c.per_arm
            if f.randomised is None or not f.randomised_arms:
                f.randomised_arms = c.of_arm if len(c.of_arm) >= 2 else f.randomised_arms
                f.randomised = f.randomised if f.randomised is not None else sum(c.of_arm)
            f.evidence.append((c.start, c.end))
            break
        if c.total is not None and (f.randomised is None or c.total <= f.randomised) and not c.of_arm:
            f.analysed, f.analysed_arms = c.total, c.per_arm
            f.evidence.append((c.start, c.end))
            break
    if f.analysed is None and f.randomised is not None and lost:
        n_lost = sum(c.total or 0 for c in lost)
        if n_lost <= f.randomised:
            f.analysed = f.randomised - n_lost
            f.evidence.extend((c.start, c.end) for c in lost)
            if all(len(c.per_arm) == len(f.randomised_arms) for c in lost) and f.randomised_arms:
                f.analysed_arms = tuple(
                    r - sum(c.per_arm[i] for c in lost) for i, r in enumerate(f.randomised_arms)
                )
    return f
