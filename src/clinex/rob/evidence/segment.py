"""Evidence units: sentence-like segments of PDF-extracted trial text.

Text extracted from PDF pages often glues sentences together
(``"...from hospital.Design Single blind..."``) and runs table rows into one
long line, so :func:`clinex.text.split_sentences` (which needs whitespace after
a full stop) under-splits it. :func:`segment_document` splits each page on its
own, also at a full stop directly followed by an upper-case letter after a
lower-case letter or digit, and cuts segments longer than ``max_chars`` at
whitespace. Offsets are always into ``Document.text`` (half-open).
"""

from __future__ import annotations

import re

from clinex.text import Document

__all__ = ["segment_text", "segment_document", "normalise"]

# A boundary: sentence-final punctuation, optional closing quote/bracket, then either
# whitespace before an upper-case letter/digit/opening quote, or (glued PDF text) an
# upper-case letter right after a lower-case letter or digit and the full stop.
_BOUNDARY = re.compile(
    r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9])"
    r"|(?<=[a-z0-9][.!?])(?=[A-Z][a-z])"
    r"|\n\s*\n"
)
_ABBREV = re.compile(r"(?:\b(?:e\.g|i\.e|vs|Fig|Figs|al|approx|No|Dr|Mr|Mrs|Ms|ca|cf)|\b[A-Z])\.$")


def segment_text(text: str, start: int = 0, end: int | None = None, *,
                 max_chars: int = 500) -> list[tuple[int, int]]:
    """Split ``text[start:end]`` into sentence-like segments.

    Parameters
    ----------
    text : str
        The whole document text.
    start, end : int
        Character range to split (default: all of ``text``).
    max_chars : int
        Longest segment in characters; longer ones (tables, run-on PDF lines) are
        cut at the last whitespace before the limit.

    Returns
    -------
    list of (int, int)
        Half-open character offsets into ``text``, in order, without leading or
        trailing whitespace; empty segments are dropped.
    """
    end = len(text) if end is None else end
    out: list[tuple[int, int]] = []
    cur = start
    for m in _BOUNDARY.finditer(text, start, end):
        cut = m.start()
        if cut <= cur:
            continue
        if _ABBREV.search(text[max(cur, cut - 8):cut]):
            continue
        _emit(text, cur, cut, max_chars, out)
        cur = m.end()
    _emit(text, cur, end, max_chars, out)
    return out


def _emit(text: str, s: int, e: int, max_chars: int, out: list[tuple[int, int]]) -> None:
    while s < e and text[s].isspace():
        s += 1
    while e > s and text[e - 1].isspace():
        e -= 1
    while e - s > max_chars:
        cut = text.rfind(" ", s + max_chars // 2, s + max_chars)
        if cut == -1:
            cut = s + max_chars
        piece_end = cut
        while piece_end > s and text[piece_end - 1].isspace():
            piece_end -= 1
        if piece_end > s:
            out.append((s, piece_end))
        s = cut
        while s < e and text[s].isspace():
            s += 1
    if e > s:
        out.append((s, e))


def segment_document(document: Document, *, max_chars: int = 500) -> list[tuple[int, int]]:
    """Segments of a document, never crossing a page boundary.

    Parameters
    ----------
    document : Document
        With or without ``pages``; without pages the whole text is one range.
    max_chars : int
        See :func:`segment_text`.

    Returns
    -------
    list of (int, int)
        Half-open character offsets into ``document.text``.
    """
    if not document.pages:
        return segment_text(document.text, max_chars=max_chars)
    out: list[tuple[int, int]] = []
    for page in document.pages:
        out.extend(segment_text(document.text, page.start, page.end, max_chars=max_chars))
    return out


_HYPHEN = re.compile(r"[-\u2010\u2011\u2012\u2013\u00ad]\s*")
_NON_ALNUM = re.compile(r"[^0-9a-z]+")


def normalise(text: str) -> str:
    """Lower-case ``text``, join hyphenated pieces and reduce other non-alphanumerics to spaces.

    Cue patterns are matched against this form: hyphens (and line breaks after
    them) are removed, so ``"computer-generated"``, ``"ran-\\ndomised"`` and
    ``"double-blind"`` become ``"computergenerated"``, ``"randomised"`` and
    ``"doubleblind"``; every other run of characters that are not ASCII letters or
    digits becomes one space, so ``\\b`` word boundaries still work.

    Examples
    --------
    >>> normalise("Computer-generated  ran-\\ndomisation (ITT).")
    'computergenerated randomisation itt '
    """
    return _NON_ALNUM.sub(" ", _HYPHEN.sub("", text.lower()))
