"""The last steps every PHEE model's prediction goes through, in one place.

A model kind produces, per sentence, its events and its own event probability
(``predict_ungated``). :func:`finish` then applies, for every kind alike:

1. **attribute scope** (:func:`clinex.pv.scope.apply_attribute_scope_batch`):
   Negated and Speculated are kept only where the cue governs the trigger or the
   Effect, rule cues are added, Severity comes from the Effect's own modifiers;
   every attribute names its source (``model`` or ``rule:<id>``);
2. **the sentence-level event decision** (:func:`clinex.pv.gate.apply_gate`): a
   sentence below the model's ``event_threshold`` keeps no event, except events
   whose Negated attribute the scope rules confirmed: PHEE annotates an explicitly
   absent effect ("did not develop neutropenia") as an event with ``Negated``
   (Sun et al., EMNLP 2022, appendix A), which is what a drug-safety reader needs
   to see, while the ADE corpus counts such sentences as holding no ADE;
0. **no word, no span** (:func:`drop_wordless_spans`, first): an event whose trigger
   holds no letter or digit is dropped, and so is every argument, sub-argument and
   combined drug without one (a run of brackets tagged as a trigger or Treatment on
   hostile input). Of the 22,872 triggers and arguments of PHEE train and dev, none
   lacks a letter or digit; PHEE dev output is unchanged;
0b. **no stray bracket, no orphan** (:func:`drop_malformed_spans`, right after step 0):
   an unmatched bracket at the edge of a trigger, argument, sub-argument or combined
   drug is trimmed ("(rash" -> "rash"; "IL-2 (interleukin-2)" stays whole), an empty
   span is dropped, and so is a sub-argument whose event has no main argument of its
   role and which is another role's argument (a Drug "Rash" that is the Effect, with no
   Treatment); PHEE dev figures unchanged;
0c. **one event per drug -> effect link** (:mod:`clinex.pv.links`, after the span trims):
   an event whose clauses each state their own drug and effect is split into one event
   per clause (:func:`clinex.pv.links.split_links`); a drug given to treat or prevent the
   reaction is taken out of its Adverse_event and the "X-induced" drug becomes the
   cause (:func:`clinex.pv.links.drop_treating_drugs`); another group's Subject numbers
   go (:func:`clinex.pv.links.drop_other_group_subjects`). Issue 23; PHEE dev figures in
   docs/pv.md;
3. **no argument, no event**: an event with no argument, sub-argument or combination
   is dropped, and so is one whose only Effect says nothing happened ("uneventful"), and
   one with no drug whose every Effect is a generic term ("No adverse events were
   observed.": :func:`_generic_without_drug`); **no effect, no adverse event**: an Adverse_event with no Effect argument is kept
   only if its trigger probability reaches the model's ``no_effect_min_prob``. In
   PHEE nearly every ADE names its effect (5 of 2,650 Adverse_events in train and 4
   of 889 in dev have no Effect), while a model's Effect-less ADE is typically a
   sentence about starting or receiving a therapy ("was started on amiodarone
   200 mg daily"). Chosen on PHEE dev with the held-out negatives checked
   (docs/pv.md, "Sentences without an event");
4. **one effect, one treatment, one event** (:func:`merge_split_events`, before
   step 3): when a sentence's events are exactly one event with an Effect but no
   Treatment and one with a Treatment but no Effect, they are one event split over
   two triggers ("agranulocytosis developed after methimazole": *developed* with the
   Effect, *after* with the drug; "did not develop neutropenia while receiving
   clozapine"). PHEE annotates such a sentence as one event (Sun et al., EMNLP 2022,
   §3: an event's Treatment and Effect are its main arguments). The merged event
   takes the trigger, score and type of the more probable trigger, the arguments of
   both and the attributes of both (the Effect event's first, so the Negated of "did
   not develop" covers the drug too). Left split, the drug–effect link is lost and the
   drug's event reads as a plain adverse event of clozapine. On PHEE dev (ONNX model):
   Trig-C 0.6895 -> 0.6899, main EM F1 0.6325 -> 0.6337, sub 0.6940 -> 0.6958,
   Event-C 0.9266 -> 0.9255, attributes 0.5779 -> 0.5734; CRF Trig-C 0.6585 -> 0.6578,
   sub 0.6556 -> 0.6568;
5. **positive dechallenge and rechallenge** (:func:`clinex.pv.challenge.mark_challenges`,
   after step 4 so that it sees the joined event, and after the treating-drug rule of
   step 0c once more for the same reason): the event of a drug whose withdrawal or dose
   reduction made the reaction abate, or whose re-exposure brought it back, is an
   Adverse_event with a ``Dechallenge`` / ``Rechallenge`` attribute (WHO-UMC causality
   criteria; issue 23).
"""

from __future__ import annotations

import atexit
import re
import threading
from collections.abc import Sequence
from typing import Any

from clinex.pv.challenge import mark_challenges
from clinex.pv.links import CLAUSE_BREAK, THERAPEUTIC, drop_other_group_subjects, drop_treating_drugs, split_links
from clinex.pv.types import Event
from clinex.text import Span

__all__ = ["finish", "finish_model", "is_negated", "drop_cross_clause_treatments", "drop_malformed_spans", "drop_wordless_spans", "merge_split_events", "retype_therapeutic", "trim_negation_cues", "trim_spans", "warm_up"]


def is_negated(event: Event) -> bool:
    """True when ``event`` carries a Negated attribute with a cue."""
    return any(a.name == "Negated" and a.value is True and a.cue is not None for a in event.attributes)


def finish(
    texts: Sequence[str],
    raw: Sequence[tuple[list[Event], float | None]],
    *,
    gate: Any = None,
    threshold: float = 0.0,
    attribute_scope: bool = True,
    no_effect_min_prob: float = 0.0,
) -> list[tuple[list[Event], float | None]]:
    """Attribute scope, then the sentence-level decision, for one batch of sentences.

    Parameters
    ----------
    texts : sequence of str
        The sentences (offsets of ``raw``'s events point into them).
    raw : sequence of (list of Event, float or None)
        The model's ungated events and own event probability per sentence.
    gate : SentenceGate or None
        The model's sentence gate; None lets the model's own probability decide.
    threshold : float, default 0.0
        The model's ``event_threshold`` (0 keeps every sentence's events).
    attribute_scope : bool, default True
        Apply :mod:`clinex.pv.scope` (False keeps the model's own attributes).
    no_effect_min_prob : float, default 0.0
        Step 3 of the module notes; 0 keeps every Effect-less Adverse_event.

    Returns
    -------
    list of (list of Event, float or None)
        Final events and the deciding event probability per sentence.
    """
    from clinex.pv.gate import apply_gate

    texts = list(texts)
    # the sentence-wide test of retype_therapeutic once per sentence, not once per event
    # (a 410 KB run-on "sentence" has hundreds of events)
    events = []
    for text, (evs, _) in zip(texts, raw):
        worded = [w for e in evs if (w := _well_formed(text, e)) is not None]
        if not worded:
            events.append([])
            continue
        blocked = _blocks_retype(text)
        # step 0c: one event per drug -> effect link, no treating drug as a cause (pv.links)
        linked = [drop_other_group_subjects(text, drop_treating_drugs(text, e))
                  for e in split_links(text, [trim_spans(text, e) for e in worded])]
        events.append([_retype(text, drop_cross_clause_treatments(text, e), blocked) for e in linked])
    if attribute_scope:
        from clinex.pv.scope import apply_attribute_scope_batch

        events = apply_attribute_scope_batch(texts, events)
    scoped = [(evs, p) for evs, (_, p) in zip(events, raw)]
    decided = apply_gate(gate, threshold, texts, scoped)
    out = []
    for text, (kept, p), (evs, _) in zip(texts, decided, scoped):
        kept = merge_split_events(kept if kept else [e for e in evs if is_negated(e)])
        # step 5: on the joined events, no treating drug as a cause again (a drug-only event
        # joined to an Effect-only one: pv.links), then positive dechallenge / rechallenge
        # (pv.challenge)
        kept = mark_challenges(text, [drop_treating_drugs(text, e) for e in kept])
        out.append(([e for e in kept if _has_arguments(e) and _has_outcome(e, no_effect_min_prob)
                     and not _only_non_effects(e) and not _generic_without_drug(e)], p))
    return out


#: A letter or digit (any script): what every PHEE trigger and argument holds.
_WORD_CHAR = re.compile(r"[^\W_]")


def _worded(span: Span) -> bool:
    return any(_WORD_CHAR.search(f.text) for f in span.fragments)


def drop_wordless_spans(event: Event) -> Event | None:
    """None for an event whose trigger holds no letter or digit; else the event
    without its arguments, sub-arguments and combined drugs that hold none (step 0).

    A sequence tagger run on hostile text (10,000 nested brackets around a sentence)
    tags runs of brackets as triggers and Treatments. No trigger or argument of PHEE
    train and dev (22,872 spans; Sun et al., EMNLP 2022) lacks a letter or digit, so
    such a span is never an answer.

    Parameters
    ----------
    event : Event

    Returns
    -------
    Event or None
        ``event`` itself when every span holds a letter or digit.
    """
    if not _worded(event.trigger):
        return None
    args = tuple(a for a in event.arguments if _worded(a.span))
    subs = {role: tuple(a for a in vals if _worded(a.span)) for role, vals in event.sub_arguments.items()}
    combos = tuple(c for c in event.combinations if all(_worded(d.span) for d in c.drugs))
    if args == event.arguments and subs == dict(event.sub_arguments) and combos == event.combinations:
        return event
    return event.model_copy(update={
        "arguments": args,
        "sub_arguments": {role: vals for role, vals in subs.items() if vals},
        "combinations": combos,
    })


def _well_formed(text: str, event: Event) -> Event | None:
    """Steps 0 and 0b: :func:`drop_wordless_spans`, then :func:`drop_malformed_spans`."""
    worded = drop_wordless_spans(event)
    return None if worded is None else drop_malformed_spans(text, worded)


_OPENERS = {"(": ")", "[": "]", "{": "}"}
_CLOSERS = {")": "(", "]": "[", "}": "{"}


def _unmatched_brackets(text: str, pieces: Sequence[tuple[int, int]]) -> set[int]:
    """Offsets (into ``text``) of the brackets of ``pieces`` (a span's fragments, in order)
    that have no partner inside them: a closer that does not close the innermost open
    bracket, and every bracket left open at the end. One pass, linear in the span."""
    stack: list[int] = []
    unmatched: set[int] = set()
    for start, end in pieces:
        for i in range(start, end):
            c = text[i]
            if c in _OPENERS:
                stack.append(i)
            elif c in _CLOSERS:
                if stack and text[stack[-1]] == _CLOSERS[c]:
                    stack.pop()
                else:
                    unmatched.add(i)
    unmatched.update(stack)
    return unmatched


def _trim_brackets(text: str, span: Span) -> Span | None:
    """``span`` without the unmatched brackets at its fragments' edges (and the whitespace
    they leave); None when nothing is left. ``span`` itself when nothing changed."""
    pieces = [(s, e) for s, e in span.offsets() if e > s]
    if not pieces:
        return None
    if len(pieces) == len(span.fragments) and not any(
        text[s] in _OPENERS or text[s] in _CLOSERS or text[e - 1] in _OPENERS or text[e - 1] in _CLOSERS
        for s, e in pieces
    ):
        return span
    unmatched = _unmatched_brackets(text, pieces)
    trimmed = []
    for start, end in pieces:
        # removing an unmatched bracket at an edge changes no other bracket's partner
        # (it was never the innermost open one when a closer came), so one pass suffices
        while start < end and start in unmatched:
            start += 1
            while start < end and text[start].isspace():
                start += 1
        while end > start and (end - 1) in unmatched:
            end -= 1
            while end > start and text[end - 1].isspace():
                end -= 1
        if end > start:
            trimmed.append((start, end))
    if trimmed == span.offsets():
        return span
    if not trimmed:
        return None
    return Span.from_offsets(text, trimmed, label=span.label, score=span.score, source=span.source)


def drop_malformed_spans(text: str, event: Event) -> Event | None:
    """Trim unmatched edge brackets from every span of ``event``, then drop what is left
    malformed (step 0b, after :func:`drop_wordless_spans`).

    1. **Unmatched brackets.** A bracket at the edge of a trigger, argument,
       sub-argument or combined drug whose partner is not inside the same span is
       taken out, with the whitespace it leaves: "(rash" -> "rash", "amoxicillin)" ->
       "amoxicillin", "(((((Rash" -> "Rash"; a balanced span stays whole ("IL-2
       (interleukin-2)", "(rash)"). Brackets pair as ``()``, ``[]``, ``{}``, across the
       fragments of a discontinuous span. Of the 23,400 trigger, argument and
       sub-argument fragments of PHEE train and dev (Sun et al., EMNLP 2022), 349 start
       or end with a bracket, all but one with its partner inside ("(200 mg", a Dosage);
       a model's "(rash" is an exact-match miss.
    2. **Empty spans.** An argument, sub-argument or combined drug with no character
       left is dropped, and so is the event whose trigger has none.
    3. **Orphan sub-arguments.** A sub-argument whose event has no main argument of its
       role and whose span is exactly a main argument of another role (a
       ``Treatment.Drug`` "Rash" that is the event's Effect, in an event with no
       Treatment) is dropped: each of the 9,191 sub-arguments of PHEE train and dev has
       a main argument of its role. Other sub-arguments are kept where they are. PHEE
       puts many outside their main argument's characters (1,607 of 9,191; a
       Treatment's indication, "Disorder", in 1,256 of 1,354), so lying outside is no
       fault; and a sub-argument the model found while missing its main argument is
       mostly right: dropping every sub-argument without its main argument cost PHEE
       dev sub EM F1 0.8754 -> 0.8701 (shipped ONNX model), this rule nothing.

    On hostile input (about 1,700 nested ``([{`` around "Rash developed after
    amoxicillin.") the model gave an event with the Effect "Rash", no Treatment and a
    Drug "Rash" (written as a Treatment with empty text); step 3 drops that Drug.

    Parameters
    ----------
    text : str
        The sentence the event's offsets point into.
    event : Event

    Returns
    -------
    Event or None
        None when the trigger is left empty; ``event`` itself when nothing changed,
        else a copy with the trimmed spans and without the malformed ones. Every kept
        span still slices ``text`` exactly (``text[f.start:f.end] == f.text``).
    """
    trigger = _trim_brackets(text, event.trigger)
    if trigger is None:
        return None

    def arg(a: Any) -> Any:
        span = _trim_brackets(text, a.span)
        if span is None:
            return None
        return a if span is a.span else a.model_copy(update={"span": span})

    args = tuple(x for a in event.arguments if (x := arg(a)) is not None)
    mains = {a.role for a in args}

    def orphan(role: str, sub: Any) -> bool:  # no main argument of its role, and another role's span
        return role not in mains and any(a.role != role and a.span.offsets() == sub.span.offsets() for a in args)

    subs = {role: tuple(x for a in vals if (x := arg(a)) is not None and not orphan(role, x))
            for role, vals in event.sub_arguments.items()}
    combos = []
    for c in event.combinations:
        drugs = tuple(x for d in c.drugs if (x := arg(d)) is not None)
        ctrig = None if c.trigger is None else _trim_brackets(text, c.trigger)
        if drugs:
            same = drugs == c.drugs and ctrig is c.trigger
            combos.append(c if same else c.model_copy(update={"drugs": drugs, "trigger": ctrig}))
    if (trigger is event.trigger and args == event.arguments and subs == dict(event.sub_arguments)
            and tuple(combos) == event.combinations):
        return event
    return event.model_copy(update={
        "trigger": trigger,
        "arguments": args,
        "sub_arguments": {role: vals for role, vals in subs.items() if vals},
        "combinations": tuple(combos),
    })


def merge_split_events(events: Sequence[Event]) -> list[Event]:
    """Join one Effect-only event and one Treatment-only event of a sentence (step 4).

    Parameters
    ----------
    events : sequence of Event
        One sentence's events (offsets into that sentence).

    Returns
    -------
    list of Event
        ``events`` unchanged unless the sentence holds exactly one event with an
        Effect and no Treatment and exactly one with a Treatment and no Effect (and no
        other event), and the Treatment event is not the only negated one; then one
        event: trigger, score and type of the higher trigger probability, the Effect
        event's attributes with the other's added where the name is new, the main
        arguments of both (the other's Subject dropped when it overlaps one already
        there), sub-arguments and combinations of both.
    """
    events = list(events)
    effect_only = [e for e in events if e.main("Effect") and not e.main("Treatment")]
    treatment_only = [e for e in events if e.main("Treatment") and not e.main("Effect")]
    if len(events) != 2 or len(effect_only) != 1 or len(treatment_only) != 1:
        return events
    a, b = effect_only[0], treatment_only[0]
    if is_negated(b) and not is_negated(a):  # the drug's event is the negated one: keep both apart
        return events
    args = list(a.arguments)
    for arg in b.arguments:
        if arg.role == "Subject" and any(
            x.role == "Subject" and x.span.overlaps(arg.span.start, arg.span.end) for x in args
        ):
            continue
        args.append(arg)
    subs = {role: tuple(vals) for role, vals in a.sub_arguments.items()}
    for role, vals in b.sub_arguments.items():
        if role == "Subject" and subs.get("Subject"):
            continue
        subs[role] = (*subs.get(role, ()), *vals)
    names = {x.name for x in a.attributes}
    best = a if (a.score or 0.0) >= (b.score or 0.0) else b
    merged = best.model_copy(update={
        "event_type": best.event_type,
        "arguments": tuple(sorted(args, key=lambda x: (x.span.start, x.span.end))),
        "sub_arguments": subs,
        "combinations": (*a.combinations, *b.combinations),
        "attributes": (*a.attributes, *(x for x in b.attributes if x.name not in names)),
    })
    return [merged]


#: A negation that opens an Effect span: "(She) did not develop (any rash)".
_LEADING_NEGATION = re.compile(
    r"(?:(?:she|he|they|the\s+patients?|patients?)\s+)?(?:(?:did|does|do|had|has|have)\s+)?(?:not|never)\s+"
    r"(?:develop(?:ed)?|experienced?|exhibit(?:ed)?|show(?:ed)?|ha[dv]e?|suffer(?:ed)?(?:\s+from)?"
    r"|present(?:ed)?\s+with)\s+",
    re.I,
)
#: A negation that closes an Effect span: "(Myopathy) was ruled out".
_TRAILING_NEGATION = re.compile(
    r"\s+(?:was|were|has\s+been|have\s+been|had\s+been)\s+"
    r"(?:ruled\s+out|excluded|absent|not\s+(?:observed|seen|found|detected|present))\s*$",
    re.I,
)


def trim_negation_cues(text: str, event: Event) -> Event:
    """Take a negation that opens or closes an Effect span out of it (step 0).

    PHEE annotates an absent effect as an event with the Negated attribute whose cue
    lies outside the Effect span: of the 45 Effect arguments of Negated events in
    train and dev, 43 hold no negation word (Sun et al., EMNLP 2022, appendix A).
    A model that tags "did not develop neutropenia" or "Myopathy was ruled out" as the
    Effect hides the cue inside the span, and the attribute scope rules (step 1) then
    see no cue before or after it; trimmed, the Effect is "neutropenia" / "Myopathy"
    and the rules give the event its Negated attribute. Only these verb phrases at
    the span's edges are trimmed (:data:`_LEADING_NEGATION`,
    :data:`_TRAILING_NEGATION`); "X without Y" inside an Effect is left alone (in PHEE
    it names part of the effect: "NMS without rigidity"). Own rule, stop 19 (QA
    sentences that the train + dev model gave such spans).

    Parameters
    ----------
    text : str
        The sentence the event's offsets point into.
    event : Event

    Returns
    -------
    Event
        ``event`` itself when no Effect starts or ends with such a phrase (or the phrase
        is all of it), else a copy with those Effect spans trimmed.
    """
    changed = False
    args = []
    for arg in event.arguments:
        frags = arg.span.fragments
        if arg.role == "Effect" and len(frags) == 1:
            start, end = frags[0].start, frags[0].end
            piece = text[start:end]
            lead = _LEADING_NEGATION.match(piece)
            new_start = start + lead.end() if lead else start
            trail = _TRAILING_NEGATION.search(text, new_start, end)
            new_end = trail.start() if trail and trail.end() == end else end
            if (new_start, new_end) != (start, end) and new_end > new_start:
                arg = arg.model_copy(update={"span": Span.from_offsets(text, (new_start, new_end), label=arg.span.label)})
                changed = True
        args.append(arg)
    return event.model_copy(update={"arguments": tuple(args)}) if changed else event


#: A word or mark that cannot end an argument: "hyperkalemia on", "a hemoglobin nadir of".
_DANGLING = re.compile(
    r"(?:\s+(?:on|with|after|of|in|by|to|from|during|and|or|the|a|an|for|at|while|following)|\s*[,;:(\[-])+\s*$", re.I
)


#: "treatment with", "use of" ... before the drug: outside the Treatment span in PHEE train
#: (treatment 90 outside / 15 inside, use 53 / 4, administration 38 / 13, therapy 13 / 3,
#: initiation 8 / 4, course 5 / 0, dose(s) 9 / 0).
_TREATMENT_LEAD = re.compile(
    r"(?:the\s+)?(?:treatment|therapy|use|administration|initiation|course|doses?)\s+(?:with|of)\s+", re.I
)


#: "... treatment", "... administration", "... use" after the drug: outside the Treatment
#: span in most PHEE train events (53 / 46, 28 / 24, 18 / 5); not "therapy" (117 / 147).
_TREATMENT_TAIL = re.compile(r"\s+(?:treatment|administration|use)$", re.I)


def trim_spans(text: str, event: Event) -> Event:
    """:func:`trim_negation_cues`, then drop a dangling word at the end of every argument
    and a "treatment with" / "use of" ... before a Treatment's drug
    (:data:`_TREATMENT_LEAD`) and "treatment" / "administration" / "use" after it
    (:data:`_TREATMENT_TAIL`).

    A main argument or sub-argument whose (single-fragment) span ends in a preposition,
    conjunction, article or an opening mark (:data:`_DANGLING`) loses it: such an ending
    is 0.2 % of PHEE train + dev main arguments (17 of 9,713) but was 1.9 % of the
    train-only model's dev main arguments (49 of 2,537), each an exact-match miss
    ("hyperkalemia on"). On dev (train-only v1) main EM F1 0.6338 -> 0.6374, sub 0.6985
    -> 0.7013; the Treatment lead and tail words (PHEE train's majority) then 0.6374 ->
    0.6421.

    Parameters
    ----------
    text : str
        The sentence the event's offsets point into.
    event : Event

    Returns
    -------
    Event
        ``event`` itself when nothing changed, else a trimmed copy.
    """
    event = trim_negation_cues(text, event)

    def trim(arg: Any) -> Any:
        frags = arg.span.fragments
        if len(frags) != 1:
            return arg
        start, end = frags[0].start, frags[0].end
        m = _DANGLING.search(text, start, end)
        if m is None or m.start() <= start or m.end() != end:
            return arg
        return arg.model_copy(update={"span": Span.from_offsets(text, (start, m.start()), label=arg.span.label)})

    def lead(arg: Any) -> Any:
        frags = arg.span.fragments
        if arg.role != "Treatment" or len(frags) != 1:
            return arg
        start, end = frags[0].start, frags[0].end
        m = _TREATMENT_LEAD.match(text, start, end)
        if m is not None and m.end() < end:
            start = m.end()
        t = _TREATMENT_TAIL.search(text, start, end)
        if t is not None and t.end() == end and t.start() > start:
            end = t.start()
        if (start, end) == (frags[0].start, frags[0].end):
            return arg
        return arg.model_copy(update={"span": Span.from_offsets(text, (start, end), label=arg.span.label)})

    args = tuple(lead(trim(a)) for a in event.arguments)
    subs = {role: tuple(trim(a) for a in vals) for role, vals in event.sub_arguments.items()}
    if args == event.arguments and subs == dict(event.sub_arguments):
        return event
    return event.model_copy(update={"arguments": args, "sub_arguments": subs})


#: A clause boundary between two drugs: ", whereas", ", which", "; but" ... (shared with
#: :mod:`clinex.pv.links`, where it is defined).
_CLAUSE_BREAK = CLAUSE_BREAK


def drop_cross_clause_treatments(text: str, event: Event) -> Event:
    """Keep, of an event's Treatment spans, only those in the trigger's clause.

    The joint model assigns every Treatment span of a sentence to its one trigger when it
    misses the trigger of a second clause: "Warfarin was associated with major GI
    bleeding, whereas no bleeding occurred on apixaban" gave one ADE of warfarin *and*
    apixaban, a false signal for the drug the sentence clears (QA round 2, stop 19);
    "Lithium induced nephrogenic diabetes insipidus, which responded to amiloride" made
    the antidote a cause. A Treatment separated from the Treatment nearest the trigger
    by a clause boundary (:data:`_CLAUSE_BREAK`: a comma or semicolon before *whereas*,
    *while*, *but*, *although*, *which* ...) is dropped with the sub-arguments inside it.
    Own rule; in PHEE an event's Treatment is one drug or regimen of its own clause
    (Sun et al., EMNLP 2022, §3). The second clause's event is not made up: it is
    missed, as the model missed it.

    Parameters
    ----------
    text : str
        The sentence the event's offsets point into.
    event : Event

    Returns
    -------
    Event
        ``event`` itself, or a copy without the other clauses' Treatment spans.
    """
    treatments = [a for a in event.arguments if a.role == "Treatment"]
    if len(treatments) < 2:
        return event
    trig = event.trigger
    keep = min(treatments, key=lambda a: max(0, a.span.start - trig.end, trig.start - a.span.end))
    anchor_lo, anchor_hi = min(keep.span.start, trig.start), max(keep.span.end, trig.end)
    dropped = []
    for a in treatments:
        if a is keep:
            continue
        if a.span.start >= anchor_hi:
            lo, hi = anchor_hi, a.span.start
        elif a.span.end <= anchor_lo:
            lo, hi = a.span.end, anchor_lo
        else:  # overlaps the trigger's own stretch
            continue
        if _CLAUSE_BREAK.search(text, lo, hi):
            dropped.append(a)
    if not dropped:
        return event

    def inside(span: Any) -> bool:
        return any(d.span.start <= span.start and span.end <= d.span.end for d in dropped)

    subs = {role: tuple(x for x in vals if not (role == "Treatment" and inside(x.span)))
            for role, vals in event.sub_arguments.items()}
    return event.model_copy(update={
        "arguments": tuple(a for a in event.arguments if not any(a is d for d in dropped)),
        "sub_arguments": {role: vals for role, vals in subs.items() if vals},
        "combinations": tuple(c for c in event.combinations if not all(inside(d.span) for d in c.drugs)),
    })


#: A therapeutic outcome in an Effect or trigger (defined in :mod:`clinex.pv.links`, which
#: shares it with the clause splitting).
_THERAPEUTIC = THERAPEUTIC
#: Withdrawal or change of a drug: an outcome after it is a dechallenge of an adverse
#: effect ("the rash resolved after stopping X"), not a therapeutic effect.
_WITHDRAWAL = re.compile(
    r"\b(?:discontinu\w*|withdr[ae]w\w*|stopp\w*|stop|cessation|ceased|taper\w*|switch\w*|conver\w*"
    r"|dechallenge|interrupt\w*|reduc\w*|lower\w*|held|halted)\b",
    re.I,
)
#: Words that tie the effect to the drug as its cause.
_CAUSAL = re.compile(r"-induced|\binduced\s+by\b|\bcaused\s+by\b|\bdue\s+to\b|\btoxicity\b", re.I)


def retype_therapeutic(text: str, event: Event) -> Event:
    """An Adverse_event whose Effect or trigger names a therapeutic outcome becomes a
    Potential_therapeutic_event.

    "The rash resolved after treatment with topical clobetasol", "imatinib achieved a
    durable molecular response", "propranolol led to rapid regression of the hemangioma"
    (and, for an event without an Effect, the three words after the trigger: "Rituximab
    induced complete remission"): the drug helped, which PHEE annotates as a potential
    therapeutic event (Sun et al., EMNLP 2022, §3). Applied only when the sentence names
    no withdrawal or change of a drug (:data:`_WITHDRAWAL`: an outcome after stopping a
    drug is the dechallenge of its adverse effect) and no causal tie of an effect to a
    drug (:data:`_CAUSAL`: "X-induced", "due to", "toxicity"), where the sentence holds
    an adverse effect too. Own rule (stop 19 QA: a drug-safety tester's sentences);
    on PHEE dev see docs/pv.md.

    Parameters
    ----------
    text : str
        The sentence the event's offsets point into.
    event : Event

    Returns
    -------
    Event
        ``event`` itself, or a copy with ``event_type="Potential_therapeutic_event"``.
    """
    if event.event_type != "Adverse_event":
        return event
    return _retype(text, event, _blocks_retype(text))


def _blocks_retype(text: str) -> bool:
    """True when the sentence names a withdrawal or change of a drug, or a causal tie."""
    return bool(_WITHDRAWAL.search(text) or _CAUSAL.search(text))


#: Up to three whitespace-delimited words (those of ``str.split()``), read from a position.
_NEXT_WORDS = re.compile(r"\s*(\S+)(?:\s+(\S+))?(?:\s+(\S+))?")


def _retype(text: str, event: Event, blocked: bool) -> Event:
    """:func:`retype_therapeutic` with its sentence-wide test given (``blocked``)."""
    if event.event_type != "Adverse_event" or blocked:
        return event
    words = [a.span.text for a in event.main("Effect")] + [event.trigger.text]
    if not event.main("Effect"):  # "Rituximab induced complete remission of ...": the words after the trigger
        # the three words after the trigger, read without copying the rest of the sentence
        nxt = _NEXT_WORDS.match(text, event.trigger.end)
        words.append(" ".join(w for w in nxt.groups() if w) if nxt else "")
    if not any(_THERAPEUTIC.search(w) for w in words):
        return event
    return event.model_copy(update={
        "event_type": "Potential_therapeutic_event",
        "trigger": event.trigger.model_copy(update={"label": "Potential_therapeutic_event"}),
    })


#: Words that say nothing happened; as an event's only Effect they are no effect at all
#: ("Rechallenge with clozapine was uneventful": QA stop 18). Own choice; PHEE never
#: annotates them as an Effect (0 in train and dev). "The postoperative course was
#: uneventful" (the course named before it) is the same statement (stop 19).
_NON_EFFECTS = re.compile(
    r"(?:(?:the\s+)?(?:(?:postoperative|post-operative|hospital|clinical|subsequent)\s+)?(?:course|recovery|stay)\s+)?"
    r"(?:was |were )?(?:uneventful|unremarkable|well[- ]tolerated|tolerated well)",
    re.I,
)


def _only_non_effects(event: Event) -> bool:
    effects = event.main("Effect")
    return bool(effects) and all(_NON_EFFECTS.fullmatch(a.span.text.strip()) for a in effects)


#: An Effect that names no particular reaction: "adverse events", "side effects", "toxicity",
#: "complications", and the model's truncation "adverse" ("No adverse events were observed").
_GENERIC_EFFECT = re.compile(
    r"(?:(?:no|any|serious|severe|significant|major|other|further|unexpected|new|notable|clinically\s+significant"
    r"|(?:drug|treatment|therapy)[- ]related)\s+)*(?:(?:adverse|side|untoward|toxic|unwanted|undesirable)\s*)?"
    r"(?:(?:drug\s+)?(?:events?|effects?|reactions?|experiences?)|toxicit(?:y|ies)|complications?|AEs?|ADRs?|adverse)",
    re.I,
)


def _generic_without_drug(event: Event) -> bool:
    """True for an event with no drug at all (no Treatment, Treatment sub-argument or
    combination) whose every Effect is a generic term (:data:`_GENERIC_EFFECT`): "No
    adverse events were observed." names neither a drug nor a reaction, so it is no
    event (issue 23). Of PHEE train + dev's events with only generic Effects (37), none
    lacks a drug (Sun et al., EMNLP 2022)."""
    if event.main("Treatment") or event.sub_arguments.get("Treatment") or event.combinations:
        return False
    effects = event.main("Effect")
    return bool(effects) and all(_GENERIC_EFFECT.fullmatch(a.span.text.strip()) for a in effects)


def _has_arguments(event: Event) -> bool:
    """False for an event with no argument, sub-argument or combination at all (a trigger
    alone says nothing a reader can check; every PHEE event has an argument)."""
    return bool(event.arguments or any(event.sub_arguments.values()) or event.combinations)


#: Triggers that start a therapy: an Adverse_event with one of them and no Effect is a
#: sentence about giving a drug ("He was started on atorvastatin 20 mg daily"; QA stop 19).
_THERAPY_START = re.compile(
    r"(?:started|starting|initiated|initiation|begun|began|commenced|prescribed|given|administered|received|receiving)",
    re.I,
)


def _has_outcome(event: Event, min_prob: float) -> bool:
    """False for an Adverse_event without an Effect whose trigger probability is below
    ``min_prob``, or whose trigger only says a therapy was started or given."""
    if event.event_type != "Adverse_event" or event.main("Effect") or min_prob <= 0.0:
        return True
    if _THERAPY_START.fullmatch(event.trigger.text.strip()):
        return False
    return event.score is not None and event.score >= min_prob


def finish_model(
    model: Any, texts: Sequence[str], raw: Sequence[tuple[list[Event], float | None]]
) -> list[tuple[list[Event], float | None]]:
    """:func:`finish` with a model's own settings: the one call both model kinds make.

    Parameters
    ----------
    model : CRFModel or TransformerExtractor
        Read: ``gate_`` (None when absent), ``event_threshold``, ``attribute_scope``,
        ``no_effect_min_prob``.
    texts, raw
        As in :func:`finish` (``raw`` from the model's ``predict_ungated``).

    Returns
    -------
    list of (list of Event, float or None)
    """
    return finish(
        texts,
        raw,
        gate=getattr(model, "gate_", None),
        threshold=float(model.event_threshold),
        attribute_scope=bool(model.attribute_scope),
        no_effect_min_prob=float(model.no_effect_min_prob),
    )


_WARMED: set[tuple[bool, bool]] = set()
_WARM_LOCK = threading.Lock()


def warm_up(model: Any) -> threading.Thread | None:
    """Start loading, in a background thread, what :func:`finish_model` needs for ``model``.

    The first :func:`finish` call of a process builds the attribute scope pipeline
    (spaCy, medspaCy and the ConText rules: about 1 s) and, for a model with a sentence
    gate, reads the drug gazetteer (about 0.4 s). Started when a model is loaded, this
    work overlaps the model's first batch: onnxruntime and the CRF's tagger release
    the GIL while they compute. A caller that needs the pipeline before the thread is
    done waits for it (the builds hold locks); nothing is built twice.

    Parameters
    ----------
    model : any PV model
        Read: ``attribute_scope`` and ``gate_`` (as :func:`finish_model` reads them).

    Returns
    -------
    threading.Thread or None
        The started daemon thread (joined at interpreter exit, so that no import is
        cut off mid-way), or None when there was nothing left to load.
    """
    need = (bool(getattr(model, "attribute_scope", False)), getattr(model, "gate_", None) is not None)
    with _WARM_LOCK:
        if not any(need) or need in _WARMED:
            return None
        _WARMED.add(need)

    def work() -> None:
        try:
            if need[0]:
                from clinex.pv.scope import warm_up as warm_scope

                warm_scope()
            if need[1]:
                from clinex.pv.features import has_gazetteer_drug

                has_gazetteer_drug("aspirin")
        except Exception:  # noqa: BLE001, S110 - the first finish() meets the same error and reports it
            pass

    thread = threading.Thread(target=work, name="clinex-pv-warm-up", daemon=True)
    thread.start()
    atexit.register(thread.join)
    return thread
