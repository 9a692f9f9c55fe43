"""A record's case-level drug -> reaction pairs: what a safety reviewer reads off an abstract.

:func:`record_pairs` is the one function every surface calls (PHEE JSON output writes its
result as the record's ``pairs`` field: :mod:`clinex.pv.formats.phee_json`). Each event of
type ``Adverse_event`` or ``Potential_therapeutic_event`` states one pair per drug and
Effect:

* **drugs**: its ``Treatment.Drug`` sub-arguments and combination drugs, or, when it has
  neither, its Treatment arguments; a referring expression that was not resolved ("the
  drug" with no antecedent: :func:`clinex.pv.record.is_anaphoric_argument`) names no drug,
  nor does a mention that names no medicinal product ("placebo", "human", "5":
  :func:`clinex.pv.normalise.names_no_product`). A drug taken from another sentence
  (:mod:`clinex.pv.record`) counts like any other.
* **reactions**: its Effect arguments, but not one that is only a function word ("a" of
  "a significant decrease": :func:`names_no_reaction`); an event without one states no pair.

Pairs are unique by ``(drug, reaction, event_type)``: the drug normalised by
:func:`clinex.pv.record.drug_key` (the gazetteer's canonical name in lower case, an
abbreviation defined in the record ("carbamazepine (CBZ)") as its drug, else the text
case-folded), the reaction case-folded with its whitespace collapsed, a leading article
and trailing ``.,;:`` dropped (:func:`reaction_key`: "The rash" and "rash" are one). An
ADE and a PTE of the same drug and reaction are two pairs (a cause and a treatment). The
flags gather the pair's events: ``negated`` when every one is negated, ``speculated`` when
every asserted one is hedged, ``dechallenge`` / ``rechallenge`` when any has that attribute
(or a pair of the same drug and type whose reaction holds this one's or is held in it:
"the rash resolved after X was stopped" is the challenge of "a generalized rash"),
``across_sentences`` when every one took its drug from another sentence; ``evidence``
lists the sentences of the events (offsets into the record's text). Pairs come in the
order their first event comes.
"""

from __future__ import annotations

import re

from clinex.pv.counts import is_negated_event, is_speculated_event
from clinex.pv.inputs import sentence_pieces
from clinex.pv.normalise import names_no_product
from clinex.pv.record import EVENT_TYPES, drug_key, drug_mentions, is_anaphoric_argument, sentence_index
from clinex.pv.types import Argument, Event, Pair, SentenceEvents

__all__ = ["record_pairs", "event_drugs", "reaction_key", "names_no_reaction"]


_ARTICLE = re.compile(r"^(?:the|a|an)\s+")
#: Words that are no reaction on their own (an Effect the model cut to "a" or "of"). No
#: Effect of PHEE train or dev is one of them.
_FUNCTION_WORDS = frozenset(
    "a an the of and or in to with for on at by as is was this that these it its".split())
#: A measurement that recovers rather than a reaction ("neutrophil count", "liver function", "sodium level")
_MEASURE = re.compile(r"\b(count|counts|level|levels|function|values?|concentrations?|tests?|parameters?)\b")


def names_no_reaction(text: str) -> bool:
    """Whether an Effect names no reaction: blank, or only a function word ("a", "of") --
    what is left when the model cuts "a significant decrease" into "a" and "decrease ..."
    (fresh-user QA on BC5CDR 6293644). No Effect of PHEE train or dev is one.

    Examples
    --------
    >>> [t for t in ("a", " The ", "of", "rash", "a rash") if names_no_reaction(t)]
    ['a', ' The ', 'of']
    """
    key = reaction_key(text)
    return not key or key in _FUNCTION_WORDS


def reaction_key(text: str) -> str:
    """A reaction, normalised: case-folded, whitespace collapsed, a leading article and
    trailing ``.,;:`` dropped.

    >>> reaction_key("The  Rash"), reaction_key("evidence of cholestasis.")
    ('rash', 'evidence of cholestasis')
    """
    return _ARTICLE.sub("", " ".join(text.split()).casefold()).rstrip(".,;: ")


def event_drugs(text: str, event: Event) -> list[Argument]:
    """The drug arguments of ``event`` (offsets into ``text``) that name a drug: its Drug
    sub-arguments and combination drugs, else its Treatments; unresolved referring
    expressions ("the drug": :func:`clinex.pv.record.is_anaphoric_argument`) left out."""
    drugs = [a for a in event.sub_arguments.get("Treatment", ()) if a.role == "Drug"]
    drugs += [d for c in event.combinations for d in c.drugs]
    if not drugs:
        drugs = list(event.main("Treatment"))
    return [a for a in drugs if not is_anaphoric_argument(text, a)]


def record_pairs(record: SentenceEvents) -> list[Pair]:
    """The unique drug -> reaction pairs of one record (module notes).

    Parameters
    ----------
    record : SentenceEvents
        A record with its events (offsets into ``record.text``), e.g. one item of
        :func:`clinex.pv.pipeline.extract_records`.

    Returns
    -------
    list of Pair
        In the order of each pair's first event; empty when no event names both a drug
        and an Effect.

    Examples
    --------
    >>> from clinex.pv.types import Argument, Event, SentenceEvents
    >>> from clinex.text import Span
    >>> t = "Rash after  Tylenol."
    >>> ev = Event(event_type="Adverse_event", trigger=Span.from_offsets(t, (5, 10)),
    ...            arguments=(Argument(role="Effect", span=Span.from_offsets(t, (0, 4))),
    ...                       Argument(role="Treatment", span=Span.from_offsets(t, (12, 19)))))
    >>> [(p.drug, p.reaction, p.event_type, p.evidence) for p in record_pairs(SentenceEvents(id="1", text=t, events=(ev,)))]
    [('acetaminophen', 'rash', 'Adverse_event', ((0, 20),))]
    """
    events = [ev for ev in record.events if ev.event_type in EVENT_TYPES]
    if not events:
        return []
    acc = _gather(record.text, events)
    same: dict[tuple[str, str], list[tuple[str, dict]]] = {}
    for (dkey, rkey, etype), got in acc.items():
        same.setdefault((dkey, etype), []).append((rkey, got))
    _spread_challenges(acc, same)
    _fold_measurements(acc, same)
    return [_pair(key, got) for key, got in acc.items()]


def _gather(text: str, events: list[Event]) -> dict[tuple[str, str, str], dict]:
    """Each ``(drug key, reaction key, event type)`` of ``events`` with what its events say:
    the first drug and reaction texts, each event's (negated, speculated) flags, whether
    any is a dechallenge or rechallenge, whether every drug came from another sentence,
    and the sentences (offsets into ``text``) of the events; in the order of first event."""
    sentences = [(start, end) for start, end, _ in sentence_pieces(text)]  # the pipeline's split
    starts = [s for s, _ in sentences]
    _, aliases = drug_mentions(text, sentences, ()) if len(sentences) > 1 else ([], {})
    acc: dict[tuple[str, str, str], dict] = {}
    for ev in events:
        sentence = sentences[sentence_index(starts, ev.trigger.start)]
        negated, speculated = is_negated_event(ev), is_speculated_event(ev)
        names = {a.name for a in ev.attributes if a.value is True}
        for drug in event_drugs(text, ev):
            if names_no_product(drug.span.text):  # "placebo", "human", "5": no drug of a pair
                continue
            dkey = drug_key(drug.span.text, aliases)
            for eff in ev.main("Effect"):
                key = (dkey, reaction_key(eff.span.text), ev.event_type)
                if names_no_reaction(eff.span.text):  # "a" of "a significant decrease"
                    continue
                got = acc.get(key)
                if got is None:
                    got = acc[key] = {
                        "drug_text": drug.span.text, "reaction_text": eff.span.text,
                        "flags": [], "dechallenge": False, "rechallenge": False,
                        "across": True, "evidence": set(),
                    }
                got["flags"].append((negated, speculated))
                got["dechallenge"] |= "Dechallenge" in names
                got["rechallenge"] |= "Rechallenge" in names
                got["across"] &= drug.from_sentence is not None
                got["evidence"].add(sentence)
    return acc


def _spread_challenges(acc: dict, same: dict) -> None:
    """A challenge stated of part of a reaction, or of more ("the rash resolved" after "a
    generalized rash"), is that reaction's challenge too: set on the pairs of ``acc`` in
    place (``same``: the pairs of each drug and event type)."""
    for (dkey, rkey, etype), got in list(acc.items()):
        if got["dechallenge"] or got["rechallenge"]:
            for r2, other in same[(dkey, etype)]:
                if r2 != rkey and (r2 in rkey or rkey in r2):
                    other["dechallenge"] |= got["dechallenge"]
                    other["rechallenge"] |= got["rechallenge"]


def _fold_measurements(acc: dict, same: dict) -> None:
    """"The drug was withdrawn and the neutrophil count recovered": a recovery stated of a
    measurement (count, level, function) is the dechallenge of the drug's reaction named
    before, not a reaction of its own (WHO-UMC: the reaction abates on withdrawal). Its
    flags and evidence go to the drug's other reactions and it leaves ``acc`` (in place)."""
    for (dkey, rkey, etype), got in list(acc.items()):
        if (got["dechallenge"] or got["rechallenge"]) and _MEASURE.search(rkey):
            others = [o for r2, o in same[(dkey, etype)] if r2 != rkey and not _MEASURE.search(r2)]
            if others:
                for other in others:
                    other["dechallenge"] |= got["dechallenge"]
                    other["rechallenge"] |= got["rechallenge"]
                    other["evidence"] |= got["evidence"]
                del acc[(dkey, rkey, etype)]


def _pair(key: tuple[str, str, str], got: dict) -> Pair:
    """The :class:`Pair` of one key of :func:`_gather`: negated when every event is,
    speculated when every asserted one (or, with none asserted, every one) is."""
    dkey, rkey, etype = key
    flags = got["flags"]
    negated = all(n for n, _ in flags)
    asserted = [s for n, s in flags if not n] or [s for _, s in flags]
    return Pair(
        drug=dkey, drug_text=got["drug_text"], reaction=rkey, reaction_text=got["reaction_text"],
        event_type=etype, negated=negated, speculated=all(asserted),
        dechallenge=got["dechallenge"], rechallenge=got["rechallenge"],
        across_sentences=got["across"], evidence=tuple(sorted(got["evidence"])),
    )
