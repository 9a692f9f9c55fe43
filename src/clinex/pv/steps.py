"""The sentence steps of the PV pipeline, one named function each.

A record's sentences go through these steps in this order (:func:`sentence_steps`;
:mod:`clinex.pv.pipeline` runs them on every record, and :mod:`clinex.pv.postprocess`
numbers the rules they apply):

1. :func:`tag` -- **model and decode**: the model's own events and event probability
   per sentence (``predict_ungated``: its tags decoded into events);
2. :func:`clean` -- **span rules**: no word or stray bracket, trims, one event per
   drug -> effect link, no cross-clause Treatment, therapeutic retyping
   (:mod:`clinex.pv.span_rules`, :mod:`clinex.pv.links`, :mod:`clinex.pv.effect_rules`);
3. :func:`scope` -- **attribute scope** (:mod:`clinex.pv.scope`);
4. :func:`gate` -- **the sentence-level event decision** (:mod:`clinex.pv.gate`), which
   lets negated events through;
5. :func:`join` -- **one event per effect and treatment, dechallenge / rechallenge**
   (:func:`clinex.pv.effect_rules.merge_split_events`, :mod:`clinex.pv.links`,
   :mod:`clinex.pv.challenge`);
6. :func:`effect_rule` -- **no argument, no event; no effect, no adverse event**
   (:func:`clinex.pv.effect_rules.keep_event`).

The models only tag and decode (step 1); every later step is here, applied to every
model kind alike with the settings the model was trained and calibrated with
(:class:`StepSettings`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from clinex.pv.challenge import mark_challenges
from clinex.pv.effect_rules import blocks_retype, is_negated, keep_event, merge_split_events, retype
from clinex.pv.links import drop_other_group_subjects, drop_treating_drugs, split_links
from clinex.pv.span_rules import drop_cross_clause_treatments, trim_spans, well_formed
from clinex.pv.types import Event

__all__ = [
    "Decided", "SentenceModel", "SentencePredictions", "StepSettings", "clean", "effect_rule", "gate", "join", "prepare", "scope",
    "sentence_steps", "tag",
]

#: One sentence's events and its event probability (None when the model gives none).
Decided = tuple[list[Event], "float | None"]


class SentenceModel(Protocol):
    """What the pipeline reads of a PV model that tags sentences (every kind but ``llm``).

    Attributes
    ----------
    name : str
    gate_ : SentenceGate or None
        The model's sentence gate (:mod:`clinex.pv.gate`), None when it has none.
    event_threshold : float
        Below this event probability a sentence keeps no event (0: every sentence).
    attribute_scope : bool
        Whether :func:`scope` decides the attributes (False keeps the model's own).
    no_effect_min_prob : float
        See :func:`clinex.pv.effect_rules.keep_event`.
    """

    name: str
    gate_: Any
    event_threshold: float
    attribute_scope: bool
    no_effect_min_prob: float

    def predict_ungated(
        self, texts: Sequence[str], sentence_starts: Sequence[Sequence[int]] | None = None
    ) -> list[tuple[list[Event], float]]:
        """The model's own events and event probability per sentence (step 1)."""
        ...


@dataclass(frozen=True)
class StepSettings:
    """The settings of steps 3-6 that a model carries (read once per call).

    Attributes
    ----------
    gate : SentenceGate or None
        None lets the model's own event probability decide.
    threshold : float, default 0.0
        The model's ``event_threshold`` (0 keeps every sentence's events).
    attribute_scope : bool, default True
        Apply :mod:`clinex.pv.scope` (False keeps the model's own attributes).
    no_effect_min_prob : float, default 0.0
        See :func:`clinex.pv.effect_rules.keep_event`.
    """

    gate: Any = None
    threshold: float = 0.0
    attribute_scope: bool = True
    no_effect_min_prob: float = 0.0

    @classmethod
    def of(cls, model: SentenceModel) -> StepSettings:
        """The settings ``model`` was saved with (``gate_``, ``event_threshold``, ...)."""
        return cls(model.gate_, float(model.event_threshold), bool(model.attribute_scope),
                   float(model.no_effect_min_prob))

    def without_gate(self) -> StepSettings:
        """The same settings with no sentence gate and threshold 0 (every sentence kept)."""
        return StepSettings(None, 0.0, self.attribute_scope, self.no_effect_min_prob)


def prepare(settings: StepSettings) -> None:
    """Load now what the steps will need (no thread): the attribute scope pipeline
    (spaCy, medspaCy and the ConText rules, about 1 s once per process) when
    ``settings.attribute_scope``, and the drug gazetteer (about 0.4 s) when the settings
    have a sentence gate. Without it the first sentence that needs them loads them."""
    if settings.attribute_scope:
        from clinex.pv.scope_pipeline import warm_up

        warm_up()
    if settings.gate is not None:
        from clinex.pv.features import has_gazetteer_drug

        has_gazetteer_drug("aspirin")


def tag(
    model: SentenceModel, texts: Sequence[str], sentence_starts: Sequence[Sequence[int]] | None = None
) -> list[tuple[list[Event], float]]:
    """Step 1, model and decode: the model's own events and event probability per sentence.

    Parameters
    ----------
    model : SentenceModel
    texts : sequence of str
        Sentences.
    sentence_starts : sequence of sequence of int, optional
        Per text, where its sentences start (``[0]`` for a text that is one sentence:
        the pipeline has split it already); None lets the model find them where it
        needs them (a text longer than its window is cut at a sentence start).

    Returns
    -------
    list of (list of Event, float)
        Offsets into each text; the events as decoded from the model's tags.
    """
    return [(list(evs), p) for evs, p in model.predict_ungated(list(texts), sentence_starts)]


def clean(texts: Sequence[str], events: Sequence[Sequence[Event]]) -> list[list[Event]]:
    """Step 2, span rules, per sentence: steps 0, 0b and 0c of :mod:`clinex.pv.postprocess`
    and therapeutic retyping.

    An event without a word in its trigger is dropped and malformed spans go
    (:func:`clinex.pv.span_rules.well_formed`); spans are trimmed
    (:func:`~clinex.pv.span_rules.trim_spans`); an event of several drug -> effect links
    is split, a treating drug is no cause and another group's Subject goes
    (:mod:`clinex.pv.links`); a Treatment of another clause is dropped
    (:func:`~clinex.pv.span_rules.drop_cross_clause_treatments`); an Adverse_event whose
    Effect names a therapeutic outcome is retyped (:func:`clinex.pv.effect_rules.retype`).

    Parameters
    ----------
    texts : sequence of str
        The sentences (offsets of ``events`` point into them).
    events : sequence of sequence of Event
        Each sentence's events from :func:`tag`.

    Returns
    -------
    list of list of Event
    """
    out = []
    for text, evs in zip(texts, events):
        worded = [w for e in evs if (w := well_formed(text, e)) is not None]
        if not worded:
            out.append([])
            continue
        # the sentence-wide test of the retyping once per sentence, not once per event
        # (a 410 KB run-on "sentence" has hundreds of events)
        blocked = blocks_retype(text)
        linked = [drop_other_group_subjects(text, drop_treating_drugs(text, e))
                  for e in split_links(text, [trim_spans(text, e) for e in worded])]
        out.append([retype(text, drop_cross_clause_treatments(text, e), blocked) for e in linked])
    return out


def scope(texts: Sequence[str], events: list[list[Event]], settings: StepSettings) -> list[list[Event]]:
    """Step 3, attribute scope: Negated and Speculated where the cue governs the event,
    Severity from the Effect's modifiers (:func:`clinex.pv.scope.apply_attribute_scope_batch`);
    ``events`` as they are when ``settings.attribute_scope`` is False."""
    if not settings.attribute_scope:
        return events
    from clinex.pv.scope import apply_attribute_scope_batch

    return apply_attribute_scope_batch(list(texts), events)


def gate(
    texts: Sequence[str], events: Sequence[list[Event]], probs: Sequence[float | None], settings: StepSettings
) -> list[Decided]:
    """Step 4, the sentence-level event decision (:func:`clinex.pv.gate.apply_gate`).

    A sentence whose event probability (the gate's when ``settings.gate`` is set, else the
    model's own ``probs``) is below ``settings.threshold`` keeps only its negated events
    (:func:`clinex.pv.effect_rules.is_negated`: PHEE annotates an explicitly absent
    effect as an event).

    Returns
    -------
    list of (list of Event, float or None)
        The kept events and the deciding probability per sentence.
    """
    from clinex.pv.gate import apply_gate

    scoped = [(evs, p) for evs, p in zip(events, probs)]
    decided = apply_gate(settings.gate, settings.threshold, list(texts), scoped)
    return [(kept if kept else [e for e in evs if is_negated(e)], p) for (kept, p), evs in zip(decided, events)]


def join(texts: Sequence[str], events: Sequence[Sequence[Event]]) -> list[list[Event]]:
    """Step 5, per sentence: an Effect-only and a Treatment-only event become one
    (:func:`clinex.pv.effect_rules.merge_split_events`), a treating drug is again no cause
    (:func:`clinex.pv.links.drop_treating_drugs`, now on the joined event), and positive
    dechallenge / rechallenge is marked (:func:`clinex.pv.challenge.mark_challenges`)."""
    return [mark_challenges(text, [drop_treating_drugs(text, e) for e in merge_split_events(evs)])
            for text, evs in zip(texts, events)]


def effect_rule(events: Sequence[Sequence[Event]], settings: StepSettings) -> list[list[Event]]:
    """Step 6: only the events :func:`clinex.pv.effect_rules.keep_event` keeps (an argument,
    an outcome, an Effect for an Adverse_event below ``settings.no_effect_min_prob``)."""
    return [[e for e in evs if keep_event(e, settings.no_effect_min_prob)] for evs in events]


def sentence_steps(
    texts: Sequence[str],
    tagged: Sequence[tuple[Sequence[Event], float | None]],
    settings: StepSettings,
    *,
    ungated: Sequence[bool] = (),
) -> tuple[list[Decided], list[list[Event]]]:
    """Steps 2-6 on tagged sentences (the output of :func:`tag`), in order.

    Parameters
    ----------
    texts : sequence of str
        The sentences.
    tagged : sequence of (sequence of Event, float or None)
        Per sentence, the model's events and own event probability.
    settings : StepSettings
    ungated : sequence of bool, optional
        Per sentence: also give its events without the gate when the gate left it empty
        and the model tagged some (the sentences of a record of several sentences,
        whose drug-less events :mod:`clinex.pv.record` may still complete).

    Returns
    -------
    (list of (list of Event, float or None), list of list of Event)
        Per sentence: the final events and the deciding event probability; and the
        events without the gate (empty unless asked for and the gate dropped them).
    """
    texts = list(texts)
    scoped = scope(texts, clean(texts, [evs for evs, _ in tagged]), settings)
    decided = gate(texts, scoped, [p for _, p in tagged], settings)
    final = effect_rule(join(texts, [evs for evs, _ in decided]), settings)
    out = [(evs, p) for evs, (_, p) in zip(final, decided)]
    todo = [i for i, want in enumerate(ungated) if want and not final[i] and tagged[i][0]]
    without = [[] for _ in texts]
    for i, evs in zip(todo, effect_rule(join([texts[i] for i in todo], [scoped[i] for i in todo]), settings)):
        without[i] = evs
    return out, without


class SentencePredictions:
    """``predict``, ``predict_detailed``, ``predict_one`` and ``predict_records`` of every
    model that tags sentences, in one place: the model's own ``predict_ungated`` (step 1),
    then :func:`sentence_steps` with the model's :class:`StepSettings`.

    A model class provides ``predict_ungated`` and the settings of :class:`SentenceModel`;
    it never runs steps 2-6 itself. :mod:`clinex.pv.pipeline` runs the same steps on the
    sentences of whole records (and resolves drugs across them).
    """

    #: False: the pipeline splits a record into sentences and runs the steps on them
    #: (the ``llm`` kind is True: it reads each record whole and its answer is final).
    reads_whole_records = False
    #: The model's sentence gate (:mod:`clinex.pv.gate`); None until one is fitted or loaded.
    gate_: Any = None

    def predict_detailed(self, texts: Sequence[str]) -> list[Decided]:
        """Events of each sentence with the sentence's event probability.

        Parameters
        ----------
        texts : sequence of str
            Sentences (PHEE contexts); each is processed on its own.

        Returns
        -------
        list of (list of Event, float or None)
            Per text: its events (offsets into it) after every step of the module notes,
            and its deciding event probability in [0, 1] (the gate's when the model has
            one, else the model's own: :mod:`clinex.pv.gate`).

        Raises
        ------
        ModelError
            If the model is not fitted.
        """
        texts = list(texts)
        model: Any = self
        return sentence_steps(texts, tag(model, texts), StepSettings.of(model))[0]

    def predict(self, texts: Sequence[str]) -> list[list[Event]]:
        """Events of each sentence (:meth:`predict_detailed` without the probabilities).

        Parameters
        ----------
        texts : sequence of str
            Sentences (one PHEE context each; longer texts work but the models were
            trained on single sentences).

        Returns
        -------
        list of list of Event
            One list per text; character offsets into that text.

        Raises
        ------
        ModelError
            If the model is not fitted.
        """
        return [events for events, _ in self.predict_detailed(texts)]

    def predict_one(self, text: str) -> list[Event]:
        """Events of one sentence (offsets into ``text``), after every step."""
        return self.predict_detailed([text])[0][0]

    def predict_records(self, texts: Sequence[str], ids: Sequence[str] | None = None) -> list[Any]:
        """:meth:`predict`, one list per text; the same method as the ``llm`` kind's (whose
        calls can fail per record and give the error in its place; these never do).

        ``ids`` names the records in messages; unused here.
        """
        return list(self.predict(texts))
