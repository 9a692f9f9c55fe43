"""Dechallenge and rechallenge: a reaction that abates when its drug is withdrawn, or
comes back when the drug is given again, is an adverse event of that drug.

"The agranulocytosis resolved after clozapine was withdrawn." is the classic evidence
that clozapine caused the agranulocytosis, yet a tagger trained on PHEE reads "resolved"
as a therapeutic outcome (PHEE itself types about half of its train sentences of this
kind as Potential_therapeutic_event, with the reaction as the drug's ``Disorder``).
The WHO-UMC causality criteria name these observations as the evidence for a drug's
role: a plausible "response to withdrawal (dechallenge)" for *probable*, and a
satisfactory rechallenge for *certain* [1]_; the Naranjo scale scores the same two
questions [2]_. :func:`mark_challenges` finds them in a sentence and corrects the event
of the withdrawn (or re-given) drug:

* **positive dechallenge** (:data:`_OUTCOME` and :data:`_WITHDRAWN` or
  :data:`_DOSE_REDUCED` in one clause, linked by "after", "within a week of",
  "on", "once", "when", ", and" ...; rule ids ``challenge.dechallenge.withdrawal`` and
  ``challenge.dechallenge.dose_reduction``): "resolved after X was withdrawn",
  "resolved within a week of stopping X", "improved after the dose of X was reduced",
  "After discontinuation of X, the rash resolved";
* **positive rechallenge** (:data:`_RECURRED` and :data:`_REEXPOSED` in one clause;
  ``challenge.rechallenge.recurrence``): "the rash recurred when X was restarted",
  "rechallenge with X caused recurrence of ...".

A resolution or recurrence that is negated ("did not resolve", "no recurrence",
"persisted despite withdrawal") is no positive challenge and is left alone, and so is
"may not resolve" (a hedge). The event whose drug stands next to the withdrawal or
re-exposure word (or the sentence's only event with a single drug, for "after
discontinuation of the drug") becomes an ``Adverse_event`` with attribute
``Dechallenge`` / ``Rechallenge`` (value ``True``, the cue is the withdrawal or
re-exposure word, ``source="rule:<id>"``); its Effect is the reaction without the
outcome words ("tremor improved" -> "tremor", "The rash recurred" -> "The rash"; a
``Disorder`` sub-argument standing as the subject of "resolved" becomes the Effect when
the model gave none), its Treatment is the drug without the withdrawal words ("a week of
stopping heparin" -> "heparin", "clozapine was" -> "clozapine"), and a drug started or
given for the reaction in the same sentence ("... and prednisone was started") is not
one of its drugs. The trigger is kept: PHEE annotates such events with the model's kind
of trigger ("resolved", "after", "when").

The attributes are clinex's, not PHEE's (:data:`clinex.pv.schema.CHALLENGE_ATTRIBUTES`):
they go to every output (PHEE JSON and brat attribute nodes, the CLI listing) and are not
scored by :mod:`clinex.pv.evaluate`.

References
----------
.. [1] WHO Uppsala Monitoring Centre. The use of the WHO-UMC system for standardised case
   causality assessment. 2013 (criteria "response to withdrawal clinically reasonable"
   and "satisfactory rechallenge procedure").
.. [2] Naranjo CA, Busto U, Sellers EM, et al. A method for estimating the probability of
   adverse drug reactions. Clin Pharmacol Ther 1981;30(2):239-245 (questions 3 and 4:
   improvement on discontinuation, reappearance on readministration).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from clinex.pv.links import drug_spans, retyped
from clinex.pv.types import Argument, Attribute, Event
from clinex.text import Span

__all__ = ["CHALLENGE_RULES", "ChallengeRule", "Challenge", "find_challenges", "mark_challenges"]


@dataclass(frozen=True)
class ChallengeRule:
    """One challenge rule: its id (``source="rule:<id>"``), attribute and provenance."""

    id: str
    attribute: str
    provenance: str


#: The rules of this module, by id.
CHALLENGE_RULES: dict[str, ChallengeRule] = {
    r.id: r
    for r in (
        ChallengeRule(
            "challenge.dechallenge.withdrawal", "Dechallenge",
            "WHO-UMC causality criteria (2013): response to withdrawal; Naranjo et al. 1981 question 3; "
            "issue 23 QA sentences ('The agranulocytosis resolved after clozapine was withdrawn.')",
        ),
        ChallengeRule(
            "challenge.dechallenge.dose_reduction", "Dechallenge",
            "WHO-UMC causality criteria (2013): withdrawal or dose reduction; Naranjo et al. 1981 question 3 "
            "('improve when the drug was discontinued'); issue 23 ('... improved after the dose of X was reduced')",
        ),
        ChallengeRule(
            "challenge.rechallenge.recurrence", "Rechallenge",
            "WHO-UMC causality criteria (2013): satisfactory rechallenge; Naranjo et al. 1981 question 4 "
            "('reappear when the drug was readministered'); issue 23 ('The rash recurred when carbamazepine was restarted.')",
        ),
    )
}

#: The reaction abated.
_OUTCOME = re.compile(
    r"\b(?:resolved|resolution|resolving|improved|improvement|improving|disappeared|disappearance|subsided|abated"
    r"|normali[sz]ed|normali[sz]ation|recovered|recovery|remitted|remission|reversed|reversal|regressed|regression"
    r"|cleared|faded|vanished|diminished|returned\s+to\s+(?:normal|baseline))\b",
    re.I,
)
#: The drug was withdrawn (the cue is the whole match).
_WITHDRAWN = re.compile(
    r"\b(?:withdrawn|withdrawal|withdrawing|withdrew|discontinued|discontinuation|discontinuing|discontinue"
    r"|stopped|stopping|stop|cessation|ceased|ceasing|tapered|tapering|halted|interrupted|interruption"
    r"|held|suspended|terminated|termination|terminating)\b",
    re.I,
)
#: The dose was reduced (the cue is group ``cue``).
_DOSE_REDUCED = re.compile(
    r"\b(?:dose|dosage|doses)\s+(?:of\s+(?:the\s+)?[\w-]+(?:\s+[\w-]+)?\s+)?(?:was|were|had\s+been|has\s+been)\s+"
    r"(?:\w+ly\s+)?(?P<cue>reduced|decreased|lowered|halved|tapered)\b"
    r"|\b(?P<cue2>reduc(?:ed|ing|tion\s+of)|decreas(?:ed|ing)|lower(?:ed|ing)|halv(?:ed|ing))\s+(?:the\s+|his\s+|her\s+|its\s+)?(?:dose|dosage)\b"
    r"|\b(?:dose|dosage)\s+(?P<cue3>reduction|decrease|tapering)\b",
    re.I,
)
#: The reaction came back.
_RECURRED = re.compile(
    r"\b(?:recurred|recurrence|recurring|recur|recurs|reappeared|reappearance|reappear|re-?emerged|reoccurred"
    r"|recrudesced|recrudescence|relapsed|(?:developed|occurred|appeared|worsened)\s+again)\b",
    re.I,
)
#: The drug was given again.
_REEXPOSED = re.compile(
    r"\b(?:re-?start(?:ed|ing)?|re-?introduc(?:ed|tion|ing)|re-?challenge[ds]?|re-?challenging|re-?expos(?:ed|ure)"
    r"|re-?administ(?:ered|ration|ering)|resum(?:ed|ption|ing)|re-?institut(?:ed|ion)|re-?initiat(?:ed|ion|ing)"
    r"|reinstated|given\s+again|again\s+given|(?:repeat(?:ed)?|second|renewed|further)\s+(?:challenge|exposure|administration|course))\b",
    re.I,
)
#: Substrings every :data:`_RECURRED` match holds, and those of :data:`_OUTCOME` too: a
#: sentence with none of them states no challenge.
_RECURRED_STEMS = ("recur", "reappear", "emerg", "reoccur", "recrud", "relaps", "again")
_STEMS = ("resol", "improv", "disappear", "subsid", "abat", "normali", "recover", "remi", "revers", "regress",
          "clear", "fade", "vanish", "diminish", "return") + _RECURRED_STEMS

#: A negation or hedge just before an outcome or recurrence word: no positive challenge
#: ("did not resolve", "no recurrence", "may be reversed": an expectation, not an observation).
_NEGATED_BEFORE = re.compile(
    r"\b(?:not|no|never|nor|neither|without|failed\s+to|did\s+not|does\s+not|may\s+not|might\s+not|cannot|lack\s+of|absence\s+of)"
    r"(?:\s+\w+){0,2}\s*$"
    r"|\b(?:may|might|can|could|would|should|will|expected\s+to|likely\s+to)\s+(?:\w+ly\s+)?(?:be\s+|have\s+)?(?:\w+ly\s+)?$",
    re.I,
)
#: A clause end between the two words (the outcome of another drug, "but", ";").
_CLAUSE_END = re.compile(r"[;:]|\b(?:but|however|whereas|although|though|despite|in\s+spite\s+of|while)\b", re.I)
#: A drug started or given for the reaction: not one of the dechallenged drugs.
_STARTED_AFTER = re.compile(
    r"^\s*(?:therapy\s+|treatment\s+)?(?:was|were|had\s+been)\s+(?:\w+ly\s+)?(?:started|added|begun|initiated|commenced"
    r"|given|administered|introduced|substituted)\b",
    re.I,
)
_STARTED_BEFORE = re.compile(
    r"(?<![\w-])(?:(?:resolved|improved|treated|managed|reversed|controlled|corrected|relieved)\s+(?:\w+ly\s+)?(?:by|with)\s+"
    r"|switch(?:ed|ing)?\s+to|replaced\s+(?:by|with)|substitut(?:ed|ion)\s+(?:by|with|of)|started\s+on|start(?:ing)?\s+"
    r"|treat(?:ed|ment)\s+with|administration\s+of|addition\s+of|initiation\s+of|introduction\s+of)"
    r"(?:the\s+|oral\s+|intravenous\s+|iv\s+|topical\s+)*$",
    re.I,
)

#: How far (characters) the outcome and the withdrawal word may stand apart.
_MAX_GAP = 90


@dataclass(frozen=True)
class Challenge:
    """A positive dechallenge or rechallenge found in a sentence.

    Attributes
    ----------
    rule : ChallengeRule
    cue : (int, int)
        The withdrawal, dose-reduction or re-exposure word (character offsets).
    outcome : (int, int)
        The outcome or recurrence word.
    """

    rule: ChallengeRule
    cue: tuple[int, int]
    outcome: tuple[int, int]


def _negated(text: str, start: int) -> bool:
    return _NEGATED_BEFORE.search(text, max(0, start - 30), start) is not None


def _pairs(text: str, outcomes: list[re.Match], cues: list[tuple[int, int]], rule: ChallengeRule) -> list[Challenge]:
    found = []
    for cs, ce in cues:
        best = None
        for m in outcomes:
            os_, oe = m.span()
            lo, hi = (oe, cs) if oe <= cs else (ce, os_) if ce <= os_ else (0, 0)
            if hi - lo > _MAX_GAP or _CLAUSE_END.search(text, lo, hi) or _negated(text, os_):
                continue
            if best is None or abs(os_ - cs) < abs(best[0] - cs):
                best = (os_, oe)
        if best is not None:
            found.append(Challenge(rule, (cs, ce), best))
    return found


def find_challenges(text: str) -> list[Challenge]:
    """The positive dechallenges and rechallenges a sentence states (module notes).

    Parameters
    ----------
    text : str
        One sentence.

    Returns
    -------
    list of Challenge
        In text order of their cues; empty when the sentence states none.

    Examples
    --------
    >>> [(c.rule.attribute, "The rash recurred when carbamazepine was restarted."[slice(*c.cue)])
    ...  for c in find_challenges("The rash recurred when carbamazepine was restarted.")]
    [('Rechallenge', 'restarted')]
    """
    out: list[Challenge] = []
    low = text.lower()
    if not any(stem in low for stem in _STEMS):  # most sentences: one cheap scan, no regex
        return out
    outcomes = [m for m in _OUTCOME.finditer(text)]
    if outcomes:
        withdrawn = [m.span() for m in _WITHDRAWN.finditer(text)]
        reduced = []
        for m in _DOSE_REDUCED.finditer(text):
            g = next(g for g in ("cue", "cue2", "cue3") if m.group(g))
            reduced.append(m.span(g))
        withdrawn = [w for w in withdrawn if not any(r[0] <= w[0] < r[1] for r in reduced)]
        out += _pairs(text, outcomes, withdrawn, CHALLENGE_RULES["challenge.dechallenge.withdrawal"])
        out += _pairs(text, outcomes, reduced, CHALLENGE_RULES["challenge.dechallenge.dose_reduction"])
    recurred = [m for m in _RECURRED.finditer(text)] if any(stem in low for stem in _RECURRED_STEMS) else []
    if recurred:
        again = [m.span() for m in _REEXPOSED.finditer(text)]
        out += _pairs(text, recurred, again, CHALLENGE_RULES["challenge.rechallenge.recurrence"])
    return sorted(out, key=lambda c: c.cue)


def _gap(a: tuple[int, int], b: tuple[int, int]) -> int:
    return max(0, b[0] - a[1], a[0] - b[1])


def mark_challenges(text: str, events: Sequence[Event]) -> list[Event]:
    """Mark and correct the events of a sentence's positive dechallenges and
    rechallenges (module notes).

    Parameters
    ----------
    text : str
        The sentence every span of ``events`` points into.
    events : sequence of Event
        Its events.

    Returns
    -------
    list of Event
        ``events`` (same order) where the event of each withdrawn or re-given drug is an
        Adverse_event with a ``Dechallenge`` / ``Rechallenge`` attribute, its Effect and
        Treatment cut to the reaction and the drug; the others unchanged.

    Examples
    --------
    >>> from clinex.pv.types import Argument
    >>> t = "The agranulocytosis resolved after clozapine was withdrawn."
    >>> ev = Event(event_type="Potential_therapeutic_event", trigger=Span.from_offsets(t, (20, 28)),
    ...     arguments=(Argument(role="Effect", span=Span.from_offsets(t, (4, 19))),
    ...                Argument(role="Treatment", span=Span.from_offsets(t, (35, 48)))))
    >>> out = mark_challenges(t, [ev])[0]
    >>> out.event_type, [(a.role, a.span.text) for a in out.arguments], [(a.name, a.cue.text) for a in out.attributes]
    ('Adverse_event', [('Effect', 'agranulocytosis'), ('Treatment', 'clozapine')], [('Dechallenge', 'withdrawn')])
    """
    if not events:
        return list(events)
    challenges = find_challenges(text)
    if not challenges:
        return list(events)
    out = list(events)
    for ch in challenges:
        best = None
        for i, ev in enumerate(out):
            drugs = drug_spans(ev)
            near = [d for d in drugs if not _started(text, d) and any(
                _names_drug(text, ch.cue, m) for m in _mentions(text, d))]
            if not near and len(out) == 1 and len(drugs) == 1 and _generic_reference(text, ch.cue):
                near = drugs  # "resolved within 3 days of stopping the drug": the only drug
            if near:
                d = min(near, key=lambda d: _gap(d, ch.cue))
                if best is None or _gap(d, ch.cue) < best[0]:
                    best = (_gap(d, ch.cue), i, d)
        if best is not None:
            _, i, d = best
            out[i] = _apply(text, out[i], ch, d)
    return out


#: From a withdrawal or re-exposure word to its drug: "stopping (the) X", "withdrawal of
#: X", "discontinuation of both X", "reintroduction of X".
_CUE_THEN_DRUG = re.compile(
    r"\s+(?:of\s+|with\s+)?(?:(?:the|this|his|her|their|all|both|oral|intravenous|iv|topical)\s+)*"
    r"(?:(?:use|dose|doses|dosage|administration|intake)\s+of\s+(?:the\s+)?)?",
    re.I,
)
#: From a drug to its withdrawal or re-exposure word: "X was withdrawn", "X therapy was
#: stopped", "X withdrawal", "the dose of X was reduced".
_DRUG_THEN_CUE = re.compile(
    r"\s*(?:(?:therapy|treatment|use|administration|intake|dose|dosage)\s*)?"
    r"(?:(?:was|were|had\s+been|has\s+been|have\s+been|is|are)\s+(?:then\s+|\w+ly\s+)?)?",
    re.I,
)


def _mentions(text: str, drug: tuple[int, int]) -> list[tuple[int, int]]:
    """``drug`` and every other mention of the same name in the sentence ("a relationship to
    capecitabine ... with capecitabine withdrawal")."""
    name = text[drug[0]:drug[1]]
    found = [drug]
    if len(name) >= 3:
        for m in re.finditer(r"(?<![\w-])" + re.escape(name) + r"(?![\w-])", text, re.I):
            if m.span() != drug:
                found.append(m.span())
    return found


def _names_drug(text: str, cue: tuple[int, int], drug: tuple[int, int]) -> bool:
    """True when the withdrawal or re-exposure word at ``cue`` is said of the drug at ``drug``."""
    if cue[1] <= drug[0]:
        return _CUE_THEN_DRUG.fullmatch(text, cue[1], drug[0]) is not None
    if drug[1] <= cue[0]:
        return _DRUG_THEN_CUE.fullmatch(text, drug[1], cue[0]) is not None
    return True  # the cue inside the drug's span ("mizoribin withdrawal" tagged whole)


#: A reference to the drug without its name at a withdrawal word: "after discontinuation.",
#: "stopping the drug", "the medication was withdrawn", "it was stopped".
_GENERIC_AFTER = re.compile(
    r"(?:\s+of)?(?:\s+(?:the|this|that|its|his|her|their))?\s+(?:drug|drugs|medication|medications|agent|agents"
    r"|medicine|therapy|treatment|regimen)\b|\s*(?:[,.;)]|$)",
    re.I,
)
_GENERIC_BEFORE = re.compile(
    r"\b(?:it|drug|drugs|medication|medications|agent|medicine|therapy|treatment|regimen)\s+"
    r"(?:was|were|had\s+been|has\s+been)\s+(?:\w+ly\s+)?$",
    re.I,
)


def _generic_reference(text: str, cue: tuple[int, int]) -> bool:
    return bool(_GENERIC_AFTER.match(text, cue[1]) or _GENERIC_BEFORE.search(text[max(0, cue[0] - 40):cue[0]]))


def _apply(text: str, ev: Event, ch: Challenge, drug: tuple[int, int]) -> Event:
    """``ev`` as the Adverse_event of the challenge ``ch`` of the drug at ``drug``: other
    drugs started or given for the reaction dropped, Treatment and Effect cut as PHEE
    annotates them, the reaction taken from a Disorder that is the outcome's subject, and
    the challenge attribute added unless the event has it already."""
    ev = retyped(ev, "Adverse_event")
    others = [d for d in drug_spans(ev) if d != drug and _started(text, d)]

    def other(a: Argument) -> bool:
        return _of_other_drug(a, drug, others)

    args = _cut_arguments(text, ev, ch, drug, others, other)
    subs = {role: [x for x in vals if not (role == "Treatment" and other(x))] for role, vals in ev.sub_arguments.items()}
    args += _disorder_effects(text, subs, ch, args)
    effects = [a for a in args if a.role == "Effect"]
    # the reaction is no indication of its own drug
    subs = {role: [x for x in vals if not (x.role == "Disorder" and any(
        e.span.overlaps(x.span.start, x.span.end) for e in effects))] for role, vals in subs.items()}
    combos = _kept_combinations(ev, other)
    attrs = list(ev.attributes)
    name = ch.rule.attribute
    if ev.attribute(name) is None:  # the first (nearest) cue of a sentence stays
        attrs.append(Attribute(name=name, value=True, cue=Span.from_offsets(text, ch.cue), source=f"rule:{ch.rule.id}"))
    return ev.model_copy(update={
        "arguments": tuple(sorted(args, key=lambda a: (a.span.start, a.span.end))),
        "sub_arguments": {role: tuple(vals) for role, vals in subs.items() if vals},
        "combinations": tuple(combos),
        "attributes": tuple(attrs),
    })


def _of_other_drug(a: Argument, drug: tuple[int, int], others: list[tuple[int, int]]) -> bool:
    """True when ``a`` lies inside one of the ``others`` drugs, or holds one without
    holding the challenged ``drug``."""
    return any(s <= a.span.start and a.span.end <= e for s, e in others) or any(
        a.span.start <= s and e <= a.span.end and not (a.span.start <= drug[0] and drug[1] <= a.span.end)
        for s, e in others
    )


def _kept_combinations(ev: Event, other: Callable[[Argument], bool]) -> list:
    """The combinations of ``ev`` without the drugs of ``other``; one left with fewer
    than two drugs is dropped."""
    combos = []
    for c in ev.combinations:
        drugs = tuple(x for x in c.drugs if not other(x))
        if len(drugs) >= 2:
            combos.append(c if drugs == c.drugs else c.model_copy(update={"drugs": drugs}))
    return combos


def _cut_arguments(text: str, ev: Event, ch: Challenge, drug: tuple[int, int],
                   others: list[tuple[int, int]], other: Callable[[Argument], bool]) -> list[Argument]:
    """The main arguments of ``ev`` kept for the challenge: Treatments of another drug
    (``other``) left out, Treatments and Effects cut (:func:`_cut_treatment`,
    :func:`_cut_effect`), in their order."""
    times = [x for x in ev.sub_arguments.get("Treatment", ()) if x.role in ("Time_elapsed", "Duration")]
    args: list[Argument] = []
    for a in ev.arguments:
        if a.role == "Treatment":
            if other(a):
                continue
            a = _cut_treatment(text, a, ch, drug, others, times)
        elif a.role == "Effect":
            a = _cut_effect(text, a)
        args.append(a)
    return args


def _disorder_effects(text: str, subs: dict[str, list[Argument]], ch: Challenge,
                      args: list[Argument]) -> list[Argument]:
    """The subject of "resolved" tagged as the drug's indication (a PTE's Disorder in
    ``subs``) is the reaction: the Effects to add, one per such Disorder that no Effect
    of ``args`` (nor one added before it) overlaps."""
    added: list[Argument] = []
    for x in list(subs.get("Treatment", ())):
        if x.role == "Disorder" and _subject_of(text, x, ch.outcome) and not any(
                a.role == "Effect" and a.span.overlaps(x.span.start, x.span.end) for a in args + added):
            added.append(_cut_effect(text, Argument(role="Effect", span=Span.from_offsets(
                text, x.span.offsets(), label="Effect"))))
    return added


def _started(text: str, drug: tuple[int, int]) -> bool:
    """True for a drug that the sentence starts or gives (for the reaction)."""
    return bool(_STARTED_AFTER.match(text[drug[1]:drug[1] + 60]) or _STARTED_BEFORE.search(text[max(0, drug[0] - 40):drug[0]]))


#: "was", "had been" ... at a Treatment's end: "(clozapine) was (withdrawn)".
_AUX_TAIL = re.compile(r"(?:\s+(?:was|were|had|has|have|been|being|is|are|then|promptly|immediately|subsequently|gradually))+\s*$", re.I)
#: Outcome words at an Effect's end: "tremor (improved)", "The rash (recurred)".
_OUTCOME_TAIL = re.compile(
    r"(?:\s+(?:has|had|was|were|have|then|subsequently|gradually|rapidly|promptly|completely|fully|slowly|dramatically|quickly))*"
    r"\s+(?:" + _OUTCOME.pattern[2:-2] + "|" + _RECURRED.pattern[2:-2] + r")(?:\s+(?:completely|fully|gradually|rapidly|promptly|again))*\s*$",
    re.I,
)
#: Outcome words at an Effect's start: "(resolution of) the rash".
_OUTCOME_HEAD = re.compile(
    r"^(?:(?:complete|full|rapid|prompt|gradual|partial)\s+)?(?:resolution|improvement|disappearance|remission|regression"
    r"|recurrence|reappearance)\s+(?:of|in)\s+",
    re.I,
)


def _cut_effect(text: str, a: Argument) -> Argument:
    """The Effect without the outcome words around it ("tremor improved" -> "tremor",
    "resolution of the effusion" -> "the effusion"); kept whole when
    another outcome word stays inside ("anemia resolved and renal function normalized")."""
    if a.span.is_discontinuous:
        return a
    s, e = a.span.start, a.span.end
    m = _OUTCOME_TAIL.search(text[s:e])
    if m is not None and m.start() > 0:
        e = s + m.start()
    m = _OUTCOME_HEAD.match(text[s:e])
    if m is not None and s + m.end() < e:
        s += m.end()
    if _OUTCOME.search(text, s, e) or _RECURRED.search(text, s, e):
        return a
    if (s, e) == (a.span.start, a.span.end):
        return a
    return a.model_copy(update={"span": Span.from_offsets(text, (s, e), label=a.span.label)})


def _cut_treatment(text: str, a: Argument, ch: Challenge, drug: tuple[int, int],
                   others: list[tuple[int, int]], times: Sequence[Argument]) -> Argument:
    """The Treatment as PHEE annotates a withdrawn drug ("discontinuation of X", "X was
    discontinued ..."), without a dangling "was", a time phrase cut in two ("(within) a week
    of stopping heparin" -> "stopping heparin") and another drug given for the reaction."""
    if a.span.is_discontinuous:
        return a
    s, e = a.span.start, a.span.end
    for t in times:  # the Treatment starts inside a time phrase: start after it
        if t.span.start <= s < t.span.end < drug[0]:
            m = re.match(r"\s*(?:of|after|following)?\s*", text[t.span.end:drug[0]])
            s = t.span.end + (m.end() if m else 0)
    if any(s <= o[0] and o[1] <= e for o in others):  # "G-CSF therapy and by the discontinuation of X"
        if s <= ch.cue[0] < drug[0]:
            s = ch.cue[0]
        elif drug[1] <= ch.cue[1] <= e:
            s, e = drug[0], ch.cue[1]
    if drug[1] <= ch.cue[0] and ch.cue[1] <= e and text[ch.cue[1]:e].strip(" ,;:.") == "":
        # "clozapine was withdrawn" tagged whole: PHEE's Treatment is the drug ("after
        # fluvoxamine was discontinued": "fluvoxamine"), with "therapy" or "treatment"
        m = re.match(r"\s+(?:therapy|treatment)\b", text[drug[1]:ch.cue[0]], re.I)
        if _DRUG_THEN_CUE.fullmatch(text, drug[1], ch.cue[0]):
            e = drug[1] + (m.end() if m else 0)
    m = _AUX_TAIL.search(text, s, e)
    if m is not None and m.start() > s and m.end() == e:
        e = m.start()
    while e > s and text[e - 1] in " ,;:":
        e -= 1
    if drug == (a.span.start, a.span.end):  # a Treatment without a Drug inside: it is the drug
        drug = (s, e)
    if e <= s or not (s <= drug[0] and drug[1] <= e):
        return a
    if (s, e) == (a.span.start, a.span.end):
        return a
    return a.model_copy(update={"span": Span.from_offsets(text, (s, e), label=a.span.label)})


def _subject_of(text: str, x: Argument, outcome: tuple[int, int]) -> bool:
    """True when ``x`` stands as the subject of the outcome word ("Hyponatremia resolved")
    or its object ("resolution of the rash")."""
    if x.span.end <= outcome[0]:
        return re.fullmatch(r"(?:\s+(?:has|had|was|were|have|then|subsequently|gradually|rapidly|promptly|completely|fully))*\s+",
                            text[x.span.end:outcome[0]], re.I) is not None
    if outcome[1] <= x.span.start:
        return re.fullmatch(r"\s+(?:of|in|from)\s+(?:the\s+|his\s+|her\s+|their\s+)?", text[outcome[1]:x.span.start], re.I) is not None
    return False
