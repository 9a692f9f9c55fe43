"""Result types of the pharmacovigilance task.

The structure follows the PHEE annotation scheme (Sun et al., EMNLP 2022,
appendix A): an event has a type (``Adverse_event`` = ADE, ``Potential_therapeutic_event``
= PTE), a trigger, main arguments (Subject, Treatment, Effect), each main argument
holds its sub-arguments (Subject.Age, Treatment.Drug, ...), a Treatment may hold
Combination sub-events listing their drugs, and the event carries attributes
(Speculated, Negated, Severity) with the cue that signals them.

All offsets are characters into the sentence text, half-open (into the record's text for a
record of several sentences, :mod:`clinex.pv.pipeline`).

A record's case-level drug -> reaction pairs (:class:`Pair`) are derived from its events by
:func:`clinex.pv.pairs.record_pairs`.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from clinex.text import Span

__all__ = ["Argument", "Attribute", "Combination", "Event", "Pair", "SentenceEvents"]

_FROZEN = ConfigDict(frozen=True, extra="forbid")


class Argument(BaseModel):
    """A main argument or sub-argument.

    Attributes
    ----------
    role : str
        ``Subject`` / ``Treatment`` / ``Effect`` for main arguments; for sub-arguments
        the PHEE key (``Age``, ``Gender``, ``Population``, ``Race``, ``Disorder``,
        ``Drug``, ``Dosage``, ``Freq``, ``Route``, ``Time_elapsed``, ``Duration``).
    span : Span
        The argument's text, possibly discontinuous.
    entity_id : str or None
        The annotation id it came from (brat ``T12``), when read from a corpus.
    source : str or None
        Provenance of an argument that no model tagged in the event's own sentence:
        ``"rule:<rule id>"`` of :mod:`clinex.pv.record` for a drug taken from another
        sentence of the record (``"rule:record.drug.missing"``: the event named no drug;
        ``"rule:record.drug.anaphor"``: it referred back, "the drug", "this agent").
        ``None`` for the model's own arguments and for gold annotations.
    from_sentence : int or None
        For an argument resolved across sentences: the 0-based index, among the record's
        sentences (:func:`clinex.pv.pipeline.sentence_pieces`; 0 is an abstract's title),
        of the sentence where it is named; its ``span`` points there (offsets into the
        record's text). ``None`` otherwise.
    """

    model_config = _FROZEN

    role: str
    span: Span
    entity_id: str | None = None
    source: str | None = None
    from_sentence: int | None = Field(default=None, ge=0)


class Combination(BaseModel):
    """A Combination sub-event of a Treatment: drugs given together.

    Attributes
    ----------
    trigger : Span or None
        The word that signals the combination (``"and"``, ``"combined"``).
    drugs : tuple of Argument
        The combined drugs (role ``Drug``).
    event_id : str or None
        Annotation id (brat ``E2``) when read from a corpus.
    """

    model_config = _FROZEN

    trigger: Span | None = None
    drugs: tuple[Argument, ...] = ()
    event_id: str | None = None
    trigger_id: str | None = None


class Attribute(BaseModel):
    """An event attribute with its cue.

    Attributes
    ----------
    name : {"Speculated", "Negated", "Severity"}
        Attribute name as in PHEE.
    value : bool or str
        ``True`` for Speculated/Negated; ``"High"``, ``"Medium"`` or ``"Low"`` for
        Severity (see :data:`clinex.pv.schema.ATTRIBUTE_VALUES`).
    cue : Span or None
        The cue text (``"may"``, ``"not"``, ``"severe"``).
    entity_id : str or None
        Annotation id of the cue.
    source : str or None
        What decided the attribute (provenance): ``"model"`` for the model's learned
        attribute layer, ``"rule:<rule id>"`` for a cue rule whose scope governs the
        trigger or the Effect (:mod:`clinex.pv.scope`), ``None`` for gold annotations.
    """

    model_config = _FROZEN

    name: str
    value: bool | str
    cue: Span | None = None
    entity_id: str | None = None
    source: str | None = None


class Event(BaseModel):
    """One ADE or PTE event.

    Attributes
    ----------
    event_type : {"Adverse_event", "Potential_therapeutic_event"}
    trigger : Span
        The trigger word(s).
    arguments : tuple of Argument
        Main arguments (``Subject``, ``Treatment``, ``Effect``); a role may repeat.
    sub_arguments : dict[str, tuple of Argument]
        Keyed by main role (``"Subject"``, ``"Treatment"``); each holds the
        sub-arguments annotated under it.
    combinations : tuple of Combination
        Combination sub-events of the Treatment.
    attributes : tuple of Attribute
    event_id, trigger_id : str or None
        Annotation ids when read from a corpus.
    score : float or None
        Model confidence of the trigger in [0, 1].
    source : str or None
        Model name and version, or ``"gold"``.
    """

    model_config = _FROZEN

    event_type: str
    trigger: Span
    arguments: tuple[Argument, ...] = ()
    sub_arguments: dict[str, tuple[Argument, ...]] = Field(default_factory=dict)
    combinations: tuple[Combination, ...] = ()
    attributes: tuple[Attribute, ...] = ()
    event_id: str | None = None
    trigger_id: str | None = None
    score: float | None = None
    source: str | None = None

    def main(self, role: str) -> tuple[Argument, ...]:
        """Main arguments with ``role`` (may be empty)."""
        return tuple(a for a in self.arguments if a.role == role)

    def attribute(self, name: str) -> Attribute | None:
        """The attribute called ``name``, or None."""
        return next((a for a in self.attributes if a.name == name), None)


class Pair(BaseModel):
    """One case-level drug -> reaction pair of a record (:func:`clinex.pv.pairs.record_pairs`).

    Pairs are unique per record by ``(drug, reaction, event_type)``; the flags and the
    evidence gather every event that states the pair.

    Attributes
    ----------
    drug : str
        The drug, normalised (:func:`clinex.pv.record.drug_key`): the drug gazetteer's
        canonical name (:mod:`clinex.pv.gazetteer`) in lower case when it knows the name
        ("Tylenol" -> ``"acetaminophen"``), an abbreviation the record defines as its drug
        ("carbamazepine (CBZ)"), else the text case-folded with its whitespace collapsed.
    drug_text : str
        The drug as first written in the record.
    reaction : str
        The Effect, case-folded, whitespace collapsed, a leading article and trailing
        ``.,;:`` dropped (:func:`clinex.pv.pairs.reaction_key`).
    reaction_text : str
        The Effect as first written.
    event_type : {"Adverse_event", "Potential_therapeutic_event"}
    negated : bool
        Every event that states the pair is negated ("No agranulocytosis occurred").
    speculated : bool
        Every asserted event that states it is speculated (when all are negated: every one).
    dechallenge, rechallenge : bool
        Some event that states it has the ``Dechallenge`` / ``Rechallenge`` attribute
        (:mod:`clinex.pv.challenge`).
    across_sentences : bool
        Every event that states it took its drug from another sentence of the record
        (:mod:`clinex.pv.record`): the pair is stated across sentences only.
    evidence : tuple of (int, int)
        The ``[start, end)`` offsets, into the record's text, of the sentences holding the
        events that state the pair (their triggers), in text order.
    """

    model_config = _FROZEN

    drug: str
    drug_text: str
    reaction: str
    reaction_text: str
    event_type: str
    negated: bool = False
    speculated: bool = False
    dechallenge: bool = False
    rechallenge: bool = False
    across_sentences: bool = False
    evidence: tuple[tuple[int, int], ...] = ()


class SentenceEvents(BaseModel):
    """A sentence with its events: the unit of PHEE files and of the scorer.

    Attributes
    ----------
    id : str
        Sentence id (PHEE: ``PMID_n``).
    text : str
        The sentence (PHEE ``context``).
    events : tuple of Event
    model : str or None
        Versioned id of the model that made the events (predictions only).
    event_probability : float or None
        The model's probability that the sentence holds any event, in [0, 1]
        (:mod:`clinex.pv.gate`; predictions only): below the model's
        ``event_threshold`` the sentence gets no event.
    offset : int or None
        Character offset (code points) of ``text`` in the document it was cut from,
        for the sentence records of a plain-text input (``clinex pv extract -i
        FILE.txt``, ``clinex batch pv``): ``document[offset:offset + len(text)] ==
        text``, and an event span's start plus ``offset`` is its place in the
        document. None for a record that is its own document (JSON lines, PHEE).
    """

    model_config = ConfigDict(extra="forbid")

    id: str
    text: str
    events: tuple[Event, ...] = ()
    model: str | None = None
    event_probability: float | None = None
    offset: int | None = Field(default=None, ge=0)
