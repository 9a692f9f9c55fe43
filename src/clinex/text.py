"""Documents and spans: the one text model all three tasks share.

Offsets are character offsets into the original, unmodified string, half-open
``[start, end)`` as in spaCy and Python slicing. A :class:`Span` may be
discontinuous: it then holds several :class:`Fragment` s in text order (brat's
``start end;start end`` notation, PHEE's lists of fragments).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from clinex.errors import OffsetError

__all__ = ["Fragment", "Span", "Document", "PAGE_SEPARATOR", "split_sentences", "check_span"]

#: Text put between two pages in ``Document.text`` by the paged readers (PDF, tagtog):
#: a blank line, so also a sentence break.
PAGE_SEPARATOR = "\n\n"


class Fragment(BaseModel):
    """One contiguous piece of a span.

    Attributes
    ----------
    start : int
        Offset of the first character (characters, 0-based).
    end : int
        Offset one past the last character (half-open).
    text : str
        ``document.text[start:end]`` at creation time.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    start: int = Field(ge=0)
    end: int = Field(ge=0)
    text: str

    @model_validator(mode="after")
    def _ordered(self) -> "Fragment":
        if self.end < self.start:
            raise ValueError(f"fragment end {self.end} < start {self.start}")
        return self


class Span(BaseModel):
    """A labelled, possibly discontinuous stretch of a document.

    Attributes
    ----------
    fragments : tuple of Fragment
        One or more pieces, sorted by start offset.
    label : str or None
        Role or class of the span (e.g. ``"Effect"``, ``"1.1"``).
    score : float or None
        Model confidence in [0, 1] when a model made the span.
    source : str or None
        Provenance: the rule id or model name and version that produced it.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    fragments: tuple[Fragment, ...] = Field(min_length=1)
    label: str | None = None
    score: float | None = None
    source: str | None = None

    @property
    def start(self) -> int:
        """Offset of the first character of the first fragment."""
        return self.fragments[0].start

    @property
    def end(self) -> int:
        """Offset one past the last character of the last fragment."""
        return self.fragments[-1].end

    @property
    def text(self) -> str:
        """The fragments' texts joined by single spaces (PHEE's convention)."""
        return " ".join(f.text for f in self.fragments)

    @property
    def is_discontinuous(self) -> bool:
        """True when the span has more than one fragment."""
        return len(self.fragments) > 1

    @classmethod
    def from_offsets(
        cls,
        text: str,
        offsets: Iterable[tuple[int, int]] | tuple[int, int],
        *,
        label: str | None = None,
        score: float | None = None,
        source: str | None = None,
    ) -> "Span":
        """Build a span by slicing ``text``.

        Parameters
        ----------
        text : str
            The document text the offsets point into.
        offsets : (start, end) or iterable of (start, end)
            Character offsets, half-open; several pairs make a discontinuous span.

        Raises
        ------
        OffsetError
            If an offset pair falls outside ``text`` or has end < start.
        """
        pairs: list[tuple[int, int]]
        if isinstance(offsets, tuple) and len(offsets) == 2 and isinstance(offsets[0], int):
            pairs = [offsets]  # type: ignore[list-item]
        else:
            pairs = [tuple(p) for p in offsets]  # type: ignore[misc]
        frags = []
        for start, end in sorted(pairs):
            if start < 0 or end > len(text) or end < start:
                raise OffsetError(
                    f"offsets {start}-{end} fall outside a text of {len(text)} characters"
                )
            frags.append(Fragment(start=start, end=end, text=text[start:end]))
        return cls(fragments=tuple(frags), label=label, score=score, source=source)

    def offsets(self) -> list[tuple[int, int]]:
        """The fragments as ``[(start, end), ...]``."""
        return [(f.start, f.end) for f in self.fragments]

    def overlaps(self, start: int, end: int) -> bool:
        """True if any fragment shares at least one character with ``[start, end)``."""
        return any(f.start < end and start < f.end for f in self.fragments)


def check_span(span: Span, text: str) -> None:
    """Check that every fragment of ``span`` slices ``text`` to its own text.

    Raises
    ------
    OffsetError
        Naming the offsets (not the text) of the first fragment that does not match.
    """
    for f in span.fragments:
        if f.end > len(text) or text[f.start : f.end] != f.text:
            raise OffsetError(f"fragment {f.start}-{f.end} does not match the document text")


class Document(BaseModel):
    """A text with its id and optional structure.

    Attributes
    ----------
    id : str
        Document id (file stem, PMID_sentence, patient id ...).
    text : str
        The original text; every offset in clinex points into it.
    sentences : tuple of Span
        Sentence spans (label None), in order; may be empty until split.
    sections : tuple of Span
        Section spans labelled with a section name (``"methods"``, ...).
    pages : tuple of Span
        Page spans labelled with the 1-based page number as a string (PDF input).
    meta : dict
        Free metadata (source path, record dates ...); JSON-serialisable values.
    """

    model_config = ConfigDict(extra="forbid")

    id: str
    text: str
    sentences: tuple[Span, ...] = ()
    sections: tuple[Span, ...] = ()
    pages: tuple[Span, ...] = ()
    meta: dict[str, Any] = Field(default_factory=dict)

    def span(self, start: int, end: int, label: str | None = None) -> Span:
        """A contiguous span of this document (see :meth:`Span.from_offsets`)."""
        return Span.from_offsets(self.text, (start, end), label=label)

    def iter_sentences(self) -> Iterator[Span]:
        """The sentences; split with :func:`split_sentences` if none were given."""
        if self.sentences:
            yield from self.sentences
        else:
            yield from split_sentences(self.text)

    def page_of(self, offset: int) -> int | None:
        """1-based page number holding character ``offset``, or None without pages."""
        for page in self.pages:
            if page.start <= offset < page.end:
                return int(page.label) if page.label and page.label.isdigit() else None
        return None

    def section_of(self, offset: int) -> str | None:
        """Name of the section holding character ``offset``, or None."""
        for sec in self.sections:
            if sec.start <= offset < sec.end:
                return sec.label
        return None


# A light rule-based splitter for plain text: a sentence ends at . ! ? followed by
# whitespace and an upper-case letter, digit or quote, at a blank line, or at the end
# of a heading line. Common abbreviations in case reports do not end sentences.
_ABBREV = {
    "e.g", "i.e", "dr", "mr", "mrs", "ms", "vs", "fig", "figs", "al", "approx", "no",
    "ca", "resp", "cf", "st", "wk", "wks", "mo", "mos", "yr", "yrs", "inc", "ltd",
}
_BOUNDARY = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9])|\n\s*\n")
# A line ending in one of these continues or already ends a sentence: never a heading.
_NOT_HEADING_END = ".!?,;"


def split_sentences(text: str) -> list[Span]:
    """Split plain text into sentence spans.

    A rule splitter (no model): boundaries at ``.``/``!``/``?`` + whitespace + an
    upper-case letter or digit, at blank lines, and at the line break after a
    heading line; a period after a known abbreviation (``e.g.``, ``Dr.``,
    ``et al.`` ...) or a single capital initial is not a boundary. Leading/trailing
    whitespace is excluded from each span.

    Heading rule (conservative, so that wrapped prose stays one sentence): a single
    line break ends a sentence when the whole line before it, stripped, does not
    end with ``. ! ? , ;`` and either ends with ``:`` (``Results:``) or has all its
    letters upper case with at least two letters (``CASE REPORT``, ``RESULTS:``).
    ``"CASE REPORT\nAmiodarone caused ..."`` gives two sentences;
    ``"The patient was given\namiodarone 200 mg daily."`` stays one.

    Parameters
    ----------
    text : str
        Any text.

    Returns
    -------
    list of Span
        Contiguous spans in order, offsets into ``text``; empty for empty or blank
        text.
    """
    spans: list[Span] = []
    start = 0
    for cut, resume in _boundaries(text):
        if cut < start:
            continue  # a heading break inside a blank-line boundary already taken
        _add(text, start, cut, spans)
        start = resume
    _add(text, start, len(text), spans)
    return spans


def _boundaries(text: str) -> list[tuple[int, int]]:
    """Sorted ``(cut, resume)`` offsets: the sentence before ends at ``cut``, the
    next one starts at ``resume`` (leading whitespace is stripped later)."""
    cuts: list[tuple[int, int]] = []
    start = 0
    for m in _BOUNDARY.finditer(text):
        cut = m.start()
        if m.group(0).count("\n") < 2 and text[cut - 1 : cut] == ".":
            token = _last_word(text, start, cut)
            if token in _ABBREV or (len(token) == 1 and token.isalpha()):
                continue
        cuts.append((cut, m.end()))
        start = m.end()
    line_start = 0
    for m in re.finditer(r"\n", text):
        if _is_heading(text[line_start : m.start()]):
            cuts.append((m.start(), m.end()))
        line_start = m.end()
    return sorted(cuts, key=lambda c: (c[0], -c[1]))


_LAST_WORD = re.compile(r"(\S+)\.$")
_WORD_WINDOW = 32  # longer than any abbreviation: a longer word is never one


def _last_word(text: str, start: int, cut: int) -> str:
    """The lower-cased word before the period at ``cut - 1`` (``""`` when none).

    Only the last :data:`_WORD_WINDOW` characters are searched, so that a long run
    without spaces costs O(1) per period instead of O(run**2); a word cut by the
    window is longer than any abbreviation and comes back as ``"<long>"``.
    """
    lo = max(start, cut - _WORD_WINDOW)
    word = _LAST_WORD.search(text, lo, cut)
    if word is None:
        return ""
    if word.start() == lo and lo > start and not text[lo - 1].isspace():
        return "<long>"
    return word.group(1).lower()


def _is_heading(line: str) -> bool:
    """True for a heading line: see the heading rule of :func:`split_sentences`."""
    line = line.strip()
    if not line or line[-1] in _NOT_HEADING_END:
        return False
    if line.endswith(":"):
        return True
    letters = [c for c in line if c.isalpha()]
    return len(letters) >= 2 and all(c.isupper() for c in letters)


def _add(text: str, start: int, end: int, out: list[Span]) -> None:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    if end > start:
        out.append(Span.from_offsets(text, (start, end)))
