"""PDF trial reports -> :class:`~clinex.text.Document` with pages, reading order and de-hyphenation.

Text comes from the PDF's text layer through pypdfium2 (PDFium), chosen over
pdfplumber for speed (a 300-page report reads in about a second, see
``tests/test_io_pdf.py``). PDFium gives text *runs* with their boxes
(``FPDFText_CountRects`` / ``FPDFText_GetBoundedText``); this module lays them out:

1. **Columns.** On each page, the x position in the middle 30-70 % of the page
   width crossed by the fewest text runs (widest such stretch, at least 4 pt) is a
   column gutter when at most a third as many runs cross it as lie beside it and
   at least two runs left of it have a run right of it at the same height
   (two-column layout). Runs crossing the gutter (title, full-width tables) cut
   the page into horizontal bands; each band is read left column first, then
   right column.
2. **Lines.** Runs whose vertical extents overlap by half their height form one
   line, read left to right. A vertical gap of more than 0.8 line heights between
   lines starts a new paragraph (blank line).
3. **Hyphenation.** A line ending in ``letter-`` followed by a line starting with a
   lower-case letter loses its line break; the hyphen is kept when the document
   writes the hyphenated form on one line and never the joined one
   ("computer-generated"), dropped when it writes the joined form elsewhere or the
   second part is a word ending ("assign-" + "ment", "follow-" + "ing"), kept when
   the first part is a common compound head (:data:`COMPOUND_HEADS`: "placebo-" +
   "controlled", "well-" + "known") or when both parts occur as words elsewhere
   in the document, and otherwise dropped as a broken syllable ("allo-" + "cated"
   -> "allocated"). See :func:`keep_line_hyphen`.

Typographic ligatures (U+FB00-FB06, "ﬁ") are spelled out ("fi"). Pages are joined with :data:`clinex.io.tagtog.PAGE_SEPARATOR` (a blank line); page
``k`` is ``Document.pages[k-1]``, labelled ``"k"``, so ``Document.page_of(offset)``
gives the 1-based page and ``offset - pages[k-1].start`` the character on it.

Bad input: a 0-byte file, non-PDF data, an encrypted PDF without its password and a
PDF without any text layer (scanned images; OCR it first) raise clear
:mod:`clinex.errors` exceptions; single pages without text are kept empty and
listed in ``meta["pages_without_text"]``.

References
----------
PDFium text API: https://pdfium.googlesource.com/pdfium/+/refs/heads/main/public/fpdf_text.h
Breuel TM. High performance document layout analysis. Proc. Symposium on Document
Image Understanding Technology 2003 (whitespace gutters as column separators).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from clinex.errors import FormatError, InputError
from clinex.text import Document, Fragment, Span

__all__ = ["read_pdf", "GUTTER_ZONE", "MIN_GUTTER", "PARAGRAPH_GAP"]

#: Where (fraction of page width) a column gutter may lie.
GUTTER_ZONE = (0.30, 0.70)
#: A vertical gap larger than this many line heights starts a new paragraph.
PARAGRAPH_GAP = 0.8
#: Smallest gutter width, in PDF points (1/72 inch).
MIN_GUTTER = 4.0

_HYPHENS = "-\u00ad\u2010\x02"
_WORD = re.compile(r"[^\W\d_]+(?:[-\u2010][^\W\d_]+)*")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\ufffe\uffff]")
# Latin ligature code points (U+FB00-FB06) spelled out, so that "ﬁnal" reads "final"
_LIGATURES = str.maketrans({"\ufb00": "ff", "\ufb01": "fi", "\ufb02": "fl", "\ufb03": "ffi",
                            "\ufb04": "ffl", "\ufb05": "st", "\ufb06": "st"})


@dataclass
class _Run:
    left: float
    bottom: float
    right: float
    top: float
    text: str

    @property
    def height(self) -> float:
        return max(self.top - self.bottom, 1e-6)


def _open(path: Path, password: str | None):
    import pypdfium2 as pdfium

    try:
        return pdfium.PdfDocument(str(path), password=password)
    except pdfium.PdfiumError as exc:
        msg = str(exc).lower()
        if "password" in msg:
            raise InputError(
                "encrypted PDF: a password is needed to read it"
                + (" (the one given is wrong)" if password else ""),
                path=path,
            ) from None
        if "format" in msg or "file" in msg:
            raise FormatError(f"not a readable PDF ({exc})", path=path) from None
        raise FormatError(f"PDF could not be opened ({exc})", path=path) from None


def _runs(textpage) -> list[_Run]:
    runs = []
    for i in range(textpage.count_rects()):
        left, bottom, right, top = textpage.get_rect(i)
        text = _CONTROL.sub(lambda m: "-" if m.group(0) == "\x02" else "",
                            textpage.get_text_bounded(left, bottom, right, top))
        text = text.replace("\r\n", " ").replace("\n", " ").translate(_LIGATURES).strip()
        if text:
            runs.append(_Run(left, bottom, right, top, text))
    return runs


def _gutter(runs: list[_Run], width: float) -> float | None:
    """x of the column gutter, or None for a one-column page (see module docstring)."""
    if len(runs) < 4:
        return None
    zone_lo, zone_hi = GUTTER_ZONE[0] * width, GUTTER_ZONE[1] * width
    # piecewise-constant count of runs crossing x over the zone (sweep over run edges)
    events = [(zone_lo, 0)]
    for r in runs:
        if r.right > zone_lo and r.left < zone_hi:
            events.append((max(r.left, zone_lo), 1))
            events.append((min(r.right, zone_hi), -1))
    events.append((zone_hi, 0))
    events.sort()
    crossing = 0
    best: tuple[int, float, float, float] | None = None  # (count, -width, lo, hi)
    for (x0, d), (x1, _) in zip(events, events[1:]):
        crossing += d
        if x1 - x0 >= MIN_GUTTER:
            cand = (crossing, -(x1 - x0), x0, x1)
            if best is None or cand[:2] < best[:2]:
                best = cand
    if best is None:
        return None
    count, _, lo, hi = best
    x = (lo + hi) / 2
    left = [r for r in runs if r.right <= x]
    right = [r for r in runs if r.left >= x]
    if count * 3 > len(left) + len(right):
        return None
    paired = sum(
        1 for a in left if any(min(a.top, b.top) - max(a.bottom, b.bottom) > 0 for b in right)
    )
    return x if paired >= 2 else None


def _lines(runs: list[_Run]) -> list[list[_Run]]:
    lines: list[list[_Run]] = []
    for r in sorted(runs, key=lambda r: (-r.top, r.left)):
        if lines:
            last = lines[-1]
            lo = max(min(x.bottom for x in last), r.bottom)
            hi = min(max(x.top for x in last), r.top)
            if hi - lo >= 0.5 * min(r.height, max(x.height for x in last)):
                last.append(r)
                continue
        lines.append([r])
    return [sorted(line, key=lambda r: r.left) for line in lines]


def _line_text(line: list[_Run]) -> str:
    out = line[0].text
    for prev, cur in zip(line, line[1:]):
        gap = cur.left - prev.right
        out += (" " if gap > 0.15 * cur.height else "") + cur.text
    return out


def _blocks(runs: list[_Run], width: float) -> tuple[list[list[tuple[str, float, float]]], int]:
    """Blocks (lists of (line text, top, bottom)) in reading order, and the column count."""
    x = _gutter(runs, width)
    if x is None:
        groups = [runs]
    else:
        crossing = sorted((r for r in runs if r.left < x < r.right), key=lambda r: -r.top)
        cuts = [(r.top + r.bottom) / 2 for r in crossing]
        groups = []
        for band in range(len(cuts) + 1):
            upper = cuts[band - 1] if band > 0 else float("inf")
            lower = cuts[band] if band < len(cuts) else float("-inf")
            inside = [r for r in runs if not (r.left < x < r.right)
                      and lower < (r.top + r.bottom) / 2 < upper]
            groups.append([r for r in inside if r.right <= x])
            groups.append([r for r in inside if r.left >= x])
            if band < len(crossing):
                groups.append([crossing[band]])
    blocks = []
    for g in groups:
        if g:
            blocks.append([(_line_text(line), max(r.top for r in line), min(r.bottom for r in line))
                           for line in _lines(g)])
    return blocks, 1 if x is None else 2


def _join_page(blocks: list[list[tuple[str, float, float]]], keep_hyphen: _Vocabulary) -> str:
    parts: list[str] = []
    for block in blocks:
        if parts:
            parts.append("\n\n")
        prev = None
        for text, top, bottom in block:
            if prev is not None:
                ptext, ptop, pbottom = prev
                height = max(ptop - pbottom, 1e-6)
                if pbottom - top > PARAGRAPH_GAP * height:
                    parts.append("\n\n")
                elif _hyphenated(ptext, text):
                    head = re.search(r"(\w+)[" + _HYPHENS + r"]$", ptext).group(1)  # type: ignore[union-attr]
                    tail = re.match(r"\w+", text).group(0)  # type: ignore[union-attr]
                    parts[-1] = parts[-1][:-1]  # drop the hyphen
                    if keep_line_hyphen(head, tail, keep_hyphen):
                        parts[-1] += "-"
                    prev = (text, top, bottom)
                    parts.append(text)
                    continue
                else:
                    parts.append("\n")
            parts.append(text)
            prev = (text, top, bottom)
    return "".join(parts)


def _hyphenated(prev: str, cur: str) -> bool:
    return (len(prev) >= 2 and prev[-1] in _HYPHENS and prev[-2].isalpha()
            and cur[:1].islower())


#: First parts of compounds that keep their hyphen at a line break ("placebo-" +
#: "controlled", "well-" + "known"): whole words that head hyphenated compounds in
#: trial reports, not prefixes that also start single words ("pre-", "co-", "sub-").
COMPOUND_HEADS = frozenset({
    "placebo", "well", "double", "single", "triple", "open", "follow", "self", "non",
    "long", "short", "time", "dose", "evidence", "intention", "computer", "block", "sex",
    "age", "high", "low", "full", "cross", "quasi", "all", "day", "week", "month", "year",
    "care", "cost", "risk", "patient", "investigator", "assessor", "outcome", "treatment",
    "health", "web", "end", "blood", "heart", "case", "group", "cluster", "one", "two",
    "three", "four", "first", "second", "third", "side", "drug", "study", "participant",
    "community", "hospital", "home", "person", "face", "hand", "real",
})

#: Word endings that are never a word of their own: a line starting with one
#: continues the word broken before it ("assign-" + "ment", "follow-" + "ing").
_SUFFIXES = frozenset({
    "ing", "ings", "ed", "er", "ers", "ly", "ness", "ment", "ments", "tion", "tions",
    "sion", "sions", "al", "ally", "ity", "ities", "ive", "ives", "ous", "able", "ible",
    "ance", "ances", "ence", "ences", "ure", "ures", "es", "s", "ation", "ations", "ised",
    "ized", "ise", "ize", "ising", "izing", "ant", "ants", "ent", "ents", "ism", "ist",
    "ists",
})


class _Vocabulary:
    """Word counts of a document, for deciding line-end hyphens (see :func:`keep_line_hyphen`)."""

    def __init__(self) -> None:
        self.hyphenated: Counter[str] = Counter()
        self.words: Counter[str] = Counter()


def _keep_hyphen(pages: list[list[list[tuple[str, float, float]]]]) -> _Vocabulary:
    """Count the document's words, leaving out the pieces around line-end hyphens."""
    vocab = _Vocabulary()
    for blocks in pages:
        for block in blocks:
            prev_broken = False
            for text, _, _ in block:
                words = _WORD.findall(text)
                broken = len(text) >= 2 and text[-1] in _HYPHENS and text[-2].isalpha()
                if prev_broken and words and text[:1].islower():
                    words = words[1:]  # the tail of the word broken at the line before
                if broken and words:
                    words = words[:-1]  # the head of a word broken at this line's end
                for w in words:
                    w = w.lower()
                    if "-" in w or "\u2010" in w:
                        vocab.hyphenated[w.replace("\u2010", "-")] += 1
                    else:
                        vocab.words[w] += 1
                prev_broken = broken
    return vocab


def keep_line_hyphen(head: str, tail: str, vocab: _Vocabulary) -> bool:
    """Whether the hyphen of ``head-`` at a line end followed by ``tail`` is a real one.

    Parameters
    ----------
    head : str
        The word part before the hyphen (letters).
    tail : str
        The word part starting the next line.
    vocab : _Vocabulary
        The document's other words (pieces around line-end hyphens left out).

    Returns
    -------
    bool
        True to keep ``head-tail``, False to join ``headtail``. In order: the
        hyphenated form written elsewhere and the joined form never -> keep; the
        joined form written elsewhere -> join; ``tail`` a word ending
        (``_SUFFIXES``) -> join; ``head`` in :data:`COMPOUND_HEADS` -> keep; both
        parts (3+ letters) written elsewhere as words -> keep; else join (a
        broken syllable).

    References
    ----------
    The heuristics follow how typeset English breaks words: at syllables
    (hyphen dropped when rejoined) or at the hyphen of a compound (kept);
    Chicago Manual of Style, 17th ed., 7.40-7.47 (word division).
    """
    h, t = head.lower(), tail.lower()
    hyphenated, joined = f"{h}-{t}", h + t
    if vocab.hyphenated.get(hyphenated) and not vocab.words.get(joined):
        return True
    if vocab.words.get(joined):
        return False
    if t in _SUFFIXES:
        return False
    if h in COMPOUND_HEADS:
        return True
    return len(h) >= 3 and len(t) >= 3 and bool(vocab.words.get(h)) and bool(vocab.words.get(t))


def read_pdf(path: str | Path, *, password: str | None = None) -> Document:
    """Read a PDF's text layer as one document with page spans.

    Parameters
    ----------
    path : str or Path
        The PDF file.
    password : str, optional
        For encrypted PDFs.

    Returns
    -------
    Document
        ``id`` = file stem; pages labelled ``"1"``..``"n"`` (every page has a span,
        possibly empty); ``meta`` = ``{"source", "format": "pdf", "n_pages",
        "columns": [1 or 2 per page], "pages_without_text": [page numbers]}``.
        Sentences and sections are left to :func:`clinex.io.load.load_document`.

    Raises
    ------
    InputError
        No such file; encrypted PDF without (or with a wrong) password.
    FormatError
        0-byte file, not a PDF, no pages, or no text layer on any page (a scanned
        PDF: run OCR, e.g. ocrmypdf, first).
    """
    p = Path(path)
    if not p.is_file():
        raise InputError("no such file", path=p)
    if p.stat().st_size == 0:
        raise FormatError("empty file (0 bytes), expected a PDF", path=p)
    pdf = _open(p, password)
    try:
        n = len(pdf)
        if n == 0:
            raise FormatError("PDF has no pages", path=p)
        layouts = []
        columns = []
        for i in range(n):
            page = pdf[i]
            try:
                textpage = page.get_textpage()
                try:
                    blocks, ncol = _blocks(_runs(textpage), page.get_width())
                finally:
                    textpage.close()
            finally:
                page.close()
            layouts.append(blocks)
            columns.append(ncol)
    finally:
        pdf.close()
    keep = _keep_hyphen(layouts)
    texts = [_join_page(blocks, keep) for blocks in layouts]
    empty = [i + 1 for i, t in enumerate(texts) if not t.strip()]
    if len(empty) == n:
        raise FormatError(
            f"no text layer on any of the {n} page(s): a scanned PDF? Run OCR (e.g. ocrmypdf) first",
            path=p,
        )
    from clinex.io.tagtog import PAGE_SEPARATOR

    pages = []
    pos = 0
    for i, t in enumerate(texts):
        if i:
            pos += len(PAGE_SEPARATOR)
        pages.append(Span(fragments=(Fragment(start=pos, end=pos + len(t), text=t),), label=str(i + 1)))
        pos += len(t)
    return Document(
        id=p.stem,
        text=PAGE_SEPARATOR.join(texts),
        pages=tuple(pages),
        meta={"source": str(p), "format": "pdf", "n_pages": n, "columns": columns,
              "pages_without_text": empty},
    )
