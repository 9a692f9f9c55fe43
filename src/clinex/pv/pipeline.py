"""Text in, PHEE events out: the PV pipeline, one named step after another.

Two units of input, one rule each:

* **a record** (a JSON-lines record: PHEE ``context`` or ``{"id", "text"}``; one
  sentence of a plain-text file after splitting) gives one output record, with offsets
  into its text. :func:`extract_record` / :func:`extract_records` are the one
  per-record path shared by ``clinex pv extract``, ``clinex batch pv`` and
  ``bench/pv.py``, so that all of them give the same events for the same record (PHEE
  records are sentences).
* **plain text** (the ``TEXT`` argument, a ``.txt`` file, :func:`extract`) is
  split into sentences (:func:`text_records`, :func:`sentence_pieces`); each sentence is
  then one record, passed on with its offset and never split again.

The steps of :func:`extract_records`, in order (each a function with its own tests,
``tests/pv/test_pv_pipeline_steps.py``):

1. :func:`check_records` -- length and Unicode of every record, before any model work;
2. :func:`split_records` -- each record's sentences, split **once** (a sentence of a
   plain-text document is not split again); the offsets go down to the model;
3. :func:`read_sentences` -- every sentence through the sentence steps of
   :mod:`clinex.pv.steps`: **model -> decode** (:func:`clinex.pv.steps.tag`), **clean**
   (span rules), **scope** (attributes), **gate** (sentence-level decision), **join**
   (split events, dechallenge) and the **effect rule**;
4. :func:`resolve_sentences` -- the sentences' events back into the record's text and,
   for a record of several sentences, drugs resolved across them (:mod:`clinex.pv.record`);
5. :func:`as_record` -- the output record: versioned model id, ``min_trigger_prob``
   (:func:`filter_events`).

A model that reads whole records (``reads_whole_records``: the ``llm`` kind) takes
:func:`answer_records` in place of steps 2-4: its answer is kept as given. A record's
drug -> reaction **pairs** are the last step, :func:`record_pairs` (one call per output
record, by every surface that writes them).

``min_trigger_prob`` drops events whose trigger ``score`` (the model's trigger
probability) is below it; 0 (default) keeps all.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from clinex.pv.inputs import check_length, jsonl_records, sentence_pieces, text_records
from clinex.pv.offsets import shift_event
from clinex.pv.steps import Decided
from clinex.pv.types import Event, Pair, SentenceEvents

__all__ = [
    "RECORDS_PER_CALL",
    "answer_records",
    "as_record",
    "check_records",
    "extract",
    "extract_record",
    "extract_records",
    "extract_sentences",
    "extract_text",
    "extract_text_sentences",
    "filter_events",
    "jsonl_records",
    "read_sentences",
    "record_pairs",
    "resolve_sentences",
    "sentence_pieces",
    "shift_event",
    "split_records",
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
    """A loaded model: ``model`` itself, or :func:`clinex.pv.models.load_model` of its name."""
    if isinstance(model, str):
        from clinex.pv.models import load_model

        return load_model(model)
    return model


# -- the steps of extract_records, in order ---------------------------------------------


def check_records(records: Sequence[tuple[str, str]], offsets: Sequence[int | None] | None) -> None:
    """Step 1: every record's text within :data:`clinex.io.limits.MAX_PV_TEXT_CHARS` and valid
    Unicode, and one offset per record (before any model work).

    Raises
    ------
    FormatError
        A text over the limit (names the record).
    InputError
        A text holding a lone surrogate (names the record), or ``offsets`` of another length.
    """
    from clinex.errors import InputError

    if offsets is not None and len(offsets) != len(records):
        raise InputError(f"{len(offsets)} offsets for {len(records)} records", field="offsets")
    for rid, text in records:
        check_length(text, f"record {rid}")
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            raise InputError(
                "text holds a lone surrogate (\\ud800-\\udfff), not valid Unicode text", field=f"record {rid}"
            ) from None


def split_records(texts: Sequence[str], one_sentence: Sequence[bool]) -> list[list[tuple[int, int, str]]]:
    """Step 2: each record's sentences, split once (the only split of a record's path).

    Parameters
    ----------
    texts : sequence of str
        The records' texts.
    one_sentence : sequence of bool
        Per record: True for a sentence that :func:`text_records` already cut from its
        document (kept whole: ``[(0, len(text), text)]``), False to split it
        (:func:`sentence_pieces`).

    Returns
    -------
    list of list of (int, int, str)
        ``(start, end, sentence)`` per sentence of each record, offsets into its text.
        Later steps are given these offsets and never split again.
    """
    return [[(0, len(t), t)] if one else sentence_pieces(t) for t, one in zip(texts, one_sentence)]


def read_sentences(
    model: Any, pieces: Sequence[Sequence[tuple[int, int, str]]], *, cross_sentence: bool = True
) -> tuple[list[Decided], list[list[Event]]]:
    """Step 3: every sentence of every record through the model and the sentence steps.

    The sentences of all records go to the model in one call (:func:`clinex.pv.steps.tag`,
    told that each is one sentence), then through
    :func:`clinex.pv.steps.sentence_steps` (clean -> scope -> gate -> join -> effect rule)
    with the model's settings. PHEE events are annotated within one sentence (Sun et al.,
    EMNLP 2022, §3) and the models are trained on sentences: given a whole abstract as one
    text, the joint model tagged one trigger per window and gave it the drugs of other
    sentences (stop 19).

    Parameters
    ----------
    model : clinex.pv.steps.SentenceModel
    pieces : sequence of sequence of (int, int, str)
        Each record's sentences (:func:`split_records`).
    cross_sentence : bool, default True
        Also keep, for the sentences of a record of several sentences that the gate left
        empty, their events without the gate (:func:`resolve_sentences` may complete them).

    Returns
    -------
    (list of (list of Event, float or None), list of list of Event)
        Per sentence, in record order: its final events and event probability; its events
        without the gate (empty unless kept as said above). Offsets into each sentence.
    """
    from clinex.pv.steps import StepSettings, sentence_steps, tag

    flat = [piece for ps in pieces for _, _, piece in ps]
    if not flat:
        return [], []
    multi = [cross_sentence and len(ps) > 1 for ps in pieces for _ in ps]
    tagged = tag(model, flat, [[0]] * len(flat))
    return sentence_steps(flat, tagged, StepSettings.of(model), ungated=multi)


def resolve_sentences(
    text: str,
    pieces: Sequence[tuple[int, int, str]],
    decided: Sequence[Decided],
    ungated: Sequence[Sequence[Event]],
    *,
    cross_sentence: bool = True,
) -> Decided:
    """Step 4: one record's sentence events put back into its text, and read as one document.

    The events of each sentence are shifted into ``text`` (:func:`clinex.pv.offsets.shift_event`);
    the record's event probability is the largest of its sentences'. With ``cross_sentence``
    a record of several sentences is read as one document
    (:func:`clinex.pv.record.resolve_record`): an event whose sentence names no drug, or
    refers back to one ("the drug"), takes the drug named in an earlier sentence, and a
    sentence the gate left empty keeps its drug-less events (``ungated``) that get a drug
    this way.

    Parameters
    ----------
    text : str
        The record's text.
    pieces : sequence of (int, int, str)
        Its sentences (:func:`split_records`).
    decided, ungated : sequence
        The sentences' results of :func:`read_sentences`, in order.
    cross_sentence : bool, default True

    Returns
    -------
    (list of Event, float or None)
        Events with offsets into ``text``; the event probability (None when no sentence
        has one).
    """
    starts = [start for start, _, _ in pieces]
    events, prob = _joined(text, starts, decided)
    if cross_sentence and len(pieces) > 1:
        from clinex.pv.record import resolve_record

        extra = [shift_event(ev, start, text) for start, evs in zip(starts, ungated) for ev in evs]
        events = resolve_record(text, [(start, end) for start, end, _ in pieces], events, extra)
    return events, prob


def answer_records(
    model: Any, records: Sequence[tuple[str, str]], on_error: Callable[[str, Exception], None] | None
) -> dict[int, Decided]:
    """Steps 2-4 of a model that reads whole records (``reads_whole_records``: the ``llm``
    kind): each record's text as it is to ``predict_records``, its answer kept as given.

    A record whose call failed is passed to ``on_error`` with its error and left out of the
    result; without ``on_error`` the first such error is raised (it names the record id).

    Returns
    -------
    dict of int -> (list of Event, None)
        By record index; the records left out are those that failed.
    """
    got = model.predict_records([text for _, text in records], [rid for rid, _ in records])
    out: dict[int, Decided] = {}
    for k, res in enumerate(got):
        if isinstance(res, Exception):
            if on_error is None:
                raise res
            on_error(records[k][0], res)
        else:
            out[k] = (list(res), None)
    return out


def as_record(
    rid: str, text: str, decided: Decided, mid: str, min_trigger_prob: float, offset: int | None
) -> SentenceEvents:
    """Step 5: one output record: every event names the record's versioned model id (the
    model's own ``source`` may add a variant, e.g. ``:joint``), and only events whose trigger
    score reaches ``min_trigger_prob`` are kept (:func:`filter_events`)."""
    events, prob = decided
    events = [e if e.source == mid else e.model_copy(update={"source": mid}) for e in events]
    return SentenceEvents(
        id=rid, text=text, events=tuple(filter_events(events, min_trigger_prob)), model=mid,
        event_probability=prob, offset=offset,
    )


def _joined(text: str, starts: Sequence[int], parts: Sequence[tuple[Sequence[Event], float | None]]) -> Decided:
    """The events of ``text``'s sentences (starting at ``starts``), shifted into ``text``, and
    their largest event probability (None when no sentence has one)."""
    events = [shift_event(ev, start, text) for start, (evs, _) in zip(starts, parts) for ev in evs]
    probs = [p for _, p in parts if p is not None]
    return events, max(probs) if probs else None


def _read_records(
    model: Any, texts: Sequence[str], one_sentence: Sequence[bool], cross_sentence: bool
) -> list[Decided]:
    """Steps 2-4 for a model that tags sentences: split, read, resolve, per record."""
    pieces = split_records(texts, one_sentence)
    decided, ungated = read_sentences(model, pieces, cross_sentence=cross_sentence)
    out, k = [], 0
    for text, ps in zip(texts, pieces):
        n = len(ps)
        out.append(resolve_sentences(text, ps, decided[k : k + n], ungated[k : k + n], cross_sentence=cross_sentence))
        k += n
    return out


def extract_records(
    records: Sequence[tuple[str, str]], *, model: Any = "auto", min_trigger_prob: float = 0.0,
    on_error: Any = None, offsets: Sequence[int | None] | None = None, cross_sentence: bool = True,
) -> list[SentenceEvents]:
    """Events of each record, with offsets into the record's text (one output record each).

    The steps, in order (module notes): :func:`check_records`; for a model that tags
    sentences, :func:`split_records` (once), :func:`read_sentences` (model -> decode ->
    clean -> scope -> gate -> join -> effect rule, :mod:`clinex.pv.steps`) and
    :func:`resolve_sentences` (offsets back into the record, drugs across its sentences:
    :mod:`clinex.pv.record`; ``cross_sentence=False`` turns this off); for a model that
    reads whole records (``llm``), :func:`answer_records`; then :func:`as_record`. A
    record's drug -> reaction pairs: :func:`clinex.pv.pairs.record_pairs`.

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
        For a model that reads whole records (the ``llm`` kind, whose calls can fail
        per record): a record whose call failed is passed here and left out of the
        result. Without it the first such error is raised (it names the record id).
    offsets : sequence of int or None, optional
        One per record: where its text starts in the document it was cut from
        (the third item of :func:`text_records`), set as :attr:`SentenceEvents.offset`.
        A record with an offset is one sentence of that document, already split by
        :func:`text_records`, and is not split again.
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
    from clinex.pv.models import model_id

    check_records(records, offsets)
    m = _model(model)
    todo = [k for k, (_, text) in enumerate(records) if text.strip()]
    if m.reads_whole_records:
        answered = answer_records(m, [records[k] for k in todo], on_error)
        preds = {todo[j]: res for j, res in answered.items()}
        failed = set(todo) - set(preds)
    else:
        one = [offsets is not None and offsets[k] is not None for k in todo]
        preds = dict(zip(todo, _read_records(m, [records[k][1] for k in todo], one, cross_sentence)))
        failed = set()
    mid = model_id(m)
    return [
        as_record(rid, text, preds.get(k, ([], None)), mid, min_trigger_prob, None if offsets is None else offsets[k])
        for k, (rid, text) in enumerate(records) if k not in failed
    ]


def record_pairs(record: SentenceEvents) -> list[Pair]:
    """The last step: a record's unique drug -> reaction pairs (:func:`clinex.pv.pairs.record_pairs`).

    Parameters
    ----------
    record : SentenceEvents
        One output record of :func:`extract_records` (offsets into ``record.text``).

    Returns
    -------
    list of Pair
        In the order of each pair's first event.
    """
    from clinex.pv.pairs import record_pairs as pairs_of

    return pairs_of(record)


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
