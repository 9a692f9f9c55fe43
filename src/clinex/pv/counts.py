"""Event counts that mean what they say: asserted events, and negated ones apart.

A safety reviewer who asks ``WHERE n_adverse > 0`` wants the records that report an
adverse event, not "No hepatotoxicity was observed." (issue 23, item 6). Every count
clinex shows (``clinex batch pv`` columns, the ``clinex pv extract`` summary line, the
web page) comes from :func:`event_counts`, so they agree:

- **asserted**: an event without a Negated attribute (value ``True``). A *speculated*
  event ("may have caused") is asserted: it is reported as a possible reaction, which
  is what pharmacovigilance counts. It is also counted on its own
  (``n_adverse_speculated``, ``n_therapeutic_speculated``: a subset of the asserted
  count), so ``n_adverse - n_adverse_speculated`` counts the events stated without a
  hedge.
- **negated**: an event with a Negated attribute, hedged or not ("No hepatotoxicity was
  observed", "did not develop a rash"). Counted only in the ``*_negated`` columns.

Columns (:data:`COUNT_COLUMNS`, in this order):

=========================== =================================================
``n_events``                asserted events of any type
``n_events_negated``        negated events of any type
``n_adverse``               asserted ``Adverse_event``
``n_adverse_negated``       negated ``Adverse_event``
``n_adverse_speculated``    asserted ``Adverse_event`` that are Speculated
``n_therapeutic``           asserted ``Potential_therapeutic_event``
``n_therapeutic_negated``   negated ``Potential_therapeutic_event``
``n_therapeutic_speculated`` asserted ``Potential_therapeutic_event`` that are Speculated
``n_dechallenge``           asserted ``Adverse_event`` with a positive dechallenge
                            (resolved after withdrawal or dose reduction;
                            :mod:`clinex.pv.challenge`)
``n_rechallenge``           asserted ``Adverse_event`` with a positive rechallenge
                            (recurred on re-exposure)
=========================== =================================================

``n_events + n_events_negated`` is the number of events in the record.
"""

from __future__ import annotations

from collections.abc import Iterable

from clinex.pv.types import Event

__all__ = ["COUNT_COLUMNS", "event_counts", "is_asserted", "is_negated_event", "is_speculated_event"]

COUNT_COLUMNS: tuple[str, ...] = (
    "n_events", "n_events_negated",
    "n_adverse", "n_adverse_negated", "n_adverse_speculated",
    "n_therapeutic", "n_therapeutic_negated", "n_therapeutic_speculated",
    "n_dechallenge", "n_rechallenge",
)
"""The count columns of :func:`event_counts`, in the order ``clinex batch pv`` writes them."""

_PREFIX = {"Adverse_event": "n_adverse", "Potential_therapeutic_event": "n_therapeutic"}


def _flag(event: Event, name: str) -> bool:
    return any(a.name == name and a.value is True for a in event.attributes)


def is_negated_event(event: Event) -> bool:
    """True when ``event`` has a Negated attribute with value ``True`` (with or without a cue).

    Examples
    --------
    >>> from clinex.text import Span
    >>> from clinex.pv.types import Attribute, Event
    >>> t = "No rash was seen."
    >>> ev = Event(event_type="Adverse_event", trigger=Span.from_offsets(t, (12, 16)),
    ...            attributes=(Attribute(name="Negated", value=True, cue=Span.from_offsets(t, (0, 2))),))
    >>> is_negated_event(ev), is_asserted(ev)
    (True, False)
    """
    return _flag(event, "Negated")


def is_speculated_event(event: Event) -> bool:
    """True when ``event`` has a Speculated attribute with value ``True``."""
    return _flag(event, "Speculated")


def is_asserted(event: Event) -> bool:
    """True when ``event`` is not negated (a speculated event is asserted)."""
    return not is_negated_event(event)


def event_counts(events: Iterable[Event]) -> dict[str, int]:
    """Count asserted, negated and speculated events by type.

    Parameters
    ----------
    events : iterable of Event
        The events of one record (or of several: counts add up).

    Returns
    -------
    dict of str to int
        One entry per :data:`COUNT_COLUMNS` name, in that order (see the module
        docstring for what each counts). An event type other than the two PHEE types
        counts only in ``n_events`` / ``n_events_negated``.

    Examples
    --------
    >>> event_counts([])["n_adverse"]
    0
    """
    out = dict.fromkeys(COUNT_COLUMNS, 0)
    for ev in events:
        prefix = _PREFIX.get(ev.event_type)
        if is_negated_event(ev):
            out["n_events_negated"] += 1
            if prefix:
                out[f"{prefix}_negated"] += 1
            continue
        out["n_events"] += 1
        if prefix:
            out[prefix] += 1
            if is_speculated_event(ev):
                out[f"{prefix}_speculated"] += 1
        if ev.event_type == "Adverse_event":
            out["n_dechallenge"] += _flag(ev, "Dechallenge")
            out["n_rechallenge"] += _flag(ev, "Rechallenge")
    return out
