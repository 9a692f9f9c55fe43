"""PHEE brat standoff: read and write :class:`~clinex.pv.types.SentenceEvents`.

A sentence is ``ID.txt`` (the text) and ``ID.ann`` (tab-separated lines)::

    T3	Treatment 66 76	paclitaxel
    T6	Drug 66 76	paclitaxel
    T14	Effect 12 20;31 40	rash and swelling
    T5	Adverse_event 40 45	occur
    E1	Adverse_event:T5 arg:T3
    E2	Combination:T15 arg:T13 arg2:T14
    A1	Severity E1 High
    R1	has Arg1:T3 Arg2:T6
    R2	has_cue Arg1:E1 Arg2:T7
    R3	has_child Arg1:E1 Arg2:E2

Offsets are characters, half-open, ``start end`` pairs joined by ``;`` for
discontinuous spans (kept in the file's order); the text column is the fragments
joined by one space.

PHEE leaves most links implicit. The reader resolves them with the rules of the
authors' brat-to-JSON converter, so that ``brat/<split>`` and ``json/<split>.json``
give the same events:

* a main argument (``Subject``, ``Treatment``, ``Effect``) belongs to every event
  whose E line lists it; an unlisted one to the only event whose E line lists no
  argument, if there is exactly one such event;
* a sub-argument belongs to the main argument named by ``R has``; otherwise to the
  first main argument of its kind (file order) that it overlaps (a fragment's start
  or end falls inside one of the main's fragments); otherwise to the only main
  argument of its kind. ``Treat-Disorder`` is ``Treatment.Disorder`` and
  ``Sub-Disorder`` is ``Subject.Disorder``. A ``Drug`` named by
  ``R has Arg1:<Combination event> Arg2:<Drug>`` belongs to no main argument (it is
  that combination's drug only; the writer's way to keep a combination drug that is
  no ``Treatment.Drug``; PHEE's own files have no such line);
* a Combination event belongs to the event named by ``R has_child``, otherwise to
  the only ADE/PTE event;
* a cue belongs to the event named by ``R has_cue``; otherwise to the only event
  carrying an A line of its attribute; if no event carries one, to the only ADE/PTE
  event. The value comes from the event's A line, else ``True`` / ``True`` /
  ``"Medium"`` (:data:`clinex.pv.schema.DEFAULT_ATTRIBUTE_VALUE`). clinex's causality
  attributes are cues too (``Dechallenge_cue``, ``Rechallenge_cue``; ``A3 Dechallenge E1``),
  linked and read back the same way.

Provenance of predictions goes into brat's annotator notes, one ``#`` line per
event (written only when set; read back)::

    #1	AnnotatorNotes E1	model=clinex.pv.crf.v1; trigger_probability=0.9312; event_probability=0.97; Negated@20-23=rule:negation.not

and, for predictions, one per Drug T line the drug gazetteer knows (its canonical name
and DrugBank id, :func:`clinex.pv.normalise.drug_entry`; derived from the text, so the
reader ignores it and the writer computes it again)::

    #2	AnnotatorNotes T6	Acetaminophen (DrugBank DB00316)

``model`` and ``trigger_probability`` are :attr:`Event.source` and
:attr:`Event.score`, ``event_probability`` the sentence's
(:attr:`SentenceEvents.event_probability`), and ``<Attribute>@<start>-<end>`` the
:attr:`Attribute.source` of the cue at those offsets (``model`` or ``rule:<id>``).

A T line no rule puts into an event is dropped, as the converter drops it, and reported
by file and line (``on_warning``, default a WARNING on ``clinex.pv.formats.brat``; PHEE's
own files have none). A trigger-labelled T line that no E line uses (files of tools that
write text-bound annotations only) is read as an event that lists no argument, so the
rules above give it its arguments; the writer then gives it an E line. Other relation
types (``is_a`` ...) are ignored. The text's trailing whitespace is dropped, as the
converter does.

Offsets are read as characters (brat's own unit). When some span does not fit the text
so, but every span fits read as UTF-8 byte offsets, or else as UTF-16 code units (what
some exporters count), they are converted to characters and a notice names the file and
the unit; otherwise the first line that does not fit is an :class:`OffsetError`.

The writer makes every link explicit (all main arguments on the E line, ``has``,
``has_child``, ``has_cue`` and A lines), so what it writes reads back to the same
events (up to the order of arguments shared by several events). Within an event, a
combination drug with the span of a ``Treatment.Drug`` reuses that T line (as
PHEE's files do); any other combination drug gets its own T line, claimed by
``R has Arg1:<Combination event> Arg2:<Drug>`` so that the overlap rule does not
make it a ``Treatment.Drug`` too. brat cannot express a sub-argument without a main
argument of its kind in its event, nor a Combination without a trigger: those are
left out and reported (``on_warning``, default a WARNING on ``clinex.pv.formats.brat``).
An attribute without a cue or with value ``False`` is left out and logged at INFO.

References
----------
Stenetorp P. et al., "brat: a Web-based Tool for NLP-Assisted Text Annotation",
EACL 2012 (standoff format). Sun Z. et al., "PHEE", EMNLP 2022; converter
``preprocess/transfer_to_json.py`` in github.com/ZhaoyueSun/PHEE (linking rules).
"""

from __future__ import annotations

import bisect
import itertools
import logging
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from clinex.errors import ClinexError, FormatError, InputError, OffsetError, SchemaError, report_to_stderr
from clinex.io.textfile import read_text
from clinex.pv.schema import (
    COMBINATION,
    DEFAULT_ATTRIBUTE_VALUE,
    EVENT_TYPES,
    MAIN_ROLES,
    SUB_ROLES,
    check_attribute,
    check_main_role,
    check_sub_role,
)
from clinex.pv.types import Argument, Attribute, Combination, Event, SentenceEvents
from clinex.text import Fragment, Span

__all__ = [
    "SUB_LABELS",
    "CUE_LABELS",
    "read_brat",
    "iter_brat_dir",
    "read_brat_dir",
    "to_ann",
    "write_brat",
]

logger = logging.getLogger(__name__)

#: brat entity label of a sub-argument -> (main role, sub role).
SUB_LABELS: dict[str, tuple[str, str]] = {
    ("Sub-Disorder" if (main, sub) == ("Subject", "Disorder") else
     "Treat-Disorder" if (main, sub) == ("Treatment", "Disorder") else sub): (main, sub)
    for main, subs in SUB_ROLES.items()
    for sub in subs
}
_SUB_LABEL_OF = {v: k for k, v in SUB_LABELS.items()}

#: brat cue label -> attribute name.
CUE_LABELS: dict[str, str] = {
    "Speculation_cue": "Speculated",
    "Negation_cue": "Negated",
    "Severity_cue": "Severity",
    "Dechallenge_cue": "Dechallenge",  # clinex's causality attributes (clinex.pv.challenge)
    "Rechallenge_cue": "Rechallenge",
}
_CUE_LABEL_OF = {v: k for k, v in CUE_LABELS.items()}

_TRIGGER_LABELS = EVENT_TYPES + (COMBINATION,)
_ENTITY_LABELS = MAIN_ROLES + tuple(SUB_LABELS) + tuple(CUE_LABELS) + _TRIGGER_LABELS
_OFFSETS = re.compile(r"\d+ \d+(?:;\d+ \d+)*")
#: An offset with more digits (leading zeros aside) lies past any text clinex reads.
_MAX_OFFSET_DIGITS = 18


@dataclass
class _Ent:
    id: str
    label: str
    span: Span
    line: int


@dataclass
class _Raw:
    """A T line before its offsets are read: label, (start, end) pairs, the offsets
    column as written, the text column, the line number."""

    label: str
    pairs: tuple[tuple[int, int], ...]
    offsets: str
    text: str
    line: int


@dataclass
class _Ev:
    id: str
    type: str
    trigger: str
    args: list[str]
    line: int
    listed: bool = True  # False: a trigger T line without an E line (its id is the T id)


@dataclass
class _Ann:
    path: Path
    text: str
    ents: dict[str, _Ent] = field(default_factory=dict)
    raw: dict[str, _Raw] = field(default_factory=dict)  # T lines until their offsets are read
    events: dict[str, _Ev] = field(default_factory=dict)
    attrs: list[tuple[str, str, bool | str, int]] = field(default_factory=list)  # name, target, value, line
    rels: list[tuple[str, str, str, int]] = field(default_factory=list)  # type, arg1, arg2, line
    notes: dict[str, dict[str, str]] = field(default_factory=dict)  # E id -> provenance key -> value


# --------------------------------------------------------------------------- parsing


def _parse_note(cols: list[str], ann: _Ann) -> None:
    """Keep the provenance pairs of an ``AnnotatorNotes E<n>`` line; other notes (a drug's
    gazetteer entry on its T line, derived from the text) are ignored."""
    if len(cols) < 3 or not cols[1].startswith("AnnotatorNotes "):
        return
    target = cols[1].split(" ", 1)[1].strip()
    if not target.startswith("E"):
        return
    pairs = {}
    for part in cols[2].split("; "):
        key, eq, value = part.partition("=")
        if eq:
            pairs[key.strip()] = value.strip()
    ann.notes.setdefault(target, {}).update(pairs)


def _probability(value: str | None) -> float | None:
    try:
        p = float(value) if value is not None else None
    except ValueError:
        return None
    return p if p is not None and 0.0 <= p <= 1.0 else None


def _parse_entity(cols: list[str], ann: _Ann, n: int) -> None:
    """Check a T line's label and offsets' form; the offsets are read into spans once the
    whole file is parsed (:func:`_resolve_entities`: their unit is decided per file)."""
    tid = cols[0]
    if len(cols) < 3:
        raise FormatError("a T line needs 3 tab-separated columns", path=ann.path, line=n)
    label, _, offsets = cols[1].partition(" ")
    if label not in _ENTITY_LABELS:
        raise SchemaError(
            f"unknown entity label {label!r}; valid: {', '.join(_ENTITY_LABELS)}",
            path=ann.path, line=n,
        )
    if not _OFFSETS.fullmatch(offsets):
        raise FormatError(f"bad offsets {offsets!r}, expected 'start end[;start end...]'",
                          path=ann.path, line=n)
    pairs = []
    for pair in offsets.split(";"):
        numbers = [x.lstrip("0") or "0" for x in pair.split(" ")]  # int() counts leading zeros
        for x in numbers:
            if len(x) > _MAX_OFFSET_DIGITS:  # int() of thousands of digits raises
                raise OffsetError(
                    f"offset of {len(x)} digits falls outside a text of {len(ann.text)} characters",
                    path=ann.path, line=n,
                )
        start, end = int(numbers[0]), int(numbers[1])
        if end < start:
            raise OffsetError(f"offsets {start}-{end}: end before start", path=ann.path, line=n)
        pairs.append((start, end))
    if tid in ann.raw or tid in ann.ents:
        raise FormatError(f"duplicate id {tid}", path=ann.path, line=n)
    ann.raw[tid] = _Raw(label, tuple(pairs), offsets, cols[2], n)


class _Units:
    """Character offsets of a text counted in another unit (UTF-8 bytes, UTF-16 code
    units): ``char(o)`` is the character index at unit offset ``o``, or None when ``o``
    falls inside a character or past the end."""

    def __init__(self, text: str, unit: str) -> None:
        if unit == "UTF-8 bytes":
            sizes = (1 if c < "\x80" else 2 if c < "\u0800" else 3 if c < "\U00010000" else 4 for c in text)
        else:
            sizes = (1 if c < "\U00010000" else 2 for c in text)
        self.bounds = [0, *itertools.accumulate(sizes)]  # unit offset of each character boundary

    def char(self, o: int) -> int | None:
        i = bisect.bisect_left(self.bounds, o)
        return i if i < len(self.bounds) and self.bounds[i] == o else None


def _read_spans(ann: _Ann, units: _Units | None) -> dict[str, Span] | tuple[int, OffsetError]:
    """Every T line's span under one reading of the offsets (``units`` None: characters),
    or the line number and error of the first line that does not fit the text."""
    text, spans = ann.text, {}
    for tid, raw in ann.raw.items():
        frags = []
        for start, end in raw.pairs:
            s, e = (start, end) if units is None else (units.char(start), units.char(end))
            if s is None or e is None or e > len(text):
                return raw.line, OffsetError(
                    f"offsets {start}-{end} fall outside a text of {len(text)} characters",
                    path=ann.path, line=raw.line,
                )
            frags.append(Fragment(start=s, end=e, text=text[s:e]))
        span = Span(fragments=tuple(frags))
        if span.text != raw.text:
            return raw.line, OffsetError(
                f"annotation text does not match the text at offsets {raw.offsets}", path=ann.path, line=raw.line
            )
        spans[tid] = span
    return spans


def _resolve_entities(ann: _Ann, warn: Callable[[str], None]) -> None:
    """Read the T lines' offsets as characters (brat's unit); if some span does not fit
    the text so, but every span fits when the offsets are read as UTF-8 bytes or as
    UTF-16 code units (what some exporters write), convert them and say so.

    Raises
    ------
    OffsetError
        No reading fits every span: the character reading's first bad line.
    """
    spans = _read_spans(ann, None)
    if isinstance(spans, tuple) and not ann.text.isascii():
        for unit in ("UTF-8 bytes", "UTF-16 code units"):
            other = _read_spans(ann, _Units(ann.text, unit))
            if not isinstance(other, tuple):
                warn(f"{ann.path}: offsets are {unit}, not characters; converted to character offsets")
                spans = other
                break
    if isinstance(spans, tuple):
        raise spans[1]
    for tid, raw in ann.raw.items():
        ann.ents[tid] = _Ent(tid, raw.label, spans[tid], raw.line)


def _parse_event(cols: list[str], ann: _Ann, n: int) -> None:
    items = cols[1].split() if len(cols) > 1 else []
    if not items or ":" not in items[0]:
        raise FormatError("an E line needs 'Type:Trigger [Role:Id ...]'", path=ann.path, line=n)
    etype, trigger = items[0].split(":", 1)
    if etype not in _TRIGGER_LABELS:
        raise SchemaError(f"unknown event type {etype!r}; valid: {', '.join(_TRIGGER_LABELS)}",
                          path=ann.path, line=n)
    args = []
    for item in items[1:]:
        role, sep, aid = item.partition(":")
        if not sep or not aid:
            raise FormatError(f"bad event argument {item!r}, expected Role:Id", path=ann.path, line=n)
        args.append(aid)
    if cols[0] in ann.events:
        raise FormatError(f"duplicate id {cols[0]}", path=ann.path, line=n)
    ann.events[cols[0]] = _Ev(cols[0], etype, trigger, args, n)


def _parse_attribute(cols: list[str], ann: _Ann, n: int) -> None:
    items = cols[1].split() if len(cols) > 1 else []
    if len(items) not in (2, 3):
        raise FormatError("an A line needs 'Name Target [Value]'", path=ann.path, line=n)
    name, target = items[0], items[1]
    value: bool | str = items[2] if len(items) == 3 else True
    check_attribute(name, value, path=ann.path, line=n)
    ann.attrs.append((name, target, value, n))


def _parse_relation(cols: list[str], ann: _Ann, n: int) -> None:
    items = cols[1].split() if len(cols) > 1 else []
    if len(items) != 3 or not items[1].startswith("Arg1:") or not items[2].startswith("Arg2:"):
        raise FormatError("an R line needs 'Type Arg1:Id Arg2:Id'", path=ann.path, line=n)
    ann.rels.append((items[0], items[1][5:], items[2][5:], n))


def _parse(text: str, ann_text: str, path: Path, warn: Callable[[str], None]) -> _Ann:
    ann = _Ann(path=path, text=text)
    for n, line in enumerate(ann_text.split("\n"), start=1):
        line = line.rstrip("\r")
        if not line.strip():
            continue
        cols = line.split("\t")
        kind = cols[0][:1]
        if kind == "T":
            _parse_entity(cols, ann, n)
        elif kind == "E":
            _parse_event(cols, ann, n)
        elif kind == "A" or kind == "M":
            _parse_attribute(cols, ann, n)
        elif kind == "R":
            _parse_relation(cols, ann, n)
        elif kind == "#":
            _parse_note(cols, ann)
        else:
            raise FormatError(f"unknown annotation line type {cols[0]!r}", path=path, line=n)
    # references must resolve
    for ev in ann.events.values():
        for ref in [ev.trigger, *ev.args]:
            if ref not in ann.raw:
                raise FormatError(f"{ev.id} refers to unknown id {ref}", path=path, line=ev.line)
    _resolve_entities(ann, warn)
    _add_triggers_without_events(ann)
    return ann


def _add_triggers_without_events(ann: _Ann) -> None:
    """A trigger-labelled T line that no E line uses is still an event trigger (brat
    shows it so; exporters that write text-bound annotations only leave out E lines):
    it becomes an event with no listed argument, keyed by its T id (so that ``R`` and
    ``A`` lines naming the T id reach it), linked by the same rules as an E line that
    lists no argument; a Combination trigger's drugs are then the Drugs of its event's
    Treatment that holds the trigger. PHEE's own files have none (every trigger has its
    E line)."""
    used = {ev.trigger for ev in ann.events.values()} | {a for ev in ann.events.values() for a in ev.args}
    for ent in list(ann.ents.values()):
        if ent.label in _TRIGGER_LABELS and ent.id not in used and ent.id not in ann.events:
            logger.info("%s:%d: %s (%s) has no E line; read as an event", ann.path, ent.line, ent.id, ent.label)
            ann.events[ent.id] = _Ev(ent.id, ent.label, ent.id, [], ent.line, listed=False)


# --------------------------------------------------------------------------- linking


def _overlaps(sub: Span, main: Span) -> bool:
    """The converter's test: a fragment of ``sub`` starts or ends inside one of ``main``."""
    return any(
        (m.start <= s.start < m.end) or (m.start < s.end <= m.end)
        for s in sub.fragments
        for m in main.fragments
    )


def _link(ann: _Ann, warn: Callable[[str], None]) -> list[Event]:
    path = ann.path
    ents, events = ann.ents, ann.events
    # a Combination trigger without an E line (no drugs listed) is not a candidate
    argless = [e.id for e in events.values() if not e.args and (e.listed or e.type != COMBINATION)]
    default = argless[0] if len(argless) == 1 else None

    sub_to_main: dict[str, str] = {}
    child_to_parent: dict[str, str] = {}
    cue_to_event: dict[str, str] = {}
    combination_only: set[str] = set()  # drugs claimed by `R has Arg1:<Combination event>`
    for rtype, a1, a2, _line in ann.rels:
        if rtype == "has" and a1 in events and events[a1].type == COMBINATION:
            combination_only.add(a2)
        elif rtype == "has":
            sub_to_main[a2] = a1
        elif rtype == "has_child":
            child_to_parent[a2] = a1
        elif rtype == "has_cue":
            cue_to_event[a2] = a1

    main_to_events: dict[str, list[str]] = {}
    for ev in events.values():
        for aid in ev.args:
            main_to_events.setdefault(aid, []).append(ev.id)

    parents = [e.id for e in events.values() if e.type in EVENT_TYPES]
    for ev in events.values():
        if ev.type == COMBINATION and ev.id not in child_to_parent:
            if len(parents) == 1:
                child_to_parent[ev.id] = parents[0]

    for ent in ents.values():
        if ent.label in MAIN_ROLES and ent.id not in main_to_events:
            if default is not None:
                main_to_events[ent.id] = [default]
        elif ent.label in SUB_LABELS and ent.id not in sub_to_main and ent.id not in combination_only:
            main_label = SUB_LABELS[ent.label][0]
            candidates = []
            for other in ents.values():
                if other.label == main_label:
                    candidates.append(other.id)
                    if _overlaps(ent.span, other.span):
                        sub_to_main[ent.id] = other.id
                        break
            else:
                if len(candidates) == 1:
                    sub_to_main[ent.id] = candidates[0]
        elif ent.label in CUE_LABELS and ent.id not in cue_to_event:
            name = CUE_LABELS[ent.label]
            carriers = [target for a, target, _, _ in ann.attrs if a == name]
            if len(carriers) == 1:
                cue_to_event[ent.id] = carriers[0]
            elif not carriers and len(parents) == 1:
                cue_to_event[ent.id] = parents[0]

    out = []
    for ev in events.values():
        if ev.type not in EVENT_TYPES:
            continue
        arguments: list[Argument] = []
        subs: dict[str, list[Argument]] = {}
        for mid, evs in main_to_events.items():
            if ev.id not in evs:
                continue
            main = ents[mid]
            if main.label not in MAIN_ROLES:
                raise SchemaError(
                    f"{ev.id} lists {mid} ({main.label}) as an argument; "
                    f"valid: {', '.join(MAIN_ROLES)}",
                    path=path, line=ev.line,
                )
            arguments.append(Argument(role=main.label, span=main.span, entity_id=mid))
            for sid, m in sub_to_main.items():
                if m != mid:
                    continue
                if sid not in ents:
                    raise FormatError(f"relation refers to unknown id {sid}", path=path)
                sub = ents[sid]
                main_role, sub_role = SUB_LABELS.get(sub.label, (main.label, sub.label))
                check_sub_role(main.label, sub_role, path=path, line=sub.line)
                if main_role != main.label:
                    raise SchemaError(
                        f"{sid} ({sub.label}) is linked to {mid} ({main.label})", path=path, line=sub.line
                    )
                subs.setdefault(main.label, []).append(Argument(role=sub_role, span=sub.span, entity_id=sid))
        combos = []
        for cid, pid in child_to_parent.items():
            if pid != ev.id:
                continue
            child = events.get(cid)
            if child is None or child.type != COMBINATION:
                raise FormatError(f"has_child links {ev.id} to {cid}, not a Combination event", path=path)
            drugs = tuple(Argument(role="Drug", span=ents[a].span, entity_id=a) for a in child.args)
            if not child.listed:
                # no E line names its drugs: they are the Drugs of the event's Treatment that
                # holds the trigger ("aspirin and warfarin"), as in every PHEE combination
                trig = ents[child.trigger].span
                holders = {a.entity_id for a in arguments if a.role == "Treatment" and _overlaps(trig, a.span)}
                drugs = tuple(a for a in subs.get("Treatment", ())
                              if a.role == "Drug" and sub_to_main.get(a.entity_id or "") in holders)
            combos.append(Combination(
                trigger=ents[child.trigger].span,
                trigger_id=child.trigger,
                event_id=cid if child.listed else None,
                drugs=drugs,
            ))
        attributes = []
        for cue_id, eid in cue_to_event.items():
            if eid != ev.id:
                continue
            cue = ents.get(cue_id)
            if cue is None or cue.label not in CUE_LABELS:
                raise FormatError(f"has_cue links {ev.id} to {cue_id}, not a cue", path=path)
            name = CUE_LABELS[cue.label]
            value = DEFAULT_ATTRIBUTE_VALUE[name]
            for a, target, v, _ in ann.attrs:
                if a == name and target == ev.id:
                    value = v
            note = ann.notes.get(ev.id, {})
            source = note.get(f"{name}@{cue.span.start}-{cue.span.end}")
            attributes.append(Attribute(name=name, value=value, cue=cue.span, entity_id=cue_id, source=source))
        note = ann.notes.get(ev.id, {})
        out.append(Event(
            event_type=ev.type,
            trigger=ents[ev.trigger].span,
            trigger_id=ev.trigger,
            event_id=ev.id if ev.listed else None,
            arguments=tuple(arguments),
            sub_arguments={k: tuple(v) for k, v in subs.items()},
            combinations=tuple(combos),
            attributes=tuple(attributes),
            score=_probability(note.get("trigger_probability")),
            source=note.get("model"),
        ))
    _report_dropped(ann, out, warn)
    return out


def _report_dropped(ann: _Ann, events: list[Event], warn: Callable[[str], None]) -> None:
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


# --------------------------------------------------------------------------- reading


def _log_warning(message: str) -> None:
    logger.warning("%s", message)


def read_brat(
    txt_path: str | Path,
    ann_path: str | Path | None = None,
    *,
    on_warning: Callable[[str], None] | None = None,
) -> SentenceEvents:
    """Read one PHEE brat sentence.

    Parameters
    ----------
    txt_path : str or Path
        ``ID.txt``; the sentence id is the file stem.
    ann_path : str or Path, optional
        ``ID.ann``; default: next to ``txt_path``.
    on_warning : callable, optional
        Called with each message about what was read differently from the file's
        lines: a T line linked to no event (``"s1.ann:4: T3 (Effect) is linked to no
        event; not read"``), or offsets found to be UTF-8 bytes or UTF-16 code units
        and converted (``"s1.ann: offsets are UTF-8 bytes, not characters; converted
        to character offsets"``). Default: a WARNING on ``clinex.pv.formats.brat``.

    Returns
    -------
    SentenceEvents
        Events in E-line order, linked as described in the module notes.

    Raises
    ------
    InputError
        A file is missing.
    EncodingError
        A file is not UTF-8 text.
    FormatError
        A malformed line or a dangling id (names ``file:line``).
    OffsetError
        Offsets outside the text, or a text column that does not match them.
    SchemaError
        An unknown label, event type, attribute or value.
    """
    txt = Path(txt_path)
    ann = Path(ann_path) if ann_path is not None else txt.with_suffix(".ann")
    text = read_text(txt).rstrip()
    warn = on_warning if on_warning is not None else _log_warning
    parsed = _parse(text, read_text(ann), ann, warn)
    models = {n["model"] for n in parsed.notes.values() if "model" in n}
    probs = {n["event_probability"] for n in parsed.notes.values() if "event_probability" in n}
    return SentenceEvents(
        id=txt.stem,
        text=text,
        events=tuple(_link(parsed, warn)),
        model=models.pop() if len(models) == 1 else None,
        event_probability=_probability(probs.pop()) if len(probs) == 1 else None,
    )


def iter_brat_dir(
    directory: str | Path,
    errors: Literal["raise", "skip"] = "raise",
    *,
    on_error: Callable[[ClinexError], None] | None = None,
    on_warning: Callable[[str], None] | None = None,
) -> Iterator[SentenceEvents]:
    """Yield every ``*.txt`` + ``*.ann`` pair of a folder, sorted by file name.

    Parameters
    ----------
    directory : str or Path
    errors : {"raise", "skip"}, default "raise"
        ``"skip"`` reports a bad sentence (``on_error``, default stderr) and goes on.
    on_warning : callable, optional
        As in :func:`read_brat`.

    Raises
    ------
    InputError
        ``directory`` is not a folder.
    """
    d = Path(directory)
    if not d.is_dir():
        raise InputError("not a folder", path=d)
    report = on_error or report_to_stderr
    for txt in sorted(d.glob("*.txt")):
        try:
            item = read_brat(txt, on_warning=on_warning)
        except ClinexError as exc:
            if errors == "raise":
                raise
            report(exc)
            continue
        yield item


def read_brat_dir(directory: str | Path) -> list[SentenceEvents]:
    """All sentences of a brat folder (sorted by file name); the first bad file raises.

    See :func:`read_brat` for the errors.
    """
    return list(iter_brat_dir(directory))


# --------------------------------------------------------------------------- writing


def _where(span: Span) -> str:
    """``'text' 16-23`` (fragments joined by ``,``) for a warning."""
    return f"'{span.text}' " + ",".join(f"{s}-{e}" for s, e in span.offsets())


class _Writer:
    def __init__(self, item: SentenceEvents) -> None:
        self.item = item
        self.lines: list[str] = []
        self.lost: list[str] = []  # what brat cannot express, for the warning
        self.sub_ids: set[str] = set()  # T ids written as Arg2 of `R has <main>`
        self.combo_drugs: list[tuple[str, str]] = []  # (combination E id, drug T id)
        self.t_lines: list[str] = []
        self.notes: list[str] = []
        self.known: dict[str, tuple[str, tuple[tuple[int, int], ...]]] = {}
        self.used_e: set[str] = set()
        self.n = {"T": 0, "E": 0, "A": 0, "R": 0}
        taken = []
        for ev in item.events:
            taken += [ev.event_id, ev.trigger_id] + [c.event_id for c in ev.combinations]
            taken += [c.trigger_id for c in ev.combinations]
            taken += [a.entity_id for a in ev.arguments] + [a.entity_id for a in ev.attributes]
            taken += [a.entity_id for v in ev.sub_arguments.values() for a in v]
            taken += [d.entity_id for c in ev.combinations for d in c.drugs]
        for t in taken:
            m = re.fullmatch(r"([TE])(\d{1,18})", t or "")  # a longer number cannot collide with a new id
            if m:
                self.n[m.group(1)] = max(self.n[m.group(1)], int(m.group(2)))

    def new(self, kind: str) -> str:
        self.n[kind] += 1
        return f"{kind}{self.n[kind]}"

    def entity(self, label: str, span: Span, given: str | None) -> str:
        key = (label, tuple(span.offsets()))
        if given is not None and re.fullmatch(r"T\d+", given):
            if self.known.get(given) == key:
                return given
            if given not in self.known:
                self.known[given] = key
                self._t_line(given, label, span)
                return given
        tid = self.new("T")
        self.known[tid] = key
        self._t_line(tid, label, span)
        return tid

    def _t_line(self, tid: str, label: str, span: Span) -> None:
        offsets = ";".join(f"{s} {e}" for s, e in span.offsets())
        self.t_lines.append(f"{tid}\t{label} {offsets}\t{span.text}")

    def event_id(self, given: str | None) -> str:
        eid = given if given is not None and re.fullmatch(r"E\d+", given) and given not in self.used_e else None
        eid = eid or self.new("E")
        self.used_e.add(eid)
        return eid

    def write(self) -> str:
        item = self.item
        for ev in item.events:
            trig = self.entity(ev.event_type, ev.trigger, ev.trigger_id)
            eid = self.event_id(ev.event_id)
            main_ids = [self.entity(a.role, a.span, a.entity_id) for a in ev.arguments]
            args = " ".join(f"{'arg' if i == 0 else f'arg{i + 1}'}:{t}" for i, t in enumerate(main_ids))
            self.lines.append(f"{eid}\t{ev.event_type}:{trig}" + (f" {args}" if args else ""))
            first_main = {}
            for a, t in zip(ev.arguments, main_ids):
                first_main.setdefault(a.role, t)
            drug_ids = self._sub_arguments(ev, eid, first_main)
            for c in ev.combinations:
                if c.trigger is None:
                    drugs_text = ", ".join(_where(d.span) for d in c.drugs)
                    self.lost.append(f"Combination without a trigger (event {eid}; drugs {drugs_text or 'none'})")
                    continue
                ct = self.entity(COMBINATION, c.trigger, c.trigger_id)
                cid = self.event_id(c.event_id)
                drugs = [self._combination_drug(d, drug_ids) for d in c.drugs]
                self.combo_drugs += [(cid, t) for t in drugs]
                dargs = " ".join(f"{'arg' if i == 0 else f'arg{i + 1}'}:{t}" for i, t in enumerate(drugs))
                self.lines.append(f"{cid}\t{COMBINATION}:{ct}" + (f" {dargs}" if dargs else ""))
                self.lines.append(f"{self.new('R')}\thas_child Arg1:{eid} Arg2:{cid}")
            valued: set[str] = set()
            for att in ev.attributes:
                if att.cue is None or att.value is False:
                    logger.info("%s: attribute %s without cue or False; not written", item.id, att.name)
                    continue
                cue = self.entity(_CUE_LABEL_OF[att.name], att.cue, att.entity_id)
                self.lines.append(f"{self.new('R')}\thas_cue Arg1:{eid} Arg2:{cue}")
                if att.name not in valued:
                    valued.add(att.name)
                    value = "" if att.value is True else f" {att.value}"
                    self.lines.append(f"{self.new('A')}\t{att.name} {eid}{value}")
            self._note(ev, eid)
        self._claim_combination_drugs()
        self._drug_notes()
        return "\n".join(self.t_lines + self.lines + self.notes) + "\n"

    def _drug_notes(self) -> None:
        """One ``AnnotatorNotes T<n>`` line per Drug T line the gazetteer knows (predictions only)."""
        item = self.item
        if item.model is None and not any(ev.source is not None for ev in item.events):
            return
        from clinex.pv.normalise import drug_entry, drug_label

        for tid, (label, offsets) in self.known.items():
            if label != "Drug":
                continue
            entry = drug_entry(" ".join(item.text[s:e] for s, e in offsets))
            if entry is not None:
                self.notes.append(f"#{len(self.notes) + 1}\tAnnotatorNotes {tid}\t{drug_label(entry)}")

    def _note(self, ev: Event, eid: str) -> None:
        """The event's provenance as an ``AnnotatorNotes`` line (none for gold events)."""
        pairs = []
        if ev.source is not None:
            pairs.append(f"model={ev.source}")
        if ev.score is not None:
            pairs.append(f"trigger_probability={ev.score}")
        if self.item.event_probability is not None and pairs:
            pairs.append(f"event_probability={self.item.event_probability}")
        pairs += [
            f"{a.name}@{a.cue.start}-{a.cue.end}={a.source}"
            for a in ev.attributes
            if a.source is not None and a.cue is not None
        ]
        if pairs:
            self.notes.append(f"#{len(self.notes) + 1}\tAnnotatorNotes {eid}\t{'; '.join(pairs)}")

    def _sub_arguments(self, ev: Event, eid: str, first_main: dict[str, str]) -> dict[tuple, str]:
        """Write the event's sub-arguments (``R has``); return ``{Drug offsets: T id}``."""
        drug_ids: dict[tuple, str] = {}
        for main, subs in ev.sub_arguments.items():
            for a in subs:
                if main not in first_main:
                    self.lost.append(f"{main}.{a.role} has no {main} (event {eid}, {_where(a.span)})")
                    continue
                sid = self.entity(_SUB_LABEL_OF[(main, a.role)], a.span, a.entity_id)
                self.lines.append(f"{self.new('R')}\thas Arg1:{first_main[main]} Arg2:{sid}")
                self.sub_ids.add(sid)
                if (main, a.role) == ("Treatment", "Drug"):
                    drug_ids.setdefault(tuple(a.span.offsets()), sid)
        return drug_ids

    def _combination_drug(self, drug: Argument, drug_ids: dict[tuple, str]) -> str:
        """T id of a combination drug: its own given id if already written with this
        span, else the event's ``Treatment.Drug`` with this span, else a new T line."""
        key = tuple(drug.span.offsets())
        if drug.entity_id is not None and self.known.get(drug.entity_id) == ("Drug", key):
            return drug.entity_id
        if key in drug_ids:
            return drug_ids[key]
        return self.entity("Drug", drug.span, drug.entity_id)

    def _claim_combination_drugs(self) -> None:
        """``R has Arg1:<Combination> Arg2:<Drug>`` for each combination drug that is no
        sub-argument, so that the reader's overlap rule leaves it to the combination."""
        claimed = set(self.sub_ids)
        for cid, tid in self.combo_drugs:
            if tid not in claimed:
                claimed.add(tid)
                self.lines.append(f"{self.new('R')}\thas Arg1:{cid} Arg2:{tid}")


def to_ann(item: SentenceEvents, *, on_warning: Callable[[str], None] | None = None) -> str:
    """The ``.ann`` text of one sentence (T lines first, then E, R and A lines).

    Given ids (``T3``, ``E1``) are kept when they are consistent; others are
    numbered after the largest id in use. Entities with the same id, label and
    offsets are written once; a combination drug reuses its event's
    ``Treatment.Drug`` T line with the same span.

    Parameters
    ----------
    item : SentenceEvents
    on_warning : callable, optional
        Called once with one message when brat cannot hold part of ``item``
        (sub-arguments whose event has no main argument of their kind, Combinations
        without a trigger), e.g. ``"s1: not written to brat: Treatment.Disorder has
        no Treatment (event E1, 'fever' 30-35)"``; default: a WARNING on the
        ``clinex.pv.formats.brat`` logger. See the module notes for the rules.

    Raises
    ------
    SchemaError
        An unknown role or attribute in ``item``.
    """
    for ev in item.events:
        for main, subs in ev.sub_arguments.items():
            for a in subs:
                check_sub_role(main, a.role)
        for att in ev.attributes:
            check_attribute(att.name, att.value)
        for a in ev.arguments:
            check_main_role(a.role)
    writer = _Writer(item)
    text = writer.write()
    if writer.lost:
        message = f"{item.id}: not written to brat: " + "; ".join(writer.lost)
        if on_warning is not None:
            on_warning(message)
        else:
            logger.warning("%s", message)
    return text


def write_brat(
    item: SentenceEvents,
    out_dir: str | Path,
    *,
    overwrite: bool = False,
    on_warning: Callable[[str], None] | None = None,
) -> tuple[Path, Path]:
    """Write ``<id>.txt`` (text + newline) and ``<id>.ann`` into ``out_dir``.

    Parameters
    ----------
    item : SentenceEvents
    out_dir : str or Path
        Created if missing.
    overwrite : bool, default False
        Replace existing files; otherwise an existing file raises.
    on_warning : callable, optional
        Gets the message naming what brat cannot hold (see :func:`to_ann`); the
        files are written without it.

    Returns
    -------
    (txt_path, ann_path) : tuple of Path

    Raises
    ------
    InputError
        The id is not a plain file name, a file exists and ``overwrite`` is False,
        or a file cannot be written.
    """
    if not item.id or "/" in item.id or "\\" in item.id or item.id.startswith("."):
        raise InputError(f"sentence id {item.id!r} is not a plain file name")
    d = Path(out_dir)
    try:
        d.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot create the output folder ({exc.strerror or exc})", path=d) from None
    txt, ann = d / f"{item.id}.txt", d / f"{item.id}.ann"
    for p in (txt, ann):
        if p.exists() and not overwrite:
            raise InputError("file exists; refusing to overwrite it (use --force to replace it)", path=p)
    from clinex.io.atomic import write_atomic

    ann_text = to_ann(item, on_warning=on_warning)
    for p, content in ((txt, item.text + "\n"), (ann, ann_text)):
        write_atomic(p, content, force=True)  # a full disk leaves no half-written file (CLX001, OS reason)
    return txt, ann
