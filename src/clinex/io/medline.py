"""PubMed / MEDLINE citation XML, streamed: the annual baseline and update files and PubMed's XML export.

NLM's baseline and update files (``pubmed25n0001.xml.gz``) and the "XML" export of a PubMed
search share one schema: a ``<PubmedArticleSet>`` of ``<PubmedArticle>`` elements. This
reader streams such a file, plain or gzip-compressed (told by its first bytes, not its
name), with memory bounded by the largest citation, never by the file: each citation is
parsed, turned into a :class:`MedlineCitation` and dropped before the next is read.

Per citation it keeps the PMID (``MedlineCitation/PMID``), the title (``ArticleTitle``),
the abstract (the ``AbstractText`` elements in order; a structured abstract's sections keep
their ``Label`` as ``"BACKGROUND: ..."``), the publication types, the year of publication
(``PubDate/Year``, else the first year in ``PubDate/MedlineDate``) and the MeSH headings
(``DescriptorName``). Inline markup (``<i>``, ``<sup>``, MathML) is kept as its text and
runs of white space become one space.

**The record text** is ``title + " " + abstract`` (the title alone when the citation has
no abstract), and every offset a caller computes on :attr:`MedlineCitation.text` is a
character offset into that string: half-open, the title at ``[0, title_end)``, the
abstract from ``abstract_start`` (``title_end + 1``), each section at the offsets in
:attr:`MedlineCitation.sections`.

Safety and bad input:

- The XML is parsed by defusedxml's parser (as :mod:`clinex.io.xmlfile`): entity
  declarations (an XML bomb) and external references are refused, as a
  :class:`~clinex.errors.FormatError` naming the file. PubMed's ``<!DOCTYPE>`` line (an
  external DTD, never fetched) is allowed.
- The bytes are read as UTF-8, the encoding NLM writes: a file declaring another encoding,
  a UTF-16/UTF-32 file or a binary one is refused (:class:`~clinex.errors.EncodingError`).
  Bytes that are not UTF-8 inside a citation spoil that citation only: it is reported,
  naming its PMID and line, and skipped.
- One bad citation (no PMID, a PMID seen before in the file, bytes that are not UTF-8,
  neither title nor abstract, more text than ``max_chars``) is reported and skipped; the
  others are read. With ``errors="raise"`` the first one stops the reading instead.
- A file-level problem (truncated gzip data, XML that is not well formed, unsafe XML, more
  than :data:`clinex.io.limits.MAX_MEDLINE_CITATION_BYTES` without a whole citation) is
  raised naming the file, after every whole citation before it has been yielded.

A citation without an abstract is still a record (its text is the title: titles such as
"Isoniazid-induced hepatitis." report reactions too); ``has_abstract`` tells them apart.
``<PubmedBookArticle>`` and ``<DeleteCitation>`` elements (books; an update file's list of
deleted PMIDs) are not citations of this reader and are passed over.

References
----------
NLM, "MEDLINE/PubMed XML Element Descriptions and their Attributes" and the
``pubmed_250101.dtd`` (PubmedArticleSet, 2025 edition).
"""

from __future__ import annotations

import codecs
import gzip
import io
import re
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, BinaryIO, Literal, NamedTuple

from clinex.errors import ClinexError, EncodingError, FormatError, InputError, report_to_stderr

__all__ = [
    "MEDLINE_ROOT",
    "MedlineCitation",
    "iter_medline",
    "is_gzip",
    "is_medline_file",
    "looks_like_medline",
    "read_head",
]

MEDLINE_ROOT = "PubmedArticleSet"
"""The root element of a baseline, update or PubMed export file."""

_CHUNK = 64 * 1024
_GZIP_MAGIC = b"\x1f\x8b"
_MARK = "\ufdd0"  # a noncharacter: stands for each byte that is not UTF-8 (never written by NLM)
_ERRORS = "clinex.medline.mark"


def _mark_bad_bytes(exc: UnicodeError) -> tuple[str, int]:
    if not isinstance(exc, UnicodeDecodeError):  # pragma: no cover - registered for decoding only
        raise exc
    return _MARK, exc.end


codecs.register_error(_ERRORS, _mark_bad_bytes)

_PROLOG = re.compile(
    rb"(?:\s|<\?.*?\?>|<!--.*?-->)*(?:<!DOCTYPE\s+(?P<doctype>[^\s>\[]+)|<(?P<root>[^\s>/!?]+))", re.S
)
_ENCODING = re.compile(rb"^\s*<\?xml[^>]*?encoding\s*=\s*[\"']([^\"']+)[\"']")
_YEAR = re.compile(r"\b(1[5-9]\d\d|2\d\d\d)\b")


class MedlineCitation(NamedTuple):
    """One PubMed citation: its PMID, record text and metadata.

    Attributes
    ----------
    pmid : str
        ``MedlineCitation/PMID`` (ASCII digits).
    text : str
        The record text: ``title + " " + abstract``, or the title alone without an abstract.
    title_end : int
        End of the title in ``text`` (``text[:title_end]`` is the title).
    abstract_start : int
        Start of the abstract in ``text`` (``title_end + 1``); ``len(text)`` without one.
    sections : tuple of (str or None, int, int)
        ``(label, start, end)`` of each ``AbstractText`` in ``text``, half-open, the
        ``"LABEL: "`` prefix included; label None for an unlabelled one.
    publication_types : tuple of str
        ``PublicationTypeList/PublicationType`` texts, in order.
    year : int or None
        ``PubDate/Year``, else the first year in ``PubDate/MedlineDate`` ("1998 Dec-1999 Jan").
    mesh_headings : tuple of str
        ``MeshHeadingList/MeshHeading/DescriptorName`` texts, in order.
    line : int
        1-based line of the ``<PubmedArticle>`` start tag (in the decompressed XML).
    """

    pmid: str
    text: str
    title_end: int
    abstract_start: int
    sections: tuple[tuple[str | None, int, int], ...]
    publication_types: tuple[str, ...]
    year: int | None
    mesh_headings: tuple[str, ...]
    line: int

    @property
    def title(self) -> str:
        """The title (``text[:title_end]``)."""
        return self.text[: self.title_end]

    @property
    def abstract(self) -> str:
        """The abstract (empty when the citation has none)."""
        return self.text[self.abstract_start :]

    @property
    def has_abstract(self) -> bool:
        """True when the citation has an abstract."""
        return self.abstract_start < len(self.text)

    def meta(self) -> dict[str, Any]:
        """The citation's metadata as a JSON-ready dict (no text): pmid, year, publication
        types, MeSH headings, ``title_end``, ``abstract_start`` and the sections."""
        return {
            "pmid": self.pmid,
            "year": self.year,
            "publication_types": list(self.publication_types),
            "mesh_headings": list(self.mesh_headings),
            "title_end": self.title_end,
            "abstract_start": self.abstract_start,
            "sections": [list(s) for s in self.sections],
        }


def is_gzip(head: bytes) -> bool:
    """True when ``head`` (a file's first bytes) starts with the gzip magic number."""
    return head.startswith(_GZIP_MAGIC)


def looks_like_medline(head: bytes) -> bool:
    """True when ``head`` (a file's first bytes, decompressed) is XML whose root element, or
    whose ``<!DOCTYPE>``, is ``PubmedArticleSet``.

    Examples
    --------
    >>> looks_like_medline(b'<?xml version="1.0"?>\\n<!DOCTYPE PubmedArticleSet PUBLIC "x" "y">')
    True
    >>> looks_like_medline(b'{"id": "1", "text": "..."}')
    False
    """
    m = _PROLOG.match(head.removeprefix(b"\xef\xbb\xbf"))
    if m is None:
        return False
    return (m.group("doctype") or m.group("root")) == MEDLINE_ROOT.encode()


def read_head(path: str | Path, size: int = 4096) -> bytes:
    """The first ``size`` bytes of a file's content, gzip-decompressed when it is gzip
    (empty when the gzip data cannot be read: the reader then names the problem)."""
    with open(path, "rb") as fh:
        head = fh.read(size)
        if not is_gzip(head):
            return head
        fh.seek(0)
        try:
            with gzip.GzipFile(fileobj=fh) as gz:
                return gz.read(size)
        except (OSError, EOFError, zlib.error):
            return b""


def is_medline_file(path: str | Path) -> bool:
    """True when a file is to be read as PubMed/MEDLINE XML: its name ends with ``.xml`` or
    ``.xml.gz``, it is gzip data, or its (decompressed) head is :func:`looks_like_medline`.

    An ``.xml`` file with another root element is still True: :func:`iter_medline` then
    names the root it found. False for a file that cannot be opened (its reader reports it).
    """
    if str(path).lower().endswith((".xml", ".xml.gz")):
        return True
    try:
        with open(path, "rb") as fh:
            if is_gzip(fh.read(2)):
                return True
        return looks_like_medline(read_head(path))
    except OSError:
        return False


class _Target:
    """An ElementTree parser target: builds the tree with a TreeBuilder, notes each
    top-level element's start line and byte, detaches it from the root when it ends and
    queues it for the reader."""

    def __init__(self, name: str) -> None:
        from xml.etree.ElementTree import TreeBuilder

        self._tb = TreeBuilder()
        self._name = name
        self.expat: Any = None
        self.depth = 0
        self.root: Any = None
        self.done: list[tuple[Any, int]] = []
        self.line = 0
        self.mark = 0  # byte index where the current top-level element (or the gap before it) began

    def start(self, tag: str, attrib: dict[str, str]) -> Any:
        self.depth += 1
        if self.depth == 1 and tag != MEDLINE_ROOT:
            raise FormatError(
                f"root element <{tag[:80]}>, expected <{MEDLINE_ROOT}> (PubMed/MEDLINE XML)",
                path=self._name, line=self.expat.CurrentLineNumber,
            )
        elem = self._tb.start(tag, attrib)
        if self.depth == 1:
            self.root = elem
        elif self.depth == 2:
            self.line = self.expat.CurrentLineNumber
            self.mark = self.expat.CurrentByteIndex
        return elem

    def end(self, tag: str) -> Any:
        elem = self._tb.end(tag)
        if self.depth == 2:
            self.root.remove(elem)  # the root keeps no citation: memory stays bounded
            self.done.append((elem, self.line))
            self.mark = self.expat.CurrentByteIndex
        self.depth -= 1
        return elem

    def data(self, text: str) -> None:
        if self.depth >= 2:  # white space between citations is not kept
            self._tb.data(text)

    def close(self) -> Any:
        return self._tb.close()


def _text(elem: Any) -> str:
    """An element's text with its inline markup's text, white space runs made one space."""
    return " ".join("".join(elem.itertext()).split()) if elem is not None else ""


def _has_mark(elem: Any) -> bool:
    for e in elem.iter():
        if _MARK in (e.text or "") or _MARK in (e.tail or "") or any(_MARK in v for v in e.attrib.values()):
            return True
    return False


def _year(article: Any) -> int | None:
    pub = article.find("Journal/JournalIssue/PubDate") if article is not None else None
    if pub is None:
        return None
    year = (pub.findtext("Year") or "").strip()
    if year.isdigit():
        return int(year)
    m = _YEAR.search(pub.findtext("MedlineDate") or "")
    return int(m.group(1)) if m else None


def _citation(elem: Any, line: int, name: str, seen: dict[str, int], max_chars: int | None) -> MedlineCitation:
    """A ``<PubmedArticle>`` element as a citation, or a ClinexError naming file, line and PMID."""
    mc = elem.find("MedlineCitation")
    pmid = _pmid(elem, mc, line, name, seen)
    article = mc.find("Article")
    title = _text(article.find("ArticleTitle")) if article is not None else ""
    parts = _abstract_parts(article)
    if not title and not parts:
        raise FormatError(f"PMID {pmid}: no title and no abstract; skipped", path=name, line=line)
    text, abstract_start, sections = _record_text(title, parts)
    if max_chars is not None and len(text) > max_chars:
        raise FormatError(f"PMID {pmid}: {len(text):,} characters of title and abstract, more than {max_chars:,}; "
                          "skipped", path=name, line=line, field="text")
    types = tuple(t for t in (_text(e) for e in article.iterfind("PublicationTypeList/PublicationType")) if t) \
        if article is not None else ()
    mesh = tuple(t for t in (_text(e) for e in mc.iterfind("MeshHeadingList/MeshHeading/DescriptorName")) if t)
    return MedlineCitation(pmid, text, len(title), abstract_start, sections, types, _year(article), mesh, line)


def _pmid(elem: Any, mc: Any, line: int, name: str, seen: dict[str, int]) -> str:
    """The citation's PMID, checked (bytes that are not UTF-8, missing, not a number, seen
    before in the file: a ClinexError) and recorded in ``seen`` with its line."""
    pmid = ((mc.findtext("PMID") if mc is not None else None) or "").strip()
    if _has_mark(elem):
        who = f"PMID {pmid}" if pmid.isascii() and pmid.isdigit() else "citation"
        raise EncodingError(f"{who}: bytes that are not UTF-8 in this citation; skipped", path=name, line=line)
    if not pmid:
        raise FormatError("citation without a PMID (MedlineCitation/PMID); skipped", path=name, line=line)
    if not (pmid.isascii() and pmid.isdigit()):
        raise FormatError(f"PMID {pmid[:40]!r} is not a number; skipped", path=name, line=line)
    if pmid in seen:
        raise FormatError(f"PMID {pmid} seen twice (first at line {seen[pmid]}); the second citation skipped",
                          path=name, line=line)
    seen[pmid] = line
    return pmid


def _abstract_parts(article: Any) -> list[tuple[str | None, str]]:
    """The abstract's non-empty ``AbstractText`` sections in order, as (label or None,
    text with ``"LABEL: "`` before it when labelled)."""
    parts: list[tuple[str | None, str]] = []
    for sec in article.iterfind("Abstract/AbstractText") if article is not None else ():
        body = _text(sec)
        if not body:
            continue
        label = " ".join((sec.get("Label") or "").split()) or None
        parts.append((label, f"{label}: {body}" if label else body))
    return parts


def _record_text(title: str, parts: list[tuple[str | None, str]]
                 ) -> tuple[str, int, tuple[tuple[str | None, int, int], ...]]:
    """The record text (title, a space, the abstract's sections one space apart), where
    the abstract starts, and each section's (label, start, end) in it."""
    text, sections = title, []
    abstract_start = len(text)
    if parts:
        text += " " if title else ""  # no title (rare): the abstract starts the text
        abstract_start = len(text)
        for k, (label, body) in enumerate(parts):
            if k:
                text += " "
            sections.append((label, len(text), len(text) + len(body)))
            text += body
    return text, abstract_start, tuple(sections)


def _open(source: str | Path | BinaryIO, name: str) -> tuple[BinaryIO, list[Any]]:
    """A binary stream of the XML (gunzipped when it starts with the gzip magic) and what to close."""
    if isinstance(source, (str, Path)):
        try:
            raw: Any = open(source, "rb")  # noqa: SIM115 - closed by the caller
        except FileNotFoundError:
            raise InputError("no such file", path=name) from None
        except IsADirectoryError:
            raise InputError("is a folder, expected a PubMed/MEDLINE XML file", path=name) from None
        except OSError as exc:
            raise InputError(f"cannot read the file ({exc.strerror})", path=name) from None
    else:
        raw = source
    buffered = raw if hasattr(raw, "peek") else io.BufferedReader(raw)  # type: ignore[arg-type]
    closers = [raw] if raw is not source else []
    if is_gzip(buffered.peek(2)[:2]):
        gz = gzip.GzipFile(fileobj=buffered)
        return gz, [gz, *closers]
    return buffered, closers


def _check_start(head: bytes, name: str) -> None:
    """Refuse a UTF-16/32 or binary file, and an XML declaration of another encoding than UTF-8."""
    if head.startswith((b"\xff\xfe", b"\xfe\xff")) or (len(head) > 1 and b"\x00" in head[:4]):
        raise EncodingError("UTF-16 or UTF-32 text (or a binary file); PubMed/MEDLINE XML is read as UTF-8",
                            path=name, line=1)
    if b"\x00" in head:
        line = head[: head.index(b"\x00")].count(b"\n") + 1
        raise EncodingError("binary file (NUL byte), expected PubMed/MEDLINE XML", path=name, line=line)
    m = _ENCODING.match(head.removeprefix(b"\xef\xbb\xbf"))
    if m and m.group(1).decode("ascii", "replace").lower() not in ("utf-8", "utf8", "us-ascii", "ascii"):
        raise EncodingError(
            f"XML declares encoding {m.group(1).decode('ascii', 'replace')!r}; PubMed/MEDLINE XML is read as UTF-8",
            path=name, line=1,
        )


def iter_medline(
    source: str | Path | BinaryIO,
    *,
    path: str | Path | None = None,
    errors: Literal["raise", "skip"] = "skip",
    on_error: Callable[[ClinexError], None] | None = None,
    max_chars: int | None = None,
) -> Iterator[MedlineCitation]:
    """Yield the citations of a PubMed/MEDLINE XML file, streamed.

    Parameters
    ----------
    source : str, Path or binary file object
        A ``.xml`` or ``.xml.gz`` file (gzip told by its magic number), or an open
        binary stream of one (e.g. standard input's bytes).
    path : str or Path, optional
        Names the source in messages (default: ``source`` when it is a path, else
        ``<stdin>``).
    errors : {"raise", "skip"}, default "skip"
        ``"skip"`` reports each bad citation through ``on_error`` and goes on;
        ``"raise"`` raises the first.
    on_error : callable (ClinexError) -> None, optional
        Receives each skipped citation's error (default: printed on stderr).
    max_chars : int, optional
        A citation whose record text is longer is a bad citation (the caller's limit,
        e.g. :data:`clinex.io.limits.MAX_PV_TEXT_CHARS`).

    Yields
    ------
    MedlineCitation
        In file order.

    Raises
    ------
    InputError
        No such file, or a folder.
    EncodingError
        A UTF-16/UTF-32 or binary file, or an XML declaration of an encoding other than
        UTF-8; with ``errors="raise"``, a citation holding bytes that are not UTF-8.
    FormatError
        The root element is not ``<PubmedArticleSet>``; XML that is not well formed (a
        truncated file, named with its line); unsafe XML (an entity declaration: an XML
        bomb; an external reference); gzip data that is cut short or broken; more than
        :data:`clinex.io.limits.MAX_MEDLINE_CITATION_BYTES` bytes without a whole
        citation; with ``errors="raise"``, a bad citation. File-level errors come after
        the citations before them have been yielded, and say how many there were.

    Examples
    --------
    >>> import io
    >>> xml = (b"<PubmedArticleSet><PubmedArticle><MedlineCitation><PMID>1</PMID><Article>"
    ...        b"<ArticleTitle>Rash after amoxicillin.</ArticleTitle><Abstract><AbstractText Label='CASE'>"
    ...        b"A boy had a rash.</AbstractText></Abstract></Article></MedlineCitation></PubmedArticle>"
    ...        b"</PubmedArticleSet>")
    >>> [(c.pmid, c.text) for c in iter_medline(io.BytesIO(xml))]
    [('1', 'Rash after amoxicillin. CASE: A boy had a rash.')]
    """
    from clinex.io import limits

    if errors not in ("raise", "skip"):
        raise ValueError(f"errors must be 'raise' or 'skip', got {errors!r}")
    name = str(path) if path is not None else str(source) if isinstance(source, (str, Path)) else "<stdin>"
    report = on_error or report_to_stderr
    stream, closers = _open(source, name)
    reading = _Reading(name, errors, report, max_chars)
    decoder = codecs.getincrementaldecoder("utf-8")(errors=_ERRORS)
    started = False
    # read1: at most one read of the file per call, so that gzip data cut short still gives
    # every whole citation before the cut (GzipFile.read(n) drops what it had on EOFError)
    read = getattr(stream, "read1", stream.read)
    try:
        while True:
            chunk = reading.read(read)
            if not started:
                if not chunk:
                    raise FormatError("empty file, expected PubMed/MEDLINE XML", path=name)
                _check_start(chunk, name)
                started = True
            final = not chunk
            reading.feed(decoder.decode(chunk, final=final).encode("utf-8"), final)
            yield from reading.ready()
            if reading.fed - reading.target.mark > limits.MAX_MEDLINE_CITATION_BYTES:
                raise FormatError(
                    f"more than MAX_MEDLINE_CITATION_BYTES = {limits.MAX_MEDLINE_CITATION_BYTES:,} bytes without a "
                    f"whole citation (clinex.io.limits), from line {reading.target.line or 1}; {reading.where()}",
                    path=name,
                )
            if final:
                break
    finally:
        for c in closers:
            c.close()


class _Reading:
    """One streamed read of :func:`iter_medline`: the XML parser and its target, the PMIDs
    seen, the bytes fed and the citations read so far (named in file-level errors)."""

    def __init__(self, name: str, errors: str, report: Callable[[ClinexError], None],
                 max_chars: int | None) -> None:
        from defusedxml.ElementTree import DefusedXMLParser

        self.name, self.errors, self.report, self.max_chars = name, errors, report, max_chars
        self.target = _Target(name)
        # entities refused, external references refused, DOCTYPE allowed
        self.parser = DefusedXMLParser(target=self.target)
        self.target.expat = self.parser.parser
        self.seen: dict[str, int] = {}
        self.fed = self.n_read = 0

    def where(self) -> str:
        """How many citations were read before a file-level error."""
        return f"{self.n_read} citation(s) before it were read" if self.n_read else "no citation was read"

    def read(self, read: Callable[[int], bytes]) -> bytes:
        """The next chunk of the file's bytes (``b""`` at its end); broken or short gzip
        data is a FormatError."""
        try:
            return read(_CHUNK)
        except EOFError:
            raise FormatError(f"gzip data ends early (a truncated file?); {self.where()}", path=self.name) from None
        except (gzip.BadGzipFile, zlib.error) as exc:
            raise FormatError(f"not valid gzip data ({exc}); {self.where()}", path=self.name) from None

    def feed(self, data: bytes, final: bool) -> None:
        """Parse the next UTF-8 bytes (and end the document when ``final``); XML that is
        not well formed or unsafe is a FormatError naming the line."""
        from xml.etree.ElementTree import ParseError

        from defusedxml.common import DefusedXmlException

        try:
            if data:
                self.parser.feed(data)
            if final:
                self.parser.close()
        except ParseError as exc:
            line = exc.position[0] if getattr(exc, "position", None) else None
            raise FormatError(f"XML is not well formed ({exc}); {self.where()}", path=self.name, line=line) from None
        except DefusedXmlException as exc:
            raise FormatError(
                f"refused unsafe XML ({type(exc).__name__}: entity declarations and external references "
                f"are not read); {self.where()}",
                path=self.name, line=self.target.expat.CurrentLineNumber,
            ) from None
        self.fed += len(data)

    def ready(self) -> Iterator[MedlineCitation]:
        """The citations parsed so far and not yet yielded; a bad one is reported and
        skipped (raised with ``errors="raise"``)."""
        target = self.target
        while target.done:
            elem, line = target.done.pop(0)
            if elem.tag != "PubmedArticle":
                continue  # PubmedBookArticle, DeleteCitation: not citations of this reader
            try:
                cit = _citation(elem, line, self.name, self.seen, self.max_chars)
            except ClinexError as exc:
                if self.errors == "raise":
                    raise
                self.report(exc)
                continue
            finally:
                elem.clear()
            self.n_read += 1
            yield cit
