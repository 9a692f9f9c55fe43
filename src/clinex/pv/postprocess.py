"""The rules every PHEE model's prediction goes through after the model, numbered.

A model kind produces, per sentence, its events and its own event probability
(``predict_ungated``). The pipeline's sentence steps (:mod:`clinex.pv.steps`: clean,
scope, gate, join, effect rule) then apply, for every kind alike, the rules below; the
rules themselves live in :mod:`clinex.pv.span_rules` and :mod:`clinex.pv.effect_rules`,
and :func:`finish` runs the steps on one batch:

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

from collections.abc import Sequence
from typing import Any

from clinex.pv.effect_rules import is_negated, merge_split_events, retype_therapeutic
from clinex.pv.span_rules import (
    drop_cross_clause_treatments,
    drop_malformed_spans,
    drop_wordless_spans,
    trim_negation_cues,
    trim_spans,
)
from clinex.pv.steps import StepSettings, sentence_steps
from clinex.pv.types import Event

__all__ = ["finish", "finish_model", "is_negated", "drop_cross_clause_treatments", "drop_malformed_spans", "drop_wordless_spans", "merge_split_events", "retype_therapeutic", "trim_negation_cues", "trim_spans"]


def finish(
    texts: Sequence[str],
    raw: Sequence[tuple[list[Event], float | None]],
    *,
    gate: Any = None,
    threshold: float = 0.0,
    attribute_scope: bool = True,
    no_effect_min_prob: float = 0.0,
) -> list[tuple[list[Event], float | None]]:
    """The sentence steps after the model (:func:`clinex.pv.steps.sentence_steps`) on one batch.

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
    settings = StepSettings(gate, float(threshold), bool(attribute_scope), float(no_effect_min_prob))
    return sentence_steps(texts, raw, settings)[0]


def finish_model(
    model: Any, texts: Sequence[str], raw: Sequence[tuple[list[Event], float | None]]
) -> list[tuple[list[Event], float | None]]:
    """:func:`finish` with a model's own settings (:meth:`clinex.pv.steps.StepSettings.of`).

    Parameters
    ----------
    model : clinex.pv.steps.SentenceModel
        Read: ``gate_``, ``event_threshold``, ``attribute_scope``, ``no_effect_min_prob``.
    texts, raw
        As in :func:`finish` (``raw`` from the model's ``predict_ungated``).

    Returns
    -------
    list of (list of Event, float or None)
    """
    return sentence_steps(texts, raw, StepSettings.of(model))[0]
