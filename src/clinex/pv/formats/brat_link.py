"""PHEE brat standoff, reading step 2: linking the lines of a parsed file into events (issue 24).

:func:`link` applies the rules of PHEE's brat-to-JSON converter (module notes of
:mod:`clinex.pv.formats.brat`): explicit links first (E lines' arguments, ``R has``,
``has_child``, ``has_cue``), then the converter's defaults for what the file leaves
unlinked; a T line that ends in no event is reported.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from clinex.errors import FormatError, SchemaError
from clinex.pv.formats.brat_parse import CUE_LABELS, SUB_LABELS, Ann, Ent, Ev, probability
from clinex.pv.schema import COMBINATION, DEFAULT_ATTRIBUTE_VALUE, EVENT_TYPES, MAIN_ROLES, check_sub_role
from clinex.pv.types import Argument, Attribute, Combination, Event
from clinex.text import Span

__all__ = ["link"]


def _overlaps(sub: Span, main: Span) -> bool:
    """The converter's test: a fragment of ``sub`` starts or ends inside one of ``main``."""
    return any(
        (m.start <= s.start < m.end) or (m.start < s.end <= m.end)
        for s in sub.fragments
        for m in main.fragments
    )


@dataclass
class _Links:
    """Who belongs to whom in one ``.ann`` file, explicit (E lines, R lines) or by the rules.

    ``main_to_events``: main argument T id -> the E ids it belongs to; ``sub_to_main``:
    sub-argument T id -> main argument T id; ``child_to_parent``: Combination E id ->
    ADE/PTE E id; ``cue_to_event``: cue T id -> E id; ``combination_only``: Drug T ids
    claimed by ``R has Arg1:<Combination event>``; ``parents``: the ADE/PTE E ids.
    """

    main_to_events: dict[str, list[str]] = field(default_factory=dict)
    sub_to_main: dict[str, str] = field(default_factory=dict)
    child_to_parent: dict[str, str] = field(default_factory=dict)
    cue_to_event: dict[str, str] = field(default_factory=dict)
    combination_only: set[str] = field(default_factory=set)
    parents: list[str] = field(default_factory=list)


def _explicit_links(ann: Ann) -> _Links:
    """The links the file states: ``R`` lines (``has``, ``has_child``, ``has_cue``) and E lines' arguments."""
    links = _Links()
    events = ann.events
    for rtype, a1, a2, _line in ann.rels:
        if rtype == "has" and a1 in events and events[a1].type == COMBINATION:
            links.combination_only.add(a2)
        elif rtype == "has":
            links.sub_to_main[a2] = a1
        elif rtype == "has_child":
            links.child_to_parent[a2] = a1
        elif rtype == "has_cue":
            links.cue_to_event[a2] = a1
    for ev in events.values():
        for aid in ev.args:
            links.main_to_events.setdefault(aid, []).append(ev.id)
    links.parents = [e.id for e in events.values() if e.type in EVENT_TYPES]
    return links


def _implicit_links(ann: Ann, links: _Links) -> None:
    """Add the converter's rules' links for what the file leaves unlinked (module notes)."""
    events = ann.events
    # a Combination trigger without an E line (no drugs listed) is not a candidate
    argless = [e.id for e in events.values() if not e.args and (e.listed or e.type != COMBINATION)]
    default = argless[0] if len(argless) == 1 else None
    for ev in events.values():
        if ev.type == COMBINATION and ev.id not in links.child_to_parent and len(links.parents) == 1:
            links.child_to_parent[ev.id] = links.parents[0]
    for ent in ann.ents.values():
        if ent.label in MAIN_ROLES and ent.id not in links.main_to_events:
            if default is not None:
                links.main_to_events[ent.id] = [default]
        elif (ent.label in SUB_LABELS and ent.id not in links.sub_to_main
              and ent.id not in links.combination_only):
            _link_sub(ann, ent, links)
        elif ent.label in CUE_LABELS and ent.id not in links.cue_to_event:
            name = CUE_LABELS[ent.label]
            carriers = [target for a, target, _, _ in ann.attrs if a == name]
            if len(carriers) == 1:
                links.cue_to_event[ent.id] = carriers[0]
            elif not carriers and len(links.parents) == 1:
                links.cue_to_event[ent.id] = links.parents[0]


def _link_sub(ann: Ann, ent: Ent, links: _Links) -> None:
    """Link an unlinked sub-argument to the first main argument of its kind it overlaps,
    else to the only main argument of its kind."""
    main_label = SUB_LABELS[ent.label][0]
    candidates = []
    for other in ann.ents.values():
        if other.label == main_label:
            candidates.append(other.id)
            if _overlaps(ent.span, other.span):
                links.sub_to_main[ent.id] = other.id
                return
    if len(candidates) == 1:
        links.sub_to_main[ent.id] = candidates[0]


def _arguments(ann: Ann, ev: Ev, links: _Links) -> tuple[list[Argument], dict[str, list[Argument]]]:
    """The main arguments of event ``ev`` and its sub-arguments by main role.

    Raises
    ------
    SchemaError
        A listed argument that is no main role, or a sub-argument linked to a main
        argument of another kind.
    FormatError
        A relation to an unknown id.
    """
    arguments: list[Argument] = []
    subs: dict[str, list[Argument]] = {}
    for mid, evs in links.main_to_events.items():
        if ev.id not in evs:
            continue
        main = ann.ents[mid]
        if main.label not in MAIN_ROLES:
            raise SchemaError(
                f"{ev.id} lists {mid} ({main.label}) as an argument; "
                f"valid: {', '.join(MAIN_ROLES)}",
                path=ann.path, line=ev.line,
            )
        arguments.append(Argument(role=main.label, span=main.span, entity_id=mid))
        for sid, m in links.sub_to_main.items():
            if m == mid:
                subs.setdefault(main.label, []).append(_sub_argument(ann, sid, main))
    return arguments, subs


def _sub_argument(ann: Ann, sid: str, main: Ent) -> Argument:
    """The sub-argument ``sid`` of main argument ``main``, checked."""
    if sid not in ann.ents:
        raise FormatError(f"relation refers to unknown id {sid}", path=ann.path)
    sub = ann.ents[sid]
    main_role, sub_role = SUB_LABELS.get(sub.label, (main.label, sub.label))
    check_sub_role(main.label, sub_role, path=ann.path, line=sub.line)
    if main_role != main.label:
        raise SchemaError(f"{sid} ({sub.label}) is linked to {main.id} ({main.label})", path=ann.path, line=sub.line)
    return Argument(role=sub_role, span=sub.span, entity_id=sid)


def _combinations(ann: Ann, ev: Ev, links: _Links, arguments: list[Argument],
                  subs: dict[str, list[Argument]]) -> list[Combination]:
    """The Combination events of event ``ev``, or :class:`FormatError` for a ``has_child`` to a non-Combination."""
    combos = []
    for cid, pid in links.child_to_parent.items():
        if pid != ev.id:
            continue
        child = ann.events.get(cid)
        if child is None or child.type != COMBINATION:
            raise FormatError(f"has_child links {ev.id} to {cid}, not a Combination event", path=ann.path)
        drugs = tuple(Argument(role="Drug", span=ann.ents[a].span, entity_id=a) for a in child.args)
        if not child.listed:
            # no E line names its drugs: they are the Drugs of the event's Treatment that
            # holds the trigger ("aspirin and warfarin"), as in every PHEE combination
            trig = ann.ents[child.trigger].span
            holders = {a.entity_id for a in arguments if a.role == "Treatment" and _overlaps(trig, a.span)}
            drugs = tuple(a for a in subs.get("Treatment", ())
                          if a.role == "Drug" and links.sub_to_main.get(a.entity_id or "") in holders)
        combos.append(Combination(
            trigger=ann.ents[child.trigger].span,
            trigger_id=child.trigger,
            event_id=cid if child.listed else None,
            drugs=drugs,
        ))
    return combos


def _attributes(ann: Ann, ev: Ev, links: _Links) -> list[Attribute]:
    """The attributes of event ``ev`` from its cues, or :class:`FormatError` for a ``has_cue`` to a non-cue."""
    attributes = []
    note = ann.notes.get(ev.id, {})
    for cue_id, eid in links.cue_to_event.items():
        if eid != ev.id:
            continue
        cue = ann.ents.get(cue_id)
        if cue is None or cue.label not in CUE_LABELS:
            raise FormatError(f"has_cue links {ev.id} to {cue_id}, not a cue", path=ann.path)
        name = CUE_LABELS[cue.label]
        value = DEFAULT_ATTRIBUTE_VALUE[name]
        for a, target, v, _ in ann.attrs:
            if a == name and target == ev.id:
                value = v
        source = note.get(f"{name}@{cue.span.start}-{cue.span.end}")
        attributes.append(Attribute(name=name, value=value, cue=cue.span, entity_id=cue_id, source=source))
    return attributes


def link(ann: Ann, warn: Callable[[str], None]) -> list[Event]:
    """The ADE/PTE events of a parsed file, linked by the rules of the module notes of
    :mod:`clinex.pv.formats.brat`; a T line linked to no event is reported to ``warn``.

    Raises
    ------
    SchemaError, FormatError
        A link the schema does not allow, or to an unknown or wrong kind of id.
    """
    links = _explicit_links(ann)
    _implicit_links(ann, links)
    out = []
    for ev in ann.events.values():
        if ev.type not in EVENT_TYPES:
            continue
        arguments, subs = _arguments(ann, ev, links)
        combos = _combinations(ann, ev, links, arguments, subs)
        attributes = _attributes(ann, ev, links)
        note = ann.notes.get(ev.id, {})
        out.append(Event(
            event_type=ev.type,
            trigger=ann.ents[ev.trigger].span,
            trigger_id=ev.trigger,
            event_id=ev.id if ev.listed else None,
            arguments=tuple(arguments),
            sub_arguments={k: tuple(v) for k, v in subs.items()},
            combinations=tuple(combos),
            attributes=tuple(attributes),
            score=probability(note.get("trigger_probability")),
            source=note.get("model"),
        ))
    _report_dropped(ann, out, warn)
    return out


def _report_dropped(ann: Ann, events: list[Event], warn: Callable[[str], None]) -> None:
    """One warning per T line that ended up in no event (no rule links it: several
    candidate events or arguments, a relation to a missing event), in file order."""
    used: set[str | None] = set()
    for ev in events:
        used |= {ev.trigger_id, *(a.entity_id for a in ev.arguments), *(a.entity_id for a in ev.attributes)}
        used |= {a.entity_id for subs in ev.sub_arguments.values() for a in subs}
        for c in ev.combinations:
            used |= {c.trigger_id, *(d.entity_id for d in c.drugs)}
    for ent in ann.ents.values():
        if ent.id not in used:
            warn(f"{ann.path}:{ent.line}: {ent.id} ({ent.label}) is linked to no event; not read")
