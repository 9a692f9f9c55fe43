"""Subjects of another group in an event (issue 24: from :mod:`clinex.pv.links`, note 3).

"Five patients developed a rash; the other two ...": a Subject sub-argument behind an
:data:`OTHER_GROUP` phrase, outside every Subject of the event, belongs to another group.
:mod:`clinex.pv.links` re-exports both names.
"""

from __future__ import annotations

import re

from clinex.pv.types import Argument, Event

__all__ = ["OTHER_GROUP", "drop_other_group_subjects"]

#: A change of group: ", the other five", "; the remaining patients", ", all others".
OTHER_GROUP = re.compile(r"[,;]\s*(?:the\s+|all\s+)?(?:other|others|remaining|rest)\b", re.I)


def drop_other_group_subjects(text: str, event: Event) -> Event:
    """Drop the Subject sub-arguments that belong to another group (:mod:`clinex.pv.links`, module note 3).

    Parameters
    ----------
    text : str
        The sentence the event's offsets point into.
    event : Event

    Returns
    -------
    Event
        ``event`` itself, or a copy without the Subject sub-arguments that lie outside
        every Subject span of the event and have an :data:`OTHER_GROUP` phrase between
        them and the trigger.
    """
    subjects = event.sub_arguments.get("Subject", ())
    if not subjects or not OTHER_GROUP.search(text):
        return event
    mains = event.main("Subject")
    trig = event.trigger

    def other(a: Argument) -> bool:
        if any(m.span.start <= a.span.start and a.span.end <= m.span.end for m in mains):
            return False
        lo, hi = (trig.end, a.span.start) if a.span.start >= trig.end else (a.span.end, trig.start)
        return lo < hi and OTHER_GROUP.search(text, lo, hi) is not None

    kept = tuple(a for a in subjects if not other(a))
    if len(kept) == len(subjects):
        return event
    subs = {role: vals for role, vals in event.sub_arguments.items() if role != "Subject"}
    if kept:
        subs["Subject"] = kept
    return event.model_copy(update={"sub_arguments": subs})
