"""Documents and spans: the one text model all three tasks share.

Offsets are character offsets into the original, unmodified string, half-open
``[start, end)`` as in spaCy and Python slicing. A :class:`Span` may be
discontinuous: it then holds several :class:`Fragment` s in text order (brat's
``start end;start end`` notation, PHEE's lists of fragments).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from clinex.errors import OffsetError

__all__ = [
    "Fragment", "Span", "Document", "PAGE_SEPARATOR", "split_sentences", "sentence_offsets", "check_span",
    "Abbreviations", "PROSE_ABBREVIATIONS", "TRIAL_ABBREVIATIONS", "CLINICAL_ABBREVIATIONS", "LINE_BREAK_RULES",
    "CASE_REPORT_RULES", "TRIAL_REPORT_RULES", "CLINICAL_NOTE_RULES",
]

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


# ---------------------------------------------------------------------------------------
# The one sentence splitter of the package. Rules (no model), parameterised where the
# three tasks need different behaviour; every offset is into the text passed in.

#: The line-break rules :func:`sentence_offsets` knows (see its ``line_breaks``).
LINE_BREAK_RULES = ("headings", "blank", "lines")


@dataclass(frozen=True)
class Abbreviations:
    """Words whose full stop does not end a sentence.

    Attributes
    ----------
    words : frozenset of str
        The words without their final period (``"e.g"``, ``"Dr"``, ``"et al"`` is
        ``"al"``).
    ignore_case : bool
        Compare lower-cased (``words`` must then be lower case).
    initials : {"any", "upper", "none"}
        Whether a single letter (any case / upper case only / never) before the
        period is an initial (``"J. Smith"``).
    parts : bool
        Also test every part of the word that follows a character other than a
        letter, digit or underscore (``"(Fig"`` tests ``"Fig"``; ``"U.S"`` tests
        ``"S"``, an initial). Without it only the whole whitespace-delimited word is
        tested.
    initial_after_lower : bool
        Whether a single letter right after a lower-case word is an initial too. False
        for case reports: "vitamin D.", "hepatitis B.", "drug X." end a sentence there,
        while "J. Smith", "Smith J." (after a capitalised word or at the start) and
        "by J. Smith" (after ``by``, ``and``, ``&``, ``to``, ``from``, ``with``, ``of``) stay
        initials (own choice, QA stop 18: "No adverse events were observed with drug X.
        A 60-year-old man ..." is two sentences).
    capital_end : bool
        A word ending in a capital letter that does not follow another capital
        (``"mg/dL"``, ``"vitamin D"``, ``"A1C"``, but not ``"BID"``) is an
        abbreviation too: spaCy's English tokenizer keeps that period on the word,
        so clinical notes split by it never ended a sentence there.

    Notes
    -----
    Own choice, kept from the three splitters this one replaced (issue 11): case
    reports (PHEE) use :data:`PROSE_ABBREVIATIONS`, trial reports (RoB)
    :data:`TRIAL_ABBREVIATIONS`, clinical notes (cohort)
    :data:`CLINICAL_ABBREVIATIONS`.
    """

    words: frozenset[str]
    ignore_case: bool = True
    initials: str = "any"
    parts: bool = False
    capital_end: bool = False
    initial_after_lower: bool = True

    def __post_init__(self) -> None:
        if self.initials not in ("any", "upper", "none"):
            raise ValueError(f"initials must be 'any', 'upper' or 'none', not {self.initials!r}")

    def __contains__(self, word: object) -> bool:
        if not isinstance(word, str) or not word:
            return False
        if self.parts:
            return any(self._whole(p) for p in _word_parts(word))
        return self._whole(word)

    def _whole(self, word: str) -> bool:
        w = word.lower() if self.ignore_case else word
        if self.initials == "any" and len(w) == 1 and w.isalpha():
            return True
        if self.initials == "upper" and len(word) == 1 and "A" <= word <= "Z":
            return True
        if self.capital_end and word[-1].isupper() and (len(word) == 1 or not word[-2].isupper()):
            return True
        return w in self.words


_PART_START = re.compile(r"(?<=\W)(?=\w)")


def _word_parts(word: str) -> list[str]:
    """``word`` and each of its suffixes that starts a word after a non-word character."""
    return [word, *(word[m.start():] for m in _PART_START.finditer(word))]


#: Case reports (PHEE), the default: common abbreviations of case reports, compared
#: lower-cased; any single letter is an initial.
PROSE_ABBREVIATIONS = Abbreviations(frozenset({
    "e.g", "i.e", "dr", "mr", "mrs", "ms", "vs", "fig", "figs", "al", "approx", "no",
    "ca", "resp", "cf", "st", "wk", "wks", "mo", "mos", "yr", "yrs", "inc", "ltd",
}), initial_after_lower=False)
#: Trial reports (RoB): case-sensitive (``"No. 3"`` but not ``"no."``), tested on every
#: part of a word (``"(Fig. 2)"``, ``"U.S."``); only an upper-case letter is an initial.
TRIAL_ABBREVIATIONS = Abbreviations(
    frozenset({"e.g", "i.e", "vs", "Fig", "Figs", "al", "approx", "No", "Dr", "Mr", "Mrs", "Ms", "ca", "cf"}),
    ignore_case=False, initials="upper", parts=True,
)
#: Clinical notes (cohort): the words whose period spaCy 3.7's English tokenizer keeps
#: on the word (its tokenizer exceptions: titles, months, US states, company words),
#: compared case-sensitively and on every part of a word (``"(Dr. Haldane)"``); any
#: single letter is an initial, also after a slash or hyphen (``"f/u."``, ``"c/c/e."``,
#: ``"PA-C."``, ``"a.m."``, ``"U.S."``), and so is a word ending in a lone capital
#: (``"2.1 mg/dL."``, ``"vitamin D."``), where spaCy keeps the period on the word too.
#: Kept so that the cohort pipeline's sentences are those of its former token-level
#: splitter (tests/test_text.py checks the list against spaCy's exceptions).
CLINICAL_ABBREVIATIONS = Abbreviations(
    frozenset({
        "Dr", "Mr", "Mrs", "Ms", "Messrs", "Prof", "Jr", "St", "Mt", "Adm", "Gen", "Gov",
        "Rep", "Rev", "Sen", "Jan", "Feb", "Mar", "Apr", "Jun", "Jul", "Aug", "Sep", "Sept",
        "Oct", "Nov", "Dec", "Co", "co", "Corp", "Inc", "Ltd", "Bros", "vs",
        "Ak", "Ala", "Ariz", "Ark", "Calif", "Colo", "Conn", "Del", "Fla", "Ga", "Ia", "Id",
        "Ill", "Ind", "Kan", "Kans", "Ky", "La", "Md", "Mass", "Mich", "Minn", "Miss", "Mo",
        "Mont", "Neb", "Nebr", "Nev", "Okla", "Ore", "Pa", "Tenn", "Va", "Wash", "Wis",
    }),
    ignore_case=False, initials="any", parts=True, capital_end=True,
)

#: The rules of case reports (PHEE): :func:`split_sentences` with no keyword.
CASE_REPORT_RULES: dict[str, Any] = {}
#: The rules of trial reports (RoB evidence segments): no single-line-break rule, glued
#: full stops split (PDF text), :data:`TRIAL_ABBREVIATIONS`.
TRIAL_REPORT_RULES: dict[str, Any] = {"line_breaks": "blank", "glued": True, "abbreviations": TRIAL_ABBREVIATIONS}
#: The rules of clinical notes (cohort): a line break ends a sentence unless the next
#: line continues it, glued full stops split, :data:`CLINICAL_ABBREVIATIONS`.
CLINICAL_NOTE_RULES: dict[str, Any] = {"line_breaks": "lines", "glued": True, "abbreviations": CLINICAL_ABBREVIATIONS}

_PUNCT = r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9])"
_GLUED = r"(?<=[a-z0-9][.!?])(?=[A-Z][a-z])"
_BLANK = r"\n\s*\n"
# "headings" / "blank": end punctuation + whitespace + a capital, digit or quote; a blank line.
_BOUNDARY = re.compile(f"{_PUNCT}|{_BLANK}")
_BOUNDARY_GLUED = re.compile(f"{_PUNCT}|{_GLUED}|{_BLANK}")
# "lines": any whitespace holding a line break (decided by the line rule), or end
# punctuation + exactly one space + a capital or digit.
# The line-break alternative starts only where a whitespace run starts ((?<!\s)), where the
# leftmost match starts anyway: tried inside a long run of spaces, "\s*\n" took quadratic time.
_LINES = re.compile(r"(?<!\s)\s*\n\s*|(?<=[.!?])[ \t]+(?=[A-Z0-9])")
_LINES_GLUED = re.compile(r"(?<!\s)\s*\n\s*|(?<=[.!?])[ \t]+(?=[A-Z0-9])|" + _GLUED)
#: A list item at a line start: ``-`` ``*`` ``•``, ``1.`` ``12)``, ``a.`` ``B) ``.
_BULLET = re.compile(r"\s*(?:[-*•]|\d{1,2}[.)]|[A-Za-z][.)]\s)")
# A line ending in one of these continues or already ends a sentence: never a heading.
_NOT_HEADING_END = ".!?,;"


def split_sentences(text: str, **rules: Any) -> list[Span]:
    """Split plain text into sentence spans (the package's one sentence splitter).

    With no keyword the rules are those of case reports (PHEE), unchanged since
    the first release: boundaries at ``.``/``!``/``?`` + whitespace + an upper-case
    letter or digit (closing quotes and brackets may follow the mark, an opening
    one may precede the capital), at blank lines, and at the line break after a
    heading line; a period after a known abbreviation (``e.g.``, ``Dr.``,
    ``et al.`` ...: :data:`PROSE_ABBREVIATIONS`) or a single letter is not a
    boundary. Leading/trailing whitespace is excluded from each span.

    Heading rule (conservative, so that wrapped prose stays one sentence): a single
    line break ends a sentence when the whole line before it, stripped, does not
    end with ``. ! ? , ;`` and either ends with ``:`` (``Results:``) or has all its
    letters upper case with at least two letters (``CASE REPORT``, ``RESULTS:``).
    ``"CASE REPORT\\nAmiodarone caused ..."`` gives two sentences;
    ``"The patient was given\\namiodarone 200 mg daily."`` stays one.

    Parameters
    ----------
    text : str
        Any text.
    **rules
        Keyword arguments of :func:`sentence_offsets` (``start``, ``end``,
        ``line_breaks``, ``glued``, ``abbreviations``, ``max_chars``).

    Returns
    -------
    list of Span
        Contiguous spans in order, offsets into ``text``; empty for empty or blank
        text.
    """
    return [Span.from_offsets(text, pair) for pair in sentence_offsets(text, **rules)]


def sentence_offsets(
    text: str,
    start: int = 0,
    end: int | None = None,
    *,
    line_breaks: str = "headings",
    glued: bool = False,
    abbreviations: Abbreviations = PROSE_ABBREVIATIONS,
    max_chars: int | None = None,
) -> list[tuple[int, int]]:
    """Sentence offsets of ``text[start:end]``: the rules of :func:`split_sentences`, parameterised.

    Parameters
    ----------
    text : str
        The whole text; offsets are into it.
    start, end : int
        Character range to split (default: all of ``text``). Look-behinds may see
        the characters before ``start``; nothing after ``end`` is looked at.
    line_breaks : {"headings", "blank", "lines"}
        What a single line break does. ``"headings"`` (case reports, the default):
        it ends a sentence only after a heading line (see :func:`split_sentences`).
        ``"blank"`` (trial reports): never; only blank lines and end punctuation
        split. ``"lines"`` (clinical notes, whose lines are list items, headers
        and vital signs): it ends a sentence unless the next line continues the
        previous one — it starts with a lower-case letter, or it is indented — and
        is not a list item (``-``, ``*``, ``•``, ``1.``, ``2)``, ``a.``); end
        punctuation then splits only before exactly one space and an upper-case
        letter or digit (no closing quote or bracket after the mark, no second
        space: where the cohort pipeline's former token-level splitter split,
        kept so that ConText scopes, which end at sentences, stay the same). A
        blank line always ends a sentence.
    glued : bool
        Also split ``.``/``!``/``?`` glued to the next sentence (``"hospital.Design
        was"``: a lower-case letter or digit, the mark, then a capital and a
        lower-case letter), as PDF text extraction leaves it (trial reports).
    abbreviations : Abbreviations
        Words whose period is not a boundary (unless a blank line follows):
        :data:`PROSE_ABBREVIATIONS` (default), :data:`TRIAL_ABBREVIATIONS`,
        :data:`CLINICAL_ABBREVIATIONS`, or your own.
    max_chars : int or None
        Longest sentence in characters; a longer one (a table, a run-on PDF line)
        is cut at the last space before the limit (or at the limit when there is
        none in its second half). None: no limit.

    Returns
    -------
    list of (int, int)
        Half-open character offsets into ``text``, in order, without leading or
        trailing whitespace; empty sentences are dropped.

    Raises
    ------
    ValueError
        For an unknown ``line_breaks`` or a ``max_chars`` below 2.

    Examples
    --------
    >>> note = "Meds:\\naspirin 81 mg\\nNo bleeding."
    >>> [note[s:e] for s, e in sentence_offsets(note, line_breaks="lines")]
    ['Meds:\\naspirin 81 mg', 'No bleeding.']
    """
    if line_breaks not in LINE_BREAK_RULES:
        raise ValueError(f"line_breaks must be one of {', '.join(LINE_BREAK_RULES)}, not {line_breaks!r}")
    if max_chars is not None and max_chars < 2:
        raise ValueError(f"max_chars must be at least 2, not {max_chars}")
    end = len(text) if end is None else end
    out: list[tuple[int, int]] = []
    cur = start
    for cut, resume in _boundaries(text, start, end, line_breaks, glued, abbreviations):
        if cut <= cur:
            continue  # at the range start, or a heading break inside a blank-line boundary taken
        _emit(text, cur, cut, max_chars, out)
        cur = resume
    _emit(text, cur, end, max_chars, out)
    return out


def _boundaries(text: str, start: int, end: int, line_breaks: str, glued: bool,
                abbreviations: Abbreviations) -> list[tuple[int, int]]:
    """Sorted ``(cut, resume)`` offsets: the sentence before ends at ``cut``, the
    next one starts at ``resume`` (leading whitespace is stripped later)."""
    lines = line_breaks == "lines"
    if lines:
        pattern = _LINES_GLUED if glued else _LINES
    else:
        pattern = _BOUNDARY_GLUED if glued else _BOUNDARY
    cuts: list[tuple[int, int]] = []
    seg = start
    for m in pattern.finditer(text, start, end):
        cut = m.start()
        blank = m.group(0).count("\n") >= 2
        if lines and not blank and "\n" in m.group(0):
            if m.end() >= end or _line_dangles(text, seg, cut) or not _line_ends_sentence(text, m.end(), end):
                continue
        elif not blank and text[cut - 1 : cut] == ".":
            word = _last_word(text, seg, cut)
            if word in abbreviations and not _letter_after_lower_word(text, seg, cut, word, abbreviations):
                continue
        cuts.append((cut, m.end()))
        seg = m.end()
    if line_breaks == "headings":
        line_start = start
        for m in re.finditer(r"\n", text[start:end]):
            nl = start + m.start()
            if _is_heading(text[line_start:nl]):
                cuts.append((nl, nl + 1))
            line_start = nl + 1
    return sorted(cuts, key=lambda c: (c[0], -c[1]))


#: A word that cannot end a line of a note: the line goes on ("CAD s/p\nMI/CABG", "h/o\nDVT",
#: "admitted with\nNSTEMI"; blind cohort patient 104 of issue 24's QA).
_DANGLING_END = re.compile(
    r"(?:\b(?:s/p|S/P|h/o|H/O|c/o|w/|of|and|or|with|to|for|the|in|on|at|by|from|after|due)|[,&+/])$")


def _line_dangles(text: str, start: int, cut: int) -> bool:
    """Whether the line before the break at ``cut`` ends with a word that cannot end it."""
    return bool(_DANGLING_END.search(text, max(start, cut - 8), cut))


def _line_ends_sentence(text: str, nxt: int, end: int) -> bool:
    """The ``"lines"`` rule for one line break; ``nxt`` is the next line's first non-space character."""
    line_start = text.rfind("\n", 0, nxt) + 1
    line = text[line_start : min(line_start + 12, end)]
    if _BULLET.match(line):
        return True
    return not (text[nxt].islower() or line[:1] in (" ", "\t"))


_LAST_WORD = re.compile(r"(\S+)\.$")
_WORD_WINDOW = 32  # longer than any abbreviation: a longer word is never one


def _letter_after_lower_word(text: str, start: int, cut: int, word: str, abbreviations: Abbreviations) -> bool:
    """True when ``word`` is a single letter whose previous word starts in lower case and
    ``abbreviations`` does not take such a letter for an initial ("vitamin D.")."""
    if abbreviations.initial_after_lower or len(word) != 1 or not word.isalpha():
        return False
    head = text[max(start, cut - 1 - len(word) - _WORD_WINDOW) : cut - 1 - len(word)]
    if head[-1:].strip():  # the letter is part of a longer token ("U.S." tested as "S"): no
        return False
    words = head.split()
    return bool(words) and words[-1][:1].islower() and words[-1] not in _BEFORE_INITIALS


#: Lower-case words after which a capital and a full stop are still a person's initial
#: ("reported by J. Smith", "Smith and K. Lee").
_BEFORE_INITIALS = frozenset({"by", "and", "&", "to", "from", "with", "of"})


def _last_word(text: str, start: int, cut: int) -> str:
    """The whitespace-delimited word before the period at ``cut - 1`` (``""`` when none).

    The word starts at ``start`` at the earliest. Only the last
    :data:`_WORD_WINDOW` characters are searched, so that a long run without
    spaces costs O(1) per period instead of O(run**2); a word cut by the window
    comes back cut (31 characters: longer than any abbreviation, while its parts,
    see :class:`Abbreviations`, are still those of the whole word).
    """
    word = _LAST_WORD.search(text, max(start, cut - _WORD_WINDOW), cut)
    return "" if word is None else word.group(1)


def _is_heading(line: str) -> bool:
    """True for a heading line: see the heading rule of :func:`split_sentences`."""
    line = line.strip()
    if not line or line[-1] in _NOT_HEADING_END:
        return False
    if line.endswith(":"):
        return True
    letters = [c for c in line if c.isalpha()]
    return len(letters) >= 2 and all(c.isupper() for c in letters)


def _emit(text: str, s: int, e: int, max_chars: int | None, out: list[tuple[int, int]]) -> None:
    """Append ``text[s:e]`` without surrounding whitespace (cut to ``max_chars``) unless empty."""
    while s < e and text[s].isspace():
        s += 1
    while e > s and text[e - 1].isspace():
        e -= 1
    while max_chars is not None and e - s > max_chars:
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
