"""An abstract is one document: a drug taken from another sentence of the record.

A PubMed abstract names its drug in the title or an early sentence and then refers back
to it: "Clozapine-induced agranulocytosis: a case report. A 34-year-old man developed
agranulocytosis. The drug was withdrawn ...". The models read one sentence at a time
(PHEE events lie within one sentence; Sun et al., EMNLP 2022, §3), so the event of the
second sentence has no drug, and the sentence gate, trained on ADE-corpus sentences read
alone (:mod:`clinex.pv.gate`), drops it: a sentence naming no drug holds no ADE there.
In BC5CDR about 30% of the chemical-induced-disease pairs of an abstract are never
stated within one sentence (Li et al., Database 2016).

:func:`resolve_record` reads a record of several sentences (one JSON-lines record; the
title first) as a whole. An ``Adverse_event`` or ``Potential_therapeutic_event`` takes
its drug from an earlier sentence when

* **it names none** (rule ``record.drug.missing``): it has an Effect, no ``Treatment``,
  no ``Treatment.Drug`` and no combination drug, its sentence names no drug at all
  (neither the drug gazetteer nor another event finds one there), it is not hedged
  (Speculated), its Effect is not what the record names a drug's indication (a
  ``Disorder`` argument or a therapeutic Effect of any event: "patients with depression"),
  and the record's first sentence (an abstract's title) names a drug. A drug named only in
  the title is taken only when the event repeats a reaction the record gives that drug
  ("Clozapine-induced agranulocytosis: a case report. A 34-year-old man developed
  agranulocytosis."): a sentence before the body names the drug is background ("Depression
  is a major feature of Parkinson's disease."); or
* **it refers back** (rule ``record.drug.anaphor``): its Treatment or Drug is, or its
  drug-less sentence holds, a referring expression (:data:`ANAPHOR`: "the drug", "this
  agent", "the medication", "this treatment", "its use", or a drug class named with a
  determiner, "the statin", "these antibiotics"; an argument is read with the determiner
  before it, "the drug was started" tagged as ``drug was started``), with no drug named
  before it in its own sentence nor right after it ("the drug clozapine").

The drug is the one named before the event's sentence (earlier sentences, the title
included) when that is unambiguous: **exactly one drug** is named there (several
mentions of one drug count once), or, failing that, **the most recent sentence that
names a drug names exactly one** (:data:`CHOICE`). Two drugs named together before "the
drug" resolve nothing: a wrong drug across sentences is worse than none. Drugs are the
gazetteer's (:mod:`clinex.pv.gazetteer`: specific drugs, not its classes, enzymes,
receptors or nucleic acids), the Drug arguments of the record's other events, and an
abbreviation defined in brackets after one of them ("carbamazepine (CBZ)"); two mentions
are one drug when their keys (:func:`drug_key`) agree. The antecedent is the most
recent mention of the chosen drug.

The event gets a ``Treatment`` (when it had none) and a ``Treatment.Drug`` whose span
points where the drug is named (offsets into the record's text), with provenance:
``Argument.source = "rule:<rule id>"`` and ``Argument.from_sentence``, the index of the
sentence it was taken from (:class:`clinex.pv.types.Argument`). An anaphoric Treatment
("The drug") is kept as the event's Treatment; an anaphoric Drug sub-argument is
replaced.

A sentence that the sentence gate left without events is read again without the gate
(:func:`clinex.pv.steps.sentence_steps` returns those events): its drug-less events with an Effect are kept only when they
get a drug this way; its other events stay dropped.

Records of one sentence (every PHEE record but 7 of 3,859) are never changed. The work
is linear in the record (mentions, antecedents and each sentence's referring expressions
are found once; containment tests look at a bounded number of reactions).

The rules were chosen on the BC5CDR training abstracts and checked on its development
abstracts (docs/pv.md, *An abstract is one document*): each filter of the missing-drug
rule (the indication, hedge, title and title-only tests) raised the precision of the pairs
it adds, which must not fall below that of the pairs stated within one sentence.

References
----------
Li J, Sun Y, Johnson RJ, et al. BioCreative V CDR task corpus: a resource for chemical
disease relation extraction. Database 2016, baw068.
Hobbs JR. Resolving pronoun references. Lingua 1978;44:311-338 (the antecedent searched in
the preceding sentences, most recent first).
Lappin S, Leass HJ. An algorithm for pronominal anaphora resolution. Computational
Linguistics 1994;20(4):535-561 (recency salience; a candidate set narrowed before choosing).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field

from clinex.pv.record_mentions import (
    _DETERMINER_BEFORE,
    ANAPHOR,
    DrugMention,
    _event_drug_args,
    _norm,
    anaphor_spans,
    drug_key,
    drug_mentions,
    is_anaphor,
    is_anaphoric_argument,
    sentence_index,
)
from clinex.pv.types import Argument, Event
from clinex.text import Span

__all__ = [
    "ANAPHOR",
    "CHOICE",
    "RECORD_RULES",
    "DrugMention",
    "RecordRule",
    "anaphor_spans",
    "drug_key",
    "drug_mentions",
    "is_anaphor",
    "is_anaphoric_argument",
    "resolve_record",
    "sentence_index",
]

EVENT_TYPES = ("Adverse_event", "Potential_therapeutic_event")


@dataclass(frozen=True)
class RecordRule:
    """One rule of this module: its id (``Argument.source = "rule:<id>"``) and provenance."""

    id: str
    provenance: str


#: The rules of this module, by id.
RECORD_RULES: dict[str, RecordRule] = {
    r.id: r
    for r in (
        RecordRule(
            "record.drug.missing",
            "an event with an Effect and no drug, in a sentence naming none, takes the drug named before it "
            "(BC5CDR, Li et al. 2016: ~30% of an abstract's CID pairs span sentences; Hobbs 1978 search order)",
        ),
        RecordRule(
            "record.drug.anaphor",
            "a referring expression ('the drug', 'this agent', 'its use', 'the statin') takes the drug named "
            "before it (Hobbs 1978; Lappin & Leass 1994 recency)",
        ),
    )
}

#: How the drug is chosen among those named before the event's sentence:
#: ``"single"``: only when exactly one drug is named there; ``"recent"``: that, or else
#: when the most recent sentence naming a drug names exactly one.
CHOICE = "recent"

# --------------------------------------------------------------------------- resolution


def _antecedents(mentions: Sequence[DrugMention], n_sentences: int) -> list[DrugMention | None]:
    """Per sentence ``k``: the antecedent among the mentions of the sentences before it
    (:data:`CHOICE`), or None; one pass over the mentions."""
    out: list[DrugMention | None] = [None] * n_sentences
    by_sentence: dict[int, list[DrugMention]] = {}
    for m in mentions:
        by_sentence.setdefault(m.sentence, []).append(m)
    keys: set[str] = set()
    last_of_key: dict[str, DrugMention] = {}
    recent: list[DrugMention] = []  # the mentions of the last sentence that named a drug
    for k in range(n_sentences):
        if keys:
            if len(keys) == 1:
                out[k] = last_of_key[next(iter(keys))]
            elif CHOICE == "recent" and len({m.key for m in recent}) == 1:
                out[k] = recent[-1]
        here = by_sentence.get(k)
        if here:
            keys.update(m.key for m in here)
            last_of_key.update((m.key, m) for m in here)
            recent = here
    return out


def _arg(text: str, role: str, label: str, m: DrugMention, rule: str) -> Argument:
    span = Span.from_offsets(text, (m.start, m.end), label=label, source=f"rule:{rule}")
    return Argument(role=role, span=span, source=f"rule:{rule}", from_sentence=m.sentence)


#: Containment tests of a reaction against the record's reactions or indications look at
#: no more than this many of them (exact matches always count), so that a run-on record
#: of thousands of events stays linear.
_MAX_CONTAINMENT = 256


def _matches(text: str, pool: dict[str, None]) -> bool:
    """``text`` equals one of ``pool``, or holds one or is held in one (the first
    :data:`_MAX_CONTAINMENT` of them)."""
    if not text:
        return False
    if text in pool:
        return True
    return any(p and (p in text or text in p) for p in itertools.islice(pool, _MAX_CONTAINMENT))


@dataclass
class _Record:
    """What :func:`_resolve_event` reads of the whole record."""

    text: str
    sentences: Sequence[tuple[int, int]]
    by_sentence: dict[int, list[DrugMention]]
    antecedents: list[DrugMention | None]
    reactions: dict[str, dict[str, None]]  # drug key -> normalised Effects of its asserted ADEs (ordered set)
    indications: dict[str, None]  # normalised Disorder arguments and therapeutic Effects (ordered set)
    anaphors: dict[int, list[tuple[int, int]]] = field(default_factory=dict)  # per sentence, on demand

    def sentence_anaphors(self, k: int) -> list[tuple[int, int]]:
        if k not in self.anaphors:
            s0, s1 = self.sentences[k]
            self.anaphors[k] = anaphor_spans(self.text, s0, s1)
        return self.anaphors[k]


def _record(text: str, sentences: Sequence[tuple[int, int]], events: Sequence[Event], more: Sequence[Event]) -> _Record:
    mentions, aliases = drug_mentions(text, sentences, events)
    by_sentence: dict[int, list[DrugMention]] = {}
    for m in mentions:
        by_sentence.setdefault(m.sentence, []).append(m)
    reactions: dict[str, dict[str, None]] = {}
    indications: dict[str, None] = {}
    for ev in events:
        if ev.event_type == "Adverse_event" and not _flag(ev, "Negated"):
            drugs = [a for a in _event_drug_args(ev) + list(ev.main("Treatment")) if not is_anaphoric_argument(text, a)]
            for key in dict.fromkeys(drug_key(a.span.text, aliases) for a in drugs):
                reactions.setdefault(key, {}).update(dict.fromkeys(_norm(e.span.text) for e in ev.main("Effect")))
    for ev in list(events) + list(more):
        indications.update(dict.fromkeys(
            _norm(a.span.text) for subs in ev.sub_arguments.values() for a in subs if a.role == "Disorder"))
        if ev.event_type == "Potential_therapeutic_event":
            indications.update(dict.fromkeys(_norm(a.span.text) for a in ev.main("Effect")))
    return _Record(text, sentences, by_sentence, _antecedents(mentions, len(sentences)), reactions, indications)


def _flag(event: Event, name: str) -> bool:
    return any(a.name == name and a.value is True for a in event.attributes)


def _resolve_event(rec: _Record, event: Event, k: int) -> Event | None:
    """``event`` (in sentence ``k``) with a drug from an earlier sentence, or None when no rule applies."""
    if event.event_type not in EVENT_TYPES or k == 0:
        return None
    m = rec.antecedents[k]
    if m is None:
        return None
    drug_args = _event_drug_args(event)
    if any(not is_anaphoric_argument(rec.text, a) for a in drug_args):
        return None  # it names its drug
    treatments = event.main("Treatment")
    anaphoric_t = [t for t in treatments if is_anaphoric_argument(rec.text, t)]
    if len(anaphoric_t) != len(treatments):
        return None  # a Treatment that is no referring expression ("chemotherapy"): left alone
    here = rec.by_sentence.get(k, [])
    cue = _anaphor_cue(rec, k, anaphoric_t or drug_args, bool(treatments))
    if cue is not None:
        rule = "record.drug.anaphor"
        # a drug named before it in its own sentence, or right after it ("the drug clozapine")
        if any(d.start < cue[0] or cue[1] <= d.start <= cue[1] + 1 for d in here):
            return None
    else:
        if treatments or here or not _takes_missing_drug(rec, event, m):
            return None
        rule = "record.drug.missing"
    return _with_drug(rec.text, event, m, rule)


def _anaphor_cue(rec: _Record, k: int, referring: Sequence[Argument], has_treatment: bool) -> tuple[int, int] | None:
    """The referring expression an event of sentence ``k`` takes its drug by: the one at
    the first of its ``referring`` arguments (read with the determiner before it), or,
    for an event with neither those nor a Treatment, the first of its sentence; None when
    there is none."""
    if referring:
        first = referring[0].span
        m0 = _DETERMINER_BEFORE.search(rec.text, max(0, first.start - 8), first.start)
        found = anaphor_spans(rec.text, m0.start() if m0 else first.start, first.end)
        return found[0] if found else (first.start, first.end)
    if not has_treatment:
        found = rec.sentence_anaphors(k)
        if found:
            return found[0]
    return None


def _takes_missing_drug(rec: _Record, event: Event, m: DrugMention) -> bool:
    """Whether the rule ``record.drug.missing`` gives the drug-less ``event`` the
    antecedent ``m``: it has an Effect, is not hedged, its Effect is no indication of the
    record, the record's first sentence names a drug, and a drug named only there is
    taken for a reaction the record gives it."""
    effects = [_norm(a.span.text) for a in event.main("Effect")]
    if not effects or _flag(event, "Speculated"):
        return False
    if any(_matches(e, rec.indications) for e in effects):
        return False  # the record names it as what a drug treats
    if not rec.by_sentence.get(0):
        return False  # the first sentence (an abstract's title) names no drug: not a text about one
    if m.sentence == 0 and not any(_matches(e, rec.reactions.get(m.key, {})) for e in effects):
        # named only in the title: the sentence is background unless it repeats a reaction
        # the record gives that drug ("Clozapine-induced agranulocytosis. ... developed agranulocytosis.")
        return False
    return True


def _with_drug(text: str, event: Event, m: DrugMention, rule: str) -> Event:
    """``event`` with the drug ``m`` as its ``Treatment.Drug`` (replacing an anaphoric one)
    and, when it has no Treatment, as its Treatment, with the provenance of ``rule``."""
    subs = dict(event.sub_arguments)
    kept = tuple(
        a for a in subs.get("Treatment", ()) if not (a.role == "Drug" and is_anaphoric_argument(text, a))
    )
    subs["Treatment"] = kept + (_arg(text, "Drug", "Treatment.Drug", m, rule),)
    args = event.arguments
    if not event.main("Treatment"):
        args = args + (_arg(text, "Treatment", "Treatment", m, rule),)
    return event.model_copy(update={"arguments": args, "sub_arguments": subs})


def resolve_record(
    text: str,
    sentences: Sequence[tuple[int, int]],
    events: Sequence[Event],
    ungated: Sequence[Event] = (),
) -> list[Event]:
    """A record's events, each drug-less one given its drug from another sentence (module notes).

    Parameters
    ----------
    text : str
        The record's text (title first for an abstract).
    sentences : sequence of (int, int)
        Its sentences, ``[start, end)`` in text order (:func:`clinex.pv.pipeline.sentence_pieces`).
    events : sequence of Event
        Its events, offsets into ``text``.
    ungated : sequence of Event
        Events of sentences that the sentence gate left without any (offsets into ``text``):
        each is kept only when it gets its drug from another sentence.

    Returns
    -------
    list of Event
        ``events`` (changed where a drug was resolved) and the kept ``ungated`` events,
        ordered by sentence (an event keeps its place among those of its sentence).
        A record of one sentence comes back unchanged.
    """
    if len(sentences) < 2 or not (events or ungated):
        return list(events)
    starts = [s for s, _ in sentences]
    rec = _record(text, sentences, events, ungated)
    out: list[tuple[int, int, Event]] = []
    for rank, (ev, optional) in enumerate([(e, False) for e in events] + [(e, True) for e in ungated]):
        k = sentence_index(starts, ev.trigger.start)
        resolved = _resolve_event(rec, ev, k)
        if resolved is not None:
            out.append((k, rank, resolved))
        elif not optional:
            out.append((k, rank, ev))
    resolved_events = [ev for _, _, ev in sorted(out, key=lambda x: (x[0], x[1]))]
    return _resolve_subjects(text, starts, resolved_events)


#: Provenance of a Subject taken from another sentence (:func:`_resolve_subjects`).
SUBJECT_RULE = "record.subject.single_patient"


def _resolve_subjects(text: str, starts: Sequence[int], events: list[Event]) -> list[Event]:
    """Give an event without a Subject the record's one described patient.

    A case report describes its patient once ("A 34-year-old man developed ...") and then
    speaks of the events ("The drug was withdrawn and the count recovered"). When the
    record's events name exactly one Subject with an Age or Gender sub-argument (one
    patient), an event of a later sentence without a Subject gets that Subject and its
    Age / Gender, with provenance ``rule:record.subject.single_patient`` and the sentence
    it came from (issue 23 item 1: "an event may take ... its subject from another
    sentence"). Two described patients, or a population, resolve nothing.
    """
    described: dict[str, tuple[Argument, tuple[Argument, ...], int]] = {}
    for ev in events:
        for arg in ev.main("Subject"):
            subs = tuple(a for a in ev.sub_arguments.get("Subject", ())
                         if a.role in ("Age", "Gender") and arg.span.overlaps(a.span.start, a.span.end))
            if subs:
                described.setdefault(_norm(arg.span.text), (arg, subs, sentence_index(starts, arg.span.start)))
    if len(described) != 1:
        return events
    (subject, subs, k0), = described.values()
    rule = f"rule:{SUBJECT_RULE}"

    def moved(a: Argument) -> Argument:
        return Argument(role=a.role, span=Span.from_offsets(text, (a.span.start, a.span.end), label=a.span.label,
                                                            source=rule), source=rule, from_sentence=k0)

    out = []
    for ev in events:
        if ev.main("Subject") or sentence_index(starts, ev.trigger.start) <= k0:
            out.append(ev)
            continue
        subject_subs = tuple(moved(a) for a in subs)
        out.append(ev.model_copy(update={
            "arguments": (*ev.arguments, moved(subject)),
            "sub_arguments": {**ev.sub_arguments, "Subject": subject_subs},
        }))
    return out
