"""PDF trial reports -> :class:`~clinex.text.Document` with pages, reading order and de-hyphenation.

Text comes from the PDF's text layer through pypdfium2 (PDFium), chosen over
pdfplumber for speed (a 300-page report reads in about a second, see
``tests/io/test_io_pdf.py``). PDFium gives text *runs* with their boxes
(``FPDFText_CountRects`` / ``FPDFText_GetBoundedText``, or character by character where rectangles
overlap, see :func:`_runs`); this module lays them out:

0. **Runs.** Runs that PDFium reads one after the other on one line, less than
   :data:`JOIN_GAP` line heights apart, are one run (:func:`clinex.io.pdf_layout._merge_runs`):
   Chromium draws a text object per kerning pair and per justified word.
1. **Columns.** On each page, the x position in the middle 30-70 % of the page
   width crossed by the fewest text runs (widest such stretch, at least 4 pt) is a
   column gutter when at most a third as many runs cross it as lie beside it and
   at least two runs left of it have a run right of it at the same height
   (two-column layout). Runs crossing the gutter (title, full-width tables) cut
   the page into horizontal bands; each band is read left column first, then
   right column.
2. **Lines.** Runs whose vertical extents overlap by half their height form one
   line, read left to right, with a space between two runs more than 0.15 times
   the taller one's height apart. A vertical gap of more than 0.8 line heights between
   lines starts a new paragraph (blank line).
3. **Hyphenation.** A line ending in ``letter-`` followed by a line starting with a
   lower-case letter loses its line break; the hyphen is kept when the document
   writes the hyphenated form on one line and never the joined one
   ("computer-generated"), dropped when it writes the joined form elsewhere or the
   second part is a word ending ("assign-" + "ment", "follow-" + "ing"), kept when
   the first part is itself hyphenated (a compound broken at one of its hyphens:
   "intention-to-" + "treat"), when the first part is a common compound head
   (:data:`COMPOUND_HEADS`: "placebo-" + "controlled", "well-" + "known") or when
   both parts occur as words elsewhere
   in the document, and otherwise dropped as a broken syllable ("allo-" + "cated"
   -> "allocated"). See :func:`keep_line_hyphen`.

Typographic ligatures (U+FB00-FB06, "ﬁ") are spelled out ("fi"). Pages are joined with :data:`clinex.text.PAGE_SEPARATOR` (a blank line); page
``k`` is ``Document.pages[k-1]``, labelled ``"k"``, so ``Document.page_of(offset)``
gives the 1-based page and ``offset - pages[k-1].start`` the character on it.

Bad input: a 0-byte file, non-PDF data, an encrypted PDF without its password and a
PDF without any text layer (scanned images; OCR it first) raise clear
:mod:`clinex.errors` exceptions; single pages without text are kept empty and
listed in ``meta["pages_without_text"]``.

Bounded work: before PDFium parses a page, the file's streams are inflated in
chunks and counted, never kept (:mod:`clinex.io.pdf_checks`), so a
Flate bomb is refused at :data:`~clinex.io.limits.MAX_PDF_INFLATED_BYTES` /
:data:`~clinex.io.limits.MAX_PDF_PAGE_CONTENT_BYTES` without taking memory; pages
per document and text runs per page are capped too (:mod:`clinex.io.limits`), and
the layout is ``O(n log n)`` in the text runs of a page. A page tree whose
``/Kids`` point back to an ancestor is refused as a :class:`~clinex.errors.FormatError`.
The pre-checks are linear in the file: a line of the PDF's structure (outside stream
data) longer than :data:`~clinex.io.limits.MAX_PDF_LINE_BYTES` is refused by a linear
scan before pdfminer reads anything (:func:`clinex.io.pdf_checks._check_lines`), and
pdfminer reads the file through :func:`clinex.io.pdf_checks._parser`, whose line reader
and buffer are linear in a line's or a token's length (pdfminer's own are quadratic: a
16 MB line took 20-80 s).

Modules: this one reads the text runs from PDFium and builds the document;
:mod:`clinex.io.pdf_checks` holds the bounded-work checks run before PDFium parses
the file, :mod:`clinex.io.pdf_filters` the filter chain they count, and
:mod:`clinex.io.pdf_layout` the reading order and line-end hyphens (steps 0-3).

Threads: PDFium is not thread-safe. pypdfium2's documentation ("Python API",
"Incompatibility with Threading") says that pdfium functions must never be called
from two threads at once, "not even with different documents" (doing so "would
crash or corrupt the process"), and that a mutex making one pdfium call at a time
is the way to use it from threads. Two web requests reading a PDF each on a worker
thread aborted the server ("double free or corruption", issue 21). Every PDFium
call of clinex (opening, page count, page and text-page loads, text runs, closes)
is therefore made holding :data:`PDFIUM_LOCK`, one lock for the process; the
stream checks (pdfminer, pure Python) and the layout run outside it, so other
threads only wait for the PDFium part of a read. Code outside this module that
calls pypdfium2 must hold the same lock.

References
----------
PDFium text API: https://pdfium.googlesource.com/pdfium/+/refs/heads/main/public/fpdf_text.h
pypdfium2, Python API, "Incompatibility with Threading":
https://pypdfium2-team.github.io/pypdfium2/python_api.html
Breuel TM. High performance document layout analysis. Proc. Symposium on Document
Image Understanding Technology 2003 (whitespace gutters as column separators).
"""

from __future__ import annotations

import re
import threading
from pathlib import Path

from clinex.errors import FormatError, InputError
from clinex.io import limits
from clinex.io.pdf_checks import _check_pages, _check_streams, _parser, _TooMuch  # noqa: F401 (_parser: re-exported)
from clinex.io.pdf_layout import (  # noqa: F401 (names of the layout re-exported here, where they were)
    COMPOUND_HEADS,
    GUTTER_ZONE,
    JOIN_GAP,
    JOIN_OVERLAP,
    MIN_GUTTER,
    PARAGRAPH_GAP,
    _blocks,
    _join_page,
    _keep_hyphen,
    _merge_runs,
    _Run,
    _Vocabulary,
    keep_line_hyphen,
)
from clinex.text import PAGE_SEPARATOR, Document, Fragment, Span

__all__ = ["read_pdf", "PDFIUM_LOCK", "GUTTER_ZONE", "JOIN_GAP", "JOIN_OVERLAP", "MIN_GUTTER", "PARAGRAPH_GAP"]

#: The one lock of the process around every PDFium call (pypdfium2 is not
#: thread-safe, see the module docstring). Re-entrant, so a helper that takes it
#: may be called by code already holding it.
PDFIUM_LOCK = threading.RLock()

#: Pages with at most this many text rectangles ask PDFium for each one's text
#: (C speed, cost rectangles x characters); busier pages are read character by
#: character (Python speed, cost linear in characters). See :func:`_runs`.
_BOUNDED_RUNS = 2_000
#: PDFium's kSizeEpsilon: characters with a smaller box are in no text rectangle.
_EPSILON = 0.01
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\ufffe\uffff]")
# Latin ligature code points (U+FB00-FB06) spelled out, so that "ﬁnal" reads "final"
_LIGATURES = str.maketrans({"\ufb00": "ff", "\ufb01": "fi", "\ufb02": "fl", "\ufb03": "ffi",
                            "\ufb04": "ffl", "\ufb05": "st", "\ufb06": "st"})


def _open(path: Path, password: str | None):
    """Open the PDF with PDFium (the caller holds :data:`PDFIUM_LOCK`)."""
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


def _clean(text: str) -> str:
    """Control characters out (PDFium's ``\\x02`` soft hyphen as ``-``), line feeds as
    spaces, ligatures spelled out; leading and trailing spaces are kept for
    :func:`clinex.io.pdf_layout._merge_runs` (they are PDFium's word breaks between text objects)."""
    text = _CONTROL.sub(lambda m: "-" if m.group(0) == "\x02" else "", text)
    return text.replace("\r\n", " ").replace("\n", " ").translate(_LIGATURES)


def _runs(textpage) -> list[_Run]:
    """The page's text runs, in PDFium's character order.

    A run is what ``FPDFText_GetRect`` calls a rectangle: consecutive characters of
    one text object, leaving out generated characters and characters with an empty
    box, boxed by the union of their boxes; its text keeps the spaces around it
    (PDFium's own, real or generated, word breaks). Asking PDFium for each
    rectangle's text (``FPDFText_GetBoundedText``) scans the whole page per
    rectangle, which is fastest for ordinary pages but quadratic (minutes for a
    page of 30,000 runs), and it returns every character whose box touches the
    rectangle, so where rectangles overlap a character is read twice (Chromium's
    PDFs start a new text object at each kerning pair: the "A" of ". A" reached
    into the rectangle of ". " and "four. Allocation" read "four. AAllocation").
    Pages with more than :data:`_BOUNDED_RUNS` rectangles, or with two rectangles
    that overlap (:func:`_overlapping`), are therefore read character by character
    instead, once each (linear, each character in exactly one run).
    """
    import ctypes

    import pypdfium2.raw as raw

    n_rects = textpage.count_rects()
    if n_rects > limits.MAX_PDF_TEXT_RUNS_PER_PAGE:
        raise _TooMuch(f"{n_rects:,} text runs, more than MAX_PDF_TEXT_RUNS_PER_PAGE = "
                       f"{limits.MAX_PDF_TEXT_RUNS_PER_PAGE:,} (clinex.io.limits)")
    by_char = hasattr(raw, "FPDFText_GetTextObject")
    if n_rects <= _BOUNDED_RUNS or not by_char:
        rects = [textpage.get_rect(i) for i in range(n_rects)]
        if not by_char or not _overlapping(rects):
            return _runs_bounded(textpage, rects)
    tp = textpage.raw
    n = raw.FPDFText_CountChars(tp)
    left, right, bottom, top = (ctypes.c_double() for _ in range(4))
    refs = [ctypes.byref(v) for v in (left, right, bottom, top)]
    get_box, get_obj = raw.FPDFText_GetCharBox, raw.FPDFText_GetTextObject
    get_unicode, is_generated = raw.FPDFText_GetUnicode, raw.FPDFText_IsGenerated
    runs: list[_Run] = []
    chars: list[str] = []  # the current run's text
    box: list[float] | None = None  # the current run's [left, bottom, right, top]
    obj = None
    for i in range(n):
        code = get_unicode(tp, i)
        if is_generated(tp, i) == 1:
            if box is not None and code == 32:
                chars.append(" ")
            continue
        char_obj = ctypes.cast(get_obj(tp, i), ctypes.c_void_p).value
        get_box(tp, i, *refs)
        x0, x1, y0, y1 = left.value, right.value, bottom.value, top.value
        if x1 - x0 < _EPSILON or y1 - y0 < _EPSILON:  # no box: not in a rectangle
            if box is not None and (char_obj == obj or code == 32):
                chars.append(chr(code) if 0 < code < 0x110000 else "")
            continue
        if box is None or char_obj != obj:
            if box is not None:
                _add_run(runs, box, chars)
            box, chars, obj = [x0, y0, x1, y1], [], char_obj
        else:
            box[0], box[1] = min(box[0], x0), min(box[1], y0)
            box[2], box[3] = max(box[2], x1), max(box[3], y1)
        chars.append(chr(code) if 0 < code < 0x110000 else "")
    if box is not None:
        _add_run(runs, box, chars)
    return runs


def _add_run(runs: list[_Run], box: list[float], chars: list[str]) -> None:
    text = _clean("".join(chars))
    if text:
        runs.append(_Run(box[0], box[1], box[2], box[3], text))


def _runs_bounded(textpage, rects: list[tuple[float, float, float, float]]) -> list[_Run]:
    """Runs as PDFium's rectangles (left, bottom, right, top), each rectangle's text asked for separately."""
    runs = []
    for left, bottom, right, top in rects:
        text = _clean(textpage.get_text_bounded(left, bottom, right, top))
        if text:
            runs.append(_Run(left, bottom, right, top, text))
    return runs


#: Comparisons :func:`_overlapping` makes per rectangle before it gives up and
#: answers True (the character-by-character reading is right for every page).
_OVERLAP_BUDGET = 64


def _overlapping(rects: list[tuple[float, float, float, float]]) -> bool:
    """Whether two of the (left, bottom, right, top) rectangles overlap by more than
    :data:`_EPSILON` both ways. A sweep from the bottom up compares each rectangle
    with those whose vertical extent it meets (on text pages: its own line), at most
    :data:`_OVERLAP_BUDGET` times the number of rectangles in all (then True)."""
    import heapq

    order = sorted(rects, key=lambda r: r[1])
    active: list[tuple[float, int]] = []  # (top, index into order), lowest top first
    budget = _OVERLAP_BUDGET * len(rects)
    for i, (left, bottom, right, top) in enumerate(order):
        while active and active[0][0] <= bottom + _EPSILON:
            heapq.heappop(active)
        budget -= len(active)
        if budget < 0:
            return True
        for _, j in active:
            other = order[j]
            if (min(right, other[2]) - max(left, other[0]) > _EPSILON
                    and min(top, other[3]) - bottom > _EPSILON):
                return True
        heapq.heappush(active, (top, i))
    return False


#: Consecutive runs of one line are one run when the second starts at most this many
#: line heights right of the first's end. Own choice, measured on Chromium's justified
#: text (a text object per word and kerning pair): 94-97 % of the gaps between such
#: runs are under 0.8 (10 pt Liberation and DejaVu Serif justified to 225 and 315 pt,

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
        Sentences and sections are left to the caller (for trial reports,
        :func:`clinex.rob.formats.load.load_document`).

    Raises
    ------
    InputError
        No such file; encrypted PDF without (or with a wrong) password.
    FormatError
        0-byte file, not a PDF, no pages, or no text layer on any page (a scanned
        PDF: run OCR, e.g. ocrmypdf, first); a page that cannot be loaded or a
        page tree whose ``/Kids`` point back to an ancestor (a cycle); a limit of
        :mod:`clinex.io.limits` passed (more than :data:`~clinex.io.limits.MAX_PDF_PAGES` pages, more
        than :data:`~clinex.io.limits.MAX_PDF_TEXT_RUNS_PER_PAGE` text runs on a page, page content
        past :data:`~clinex.io.limits.MAX_PDF_PAGE_CONTENT_BYTES` or streams past
        :data:`~clinex.io.limits.MAX_PDF_INFLATED_BYTES` decompressed, a line outside stream
        data longer than :data:`~clinex.io.limits.MAX_PDF_LINE_BYTES`), the message naming the
        page (or object, or byte offset) and the limit.
    """
    p = Path(path)
    if not p.is_file():
        raise InputError("no such file", path=p)
    if p.stat().st_size == 0:
        raise FormatError("empty file (0 bytes), expected a PDF", path=p)
    with PDFIUM_LOCK:
        pdf = _open(p, password)
        try:
            n = len(pdf)
        except BaseException:
            pdf.close()
            raise
    try:
        if n == 0:
            raise FormatError("PDF has no pages", path=p)
        if n > limits.MAX_PDF_PAGES:
            raise FormatError(f"{n:,} pages, more than MAX_PDF_PAGES = {limits.MAX_PDF_PAGES:,} "
                              "(clinex.io.limits)", path=p)
        layouts, columns = _layouts(pdf, p, password, n)
    finally:
        with PDFIUM_LOCK:
            pdf.close()
    return _document(p, n, layouts, columns)


def _layouts(pdf, p: Path, password: str | None, n: int) -> tuple[list, list[int]]:
    """Every page's blocks (:func:`clinex.io.pdf_layout._blocks`) and column count,
    after the file's bounded-work checks (:mod:`clinex.io.pdf_checks`); a limit
    passed or too deep a structure raises :class:`~clinex.errors.FormatError`
    naming the page."""
    layouts = []
    columns = []
    page_no = 0
    try:
        _check_streams(p, password, n)
        _check_pages(p, password, n)
        for i in range(n):
            page_no = i + 1
            width, runs = _page_runs(pdf, i, n, p)
            blocks, ncol = _blocks(_merge_runs(runs), width)
            layouts.append(blocks)
            columns.append(ncol)
    except _TooMuch as exc:
        where = f"page {page_no}: " if page_no else ""
        raise FormatError(f"{where}{exc}", path=p) from None
    except RecursionError:
        raise FormatError("PDF structure nested too deeply to read", path=p) from None
    return layouts, columns


def _page_runs(pdf, i: int, n: int, p: Path) -> tuple[float, list[_Run]]:
    """Page ``i`` (0-based) of ``n``: its width and text runs (:func:`_runs`), read
    holding :data:`PDFIUM_LOCK`; a page PDFium cannot load raises
    :class:`~clinex.errors.FormatError`."""
    import pypdfium2 as pdfium

    with PDFIUM_LOCK:
        try:
            page = pdf[i]
        except pdfium.PdfiumError:
            raise FormatError(
                f"page {i + 1} of {n} could not be loaded (a broken page tree?)",
                path=p) from None
        try:
            width = page.get_width()
            textpage = page.get_textpage()
            try:
                runs = _runs(textpage)
            finally:
                textpage.close()
        finally:
            page.close()
    return width, runs


def _document(p: Path, n: int, layouts: list, columns: list[int]) -> Document:
    """The :class:`~clinex.text.Document` of the pages' layouts: hyphens decided over
    the whole document, pages joined with :data:`~clinex.text.PAGE_SEPARATOR`;
    raises :class:`~clinex.errors.FormatError` when no page has text."""
    keep = _keep_hyphen(layouts)
    texts = [_join_page(blocks, keep) for blocks in layouts]
    empty = [i + 1 for i, t in enumerate(texts) if not t.strip()]
    if len(empty) == n:
        raise FormatError(
            f"no text layer on any of the {n} page(s): a scanned PDF? Run OCR (e.g. ocrmypdf) first",
            path=p,
        )
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
