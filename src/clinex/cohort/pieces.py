"""A patient's text cut into the pieces the medspaCy pipeline reads, lines far from any phrase blanked.

medspaCy's ConText pairs every target with every modifier of a document, so a
piece's cost grows with its square. :func:`record_pieces` cuts each record at blank
lines into pieces of about :data:`_PIECE` characters (clinical notes separate
sections by blank lines, so a piece starts at a section header), and a piece
without blank lines at a line break after :data:`_CHUNK` characters (a pasted
flowsheet). :func:`mask_lines` blanks out the lines of a piece far from any concept
phrase (offsets kept), a speed-up only. Both are used by
:class:`clinex.cohort.engine.ScreeningEngine`.
"""

from __future__ import annotations

import datetime as dt
import re

from clinex.cohort.types import Patient

__all__ = ["first_words", "mask_lines", "record_pieces"]

#: Longest piece without a blank line given to spaCy (characters). medspaCy's ConText
#: pairs every target with every modifier of a document, so a piece's cost grows with its
#: square: a pasted flowsheet or a copied-forward list is cut at a line break (one that
#: starts a new sentence when there is one; on one long line, at a space) after this
#: many characters. Twice :data:`clinex.cohort.nlp.MAX_SENTENCE_CHARS`.
_CHUNK = 2_000
_PIECE = 800
_WORD = re.compile(r"[a-z0-9]+")
#: A line that continues the previous sentence: indented prose or lower-case start, not a list item.
_CONT = re.compile(r"(?:[ \t]+(?![-*•]|\d{1,2}[.)])\S|[a-z])")
#: A section header line, with or without a colon (kept by :func:`mask_lines`).
_HEADER = re.compile(r"[ \t]*[A-Za-z][A-Za-z0-9 /&()'-]{0,48}:")


def record_pieces(p: Patient) -> list[tuple[int, int, dt.date | None, int]]:
    """(start, end, date, record index) of each piece of text that goes through spaCy.

    Records are cut at blank lines into pieces of about ``_PIECE`` characters
    (clinical notes separate sections by blank lines, so a piece starts at a
    section header), and a piece without blank lines is cut at a line break
    after ``_CHUNK`` characters (a pasted flowsheet). Pieces keep their record's
    date and index; the cut only bounds spaCy's work (ConText scopes end at
    sentences anyway). A patient without records but with text is one undated
    record.
    """
    recs = [(r.start, r.end, r.date) for r in p.records] if p.records else ([(0, len(p.text), None)] if p.text.strip() else [])
    out: list[tuple[int, int, dt.date | None, int]] = []
    text = p.text
    for ri, (s, e, d) in enumerate(recs):
        while e - s > _PIECE:
            cut = _next_cut(text, s, e)
            if cut <= s or cut >= e:
                break
            out.append((s, cut, d, ri))
            s = cut
        if e > s:
            out.append((s, e, d, ri))
    return out


def _next_cut(text: str, s: int, e: int) -> int:
    """Where the piece starting at ``s`` (in a record ending at ``e``) ends: after a
    blank line between ``_PIECE`` and ``_CHUNK`` characters on, else at a line break
    (:func:`_line_cut`), else on one long line between words; ``s`` or less when the
    rest of the record is one piece."""
    cut = text.find("\n\n", s + _PIECE, min(e, s + _CHUNK + 2))
    if cut < 0 or cut - s > _CHUNK:
        cut = _line_cut(text, s, s + _CHUNK) if e - s > _CHUNK else -1
        if cut < 0:
            if e - s <= _CHUNK:
                return s
            sp = text.rfind(" ", s + _CHUNK // 2, s + _CHUNK)  # one long line: between words
            cut = sp if sp > s else s + _CHUNK
    return cut + 1 if text[cut : cut + 1] == "\n" else cut


def first_words(phrases) -> set[str]:  # type: ignore[no-untyped-def]
    """The longest word of each phrase (the phrase itself when it has none): a line
    holding none of them holds no phrase (see :func:`mask_lines`)."""
    return {max(_WORD.findall(k) or [k], key=len) for k in phrases}


def mask_lines(text: str, first: set[str]) -> str:
    """Blank out lines far from any concept phrase (offsets are kept).

    Only lines holding a phrase (one of the ``first`` words, :func:`first_words`),
    their neighbours (wrapped sentences) and section-header lines go through spaCy;
    every other character except line breaks becomes a space. This is a speed-up
    only: a blanked line cannot hold a target, and ConText scopes end at sentence
    boundaries.
    """
    lines = text.split("\n")
    hit = [bool(first.intersection(_WORD.findall(ln.lower()))) for ln in lines]
    cont = [bool(_CONT.match(ln)) for ln in lines]
    keep = list(hit)
    # wrapped sentences, in two linear passes: the continuation lines below a hit
    # line, and the lines above a hit line that it (through continuations) continues
    below = False
    for i, h in enumerate(hit):
        below = h or (below and cont[i])
        keep[i] = keep[i] or below
    reach = False  # lines i..(a hit line) are all continuations
    for i in range(len(lines) - 1, 0, -1):
        reach = cont[i] and (hit[i] or reach)
        if reach:
            keep[i - 1] = True
    out = []
    for ln, k in zip(lines, keep):
        if k or _HEADER.match(ln) or len(ln.strip()) <= 40:  # headers, with or without a colon
            out.append(ln)
        else:
            out.append(" " * len(ln))
    return "\n".join(out)


def _line_cut(text: str, lo: int, hi: int) -> int:
    """The last line break in ``text[lo:hi]`` after which a new sentence starts (the next
    line is not a lower-case or indented continuation), else the last line break in the
    second half of the range, else -1. Looks at no more than 64 line breaks."""
    fallback = text.rfind("\n", lo + (hi - lo) // 2, hi)
    cut = fallback
    for _ in range(64):
        if cut < 0 or not _CONT.match(text, cut + 1):
            break
        cut = text.rfind("\n", lo + (hi - lo) // 2, cut)
    if cut >= 0:
        return cut
    return fallback if fallback >= 0 else text.rfind("\n", lo, hi)
