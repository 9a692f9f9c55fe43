"""PHEE JSON lines: read and write :class:`~clinex.pv.types.SentenceEvents`.

One sentence per line::

    {"id": "10907391_3", "context": "...", "is_mult_event": false,
     "annotations": [{"events": [{"event_id": "E1", "event_type": "Adverse_event",
        "Trigger": {"text": [["occur"]], "start": [[40]], "entity_id": ["T5"]},
        "Treatment": {"text": [["paclitaxel"]], "start": [[66]], "entity_id": ["T3"],
                      "Drug": {"text": [["paclitaxel"]], "start": [[66]], "entity_id": ["T6"]}},
        "Effect": {...}, "Speculated": {"text": [["can"]], ..., "value": true}}]}]}

Every span node holds ``text`` and ``start``: one inner list per argument
instance, one item per discontinuous fragment, offsets in characters of
``context``; a fragment ends at ``start + len(text)`` (the format has no end
offsets). Fragments keep the corpus order, which is not always text order
(36 argument instances in train + dev list a later fragment first), and the fragment text is kept
as given (e.g. the truncated ``"mycophenolate mofeti"`` of sentence 18159131_4),
so that :func:`to_phee_dict` gives back the corpus line byte for byte.

Conventions of the reader:

* only ``annotations[0]`` is read (as in the authors' scripts); ``is_mult_event``
  is not read but recomputed on writing (several events, or a Combination);
* ``event_id`` and ``entity_id`` may be missing (predictions); the writer then
  numbers them (``E1``..., ``T1``... after the largest id in use);
* attributes with several cues become one :class:`~clinex.pv.types.Attribute`
  per cue, with the same value.

Provenance of predictions (clinex's additions, written only when set, so that gold
corpus lines round-trip unchanged): a sentence may carry ``model`` (the versioned
model id), ``offset`` (where a plain-text input's sentence starts in its file) and
``event_probability`` (the sentence-level event decision,
:mod:`clinex.pv.gate`); an event ``model`` (:attr:`Event.source`) and
``trigger_probability`` (:attr:`Event.score`); an attribute node ``source``, one
string per cue (``"model"`` or ``"rule:<id>"``).

References
----------
Sun et al., "PHEE: A Dataset for Pharmacovigilance Event Extraction from Text",
EMNLP 2022; data format of the released corpus (github.com/ZhaoyueSun/PHEE, data/json).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, Literal

from clinex.errors import (
    ClinexError,
    FormatError,
    OffsetError,
    SchemaError,
    report_to_stderr,
)
from clinex.io.textfile import iter_json_lines, parse_json, require_file
from clinex.pv.schema import (
    ATTRIBUTES,
    COMBINATION,
    MAIN_ROLES,
    SUB_ROLES,
    check_attribute,
    check_event_type,
    check_sub_role,
)
from clinex.pv.types import Argument, Attribute, Combination, Event, SentenceEvents
from clinex.text import Fragment, Span

__all__ = [
    "parse_phee_line",
    "parse_phee_dict",
    "iter_phee_json",
    "read_phee_json",
    "to_phee_dict",
    "dumps_phee",
    "write_phee_json",
]

_SPAN_KEYS = ("text", "start", "entity_id")
_EVENT_KEYS = ("event_id", "event_type", "Trigger") + MAIN_ROLES + ATTRIBUTES + ("model", "trigger_probability")


class _Ctx:
    """Where we are: file, line and the sentence text (for offset checks)."""

    __slots__ = ("path", "line", "text")

    def __init__(self, path: str | Path | None, line: int | None, text: str) -> None:
        self.path = path
        self.line = line
        self.text = text

    def fmt(self, message: str, field: str) -> FormatError:
        return FormatError(message, path=self.path, line=self.line, field=field)


# --------------------------------------------------------------------------- reading


def _spans(node: Any, field: str, ctx: _Ctx) -> list[tuple[Span, str | None]]:
    """The argument instances of one span node as (span, entity id) pairs."""
    if not isinstance(node, dict):
        raise ctx.fmt(f"expected an object with 'text' and 'start', got {type(node).__name__}", field)
    texts = node.get("text")
    starts = node.get("start")
    if not isinstance(texts, list) or not isinstance(starts, list):
        raise ctx.fmt("'text' and 'start' must be lists (one list per instance)", field)
    if len(texts) != len(starts):
        raise ctx.fmt(f"{len(texts)} 'text' instances but {len(starts)} 'start' instances", field)
    ids = node.get("entity_id")
    if ids is None:
        ids = [None] * len(texts)
    elif not isinstance(ids, list) or len(ids) != len(texts):
        raise ctx.fmt("'entity_id' must be a list with one id per instance", field)
    out: list[tuple[Span, str | None]] = []
    for i, (ftexts, fstarts, eid) in enumerate(zip(texts, starts, ids)):
        where = f"{field}.text[{i}]"
        if not isinstance(ftexts, list) or not isinstance(fstarts, list) or not ftexts:
            raise ctx.fmt("each instance must be a non-empty list of fragments", where)
        if len(ftexts) != len(fstarts):
            raise ctx.fmt(f"{len(ftexts)} fragment texts but {len(fstarts)} starts", where)
        if eid is not None and not isinstance(eid, str):
            raise ctx.fmt("entity ids must be strings", f"{field}.entity_id[{i}]")
        frags = []
        for j, (t, s) in enumerate(zip(ftexts, fstarts)):
            if not isinstance(t, str) or isinstance(s, bool) or not isinstance(s, int):
                raise ctx.fmt("a fragment needs a string text and an integer start", f"{where}[{j}]")
            end = s + len(t)
            if s < 0 or end > len(ctx.text) or ctx.text[s:end] != t:
                raise OffsetError(
                    f"fragment {s}-{end} does not match the context "
                    f"({len(ctx.text)} characters)",
                    path=ctx.path,
                    line=ctx.line,
                    field=f"{where}[{j}]",
                )
            frags.append(Fragment(start=s, end=end, text=t))
        out.append((Span(fragments=tuple(frags)), eid))
    return out


def _check_keys(node: dict, allowed: Iterable[str], field: str, ctx: _Ctx) -> None:
    allowed = tuple(allowed)
    for key in node:
        if key not in allowed:
            raise SchemaError(
                f"unknown key {key!r}; valid: {', '.join(allowed)}",
                path=ctx.path,
                line=ctx.line,
                field=field,
            )


def _combination(node: Any, field: str, ctx: _Ctx) -> Combination:
    if not isinstance(node, dict):
        raise ctx.fmt("a Combination must be an object", field)
    _check_keys(node, ("event_id", "event_type", "Trigger", "Drug"), field, ctx)
    etype = node.get("event_type", COMBINATION)
    if etype != COMBINATION:
        raise SchemaError(
            f"sub-event type {etype!r}; valid: {COMBINATION}",
            path=ctx.path,
            line=ctx.line,
            field=f"{field}.event_type",
        )
    trigger = trigger_id = None
    if "Trigger" in node:
        trig = _spans(node["Trigger"], f"{field}.Trigger", ctx)
        if len(trig) > 1:
            raise ctx.fmt("a trigger has exactly one instance", f"{field}.Trigger")
        if trig:
            trigger, trigger_id = trig[0]
    drugs = ()
    if "Drug" in node:
        drugs = tuple(
            Argument(role="Drug", span=s, entity_id=e)
            for s, e in _spans(node["Drug"], f"{field}.Drug", ctx)
        )
    return Combination(
        trigger=trigger, drugs=drugs, event_id=node.get("event_id"), trigger_id=trigger_id
    )


def _event(node: Any, field: str, ctx: _Ctx) -> Event:
    if not isinstance(node, dict):
        raise ctx.fmt("an event must be an object", field)
    _check_keys(node, _EVENT_KEYS, field, ctx)
    if "event_type" not in node:
        raise ctx.fmt("missing 'event_type'", field)
    if "Trigger" not in node:
        raise ctx.fmt("missing 'Trigger'", field)
    etype = node["event_type"]
    if not isinstance(etype, str):
        raise ctx.fmt("'event_type' must be a string", f"{field}.event_type")
    check_event_type(etype, path=ctx.path, line=ctx.line, field=f"{field}.event_type")
    event_id = node.get("event_id")
    if event_id is not None and not isinstance(event_id, str):
        raise ctx.fmt("'event_id' must be a string", f"{field}.event_id")
    trig = _spans(node["Trigger"], f"{field}.Trigger", ctx)
    if len(trig) != 1:
        raise ctx.fmt(f"a trigger has exactly one instance, got {len(trig)}", f"{field}.Trigger")
    trigger, trigger_id = trig[0]

    arguments: list[Argument] = []
    subs: dict[str, tuple[Argument, ...]] = {}
    combos: list[Combination] = []
    attributes: list[Attribute] = []
    for key, value in node.items():
        kf = f"{field}.{key}"
        if key in MAIN_ROLES:
            if not isinstance(value, dict):
                raise ctx.fmt("a main argument must be an object", kf)
            allowed = _SPAN_KEYS + SUB_ROLES.get(key, ()) + ((COMBINATION,) if key == "Treatment" else ())
            _check_keys(value, allowed, kf, ctx)
            arguments.extend(Argument(role=key, span=s, entity_id=e) for s, e in _spans(value, kf, ctx))
            sub_args: list[Argument] = []
            for sub, sub_node in value.items():
                if sub in _SPAN_KEYS:
                    continue
                if sub == COMBINATION:
                    if not isinstance(sub_node, list):
                        raise ctx.fmt("'Combination' must be a list of sub-events", f"{kf}.{sub}")
                    combos.extend(
                        _combination(c, f"{kf}.{sub}[{i}]", ctx) for i, c in enumerate(sub_node)
                    )
                    continue
                check_sub_role(key, sub, path=ctx.path, line=ctx.line, field=f"{kf}.{sub}")
                sub_args.extend(
                    Argument(role=sub, span=s, entity_id=e)
                    for s, e in _spans(sub_node, f"{kf}.{sub}", ctx)
                )
            if sub_args:
                subs[key] = tuple(sub_args)
        elif key in ATTRIBUTES:
            if not isinstance(value, dict):
                raise ctx.fmt("an attribute must be an object", kf)
            _check_keys(value, _SPAN_KEYS + ("value", "source"), kf, ctx)
            if "value" not in value:
                raise ctx.fmt("missing 'value'", kf)
            check_attribute(key, value["value"], path=ctx.path, line=ctx.line, field=f"{kf}.value")
            cues = _spans(value, kf, ctx)
            sources = value.get("source", [None] * max(1, len(cues)))
            if not isinstance(sources, list) or len(sources) != max(1, len(cues)) or any(
                x is not None and not isinstance(x, str) for x in sources
            ):
                raise ctx.fmt("'source' must be a list with one string per cue", f"{kf}.source")
            if not cues:
                attributes.append(Attribute(name=key, value=value["value"], source=sources[0]))
            attributes.extend(
                Attribute(name=key, value=value["value"], cue=s, entity_id=e, source=src)
                for (s, e), src in zip(cues, sources)
            )
    model = node.get("model")
    if model is not None and not isinstance(model, str):
        raise ctx.fmt("'model' must be a string", f"{field}.model")
    prob = node.get("trigger_probability")
    if prob is not None and (isinstance(prob, bool) or not isinstance(prob, int | float) or not 0 <= prob <= 1):
        raise ctx.fmt("'trigger_probability' must be a number in [0, 1]", f"{field}.trigger_probability")
    return Event(
        event_type=etype,
        trigger=trigger,
        arguments=tuple(arguments),
        sub_arguments=subs,
        combinations=tuple(combos),
        attributes=tuple(attributes),
        event_id=event_id,
        trigger_id=trigger_id,
        score=prob,
        source=model,
    )


def parse_phee_dict(
    obj: Any, *, path: str | Path | None = None, line_no: int | None = None
) -> SentenceEvents:
    """Build a :class:`SentenceEvents` from one decoded PHEE JSON object.

    Parameters
    ----------
    obj : dict
        The decoded line (``id``, ``context``, ``annotations``).
    path, line_no : optional
        File and 1-based line, used in error messages only.

    Returns
    -------
    SentenceEvents

    Raises
    ------
    FormatError
        Missing or mistyped keys.
    SchemaError
        Unknown event type, role, attribute or attribute value (valid names listed).
    OffsetError
        A fragment whose ``start`` and text do not match ``context``.
    """
    ctx = _Ctx(path, line_no, "")
    if not isinstance(obj, dict):
        raise ctx.fmt(f"expected a JSON object, got {type(obj).__name__}", "$")
    for key in ("id", "context"):
        if not isinstance(obj.get(key), str):
            raise ctx.fmt("missing or not a string", key)
    ctx.text = obj["context"]
    anns = obj.get("annotations", [])
    if not isinstance(anns, list):
        raise ctx.fmt("must be a list", "annotations")
    events: tuple[Event, ...] = ()
    if anns:
        first = anns[0]
        if not isinstance(first, dict) or not isinstance(first.get("events", []), list):
            raise ctx.fmt("must be an object with an 'events' list", "annotations[0]")
        events = tuple(
            _event(e, f"annotations[0].events[{i}]", ctx) for i, e in enumerate(first.get("events", []))
        )
    model = obj.get("model")
    if model is not None and not isinstance(model, str):
        raise ctx.fmt("must be a string", "model")
    prob = obj.get("event_probability")
    if prob is not None and (isinstance(prob, bool) or not isinstance(prob, int | float) or not 0 <= prob <= 1):
        raise ctx.fmt("must be a number in [0, 1]", "event_probability")
    offset = obj.get("offset")
    if offset is not None and (isinstance(offset, bool) or not isinstance(offset, int) or offset < 0):
        raise ctx.fmt("must be a whole number >= 0", "offset")
    return SentenceEvents(
        id=obj["id"], text=obj["context"], events=events, model=model, event_probability=prob, offset=offset
    )


def parse_phee_line(
    line: str, *, path: str | Path | None = None, line_no: int | None = None
) -> SentenceEvents:
    """Parse one PHEE JSON line.

    Parameters
    ----------
    line : str
        One line of a PHEE ``*.json`` file.
    path, line_no : optional
        File and 1-based line number, named in error messages.

    Returns
    -------
    SentenceEvents

    Raises
    ------
    FormatError
        Not JSON, or not the PHEE structure (message names ``file:line`` and field).
    SchemaError, OffsetError
        See :func:`parse_phee_dict`.

    Examples
    --------
    >>> item = parse_phee_line('{"id": "s1", "context": "Rash on drug.", "annotations": '
    ...     '[{"events": [{"event_type": "Adverse_event", "Trigger": {"text": [["on"]], '
    ...     '"start": [[5]]}}]}]}')
    >>> item.events[0].trigger.text
    'on'
    """
    obj = parse_json(line, path=path, line=line_no)
    return parse_phee_dict(obj, path=path, line_no=line_no)


def iter_phee_json(
    path: str | Path,
    errors: Literal["raise", "skip"] = "raise",
    *,
    on_error: Callable[[ClinexError], None] | None = None,
) -> Iterator[SentenceEvents]:
    """Yield the sentences of a PHEE JSON lines file, one per non-blank line.

    Parameters
    ----------
    path : str or Path
        The ``.json`` (JSON lines) file, UTF-8.
    errors : {"raise", "skip"}, default "raise"
        ``"raise"``: stop at the first bad line. ``"skip"``: report the bad line
        (``on_error``) and go on with the next one.
    on_error : callable, optional
        Called with each error in ``"skip"`` mode; default prints
        ``[CLXnnn] file:line: ...`` to stderr.

    Yields
    ------
    SentenceEvents

    Raises
    ------
    InputError
        The file does not exist (always raised).
    EncodingError
        A line that is not UTF-8 or holds NUL bytes (binary file).
    FormatError, SchemaError, OffsetError
        A bad line (``errors="raise"``).
    """
    if errors not in ("raise", "skip"):
        raise ValueError(f"errors must be 'raise' or 'skip', got {errors!r}")
    p = require_file(path)
    report = on_error or report_to_stderr
    for n, obj in iter_json_lines(p.read_bytes(), path=p):
        try:
            if isinstance(obj, ClinexError):
                raise obj
            item = parse_phee_dict(obj, path=p, line_no=n)
        except ClinexError as exc:
            if errors == "raise":
                raise
            report(exc)
            continue
        yield item


def read_phee_json(path: str | Path) -> list[SentenceEvents]:
    """Read a whole PHEE JSON lines file; the first bad line raises.

    Parameters
    ----------
    path : str or Path

    Returns
    -------
    list of SentenceEvents
        In file order.

    Raises
    ------
    InputError, EncodingError, FormatError, SchemaError, OffsetError
        See :func:`iter_phee_json`; messages name ``file:line``.
    """
    return list(iter_phee_json(path, errors="raise"))


# --------------------------------------------------------------------------- writing


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


def _grouped(args: Iterable[Argument]) -> dict[str, list[Argument]]:
    groups: dict[str, list[Argument]] = {}
    for a in args:
        groups.setdefault(a.role, []).append(a)
    return groups


def _event_dict(ev: Event, ids: _Ids) -> dict[str, Any]:
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
        node = _node(((a.span, a.entity_id) for a in mains.get(role, ())), ids)
        for sub, args in _grouped(ev.sub_arguments.get(role, ())).items():
            node[sub] = _node(((a.span, a.entity_id) for a in args), ids)
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


def to_phee_dict(item: SentenceEvents) -> dict[str, Any]:
    """The PHEE JSON object of one sentence (inverse of :func:`parse_phee_dict`).

    Keys come in the corpus order: ``id``, ``context``, ``is_mult_event``,
    ``annotations``; in an event ``event_id``, ``event_type``, ``Trigger``, the main
    arguments in the order of ``event.arguments``, then the attributes in the order
    of ``event.attributes``; sub-arguments in the order of ``event.sub_arguments``,
    then ``Combination``. Missing ids are numbered (see module notes).

    Parameters
    ----------
    item : SentenceEvents

    Returns
    -------
    dict
        ``json.dumps`` of it reproduces a corpus line exactly for corpus input.
    """
    ids = _Ids(item)
    events = [_event_dict(ev, ids) for ev in item.events]
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
    return out


def dumps_phee(item: SentenceEvents) -> str:
    """One PHEE JSON line (no newline), formatted as the corpus files are."""
    return json.dumps(to_phee_dict(item))


def write_phee_json(
    items: Iterable[SentenceEvents], path: str | Path, *, overwrite: bool = True
) -> int:
    """Write sentences as PHEE JSON lines (atomically: temp file, then rename).

    Parameters
    ----------
    items : iterable of SentenceEvents
    path : str or Path
        Output file; parent folders are created.
    overwrite : bool, default True
        If False and ``path`` exists, raise instead of replacing it.

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
            yield dumps_phee(item) + "\n"
            n += 1

    write_atomic(path, lines(), force=overwrite)
    return n
