"""PDF trial reports -> :class:`~clinex.text.Document` with pages, reading order and de-hyphenation.

Text comes from the PDF's text layer through pypdfium2 (PDFium), chosen over
pdfplumber for speed (a 300-page report reads in about a second, see
``tests/io/test_io_pdf.py``). PDFium gives text *runs* with their boxes
(``FPDFText_CountRects`` / ``FPDFText_GetBoundedText``, or character by character where rectangles
overlap, see :func:`_runs`); this module lays them out:

0. **Runs.** Runs that PDFium reads one after the other on one line, less than
   :data:`JOIN_GAP` line heights apart, are one run (:func:`_merge_runs`):
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
chunks and counted, never kept (:func:`_check_streams`, :func:`_check_pages`), so a
Flate bomb is refused at :data:`~clinex.io.limits.MAX_PDF_INFLATED_BYTES` /
:data:`~clinex.io.limits.MAX_PDF_PAGE_CONTENT_BYTES` without taking memory; pages
per document and text runs per page are capped too (:mod:`clinex.io.limits`), and
the layout is ``O(n log n)`` in the text runs of a page. A page tree whose
``/Kids`` point back to an ancestor is refused as a :class:`~clinex.errors.FormatError`.
The pre-checks are linear in the file: a line of the PDF's structure (outside stream
data) longer than :data:`~clinex.io.limits.MAX_PDF_LINE_BYTES` is refused by a linear
scan before pdfminer reads anything (:func:`_check_lines`), and pdfminer reads the file
through :func:`_parser`, whose line reader and buffer are linear in a line's or a
token's length (pdfminer's own are quadratic: a 16 MB line took 20-80 s).

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

import functools
import re
import threading
from bisect import bisect_left
from collections import Counter
from dataclasses import dataclass
from itertools import accumulate
from pathlib import Path

from clinex.errors import FormatError, InputError
from clinex.io import limits
from clinex.text import PAGE_SEPARATOR, Document, Fragment, Span

__all__ = ["read_pdf", "PDFIUM_LOCK", "GUTTER_ZONE", "JOIN_GAP", "JOIN_OVERLAP", "MIN_GUTTER", "PARAGRAPH_GAP"]

#: The one lock of the process around every PDFium call (pypdfium2 is not
#: thread-safe, see the module docstring). Re-entrant, so a helper that takes it
#: may be called by code already holding it.
PDFIUM_LOCK = threading.RLock()

#: Where (fraction of page width) a column gutter may lie.
GUTTER_ZONE = (0.30, 0.70)
#: A vertical gap larger than this many line heights starts a new paragraph.
PARAGRAPH_GAP = 0.8
#: Smallest gutter width, in PDF points (1/72 inch).
MIN_GUTTER = 4.0

#: Pages with at most this many text rectangles ask PDFium for each one's text
#: (C speed, cost rectangles x characters); busier pages are read character by
#: character (Python speed, cost linear in characters). See :func:`_runs`.
_BOUNDED_RUNS = 2_000
#: PDFium's kSizeEpsilon: characters with a smaller box are in no text rectangle.
_EPSILON = 0.01
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


class _TooMuch(Exception):
    """A limit of :mod:`clinex.io.limits` is passed (turned into a FormatError with file and page)."""


class _Found(Exception):
    """The page (1-based) that draws the stream looked for, see :func:`_check_pages`."""

    def __init__(self, page: int) -> None:
        super().__init__(page)
        self.page = page


# the "stream" keyword, not "endstream"; the look-behind after the literal lets the
# regex engine scan for "stream" at C speed (before it: about 30 ns a byte)
_STREAM_KEYWORD = re.compile(rb"stream(?<!endstream)(?:\r\n|\n|\r)")
_OBJ_HEADER = re.compile(rb"(\d+)\s+\d+\s+obj\b")
_IMAGE = re.compile(rb"/Subtype\s*/Image\b")


def _chain(attrs, resolve) -> list[tuple[str, dict | None]] | None:
    """A stream dictionary's filters in order, each with its ``/DecodeParms``
    (int values only), or None when they cannot be read (a broken reference)."""
    from pdfminer.psparser import PSLiteral

    def literal(obj) -> str | None:
        obj = resolve(obj)
        return obj.name if isinstance(obj, PSLiteral) and isinstance(obj.name, str) else None

    def parms(obj) -> dict | None:
        obj = resolve(obj)
        if not isinstance(obj, dict):
            return None
        return {k: v for k, v in ((k, resolve(v)) for k, v in obj.items()) if isinstance(v, int)}

    if not isinstance(attrs, dict):
        return None
    filters = resolve(attrs.get("Filter", attrs.get("F")))
    if filters is None:
        return []
    params = resolve(attrs.get("DecodeParms", attrs.get("DP")))
    if not isinstance(filters, list):
        name = literal(filters)
        return None if name is None else [(name, parms(params))]
    if len(filters) > limits.MAX_PDF_FILTERS:
        raise _TooMuch(f"{len(filters):,} filters on one stream, more than MAX_PDF_FILTERS = "
                       f"{limits.MAX_PDF_FILTERS:,} (clinex.io.limits)")
    params = params if isinstance(params, list) else []
    chain = []
    for i, f in enumerate(filters):
        name = literal(f)
        if name is None:
            return None
        chain.append((name, parms(params[i]) if i < len(params) else None))
    return chain


class _RawObjects:
    """Objects of a PDF file looked up by number in its bytes (no cross-reference
    table needed), for references in stream dictionaries; at most
    :data:`_RAW_LOOKUPS` numbers per file, each looked up once."""

    def __init__(self, data) -> None:
        self.data = data
        self.found: dict[int, object] = {}

    def parse(self, text: bytes):
        """The first PDF object in ``text`` (pdfminer's parser; references left unresolved), or None."""
        from io import BytesIO

        from pdfminer.pdfparser import PDFParser

        try:
            return PDFParser(BytesIO(bytes(text) + b" endobj ")).nextobject()[1]
        except Exception:  # noqa: BLE001 (RecursionError too) - unreadable: None
            return None

    def resolve(self, obj, depth: int = 0):
        from pdfminer.pdftypes import PDFObjRef

        if not isinstance(obj, PDFObjRef):
            return obj
        num = obj.objid
        if num not in self.found:
            if len(self.found) >= _RAW_LOOKUPS or depth > 8:
                raise _Unresolved
            last = None
            for last in re.finditer(rb"(?<![0-9])%d\s+\d+\s+obj\b" % num, self.data):
                pass
            self.found[num] = (_Unresolved if last is None
                               else self.parse(self.data[last.end():last.end() + 4096]))
        value = self.found[num]
        if value is _Unresolved:
            raise _Unresolved
        return self.resolve(value, depth + 1)


class _Unresolved(Exception):
    """A reference that the raw scan cannot follow (the object lies in an object stream)."""


#: Objects :class:`_RawObjects` looks up per file (each costs one pass over the file).
_RAW_LOOKUPS = 16


def _check_lines(data) -> None:
    """Refuse a PDF with a line outside stream data longer than :data:`~clinex.io.limits.MAX_PDF_LINE_BYTES`.

    One linear pass over the file's bytes before pdfminer parses any of it: the
    stretches between the end of a stream's data (its ``endstream`` keyword) and the
    next ``stream`` keyword (and before the first) are searched for a line (ended by
    CR or LF, ISO 32000-1 7.2.2-7.2.3) of more than the limit's bytes. Stream data
    is skipped, from the end of line after ``stream`` to the next ``endstream``
    (or the end of the file): image and compressed data have no lines.
    Raises :class:`_TooMuch` naming the byte offset where the line starts.

    References
    ----------
    ISO 32000-1:2008, 7.2.2 (white-space: CR and LF are end-of-line markers) and
    7.3.8.1 (a stream's data lies between the ``stream`` line and ``endstream``).
    """
    limit = limits.MAX_PDF_LINE_BYTES
    pos, n = 0, len(data)
    while pos < n:
        m = _STREAM_KEYWORD.search(data, pos)
        end = m.start() if m is not None else n
        # pos is a line's start: the next limit + 1 bytes hold an end of line, or the
        # line is too long; go on after the last one. Two steps advance at least `limit`
        # bytes and each searches at most 2 (limit + 1) bytes (C memrchr): linear.
        while end - pos > limit:
            window = pos + limit + 1
            last = max(data.rfind(b"\n", pos, window), data.rfind(b"\r", pos, window))
            if last < 0:
                raise _TooMuch(
                    f"a line of more than {limit:,} bytes outside stream data (at byte {pos:,}), "
                    f"more than MAX_PDF_LINE_BYTES = {limit:,} (clinex.io.limits): a PDF's "
                    "structure lines are short; the file is broken or made to be slow to read")
            pos = last + 1
        if m is None:
            return
        stop = data.find(b"endstream", m.end())
        if stop < 0:
            return
        pos = stop


def _parser(fh):
    """A pdfminer ``PDFParser`` of ``fh`` whose work is linear in a line's and a token's length.

    pdfminer 20260107 reads a line by ``linebuf += chunk`` over 4 KiB chunks and a token
    by ``_curtoken += chunk`` likewise: quadratic in the length of one line or token
    (a PDF with one 16 MB line took 20-80 s in :func:`_check_pages`, a 2 MB one 5-7 s;
    pdfminer reads lines to find a broken xref's objects and a stream's ``endstream``).
    Here a line is gathered in a list and joined once, and a chunk is read at least
    as long as the token read so far, so a token spanning chunks is copied a
    bounded number of times per byte. Results are pdfminer's own.
    """
    return _linear_parser_class()(fh)


@functools.cache
def _linear_parser_class():
    import logging

    from pdfminer.pdfparser import PDFParser
    from pdfminer.psparser import EOL, PSEOF

    # pdfminer's warnings quote the file's bytes (a whole broken line); without a handler of
    # the application's, Python would print them on stderr
    logging.getLogger("pdfminer").addHandler(logging.NullHandler())

    class _LinearParser(PDFParser):
        def fillbuf(self) -> bool:
            if self.charpos < len(self.buf):
                return False
            self.bufpos = self.fp.tell()
            self.buf = self.fp.read(max(self.BUFSIZ, len(self._curtoken)))
            if not self.buf:
                raise PSEOF("Unexpected EOF")
            self.charpos = 0
            return False

        def nextline(self) -> tuple[int, bytes]:
            """pdfminer's ``nextline`` (a line ending in CR, LF or CR LF), linear in its length."""
            linepos = self.bufpos + self.charpos
            pieces: list[bytes] = []
            eol = False
            while True:
                self.fillbuf()
                if eol:
                    if self.buf[self.charpos:self.charpos + 1] == b"\n":
                        pieces.append(b"\n")
                        self.charpos += 1
                    break
                m = EOL.search(self.buf, self.charpos)
                if m:
                    pieces.append(self.buf[self.charpos:m.end(0)])
                    self.charpos = m.end(0)
                    if pieces[-1][-1:] == b"\r":
                        eol = True
                    else:
                        break
                else:
                    pieces.append(self.buf[self.charpos:])
                    self.charpos = len(self.buf)
            return (linepos, b"".join(pieces))

    return _LinearParser


def _check_streams(path: Path, password: str | None, n_pages: int) -> None:
    """Refuse a PDF whose non-image streams decode past :data:`~clinex.io.limits.MAX_PDF_INFLATED_BYTES`.

    First refuses over-long structure lines (:func:`_check_lines`). Then reads the
    file's bytes without parsing it as a whole (so broken and hostile
    files are covered too): at every ``stream`` keyword the stream's dictionary is
    read (references followed by :class:`_RawObjects`) and its filter chain run
    piece by piece, every stage's output counted and nothing kept
    (:func:`clinex.io.pdf_filters.decoded_size`); where the dictionary cannot be
    read, the data is inflated as long as it looks deflated. Image streams
    (``/Subtype /Image`` in their dictionary) are left out: text extraction never
    decodes them.
    """
    import mmap

    from clinex.io.pdf_filters import decoded_size

    with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as data:
        _check_lines(data)
        objects = _RawObjects(data)
        total, pos = 0, 0
        while True:
            m = _STREAM_KEYWORD.search(data, pos)
            if m is None:
                return
            head = data[max(0, m.start() - 4096):m.start()]
            headers = list(_OBJ_HEADER.finditer(head))
            obj = headers[-1] if headers else None
            if obj is not None and _IMAGE.search(head, obj.end()):
                pos = m.end()
                continue
            chain = None
            if obj is not None:
                try:
                    chain = _chain(objects.parse(head[obj.end():]), objects.resolve)
                except _Unresolved:
                    chain = None
                except _TooMuch as exc:
                    raise _TooMuch(f"object {int(obj.group(1))}: {exc}") from None
            end = len(data)
            if chain and chain[0][0] not in ("FlateDecode", "Fl"):
                stop = data.find(b"endstream", m.end())  # a Flate stream ends itself
                end = stop if stop >= 0 else end
            size, pos = decoded_size(data, m.end(), end, chain, limits.MAX_PDF_INFLATED_BYTES - total)
            pos = max(pos, m.end())
            total += size
            if total > limits.MAX_PDF_INFLATED_BYTES:
                where = f"object {int(obj.group(1))}" if obj is not None else "a stream"
                if obj is not None and b"/ObjStm" not in head[obj.end():]:
                    try:  # name the page that draws it
                        _check_pages(path, password, n_pages, find=int(obj.group(1)))
                    except _Found as found:
                        where = f"page {found.page}: {where}"
                    except Exception:  # noqa: BLE001 (RecursionError too) - no page then
                        pass
                raise _TooMuch(
                    f"{where} (at byte {m.end():,}) inflates past the document's limit of "
                    f"{limits.MAX_PDF_INFLATED_BYTES:,} decompressed bytes, MAX_PDF_INFLATED_BYTES "
                    "(clinex.io.limits): a decompression bomb?"
                )


def _stream_size(stream, limit: int) -> int:
    """Decoded bytes of a pdfminer stream, counted up to ``limit + 1`` in pieces.

    Every stage of the stream's filter chain is run and its output counted
    (:func:`clinex.io.pdf_filters.decoded_size`); a stream without filters, or whose
    first filter is not decoded here, counts its raw bytes.
    """
    from pdfminer.pdftypes import resolve1

    from clinex.io.pdf_filters import FILTER_NAMES, decoded_size

    data = stream.get_rawdata()
    if data is None:  # already decoded by pdfminer (an object stream)
        return len(stream.data or b"")
    if stream.decipher:
        data = stream.decipher(stream.objid, stream.genno, data, stream.attrs)
    chain = _chain(stream.attrs, resolve1)
    if not chain or chain[0][0] not in FILTER_NAMES:
        return len(data) if chain is not None else decoded_size(data, 0, len(data), None, limit)[0]
    return decoded_size(data, 0, len(data), chain, limit)[0]


def _check_pages(path: Path, password: str | None, n_pages: int, find: int | None = None) -> bool:
    """Walk the page tree (refusing cycles) and refuse pages whose content passes
    :data:`~clinex.io.limits.MAX_PDF_PAGE_CONTENT_BYTES`. Returns False when pdfminer cannot parse the
    file (PDFium may still read it; :func:`_check_streams` has bounded it).

    With ``find`` (an object number), nothing is inflated: :class:`_Found` is raised
    with the first page whose content or forms include that stream object."""
    from pdfminer.pdfdocument import PDFDocument
    from pdfminer.pdftypes import PDFObjRef, PDFStream
    from pdfminer.psparser import PSLiteral

    def resolve(obj):
        for _ in range(32):  # a chain of references (bounded: a reference cycle ends here)
            if not isinstance(obj, PDFObjRef):
                return obj
            obj = obj.resolve()
        return None

    def name(obj) -> str:
        return obj.name if isinstance(obj, PSLiteral) and isinstance(obj.name, str) else ""

    with open(path, "rb") as fh:
        try:
            doc = PDFDocument(_parser(fh), password=password or "")
            root = doc.catalog.get("Pages")
        except Exception:  # noqa: BLE001 (RecursionError too) - pdfminer cannot parse it
            return False
        # depth first, left to right, as PDFium counts pages; ancestors on the stack
        stack: list[tuple[object, tuple[int, ...], object]] = [(root, (), None)]
        page = 0
        visits = 0
        while stack:
            ref, ancestors, resources = stack.pop()
            visits += 1
            if visits > 4 * limits.MAX_PDF_PAGES:
                raise _TooMuch(f"page tree has more than {4 * limits.MAX_PDF_PAGES:,} nodes "
                               f"(4 x MAX_PDF_PAGES, clinex.io.limits)")
            objid = ref.objid if isinstance(ref, PDFObjRef) else None
            if objid is not None and objid in ancestors:
                raise FormatError(
                    f"page tree cycle: object {ancestors[-1]}'s /Kids points back to its "
                    f"ancestor object {objid}", path=path)
            try:
                node = resolve(ref)
            except Exception:  # noqa: BLE001 (RecursionError too)
                continue
            if not isinstance(node, dict):
                continue
            res = node.get("Resources", resources)
            kids = resolve(node.get("Kids"))
            if name(node.get("Type")) == "Pages" or (isinstance(kids, list) and "Contents" not in node):
                if isinstance(kids, list):
                    path_ids = ancestors + ((objid,) if objid is not None else ())
                    for kid in reversed(kids):
                        stack.append((kid, path_ids, res))
                continue
            page += 1
            if page > n_pages:
                break
            size = 0
            seen: set[int] = set()
            todo = [node.get("Contents"), *_forms(resolve, res)]
            while todo:
                item = todo.pop()
                if isinstance(item, PDFObjRef):
                    if item.objid in seen:
                        continue
                    seen.add(item.objid)
                try:
                    item = resolve(item)
                except Exception:  # noqa: BLE001 (RecursionError too)
                    continue
                if isinstance(item, list):
                    todo.extend(item[:10_000])
                elif isinstance(item, PDFStream):
                    subtype = name(item.attrs.get("Subtype"))
                    if subtype and subtype != "Form":
                        continue  # an image (never decoded for text) or PostScript
                    if find is not None:
                        if item.objid == find:
                            raise _Found(page)
                        if subtype == "Form":
                            todo.extend(_forms(resolve, item.attrs.get("Resources")))
                        continue
                    try:
                        size += _stream_size(item, limits.MAX_PDF_PAGE_CONTENT_BYTES - size)
                    except _TooMuch:
                        raise
                    except Exception:  # noqa: BLE001 (RecursionError too) - PDFium decides
                        continue
                    if subtype == "Form":
                        todo.extend(_forms(resolve, item.attrs.get("Resources")))
                if size > limits.MAX_PDF_PAGE_CONTENT_BYTES:
                    raise _TooMuch(
                        f"page {page}: content inflates past the limit of "
                        f"{limits.MAX_PDF_PAGE_CONTENT_BYTES:,} decompressed bytes per page, "
                        "MAX_PDF_PAGE_CONTENT_BYTES (clinex.io.limits): a decompression bomb?")
    return True


def _forms(resolve, resources) -> list:
    """The XObjects named in a resource dictionary (forms among them are counted)."""
    try:
        res = resolve(resources)
        xobjects = resolve(res.get("XObject")) if isinstance(res, dict) else None
    except Exception:  # noqa: BLE001 (RecursionError too)
        return []
    return list(xobjects.values())[:10_000] if isinstance(xobjects, dict) else []


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
    :func:`_merge_runs` (they are PDFium's word breaks between text objects)."""
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
#: about 2,850 gaps each); a column gutter is 1 em (about 1.1 line heights) and more,
#: and producers draw one column after the other.
JOIN_GAP = 0.8
#: ... or overlaps its end by at most this many line heights (a kerning pair, "AV";
#: own choice: kerning pairs overlap by under a tenth of an em).
JOIN_OVERLAP = 0.3


def _merge_runs(runs: list[_Run]) -> list[_Run]:
    """Join runs that PDFium reads one after the other on one line, less than
    :data:`JOIN_GAP` line heights apart, into one run (text stripped).

    Producers such as Chromium (Skia) start a text object at every kerning pair or
    justified word ("four", ". ", "Allocation ", "was "); left apart, their tiny
    boxes (a full stop is 1.3 pt tall) put spaces before full stops and make the
    word gaps of a justified paragraph look like a column gutter. Two runs are
    joined when the second follows the first in PDFium's order, their vertical
    extents overlap by half the smaller height (as in :func:`_lines`), and the
    second starts between :data:`JOIN_OVERLAP` line heights left of and
    :data:`JOIN_GAP` line heights right of the first's end (line height: the
    taller run). A space is put between them where PDFium has one (a space
    character or one PDFium generated from the glyph advances) or where the gap is
    wider than half the line height; otherwise they touch ("four" + "."). (Text
    drawn twice on itself, for fake bold, PDFium already reads once.) Own rules,
    checked on Chromium and reportlab PDFs (``tests/io/test_io_pdf.py``).
    """
    out: list[_Run] = []
    for r in runs:
        text = r.text.strip()
        if not text:  # a space alone: a word break after the run before
            if out and not out[-1].text.endswith(" "):
                out[-1].text += " "
            continue
        if out:
            p = out[-1]
            h = max(p.height, r.height)
            gap = r.left - p.right
            overlap = min(p.top, r.top) - max(p.bottom, r.bottom)
            if overlap >= 0.5 * min(p.height, r.height) and -JOIN_OVERLAP * h <= gap <= JOIN_GAP * h:
                space = p.text[-1:].isspace() or r.text[:1].isspace() or gap > 0.5 * h
                p.text = p.text.rstrip() + (" " if space else "") + r.text.lstrip()
                p.left, p.bottom = min(p.left, r.left), min(p.bottom, r.bottom)
                p.right, p.top = max(p.right, r.right), max(p.top, r.top)
                continue
        out.append(_Run(r.left, r.bottom, r.right, r.top, r.text.lstrip()))
    for r in out:
        r.text = r.text.rstrip()
    return out


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
    # left runs with a right run at the same height (vertical extents overlap):
    # right runs sorted by bottom, running maximum of their tops (n log n, not n^2)
    spans = sorted((b.bottom, b.top) for b in right if b.top > b.bottom)
    bottoms = [lo for lo, _ in spans]
    max_top = list(accumulate((hi for _, hi in spans), max))
    paired = 0
    for a in left:
        if a.top > a.bottom:
            k = bisect_left(bottoms, a.top)  # right runs starting below a's top
            if k and max_top[k - 1] > a.bottom:
                paired += 1
                if paired >= 2:
                    return x
    return None


def _lines(runs: list[_Run]) -> list[list[_Run]]:
    lines: list[list[_Run]] = []
    # the last line's lowest bottom, highest top and tallest run, kept as runs join
    bottom = top = height = 0.0
    for r in sorted(runs, key=lambda r: (-r.top, r.left)):
        if lines:
            lo = max(bottom, r.bottom)
            hi = min(top, r.top)
            if hi - lo >= 0.5 * min(r.height, height):
                lines[-1].append(r)
                bottom, top, height = min(bottom, r.bottom), max(top, r.top), max(height, r.height)
                continue
        lines.append([r])
        bottom, top, height = r.bottom, r.top, r.height
    return [sorted(line, key=lambda r: r.left) for line in lines]


def _line_text(line: list[_Run]) -> str:
    parts = [line[0].text]
    for prev, cur in zip(line, line[1:]):
        if cur.left - prev.right > 0.15 * max(prev.height, cur.height):
            parts.append(" ")
        parts.append(cur.text)
    return "".join(parts)


def _blocks(runs: list[_Run], width: float) -> tuple[list[list[tuple[str, float, float]]], int]:
    """Blocks (lists of (line text, top, bottom)) in reading order, and the column count."""
    x = _gutter(runs, width)
    if x is None:
        groups = [runs]
    else:
        # runs crossing the gutter, top to bottom by their middle, cut the page into
        # bands; each other run goes to the band its middle lies strictly inside
        crossing = sorted((r for r in runs if r.left < x < r.right),
                          key=lambda r: (-(r.top + r.bottom) / 2, -r.top))
        neg_cuts = [-(r.top + r.bottom) / 2 for r in crossing]  # ascending
        bands: list[list[_Run]] = [[] for _ in range(len(crossing) + 1)]
        for r in runs:
            if r.left < x < r.right:
                continue
            neg_mid = -(r.top + r.bottom) / 2
            band = bisect_left(neg_cuts, neg_mid)
            if band < len(neg_cuts) and neg_cuts[band] == neg_mid:
                continue  # on a cut: in no band
            bands[band].append(r)
        groups = []
        for band, inside in enumerate(bands):
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
                    head = _LINE_END_WORD.search(ptext).group(1)  # type: ignore[union-attr]
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


#: The word (a compound with its hyphens, "intention-to") before a line-end hyphen.
_LINE_END_WORD = re.compile(r"([^\W\d_]+(?:[-\u2010][^\W\d_]+)*)[" + _HYPHENS + r"]$")


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
        The word before the hyphen: letters, or a compound whose parts are joined
        by hyphens ("intention-to" of "intention-to-" + "treat").
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
        (``_SUFFIXES``) -> join; ``head`` itself hyphenated (the break falls
        after a hyphen inside a compound: "intention-to-" + "treat",
        "end-of-" + "study") -> keep; ``head`` in :data:`COMPOUND_HEADS` -> keep;
        both parts (3+ letters) written elsewhere as words -> keep; else join (a
        broken syllable).

    References
    ----------
    The heuristics follow how typeset English breaks words: at syllables
    (hyphen dropped when rejoined) or at the hyphen of a compound (kept);
    Chicago Manual of Style, 17th ed., 7.40-7.47 (word division): a hyphenated
    compound is broken only at its hyphen. TeX does the same: a word holding an
    explicit hyphen is broken after that hyphen and not hyphenated further
    (Knuth, The TeXbook, appendix H, "Hyphenation").
    """
    h, t = head.lower().replace("\u2010", "-"), tail.lower()
    hyphenated, joined = f"{h}-{t}", h + t

    def written(word: str) -> int:
        return vocab.hyphenated.get(word, 0) if "-" in word else vocab.words.get(word, 0)

    if vocab.hyphenated.get(hyphenated) and not written(joined):
        return True
    if written(joined):
        return False
    if t in _SUFFIXES:
        return False
    if "-" in h:
        return True
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
    import pypdfium2 as pdfium

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
        layouts = []
        columns = []
        page_no = 0
        try:
            _check_streams(p, password, n)
            _check_pages(p, password, n)
            for i in range(n):
                page_no = i + 1
                with PDFIUM_LOCK:
                    try:
                        page = pdf[i]
                    except pdfium.PdfiumError:
                        raise FormatError(
                            f"page {page_no} of {n} could not be loaded (a broken page tree?)",
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
                blocks, ncol = _blocks(_merge_runs(runs), width)
                layouts.append(blocks)
                columns.append(ncol)
        except _TooMuch as exc:
            where = f"page {page_no}: " if page_no else ""
            raise FormatError(f"{where}{exc}", path=p) from None
        except RecursionError:
            raise FormatError("PDF structure nested too deeply to read", path=p) from None
    finally:
        with PDFIUM_LOCK:
            pdf.close()
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
