"""Offsets of PHEE events moved from a sentence into the text it was cut from.

:func:`shift_event` is used by :mod:`clinex.pv.pipeline` (sentences of plain text) and by the
models that cut a long record into windows; it sits below both so that neither imports the
other for it.
"""

from __future__ import annotations

from clinex.pv.types import Argument, Attribute, Combination, Event
from clinex.text import Fragment, Span

__all__ = ["shift_event"]


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
                    source=a.source,
                )
                for a in event.attributes
            ),
        }
    )
