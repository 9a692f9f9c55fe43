"""Text in, PHEE events out: sentence splitting, the model, offsets back into the text.

Two units of input, one rule each:

* **a record** (a JSON-lines record: PHEE ``context`` or ``{"id", "text"}``; one
  sentence of a plain-text file after splitting) is passed to the model **whole,
  as given** -- never split again. :func:`extract_record` /
  :func:`extract_records` are the one per-record path shared by
  ``clinex pv extract``, ``clinex batch pv`` and ``bench/pv.py``, so that all of
  them give the same events for the same record (PHEE records are sentences).
* **plain text** (the ``TEXT`` argument, a ``.txt`` file, :func:`extract`) is
  split into sentences (:func:`clinex.text.split_sentences`); each sentence is
  then one record.

``min_trigger_prob`` drops events whose trigger ``score`` (the model's trigger
probability) is below it; 0 (default) keeps all.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, Literal

from clinex.pv.offsets import shift_event
from clinex.pv.types import Event, SentenceEvents
from clinex.text import split_sentences

__all__ = [
    "RECORDS_PER_CALL",
    "extract",
    "extract_record",
    "extract_records",
    "extract_sentences",
    "extract_text",
    "extract_text_sentences",
    "filter_events",
    "jsonl_records",
    "sentence_pieces",
    "shift_event",
    "text_records",
]

#: Default records per model call of every batch surface (``clinex pv extract`` and
#: ``clinex batch pv --batch-size``). A model sorts the texts of one call by length
#: before padding them into graph batches, so a larger call pads less: on the 961 PHEE
#: dev sentences (32,864 sub-word tokens) calls of 64 records pad to 48,718 tokens,
#: 256 to 38,361, 512 to 35,844 and 1,024 to 34,786; the whole CLI run took 9.3 s at 64
#: and 7.1 s at 1,024 with the same output (stop 19, one core busy). Results do not
#: depend on it.
RECORDS_PER_CALL = 512


def sentence_pieces(text: str) -> list[tuple[int, int, str]]:
    """The records plain text is cut into: one per sentence, or the whole text if none.

    Parameters
    ----------
    text : str
        Plain text (a TEXT argument, a .txt file, a web request).

    Returns
    -------
    list of (int, int, str)
        ``(start, end, sentence)`` per sentence of :func:`clinex.text.split_sentences`
        (character offsets into ``text``); empty or blank text is one piece, the text
        itself, so that it still gives one record (with no events).
    """
    return [(s.start, s.end, s.text) for s in split_sentences(text)] or [(0, len(text), text)]


def _check_length(text: str, what: str, path: str | None = None, line: int | None = None) -> None:
    """Raise FormatError when ``text`` is over :data:`clinex.io.limits.MAX_PV_TEXT_CHARS`."""
    from clinex.io import limits

    if len(text) > limits.MAX_PV_TEXT_CHARS:
        from clinex.errors import FormatError

        raise FormatError(
            f"{what}: {len(text):,} characters, more than MAX_PV_TEXT_CHARS = {limits.MAX_PV_TEXT_CHARS:,} "
            "(clinex.io.limits); split it into several files or JSON-lines records",
            path=path,
            line=line,
            field="text",
        )


def jsonl_records(
    data: bytes,
    *,
    path: str | Path | None = None,
    errors: Literal["raise", "skip"] = "skip",
    on_error: Callable[[Exception], None] | None = None,
) -> Iterator[Any]:
    """The records of PV JSON lines (``id`` + ``text``, or PHEE ``context``), each within
    :data:`clinex.io.limits.MAX_PV_TEXT_CHARS`.

    The one JSON-lines reader of ``clinex pv extract``, the web upload and
    ``clinex batch pv``: :func:`clinex.io.jsonl.parse_jsonl_data`, then the length of
    each record's text, so that a record over the limit is a bad line like any other
    (docs/pv.md, exit status): reported naming the file, its line, the field and the
    record id, and skipped, while the other records go on.

    Parameters
    ----------
    data : bytes
        The file's bytes.
    path : str or Path, optional
        Names the source in error messages (``<stdin>`` when None).
    errors : {"raise", "skip"}, default "skip"
        ``"raise"`` stops at the first bad line (``--strict``); ``"skip"`` reports it
        through ``on_error`` and goes on.
    on_error : callable (ClinexError) -> None, optional
        Receives each skipped line's error (default: ``[CODE] file:line: message`` on
        stderr).

    Yields
    ------
    clinex.io.jsonl.TextRecord
        ``(id, text, line)`` of each good record, in file order.

    Raises
    ------
    EncodingError
        A binary file (always), or with ``errors="raise"`` a line that is not UTF-8.
    FormatError
        With ``errors="raise"``: a line that is not a JSON object with the two fields,
        a repeated id, or a text over the limit, e.g. ``[CLX002] x.jsonl:2: field 'text':
        record big: 1,000,001 characters, more than MAX_PV_TEXT_CHARS = 1,000,000 ...``.
    """
    from clinex.errors import ClinexError, report_to_stderr
    from clinex.io.jsonl import parse_jsonl_data

    name = str(path) if path is not None else "<stdin>"
    report = on_error or report_to_stderr
    for rec in parse_jsonl_data(data, path=name, text_field="text", fallback_text_field="context",
                                errors=errors, on_error=on_error):
        try:
            _check_length(rec.text, f"record {rec.id}", name, rec.line)
        except ClinexError as exc:
            if errors == "raise":
                raise
            report(exc)
            continue
        yield rec


def text_records(text: str, name: str, path: str | None = None) -> list[tuple[str, str, int]]:
    """Plain text -> one ``(id, sentence, offset)`` record per sentence (ids ``NAME_1``, ``NAME_2``...).

    The one plain-text rule of ``clinex pv extract`` (TEXT, ``.txt``) and
    ``clinex batch pv`` (``.txt``): the pieces of :func:`sentence_pieces`, so
    empty or blank text gives one record ``NAME_1`` with that text (and no events).
    ``offset`` is where the sentence starts in ``text`` (code points), for
    :attr:`SentenceEvents.offset`.

    Raises
    ------
    FormatError
        ``text`` is longer than :data:`clinex.io.limits.MAX_PV_TEXT_CHARS` (the
        message names ``path`` (the file, when the text came from one), ``name`` and
        both lengths, field ``text``).
    """
    _check_length(text, name, path)
    return [(f"{name}_{k}", piece, start) for k, (start, _, piece) in enumerate(sentence_pieces(text), start=1)]


def filter_events(events: Iterable[Event], min_trigger_prob: float = 0.0) -> list[Event]:
    """Events whose trigger score is at least ``min_trigger_prob``.

    Parameters
    ----------
    events : iterable of Event
    min_trigger_prob : float, default 0.0
        In [0, 1]. Events without a score are kept.

    Returns
    -------
    list of Event

    Raises
    ------
    InputError
        If ``min_trigger_prob`` is outside [0, 1].
    """
    if not 0.0 <= min_trigger_prob <= 1.0:
        from clinex.errors import InputError

        raise InputError(
            f"min_trigger_prob must be in [0, 1]; got {min_trigger_prob!r}", field="--min-trigger-prob"
        )
    if min_trigger_prob <= 0.0:
        return list(events)
    return [e for e in events if e.score is None or e.score >= min_trigger_prob]


def _model(model: Any) -> Any:
    if isinstance(model, str):
        from clinex.pv.models import load_model

        return load_model(model)
    return model


def predict_detailed(model: Any, texts: Sequence[str]) -> list[tuple[list[Event], float | None]]:
    """A model's events and event probability per text (None where it gives none).

    Models of both shipped kinds have ``predict_detailed``; a model that only has
    ``predict`` (the :class:`~clinex.pv.models.PVModel` protocol) gives None.
    """
    texts = list(texts)
    if not texts:
        return []
    if hasattr(model, "predict_detailed"):
        return [(list(evs), p) for evs, p in model.predict_detailed(texts)]
    return [(list(evs), None) for evs in model.predict(texts)]


def _predict_by_sentence(
    model: Any, texts: Sequence[str], *, cross_sentence: bool = True
) -> list[tuple[list[Event], float | None]]:
    """:func:`predict_detailed` with each text of several sentences cut into its sentences.

    PHEE events are annotated within one sentence (Sun et al., EMNLP 2022, §3) and the
    models are trained on sentences: given a whole abstract as one text, the joint model
    tagged one trigger per window and gave it the drugs of other sentences ("...
    Stevens-Johnson syndrome after lamotrigine. Her rash resolved after treatment with
    intravenous immunoglobulin." made IVIG a cause; stop 19). Each text's sentences
    (:func:`sentence_pieces`) go to the model in one batch and their events come back
    with offsets into the text; its event probability is the largest of its sentences'.
    A one-sentence text (every PHEE record but 7 of 3,859) goes as it is.

    With ``cross_sentence`` (the default) a text of several sentences is then read as one
    document (:func:`clinex.pv.record.resolve_record`): an event whose sentence names no
    drug, or refers back to one ("the drug"), takes the drug named in an earlier
    sentence, and a sentence the sentence gate left empty keeps its drug-less events that
    get a drug this way (:func:`clinex.pv.record.sentence_events`).
    """
    pieces = [sentence_pieces(t) for t in texts]
    flat = [piece for ps in pieces for _, _, piece in ps]
    if cross_sentence:
        from clinex.pv.record import sentence_events

        gated, ungated = sentence_events(model, flat, [len(ps) > 1 for ps in pieces for _ in ps])
    else:
        gated, ungated = predict_detailed(model, flat), [[] for _ in flat]
    got = iter(zip(gated, ungated))
    out: list[tuple[list[Event], float | None]] = []
    for text, ps in zip(texts, pieces):
        parts = [next(got) for _ in ps]
        if len(ps) == 1:
            out.append(parts[0][0])
            continue
        starts = [start for start, _, _ in ps]
        events, prob = _joined(text, starts, [part for part, _ in parts])
        if cross_sentence:
            from clinex.pv.record import resolve_record

            extra = [shift_event(ev, start, text) for start, (_, evs) in zip(starts, parts) for ev in evs]
            events = resolve_record(text, [(start, end) for start, end, _ in ps], events, extra)
        out.append((events, prob))
    return out


def _joined(
    text: str, starts: Sequence[int], parts: Sequence[tuple[Sequence[Event], float | None]]
) -> tuple[list[Event], float | None]:
    """The events of ``text``'s sentences (starting at ``starts``), shifted into ``text``, and
    their largest event probability (None when no sentence has one)."""
    events = [shift_event(ev, start, text) for start, (evs, _) in zip(starts, parts) for ev in evs]
    probs = [p for _, p in parts if p is not None]
    return events, max(probs) if probs else None


def extract_records(
    records: Sequence[tuple[str, str]], *, model: Any = "auto", min_trigger_prob: float = 0.0,
    on_error: Any = None, offsets: Sequence[int | None] | None = None, cross_sentence: bool = True,
) -> list[SentenceEvents]:
    """Events of each record, with offsets into the record's text (one output record each).

    A record of several sentences is cut into its sentences for the model and its events
    are put back together (:func:`_predict_by_sentence`), and the record is read as one
    document: an event that names no drug or refers back to one ("the drug") takes the drug
    named in an earlier sentence, with provenance (:mod:`clinex.pv.record`;
    ``cross_sentence=False`` turns this off). The ``llm`` kind reads each record whole and
    is left as it answers. A record's drug -> reaction pairs: :func:`clinex.pv.pairs.record_pairs`.

    This is the one per-record path of ``clinex pv extract`` (JSON lines, and
    each sentence of a plain-text file), ``clinex batch pv`` and ``bench/pv.py``.

    Parameters
    ----------
    records : sequence of (str, str)
        ``(id, text)`` pairs; a PHEE record's text is its ``context`` sentence.
    model : str or PVModel, default "auto"
        A loaded model, or a name / folder for :func:`clinex.pv.models.load_model`.
    min_trigger_prob : float, default 0.0
        See :func:`filter_events`.
    on_error : callable (record id, ClinexError) -> None, optional
        For a model with ``predict_records`` (the ``llm`` kind, whose calls can fail
        per record): a record whose call failed is passed here and left out of the
        result. Without it the first such error is raised (it names the record id).
    offsets : sequence of int or None, optional
        One per record: where its text starts in the document it was cut from
        (the third item of :func:`text_records`), set as :attr:`SentenceEvents.offset`.
    cross_sentence : bool, default True
        Resolve drugs across the sentences of a record of several sentences
        (:mod:`clinex.pv.record`). Records of one sentence are never changed.

    Returns
    -------
    list of SentenceEvents
        One per record, in order, ``text`` exactly as given; offsets point into
        it; ``model`` is the model's versioned id and ``event_probability`` its
        sentence-level event probability (:mod:`clinex.pv.gate`). Empty or blank
        text gives a record with no events and no event probability.

    Raises
    ------
    ModelError
        If the model cannot be loaded.
    InputError
        If a record's text holds a lone surrogate (not valid Unicode; names the record).
    FormatError
        If a record's text is longer than :data:`clinex.io.limits.MAX_PV_TEXT_CHARS`
        (names the record), before any model work.
    """
    from clinex.errors import InputError
    from clinex.pv.models import model_id

    if offsets is not None and len(offsets) != len(records):
        raise InputError(f"{len(offsets)} offsets for {len(records)} records", field="offsets")
    for rid, text in records:
        _check_length(text, f"record {rid}")
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            raise InputError(
                "text holds a lone surrogate (\\ud800-\\udfff), not valid Unicode text", field=f"record {rid}"
            ) from None
    m = _model(model)
    mid = model_id(m)
    todo = [k for k, (_, text) in enumerate(records) if text.strip()]
    failed: set[int] = set()
    if hasattr(m, "predict_records"):
        got = m.predict_records([records[k][1] for k in todo], [records[k][0] for k in todo])
        preds = {}
        for k, res in zip(todo, got):
            if isinstance(res, Exception):
                if on_error is None:
                    raise res
                on_error(records[k][0], res)
                failed.add(k)
            else:
                preds[k] = (list(res), None)
    else:
        preds = dict(zip(todo, _predict_by_sentence(m, [records[k][1] for k in todo], cross_sentence=cross_sentence)))
    out = []
    for k, (rid, text) in enumerate(records):
        if k in failed:
            continue
        events, prob = preds.get(k, ([], None))
        # every event names the same versioned id as its record (the model's own
        # ``source`` may add a variant, e.g. ``:joint``)
        events = [e if e.source == mid else e.model_copy(update={"source": mid}) for e in events]
        out.append(
            SentenceEvents(
                id=rid,
                text=text,
                events=tuple(filter_events(events, min_trigger_prob)),
                model=mid,
                event_probability=prob,
                offset=None if offsets is None else offsets[k],
            )
        )
    return out


def extract_sentences(texts: Sequence[str], *, model: str = "auto") -> list[list[Event]]:
    """Events of each sentence, offsets into that sentence (no splitting).

    Parameters
    ----------
    texts : sequence of str
        One sentence each (as PHEE ``context``).
    model : str, default "auto"
        Model name or folder, see :func:`clinex.pv.models.load_model`.

    Returns
    -------
    list of list of Event
    """
    from clinex.pv.models import load_model

    return load_model(model).predict(list(texts))


def extract(text: str, *, model: str = "auto", min_trigger_prob: float = 0.0) -> list[Event]:
    """Extract ADE / PTE events from any text.

    Parameters
    ----------
    text : str
        One or more sentences (plain text). Empty or blank text gives no events.
    model : str, default "auto"
        ``auto`` (best shipped model), ``crf``, ``transformer`` or a model folder
        (see :func:`clinex.pv.models.load_model`).
    min_trigger_prob : float, default 0.0
        See :func:`filter_events`.

    Returns
    -------
    list of Event
        In text order; every span has character offsets into ``text``
        (half-open), so ``text[f.start:f.end] == f.text`` for each fragment.

    Raises
    ------
    ModelError
        If the model cannot be loaded.

    Examples
    --------
    >>> events = extract("A 54-year-old man, treated with amiodarone, developed thyrotoxicosis.")
    >>> events[0].event_type
    'Adverse_event'
    """
    return list(extract_text(text, model=model, min_trigger_prob=min_trigger_prob).events)


def extract_text(
    text: str, *, model: Any = "auto", min_trigger_prob: float = 0.0, record_id: str = "text"
) -> SentenceEvents:
    """Events of plain text as one record, offsets into ``text`` (the text given).

    The text is cut by :func:`sentence_pieces`; all sentences go to the model in
    one :func:`extract_records` call (the same batched path as every surface),
    and the events are shifted back into ``text``. Used by :func:`extract` and
    the web API.

    Parameters
    ----------
    text : str
        Plain text.
    model : str or PVModel, default "auto"
    min_trigger_prob : float, default 0.0
    record_id : str, default "text"

    Returns
    -------
    SentenceEvents
        ``text`` as given; ``event_probability`` the largest of the sentences'
        (None when no sentence has one, e.g. for empty or blank text).
    """
    return extract_text_sentences(text, model=model, min_trigger_prob=min_trigger_prob, record_id=record_id)[0]


def extract_text_sentences(
    text: str,
    *,
    model: Any = "auto",
    min_trigger_prob: float = 0.0,
    record_id: str = "text",
    split: bool = True,
    sentence_prefix: str | None = None,
) -> tuple[SentenceEvents, list[tuple[int, int, SentenceEvents]]]:
    """:func:`extract_text`, with the per-sentence records it was built from.

    ``split=False`` makes ``text`` one record (the JSON-lines rule; :func:`extract_records`
    still reads a record of several sentences sentence by sentence). Sentence records are ids ``{sentence_prefix}{k}`` (default
    ``{record_id}_``), k from 1. Returns ``(whole, [(start, end, sentence record), ...])``:
    ``whole`` has offsets into ``text``; each sentence record offsets into its
    sentence, which is ``text[start:end]``.
    """
    pieces = sentence_pieces(text) if split else [(0, len(text), text)]
    prefix = f"{record_id}_" if sentence_prefix is None else sentence_prefix
    items = extract_records(
        [(f"{prefix}{k}", t) for k, (_, _, t) in enumerate(pieces, start=1)],
        model=model,
        min_trigger_prob=min_trigger_prob,
        offsets=[start for start, _, _ in pieces] if split else None,
    )
    events, prob = _joined(text, [start for start, _, _ in pieces], [(i.events, i.event_probability) for i in items])
    whole = SentenceEvents(
        id=record_id, text=text, events=tuple(events), model=items[0].model if items else None, event_probability=prob
    )
    return whole, [(start, end, item) for (start, end, _), item in zip(pieces, items)]


def extract_record(
    record_id: str, text: str, *, model: Any = "auto", min_trigger_prob: float = 0.0
) -> SentenceEvents:
    """Events of one input record (:func:`extract_records` for one; offsets into its text).

    Parameters
    ----------
    record_id : str
        The record's id (kept as ``SentenceEvents.id``).
    text : str
        Its text (PHEE ``context``: one sentence); offsets of the events point into it.
    model : str or PVModel, default "auto"
    min_trigger_prob : float, default 0.0
        See :func:`filter_events`.

    Returns
    -------
    SentenceEvents
        With no events for empty or blank text.

    Raises
    ------
    ModelError
        If the model cannot be loaded.
    """
    return extract_records([(record_id, text)], model=model, min_trigger_prob=min_trigger_prob)[0]
