"""One event per drug → effect link: split clause-joined events, drop treating drugs.

A joint tagger gives every argument of a sentence to its nearest trigger, so one
predicted event can hold two links a safety reviewer reads as two reports:

1. **Two clauses, two links** (:func:`split_links`). "Warfarin caused a major
   gastrointestinal bleed, while clopidogrel was associated with a mild rash." gave one
   Adverse_event with both drugs and both effects (and one Severity for both);
   "Amiodarone induced hypothyroidism in this 66-year-old man, and subsequent
   levothyroxine therapy normalized his thyroid function." gave one Adverse_event with
   levothyroxine as a combination drug. When an event's arguments fall into two or more
   clauses (:data:`SPLIT_BREAK`: a comma or semicolon before *while*, *whereas*, *but*,
   *although*, *and*, or a semicolon) and each of those clauses names its own drug and its
   own effect (or a therapeutic outcome verb), the event becomes one event per clause.
   The clause that holds the model's trigger keeps it and its type; another clause takes
   its first trigger word (:data:`ADE_TRIGGER` / :data:`THERAPEUTIC`) and is a
   Potential_therapeutic_event when that word is a therapeutic outcome ("normalized",
   "resolved", ...), else an Adverse_event. PHEE annotates one event per trigger with its
   own Treatment and Effect (Sun et al., EMNLP 2022, §3 and appendix A: "an ADE and a PTE
   in one sentence are two events"). A break inside an argument (an Effect "nausea,
   vomiting, and diarrhea") is no clause break, and a clause without a drug of its own
   (", and the patient recovered") is no link: then nothing is split.
2. **A drug given to treat or prevent a reaction is never its cause**
   (:func:`drop_treating_drugs`). "... nifedipine sustained-release tablets for
   cyclosporin A-induced hypertension" made nifedipine the cause; "granisetron ... for
   prophylaxis of cisplatin-induced nausea and vomiting" made granisetron one. A drug
   followed by "for" / "to treat" / "to prevent" / "for (the) prophylaxis (prevention,
   treatment, management, ...) of" and then the event's Effect (:data:`_TREATS`), or named
   after the Effect in "was treated / managed / controlled with" (:data:`_TREATED_WITH`),
   is taken out of the Adverse_event; the drug named in the "X-induced" (-associated,
   -related) compound before the Effect becomes its Treatment when the event has none
   left. When the sentence names no such cause and every drug of the event treats its
   Effect ("Paroxysmal hemicrania responding to topiramate"), the Effect is the drugs'
   indication and the event is their Potential_therapeutic_event. PHEE annotates a drug given for a condition as that condition's treatment
   (``Treatment.Disorder`` of a potential therapeutic event; appendix A), and a causality
   assessment names the suspect drug, not the treatment of the reaction (WHO-UMC system for
   standardised case causality assessment, 2013: "response to withdrawal", the drug the
   event is attributed to).

3. **Another group's numbers** (:func:`drop_other_group_subjects`). "Although
   fluoxetine-induced headache occurred in one patient, the other five reported no side
   effects" gave the headache's event the Population "five". A Subject sub-argument that
   lies outside the event's Subject spans and is cut off from the trigger by a change of
   group (:data:`OTHER_GROUP`: ", the other", "; the remaining") is another group's and is
   dropped (ConText's change of experiencer ends a scope: Harkema et al. 2009).

All are rules on the model's own spans (no new span is guessed except the trigger word
of a split clause, its outcome phrase as a therapeutic Effect, and the drug of an
"X-induced" compound); every event they change keeps the model's ``score`` and
``source``. :func:`clinex.pv.postprocess.finish` runs them before the attribute scope, so
each new event's Negated / Speculated / Severity are decided from its own trigger and
Effect.

This module also holds the clause and outcome patterns that :mod:`clinex.pv.postprocess`
and :mod:`clinex.pv.challenge` share (:data:`CLAUSE_BREAK`, :data:`THERAPEUTIC`).

References
----------
Sun Z, Li J, Pergola G, et al. PHEE: A Dataset for Pharmacovigilance Event Extraction
from Text. EMNLP 2022, §3 and appendix A.
WHO Uppsala Monitoring Centre. The use of the WHO-UMC system for standardised case
causality assessment. 2013.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Sequence

from clinex.pv.links_groups import OTHER_GROUP, drop_other_group_subjects
from clinex.pv.types import Argument, Combination, Event
from clinex.text import Span

__all__ = [
    "ADE_TRIGGER",
    "CLAUSE_BREAK",
    "SPLIT_BREAK",
    "THERAPEUTIC",
    "OTHER_GROUP",
    "drop_other_group_subjects",
    "drop_treating_drugs",
    "drug_spans",
    "induced_by",
    "retyped",
    "split_links",
]

#: A clause boundary between two drugs: ", whereas", ", which", "; but" ... (used by
#: :func:`clinex.pv.postprocess.drop_cross_clause_treatments`).
CLAUSE_BREAK = re.compile(r"(?:,|;|\s-)\s*(?:whereas|while|but|although|though|which|who|and\s+then)\b|;", re.I)

#: A boundary between two clauses that may each state a link: a comma or semicolon before a
#: conjunction, or a semicolon. ", and" counts only when both sides hold a drug and an
#: effect of their own (:func:`split_links`), so a list ("nausea, vomiting, and rash")
#: never splits an event.
SPLIT_BREAK = re.compile(
    r"[,;]\s*(?:whereas|while|but|although|though|and(?:\s+(?:then|subsequently|later))?)\b|;", re.I
)

#: A therapeutic outcome in an Effect or trigger: the drug helped (PHEE's
#: Potential_therapeutic_event). "reversible", "adverse / immune / allergic response",
#: "normalized ratio" (INR) and "ventricular response" describe adverse effects.
THERAPEUTIC = re.compile(
    r"\b(?:resolved|resolution|improved|improvement|remissions?|responded"
    r"|(?<!adverse )(?<!immune )(?<!allergic )(?<!ventricular )responses?"
    r"|recovered|recovery|reversed|reversal|relieved|relief|successful(?:ly)?|effective|efficacy"
    r"|(?<!well )controlled|normali[sz]ed(?! ratio)|disappeared|abated|subsided|cured"
    r"|(?<!developmental )(?<!autistic )(?<!neurological )(?<!psychomotor )regression|regressed|healed)\b",
    re.I,
)

#: Words that state a drug caused an effect: the trigger of an Adverse_event clause that
#: lost the model's trigger to another clause (PHEE train's most frequent ADE triggers:
#: induced 426, developed 277, associated 259, cause(d) 120, related 56, ...).
ADE_TRIGGER = re.compile(
    r"\b(?:induced|induces?|caused|causes?|causing|associated|related|developed|develops?"
    r"|led\s+to|leads?\s+to|resulted\s+in|results?\s+in|produced|precipitated|triggered|provoked"
    r"|occurred|experienced|complicated)\b",
    re.I,
)


def drug_spans(event: Event) -> list[tuple[int, int]]:
    """Character ranges of the event's drugs: its ``Treatment.Drug`` sub-arguments and
    combination drugs, and each Treatment without a drug inside it; sorted, unique."""
    drugs = [(a.span.start, a.span.end) for a in event.sub_arguments.get("Treatment", ()) if a.role == "Drug"]
    drugs += [(d.span.start, d.span.end) for c in event.combinations for d in c.drugs]
    for t in event.main("Treatment"):
        if not any(t.span.start <= s and e <= t.span.end for s, e in drugs):
            drugs.append((t.span.start, t.span.end))
    return sorted(set(drugs))


def retyped(event: Event, event_type: str) -> Event:
    """``event`` with ``event_type`` (the trigger span's label follows)."""
    if event.event_type == event_type:
        return event
    return event.model_copy(update={
        "event_type": event_type,
        "trigger": event.trigger.model_copy(update={"label": event_type}),
    })


def _arg(text: str, role: str, start: int, end: int, label: str | None = None) -> Argument:
    return Argument(role=role, span=Span.from_offsets(text, (start, end), label=label or role))


def _strip(text: str, start: int, end: int, chars: str = " \t\n,;:.") -> tuple[int, int]:
    while start < end and text[start] in chars:
        start += 1
    while end > start and text[end - 1] in chars:
        end -= 1
    return start, end


# ------------------------------------------------------------------ split_links


def _clauses(text: str, event: Event) -> list[tuple[int, int]]:
    """The sentence cut at the :data:`SPLIT_BREAK` matches that fall inside no span of
    ``event``: ``[(start, end), ...]`` covering the text."""
    spans = [(event.trigger.start, event.trigger.end)]
    spans += [(a.span.start, a.span.end) for a in event.arguments]
    spans += [(a.span.start, a.span.end) for vals in event.sub_arguments.values() for a in vals]
    cuts = []
    for m in SPLIT_BREAK.finditer(text):
        if not any(s < m.end() and m.start() < e for s, e in spans):
            cuts.append((m.start(), m.end()))
    parts, last = [], 0
    for s, e in cuts:
        parts.append((last, s))
        last = e
    parts.append((last, len(text)))
    return parts


def _part_of(parts: list[tuple[int, int]], start: int) -> int:
    for i, (s, e) in enumerate(parts):
        if start < e or i == len(parts) - 1:
            return i
    return len(parts) - 1


def split_links(text: str, events: Sequence[Event]) -> list[Event]:
    """One event per clause that states its own drug → effect link (module note 1).

    Parameters
    ----------
    text : str
        The sentence every span of ``events`` points into.
    events : sequence of Event
        The sentence's events.

    Returns
    -------
    list of Event
        ``events`` with each event whose arguments fall into two or more clauses, each
        with a drug and an Effect (or a therapeutic outcome word) of its own, replaced
        by one event per such clause (in text order). An argument in a clause without a
        link goes to the nearest clause that has one. An event is left whole when a
        clause without the model's trigger has no trigger word.

    Examples
    --------
    >>> t = "Warfarin caused a bleed, while clopidogrel was associated with a rash."
    >>> def arg(role, s, e, label=None):
    ...     return Argument(role=role, span=Span.from_offsets(t, (s, e), label=label or role))
    >>> ev = Event(event_type="Adverse_event", trigger=Span.from_offsets(t, (47, 57)),
    ...     arguments=(arg("Effect", 16, 23), arg("Treatment", 31, 42), arg("Effect", 63, 69)),
    ...     sub_arguments={"Treatment": (arg("Drug", 0, 8, "Treatment.Drug"), arg("Drug", 31, 42, "Treatment.Drug"))})
    >>> [(e.trigger.text, [a.span.text for a in e.arguments]) for e in split_links(t, [ev])]
    [('caused', ['Warfarin', 'a bleed']), ('associated', ['clopidogrel', 'a rash'])]
    """
    out: list[Event] = []
    for ev in events:
        out.extend(_split(text, ev))
    return out


def _split(text: str, ev: Event) -> list[Event]:
    """``ev`` cut into one event per clause that links a drug to an effect or outcome,
    or ``[ev]`` when fewer than two clauses do, a clause has no trigger word, or the
    model's trigger stands in a clause without a link."""
    parts = _clauses(text, ev)
    if len(parts) < 2:
        return [ev]
    linked = _linked_parts(text, ev, parts)
    if len(linked) < 2:
        return [ev]
    home = _part_of(parts, ev.trigger.start)
    triggers = _clause_triggers(text, ev, parts, linked, home)
    if triggers is None or home not in linked:  # the model's trigger stands in a clause without a link: keep the event
        return [ev]
    owner = functools.partial(_owner, parts, linked)
    return [_clause_event(text, ev, i, parts[i][1], triggers[i], owner, at_home=i == home) for i in linked]


def _linked_parts(text: str, ev: Event, parts: list[tuple[int, int]]) -> list[int]:
    """The indices of the clauses that hold a drug and an Effect or a therapeutic outcome."""
    drugs = drug_spans(ev)
    linked = []
    for i, (s, e) in enumerate(parts):
        has_drug = any(s <= ds < e for ds, _ in drugs)
        has_effect = any(s <= a.span.start < e for a in ev.main("Effect"))
        has_outcome = bool(THERAPEUTIC.search(text, s, e)) and not _CAUSAL_TIE.search(text, s, e)
        if has_drug and (has_effect or has_outcome):
            linked.append(i)
    return linked


def _clause_triggers(text: str, ev: Event, parts: list[tuple[int, int]], linked: list[int],
                     home: int) -> dict[int, tuple[Span, str]] | None:
    """The trigger and event type of each linked clause (the model's in its own clause,
    else the clause's therapeutic or ADE trigger word), or None when a clause has none."""
    triggers: dict[int, tuple[Span, str]] = {}
    for i in linked:
        s, e = parts[i]
        if i == home:
            triggers[i] = (ev.trigger, ev.event_type)
            continue
        therapeutic = not any(s <= a.span.start < e for a in ev.main("Effect")) or (
            THERAPEUTIC.search(text, s, e) and not _CAUSAL_TIE.search(text, s, e)
        )
        rx = THERAPEUTIC if therapeutic else ADE_TRIGGER
        m = rx.search(text, s, e) or ADE_TRIGGER.search(text, s, e)
        if m is None:
            return None
        etype = "Potential_therapeutic_event" if rx is THERAPEUTIC and m.re is THERAPEUTIC else "Adverse_event"
        triggers[i] = (Span.from_offsets(text, (m.start(), m.end()), label=etype), etype)
    return triggers


def _owner(parts: list[tuple[int, int]], linked: list[int], start: int) -> int:
    """The linked clause that gets what starts at ``start``: its own, else the nearest (the earlier on a tie)."""
    i = _part_of(parts, start)
    if i in linked:
        return i
    return min(linked, key=lambda j: (abs(j - i), j))


def _clause_event(text: str, ev: Event, i: int, end: int, trigger: tuple[Span, str],
                  owner: Callable[[int], int], *, at_home: bool) -> Event:
    """The event of linked clause ``i`` (ending at ``end``): what of ``ev`` it owns, under its trigger."""
    trig, etype = trigger
    args = _clause_arguments(text, ev, i, trig, owner)
    subs, combos = _clause_subs(ev, i, owner)
    if not any(a.role == "Treatment" for a in args):  # a clause's drug named only as a sub-argument
        args += [_arg(text, "Treatment", d.span.start, d.span.end)
                 for d in subs.get("Treatment", ()) if d.role == "Drug"]
    if not at_home and etype == "Potential_therapeutic_event" and not any(a.role == "Effect" for a in args) \
            and _OBJECT_AFTER.match(text, trig.end, end):
        args, subs = _outcome_object(text, trig, end, args, subs)
    return ev.model_copy(update={
        "event_type": etype,
        "trigger": trig,
        "arguments": tuple(sorted(args, key=lambda a: (a.span.start, a.span.end))),
        "sub_arguments": subs,
        "combinations": tuple(combos),
    })


def _clause_arguments(text: str, ev: Event, i: int, trig: Span, owner: Callable[[int], int]) -> list[Argument]:
    """The main arguments of ``ev`` that clause ``i`` owns; a Treatment that runs over the
    clause's trigger ends before it."""
    args: list[Argument] = []
    for a in ev.arguments:
        if owner(a.span.start) != i:
            continue
        if a.role == "Treatment" and a.span.start < trig.start < a.span.end and not a.span.is_discontinuous:
            # "subsequent levothyroxine therapy normalized": the clause's trigger ends its Treatment
            ts, te = _strip(text, a.span.start, trig.start)
            if te <= ts:
                continue
            a = _arg(text, "Treatment", ts, te, a.span.label)
        args.append(a)
    return args


def _clause_subs(ev: Event, i: int, owner: Callable[[int], int]
                 ) -> tuple[dict[str, tuple[Argument, ...]], list[Combination]]:
    """The sub-arguments and Combinations of ``ev`` that clause ``i`` owns; a combination
    left with one drug there becomes that drug (a ``Treatment.Drug``)."""
    subs: dict[str, tuple[Argument, ...]] = {}
    for role, vals in ev.sub_arguments.items():
        kept = tuple(a for a in vals if owner(a.span.start) == i)
        if kept:
            subs[role] = kept
    combos = []
    for c in ev.combinations:
        drugs_here = tuple(d for d in c.drugs if owner(d.span.start) == i)
        if len(drugs_here) >= 2:
            combos.append(c if drugs_here == c.drugs else c.model_copy(update={"drugs": drugs_here}))
        elif len(drugs_here) == 1 and not any(
            x.role == "Drug" and x.span.offsets() == drugs_here[0].span.offsets() for x in subs.get("Treatment", ())
        ):
            subs["Treatment"] = (*subs.get("Treatment", ()), drugs_here[0])
    return subs, combos


def _outcome_object(text: str, trig: Span, end: int, args: list[Argument],
                    subs: dict[str, tuple[Argument, ...]]
                    ) -> tuple[list[Argument], dict[str, tuple[Argument, ...]]]:
    """The outcome and its object ("... normalized his thyroid function"), to the clause end
    or the next drug, as the Effect (the Treatment.Disorders inside it dropped)."""
    es, ee = _strip(text, trig.start, min([end] + [a.span.start for a in args if a.span.start > trig.end]))
    if ee > trig.end:
        args.append(_arg(text, "Effect", es, ee))
        subs = {role: tuple(x for x in vals if not (role == "Treatment" and x.role == "Disorder"
                                                     and es <= x.span.start and x.span.end <= ee))
                for role, vals in subs.items()}
        subs = {role: vals for role, vals in subs.items() if vals}
    return args, subs


#: An object right after an outcome verb ("normalized his thyroid function"), not a
#: preposition or clause ("resolved after ...", "recovery with ...", "resolved when ...").
_OBJECT_AFTER = re.compile(
    r"\s+(?!(?:after|following|with|within|on|upon|when|once|by|in|during|at|to|from|for|and|or|but|while|as|since|until|"
    r"before|completely|fully|promptly|rapidly|gradually|slowly|quickly|spontaneously|again|was|were|is|are)\b)[\w-]",
    re.I,
)

#: A causal tie in a clause: an outcome word there is not a therapeutic effect of its drug.
_CAUSAL_TIE = re.compile(r"-induced|\binduced\b|\bcaused\b|\bdue\s+to\b|\btoxicity\b", re.I)


# ------------------------------------------------------------------ treating drugs

#: Adjectives that may stand between "for (the treatment of)" and the reaction.
_ADJ = r"(?:severe|acute|chronic|mild|moderate|refractory|persistent|resistant|recurrent|secondary|delayed|early|late|postoperative|life[- ]threatening|significant|symptomatic|further|possible|subsequent)"

#: An "X-induced" compound before an Effect (the drug X is its cause).
_INDUCED = r"[^\s,;()]+(?:\s+(?-i:[A-Z0-9])[\w.]{0,2})?[- ](?:induced|associated|related|mediated|triggered|provoked)"

#: From the end of a drug to the start of the Effect it treats or prevents: "(sustained-
#: release tablets) for (cyclosporin A-induced) ", "(3 mg intravenously) for prophylaxis of
#: (cisplatin-induced) ", "to prevent (severe) ". The words between the drug and "for" are
#: its own (dose, form, route: at most four, no past participle but the listed ones, no
#: modal, no "responsible" / "risk" / "cause"): "X was responsible for", "X should be
#: monitored for", "X treatment was referred for" state no treatment of the Effect.
_TREATS = re.compile(
    r"(?:\s+(?!(?:responsible|risk|factors?|potential|known|causes?|causing|due|reasons?|basis|candidates?"
    r"|should|must|may|might|can|could|would|will|shall|not|no)\b)(?![\w]+ed[\s,])"
    r"[\w./%()+-]+){0,4}?\s*,?\s+(?:(?:was|were|is|are|being|been)\s+)?"
    r"(?:(?:given|used|administered|prescribed|started|added|required|needed|initiated)\s+)?"
    r"(?:for|to\s+(?:treat|prevent|control|manage|reverse|relieve|counteract|correct|avoid)|against"
    r"|in\s+the\s+(?:treatment|management|prevention|control)\s+of)"
    r"\s+(?:(?:the|a|an)\s+)?(?:(?:prophylaxis|prevention|treatment|management|control|relief|reversal|correction|therapy)"
    r"\s+(?:of|for|against)\s+)?(?:(?:the|his|her|their|this|an?)\s+)?(?:" + _ADJ + r"\s+){0,2}"
    r"(?:" + _INDUCED + r"\s+)?(?:" + _ADJ + r"\s+){0,2}",
    re.I,
)

#: From the end of the Effect to the start of the drug that treated it: " was treated with ",
#: ", which was corrected with ",
#: " was successfully managed by (the addition of) ", " responded to ".
_TREATED_WITH = re.compile(
    r"\s*,?\s+(?:(?:which|that)\s+)?(?:(?:was|were|is|are|has\s+been|have\s+been|had\s+been)\s+)?"
    r"(?:(?:successfully|promptly|effectively|then|subsequently|rapidly)\s+)?"
    r"(?:treated|managed|controlled|reversed|relieved|prevented|corrected|responded|responsive|responding)\s+(?:with|by|using|to)\s+"
    r"(?:the\s+)?(?:(?:addition|administration|use|initiation|introduction)\s+of\s+)?"
    r"(?:(?:oral|intravenous|iv|topical|subcutaneous|high-dose|low-dose)\s+)?",
    re.I,
)

#: A word that :data:`_TREATS` or :data:`_TREATED_WITH` needs: a sentence without one
#: names no treating drug.
_TREAT_HINT = re.compile(
    r"\b(?:for|to|against|treat\w*|managed|controlled|reversed|relieved|prevented|corrected|respon\w+)\b", re.I
)

#: The drug of an "X-induced" compound that ends right before an Effect (or an adjective or
#: two before it).
_INDUCED_BEFORE = re.compile(
    r"(?:^|(?<=[\s(/,]))(?P<drug>[^\s,;()/]+?(?:\s+(?-i:[A-Z0-9])[\w.]{0,2})?)[- ]"
    r"(?:induced|associated|related|mediated|triggered|provoked)\s+(?:" + _ADJ + r"\s+){0,2}$",
    re.I,
)


def induced_by(text: str, effect_start: int) -> tuple[int, int] | None:
    """The character range of X in "X-induced <Effect>" (X-associated, -related, ...)
    ending right before ``effect_start``; None when the Effect has no such compound.

    A one- or two-character last word belongs to the drug's name ("cyclosporin A-induced",
    "vitamin D-related").

    Examples
    --------
    >>> t = "for cyclosporin A-induced hypertension"
    >>> s, e = induced_by(t, t.index("hypertension")); t[s:e]
    'cyclosporin A'
    """
    lo = max(0, effect_start - 120)
    m = _INDUCED_BEFORE.search(text, lo, effect_start)
    if m is None:
        return None
    s, e = m.span("drug")
    piece = text[s:e]
    if " " not in piece and len(piece) <= 2:  # "A" of "cyclosporin A-induced": take the word before
        prev = re.search(r"([^\s,;()/]+)\s+\Z", text[lo:s])
        if prev is None:
            return None
        s = lo + prev.start(1)
    if s >= e or not re.search(r"[A-Za-z]", text[s:e]) or text[s:e].lower() in _NOT_DRUGS:
        return None
    return s, e


#: Words of an "X-induced" compound that name no drug ("drug-induced", "exercise-induced").
_NOT_DRUGS = frozenset(
    "drug drugs medication medications treatment therapy chemotherapy exercise stress radiation contrast "
    "pregnancy surgery infection virus alcohol ventilator transfusion".split()
)


def _treating(text: str, drug: tuple[int, int], effects: Iterable[Argument]) -> bool:
    """True when the drug at ``drug`` is given for every one of ``effects``."""
    effects = list(effects)
    if not effects:
        return False
    for eff in effects:
        if eff.span.start >= drug[1]:
            if _TREATS.fullmatch(text, drug[1], eff.span.start) is None:
                return False
        elif eff.span.end <= drug[0]:
            if _TREATED_WITH.fullmatch(text, eff.span.end, drug[0]) is None:
                return False
        else:
            return False
    return True


def drop_treating_drugs(text: str, event: Event) -> Event:
    """Take a drug given to treat or prevent the reaction out of its Adverse_event
    (module note 2); the "X-induced" drug becomes the Treatment when none is left.

    Parameters
    ----------
    text : str
        The sentence the event's offsets point into.
    event : Event

    Returns
    -------
    Event
        ``event`` itself when it is no Adverse_event with an Effect or none of its drugs
        treats that Effect; a Potential_therapeutic_event when all of them do and no
        "X-induced" cause is named; else a copy without the treating drugs (their ``Drug``
        sub-arguments, a Treatment that holds one with the sub-arguments inside it, their
        combinations), with the compound's drug as ``Treatment`` and ``Treatment.Drug``
        (and no ``Treatment.Disorder`` on it) when the event has no Treatment left.

    Examples
    --------
    >>> t = "She received granisetron for prophylaxis of cisplatin-induced nausea."
    >>> def arg(role, s, e, label=None):
    ...     return Argument(role=role, span=Span.from_offsets(t, (s, e), label=label or role))
    >>> ev = Event(event_type="Adverse_event", trigger=Span.from_offsets(t, (54, 61)),
    ...     arguments=(arg("Treatment", 13, 24), arg("Effect", 62, 68)),
    ...     sub_arguments={"Treatment": (arg("Drug", 13, 24, "Treatment.Drug"),)})
    >>> out = drop_treating_drugs(t, ev)
    >>> [(a.role, a.span.text) for a in out.arguments], [a.span.text for a in out.sub_arguments["Treatment"]]
    ([('Treatment', 'cisplatin'), ('Effect', 'nausea')], ['cisplatin'])
    """
    effects = event.main("Effect")
    if event.event_type != "Adverse_event" or not effects or not _TREAT_HINT.search(text):
        return event
    found = _treating_drugs(text, event, effects)
    if found is None:
        return event
    treating, causes = found
    if not causes and len(treating) == len(drug_spans(event)):
        # no cause named: every drug of the event treats the "effect", which is its indication
        # ("Paroxysmal hemicrania responding to topiramate"): the drug's therapeutic event
        return retyped(event, "Potential_therapeutic_event")
    is_treating = functools.partial(_is_treating, treating=treating, causes=causes)
    dropped = [a for a in event.main("Treatment") if is_treating(a)]
    # an "Effect" that is the X of "X-induced" names the cause, not a reaction
    dropped += [a for a in effects if any(c[0] <= a.span.start and a.span.end <= c[1] for c in causes)]
    args = [a for a in event.arguments if not any(a is d for d in dropped)]
    subs = _untreated_subs(event, effects, dropped, is_treating)
    combos = _untreated_combinations(event, is_treating)
    if not any(a.role == "Treatment" for a in args):
        for s, e in sorted(set(causes)):
            subs["Treatment"] = [a for a in subs.get("Treatment", []) if not a.span.overlaps(s, e)]
            args.append(_arg(text, "Treatment", s, e))
            subs["Treatment"].append(_arg(text, "Drug", s, e, "Treatment.Drug"))
    return event.model_copy(update={
        "arguments": tuple(sorted(args, key=lambda a: (a.span.start, a.span.end))),
        "sub_arguments": {role: tuple(vals) for role, vals in subs.items() if vals},
        "combinations": tuple(combos),
    })


def _treating_drugs(text: str, event: Event, effects: Sequence[Argument]
                    ) -> tuple[list[tuple[int, int]], list[tuple[int, int]]] | None:
    """The offsets of the event's drugs that treat its Effects and of the "X-induced"
    causes named, or None when no drug treats (a cause's own drug does not)."""
    treating = [d for d in drug_spans(event) if _treating(text, d, effects)]
    if not treating:
        return None
    causes = [c for eff in effects if (c := induced_by(text, eff.span.start)) is not None]
    # a drug that is itself the X of "X-induced" is the cause, not a treatment
    treating = [d for d in treating if not any(c[0] <= d[0] and d[1] <= c[1] for c in causes)]
    if not treating:
        return None
    return treating, causes


def _is_treating(a: Argument, *, treating: Sequence[tuple[int, int]], causes: Sequence[tuple[int, int]]) -> bool:
    """``a`` lies inside a treating drug, or holds one and no cause."""
    return any(s <= a.span.start and a.span.end <= e for s, e in treating) or any(
        a.span.start <= s and e <= a.span.end and not any(a.span.start <= c[0] and c[1] <= a.span.end for c in causes)
        for s, e in treating
    )


def _untreated_combinations(event: Event, is_treating: Callable[[Argument], bool]) -> list[Combination]:
    """The event's combinations without their treating drugs; one left with fewer than two drugs goes."""
    combos = []
    for c in event.combinations:
        drugs = tuple(d for d in c.drugs if not is_treating(d))
        if len(drugs) >= 2:
            combos.append(c if drugs == c.drugs else c.model_copy(update={"drugs": drugs}))
    return combos


def _untreated_subs(event: Event, effects: Sequence[Argument], dropped: Sequence[Argument],
                    is_treating: Callable[[Argument], bool]) -> dict[str, list[Argument]]:
    """The event's sub-arguments without the treating drugs, what lay inside a dropped
    argument, and a ``Treatment.Disorder`` on an Effect (the treating drug's indication)."""

    def inside_dropped(a: Argument) -> bool:
        return any(d.span.start <= a.span.start and a.span.end <= d.span.end for d in dropped)

    # the treating drug's indication is the reaction itself: no Disorder of this event
    return {role: [a for a in vals if not (role == "Treatment" and (
                is_treating(a) or inside_dropped(a)
                or (a.role == "Disorder" and any(e.span.overlaps(a.span.start, a.span.end) for e in effects))))]
            for role, vals in event.sub_arguments.items()}
