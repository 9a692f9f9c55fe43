"""Concept mentions: the :class:`Mention` record and the rules read on a mention's sentence.

The screening engine (:mod:`clinex.cohort.engine`) turns each concept target of the
medspaCy pipeline into a :class:`Mention`; this module holds what is decided from
the mention's own sentence: the part of it context patterns look at
(:func:`_clause`), a weekly amount stated around a unit phrase
(:func:`_weekly_amount`: "2-3 drinks a night"), whether the notes speak of a woman
(:func:`_is_female`), and the dates undated mentions take from their record
(:func:`propagate_dates`: "s/p recent MI" refers back to the MI an earlier record
dated). Offsets are characters into ``Patient.text`` unless said otherwise.

References
----------
.. [1] n2c2 2018 Track 1 guideline (synthetic corpus GUIDELINE.md), "The reference
   point" (an event reported in an earlier record outside the window does not count).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
from dataclasses import dataclass
from functools import lru_cache

from clinex.cohort.criteria import ConceptSpec, QuantitySpec

__all__ = ["Mention", "inherit_history_dates", "propagate_dates"]


@dataclass(frozen=True)
class Mention:
    """A concept mention in one sentence (internal; offsets into ``Patient.text``)."""

    criterion: str
    concept: str
    term: str
    record: int
    record_date: dt.date | None
    event_date: dt.date | None
    dated: str
    start: int
    end: int
    sent_start: int
    sent_end: int
    against: bool
    sentence: str
    modifiers: frozenset[str]
    section: str | None


_PAREN = re.compile(r"\([^()]*\)")
_VOIDING = ("NEGATED_EXISTENCE", "FAMILY", "HYPOTHETICAL", "PLANNED", "POSSIBLE_EXISTENCE", "OTHER_PERSON")
#: Words that make an undated mention refer back to an already reported event.
_HISTORY_WORDS = re.compile(r"\b(?:s/p|status post|history of|h/o|hx of|prior|previous|recent|remote|(?<!-)old|since (?:her|his)|after (?:her|his))\b", re.I)
#: Characters before a mention searched for a history word ("s/p recent MI", "history of
#: DKA"): the words must qualify the mention itself, not a heading elsewhere in its
#: sentence ("Meds (copied from prior): ... fish oil" is today's medication list; QA stop 18).
_HISTORY_WINDOW = 40


def _refers_back(m: Mention) -> bool:
    """Whether a history word stands just before mention ``m`` in its sentence, with no
    colon between (a colon ends a heading: "Meds (unchanged from prior): aspirin")."""
    lo = max(0, m.start - m.sent_start - _HISTORY_WINDOW)
    before = m.sentence[lo : m.start - m.sent_start]
    before = before.rsplit(":", 1)[-1]
    return bool(_HISTORY_WORDS.search(before + " " + m.sentence[m.start - m.sent_start : m.end - m.sent_start]))


#: A sentence about a relative: an optional family-history heading, then a relative as
#: its subject ("Family Hx: Mother w/ DM2, died of MI at 60", "Maternal aunt with T1DM,
#: blind from PDR"). medspaCy's ConText ends a relative's scope at a comma (the PERSON_END
#: rule of resources/context, for "mother with DM, patient with ..."), which left the
#: second clause to the patient (blind cohort patients of issue 24's QA, 101 and 103).
_FAMILY_SUBJECT = re.compile(
    r"^\W*(?:(?:family\s+(?:hx|history)|fam\s+hx|fhx)\s*[:\-]\s*)?(?:(?:his|her|pt'?s|patient'?s)\s+)?"
    r"(?:maternal\s+|paternal\s+)?(?:mother|father|mom|dad|parents?|brother|sister|siblings?|aunt|uncle|"
    r"grand(?:mother|father|parents?)|cousin)\b", re.I)
_FAMILY_HEADING = re.compile(r"^\W*(?:family\s+(?:hx|history)|fam\s+hx|fhx)\s*[:\-]", re.I)
#: The patient named again: the clause is the patient's own ("Mother with DM; patient with MI").
_PATIENT_AGAIN = re.compile(r"\b(?:patient|pt|he|she|himself|herself)\b", re.I)


def family_sentence(sentence: str, start: int) -> bool:
    """Whether the mention at ``start`` (offset into ``sentence``) is about a relative: the
    sentence opens with a family-history heading or has a relative as its subject
    (:data:`_FAMILY_SUBJECT`), and the patient is not named again before the mention.

    Examples
    --------
    >>> family_sentence("Family Hx: Mother w/ DM2, died of MI at 60.", 34)
    True
    >>> family_sentence("Maternal aunt with T1DM, blind from PDR.", 36)
    True
    >>> family_sentence("Mother with DM2; patient had an MI in 2019.", 32)
    False
    >>> family_sentence("Patient with MI; mother with DM2.", 13)
    False
    """
    m = _FAMILY_SUBJECT.match(sentence) or _FAMILY_HEADING.match(sentence)
    return bool(m) and m.end() <= start and not _PATIENT_AGAIN.search(sentence, m.end(), start)


@lru_cache(maxsize=8192)
def _hits(rx: re.Pattern[str], clause: str) -> bool:
    """``rx.search(clause)``, cached: every mention of a long list sentence has the same
    clause, which is then searched once."""
    return rx.search(clause) is not None


def _clause(sentence: str, start: int, end: int) -> str:
    """The part of a sentence that context patterns may look at for one mention.

    The ``;``-separated part holding the mention, with parenthesised asides that
    neither hold it nor follow it within 12 characters blanked out: in "aspirin 81 mg daily, atorvastatin (stopped
    simvastatin)" the "stopped" is not about aspirin, nor is "ruled out" in
    "NSTEMI 3 weeks ago; PE ruled out". Offsets are characters into ``sentence``.
    """
    left = sentence.rfind(";", 0, start) + 1
    right = sentence.find(";", end)
    right = len(sentence) if right < 0 else right
    part = sentence[left:right]
    if "(" in part:
        s0, e0 = start - left, end - left

        def blank(mt: re.Match[str]) -> str:
            holds = mt.start() <= s0 and e0 <= mt.end()
            follows = 0 <= mt.start() - e0 <= 12  # "MI (motivational interviewing)", "HCP: son (not activated)"
            return mt.group() if holds or follows else " " * len(mt.group())

        part = _PAREN.sub(blank, part)
    return part


_FEMALE = re.compile(r"\b(?:she|her|hers|woman|female|mrs|ms)\b", re.I)
_MALE = re.compile(r"\b(?:he|his|him|man|male|mr)\b", re.I)
_COUNT_WORDS = {"a": 1.0, "an": 1.0, "one": 1.0, "two": 2.0, "three": 3.0, "four": 4.0, "five": 5.0, "six": 6.0, "couple": 2.0, "few": 3.0}
_COUNT = re.compile(
    r"(?:(?P<n>\d+(?:\.\d+)?)(?:\s*(?:-|to)\s*\d+(?:\.\d+)?)?|(?P<w>an?|one|two|three|four|five|six|couple|few))"
    r"(?:\s+of)?(?:\s+[a-z]+)?\s*$",
    re.I,
)


def _is_female(text: str) -> bool:
    """Whether the notes refer to the patient as a woman (more she/her/Mrs than he/his/Mr)."""
    return len(_FEMALE.findall(text)) > len(_MALE.findall(text))


def _weekly_amount(sentence: str, start: int, end: int, unit: str, q: QuantitySpec) -> float | None:
    """Units per week stated around a unit phrase, or None when count or period is missing.

    ``start``/``end`` are the unit's offsets in ``sentence`` (characters); the count
    is read in the 40 characters before it and the period in the 40 after it, both
    within its ``;``-separated clause. The first ``per_week`` pattern (in file order)
    that matches gives the period.
    """
    left = sentence.rfind(";", 0, start) + 1
    before = sentence[left:start][-40:]
    m = _COUNT.search(before)
    if m is None:
        return None
    n = float(m.group("n")) if m.group("n") else _COUNT_WORDS[m.group("w").lower()]
    right = sentence.find(";", end)
    after = sentence[end : len(sentence) if right < 0 else right][:40].lower()
    for rx, per_week in q.per_week.items():
        if re.search(rx, after, re.I):
            return n * q.units.get(unit, q.units.get(unit.lower(), 1.0)) * per_week
    return None


def inherit_history_dates(ms: list[Mention]) -> list[Mention]:
    """An undated, history-worded mention ("s/p recent MI") in record r refers to the
    event an earlier record reported: it takes the event date of the latest earlier
    record with an affirmed mention of the same concept.

    References: GUIDELINE.md, "The reference point" (an event reported in an earlier
    record outside the window does not count, even if the text calls it recent).
    """
    affirmed: dict[int, dt.date] = {}
    for m in ms:
        if m.event_date is not None and not m.against and not m.modifiers.intersection(_VOIDING):
            if m.record not in affirmed or m.event_date > affirmed[m.record]:
                affirmed[m.record] = m.event_date
    if not affirmed:
        return ms
    out = []
    for m in ms:
        if m.dated == "record" and _refers_back(m):
            earlier = [r for r in affirmed if r < m.record]
            if earlier:
                m = dataclasses.replace(m, event_date=affirmed[max(earlier)], dated="inherited")
        out.append(m)
    return out


def propagate_dates(spec: ConceptSpec, ms: list[Mention]) -> list[Mention]:
    """Undated mentions take the latest relative-time event date of the same concept in their record.

    "10 weeks after her STEMI ... CAD s/p recent STEMI": both sentences report
    one event, dated by the first.
    """
    ms = inherit_history_dates(ms)
    explicit: dict[int, dt.date] = {}
    for m in ms:
        if m.dated == "relative" and m.event_date is not None and not m.modifiers.intersection(("NEGATED_EXISTENCE", "FAMILY", "HYPOTHETICAL")):
            if m.record not in explicit or m.event_date > explicit[m.record]:
                explicit[m.record] = m.event_date
    if not explicit:
        return ms
    return [
        dataclasses.replace(m, event_date=explicit[m.record]) if (m.dated == "record" and m.record in explicit) else m
        for m in ms
    ]
