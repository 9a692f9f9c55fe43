"""PHEE brat standoff, reading step 1: the lines of an ``.ann`` file (issue 24).

The labels (:data:`SUB_LABELS`, :data:`CUE_LABELS`), the parsed file (:class:`Ann`:
its T, E, A, R and ``#`` lines) and :func:`parse`, which checks each line's form,
reads the offsets (characters, else UTF-8 bytes or UTF-16 code units when only those
fit) and makes a trigger without an E line an event. The links between the lines are
:mod:`clinex.pv.formats.brat_link`'s; the format is described in
:mod:`clinex.pv.formats.brat`.
"""

from __future__ import annotations

import bisect
import itertools
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from clinex.errors import FormatError, OffsetError, SchemaError
from clinex.pv.schema import COMBINATION, EVENT_TYPES, MAIN_ROLES, SUB_ROLES, check_attribute
from clinex.text import Fragment, Span

__all__ = ["CUE_LABELS", "CUE_LABEL_OF", "SUB_LABELS", "SUB_LABEL_OF", "TRIGGER_LABELS", "Ann", "Ent", "Ev",
           "parse", "probability"]

logger = logging.getLogger("clinex.pv.formats.brat")

#: brat entity label of a sub-argument -> (main role, sub role).
SUB_LABELS: dict[str, tuple[str, str]] = {
    ("Sub-Disorder" if (main, sub) == ("Subject", "Disorder") else
     "Treat-Disorder" if (main, sub) == ("Treatment", "Disorder") else sub): (main, sub)
    for main, subs in SUB_ROLES.items()
    for sub in subs
}
SUB_LABEL_OF = {v: k for k, v in SUB_LABELS.items()}

#: brat cue label -> attribute name.
CUE_LABELS: dict[str, str] = {
    "Speculation_cue": "Speculated",
    "Negation_cue": "Negated",
    "Severity_cue": "Severity",
    "Dechallenge_cue": "Dechallenge",  # clinex's causality attributes (clinex.pv.challenge)
    "Rechallenge_cue": "Rechallenge",
}
CUE_LABEL_OF = {v: k for k, v in CUE_LABELS.items()}

TRIGGER_LABELS = EVENT_TYPES + (COMBINATION,)
_ENTITY_LABELS = MAIN_ROLES + tuple(SUB_LABELS) + tuple(CUE_LABELS) + TRIGGER_LABELS
_OFFSETS = re.compile(r"\d+ \d+(?:;\d+ \d+)*")
#: An offset with more digits (leading zeros aside) lies past any text clinex reads.
_MAX_OFFSET_DIGITS = 18


@dataclass
class Ent:
    """One T line of a brat ``.ann`` file once its offsets are read.

    Attributes
    ----------
    id : str
        The T id (``T3``).
    label : str
        The entity label (``Adverse_event``, ``Drug``, a cue label).
    span : Span
        Character offsets into the ``.txt`` file's text (half-open, possibly discontinuous).
    line : int
        1-based line of the ``.ann`` file, for messages.
    """

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
class Ev:
    """One E line (or a trigger T line without one) of a brat ``.ann`` file.

    Attributes
    ----------
    id : str
        The E id (``E1``; the T id when ``listed`` is False).
    type : str
        The event type (``Adverse_event`` or ``Potential_therapeutic_event``).
    trigger : str
        The T id of the trigger.
    args : list of str
        The ``Role:Tn`` columns as written.
    line : int
        1-based line of the ``.ann`` file, for messages.
    listed : bool, default True
        False for a trigger T line that no E line names (other tools write those).
    """

    id: str
    type: str
    trigger: str
    args: list[str]
    line: int
    listed: bool = True  # False: a trigger T line without an E line (its id is the T id)


@dataclass
class Ann:
    """A parsed ``.ann`` file: its entities, events, attributes, relations and notes, keyed
    by id, each with the line it came from (:func:`parse`); the converter
    (:mod:`clinex.pv.formats.brat_link`) turns it into events."""

    path: Path
    text: str
    ents: dict[str, Ent] = field(default_factory=dict)
    raw: dict[str, _Raw] = field(default_factory=dict)  # T lines until their offsets are read
    events: dict[str, Ev] = field(default_factory=dict)
    attrs: list[tuple[str, str, bool | str, int]] = field(default_factory=list)  # name, target, value, line
    rels: list[tuple[str, str, str, int]] = field(default_factory=list)  # type, arg1, arg2, line
    notes: dict[str, dict[str, str]] = field(default_factory=dict)  # E id -> provenance key -> value


# --------------------------------------------------------------------------- parsing


def _parse_note(cols: list[str], ann: Ann) -> None:
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


def probability(value: str | None) -> float | None:
    """A probability written in an AnnotatorNotes pair, or None when it is missing, not a
    number or outside [0, 1] (a hand-edited note never stops the reading).

    Examples
    --------
    >>> probability("0.91"), probability("1.2"), probability("high"), probability(None)
    (0.91, None, None, None)
    """
    try:
        p = float(value) if value is not None else None
    except ValueError:
        return None
    return p if p is not None and 0.0 <= p <= 1.0 else None


def _parse_entity(cols: list[str], ann: Ann, n: int) -> None:
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


def _read_spans(ann: Ann, units: _Units | None) -> dict[str, Span] | tuple[int, OffsetError]:
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


def _resolve_entities(ann: Ann, warn: Callable[[str], None]) -> None:
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
        ann.ents[tid] = Ent(tid, raw.label, spans[tid], raw.line)


def _parse_event(cols: list[str], ann: Ann, n: int) -> None:
    items = cols[1].split() if len(cols) > 1 else []
    if not items or ":" not in items[0]:
        raise FormatError("an E line needs 'Type:Trigger [Role:Id ...]'", path=ann.path, line=n)
    etype, trigger = items[0].split(":", 1)
    if etype not in TRIGGER_LABELS:
        raise SchemaError(f"unknown event type {etype!r}; valid: {', '.join(TRIGGER_LABELS)}",
                          path=ann.path, line=n)
    args = []
    for item in items[1:]:
        role, sep, aid = item.partition(":")
        if not sep or not aid:
            raise FormatError(f"bad event argument {item!r}, expected Role:Id", path=ann.path, line=n)
        args.append(aid)
    if cols[0] in ann.events:
        raise FormatError(f"duplicate id {cols[0]}", path=ann.path, line=n)
    ann.events[cols[0]] = Ev(cols[0], etype, trigger, args, n)


def _parse_attribute(cols: list[str], ann: Ann, n: int) -> None:
    items = cols[1].split() if len(cols) > 1 else []
    if len(items) not in (2, 3):
        raise FormatError("an A line needs 'Name Target [Value]'", path=ann.path, line=n)
    name, target = items[0], items[1]
    value: bool | str = items[2] if len(items) == 3 else True
    check_attribute(name, value, path=ann.path, line=n)
    ann.attrs.append((name, target, value, n))


def _parse_relation(cols: list[str], ann: Ann, n: int) -> None:
    items = cols[1].split() if len(cols) > 1 else []
    if len(items) != 3 or not items[1].startswith("Arg1:") or not items[2].startswith("Arg2:"):
        raise FormatError("an R line needs 'Type Arg1:Id Arg2:Id'", path=ann.path, line=n)
    ann.rels.append((items[0], items[1][5:], items[2][5:], n))


def parse(text: str, ann_text: str, path: Path, warn: Callable[[str], None]) -> Ann:
    """Parse the lines of one ``.ann`` file against its ``.txt`` text.

    Parameters
    ----------
    text : str
        The ``.txt`` file's text (offsets point into it).
    ann_text : str
        The ``.ann`` file's text.
    path : Path
        The ``.ann`` file, named in messages.
    warn : callable
        Called with a message when the offsets are counted in UTF-8 bytes or UTF-16 code
        units (as other tools write them) and were converted to characters.

    Returns
    -------
    Ann

    Raises
    ------
    FormatError
        A line that does not follow brat's standoff format, an unknown line kind or an id
        no line defines (its line number named).
    SchemaError
        A T line whose label is no PHEE label.
    OffsetError
        Offsets outside the text, or a T line's text column that differs from the text
        at its offsets (brat standoff format, brat.nlplab.org/standoff.html).
    """
    ann = Ann(path=path, text=text)
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


def _add_triggers_without_events(ann: Ann) -> None:
    """A trigger-labelled T line that no E line uses is still an event trigger (brat
    shows it so; exporters that write text-bound annotations only leave out E lines):
    it becomes an event with no listed argument, keyed by its T id (so that ``R`` and
    ``A`` lines naming the T id reach it), linked by the same rules as an E line that
    lists no argument; a Combination trigger's drugs are then the Drugs of its event's
    Treatment that holds the trigger. PHEE's own files have none (every trigger has its
    E line)."""
    used = {ev.trigger for ev in ann.events.values()} | {a for ev in ann.events.values() for a in ev.args}
    for ent in list(ann.ents.values()):
        if ent.label in TRIGGER_LABELS and ent.id not in used and ent.id not in ann.events:
            logger.info("%s:%d: %s (%s) has no E line; read as an event", ann.path, ent.line, ent.id, ent.label)
            ann.events[ent.id] = Ev(ent.id, ent.label, ent.id, [], ent.line, listed=False)
