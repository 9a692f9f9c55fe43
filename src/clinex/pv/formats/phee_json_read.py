"""Reading PHEE JSON lines into :class:`~clinex.pv.types.SentenceEvents`.

The format and the reader's conventions are described in
:mod:`clinex.pv.formats.phee_json`, which re-exports every public name of this module.
"""

from __future__ import annotations

import contextlib
import gc
import itertools
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
from clinex.pv.types import Argument, Attribute, Combination, Event, SentenceEvents
from clinex.text import Fragment, Span

__all__ = ["parse_phee_line", "parse_phee_dict", "iter_phee_json", "read_phee_json"]

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
    """The :class:`Event` of one event object (``field``: where it is, for messages)."""
    etype, event_id, trigger, trigger_id = _event_head(node, field, ctx)
    arguments: list[Argument] = []
    subs: dict[str, tuple[Argument, ...]] = {}
    combos: list[Combination] = []
    attributes: list[Attribute] = []
    for key, value in node.items():
        if key in MAIN_ROLES:
            sub_args = _main_argument(key, value, f"{field}.{key}", ctx, arguments, combos)
            if sub_args:
                subs[key] = tuple(sub_args)
        elif key in EVENT_ATTRIBUTES:
            attributes.extend(_attributes(key, value, f"{field}.{key}", ctx))
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


def _event_head(node: Any, field: str, ctx: _Ctx) -> tuple[str, str | None, Span, str | None]:
    """An event object's keys checked, and its type, id, trigger and trigger id."""
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
    return etype, event_id, trigger, trigger_id


def _main_argument(
    key: str, value: Any, kf: str, ctx: _Ctx, arguments: list[Argument], combos: list[Combination]
) -> list[Argument]:
    """Read the main-argument node ``value`` of role ``key``: its instances go to
    ``arguments``, its Combination sub-events to ``combos``; returns its sub-arguments."""
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
    return sub_args


def _attributes(key: str, value: Any, kf: str, ctx: _Ctx) -> list[Attribute]:
    """The attributes of the attribute node ``value`` named ``key``: one per cue, or one
    without a cue when it has none."""
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
    out: list[Attribute] = []
    if not cues:
        out.append(_built(
            Attribute,
            {"name": key, "value": val, "cue": None, "entity_id": None, "source": sources[0]},
            _ATTRIBUTE_SET,
        ))
    out.extend(
        _built(
            Attribute,
            {"name": key, "value": val, "cue": s, "entity_id": e, "source": src},
            _CUE_ATTRIBUTE_SET,
        )
        for (s, e), src in zip(cues, sources)
    )
    return out


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
