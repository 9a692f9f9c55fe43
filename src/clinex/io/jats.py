"""JATS / PMC XML articles -> :class:`~clinex.text.Document` with sections.

Parsed with defusedxml (no entity expansion, no external DTD fetch). The text is
laid out as: title, then ``Abstract`` and the paragraphs of the article's own abstract
(the ``<abstract>`` without ``abstract-type``; blurbs such as PLOS's one-line
``abstract-type="toc"`` or ``"summary"`` are left out), then each body ``<sec>``
(its ``<title>`` on a line of its own, then its paragraphs; nested sections in
order), figure and table captions where they stand, then ``References`` and one
line per ``<ref>``. Paragraphs are separated by a blank line; white space inside a
paragraph (XML indentation) is collapsed to single spaces. JATS has no pages, so
``Document.pages`` is empty.

Sections come from the XML, not from heuristics: each top-level body ``<sec>``
becomes a span labelled by its ``sec-type`` (``intro``, ``methods``,
``results``, ``discussion``, ``conclusions``...) or, failing that, by its title
matched against the caller's ``section_names`` (label -> heading patterns; the RoB
task passes :data:`clinex.rob.sections.SECTION_NAMES`); unmatched sections are
labelled ``"other"``. The title is ``"front"``, the abstract ``"abstract"``
and the reference list ``"references"``.

References
----------
ANSI/NISO Z39.96-2021, JATS: Journal Article Tag Suite, version 1.3
(https://jats.nlm.nih.gov/); PMC Tagging Guidelines.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from clinex.errors import FormatError
from clinex.io.textfile import require_file
from clinex.text import Document, Fragment, Span

__all__ = ["read_jats", "section_label"]

_SEC_TYPES = {
    "intro": "introduction",
    "introduction": "introduction",
    "background": "introduction",
    "methods": "methods",
    "materials|methods": "methods",
    "materials": "methods",
    "subjects": "methods",
    "results": "results",
    "discussion": "discussion",
    "results|discussion": "results",
    "conclusions": "conclusion",
    "conclusion": "conclusion",
    "supplementary-material": "other",
}
_SKIP = {"fig", "table-wrap", "ref-list", "title", "label", "sec", "supplementary-material",
         "disp-formula", "graphic", "media"}
_WS = re.compile(r"\s+")
#: A section number before a title: "2.", "2.1 ", "II. ", "IV ", "X) ". A roman numeral
#: counts only as a whole token followed by a separator, so "Introduction",
#: "Interventions" and "Interpretation" keep their first letters.
_NUMBERING = re.compile(r"^\s*(?:\d+(?:\.\d+)*[.)]?\s*|[IVX]{1,4}(?:[.)]\s*|\s+))")
#: ``abstract-type`` values of blurbs that are not the article's abstract: the PLOS
#: table-of-contents line (``toc``), author / editors' summaries (``summary``), and the
#: JATS teaser and graphical abstracts (JATS 1.3 ``<abstract>``; PLOS tagging guidelines).
_BLURB_TYPES = {"toc", "summary", "teaser", "graphical", "short", "author-summary",
                "editor-summary", "executive-summary"}


def _local(tag: Any) -> str:
    return tag.rsplit("}", 1)[-1] if isinstance(tag, str) else ""


def _clean(text: str) -> str:
    return _WS.sub(" ", text).strip()


def _text(el) -> str:
    return _clean("".join(el.itertext()))


def section_label(title: str | None, sec_type: str | None = None, *,
                  section_names: Mapping[str, Sequence[str]] | None = None) -> str:
    """Canonical section label of a JATS ``<sec>``.

    Parameters
    ----------
    title : str or None
        The section's ``<title>`` text.
    sec_type : str or None
        Its ``sec-type`` attribute.
    section_names : mapping of str to sequence of str, optional
        Label -> heading spellings (regular expressions, matched against the whole
        title), e.g. :data:`clinex.rob.sections.SECTION_NAMES`. Without it only
        ``sec-type`` is used.

    Returns
    -------
    str
        A label of the ``sec-type`` table, a key of ``section_names``, or ``"other"``.
    """
    if sec_type and sec_type.lower() in _SEC_TYPES:
        return _SEC_TYPES[sec_type.lower()]
    if title and section_names:
        t = _NUMBERING.sub("", title).strip().rstrip(":.")
        for label, names in section_names.items():
            for n in names:
                if re.fullmatch(n, t) or re.fullmatch(n, t.title()) or re.fullmatch(n.upper(), t.upper()):
                    return label
    return "other"


class _Builder:
    """The document text built paragraph by paragraph (blank lines between), with section marks."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.pos = 0
        self.sections: list[tuple[int, str]] = []

    def para(self, text: str) -> None:
        """Append a paragraph (nothing when empty)."""
        if not text:
            return
        if self.parts:
            self.parts.append("\n\n")
            self.pos += 2
        self.parts.append(text)
        self.pos += len(text)

    def mark(self, label: str) -> None:
        """Start a section labelled ``label`` where the next paragraph will start."""
        self.sections.append((self.pos + (2 if self.parts else 0), label))


def _walk_sec(sec, b: _Builder) -> None:
    """The paragraphs of a section's children (titles, nested sections, figure and table
    captions, list items, other elements but :data:`_SKIP`), in document order."""
    for child in sec:
        name = _local(child.tag)
        if name == "title":
            b.para(_text(child))
        elif name == "sec":
            _walk_sec(child, b)
        elif name in ("fig", "table-wrap"):
            bits = [_text(x) for x in child if _local(x.tag) in ("label", "caption")]
            b.para(" ".join(x for x in bits if x))
        elif name == "list":
            for item in child.iter():
                if _local(item.tag) == "list-item":
                    b.para(_text(item))
        elif name not in _SKIP:
            b.para(_text(child))


def read_jats(path: str | Path, *, section_names: Mapping[str, Sequence[str]] | None = None) -> Document:
    """Read a JATS / PMC ``.xml`` / ``.nxml`` article.

    Parameters
    ----------
    path : str or Path
    section_names : mapping of str to sequence of str, optional
        Heading spellings that label a body ``<sec>`` without a known ``sec-type``
        (see :func:`section_label`); :func:`clinex.rob.formats.load.load_document`
        passes :data:`clinex.rob.sections.SECTION_NAMES`.

    Returns
    -------
    Document
        ``id`` = PMCID, else PMID, else the file stem; ``sections`` from the XML
        structure; ``meta`` = ``{"source", "format": "jats", "title", "pmid",
        "pmcid", "doi"}`` (ids None when absent).

    Raises
    ------
    InputError
        No such file.
    FormatError
        0-byte file, XML that is not well formed (line named), unsafe XML
        (entity declarations), no ``<article>`` root, or an article without text.
    EncodingError
        Not decodable as declared.
    """
    from clinex.io.xmlfile import parse_xml_file

    p = require_file(path)
    if p.stat().st_size == 0:
        raise FormatError("empty file (0 bytes), expected JATS XML", path=p)
    article = _article(parse_xml_file(p), p)
    ids = _ids(article)
    b = _Builder()
    title_el = _first(article, "article-title")
    title = _text(title_el) if title_el is not None else ""
    if title:
        b.mark("front")
        b.para(title)
    abstract = _own_abstract(article)
    if abstract is not None:
        b.mark("abstract")
        b.para("Abstract")
        _walk_sec(abstract, b)
    body = _first(article, "body")
    if body is not None:
        _add_body(body, b, section_names)
    _add_references(article, b)
    text = "".join(b.parts)
    if not text.strip():
        raise FormatError("the article has no text (no title, abstract or body)", path=p)
    doc_id = ids["pmcid"] or ids["pmid"] or p.stem
    return Document(id=doc_id, text=text, sections=_sections(text, b.sections),
                    meta={"source": str(p), "format": "jats", "title": title or None, **ids})


def _article(root, p: Path):
    """The ``<article>`` element: the root, else the first one under it (a FormatError if none)."""
    article = root if _local(root.tag) == "article" else next(
        (e for e in root.iter() if _local(e.tag) == "article"), None
    )
    if article is None:
        raise FormatError(f"not a JATS article (root element <{_local(root.tag)}>)", path=p)
    return article


def _first(under, name: str):
    """The first element named ``name`` (any namespace) at or under ``under``, or None."""
    return next((e for e in under.iter() if _local(e.tag) == name), None)


def _ids(article) -> dict[str, str | None]:
    """The article's PMID, PMCID and DOI (the first ``<article-id>`` of each type; None when absent)."""
    ids: dict[str, str | None] = {"pmid": None, "pmcid": None, "doi": None}
    for e in article.iter():
        if _local(e.tag) == "article-id":
            kind = (e.get("pub-id-type") or "").lower()
            key = {"pmid": "pmid", "pmc": "pmcid", "pmcid": "pmcid", "doi": "doi"}.get(kind)
            if key and ids[key] is None:
                ids[key] = _text(e)
    return ids


def _own_abstract(article):
    """The article's own abstract: the first without a type, else the first typed one
    that is no blurb (:data:`_BLURB_TYPES`), else None."""
    abstracts = [e for e in article.iter() if _local(e.tag) == "abstract"]
    abstract = next((e for e in abstracts if not e.get("abstract-type")), None)
    if abstract is None:
        abstract = next((e for e in abstracts
                         if (e.get("abstract-type") or "").lower() not in _BLURB_TYPES), None)
    return abstract


def _add_body(body, b: _Builder, section_names: Mapping[str, Sequence[str]] | None) -> None:
    """The body's ``<sec>`` elements, each marked with its :func:`section_label`, then
    the body's other children as one ``"other"`` section."""
    loose = []
    for child in body:
        if _local(child.tag) == "sec":
            t = next((x for x in child if _local(x.tag) == "title"), None)
            b.mark(section_label(_text(t) if t is not None else None, child.get("sec-type"),
                                 section_names=section_names))
            _walk_sec(child, b)
        else:
            loose.append(child)
    if loose:
        b.mark("other")
        _walk_sec(loose, b)


def _add_references(article, b: _Builder) -> None:
    """The ``<ref>`` elements, one paragraph each, after a "References" heading."""
    refs = [e for e in article.iter() if _local(e.tag) == "ref"]
    if refs:
        b.mark("references")
        b.para("References")
        for r in refs:
            b.para(_text(r))


def _sections(text: str, marks: list[tuple[int, str]]) -> tuple[Span, ...]:
    """Section spans from the (start, label) marks: each runs to the next mark, trailing
    white space left out; marks at or past the text's end and empty sections are dropped."""
    sections = []
    marks = [(s, lab) for s, lab in marks if s < len(text)]
    for i, (start, label) in enumerate(marks):
        end = marks[i + 1][0] if i + 1 < len(marks) else len(text)
        while end > start and text[end - 1].isspace():
            end -= 1
        if end > start:
            sections.append(Span(fragments=(Fragment(start=start, end=end, text=text[start:end]),),
                                 label=label, source="jats"))
    return tuple(sections)
