"""Effect rules of the PV pipeline: what an event must state to be kept, and of which type.

Run by :mod:`clinex.pv.steps` (the numbers are those of the step list in
:mod:`clinex.pv.postprocess`):

* **therapeutic outcome** (:func:`retype_therapeutic`, in the clean step): an
  Adverse_event whose Effect names a therapeutic outcome becomes a
  Potential_therapeutic_event;
* step 4, **one effect, one treatment, one event** (:func:`merge_split_events`);
* step 3, **no argument, no event; no effect, no adverse event** (:func:`keep_event`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from clinex.pv.links import THERAPEUTIC
from clinex.pv.types import Event

__all__ = ["blocks_retype", "is_negated", "keep_event", "merge_split_events", "retype", "retype_therapeutic"]


def is_negated(event: Event) -> bool:
    """True when ``event`` carries a Negated attribute with a cue."""
    return any(a.name == "Negated" and a.value is True and a.cue is not None for a in event.attributes)



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
    return retype(text, event, blocks_retype(text))


def blocks_retype(text: str) -> bool:
    """True when the sentence names a withdrawal or change of a drug, or a causal tie."""
    return bool(_WITHDRAWAL.search(text) or _CAUSAL.search(text))


#: Up to three whitespace-delimited words (those of ``str.split()``), read from a position.
_NEXT_WORDS = re.compile(r"\s*(\S+)(?:\s+(\S+))?(?:\s+(\S+))?")


#: An Effect the sentence calls a complication of the treatment: "Treatment with X was
#: complicated by Y", "Y complicating X therapy". Every event of PHEE train and dev whose
#: trigger is such a word (12) is an Adverse_event.
_COMPLICATED_BY = re.compile(r"\bcomplicated\s+by\s+(?:an?\s+|the\s+)?$", re.I)
_COMPLICATING = re.compile(r"\s+complicating\b", re.I)


def _a_complication(text: str, event: Event) -> bool:
    """Whether an Effect of ``event`` is named a complication ("complicated by Y", "Y complicating")."""
    return any(_COMPLICATED_BY.search(text, max(0, e.span.start - 40), e.span.start)
               or _COMPLICATING.match(text, e.span.end) for e in event.main("Effect"))


def retype(text: str, event: Event, blocked: bool) -> Event:
    """:func:`retype_therapeutic` with its sentence-wide test given (``blocked``); and a
    Potential_therapeutic_event whose Effect the sentence names a complication ("was
    complicated by Y", "Y complicating": :func:`_a_complication`) becomes an Adverse_event (expert sentences, issue 24 QA:
    "Treatment with isotretinoin was complicated by depression" was typed therapeutic)."""
    if event.event_type == "Potential_therapeutic_event" and _a_complication(text, event):
        return event.model_copy(update={
            "event_type": "Adverse_event",
            "trigger": event.trigger.model_copy(update={"label": "Adverse_event"}),
        })
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


def keep_event(event: Event, no_effect_min_prob: float) -> bool:
    """Whether ``event`` is kept by the effect rule (step 3 of :mod:`clinex.pv.postprocess`).

    Parameters
    ----------
    event : Event
    no_effect_min_prob : float
        The model's ``no_effect_min_prob``: an Adverse_event without an Effect is kept
        only when its trigger probability reaches it (0 keeps them all).

    Returns
    -------
    bool
        False for an event with no argument at all, one whose only Effects say nothing
        happened ("uneventful"), one with no drug whose every Effect is a generic term,
        and an Effect-less Adverse_event below ``no_effect_min_prob`` or triggered by a
        word that only says a therapy was started.
    """
    return (_has_arguments(event) and _has_outcome(event, no_effect_min_prob)
            and not _only_non_effects(event) and not _generic_without_drug(event))

