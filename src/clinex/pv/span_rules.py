"""Span rules of the PV pipeline's clean step: what a model tags is trimmed to what PHEE annotates.

Run by :func:`clinex.pv.steps.clean` on every model's raw events, before the attribute
scope (the numbers are those of the step list in :mod:`clinex.pv.postprocess`):

* step 0, **no word, no span** (:func:`drop_wordless_spans`): an event whose trigger
  holds no letter or digit is dropped, and so is every argument, sub-argument and
  combined drug without one;
* step 0b, **no stray bracket, no orphan** (:func:`drop_malformed_spans`): unmatched
  edge brackets are trimmed, empty spans dropped, orphan sub-arguments dropped;
* **trims** (:func:`trim_spans`, :func:`trim_negation_cues`): a negation phrase at the
  edge of an Effect, a dangling word at the end of an argument, "treatment with" ...
  around a Treatment's drug;
* **one clause, one Treatment** (:func:`drop_cross_clause_treatments`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from clinex.pv.links import CLAUSE_BREAK
from clinex.pv.types import Event
from clinex.text import Span

__all__ = [
    "drop_cross_clause_treatments", "drop_malformed_spans", "drop_wordless_spans", "trim_negation_cues",
    "trim_spans", "well_formed",
]


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


def well_formed(text: str, event: Event) -> Event | None:
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
