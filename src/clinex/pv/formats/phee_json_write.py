"""Writing :class:`~clinex.pv.types.SentenceEvents` as PHEE JSON lines.

The format, the ids the writer numbers and the keys it adds to predictions (provenance,
``pairs``, ``normalised``) are described in :mod:`clinex.pv.formats.phee_json`, which
re-exports every public name of this module.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from clinex.pv.schema import COMBINATION, MAIN_ROLES
from clinex.pv.types import Argument, Attribute, Event, Pair, SentenceEvents
from clinex.text import Span

__all__ = ["to_phee_dict", "dumps_phee", "write_phee_json"]


class _Ids:
    """Hands out ``E<n>`` / ``T<n>`` ids after the largest one already in use."""

    def __init__(self, item: SentenceEvents) -> None:
        used: list[str] = []
        for ev in item.events:
            used += [ev.event_id or "", ev.trigger_id or ""]
            used += [a.entity_id or "" for a in ev.arguments]
            used += [a.entity_id or "" for subs in ev.sub_arguments.values() for a in subs]
            used += [a.entity_id or "" for a in ev.attributes]
            for c in ev.combinations:
                used += [c.event_id or "", c.trigger_id or ""]
                used += [d.entity_id or "" for d in c.drugs]
        self.next = {"E": 1, "T": 1}
        for u in used:
            m = re.fullmatch(r"([ET])(\d{1,18})", u)  # a longer number cannot collide with a new id
            if m:
                self.next[m.group(1)] = max(self.next[m.group(1)], int(m.group(2)) + 1)

    def get(self, given: str | None, kind: str) -> str:
        if given is not None:
            return given
        n = self.next[kind]
        self.next[kind] = n + 1
        return f"{kind}{n}"


def _node(pairs: Iterable[tuple[Span | None, str | None]], ids: _Ids) -> dict[str, Any]:
    node: dict[str, Any] = {"text": [], "start": [], "entity_id": []}
    for span, eid in pairs:
        if span is None:
            continue
        node["text"].append([f.text for f in span.fragments])
        node["start"].append([f.start for f in span.fragments])
        node["entity_id"].append(ids.get(eid, "T"))
    return node


def _arg_node(args: Iterable[Argument], ids: _Ids) -> dict[str, Any]:
    """The span node of arguments, with ``source`` / ``from_sentence`` lists when one has them."""
    args = list(args)
    node = _node(((a.span, a.entity_id) for a in args), ids)
    if any(a.source is not None or a.from_sentence is not None for a in args):
        node["source"] = [a.source for a in args]
        node["from_sentence"] = [a.from_sentence for a in args]
    return node


def _grouped(args: Iterable[Argument]) -> dict[str, list[Argument]]:
    groups: dict[str, list[Argument]] = {}
    for a in args:
        groups.setdefault(a.role, []).append(a)
    return groups


def _normalised(drugs: Iterable[Argument]) -> list[dict[str, str | None] | None]:
    """One gazetteer entry (or None) per drug, as :func:`clinex.pv.normalise.drug_entry` gives it."""
    from clinex.pv.normalise import drug_entry

    return [drug_entry(a.span.text) for a in drugs]


def _event_dict(ev: Event, ids: _Ids, normalised: bool = False) -> dict[str, Any]:
    d: dict[str, Any] = {
        "event_id": ids.get(ev.event_id, "E"),
        "event_type": ev.event_type,
        "Trigger": _node([(ev.trigger, ev.trigger_id)], ids),
    }
    mains = _grouped(ev.arguments)
    roles = list(mains) + [r for r in MAIN_ROLES if r in ev.sub_arguments and r not in mains]
    if ev.combinations and "Treatment" not in roles:
        roles.append("Treatment")
    for role in roles:
        node = _arg_node(mains.get(role, ()), ids)
        for sub, args in _grouped(ev.sub_arguments.get(role, ())).items():
            node[sub] = _arg_node(args, ids)
            if normalised and (role, sub) == ("Treatment", "Drug"):
                node[sub]["normalised"] = _normalised(args)
        if role == "Treatment" and ev.combinations:
            node[COMBINATION] = [
                {
                    "event_id": ids.get(c.event_id, "E"),
                    "event_type": COMBINATION,
                    "Trigger": _node([(c.trigger, c.trigger_id)], ids),
                    "Drug": _node(((a.span, a.entity_id) for a in c.drugs), ids),
                }
                for c in ev.combinations
            ]
            if normalised:
                for c, cnode in zip(ev.combinations, node[COMBINATION]):
                    cnode["Drug"]["normalised"] = _normalised(c.drugs)
        d[role] = node
    attrs: dict[str, list[Attribute]] = {}
    for a in ev.attributes:
        attrs.setdefault(a.name, []).append(a)
    for name, group in attrs.items():
        node = _node(((a.cue, a.entity_id) for a in group), ids)
        node["value"] = group[0].value
        if any(a.source is not None for a in group):
            node["source"] = [a.source for a in group if a.cue is not None] or [group[0].source]
        d[name] = node
    if ev.source is not None:
        d["model"] = ev.source
    if ev.score is not None:
        d["trigger_probability"] = ev.score
    return d


def _pair_dict(pair: Pair) -> dict[str, Any]:
    d = pair.model_dump()
    d["evidence"] = [list(e) for e in pair.evidence]
    return d


def to_phee_dict(
    item: SentenceEvents, *, pairs: bool | None = None, normalised: bool | None = None
) -> dict[str, Any]:
    """The PHEE JSON object of one sentence (inverse of :func:`parse_phee_dict`).

    Keys come in the corpus order: ``id``, ``context``, ``is_mult_event``,
    ``annotations``; in an event ``event_id``, ``event_type``, ``Trigger``, the main
    arguments in the order of ``event.arguments``, then the attributes in the order
    of ``event.attributes``; sub-arguments in the order of ``event.sub_arguments``,
    then ``Combination``. Missing ids are numbered (see module notes).

    Parameters
    ----------
    item : SentenceEvents
    pairs : bool or None, default None
        Write the record's drug -> reaction pairs (:func:`clinex.pv.pairs.record_pairs`) as
        ``pairs``, after the other keys. None: when the record holds predictions
        (``item.model`` is set) and has at least one pair, so that gold corpus lines
        round-trip unchanged; True: always (``[]`` when none); False: never.
    normalised : bool or None, default None
        Give each ``Treatment.Drug`` and Combination ``Drug`` node a ``normalised`` list
        (module notes). None: when the record holds predictions (``item.model`` set);
        True: always; False: never.

    Returns
    -------
    dict
        ``json.dumps`` of it reproduces a corpus line exactly for corpus input.
    """
    ids = _Ids(item)
    norm = item.model is not None if normalised is None else normalised
    events = [_event_dict(ev, ids, norm) for ev in item.events]
    multi = len(item.events) > 1 or any(ev.combinations for ev in item.events)
    out: dict[str, Any] = {
        "id": item.id,
        "context": item.text,
        "is_mult_event": multi,
        "annotations": [{"events": events}],
    }
    if item.model is not None:
        out["model"] = item.model
    if item.event_probability is not None:
        out["event_probability"] = item.event_probability
    if item.offset is not None:
        out["offset"] = item.offset
    if pairs or (pairs is None and item.model is not None and item.events):
        from clinex.pv.pairs import record_pairs

        found = [_pair_dict(p) for p in record_pairs(item)]
        if found or pairs:
            out["pairs"] = found
    return out


def dumps_phee(item: SentenceEvents, *, pairs: bool | None = None) -> str:
    """One PHEE JSON line (no newline), formatted as the corpus files are (``pairs``: see :func:`to_phee_dict`)."""
    return json.dumps(to_phee_dict(item, pairs=pairs))


def write_phee_json(
    items: Iterable[SentenceEvents], path: str | Path, *, overwrite: bool = True, pairs: bool | None = None
) -> int:
    """Write sentences as PHEE JSON lines (atomically: temp file, then rename).

    Parameters
    ----------
    items : iterable of SentenceEvents
    path : str or Path
        Output file; parent folders are created.
    overwrite : bool, default True
        If False and ``path`` exists, raise instead of replacing it.
    pairs : bool or None, default None
        Each record's drug -> reaction pairs (see :func:`to_phee_dict`; by default for
        records holding predictions).

    Returns
    -------
    int
        Number of lines written.

    Raises
    ------
    InputError
        ``path`` exists and ``overwrite`` is False, is a folder, or cannot be
        written (the operating system's reason, e.g. permission denied).

    Notes
    -----
    The file gets the permissions of a normally created file (``0o666`` less the
    process umask), not the ``0o600`` of the temporary file.
    """
    from clinex.io.atomic import write_atomic

    n = 0

    def lines() -> Iterator[str]:
        nonlocal n
        for item in items:
            yield dumps_phee(item, pairs=pairs) + "\n"
            n += 1

    write_atomic(path, lines(), force=overwrite)
    return n
