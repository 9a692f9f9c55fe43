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

Both are read by :func:`~clinex.rob.annotator.load_annotator` (re-exported here).

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
import math
import re
from collections import Counter
from fractions import Fraction
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from clinex.errors import EvaluationError
from clinex.metrics.counts import prf
from clinex.rob.annotator import AnnotatedDocument, load_annotator
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
_FROZEN = ConfigDict(frozen=True, extra="forbid")


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
