"""Agreement between two risk-of-bias annotators (or an annotator and clinex).

Two kinds of agreement, as in the RoBuster paper (Dhrangadhariya et al.):

* **evidence spans**: token-level pairwise F1 per signalling question (SQ),
  averaged per domain and overall;
* **judgements**: observed agreement, PABAK and Cohen's kappa on the domain and
  overall risk-of-bias levels (Low / Some concerns / High).

Inputs are folders of either kind, in any combination:

* a tagtog annotator folder (``ann.json/members/<name>[/pool]``, ``*.ann.json``),
  read with :mod:`clinex.rob.formats.tagtog`; the page texts come from ``texts`` (the
  export's ``plain.html/pool``), or from a ``plain.html`` folder found beside an
  ancestor folder;
* a clinex output folder: ``*.json`` / ``*.jsonl`` files of
  :class:`~clinex.rob.types.TrialAssessment` (``clinex rob assess``); each
  evidence span's offsets point into the document, loaded from ``texts``
  (matched by document id) or from the assessment's ``source`` path.

The counting (:data:`PAPER_COUNTING`) is the one that reproduces the RoBuster
paper's "before placards" inter-annotator row on the preliminary corpus
(roger-annotation as reference, martin-annotation as the other annotator):
randomization 31.72, deviations 12.76, missing outcome data 5.89, outcome
measurement 4.07, selection of reported result 0.00, overall 10.87.

References
----------
Dhrangadhariya A, et al. RoBuster: a corpus annotated with risk of bias text
spans in randomized controlled trials (inter-annotator agreement before and after
placards; token-level pairwise F1).
Hripcsak G, Rothschild AS. JAMIA 2005;12:296 (pairwise F1 as agreement).
Byrt T, Bishop J, Carlin JB. J Clin Epidemiol 1993;46:423 (PABAK).
Sterne JAC et al. RoB 2. BMJ 2019;366:l4898 (domains, signalling questions).
"""

from __future__ import annotations

import bisect
import json
import math
import re
from collections import Counter
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from clinex.errors import ClinexError, EvaluationError, FormatError, InputError
from clinex.metrics.counts import prf
from clinex.text import Document, Span

__all__ = [
    "PAPER_COUNTING",
    "AnnotatedDocument",
    "SQAgreement",
    "DomainAgreement",
    "JudgementAgreement",
    "IAAReport",
    "load_annotator",
    "span_agreement",
    "judgement_agreement",
    "compare",
]

#: How :func:`span_agreement` counts (the documented default of ``clinex rob iaa``).
PAPER_COUNTING = (
    "tokens = whitespace-separated words of each page's text; a token carries an SQ "
    "if any of its characters overlaps a span labelled with that SQ (labels reduced to "
    "the SQ number); only pages holding a span of annotator A (the reference) count; "
    "per-SQ F1 = 2TP/(2TP+FP+FN) in %, truncated to 2 decimals; a domain is the mean "
    "of its SQs (an SQ nobody used counts 0), the overall the mean of the SQs either "
    "annotator used, both truncated to 2 decimals; tagtog offsets taken as exported "
    "(not realigned)"
)

_TOKEN = re.compile(r"\S+")
# RoBuster/tagtog response words (parse_label(..., fold=False)) -> RoB 2 codes
_RESPONSE_CODES = {"Yes": "Y", "Probably yes": "PY", "Probably no": "PN", "No": "N",
                   "No Information": "NI"}
_FROZEN = ConfigDict(frozen=True, extra="forbid")


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


class SQAgreement(BaseModel):
    """Token-level agreement on one signalling question.

    Attributes
    ----------
    sq : str
    domain : str
    tp, fp, fn : int
        Tokens labelled by both / only B / only A (A is the reference).
    f1 : float
        Pairwise F1 in %, truncated to 2 decimals.
    used : bool
        Whether either annotator labelled any token with this SQ.
    """

    model_config = _FROZEN

    sq: str
    domain: str
    tp: int
    fp: int
    fn: int
    f1: float
    used: bool


class DomainAgreement(BaseModel):
    """Mean token-level F1 (%) over the SQs of one RoB 2 domain.

    Attributes
    ----------
    domain : str
        ``"D1"``..``"D5"``.
    name : str
        Short domain name (e.g. "Randomization process").
    f1 : float
        Mean of the domain's per-SQ F1 (unused SQs count 0), truncated to 2 decimals.
    """

    model_config = _FROZEN

    domain: str
    name: str
    f1: float


class JudgementAgreement(BaseModel):
    """Agreement on risk-of-bias levels (or SQ responses) over documents.

    Attributes
    ----------
    scope : str
        ``"D1"``..``"D5"``, ``"overall"``, ``"domains"`` (D1-D5 pooled) or
        ``"responses"`` (SQ responses pooled).
    n : int
        Items judged by both.
    observed : float or None
        Observed agreement P_o in [0, 1] (None when n = 0).
    pabak : float or None
        PABAK with k = 3 risk levels (k = 5 responses).
    kappa : float or None
        Cohen's kappa (None when n = 0 or undefined).
    """

    model_config = _FROZEN

    scope: str
    n: int
    observed: float | None
    pabak: float | None
    kappa: float | None


class IAAReport(BaseModel):
    """Everything ``clinex rob iaa`` computes.

    Attributes
    ----------
    annotator_a, annotator_b : str
        The two inputs (A is the reference: only its pages count).
    documents : int
        Documents both annotators have.
    tokens : int
        Tokens counted (on pages A annotated).
    sqs : tuple of SQAgreement
        The 22 SQs in RoB 2 order.
    domains : tuple of DomainAgreement
    overall_f1 : float
        Mean F1 (%) over the SQs either annotator used, truncated to 2 decimals.
    judgements : tuple of JudgementAgreement
    counting : str
        The counting rule (:data:`PAPER_COUNTING`).
    warnings : tuple of str
        Problems met while reading (realigned / clamped offsets, unmatched files).
    """

    model_config = _FROZEN

    annotator_a: str
    annotator_b: str
    documents: int
    tokens: int
    sqs: tuple[SQAgreement, ...]
    domains: tuple[DomainAgreement, ...]
    overall_f1: float
    judgements: tuple[JudgementAgreement, ...]
    counting: str = PAPER_COUNTING
    warnings: tuple[str, ...] = ()


# --------------------------------------------------------------------------- loading


def _domains() -> list[tuple[str, str, tuple[str, ...]]]:
    from clinex.rob.schema import DOMAINS

    return [(d.id, d.short_name, d.questions) for d in DOMAINS]


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


# --------------------------------------------------------------------------- counting


def _page_ranges(doc: Document) -> list[tuple[int, int]]:
    if doc.pages:
        return [(p.start, p.end) for p in doc.pages]
    return [(0, len(doc.text))]


def _token_labels(
    doc: Document, spans: list[Span], pages: list[tuple[int, int]]
) -> tuple[dict[int, set[str]], int]:
    """Token index -> SQs, tokens being whitespace words of the given page ranges."""
    starts: list[int] = []
    ends: list[int] = []
    for a, b in pages:
        for m in _TOKEN.finditer(doc.text, a, b):
            starts.append(m.start())
            ends.append(m.end())
    labels: dict[int, set[str]] = {}
    for s in spans:
        for fr in s.fragments:
            # tokens with start < fr.end and end > fr.start
            i = bisect.bisect_right(ends, fr.start)
            while fr.end > fr.start and i < len(starts) and starts[i] < fr.end:
                labels.setdefault(i, set()).add(str(s.label))
                i += 1
    return labels, len(starts)


def _trunc(x: Fraction) -> Fraction:
    return Fraction(math.floor(x * 100), 100)


def span_agreement(
    a: dict[str, AnnotatedDocument], b: dict[str, AnnotatedDocument]
) -> tuple[tuple[SQAgreement, ...], tuple[DomainAgreement, ...], float, int, int]:
    """Token-level pairwise F1 per SQ, per domain and overall (:data:`PAPER_COUNTING`).

    Parameters
    ----------
    a : dict of str to AnnotatedDocument
        Reference annotator; only pages holding one of its spans count.
    b : dict of str to AnnotatedDocument
        The other annotator (its documents are read on A's text).

    Returns
    -------
    (sqs, domains, overall_f1, n_documents, n_tokens)
        F1 values in %, truncated to 2 decimals.

    References
    ----------
    Dhrangadhariya et al., RoBuster (token-level IAA before/after placards).
    """
    tp: Counter[str] = Counter()
    fp: Counter[str] = Counter()
    fn: Counter[str] = Counter()
    n_docs = n_tokens = 0
    for key in sorted(a):
        da = a[key]
        db = b.get(key)
        if db is None or da.document is None:
            continue
        doc = da.document
        n_docs += 1
        annotated = [p for p in _page_ranges(doc) if any(s.overlaps(*p) for s in da.spans)]
        la, n = _token_labels(doc, da.spans, annotated)
        lb, _ = _token_labels(doc, db.spans, annotated)
        n_tokens += n
        for i in set(la) | set(lb):
            ga, gb = la.get(i, set()), lb.get(i, set())
            for q in ga & gb:
                tp[q] += 1
            for q in gb - ga:
                fp[q] += 1
            for q in ga - gb:
                fn[q] += 1
    sq_rows: list[SQAgreement] = []
    f1s: dict[str, Fraction] = {}
    used: set[str] = set()
    domains = _domains()
    for dom_id, _, qs in domains:
        for q in qs:
            labelled = tp[q] + fp[q] + fn[q] > 0  # an SQ neither annotator used is left out
            # exact (Fractions): 2PR / (P + R) == 2TP / (2TP + FP + FN), in %, truncated
            f1 = _trunc(100 * prf(Fraction(tp[q]), Fraction(fp[q]), Fraction(fn[q]))[2])
            f1s[q] = f1
            if labelled:
                used.add(q)
            sq_rows.append(SQAgreement(sq=q, domain=dom_id, tp=tp[q], fp=fp[q], fn=fn[q],
                                       f1=float(f1), used=labelled))
    dom_rows = tuple(
        DomainAgreement(domain=dom_id, name=name,
                        f1=float(_trunc(sum((f1s[q] for q in qs), Fraction(0)) / len(qs))))
        for dom_id, name, qs in domains
    )
    overall = _trunc(sum((f1s[q] for q in used), Fraction(0)) / len(used)) if used else Fraction(0)
    return tuple(sq_rows), dom_rows, float(overall), n_docs, n_tokens


def judgement_agreement(
    a: dict[str, AnnotatedDocument], b: dict[str, AnnotatedDocument]
) -> tuple[JudgementAgreement, ...]:
    """Observed agreement, PABAK and Cohen's kappa on risk levels and SQ responses.

    Items are (document, domain) pairs both annotators judged; ``"domains"`` pools
    D1-D5; ``"responses"`` pools (document, SQ) responses both sides gave (clinex
    answers, or tagtog span labels), with k = 5 (Y, PY, PN, N, NI).

    Returns
    -------
    tuple of JudgementAgreement
        D1..D5, overall, domains, and responses when available.

    References
    ----------
    Byrt et al. 1993 (PABAK); Cohen 1960 (kappa); Sterne et al. 2019 (RoB 2 levels).
    """
    from clinex.metrics.agreement import cohen_kappa, observed_agreement, pabak

    def row(scope: str, pairs: list[tuple[str, str]], k: int) -> JudgementAgreement:
        if not pairs:
            return JudgementAgreement(scope=scope, n=0, observed=None, pabak=None, kappa=None)
        xa = [p[0] for p in pairs]
        xb = [p[1] for p in pairs]
        kappa = cohen_kappa(xa, xb)
        return JudgementAgreement(
            scope=scope, n=len(pairs), observed=observed_agreement(xa, xb),
            pabak=pabak(xa, xb, k), kappa=None if math.isnan(kappa) else kappa,
        )

    keys = sorted(set(a) & set(b))
    rows = []
    pooled: list[tuple[str, str]] = []
    for scope in ("D1", "D2", "D3", "D4", "D5", "overall"):
        pairs = [
            (a[k].judgements[scope], b[k].judgements[scope])
            for k in keys
            if scope in a[k].judgements and scope in b[k].judgements
        ]
        if scope != "overall":
            pooled.extend(pairs)
        rows.append(row(scope, pairs, 3))
    rows.append(row("domains", pooled, 3))
    resp = [
        (a[k].responses[q], b[k].responses[q])
        for k in keys
        for q in sorted(a[k].responses)
        if q in b[k].responses
    ]
    if resp:
        rows.append(row("responses", resp, 5))
    return tuple(rows)


def compare(
    path_a: str | Path,
    path_b: str | Path,
    *,
    texts: str | Path | None = None,
    align: bool = False,
) -> IAAReport:
    """Agreement of annotator B with annotator A (the reference).

    Parameters
    ----------
    path_a, path_b : str or Path
        Annotator folders (see :func:`load_annotator`).
    texts : str or Path, optional
        Folder of document texts.
    align : bool
        Realign tagtog offsets that miss their text (not the paper's counting).

    Returns
    -------
    IAAReport

    Raises
    ------
    InputError
        Unreadable inputs.
    EvaluationError
        The two annotators share no document.
    """
    problems: list[str] = []
    a = load_annotator(path_a, texts=texts, align=align, warnings=problems)
    b = load_annotator(path_b, texts=texts, align=align, warnings=problems)
    shared = set(a) & set(b)
    if not shared:
        raise EvaluationError(
            f"the two annotators share no document ({len(a)} in A, {len(b)} in B)",
            path=str(path_b),
        )
    for k in sorted(shared):
        da, db = a[k].document, b[k].document
        if da is not None and db is not None and da.text != db.text:
            problems.append(
                f"document {k!r}: the two sides' texts differ; B's offsets are read on A's text"
            )
    for k in sorted(set(a) ^ set(b)):
        problems.append(f"document {k!r} is annotated by only one side, ignored")
    sqs, doms, overall, n_docs, n_tokens = span_agreement(a, b)
    if n_docs == 0:
        problems.append("no shared document has a text: span agreement not computed")
    return IAAReport(
        annotator_a=str(path_a), annotator_b=str(path_b), documents=n_docs, tokens=n_tokens,
        sqs=sqs, domains=doms, overall_f1=overall, judgements=judgement_agreement(a, b),
        warnings=tuple(problems),
    )
