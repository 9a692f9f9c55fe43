"""Who a clause of a trial report names: participants, those delivering the
interventions, outcome assessors or analysts (the ``actors`` of ``reasoning.yaml``), and
which of them a blinding word qualifies as an adjective ("blinded outcome assessors",
"masked syringes"). Read by :func:`~clinex.rob.evidence.reasoning.facts.blinding_statements`.

References
----------
Higgins JPT et al. RoB 2 full guidance document, 22 Aug 2019 (who is blinded per SQ).
"""

from __future__ import annotations

import re
from typing import Protocol


class ActorPatterns(Protocol):
    """The part of :class:`~clinex.rob.evidence.reasoning.facts.ReasoningData` read here.

    Attributes
    ----------
    actors : dict of str to re.Pattern
        A pattern per kind of actor.
    actor_also : dict of str to tuple of str
        Words that name more than one kind of actor ("investigators").
    """

    actors: dict[str, re.Pattern[str]]
    actor_also: dict[str, tuple[str, ...]]


def _actor_mentions(data: ActorPatterns, text: str) -> list[tuple[int, int, str]]:
    """Mentions of actors in ``text``: (start, end, actor), sorted; a word naming several
    kinds of actor gives one mention per kind."""
    out = []
    for actor, pat in data.actors.items():
        for m in pat.finditer(text):
            word = m.group(0).lower()
            for a in data.actor_also.get(word) or (actor,):
                out.append((m.start(), m.end(), a))
    return sorted(out)


_ASSESSING = re.compile(r"\b(measured|assessed|rated|scored|read|evaluated|judged|graded|adjudicated|analy[sz]ed|"
                        r"tested|processed|recorded|collected|extracted)\b[^.;]{0,60}\bby\b", re.I)
_DELIVERING = re.compile(r"\b(deliver\w*|administer\w*|provid\w*|treat\w*|gave|applied|prescrib\w*|"
                         r"perform\w* the (intervention|procedure|operation)|operat\w*)\b", re.I)
_GENERIC_DELIVERER = re.compile(r"^(staff|personnel|team)$", re.I)
_ASSESSED_BY = re.compile(
    r"\b(?:measured|assessed|rated|scored|evaluated|judged|graded|adjudicated|examined|"
    r"(?:examinations?|assessments?|measurements?|evaluations?) (?:was|were) (?:done|performed|carried out|made|undertaken|conducted))"
    r"\b[^.;,]{0,40}?\bby (?:an? |the |two |one )?(?:(?:independent|blinded|masked|separate|trained|experienced|senior|second|other)\s)*", re.I)


_RESEARCH_STAFF = re.compile(r"research (assistants?|nurses?|coordinators?)", re.I)
#: Verbs of delivering an intervention (stricter than ``_DELIVERING``: no "treatment").
_DELIVERS = re.compile(r"\b(deliver(ed|ing|s)?|administer(ed|ing|s)?|gave|applied|ran|led|taught|counsell?ed|"
                       r"(provided|offered) (the )?(intervention|sessions?|advice|counsell?ing|training|therapy|education))\b", re.I)


def _actors_in(data: ActorPatterns, text: str, at: int | None = None) -> list[str]:
    """Actors named in ``text``, in order of mention; with ``at`` (a concept's offset in
    ``text``), those named before it (the subject: "the admitting team knew which implant
    a patient would receive") unless nobody is named before it ("to blind patients").
    Generic "staff" in a clause about measuring an outcome ("measured ... by staff unaware
    of group allocation") are the assessors, not those delivering the intervention; research
    assistants, nurses or coordinators in a sentence about delivering the intervention (and
    not about assessing) are those delivering it."""
    mentions = _actor_mentions(data, text)
    # "assessed at 24 months by an independent surgeon who had not taken part in the
    # operations": the clinician named as the agent of the assessment is an assessor
    # (QA3 2026-12-01), whatever their profession
    for m in _ASSESSED_BY.finditer(text):
        mentions = [(b, e, "assessors") if a == "deliverers" and b == m.end() else (b, e, a)
                    for b, e, a in mentions]
    if _DELIVERS.search(text) and not _ASSESSING.search(text) and not _ASSESSED_BY.search(text):
        # "the research assistant delivered the sessions": about delivering, not assessing (QA4)
        mentions = [(b, e, "deliverers") if a == "assessors" and _RESEARCH_STAFF.fullmatch(text[b:e]) else (b, e, a)
                    for b, e, a in mentions]
    mentions = sorted(set(mentions))
    if _ASSESSING.search(text) and not _DELIVERING.search(text):
        mentions = [m for m in mentions
                    if not (m[2] == "deliverers" and _GENERIC_DELIVERER.match(text[m[0]:m[1]].split()[-1]))]
        if not any(m[2] == "assessors" for m in mentions):
            mentions.append((_ASSESSING.search(text).start(), _ASSESSING.search(text).end(), "assessors"))
            mentions.sort()
    if at is not None:
        before = [m for m in mentions if m[1] <= at]
        mentions = before or mentions
    return list(dict.fromkeys(a for _, _, a in mentions))


# A word after a concept that keeps it predicative ("masked to allocation") or about the
# trial ("a double-blind trial"); any other word makes the concept an adjective of that
# word ("masked syringes", "unblinded pharmacists"): about an actor only if the word is one.
_PREDICATIVE = frozenset({
    "to", "by", "for", "and", "or", "as", "at", "in", "on", "during", "throughout", "until", "with",
    "from", "regarding", "about", "of", "but", "trial", "trials", "study", "studies", "design",
    "fashion", "manner", "conditions", "setting", "rct", "comparison", "phase", "randomised",
    "randomized", "multicentre", "multicenter", "parallel", "controlled", "placebo", "crossover",
    "pilot", "period", "treatment", "were", "was", "is", "are", "the", "a", "an",
})


_AUX_BEFORE = re.compile(
    r"\b(were|was|be|been|being|is|are|remained|remain|kept|stayed|not|never|fully|also|all|both|adequately|successfully)\s*$", re.I)


def _adjective_of(data: ActorPatterns, text: str, end: int, start: int | None = None) -> list[str] | None:
    """None when the concept ending at ``end`` (starting at ``start``) is predicative
    ("were masked owing to ..."); else the actors it qualifies (empty: it qualifies
    something else: "masked syringes")."""
    if start is not None and _AUX_BEFORE.search(text[max(0, start - 30):start]):
        return None
    if re.search(r"\bto\s+$", text[max(0, end - 20):end].rsplit(" ", 1)[0] + " "):
        return None  # "not possible to blind patients": a verb, its object is named in the clause
    starts = []
    pos = end
    for _ in range(3):  # the noun phrase after the concept: "blinded central adjudication committee"
        m = re.match(r"[ \t-]*([A-Za-z][\w-]*)", text[pos:])
        if m is None or m.group(1).lower() in _PREDICATIVE:
            break
        starts.append(pos + m.start(1))
        pos += m.end()
    if not starts:
        return None
    mentions = [(s, a) for s, _, a in _actor_mentions(data, text) if s in starts]
    if not mentions:
        return []
    first = min(s for s, _ in mentions)
    return [a for s, a in mentions if s == first]
