"""Bounded-work checks of a PDF file, run before PDFium parses any of it.

:func:`clinex.io.pdf.read_pdf` calls :func:`_check_streams` and then
:func:`_check_pages`; both read the file with pdfminer (pure Python, outside
:data:`clinex.io.pdf.PDFIUM_LOCK`) and count, never keep, what the streams inflate to:

- :func:`_check_lines` refuses a structure line longer than
  :data:`~clinex.io.limits.MAX_PDF_LINE_BYTES` by one linear scan of the bytes;
- :func:`_check_streams` runs every non-image stream's filter chain piece by piece
  (:func:`clinex.io.pdf_filters.decoded_size`) against
  :data:`~clinex.io.limits.MAX_PDF_INFLATED_BYTES`, following references in the raw
  bytes (:class:`_RawObjects`), so that broken and hostile files are covered too;
- :func:`_check_pages` walks the page tree (refusing cycles and more than four nodes
  a page) and counts each page's content and forms against
  :data:`~clinex.io.limits.MAX_PDF_PAGE_CONTENT_BYTES`.

pdfminer reads the file through :func:`_parser`, whose line reader and buffer are
linear in a line's or a token's length. A limit passed raises :class:`_TooMuch`,
which :func:`clinex.io.pdf.read_pdf` turns into a
:class:`~clinex.errors.FormatError` naming the file and page.

References
----------
ISO 32000-1:2008, 7.2.2-7.2.3 (lines), 7.3.8 (streams), 7.7.3 (the page tree).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from pathlib import Path

from clinex.errors import FormatError
from clinex.io import limits


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


def _resolve(obj):
    """``obj`` with pdfminer references followed (at most 32 in a chain: a reference
    cycle ends in None)."""
    from pdfminer.pdftypes import PDFObjRef

    for _ in range(32):
        if not isinstance(obj, PDFObjRef):
            return obj
        obj = obj.resolve()
    return None


def _name(obj) -> str:
    """The name of a PDF name object (``/Form`` -> ``"Form"``), else ``""``."""
    from pdfminer.psparser import PSLiteral

    return obj.name if isinstance(obj, PSLiteral) and isinstance(obj.name, str) else ""


def _check_pages(path: Path, password: str | None, n_pages: int, find: int | None = None) -> bool:
    """Walk the page tree (refusing cycles) and refuse pages whose content passes
    :data:`~clinex.io.limits.MAX_PDF_PAGE_CONTENT_BYTES`. Returns False when pdfminer cannot parse the
    file (PDFium may still read it; :func:`_check_streams` has bounded it).

    With ``find`` (an object number), nothing is inflated: :class:`_Found` is raised
    with the first page whose content or forms include that stream object."""
    from pdfminer.pdfdocument import PDFDocument

    with open(path, "rb") as fh:
        try:
            doc = PDFDocument(_parser(fh), password=password or "")
            root = doc.catalog.get("Pages")
        except Exception:  # noqa: BLE001 (RecursionError too) - pdfminer cannot parse it
            return False
        for page, (node, resources) in enumerate(_leaf_pages(root, path), start=1):
            if page > n_pages:
                break
            _check_page(page, node, resources, find)
    return True


def _leaf_pages(root, path: Path) -> Iterator[tuple[dict, object]]:
    """The page tree's leaves (page dictionary, inherited ``/Resources``) in page order.

    Depth first, left to right, as PDFium counts pages; a node that cannot be
    resolved or is no dictionary is skipped. Raises :class:`_TooMuch` past
    4 x :data:`~clinex.io.limits.MAX_PDF_PAGES` nodes and
    :class:`~clinex.errors.FormatError` when ``/Kids`` point back to an ancestor.
    """
    from pdfminer.pdftypes import PDFObjRef

    # ancestors' object numbers on the stack with each node
    stack: list[tuple[object, tuple[int, ...], object]] = [(root, (), None)]
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
            node = _resolve(ref)
        except Exception:  # noqa: BLE001 (RecursionError too)
            continue
        if not isinstance(node, dict):
            continue
        res = node.get("Resources", resources)
        kids = _resolve(node.get("Kids"))
        if _name(node.get("Type")) == "Pages" or (isinstance(kids, list) and "Contents" not in node):
            if isinstance(kids, list):
                path_ids = ancestors + ((objid,) if objid is not None else ())
                for kid in reversed(kids):
                    stack.append((kid, path_ids, res))
            continue
        yield node, res


def _check_page(page: int, node: dict, resources, find: int | None) -> None:
    """Count page ``page``'s content streams and forms against
    :data:`~clinex.io.limits.MAX_PDF_PAGE_CONTENT_BYTES` (raising :class:`_TooMuch`),
    or, with ``find``, raise :class:`_Found` if one of them is object ``find``.

    Images and PostScript are left out (never decoded for text); a stream that
    cannot be decoded is left to PDFium."""
    size = 0
    todo = [node.get("Contents"), *_forms(_resolve, resources)]
    for item in _streams(todo):
        subtype = _name(item.attrs.get("Subtype"))
        if subtype and subtype != "Form":
            continue  # an image (never decoded for text) or PostScript
        if find is not None:
            if item.objid == find:
                raise _Found(page)
        else:
            try:
                size += _stream_size(item, limits.MAX_PDF_PAGE_CONTENT_BYTES - size)
            except _TooMuch:
                raise
            except Exception:  # noqa: BLE001 (RecursionError too) - PDFium decides
                continue
            if size > limits.MAX_PDF_PAGE_CONTENT_BYTES:
                raise _TooMuch(
                    f"page {page}: content inflates past the limit of "
                    f"{limits.MAX_PDF_PAGE_CONTENT_BYTES:,} decompressed bytes per page, "
                    "MAX_PDF_PAGE_CONTENT_BYTES (clinex.io.limits): a decompression bomb?")
        if subtype == "Form":
            todo.extend(_forms(_resolve, item.attrs.get("Resources")))


def _streams(todo: list) -> Iterator:
    """The pdfminer streams reached from ``todo`` (a stack the caller may push onto
    while iterating): arrays are opened (10,000 items at most each), each referenced
    object is visited once, objects that cannot be resolved are skipped."""
    from pdfminer.pdftypes import PDFObjRef, PDFStream

    seen: set[int] = set()
    while todo:
        item = todo.pop()
        if isinstance(item, PDFObjRef):
            if item.objid in seen:
                continue
            seen.add(item.objid)
        try:
            item = _resolve(item)
        except Exception:  # noqa: BLE001 (RecursionError too)
            continue
        if isinstance(item, list):
            todo.extend(item[:10_000])
        elif isinstance(item, PDFStream):
            yield item


def _forms(resolve, resources) -> list:
    """The XObjects named in a resource dictionary (forms among them are counted)."""
    try:
        res = resolve(resources)
        xobjects = resolve(res.get("XObject")) if isinstance(res, dict) else None
    except Exception:  # noqa: BLE001 (RecursionError too)
        return []
    return list(xobjects.values())[:10_000] if isinstance(xobjects, dict) else []

