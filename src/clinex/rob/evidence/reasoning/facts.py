"""What a trial report states, sentence by sentence: the facts RoB 2's rules decide on.

* :class:`Sentence`: a segment of the report with its section;
* :class:`Finding`: one pattern of ``reasoning.yaml`` matching one sentence, with its
  assertion (negated, hedged) from :mod:`~clinex.rob.evidence.assertion`;
* :class:`BlindingStatement`: who (participants, deliverers, assessors, analysts) a
  blinding statement is about and whether it says they were blinded — "Outcome
  assessors were **not** blinded" is about assessors only and says they were aware;
  "double-blind" with nobody named covers participants, deliverers and assessors
  (RoB 2 guidance on 2.1/2.2/4.3); "The surgeon could not be blinded, but patients and
  assessors were." is two statements, the second elliptical (it takes the opposite
  polarity of the first across "but").

References
----------
Higgins JPT et al. RoB 2 full guidance document, 22 Aug 2019 (who is blinded per SQ).
Schulz KF et al. CONSORT 2010 (item 11a: "If done, who was blinded after assignment").
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

from clinex.io.textfile import parse_yaml
from clinex.rob.evidence.assertion import AFFIRMED, Assertion, AssertionScope
from clinex.rob.evidence.reasoning.actors import _actors_in, _adjective_of

__all__ = ["Sentence", "Finding", "BlindingStatement", "ReasoningData", "load_reasoning_data",
           "find", "blinding_statements", "hypothetical_spans", "ACTORS"]

#: Who a blinding statement can be about, in RoB 2's terms.
ACTORS = ("participants", "deliverers", "assessors", "analysts")


@dataclass(frozen=True)
class Sentence:
    """One segment of a report.

    Attributes
    ----------
    index : int
        Position in the report (0-based).
    start, end : int
        Offsets into ``Document.text`` (half-open).
    text : str
        The segment's text with whitespace runs as one space (offsets of findings
        index this text; evidence offsets are ``start``/``end``).
    section : str
        ``clinex.rob.sections`` label (``"methods"``, ``"results"`` ...; ``"front"``
        before the first heading).
    """

    index: int
    start: int
    end: int
    text: str
    section: str


@dataclass(frozen=True)
class Finding:
    """A named pattern matching a sentence.

    Attributes
    ----------
    name : str
        The pattern's key in ``reasoning.yaml``.
    sentence : Sentence
    start, end : int
        The match, offsets into ``sentence.text``.
    assertion : Assertion
    """

    name: str
    sentence: Sentence
    start: int
    end: int
    assertion: Assertion = AFFIRMED

    @property
    def affirmed(self) -> bool:
        """Neither negated nor hedged nor said to be missing."""
        return not (self.assertion.negated or self.assertion.hedged or self.assertion.absent)


@dataclass(frozen=True)
class BlindingStatement:
    """A statement on whether one kind of person knew the allocation.

    Attributes
    ----------
    actor : str
        One of :data:`ACTORS`.
    blinded : bool
        True: unaware of the allocation; False: aware.
    hedged : bool
    implied : bool
        From a design label ("double-blind", "open-label") with nobody named.
    concept : str
        The blinding concept's id in ``reasoning.yaml``.
    sentence : Sentence
    """

    actor: str
    blinded: bool
    hedged: bool
    implied: bool
    concept: str
    sentence: Sentence


def _clean(pattern: str) -> str:
    """Join a block pattern's lines; ``[^.]`` / ``[^.;]`` also step over a dot not
    followed by a space ("4.1", "ClinicalTrials.gov")."""
    out = re.sub(r"\n\s*", "", pattern).strip()
    return out.replace("[^.;]", "(?:[^.;]|\\.(?=\\S))").replace("[^.]", "(?:[^.]|\\.(?=\\S))")


class ReasoningData:
    """The compiled ``reasoning.yaml``.

    Parameters
    ----------
    data : dict
        The file's content.

    Attributes
    ----------
    name : str
    sections : dict of str to list of str
    thresholds : dict of str to float
    patterns : dict of str to re.Pattern
    actors : dict of str to re.Pattern
    actor_also : dict of str to tuple of str
    blinding : list of (dict, re.Pattern)
    inner_negation : frozenset of str
        Patterns whose negation may stand inside the match.
    hypothetical_allowed : frozenset of str
        Patterns that may match inside a hypothetical clause (see :func:`hypothetical_spans`):
        those whose meaning is itself a judgement ("could have affected the outcome").
    pointer_only_sections : frozenset of str
        Sections whose sentences decide nothing but ``pointer_patterns`` (when the report
        has a Methods or Results section).
    last_resort_sections : frozenset of str
        Of those, the sections read (statements about this trial only) when no rule
        decides from the rest of the report.
    pointer_patterns : frozenset of str
        Patterns an Introduction or Discussion sentence may decide with (registration,
        published protocol or analysis plan).
    exclude_within : dict of str to tuple of str
        Pattern -> patterns inside whose matches it does not count ("protocol deviation"
        inside "a per-protocol analysis excluding participants with a major protocol
        deviation" defines an analysis population, it reports no deviation).

    Raises
    ------
    re.error
        A pattern that does not compile.
    """

    def __init__(self, data: dict[str, Any]) -> None:
        self.name = str(data.get("name", "clinex.rob.rules"))
        self.sections = {str(k): list(v) for k, v in data["sections"].items()}
        self.thresholds = {k: float(v) for k, v in data["thresholds"].items()}
        self.actors = {k: re.compile(_clean(v), re.I) for k, v in data["actors"].items()}
        self.actor_also = {k: tuple(v) for k, v in (data.get("actor_also") or {}).items()}
        self.blinding = [(c, re.compile(_clean(c["pattern"]), re.I)) for c in data["blinding"]]
        self.inner_negation = frozenset(data.get("inner_negation") or ())
        self.hypothetical_allowed = frozenset(data.get("hypothetical_allowed") or ())
        self.exclude_within = {str(k): tuple(v) for k, v in (data.get("exclude_within") or {}).items()}
        self.pointer_only_sections = frozenset(data.get("pointer_only_sections") or ())
        self.pointer_patterns = frozenset(data.get("pointer_patterns") or ())
        self.last_resort_sections = frozenset(data.get("last_resort_sections") or ())
        skip = {"version", "name", "sections", "thresholds", "actors", "actor_also", "blinding", "inner_negation",
                "hypothetical_allowed", "exclude_within", "pointer_only_sections", "pointer_patterns",
                "last_resort_sections"}
        self.patterns = {k: re.compile(_clean(v), re.I) for k, v in data.items()
                         if k not in skip and isinstance(v, str)}

    def about_other_study(self, sentence: Sentence) -> bool:
        """Whether ``sentence`` is about another study, another phase or the literature
        (``other_study``: "Steele and Irwin excluded mosaic warts", "previous trials")."""
        return bool(self.patterns["other_study"].search(sentence.text))

    def rank(self, sq: str, section: str) -> int:
        """Reading order of ``section`` for SQ ``sq`` (0 first; unlisted sections last)."""
        order = self.sections.get(sq, [])
        return order.index(section) if section in order else len(order)


@lru_cache(maxsize=4)
def load_reasoning_data(name: str = "reasoning.yaml") -> ReasoningData:
    """Read a packaged reasoning file (``clinex/resources/rob/<name>``), once per process."""
    raw = resources.files("clinex.resources").joinpath("rob", name).read_text("utf-8")
    return ReasoningData(parse_yaml(raw, path=f"clinex/resources/rob/{name}"))


def find(data: ReasoningData, scope: AssertionScope, name: str,
         sentences: list[Sentence]) -> list[Finding]:
    """Every sentence matching pattern ``name``, with the first match's assertion.

    A match inside a hypothetical clause (:func:`hypothetical_spans`; unless ``name`` is in
    ``data.hypothetical_allowed``) or inside a match of a pattern ``data.exclude_within``
    names for ``name`` does not count, nor does a match an absence-of-information cue
    reaches ("The report does not describe how allocation was concealed":
    :attr:`~clinex.rob.evidence.assertion.Assertion.absent`); the next match of the
    sentence is tried.

    Parameters
    ----------
    data : ReasoningData
    scope : AssertionScope
    name : str
        A pattern key of ``reasoning.yaml``.
    sentences : list of Sentence

    Returns
    -------
    list of Finding
        One per matching sentence, in text order.

    Raises
    ------
    KeyError
        Unknown pattern name.
    """
    pat = data.patterns[name]
    allowed = name in data.hypothetical_allowed
    out = []
    for s in sentences:
        spans = [] if allowed else hypothetical_spans(data, s.text)
        for other in data.exclude_within.get(name, ()):
            spans += [(x.start(), x.end()) for x in data.patterns[other].finditer(s.text)]
        for m in pat.finditer(s.text):
            if _inside(spans, m.start(), m.end()):
                continue
            (a,) = scope.check(s.text, [(m.start(), m.end())], inner=name in data.inner_negation)
            if a.absent:
                continue  # "allocation concealment was not described": no information, no finding
            out.append(Finding(name, s, m.start(), m.end(), a))
            break
    return out


#: Where a hypothetical clause ends or starts: ";", ":", a comma before a conjunction or a
#: relative pronoun, a contrast word, a comma before the subject of a recommendation
#: ("Although ..., future trials should ...").
_HYPO_BOUNDARY = re.compile(
    r"[;:]|,\s*(?:so|which|but|as|because|although|though|while|whilst|whereas|and|however|since)\b"
    r"|\b(?:but|however|although|though|whereas)\b|,\s*(?=(?:future|further|we|researchers|readers)\b)", re.I)


def hypothetical_spans(data: ReasoningData, text: str) -> list[tuple[int, int]]:
    """The clauses of a sentence that say what should, could or would have been done
    rather than what this trial did: "Future trials should use central allocation and
    blinded outcome assessors.", "we recommend ...", "... could have been blinded".

    A clause runs between :data:`_HYPO_BOUNDARY` marks, so in "Withdrawals were related
    to persisting pain, so the estimate should be interpreted with caution" only the part
    after ", so" is hypothetical (the reasons stay evidence for SQ 3.3).

    Parameters
    ----------
    data : ReasoningData
        Its ``hypothetical`` pattern names the modal cues (should, future trials /
        studies, we recommend, would / could / might have).
    text : str
        One sentence.

    Returns
    -------
    list of (int, int)
        Half-open offsets into ``text``; empty when the sentence is not hypothetical.

    Notes
    -----
    RoB 2 asks what happened in the trial (Higgins et al., full guidance document, 22 Aug
    2019, "General considerations": answers are about the trial as conducted); a
    recommendation or a counterfactual, typically in the Discussion, is no report of a
    method (QA4 2026-12-01, report 5). Clause cutting is clinex's own choice.
    """
    pat = data.patterns.get("hypothetical")
    if pat is None:
        return []
    cues = list(pat.finditer(text))
    if not cues:
        return []
    cuts = [0] + [m.start() for m in _HYPO_BOUNDARY.finditer(text) if m.start() > 0] + [len(text)]
    out: list[tuple[int, int]] = []
    for c in cues:
        k = bisect.bisect_right(cuts, c.start()) - 1
        span = (cuts[k], cuts[min(k + 1, len(cuts) - 1)])
        if span not in out:
            out.append(span)
    return out


def _inside(spans: list[tuple[int, int]], start: int, end: int) -> bool:
    """Whether a match [start, end) begins inside one of ``spans``."""
    return any(a <= start < b for a, b in spans)


_CLAUSE = re.compile(r";|\b(?:but|however|whereas|while|whilst|although|though)\b|,\s*(?:and\s+)?(?:neither|nor|so|as)\s+(?:were|was|did|had|are|is)\b", re.I)
_INVERTED = re.compile(r"^\W*(?:and\s+)?(?:neither|nor|so|as)\s+(?:were|was|did|had|are|is)\b", re.I)
_ELLIPSIS = re.compile(r"\b(?:were|was|did|had|are|is)(?: not| too| also| as well| likewise)?\s*(?:[.,;:)]|$)", re.I)
_NEG_WORD = re.compile(r"\b(?:not|no|never|neither|nor)\b|n't\b", re.I)
_NEITHER = re.compile(r"^\W*(?:and )?(?:neither|nor)\b", re.I)


# A clause whose subject is headed by "no" / "none of the", up to the verb before a
# blinding concept: "No participants, surgeons or outcome assessors were (blinded)".
_NO_PEOPLE = re.compile(
    r"\W*(?:no|none\s+of\s+the)\s+(?:[A-Za-z][\w-]*(?:\s*,\s*|\s+(?:or|and|nor)\s+|\s+)){1,10}?"
    r"(?:were|was|had\s+been|have\s+been|has\s+been)\s+(?:\w+ly\s+)?", re.I)


_LEADING_SUBCLAUSE = re.compile(r"^\W*(?:although|though|while|whilst|whereas|because|since|as)\b[^,;]*,", re.I)


# Where a negation's scope ends between a concept and a cue: ";", contrast words, a
# subordinate clause ("because", "since", "as" as a conjunction, ", which" ...). "Patients
# were aware of the allocated treatment, as no sham device was used": the "no" is about
# the sham device (clinex's own rule, after ConText's scope termination: Harkema et al.,
# J Biomed Inform 2009;42:839-51).
_SCOPE_END = re.compile(
    r";|\b(?:because|since|whereas|although|though|while|whilst|but|however|given that|so that)\b"
    r"|,\s*(?:as|so|which|who|and)\b"
    r"|(?<!such )(?<!as well )(?<!as far )\bas\b(?!\s+(?:to|well|far|much|many|such|a result|allocated|assigned|"
    r"randomi[sz]ed|planned|intended|described|specified|required)\b)", re.I)


def _scope_ended(text: str, concept_start: int, cue_start: int) -> bool:
    """Whether a clause boundary (``_SCOPE_END``) stands between a concept starting at
    ``concept_start`` and a negation cue starting at ``cue_start`` (either order)."""
    a, b = sorted((concept_start, cue_start))
    return bool(_SCOPE_END.search(text, a, b))


def _clauses(text: str) -> list[tuple[int, int]]:
    """Clauses of a sentence: cut at ";", contrast words, and after a leading
    subordinate clause ("Although clinicians knew the allocation, the outcome ...")."""
    cuts = [0] + [m.start() for m in _CLAUSE.finditer(text) if m.start() > 0] + [len(text)]
    lead = _LEADING_SUBCLAUSE.match(text)
    if lead:
        cuts.append(lead.end())
    cuts = sorted(set(cuts))
    return [(a, b) for a, b in zip(cuts, cuts[1:]) if b > a]


_FORESEEN = re.compile(r"\b(allocation )?(schedule|sequence|list|next (assignment|allocation))\b[^.;]{0,40}"
                       r"\b(in advance|beforehand|ahead of|before (the patient|consent|enrol\w*|recruit\w*|randomi[sz]\w*))", re.I)
_ONLY = re.compile(r"\bonly (the )?(patients?|participants?|subjects?|women|children)\b", re.I)
_WHEN = re.compile(r"\b(before|after|until|prior to|at the time of|following)\s+(the\s+)?([\w-]+\s+){0,4}$", re.I)

#: Design labels: about the whole trial unless they qualify a named person.
_DESIGN_LABELS = frozenset({"double_blind", "triple_blind", "open_label", "registry_masking"})

#: Concepts that may stand before a noun as its adjective.
_ADJECTIVAL = frozenset({"blinded", "open_label", "double_blind", "triple_blind", "single_blind"})


def _concept_matches(data: ReasoningData, text: str) -> list[tuple[dict, int, int]]:
    """Blinding concepts of a sentence, in text order: the first pattern's match wins an
    overlap; matches inside a hypothetical clause are left out."""
    matches: list[tuple[dict, int, int]] = []
    hypo = hypothetical_spans(data, text)
    for concept, pat in data.blinding:
        for m in pat.finditer(text):
            if any(m.start() < e and b < m.end() for _, b, e in matches) or _inside(hypo, m.start(), m.end()):
                continue
            matches.append((concept, m.start(), m.end()))
    matches.sort(key=lambda x: x[1])
    return matches


def _ellipsis_statements(data: ReasoningData, s: Sentence, clause: str, base: bool | None) -> list[BlindingStatement]:
    """Statements of a clause without a concept that repeats the last one ("..., but
    patients were." / "...; assessors were not." / "and neither were the assessors");
    ``base`` is what the last concept means when affirmed (None: no concept yet)."""
    named = _actors_in(data, clause)
    if base is not None and named and (_ELLIPSIS.search(clause) or _INVERTED.search(clause)):
        negated = bool(_NEG_WORD.search(clause)) or bool(_NEITHER.search(clause))
        value = base != negated
        return [BlindingStatement(a, value, False, False, "ellipsis", s) for a in named]
    return []


def _clause_assertion(text: str, cs: int, ce: int, b: int, a: Assertion) -> Assertion:
    """The concept's assertion within its clause ``text[cs:ce]``: negated by a "no" heading
    the subject, affirmed when its negation cue lies in another clause."""
    if not a.negated and _NO_PEOPLE.fullmatch(text, cs, b):
        # "No participants, surgeons or outcome assessors were blinded": "no"
        # heads the subject, beyond ConText's window for "no"
        a = Assertion(negated=True, hedged=a.hedged, cue="no_people", cue_start=cs)
    if a.negated and a.cue_start is not None and (not cs <= a.cue_start < ce
                                                   or _scope_ended(text, b, a.cue_start)):
        # "Because ... not receiving messages, participants knew ...", "were aware
        # of the allocated treatment, as no sham device was used": another clause
        a = AFFIRMED
    return a


def _states_nothing(concept: dict, text: str, b: int, e: int, a: Assertion, clause: str) -> bool:
    """True when the concept at ``text[b:e]`` states nothing on blinding: the noun alone
    ("Randomisation and masking"), a time ("before unblinding") or foreseen allocation
    ("ward staff knew the allocation schedule in advance": concealment, 1.2)."""
    if concept["id"] == "blinded" and not a.negated and text[b:e].lower().endswith("ing"):
        return True  # the noun alone ("Randomisation and masking") states nothing
    if _WHEN.search(text[max(0, b - 40):b]):
        return True  # "before unblinding", "until the allocation was unmasked": a time
    return bool(_FORESEEN.search(clause))  # "ward staff knew the allocation schedule in advance"


def _statement_actors(data: ReasoningData, concept: dict, text: str, b: int, e: int,
                      clause: str, cs: int, value: bool) -> tuple[list[str], bool] | None:
    """Who the concept at ``text[b:e]`` is about, and whether only by implication; None
    when it is about nobody we ask about ("masked syringes", "a single-blind trial")."""
    qualified = (_adjective_of(data, text, e, b)
                 if concept["id"] in _ADJECTIVAL and re.search(r"(blind|blinded|masked|label)$", text[b:e], re.I)
                 else None)
    if qualified is not None and not qualified:
        return None  # "masked syringes", "unblinded pharmacists": nobody we ask about
    if concept["id"] in _DESIGN_LABELS and not qualified:
        # "an open-label study used blinded adjudication": the label is about
        # the trial; statements naming people decide for them
        near: list[str] = []
    else:
        near = qualified or _actors_in(data, clause, b - cs)
    implied = bool(concept.get("implied")) and not near
    actors = near or list(concept.get("actors") or [])
    if not actors:
        if concept["id"] == "single_blind":
            return None  # "a single-blind trial" does not say who
        # "Blinding was not possible", "the study was not blinded": nobody
        # named, about everyone who could have been blinded
        actors, implied = ["participants", "deliverers"] + (["assessors"] if not value else []), True
    return actors, implied


def _concept_statements(data: ReasoningData, s: Sentence, concept: dict, b: int, e: int, a: Assertion,
                        cs: int, ce: int) -> list[BlindingStatement] | None:
    """Statements of one concept at ``s.text[b:e]`` in the clause ``s.text[cs:ce]``; None
    when it states nothing (absent, not a statement, about nobody)."""
    if a.absent:
        return None  # "whether assessors were blinded was not reported": no information
    clause = s.text[cs:ce]
    a = _clause_assertion(s.text, cs, ce, b, a)
    if _states_nothing(concept, s.text, b, e, a, clause):
        return None
    value = bool(concept["blinded"]) != a.negated
    found = _statement_actors(data, concept, s.text, b, e, clause, cs, value)
    if found is None:
        return None
    actors, implied = found
    hedged = a.hedged or bool(concept.get("hedged"))
    out = [BlindingStatement(actor, value, hedged, implied, concept["id"], s) for actor in actors]
    if value and _ONLY.search(clause) and actors == ["participants"]:
        # "only the patients were unaware": those delivering care were aware
        out.append(BlindingStatement("deliverers", False, hedged, True, concept["id"] + "_only", s))
    return out


def _sentence_statements(data: ReasoningData, scope: AssertionScope, s: Sentence) -> list[BlindingStatement]:
    """Blinding statements of one sentence, clause by clause."""
    matches = _concept_matches(data, s.text)
    if not matches:
        return []
    assertions = scope.check(s.text, [(b, e) for _, b, e in matches])
    out: list[BlindingStatement] = []
    base: bool | None = None  # what the last concept means when affirmed (blinded?)
    for cs, ce in _clauses(s.text):
        here = [(c, b, e, a) for (c, b, e), a in zip(matches, assertions) if cs <= b < ce]
        if not here:
            out.extend(_ellipsis_statements(data, s, s.text[cs:ce], base))
            continue
        for concept, b, e, a in here:
            found = _concept_statements(data, s, concept, b, e, a, cs, ce)
            if found is not None:
                out.extend(found)
                base = bool(concept["blinded"])
    return out


def blinding_statements(data: ReasoningData, scope: AssertionScope,
                        sentences: list[Sentence]) -> list[BlindingStatement]:
    """Who was (not) blinded, per sentence (see the module docstring).

    Parameters
    ----------
    data : ReasoningData
    scope : AssertionScope
    sentences : list of Sentence

    Returns
    -------
    list of BlindingStatement
        In text order.
    """
    out: list[BlindingStatement] = []
    for s in sentences:
        out.extend(_sentence_statements(data, scope, s))
    return out
