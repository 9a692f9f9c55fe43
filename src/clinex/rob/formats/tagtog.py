"""tagtog exports: ``plain.html`` page texts and ``ann.json`` span annotations.

A tagtog export of PDF documents (the format of the preliminary RoB corpus,
Dhrangadhariya et al., Zenodo 10.5281/zenodo.7698940) holds, per document,

* ``plain.html/pool/<id>.pdf.plain.html``: an XHTML file whose every
  ``<pre id="sNv1">`` element is the text of one PDF page (HTML-escaped);
* ``ann.json/members/<annotator>/pool/<id>.pdf.ann.json``: that annotator's
  entities; each has a ``classId`` (named in ``annotations-legend.json``), a
  ``part`` (the page id) and ``offsets[{start, text}]`` where ``start`` counts
  characters into the page's *unescaped* text; ``metas`` hold document-level
  judgements (RoB1..RoB5, overall_RoB).

:func:`read_tagtog_document` joins the pages into one :class:`~clinex.text.Document`
(pages separated by :data:`clinex.text.PAGE_SEPARATOR`, i.e. a blank line), so that every
span offset is an offset into ``Document.text`` and ``Document.page_of`` gives the
page back. Page ``k`` (1-based) starts at ``sum(len(page_i) + 2 for i < k)``.

References
----------
tagtog anndoc / ann.json format: https://docs.tagtog.com/anndoc.html
RoB 2: Sterne JAC et al. BMJ 2019;366:l4898.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from clinex.errors import FormatError, InputError, SchemaError
from clinex.io.textfile import require_file
from clinex.text import PAGE_SEPARATOR, Document, Fragment, Span

__all__ = [
    "PAGE_SEPARATOR",
    "ALIGN_WINDOW",
    "read_tagtog_document",
    "read_tagtog_annotations",
    "read_tagtog_judgements",
    "read_legend",
    "parse_label",
    "sq_of",
    "doc_key",
    "iter_corpus",
]

log = logging.getLogger(__name__)

_XHTML = "{http://www.w3.org/1999/xhtml}"
_PAGE_ID = re.compile(r"^s(\d+)v(\d+)$")
_LABEL = re.compile(r"^(\d+)_(\d+)_(Yes|No|ProbablyYes|ProbablyNo)_(Good|Bad|Information)$")
_RESPONSES = {
    "Yes": ("Yes", "Yes"),
    "No": ("No", "No"),
    "ProbablyYes": ("Yes", "Probably yes"),
    "ProbablyNo": ("No", "Probably no"),
}
_RISK = {"low-risk": "Low", "some-concerns": "Some concerns", "high-risk": "High"}
_META = {"RoB1": "D1", "RoB2": "D2", "RoB3": "D3", "RoB4": "D4", "RoB5": "D5", "overall_RoB": "overall"}
#: How far (characters, either side) :func:`read_tagtog_annotations` looks for a span's
#: text when the export's offset does not point at it.
ALIGN_WINDOW = 300


def doc_key(path: str | Path) -> str:
    """The document id shared by a document's ``plain.html`` and ``ann.json`` files.

    ``a1Op...-trial_annotation_document_4.pdf.plain.html`` and
    ``a1Op...-trial_annotation_document_4.pdf.ann.json`` both give
    ``a1Op...-trial_annotation_document_4``.

    Parameters
    ----------
    path : str or Path
        Either file.

    Returns
    -------
    str
    """
    name = Path(path).name
    for suffix in (".plain.html", ".ann.json", ".html", ".json"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
            break
    if name.lower().endswith(".pdf"):
        name = name[:-4]
    return name


def _read_pages(path: Path) -> list[tuple[str, str]]:
    from clinex.errors import EncodingError
    from clinex.io.xmlfile import XMLFault, parse_xml

    require_file(path)
    if path.stat().st_size == 0:
        raise FormatError("empty file (0 bytes), expected a tagtog plain.html", path=path)
    try:
        root = parse_xml(path)
    except XMLFault as fault:
        if fault.kind == "malformed":
            raise FormatError(f"not well-formed XHTML: {fault.detail}", path=path, line=fault.line) from None
        if fault.kind == "unsafe":
            raise FormatError(f"refused unsafe XML ({fault.detail})", path=path) from None
        if fault.kind == "encoding":
            raise EncodingError("not UTF-8 text", path=path) from None
        raise EncodingError(f"XML declares an unknown encoding ({fault.detail})", path=path, line=1) from None
    pages = []
    for el in root.iter():
        tag = el.tag if isinstance(el.tag, str) else ""
        if tag in (f"{_XHTML}pre", "pre") and _PAGE_ID.match(el.get("id") or ""):
            pages.append((el.get("id"), "".join(el.itertext())))
    if not pages:
        raise FormatError('no <pre id="sNv1"> page elements: not a tagtog plain.html', path=path)
    # numeric order without int(): a number of thousands of digits is no ValueError
    pages.sort(key=lambda p: tuple((len(g.lstrip("0")), g.lstrip("0"))
                                   for g in _PAGE_ID.match(p[0]).groups()))  # type: ignore[union-attr]
    return pages


def read_tagtog_document(html_path: str | Path, *, sentences: bool = True,
                         sections: bool = True) -> Document:
    """Read a tagtog ``plain.html`` into one document with page spans.

    Parameters
    ----------
    html_path : str or Path
        A ``*.plain.html`` file (XHTML, parsed with defusedxml).
    sentences : bool
        Fill ``Document.sentences`` (:func:`clinex.rob.formats.structure.add_structure`; a page
        break always ends a sentence).
    sections : bool
        Fill ``Document.sections`` with :func:`clinex.rob.sections.detect_sections`.

    Returns
    -------
    Document
        ``id`` = :func:`doc_key`; ``text`` = the pages' unescaped texts in page order
        joined by :data:`PAGE_SEPARATOR`; ``pages`` labelled ``"1"``, ``"2"``, ...;
        ``meta`` = ``{"source": path, "format": "tagtog", "page_ids": ["s1v1", ...],
        "page_starts": [0, ...]}``.

    Raises
    ------
    InputError
        The file does not exist.
    FormatError
        Empty file, not well-formed XHTML, or no page elements.
    """
    path = Path(html_path)
    pages = _read_pages(path)
    parts: list[str] = []
    starts: list[int] = []
    pos = 0
    for _, txt in pages:
        if parts:
            parts.append(PAGE_SEPARATOR)
            pos += len(PAGE_SEPARATOR)
        starts.append(pos)
        parts.append(txt)
        pos += len(txt)
    text = "".join(parts)
    page_spans = tuple(
        Span(fragments=(Fragment(start=s, end=s + len(t), text=t),), label=str(i + 1))
        for i, (s, (_, t)) in enumerate(zip(starts, pages))
    )
    doc = Document(
        id=doc_key(path),
        text=text,
        pages=page_spans,
        meta={"source": str(path), "format": "tagtog",
              "page_ids": [pid for pid, _ in pages], "page_starts": starts},
    )
    return _structure(doc, sentences=sentences, sections=sections)


def _structure(doc: Document, *, sentences: bool, sections: bool) -> Document:
    from clinex.rob.formats.structure import add_structure

    return add_structure(doc, sentences=sentences, sections=sections)


def read_legend(path: str | Path) -> dict[str, str]:
    """Read ``annotations-legend.json`` (classId -> name).

    Parameters
    ----------
    path : str or Path
        The legend file (``annot_map.json`` has the same content).

    Returns
    -------
    dict of str to str

    Raises
    ------
    FormatError
        Not a JSON object of strings.
    """
    data = _load_json(Path(path))
    if not isinstance(data, dict) or not all(isinstance(v, str) for v in data.values()):
        raise FormatError("expected a JSON object mapping classId to name", path=path)
    return data


def _find_legend(ann_path: Path) -> dict[str, str] | None:
    for parent in ann_path.resolve().parents:
        for name in ("annotations-legend.json", "annot_map.json"):
            cand = parent / name
            if cand.is_file():
                return read_legend(cand)
    return None


def _load_json(path: Path) -> Any:
    require_file(path)
    try:
        raw = path.read_text(encoding="utf-8-sig")  # a byte-order mark is dropped
    except UnicodeDecodeError:
        from clinex.errors import EncodingError

        raise EncodingError("not UTF-8 text", path=path) from None
    if not raw.strip():
        raise FormatError("empty file, expected JSON", path=path)
    try:
        return json.loads(raw)
    except json.JSONDecodeError as exc:
        raise FormatError(f"invalid JSON: {exc.msg}", path=path, line=exc.lineno) from None
    except RecursionError:
        raise FormatError("JSON nested too deeply", path=path) from None
    except ValueError:  # an integer past Python's 4,300 digits: the decoder that names its field
        from clinex.io.textfile import parse_json

        return parse_json(raw, path=path)


def _legend_for(ann_path: Path, legend: dict[str, str] | str | Path | None) -> dict[str, str]:
    if isinstance(legend, dict):
        return legend
    if legend is not None:
        return read_legend(legend)
    found = _find_legend(ann_path)
    if found is None:
        raise InputError(
            "no annotations-legend.json in this or a parent folder; pass legend=", path=ann_path
        )
    return found


def _align(page: str, start: int, text: str, window: int) -> int | None:
    """Start of the occurrence of ``text`` in ``page`` nearest ``start`` (within ``window``)."""
    if page[start : start + len(text)] == text:
        return start
    lo = max(0, start - window)
    hi = min(len(page), start + len(text) + window)
    best = None
    i = page.find(text, lo, hi)
    while i != -1:
        if best is None or abs(i - start) < abs(best - start):
            best = i
        i = page.find(text, i + 1, hi)
    return best


def read_tagtog_annotations(
    ann_json_path: str | Path,
    document: Document,
    *,
    legend: dict[str, str] | str | Path | None = None,
    align: bool = True,
    warnings: list[str] | None = None,
) -> list[Span]:
    """Read one annotator's ``ann.json`` as spans into ``document``.

    Parameters
    ----------
    ann_json_path : str or Path
        The ``*.ann.json`` file.
    document : Document
        The matching document from :func:`read_tagtog_document` (needs
        ``meta["page_ids"]`` and ``pages``).
    legend : dict, path or None
        classId -> name; by default ``annotations-legend.json`` (or
        ``annot_map.json``) found in the file's folder or a parent folder.
    align : bool
        When an offset does not point at its ``text`` (the export has a few such
        offsets, off by a handful of characters), move the span to the nearest
        occurrence of that text within :data:`ALIGN_WINDOW` characters. With
        ``False`` the export's ``start`` is kept and the span runs for
        ``len(text)`` characters (clamped to the page). A span whose text cannot be
        found keeps its export offsets either way.
    warnings : list of str, optional
        Problems found (offsets realigned, clamped or outside the page, unknown
        page or classId) are appended here as ``"file: entity N: ..."`` lines
        (without a list they are logged at WARNING level); they never raise.

    Returns
    -------
    list of Span
        In file order. ``label`` = legend name (e.g. ``"1_1_ProbablyYes_Good"``;
        an unknown classId is kept as is), ``source`` = ``"tagtog:<annotator>"``,
        offsets into ``document.text``. Entities with no usable offset are skipped.

    Raises
    ------
    InputError
        Missing file or legend.
    FormatError
        Not JSON, or no ``entities`` list.
    """
    path = Path(ann_json_path)
    data = _load_json(path)
    if not isinstance(data, dict) or not isinstance(data.get("entities", []), list):
        raise FormatError("expected a tagtog ann.json object with an 'entities' list",
                          path=path, field="entities")
    names = _legend_for(path, legend)
    page_ids: list[str] = list(document.meta.get("page_ids", []))
    index = {pid: i for i, pid in enumerate(page_ids)}
    problems: list[str] = []
    spans: list[Span] = []
    for n, ent in enumerate(data.get("entities", []), start=1):
        where = f"{path.name}: entity {n}"
        if not isinstance(ent, dict):
            problems.append(f"{where}: not an object, skipped")
            continue
        cls = str(ent.get("classId", ""))
        label = names.get(cls)
        if label is None:
            problems.append(f"{where}: classId {cls!r} not in the legend, kept as label")
            label = cls
        part = ent.get("part")
        if part not in index or index[part] >= len(document.pages):
            problems.append(f"{where}: page {part!r} is not in the document, skipped")
            continue
        page_span = document.pages[index[part]]
        base, page = page_span.start, page_span.fragments[0].text
        who = ((ent.get("confidence") or {}).get("who") or [None])[0]
        frags: list[tuple[int, int]] = []
        n_problems = len(problems)
        for off in ent.get("offsets") or []:
            try:
                start = int(off["start"])
                otext = str(off.get("text", ""))
            except (KeyError, TypeError, ValueError):
                problems.append(f"{where}: offset without an integer 'start', skipped")
                continue
            end = start + len(otext)
            if align and page[start:end] != otext and otext:
                moved = _align(page, start, otext, ALIGN_WINDOW)
                if moved is not None:
                    problems.append(f"{where}: offset {start} on {part} realigned by {moved - start:+d}")
                    start, end = moved, moved + len(otext)
            if start < 0 or start >= len(page):
                problems.append(
                    f"{where}: offset {start} outside page {part} ({len(page)} characters), skipped"
                )
                continue
            if end > len(page):
                problems.append(f"{where}: span {start}-{end} clamped to page {part} end {len(page)}")
                end = len(page)
            if end > start:
                frags.append((base + start, base + end))
        if not frags:
            if len(problems) == n_problems:
                problems.append(f"{where}: no usable offset, skipped")
            continue
        source = f"tagtog:{who.split(':', 1)[-1]}" if isinstance(who, str) else "tagtog"
        spans.append(Span.from_offsets(document.text, frags, label=label, source=source))
    if warnings is not None:
        warnings.extend(problems)
    else:
        for p in problems:
            log.warning(p)
    return spans


def read_tagtog_judgements(
    ann_json_path: str | Path, *, legend: dict[str, str] | str | Path | None = None
) -> dict[str, str]:
    """Document-level RoB judgements (tagtog ``metas``) of one annotator.

    Parameters
    ----------
    ann_json_path : str or Path
        The ``*.ann.json`` file.
    legend : dict, path or None
        As in :func:`read_tagtog_annotations`.

    Returns
    -------
    dict of str to str
        Keys ``"D1"``..``"D5"`` (legend RoB1..RoB5) and ``"overall"`` (overall_RoB),
        only those present; values RoB 2 risk levels ``"Low"``, ``"Some concerns"``
        or ``"High"`` (from tagtog's ``Low-risk``, ``Some-concerns``, ``High-risk``).

    Raises
    ------
    FormatError
        Not JSON, or a judgement value that is not one of the three levels.

    References
    ----------
    Sterne JAC et al. RoB 2. BMJ 2019;366:l4898 (risk levels).
    """
    path = Path(ann_json_path)
    data = _load_json(path)
    if not isinstance(data, dict):
        raise FormatError("expected a tagtog ann.json object", path=path)
    names = _legend_for(path, legend)
    out: dict[str, str] = {}
    for mid, meta in (data.get("metas") or {}).items():
        key = _META.get(names.get(mid, mid))
        if key is None:
            continue
        value = meta.get("value") if isinstance(meta, dict) else meta
        if value is None:
            continue
        level = _RISK.get(str(value).strip().lower().replace(" ", "-"))
        if level is None:
            raise FormatError(f"unknown risk level {value!r}", path=path, field=f"metas.{mid}")
        out[key] = level
    return dict(sorted(out.items(), key=lambda kv: (kv[0] == "overall", kv[0])))


def parse_label(name: str, *, fold: bool = True) -> tuple[str, str, str | None]:
    """Split a RoBuster/tagtog label name into SQ, response and judgement.

    Parameters
    ----------
    name : str
        ``"<domain>_<q>_<Response>_<Judgement>"``, e.g. ``"1_1_ProbablyYes_Good"``
        or ``"2_1_No_Information"``.
    fold : bool
        Fold "Probably yes"/"Probably no" into "Yes"/"No" (RoBuster's span labels do;
        Dhrangadhariya et al. 2023, Sect. 3). With ``False`` they are returned as
        ``"Probably yes"`` / ``"Probably no"``.

    Returns
    -------
    (sq, response, judgement)
        ``sq`` like ``"1.1"``; ``response`` one of ``"Yes"``, ``"No"``,
        ``"No Information"`` (plus the probably forms when ``fold=False``);
        ``judgement`` ``"Good"``, ``"Bad"`` or None for No Information.

    Raises
    ------
    SchemaError
        The name does not follow the pattern.

    Examples
    --------
    >>> parse_label("1_1_ProbablyYes_Good")
    ('1.1', 'Yes', 'Good')
    >>> parse_label("2_1_No_Information")
    ('2.1', 'No Information', None)
    """
    m = _LABEL.match(name.strip())
    if m is None:
        raise SchemaError(f"not a signalling-question label: {name!r}", field="label")
    dom, q, resp, judg = m.groups()
    sq = f"{int(dom)}.{int(q)}"
    if judg == "Information":
        if resp != "No":
            raise SchemaError(f"not a signalling-question label: {name!r}", field="label")
        return sq, "No Information", None
    folded, full = _RESPONSES[resp]
    return sq, folded if fold else full, judg


def sq_of(label: str | None) -> str | None:
    """The signalling-question id a label refers to.

    Parameters
    ----------
    label : str or None
        A legend name (``"1_1_Yes_Good"``), an SQ id (``"1.1"``) or anything else.

    Returns
    -------
    str or None
        ``"1.1"`` for the first two; None for labels without an SQ (``"RoB1"``).
    """
    if not label:
        return None
    m = re.match(r"^(\d+)[._](\d+)(?:$|_)", label.strip())
    return f"{int(m.group(1))}.{int(m.group(2))}" if m else None


def iter_corpus(
    root: str | Path,
    annotator: str,
    *,
    align: bool = True,
    warnings: list[str] | None = None,
    sentences: bool = True,
    sections: bool = True,
) -> Iterator[tuple[str, Document, list[Span]]]:
    """Iterate over one annotator's documents of a tagtog export.

    Parameters
    ----------
    root : str or Path
        The export folder holding ``plain.html/`` and ``ann.json/``
        (``annotations-legend.json`` at the top).
    annotator : str
        Member name (``"roger-annotation"``) or ``"master"``.
    align, warnings, sentences, sections
        Passed to :func:`read_tagtog_annotations` / :func:`read_tagtog_document`.

    Yields
    ------
    (doc_id, Document, list of Span)
        Sorted by doc id; documents the annotator has no ann.json for are skipped.

    Raises
    ------
    InputError
        No such export folder or annotator.
    """
    root = Path(root)
    ann_dir = root / "ann.json" / ("master" if annotator == "master" else f"members/{annotator}")
    ann_dir = ann_dir / "pool" if (ann_dir / "pool").is_dir() else ann_dir
    html_dir = root / "plain.html" / "pool"
    if not html_dir.is_dir():
        html_dir = root / "plain.html"
    if not ann_dir.is_dir() or not html_dir.is_dir():
        raise InputError(f"no tagtog export for annotator {annotator!r} (expected {ann_dir})",
                         path=root)
    legend_path = root / "annotations-legend.json"
    legend = read_legend(legend_path) if legend_path.is_file() else None
    anns = {doc_key(p): p for p in ann_dir.glob("*.ann.json")}
    for html in sorted(html_dir.glob("*.plain.html"), key=doc_key):
        key = doc_key(html)
        if key not in anns:
            continue
        doc = read_tagtog_document(html, sentences=sentences, sections=sections)
        spans = read_tagtog_annotations(anns[key], doc, legend=legend, align=align,
                                        warnings=warnings)
        yield key, doc, spans
