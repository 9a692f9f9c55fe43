"""Evidence units: sentence-like segments of PDF-extracted trial text.

Text extracted from PDF pages often glues sentences together
(``"...from hospital.Design Single blind..."``) and runs table rows into one
long line, so :func:`clinex.text.split_sentences` (which needs whitespace after
a full stop) under-splits it. :func:`segment_document` splits each page on its
own, also at a full stop directly followed by an upper-case letter after a
lower-case letter or digit, and cuts segments longer than ``max_chars`` at
whitespace. A blank line always ends a segment. Segments never cross a section
heading (:func:`clinex.rob.sections.find_headings`) or a short sub-heading line
("Study design" alone on its line before a capitalised line) or a run-in label
("Background:" in a structured abstract), and the heading text itself is left
out of every segment. Offsets are always into
``Document.text`` (half-open).
"""

from __future__ import annotations

import re

from clinex.text import Document

__all__ = ["heading_ranges", "normalise", "segment_document", "segment_text"]

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
        if _ABBREV.search(text[max(cur, cut - 8):cut]) and "\n\n" not in re.sub(r"[ \t]", "", m.group(0)):
            continue  # "al." / "Y." is no sentence end, but a blank line always is
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
    text = document.text
    ranges = [(p.start, p.end) for p in document.pages] or [(0, len(text))]
    gaps = heading_ranges(text)
    out: list[tuple[int, int]] = []
    for start, end in ranges:
        cur = start
        for gs, ge in gaps:
            if ge <= cur or gs >= end:
                continue
            if gs > cur:
                out.extend(segment_text(text, cur, gs, max_chars=max_chars))
            cur = max(cur, ge)
        if cur < end:
            out.extend(segment_text(text, cur, end, max_chars=max_chars))
    return out


# A short capitalised line alone (at most 4 words, no sentence punctuation, not ending
# in a function word), followed by a line starting with a capital: a sub-heading.
_SUBHEADING = re.compile(
    r"(?m)^[ \t]*(?P<h>[A-Z][A-Za-z/&\-]*(?:[ \t]+[A-Za-z/&\-]+){0,3})[ \t]*:?[ \t]*\n(?=[ \t]*[A-Z0-9])"
)
_FUNCTION_WORDS = frozenset({
    "a", "an", "the", "and", "or", "of", "in", "on", "at", "to", "for", "by", "with",
    "from", "as", "is", "was", "were", "be", "that", "this", "than",
})
# A run-in label ending in a colon at a line or sentence start (structured abstracts:
# "Background:", "Main outcome measures:", glued PDF text "drug Y.Design: ...").
_RUN_IN = re.compile(
    r"(?m)(?:^|(?<=[.!?] )|(?<=[.!?]))[ \t]*(?P<h>[A-Z][A-Za-z/&\-]*(?:[ \t]+[A-Za-z/&\-]+){0,2}):(?=\s)"
)
_NOT_LABEL_START = frozenset({
    "we", "i", "it", "they", "he", "she", "this", "these", "that", "there", "our", "their",
    "its", "a", "an", "the",
})


def heading_ranges(text: str) -> list[tuple[int, int]]:
    """Character ranges of section headings and sub-heading lines (not evidence).

    Parameters
    ----------
    text : str

    Returns
    -------
    list of (int, int)
        Sorted, non-overlapping half-open ranges: each heading found by
        :func:`clinex.rob.sections.find_headings` (with a following colon),
        each short sub-heading line (see ``_SUBHEADING``) and each run-in label
        of one to three words ending in a colon at a line or sentence start
        ("Background:", "Main outcome measures:"; see ``_RUN_IN``). Segments are
        cut at them and never include them.

    References
    ----------
    CONSORT 2010 (Schulz et al., BMJ 2010;340:c332): reports are organised under
    section and sub-section headings ("Randomisation", "Study design") whose text
    is a label, not a statement about the trial.
    """
    from clinex.rob.sections import find_headings

    found = []
    for start, end, _ in find_headings(text):
        if end < len(text) and text[end] == ":":
            end += 1
        found.append((start, end))
    for m in _SUBHEADING.finditer(text):
        words = m.group("h").split()
        if words[-1].lower() in _FUNCTION_WORDS:
            continue
        found.append((m.start("h"), m.end()))
    for m in _RUN_IN.finditer(text):
        words = [w.lower() for w in m.group("h").split()]
        if words[0] in _NOT_LABEL_START or any(w in _FUNCTION_WORDS for w in words[1:]):
            continue
        found.append((m.start("h"), m.end()))
    found.sort()
    merged: list[tuple[int, int]] = []
    for s, e in found:
        if merged and s <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], e))
        else:
            merged.append((s, e))
    return merged


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


def normalise_with_offsets(text: str) -> tuple[str, list[int]]:
    """:func:`normalise` and, for each character of the result, its offset in ``text``.

    Parameters
    ----------
    text : str

    Returns
    -------
    (str, list of int)
        ``normalise(text)`` and a list as long as it: ``offsets[i]`` is the index in
        ``text`` of the character that became result character ``i`` (a space that
        stands for a run of non-alphanumerics maps to the run's first character).

    Examples
    --------
    >>> norm, off = normalise_with_offsets("Non-blinded, open")
    >>> norm, [off[i] for i in (0, 3, 10, 11)]
    ('nonblinded open', [0, 4, 11, 13])
    """
    out: list[str] = []
    offsets: list[int] = []
    i, n = 0, len(text)
    while i < n:
        m = _HYPHEN.match(text, i)
        if m:
            i = m.end()
            continue
        for c in text[i].lower():
            if "0" <= c <= "9" or "a" <= c <= "z":
                out.append(c)
                offsets.append(i)
            elif not out or out[-1] != " ":
                out.append(" ")
                offsets.append(i)
        i += 1
    norm = "".join(out)
    return norm, offsets
