"""One risk-of-bias annotator's documents, read for :mod:`~clinex.rob.iaa` and
:mod:`~clinex.rob.answer_agreement`: :func:`load_annotator` reads a folder of either kind
into :class:`AnnotatedDocument` (spans, judgements, responses per document).

* a tagtog annotator folder (``ann.json/members/<name>[/pool]``, ``*.ann.json``),
  read with :mod:`clinex.rob.formats.tagtog`; the page texts come from ``texts`` (the
  export's ``plain.html/pool``), or from a ``plain.html`` folder found beside an
  ancestor folder;
* a clinex output folder: ``*.json`` / ``*.jsonl`` files of
  :class:`~clinex.rob.types.TrialAssessment` (``clinex rob assess``); each
  evidence span's offsets point into the document, loaded from ``texts``
  (matched by document id) or from the assessment's ``source`` path.

Both names are re-exported by :mod:`~clinex.rob.iaa`.

References
----------
Dhrangadhariya A, et al. RoBuster: a corpus annotated with risk of bias text
spans in randomized controlled trials (the tagtog export).
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clinex.errors import ClinexError, FormatError, InputError
from clinex.text import Document, Span

__all__ = ["AnnotatedDocument", "load_annotator"]

# RoBuster/tagtog response words (parse_label(..., fold=False)) -> RoB 2 codes
_RESPONSE_CODES = {"Yes": "Y", "Probably yes": "PY", "Probably no": "PN", "No": "N",
                   "No Information": "NI"}


@dataclass
class AnnotatedDocument:
    """One annotator's view of one document.

    Attributes
    ----------
    doc_id : str
    document : Document or None
        The text the span offsets point into (None when it could not be found).
    spans : list of Span
        Evidence spans, ``label`` = SQ id (``"1.1"``).
    judgements : dict of str to str
        ``"D1"``..``"D5"``, ``"overall"`` -> ``"Low"``/``"Some concerns"``/``"High"``.
    responses : dict of str to str
        SQ id -> RoB 2 response (``Y``/``PY``/``PN``/``N``/``NI``): the answers of
        clinex output, or for tagtog the response most of the SQ's span labels carry
        (``1_1_ProbablyYes_Good`` -> ``PY``).
    """

    doc_id: str
    document: Document | None
    spans: list[Span] = field(default_factory=list)
    judgements: dict[str, str] = field(default_factory=dict)
    responses: dict[str, str] = field(default_factory=dict)


def _tagtog_dir(path: Path) -> Path | None:
    for cand in (path, path / "pool"):
        if cand.is_dir() and any(cand.glob("*.ann.json")):
            return cand
    return None


def _find_plain_html(path: Path) -> Path | None:
    for parent in path.resolve().parents:
        for cand in (parent / "plain.html" / "pool", parent / "plain.html"):
            if cand.is_dir() and any(cand.glob("*.plain.html")):
                return cand
    return None


def _text_index(texts: Path) -> dict[str, Path]:
    from clinex.rob.formats.tagtog import doc_key

    index: dict[str, Path] = {}
    for p in sorted(texts.rglob("*")):
        if p.is_file() and p.suffix.lower() in {".html", ".htm", ".pdf", ".txt", ".xml", ".nxml"}:
            index.setdefault(doc_key(p), p)
            index.setdefault(p.stem, p)
    return index


def load_annotator(
    path: str | Path,
    *,
    texts: str | Path | None = None,
    align: bool = False,
    warnings: list[str] | None = None,
) -> dict[str, AnnotatedDocument]:
    """Read one annotator's folder (tagtog ``ann.json`` or clinex assessment JSON).

    Parameters
    ----------
    path : str or Path
        A tagtog annotator folder (``*.ann.json``, directly or in ``pool/``) or a
        folder (or single file) of clinex ``TrialAssessment`` JSON / JSON Lines.
    texts : str or Path, optional
        Folder of the documents (tagtog ``plain.html/pool``, PDFs, text, JATS).
        Files are matched to documents by id (file name without ``.pdf.plain.html``,
        ``.pdf``, ``.txt`` ...).
    align : bool
        Realign tagtog offsets that miss their text (see
        :func:`clinex.rob.formats.tagtog.read_tagtog_annotations`). Off by default: the
        paper's figures count the exported offsets.
    warnings : list of str, optional
        Receives reading problems; a bad record is reported here and skipped.

    Returns
    -------
    dict of str to AnnotatedDocument
        By document id.

    Raises
    ------
    InputError
        The path does not exist, holds nothing readable, or tagtog texts are missing.
    """
    from clinex.rob.formats.tagtog import (
        doc_key,
        parse_label,
        read_tagtog_annotations,
        read_tagtog_document,
        read_tagtog_judgements,
        sq_of,
    )

    src = Path(path)
    problems = warnings if warnings is not None else []
    if not src.exists():
        raise InputError("no such file or folder", path=src)
    text_dir = Path(texts) if texts is not None else None
    if text_dir is not None and not text_dir.is_dir():
        raise InputError("--texts is not a folder", path=text_dir)
    out: dict[str, AnnotatedDocument] = {}

    tag_dir = _tagtog_dir(src) if src.is_dir() else None
    if tag_dir is not None:
        html_dir = text_dir or _find_plain_html(tag_dir)
        if html_dir is None:
            raise InputError(
                "tagtog annotations need their page texts: pass --texts <export>/plain.html/pool",
                path=src,
            )
        index = _text_index(html_dir)
        for ann in sorted(tag_dir.glob("*.ann.json")):
            key = doc_key(ann)
            html = index.get(key)
            if html is None:
                problems.append(f"{ann}: no text for document {key!r} in {html_dir}, skipped")
                continue
            try:
                doc = read_tagtog_document(html, sentences=False, sections=False)
                spans = read_tagtog_annotations(ann, doc, align=align, warnings=problems)
                judg = read_tagtog_judgements(ann)
            except ClinexError as exc:
                problems.append(f"{exc}; skipped")
                continue
            sq_spans = []
            votes: dict[str, Counter[str]] = {}
            for s in spans:
                q = sq_of(s.label)
                if q is None:
                    problems.append(f"{ann.name}: label {s.label!r} is not an SQ, ignored")
                    continue
                sq_spans.append(s.model_copy(update={"label": q}))
                try:
                    _, resp, _ = parse_label(str(s.label), fold=False)
                except ClinexError:
                    continue
                votes.setdefault(q, Counter())[_RESPONSE_CODES[resp]] += 1
            responses = {q: c.most_common(1)[0][0] for q, c in sorted(votes.items())}
            out[key] = AnnotatedDocument(key, doc, sq_spans, judg, responses)
        return out

    files = [src] if src.is_file() else sorted(
        p for p in src.iterdir() if p.is_file() and p.suffix in {".json", ".jsonl"}
    )
    if not files:
        raise InputError("no *.ann.json (tagtog) nor *.json/*.jsonl (clinex) files", path=src)
    index = _text_index(text_dir) if text_dir is not None else {}
    for f in files:
        for lineno, record in _records(f, problems):
            try:
                ad = _from_assessment(record, f, lineno, index, problems)
            except ClinexError as exc:
                problems.append(f"{exc}; skipped")
                continue
            out[ad.doc_id] = ad
    return out


def _loads(text: str, path: Path, line: int | None) -> Any:
    """``json.loads``, but an integer past Python's 4,300-digit conversion limit or
    nesting past the recursion limit is a FormatError naming file, line and field
    (:func:`clinex.io.textfile.parse_json`) instead of a ``ValueError`` traceback."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        raise
    except (ValueError, RecursionError):
        from clinex.io.textfile import parse_json

        return parse_json(text, path=path, line=line)  # raises the FormatError


def _records(path: Path, problems: list[str]):
    try:
        raw = path.read_text(encoding="utf-8")
    except (UnicodeDecodeError, OSError) as exc:
        problems.append(f"{path}: unreadable ({type(exc).__name__}), skipped")
        return
    if path.suffix == ".jsonl":
        for i, line in enumerate(raw.splitlines(), start=1):
            if line.strip():
                try:
                    rec = _loads(line, path, i)
                except json.JSONDecodeError as exc:
                    problems.append(f"{path}:{i}: invalid JSON ({exc.msg}), skipped")
                    continue
                except FormatError as exc:
                    problems.append(f"{exc}; skipped")
                    continue
                yield i, rec
        return
    try:
        data = _loads(raw, path, None)
    except json.JSONDecodeError as exc:
        problems.append(f"{path}:{exc.lineno}: invalid JSON ({exc.msg}), skipped")
        return
    except FormatError as exc:
        problems.append(f"{exc}; skipped")
        return
    if isinstance(data, list):
        for i, rec in enumerate(data, start=1):
            yield i, rec
    else:
        yield None, data


def _from_assessment(record, path: Path, lineno, index, problems) -> AnnotatedDocument:
    from pydantic import ValidationError

    from clinex.rob.formats.load import load_document
    from clinex.rob.formats.tagtog import doc_key, sq_of
    from clinex.rob.types import TrialAssessment

    try:
        ta = TrialAssessment.model_validate(record)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise FormatError(
            f"not a TrialAssessment: {err['msg']}", path=path, line=lineno,
            field=".".join(str(x) for x in err["loc"]) or None,
        ) from None
    key = doc_key(ta.document_id)
    text_path = index.get(key) or index.get(ta.document_id)
    if text_path is None and ta.source and Path(ta.source).is_file():
        text_path = Path(ta.source)
    doc = None
    if text_path is not None:
        doc = load_document(text_path)
    spans: list[Span] = []
    responses: dict[str, str] = {}
    for dom in ta.domains:
        for ans in dom.answers:
            if ans.response != "NA":
                responses[ans.sq] = ans.response
            for ev in ans.evidence:
                q = sq_of(ev.span.label) or ans.sq
                if doc is not None:
                    for fr in ev.span.fragments:
                        if fr.end > len(doc.text) or doc.text[fr.start : fr.end] != fr.text:
                            problems.append(
                                f"{path}: {ta.document_id}: evidence {fr.start}-{fr.end} for {q} "
                                "does not match the document text"
                            )
                            break
                spans.append(ev.span.model_copy(update={"label": q}))
    judg = {d.domain: d.risk for d in ta.domains}
    judg["overall"] = ta.overall
    if doc is None and spans:
        problems.append(
            f"{path}: no text for document {ta.document_id!r} (pass --texts); spans not counted"
        )
    return AnnotatedDocument(key, doc, spans, judg, responses)
