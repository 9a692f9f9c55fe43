"""Agreement of automated RoB 2 answers with an expert: PO_response and PO_extraction.

RoBuster's evaluation of automated (LLM) answers reports, per signalling question
(SQ) and per domain, the observed agreement with the expert on

* the **response** (``PO_response``): the share of (document, SQ) pairs whose
  predicted response equals the expert's;
* the **extracted supporting evidence** (``PO_extraction``): the share of
  (document, SQ) pairs where the expert marked evidence and at least one predicted
  evidence span matches one of the expert's spans.

clinex computes both for any predictions given as
:class:`~clinex.rob.types.TrialAssessment` (``clinex rob assess`` output, or any
model run through :func:`clinex.rob.assess.assess`), and adds the observed
agreement of the domain and overall risk-of-bias judgements where the gold has them.

Gold sources
------------
* a tagtog annotator folder, read with :func:`clinex.rob.iaa.load_annotator`:
  the responses are those of the SQs the annotator labelled, from the span labels
  (``1_1_ProbablyYes_Good`` -> ``PY``, ``2_1_No_Information`` -> ``NI``); when one
  document carries several labels for one SQ the most frequent response wins and a
  tie goes to the response of the label that comes **first in text order** (lowest
  start offset); the evidence is the labelled spans' texts; judgements are the
  document-level ``metas`` (RoB1..RoB5, overall_RoB) where the annotator gave them;
* a folder of clinex answer keys ``*.key.yaml`` (``id``, ``responses`` for all 22
  SQs including ``NA``, ``evidence`` SQ -> verbatim strings, ``domains``,
  ``overall``); the report is the ``.txt`` beside each key.

Counting
--------
* ``PO_response`` per SQ is over the documents where the gold has a response for
  that SQ (tagtog: the SQs labelled; keys: all 22, ``NA`` included) and a
  prediction exists; a question the prediction lacks counts as a disagreement.
  ``exact`` compares the six codes Y/PY/PN/N/NI/NA; ``folded`` first maps Y and PY
  to Yes, N and PN to No (RoBuster's labels fold this way), NI and NA unchanged.
* ``PO_extraction`` per SQ is over the (document, SQ) pairs where the gold has at
  least one evidence span; a pair is correct when at least one predicted evidence
  text of that SQ (the texts of the answer's evidence spans, whatever the response,
  ``NA`` included) fuzzy-matches at least one gold text: ``rapidfuzz.fuzz.partial_ratio``
  of the whitespace-normalised, case-folded texts >= :data:`THRESHOLD`. A pair with
  gold evidence and no predicted evidence counts as wrong.
* A domain pools its SQs' pairs; the overall row pools all pairs. Judgement
  agreement: per domain over the documents where the gold has that domain's level;
  overall over the documents with a gold overall level.
* Where the answers come from: over the predictions counted, the answers taken from
  the text (response not NA/NI, with evidence) whose first evidence span lies outside
  the Methods and Results (:func:`clinex.rob.assess.decided_outside`), out of those
  whose section is known; answers of a ``*.rob.json`` written before
  ``Evidence.section`` existed are counted apart as unknown.

Every figure comes with its ``n``; an observed agreement over ``n = 0`` is None.

References
----------
Dhrangadhariya A, et al. RoBuster: a corpus annotated with risk of bias text spans
in randomized controlled trials. Database 2023 (evaluation of LLM answers:
PO_response and PO_extraction per SQ and per domain).
Sterne JAC, et al. RoB 2: a revised tool for assessing risk of bias in randomised
trials. BMJ 2019;366:l4898 (responses, domains, judgements).
RapidFuzz documentation, ``rapidfuzz.fuzz.partial_ratio``:
https://rapidfuzz.github.io/RapidFuzz/Usage/fuzz.html
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from clinex.errors import ClinexError, EvaluationError, InputError
from clinex.rob.answer_keys import (
    COUNTED_AS_WRITTEN,  # noqa: F401  (re-exported: the CLI reads it here)
    RESPONSES,
    GoldDocument,
    _read_each,
    check_answer_key,
    load_answer_keys,
    load_gold,
    read_answer_key,
)
from clinex.rob.types import TrialAssessment

__all__ = [
    "THRESHOLD",
    "RESPONSES",
    "GoldDocument",
    "SQAnswerAgreement",
    "DomainAnswerAgreement",
    "OverallAnswerAgreement",
    "AnswerAgreementReport",
    "fold_response",
    "normalise_evidence",
    "evidence_score",
    "evidence_matches",
    "read_answer_key",
    "load_answer_keys",
    "check_answer_key",
    "load_gold",
    "load_predictions",
    "assess_gold",
    "answer_agreement",
]

#: Minimum ``rapidfuzz.fuzz.partial_ratio`` (0-100) for a predicted evidence text to
#: match a gold one. ``partial_ratio`` scores the optimal alignment of the shorter
#: string inside the longer (RapidFuzz docs: "Searches for the optimal alignment of
#: the shorter string in the longer string and returns the fuzz.ratio for this
#: alignment"), so a short expert span inside a longer predicted sentence scores
#: 100; 80 tolerates the few characters by which PDF hyphenation, line breaks and
#: ligatures make the two texts differ, while unrelated sentences of the same
#: report score well below it.
THRESHOLD = 80.0

#: The end of the warning for a prediction without an answer key: listed, not a skipped
#: gold document (``clinex rob agreement`` still exits 0 for it).
IGNORED_PREDICTION = "has no gold; ignored"

_FOLD = {"Y": "Yes", "PY": "Yes", "N": "No", "PN": "No", "NI": "NI", "NA": "NA"}
_WS = re.compile(r"\s+")
_FROZEN = ConfigDict(frozen=True, extra="forbid")


class SQAnswerAgreement(BaseModel):
    """Observed agreement on one signalling question.

    Attributes
    ----------
    sq : str
    domain : str
    n_response : int
        Documents where the gold has a response for this SQ and a prediction exists.
    po_response_exact : float or None
        Share of them with the same code (Y/PY/PN/N/NI/NA); None when n = 0.
    po_response_folded : float or None
        The same after folding PY into Y and PN into N.
    n_extraction : int
        Documents where the gold has evidence for this SQ (and a prediction exists).
    po_extraction : float or None
        Share of them where a predicted evidence text matches a gold one.
    """

    model_config = _FROZEN

    sq: str
    domain: str
    n_response: int
    po_response_exact: float | None
    po_response_folded: float | None
    n_extraction: int
    po_extraction: float | None


class DomainAnswerAgreement(BaseModel):
    """Observed agreement pooled over one domain's (document, SQ) pairs.

    Attributes
    ----------
    domain : str
        ``"D1"``..``"D5"``.
    name : str
        Short domain name.
    n_response, po_response_exact, po_response_folded, n_extraction, po_extraction
        As in :class:`SQAnswerAgreement`, pooled over the domain's SQs.
    n_judgement : int
        Documents where the gold gives this domain's risk level.
    po_judgement : float or None
        Share of them with the same predicted level.
    """

    model_config = _FROZEN

    domain: str
    name: str
    n_response: int
    po_response_exact: float | None
    po_response_folded: float | None
    n_extraction: int
    po_extraction: float | None
    n_judgement: int
    po_judgement: float | None


class OverallAnswerAgreement(BaseModel):
    """Observed agreement pooled over all (document, SQ) pairs.

    Attributes
    ----------
    n_response, po_response_exact, po_response_folded, n_extraction, po_extraction
        As in :class:`SQAnswerAgreement`, pooled over all SQs.
    n_judgement : int
        Documents where the gold gives an overall risk level.
    po_judgement : float or None
        Share of them with the same predicted overall level.
    """

    model_config = _FROZEN

    n_response: int
    po_response_exact: float | None
    po_response_folded: float | None
    n_extraction: int
    po_extraction: float | None
    n_judgement: int
    po_judgement: float | None


class AnswerAgreementReport(BaseModel):
    """Everything ``clinex rob agreement`` computes.

    Attributes
    ----------
    gold : str
        The gold input.
    predictions : str
        The predictions' folder, or ``"model:<name>"``.
    documents : int
        Gold documents that have a prediction (the ones counted).
    document_ids : tuple of str
        Their ids, sorted.
    threshold : float
        The evidence matching threshold (``partial_ratio``, 0-100).
    sqs : tuple of SQAnswerAgreement
        The 22 SQs in RoB 2 order.
    domains : tuple of DomainAnswerAgreement
        D1..D5.
    overall : OverallAnswerAgreement
    decided_outside : int
        Answers of the predictions counted that were taken from the text (response
        not NA/NI, with evidence) and whose first evidence span's section is known
        and is neither ``methods`` nor ``results``
        (:func:`clinex.rob.assess.decided_outside`).
    decided_total : int
        Such answers whose section is known.
    share_decided_outside : float or None
        ``decided_outside / decided_total``; None when ``decided_total`` is 0.
    decided_unknown : int
        Such answers whose section is unknown (``*.rob.json`` written before
        ``Evidence.section`` existed); in neither count above.
    warnings : tuple of str
        Problems met (bad key files skipped, documents without a prediction ...).
    """

    model_config = _FROZEN

    gold: str
    predictions: str
    documents: int
    document_ids: tuple[str, ...]
    threshold: float
    sqs: tuple[SQAnswerAgreement, ...]
    domains: tuple[DomainAnswerAgreement, ...]
    overall: OverallAnswerAgreement
    decided_outside: int = 0
    decided_total: int = 0
    share_decided_outside: float | None = None
    decided_unknown: int = 0
    warnings: tuple[str, ...] = ()


# --------------------------------------------------------------------------- matching


def fold_response(code: str | None) -> str | None:
    """RoBuster's folding of a RoB 2 code: Y, PY -> ``"Yes"``; N, PN -> ``"No"``.

    ``NI`` and ``NA`` are returned unchanged, None (no answer) stays None.

    Examples
    --------
    >>> fold_response("PY"), fold_response("PN"), fold_response("NI")
    ('Yes', 'No', 'NI')
    """
    return None if code is None else _FOLD.get(code, code)


def normalise_evidence(text: str) -> str:
    """Whitespace runs to one space, stripped, case-folded.

    Examples
    --------
    >>> normalise_evidence("  Computer-generated\\n random  LIST ")
    'computer-generated random list'
    """
    return _WS.sub(" ", text).strip().casefold()


def evidence_score(gold: str, predicted: str) -> float:
    """``rapidfuzz.fuzz.partial_ratio`` (0-100) of the two normalised texts.

    Parameters
    ----------
    gold, predicted : str
        Raw texts; both go through :func:`normalise_evidence`.

    Returns
    -------
    float
        0 when either is empty after normalisation.

    Examples
    --------
    >>> evidence_score("sealed opaque envelopes", "Allocation used sealed opaque envelopes.")
    100.0
    """
    from rapidfuzz import fuzz

    a, b = normalise_evidence(gold), normalise_evidence(predicted)
    if not a or not b:
        return 0.0
    return float(fuzz.partial_ratio(a, b))


def evidence_matches(gold: list[str], predicted: list[str], *, threshold: float = THRESHOLD) -> bool:
    """Whether any predicted text matches any gold text (:func:`evidence_score` >= threshold).

    Parameters
    ----------
    gold : list of str
        The expert's evidence texts for one (document, SQ).
    predicted : list of str
        The prediction's evidence texts for the same pair (may be empty: no match).
    threshold : float, default THRESHOLD
        In [0, 100].

    Returns
    -------
    bool
    """
    return any(evidence_score(g, p) >= threshold for g in gold for p in predicted)


# --------------------------------------------------------------------------- predictions


def load_predictions(folder: str | Path, *, warnings: list[str] | None = None) -> dict[str, TrialAssessment]:
    """Read a folder of ``*.rob.json`` assessments (``clinex rob assess`` output).

    Parameters
    ----------
    folder : str or Path
        A folder (its ``*.rob.json`` files, name order) or one ``.rob.json`` file.
    warnings : list of str, optional
        Receives one line per unreadable file or repeated document id (skipped).

    Returns
    -------
    dict of str to TrialAssessment
        By ``document_id``.

    Raises
    ------
    InputError
        No such path, or no ``*.rob.json`` in the folder.
    """
    from clinex.rob.report import read_json

    src = Path(folder)
    problems = warnings if warnings is not None else []
    if not src.exists():
        raise InputError("no such file or folder", path=src)
    files = [src] if src.is_file() else sorted(src.glob("*.rob.json"))
    if not files:
        raise InputError("no *.rob.json assessments (clinex rob assess output)", path=src)
    return _read_each(files, read_json, lambda ta: ta.document_id, "document", "file", problems)


def assess_gold(
    gold: Mapping[str, GoldDocument], model: Any, *, warnings: list[str] | None = None
) -> dict[str, TrialAssessment]:
    """Run an evidence model over the gold documents' reports, as ``clinex rob assess`` does.

    Parameters
    ----------
    gold : mapping of str to GoldDocument
        Each ``source`` is read with :func:`clinex.rob.assess.load_trial`.
    model : object with ``predict(document)``
        E.g. :func:`clinex.rob.assess.default_model` ``("cues")``.
    warnings : list of str, optional
        Receives one line per document without a report or that could not be read.

    Returns
    -------
    dict of str to TrialAssessment
        By gold document id.
    """
    from clinex.rob.assess import assess, load_trial

    problems = warnings if warnings is not None else []
    out: dict[str, TrialAssessment] = {}
    for key, g in sorted(gold.items()):
        if g.source is None:
            problems.append(f"{_not_assessed(key)}no report text beside its gold (.txt) or in --texts; not assessed")
            continue
        try:
            out[key] = assess(load_trial(g.source), model)
        except ClinexError as exc:
            problems.append(f"{_not_assessed(key)}{exc}; not assessed")
    return out


def _not_assessed(key: str) -> str:
    """The start of :func:`assess_gold`'s line for a gold document it could not assess;
    :func:`answer_agreement` adds no second line for such a document."""
    return f"document {key!r}: "


# --------------------------------------------------------------------------- agreement


def _po(agree: int, n: int) -> float | None:
    """Observed agreement ``agree / n``; None over ``n = 0``."""
    return agree / n if n else None


def _lookup(predictions: Mapping[str, TrialAssessment]) -> dict[str, TrialAssessment]:
    """Predictions by key, ``document_id`` and tagtog ``doc_key`` (the first one wins)."""
    from clinex.rob.formats.tagtog import doc_key

    index: dict[str, TrialAssessment] = {}
    for k, ta in predictions.items():
        for name in (k, ta.document_id, doc_key(ta.document_id)):
            index.setdefault(name, ta)
    return index


def _match(gold: Mapping[str, GoldDocument], predictions: Mapping[str, TrialAssessment],
           problems: list[str]) -> dict[str, TrialAssessment]:
    """The prediction of each gold document (gold id order); a line in ``problems`` per
    gold document without one (unless already reported as not assessed) and per
    prediction without gold."""
    index = _lookup(predictions)
    matched: dict[str, TrialAssessment] = {}
    for key in sorted(gold):
        ta = index.get(key)
        if ta is None:
            if not any(w.startswith(_not_assessed(key)) for w in problems):  # reported once
                problems.append(f"document {key!r} has no prediction; not counted")
        else:
            matched[key] = ta
    used = {id(ta) for ta in matched.values()}
    for _, ta in sorted(predictions.items(), key=lambda kv: kv[0]):
        if id(ta) not in used:
            problems.append(f"prediction {ta.document_id!r} {IGNORED_PREDICTION}")
    return matched


@dataclass
class _Tally:
    """Counts behind the agreement figures: per SQ the pairs and agreements on the
    response (exact, folded) and on the evidence, per judgement scope the documents and
    agreements, and where the answers were decided."""

    n_r: Counter[str] = field(default_factory=Counter)
    ok_exact: Counter[str] = field(default_factory=Counter)
    ok_fold: Counter[str] = field(default_factory=Counter)
    n_e: Counter[str] = field(default_factory=Counter)
    ok_e: Counter[str] = field(default_factory=Counter)
    n_j: Counter[str] = field(default_factory=Counter)
    ok_j: Counter[str] = field(default_factory=Counter)
    outside: int = 0
    decided: int = 0
    unknown: int = 0

    def add(self, g: GoldDocument, ta: TrialAssessment, threshold: float) -> None:
        """Count one document's responses, evidence and judgements against its gold."""
        answers = {a.sq: a for d in ta.domains for a in d.answers}
        for q, resp in g.responses.items():
            pred = answers[q].response if q in answers else None
            self.n_r[q] += 1
            self.ok_exact[q] += pred == resp
            self.ok_fold[q] += fold_response(pred) == fold_response(resp)
        for q, texts in g.evidence.items():
            if not texts:
                continue
            pred_texts = [ev.span.text for ev in answers[q].evidence] if q in answers else []
            self.n_e[q] += 1
            self.ok_e[q] += evidence_matches(texts, pred_texts, threshold=threshold)
        risks: dict[str, str] = {d.domain: d.risk for d in ta.domains}
        risks["overall"] = ta.overall
        for scope, level in g.judgements.items():
            if scope in risks:
                self.n_j[scope] += 1
                self.ok_j[scope] += risks[scope] == level

    def pooled(self, qs: Any) -> dict[str, Any]:
        """The response and extraction figures pooled over the SQs ``qs``."""
        nr = sum(self.n_r[q] for q in qs)
        ne = sum(self.n_e[q] for q in qs)
        return dict(
            n_response=nr,
            po_response_exact=_po(sum(self.ok_exact[q] for q in qs), nr),
            po_response_folded=_po(sum(self.ok_fold[q] for q in qs), nr),
            n_extraction=ne,
            po_extraction=_po(sum(self.ok_e[q] for q in qs), ne),
        )

    def judgement(self, scope: str) -> dict[str, Any]:
        """The judgement figures of ``scope`` (``"D1"``..``"D5"``, ``"overall"``)."""
        return dict(n_judgement=self.n_j[scope], po_judgement=_po(self.ok_j[scope], self.n_j[scope]))


def _tally(gold: Mapping[str, GoldDocument], matched: dict[str, TrialAssessment], threshold: float) -> _Tally:
    """The counts over the matched documents (:class:`_Tally`)."""
    from clinex.rob.assess import decided_outside, decided_sections

    t = _Tally()
    for key, ta in matched.items():
        k, n = decided_outside(ta)
        t.outside, t.decided = t.outside + k, t.decided + n
        t.unknown += len(decided_sections(ta)) - n
        t.add(gold[key], ta, threshold)
    return t


def answer_agreement(
    gold: Mapping[str, GoldDocument],
    predictions: Mapping[str, TrialAssessment],
    *,
    threshold: float = THRESHOLD,
    gold_name: str = "",
    predictions_name: str = "",
    warnings: list[str] | None = None,
) -> AnswerAgreementReport:
    """PO_response (exact and folded) and PO_extraction per SQ, per domain and overall.

    Parameters
    ----------
    gold : mapping of str to GoldDocument
        The expert's answers by document id (:func:`load_gold`).
    predictions : mapping of str to TrialAssessment
        The automated answers, matched to gold documents by key, ``document_id`` or
        its tagtog :func:`~clinex.rob.formats.tagtog.doc_key`. Any model kind: ``clinex rob
        assess`` JSON (:func:`load_predictions`) or :func:`assess_gold`.
    threshold : float, default THRESHOLD
        Evidence matching threshold on ``partial_ratio``, in [0, 100].
    gold_name, predictions_name : str
        Recorded in the report.
    warnings : list of str, optional
        Earlier reading problems; the report adds one line per gold document without
        a prediction (not counted; none for a document :func:`assess_gold` already
        reported as not assessed) and per prediction without gold (ignored).

    Returns
    -------
    AnswerAgreementReport

    Raises
    ------
    InputError
        ``threshold`` outside [0, 100].
    EvaluationError
        No gold document has a prediction.

    References
    ----------
    Dhrangadhariya A, et al. RoBuster. Database 2023 (PO_response, PO_extraction).
    """
    from clinex.rob.schema import DOMAINS

    if not 0.0 <= threshold <= 100.0:
        raise InputError(f"threshold must be in [0, 100], got {threshold}", field="threshold")
    problems = list(warnings or [])
    matched = _match(gold, predictions, problems)
    if not matched:
        raise EvaluationError(f"no gold document has a prediction ({len(gold)} gold, "
                              f"{len(predictions)} predicted)", path=predictions_name or None)
    t = _tally(gold, matched, threshold)
    sqs = tuple(SQAnswerAgreement(sq=q, domain=d.id, **t.pooled([q]))
                for d in DOMAINS for q in d.questions)
    domains = tuple(
        DomainAnswerAgreement(domain=d.id, name=d.short_name, **t.pooled(d.questions), **t.judgement(d.id))
        for d in DOMAINS
    )
    overall = OverallAnswerAgreement(
        **t.pooled([q for d in DOMAINS for q in d.questions]), **t.judgement("overall"),
    )
    return AnswerAgreementReport(
        gold=gold_name, predictions=predictions_name, documents=len(matched),
        document_ids=tuple(sorted(matched)), threshold=threshold, sqs=sqs, domains=domains,
        overall=overall, decided_outside=t.outside, decided_total=t.decided,
        share_decided_outside=_po(t.outside, t.decided), decided_unknown=t.unknown,
        warnings=tuple(problems),
    )
