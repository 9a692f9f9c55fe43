"""The inputs of the PV pipeline: records from JSON lines, and from plain text cut into sentences.

:func:`jsonl_records` reads PV JSON lines (``id`` + ``text``, or PHEE ``context``);
:func:`text_records` cuts plain text into one record per sentence
(:func:`sentence_pieces`), each with its offset in the text. Both check every text
against :data:`clinex.io.limits.MAX_PV_TEXT_CHARS`. Every name is also importable from
:mod:`clinex.pv.pipeline`, which runs the records through its steps.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Literal

from clinex.text import split_sentences

__all__ = ["check_length", "jsonl_records", "sentence_pieces", "text_records"]


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
    return list(_pieces(text))


@functools.lru_cache(maxsize=512)  # one model call's records (RECORDS_PER_CALL)
def _pieces(text: str) -> tuple[tuple[int, int, str], ...]:
    """:func:`sentence_pieces`, kept for the texts of the latest records: the pipeline's
    split step and the pairs step (:func:`clinex.pv.pairs.record_pairs`, which cites each
    pair's evidence sentence) share one split of a record."""
    return tuple((s.start, s.end, s.text) for s in split_sentences(text)) or ((0, len(text), text),)


def check_length(text: str, what: str, path: str | None = None, line: int | None = None) -> None:
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
            check_length(rec.text, f"record {rec.id}", name, rec.line)
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
    check_length(text, name, path)
    return [(f"{name}_{k}", piece, start) for k, (start, _, piece) in enumerate(sentence_pieces(text), start=1)]
