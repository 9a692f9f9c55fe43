"""Evidence units: sentence-like segments of PDF-extracted trial text.

Text extracted from PDF pages often glues sentences together
(``"...from hospital.Design Single blind..."``) and runs table rows into one
long line, so :func:`segment_document` splits each page on its own with the
package's one sentence splitter (:func:`clinex.text.sentence_offsets`) under the
trial-report rules (:data:`clinex.text.TRIAL_REPORT_RULES`: a single line break
never ends a sentence, a blank line always does, a full stop glued to the next
capitalised word also does, :data:`clinex.text.TRIAL_ABBREVIATIONS`), and cuts
segments longer than ``max_chars`` at whitespace. Segments never cross a section
heading (:func:`clinex.rob.sections.find_headings`) or a short sub-heading line
("Study design" alone on its line before a capitalised line) or a run-in label
("Background:" in a structured abstract), and the heading text itself is left
out of every segment; a segment that is a bare heading line anyway (one at a page
break: :func:`is_heading_line`) is dropped, except the first (the title). Offsets are always into ``Document.text`` (half-open).

The structure is computed once per report: :func:`with_structure` (called by
:func:`clinex.rob.assess.assess` and :func:`clinex.rob.assess.load_trial`) fills the
document's sections (:func:`clinex.rob.formats.structure.add_structure`) and puts the
segments in ``Document.sentences`` (source :data:`SEGMENT_SOURCE`); every evidence model
reads them back with :func:`document_segments` and :func:`document_sections`, which
compute them only for a document that does not carry them.
"""

from __future__ import annotations

import re

from clinex.text import TRIAL_REPORT_RULES, Document, Span, sentence_offsets

__all__ = [
    "SEGMENT_SOURCE", "document_sections", "document_segments", "heading_ranges", "is_heading_line",
    "normalise", "segment_document", "with_structure",
]

SEGMENT_SOURCE = "clinex.rob.segments.v1"
"""``source`` of the evidence segments :func:`with_structure` stores as a document's
sentences (``clinex.rob.segments.v1:<max_chars>``)."""


def _segment_source(max_chars: int) -> str:
    return f"{SEGMENT_SOURCE}:{max_chars}"


def with_structure(document: Document, *, max_chars: int = 500) -> Document:
    r"""The document with its sections and evidence segments, computed once for every model.

    Parameters
    ----------
    document : Document
    max_chars : int, default 500
        Longest segment (as for :func:`segment_document`; the evidence models' default).

    Returns
    -------
    Document
        Sections as the reader found them, else :func:`clinex.rob.sections.detect_sections`
        (through :func:`clinex.rob.formats.structure.add_structure`); ``sentences`` the
        :func:`segment_document` segments (``source`` ``clinex.rob.segments.v1:<max_chars>``),
        unless they already are. ``document`` itself when nothing was to be done.

    Examples
    --------
    >>> doc = with_structure(Document(id="t", text="Methods\nPatients were randomised. Nobody knew."))
    >>> [s.text for s in doc.sentences], [s.label for s in doc.sections]
    (['Patients were randomised.', 'Nobody knew.'], ['methods'])
    >>> document_segments(doc) == segment_document(doc)
    True
    """
    if not document.sections:
        from clinex.rob.formats.structure import add_structure

        document = add_structure(document, sentences=False, sections=True)
    if _stored_segments(document, max_chars) is not None:
        return document
    text = document.text
    source = _segment_source(max_chars)
    spans = tuple(Span.from_offsets(text, (s, e), source=source)
                  for s, e in segment_document(document, max_chars=max_chars))
    return document.model_copy(update={"sentences": spans})


def _stored_segments(document: Document, max_chars: int) -> list[tuple[int, int]] | None:
    """The segments :func:`with_structure` stored for ``max_chars``, or None."""
    source = _segment_source(max_chars)
    if not document.sentences or any(s.source != source for s in document.sentences):
        return None
    return [(s.start, s.end) for s in document.sentences]


def document_segments(document: Document, *, max_chars: int = 500) -> list[tuple[int, int]]:
    """The document's evidence segments: those :func:`with_structure` stored, else computed.

    Parameters
    ----------
    document : Document
    max_chars : int, default 500
        As for :func:`segment_document`.

    Returns
    -------
    list of (int, int)
        Half-open offsets into ``document.text``, equal to
        ``segment_document(document, max_chars=max_chars)``.
    """
    stored = _stored_segments(document, max_chars)
    return stored if stored is not None else segment_document(document, max_chars=max_chars)


def document_sections(document: Document) -> list[Span]:
    """The document's sections: its own (a reader's, or :func:`with_structure`'s), else
    :func:`clinex.rob.sections.detect_sections` now."""
    if document.sections:
        return list(document.sections)
    from clinex.rob.sections import detect_sections

    return detect_sections(document)


def segment_document(document: Document, *, max_chars: int = 500) -> list[tuple[int, int]]:
    """Segments of a document, never crossing a page boundary.

    Parameters
    ----------
    document : Document
        With or without ``pages``; without pages the whole text is one range.
    max_chars : int
        Longest segment in characters; longer ones (tables, run-on PDF lines) are
        cut at the last whitespace before the limit (``max_chars`` of
        :func:`clinex.text.sentence_offsets`).

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
                out.extend(sentence_offsets(text, cur, gs, **TRIAL_REPORT_RULES, max_chars=max_chars))
            cur = max(cur, ge)
        if cur < end:
            out.extend(sentence_offsets(text, cur, end, **TRIAL_REPORT_RULES, max_chars=max_chars))
    # the first segment is the title ("A randomised trial of drug Y"), which may be short
    return out[:1] + [(s, e) for s, e in out[1:] if not is_heading_line(text[s:e])]


# A bare heading line: one to six words of letters (no digits, no sentence punctuation)
# without an auxiliary verb ("Randomisation and allocation concealment", "Participants").
_HEADING_LINE = re.compile(r"[A-Z][A-Za-z&/\-]*(?:[ \t]+[A-Za-z&/\-]+){0,5}[ \t]*:?")
_AUXILIARY = re.compile(r"\b(?:is|are|was|were|be|been|has|have|had|did|do|does|will|would|could|can|may)\b", re.I)


def is_heading_line(segment: str) -> bool:
    """Whether a segment is a bare heading line, which is never evidence.

    Parameters
    ----------
    segment : str
        The segment's text (leading and trailing whitespace ignored).

    Returns
    -------
    bool
        True for one to six words of letters on one line, starting with a capital,
        without digits, sentence punctuation or an auxiliary verb. A sub-heading that
        :func:`heading_ranges` did not catch (one at a page break) is still no sentence.

    References
    ----------
    CONSORT 2010 (Schulz et al., BMJ 2010;340:c332): sub-section headings
    ("Randomisation", "Allocation concealment mechanism") are labels, not statements
    about the trial; docs/rob.md: headings are never evidence (clinex's rule).
    """
    seg = segment.strip()
    return bool(_HEADING_LINE.fullmatch(seg)) and not _AUXILIARY.search(seg)


# A short capitalised line alone (at most 4 words, no sentence punctuation, not ending
# in a function word), followed by a line starting with a capital, also after blank
# lines (PDF text: "Randomisation and allocation concealment\n\nThe randomisation ..."):
# a sub-heading.
_SUBHEADING = re.compile(
    r"(?m)^[ \t]*(?P<h>[A-Z][A-Za-z/&\-]*(?:[ \t]+[A-Za-z/&\-]+){0,3})[ \t]*:?[ \t]*\n(?=(?:[ \t]*\n)*[ \t]*[A-Z0-9])"
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
