"""Text in, PHEE events out: sentence splitting, the model, offsets back into the text.

:func:`extract` is the Python API behind ``clinex pv extract``: the text is split
into sentences (:func:`clinex.text.split_sentences`), the model labels each
sentence, and every span is moved back to character offsets of the whole text.
:func:`extract_record` does the same for one input record and returns a
:class:`~clinex.pv.types.SentenceEvents` for the PHEE JSON and brat writers.
"""

from __future__ import annotations

from collections.abc import Sequence

from clinex.pv.types import Argument, Attribute, Combination, Event, SentenceEvents
from clinex.text import Fragment, Span, split_sentences

__all__ = ["extract", "extract_record", "extract_sentences", "shift_event"]


def _shift_span(span: Span, offset: int, text: str) -> Span:
    frags = tuple(
        Fragment(start=f.start + offset, end=f.end + offset, text=text[f.start + offset : f.end + offset])
        for f in span.fragments
    )
    return span.model_copy(update={"fragments": frags})


def _shift_arg(arg: Argument, offset: int, text: str) -> Argument:
    return arg.model_copy(update={"span": _shift_span(arg.span, offset, text)})


def shift_event(event: Event, offset: int, text: str) -> Event:
    """Move every span of ``event`` by ``offset`` characters into ``text``.

    Parameters
    ----------
    event : Event
        Offsets into a sentence that starts at ``offset`` in ``text``.
    offset : int
        Character offset of the sentence in ``text``.
    text : str
        The whole text; fragment texts are re-sliced from it.

    Returns
    -------
    Event
        A copy with offsets into ``text``.
    """
    if offset == 0:
        return event
    return event.model_copy(
        update={
            "trigger": _shift_span(event.trigger, offset, text),
            "arguments": tuple(_shift_arg(a, offset, text) for a in event.arguments),
            "sub_arguments": {
                k: tuple(_shift_arg(a, offset, text) for a in v) for k, v in event.sub_arguments.items()
            },
            "combinations": tuple(
                Combination(
                    trigger=_shift_span(c.trigger, offset, text) if c.trigger is not None else None,
                    drugs=tuple(_shift_arg(d, offset, text) for d in c.drugs),
                    event_id=c.event_id,
                    trigger_id=c.trigger_id,
                )
                for c in event.combinations
            ),
            "attributes": tuple(
                Attribute(
                    name=a.name,
                    value=a.value,
                    cue=_shift_span(a.cue, offset, text) if a.cue is not None else None,
                    entity_id=a.entity_id,
                )
                for a in event.attributes
            ),
        }
    )


def extract_sentences(texts: Sequence[str], *, model: str = "auto") -> list[list[Event]]:
    """Events of each sentence, offsets into that sentence (no splitting).

    Parameters
    ----------
    texts : sequence of str
        One sentence each (as PHEE ``context``).
    model : str, default "auto"
        Model name or folder, see :func:`clinex.pv.models.load_model`.

    Returns
    -------
    list of list of Event
    """
    from clinex.pv.models import load_model

    return load_model(model).predict(list(texts))


def extract(text: str, *, model: str = "auto") -> list[Event]:
    """Extract ADE / PTE events from any text.

    Parameters
    ----------
    text : str
        One or more sentences (plain text). Empty or blank text gives no events.
    model : str, default "auto"
        ``auto`` (best shipped model), ``crf``, ``transformer`` or a model folder
        (see :func:`clinex.pv.models.load_model`).

    Returns
    -------
    list of Event
        In text order; every span has character offsets into ``text``
        (half-open), so ``text[f.start:f.end] == f.text`` for each fragment.

    Raises
    ------
    ModelError
        If the model cannot be loaded.

    Examples
    --------
    >>> events = extract("A 54-year-old man, treated with amiodarone, developed thyrotoxicosis.")
    >>> events[0].event_type
    'Adverse_event'
    """
    sents = split_sentences(text)
    if not sents:
        return []
    per_sentence = extract_sentences([s.text for s in sents], model=model)
    return [
        shift_event(ev, s.start, text) for s, evs in zip(sents, per_sentence) for ev in evs
    ]


def extract_record(record_id: str, text: str, *, model: str = "auto") -> SentenceEvents:
    """Events of one input record, as a :class:`SentenceEvents` for the writers.

    Parameters
    ----------
    record_id : str
        The record's id (kept as ``SentenceEvents.id``).
    text : str
        Its text; offsets of the events point into it.
    model : str, default "auto"

    Returns
    -------
    SentenceEvents
    """
    return SentenceEvents(id=record_id, text=text, events=tuple(extract(text, model=model)))
