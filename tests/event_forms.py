"""Test helper: an order-free form of a record's events, to compare readers and writers."""

from __future__ import annotations

from clinex.pv.types import SentenceEvents


def canonical(item: SentenceEvents) -> tuple:
    """Order-free form of a sentence's events: (type, trigger, args, subs, combos, attributes)."""
    def sp(span):
        return tuple((f.start, f.end, f.text) for f in span.fragments)

    events = []
    for ev in item.events:
        events.append((
            ev.event_type,
            sp(ev.trigger),
            tuple(sorted((a.role, sp(a.span)) for a in ev.arguments)),
            tuple(sorted((m, a.role, sp(a.span)) for m, v in ev.sub_arguments.items() for a in v)),
            tuple(sorted((sp(c.trigger), tuple(sorted(sp(d.span) for d in c.drugs))) for c in ev.combinations)),
            tuple(sorted((a.name, str(a.value), sp(a.cue)) for a in ev.attributes)),
        ))
    return item.id, item.text, tuple(sorted(events))
