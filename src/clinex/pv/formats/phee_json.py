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
string per cue (``"model"`` or ``"rule:<id>"``); and the causality attributes
``Dechallenge`` / ``Rechallenge`` (:data:`clinex.pv.schema.CHALLENGE_ATTRIBUTES`),
attribute nodes like PHEE's (cue span, ``value``, ``source``) under keys PHEE's scorer
does not read; an argument node (main or sub-argument) ``source`` and ``from_sentence``,
one item per instance (``null`` where unset), for an argument taken from another sentence
of the record (:attr:`Argument.source`, :attr:`Argument.from_sentence`; :mod:`clinex.pv.record`).

A record holding predictions (``model`` set) also gets ``pairs``, when it has any: its
case-level drug -> reaction pairs (:func:`clinex.pv.pairs.record_pairs`, one object per
:class:`~clinex.pv.types.Pair` with its fields, ``evidence`` as ``[[start, end], ...]``; no
``pairs`` key: none).
They are derived from the events, so the reader does not read them (nor does PHEE's
scorer or :mod:`clinex.pv.evaluate`) and the writer computes them again: reading a file
and writing it back gives the same bytes. ``to_phee_dict(item, pairs=True / False)``
forces them on or off.

A record holding predictions also gets, in each ``Treatment.Drug`` and Combination
``Drug`` node, ``normalised``: one item per instance, the gazetteer's entry
``{"name", "drugbank_id", "mesh_tree"}`` (:func:`clinex.pv.normalise.drug_entry`) or
``null`` for a drug it does not know (kept as its text). Derived from the text as the
pairs are, it is not read (whatever its form) but computed again on writing; the scorer
does not read it. ``to_phee_dict(item, normalised=True / False)`` forces it on or off.

References
----------
Sun et al., "PHEE: A Dataset for Pharmacovigilance Event Extraction from Text",
EMNLP 2022; data format of the released corpus (github.com/ZhaoyueSun/PHEE, data/json).
"""

from __future__ import annotations

import contextlib
import gc
import itertools
import json
import re
import threading
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
    COMBINATION,
    EVENT_ATTRIBUTES,
    MAIN_ROLES,
    SUB_ROLES,
    check_attribute,
    check_event_type,
    check_sub_role,
)
from clinex.pv.types import Argument, Attribute, Combination, Event, Pair, SentenceEvents
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
_ARG_PROVENANCE = ("source", "from_sentence")
_EVENT_KEYS = ("event_id", "event_type", "Trigger") + MAIN_ROLES + EVENT_ATTRIBUTES + ("model", "trigger_probability")


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
#
# Speed (issue 21): the reader checks every value itself (types, offsets against the
# context, names against the schema) and then builds the result objects without a
# second validation by pydantic (``_built``), and it reads the lines in batches with the
# cyclic garbage collector paused (``_gc_paused``): a sentence makes about 40 frozen
# models, and most of the time of a plain read went to full collections scanning
# every model already read. Refcounting still frees memory as usual; the objects are
# equal (``==``, ``model_dump``, ``model_fields_set``) to validated ones
# (tests/io/test_reader_speed_and_ints.py compares them on the corpus seed).

_new = object.__new__
_setattr = object.__setattr__


def _built(cls: type, fields: dict[str, Any], given: frozenset[str]) -> Any:
    """An instance of the pydantic model ``cls`` holding ``fields``, not validated again.

    ``fields`` has every field of ``cls`` in declaration order, each value already
    checked by the reader; ``given`` is what a validated construction would record as
    the fields set by the caller. This is what ``BaseModel.model_construct`` does
    (pydantic 2: ``__dict__``, ``__pydantic_fields_set__``, ``__pydantic_extra__``,
    ``__pydantic_private__``), without its per-field Python loop, which costs more than
    validation itself.
    """
    m = _new(cls)
    _setattr(m, "__dict__", fields)
    _setattr(m, "__pydantic_fields_set__", set(given))
    _setattr(m, "__pydantic_extra__", None)
    _setattr(m, "__pydantic_private__", None)
    return m


_FRAGMENT_SET = frozenset(("start", "end", "text"))
_SPAN_SET = frozenset(("fragments",))
_ARGUMENT_SET = frozenset(("role", "span", "entity_id"))
_COMBINATION_SET = frozenset(("trigger", "drugs", "event_id", "trigger_id"))
_ATTRIBUTE_SET = frozenset(("name", "value", "source"))
_CUE_ATTRIBUTE_SET = frozenset(("name", "value", "cue", "entity_id", "source"))
_EVENT_SET = frozenset(Event.model_fields)
_SENTENCE_SET = frozenset(SentenceEvents.model_fields)


def _argument(
    role: str, span: Span, entity_id: str | None, source: str | None = None, from_sentence: int | None = None
) -> Argument:
    given = _ARGUMENT_SET
    if source is not None or from_sentence is not None:
        given = given | {k for k, v in (("source", source), ("from_sentence", from_sentence)) if v is not None}
    return _built(
        Argument,
        {"role": role, "span": span, "entity_id": entity_id, "source": source, "from_sentence": from_sentence},
        given,
    )


def _arguments(role: str, node: Any, field: str, ctx: _Ctx) -> list[Argument]:
    """The arguments of one span node, with their provenance (``source``, ``from_sentence``) if given."""
    spans = _spans(node, field, ctx)
    prov: list[tuple[Any, Any]] = [(None, None)] * len(spans)
    if any(k in node for k in _ARG_PROVENANCE):
        sources = node.get("source", [None] * len(spans))
        sentences = node.get("from_sentence", [None] * len(spans))
        if not isinstance(sources, list) or len(sources) != len(spans) or any(
            x is not None and not isinstance(x, str) for x in sources
        ):
            raise ctx.fmt("'source' must be a list with one string or null per instance", f"{field}.source")
        if not isinstance(sentences, list) or len(sentences) != len(spans) or any(
            x is not None and (isinstance(x, bool) or not isinstance(x, int) or x < 0) for x in sentences
        ):
            raise ctx.fmt(
                "'from_sentence' must be a list with one whole number >= 0 or null per instance",
                f"{field}.from_sentence",
            )
        prov = list(zip(sources, sentences))
    return [_argument(role, s, e, src, sent) for (s, e), (src, sent) in zip(spans, prov)]


_GC_LOCK = threading.Lock()
_gc_pauses = 0
_gc_was_enabled = False


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while a batch of lines is read.

    Nested and concurrent pauses (threads of the web app) share one count: the
    collector is switched back on, if it was on, when the last pause ends.
    """
    global _gc_pauses, _gc_was_enabled
    with _GC_LOCK:
        if _gc_pauses == 0:
            _gc_was_enabled = gc.isenabled()
            gc.disable()
        _gc_pauses += 1
    try:
        yield
    finally:
        with _GC_LOCK:
            _gc_pauses -= 1
            if _gc_pauses == 0 and _gc_was_enabled:
                gc.enable()


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
            frags.append(_built(Fragment, {"start": s, "end": end, "text": t}, _FRAGMENT_SET))
        span = _built(
            Span, {"fragments": tuple(frags), "label": None, "score": None, "source": None}, _SPAN_SET
        )
        out.append((span, eid))
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
    event_id = node.get("event_id")
    if event_id is not None and not isinstance(event_id, str):
        raise ctx.fmt("'event_id' must be a string", f"{field}.event_id")
    trigger = trigger_id = None
    if "Trigger" in node:
        trig = _spans(node["Trigger"], f"{field}.Trigger", ctx)
        if len(trig) > 1:
            raise ctx.fmt("a trigger has exactly one instance", f"{field}.Trigger")
        if trig:
            trigger, trigger_id = trig[0]
    drugs = ()
    if "Drug" in node:
        drugs = tuple(_argument("Drug", s, e) for s, e in _spans(node["Drug"], f"{field}.Drug", ctx))
    return _built(
        Combination,
        {"trigger": trigger, "drugs": drugs, "event_id": event_id, "trigger_id": trigger_id},
        _COMBINATION_SET,
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
            allowed = (
                _SPAN_KEYS + SUB_ROLES.get(key, ()) + ((COMBINATION,) if key == "Treatment" else ()) + _ARG_PROVENANCE
            )
            _check_keys(value, allowed, kf, ctx)
            arguments.extend(_arguments(key, value, kf, ctx))
            sub_args: list[Argument] = []
            for sub, sub_node in value.items():
                if sub in _SPAN_KEYS or sub in _ARG_PROVENANCE:
                    continue
                if sub == COMBINATION:
                    if not isinstance(sub_node, list):
                        raise ctx.fmt("'Combination' must be a list of sub-events", f"{kf}.{sub}")
                    combos.extend(
                        _combination(c, f"{kf}.{sub}[{i}]", ctx) for i, c in enumerate(sub_node)
                    )
                    continue
                check_sub_role(key, sub, path=ctx.path, line=ctx.line, field=f"{kf}.{sub}")
                sub_args.extend(_arguments(sub, sub_node, f"{kf}.{sub}", ctx))
            if sub_args:
                subs[key] = tuple(sub_args)
        elif key in EVENT_ATTRIBUTES:
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
            val = value["value"]
            if not cues:
                attributes.append(_built(
                    Attribute,
                    {"name": key, "value": val, "cue": None, "entity_id": None, "source": sources[0]},
                    _ATTRIBUTE_SET,
                ))
            attributes.extend(
                _built(
                    Attribute,
                    {"name": key, "value": val, "cue": s, "entity_id": e, "source": src},
                    _CUE_ATTRIBUTE_SET,
                )
                for (s, e), src in zip(cues, sources)
            )
    model = node.get("model")
    if model is not None and not isinstance(model, str):
        raise ctx.fmt("'model' must be a string", f"{field}.model")
    prob = node.get("trigger_probability")
    if prob is not None and (isinstance(prob, bool) or not isinstance(prob, int | float) or not 0 <= prob <= 1):
        raise ctx.fmt("'trigger_probability' must be a number in [0, 1]", f"{field}.trigger_probability")
    return _built(
        Event,
        {
            "event_type": etype,
            "trigger": trigger,
            "arguments": tuple(arguments),
            "sub_arguments": subs,
            "combinations": tuple(combos),
            "attributes": tuple(attributes),
            "event_id": event_id,
            "trigger_id": trigger_id,
            "score": None if prob is None else float(prob),  # as pydantic: an int 1 is 1.0
            "source": model,
        },
        _EVENT_SET,
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
    return _built(
        SentenceEvents,
        {
            "id": obj["id"],
            "text": obj["context"],
            "events": events,
            "model": model,
            "event_probability": None if prob is None else float(prob),
            "offset": offset,
        },
        _SENTENCE_SET,
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


#: Lines parsed per pause of the garbage collector in :func:`iter_phee_json`.
_BATCH_LINES = 256


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
    lines = iter_json_lines(p.read_bytes(), path=p)
    while True:
        # parse up to _BATCH_LINES lines with the collector paused (see "Speed" above),
        # then hand them out, and the errors, in line order with the collector on
        batch: list[SentenceEvents | ClinexError] = []
        with _gc_paused():
            for n, obj in itertools.islice(lines, _BATCH_LINES):
                if not isinstance(obj, ClinexError):
                    try:
                        obj = parse_phee_dict(obj, path=p, line_no=n)
                    except ClinexError as exc:
                        obj = exc
                batch.append(obj)
                if errors == "raise" and isinstance(obj, ClinexError):
                    break
        if not batch:
            return
        for got in batch:
            if isinstance(got, ClinexError):
                if errors == "raise":
                    raise got
                report(got.with_traceback(None))
                continue
            yield got
        del batch, got


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
