"""Leave-one-document-out (LODO) evaluation of RoB evidence models.

For each document of a tagtog export annotated by the gold annotator, a model is
trained on all *other* documents (the sentence model; the cue model needs no
training), predicts the held-out document, and the predictions are scored against
the gold annotator exactly as ``clinex rob iaa`` scores a second annotator
(:func:`clinex.rob.iaa.span_agreement`, :func:`clinex.rob.iaa.judgement_agreement`):
token-level pairwise F1 per SQ and domain on the pages the gold annotator
annotated, and observed agreement / PABAK / kappa of the domain judgements that
the RoB 2 algorithm derives from the predicted answers.

References
----------
Dhrangadhariya A et al. RoBuster (token-level pairwise F1; judgement agreement).
Sterne JAC et al. RoB 2. BMJ 2019;366:l4898 (domain algorithms).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from clinex.errors import EvaluationError, InputError
from clinex.rob.iaa import DomainAgreement, JudgementAgreement, SQAgreement

__all__ = ["LodoDocument", "LodoResult", "predictions_as_annotations", "leave_one_document_out"]

_FROZEN = ConfigDict(frozen=True, extra="forbid")


class LodoDocument(BaseModel):
    """One held-out document.

    Attributes
    ----------
    doc_id : str
    pages : int
    seconds : float
        Wall-clock seconds to predict it (training excluded).
    risks : dict of str to str
        Predicted D1..D5 and overall risk levels.
    gold : dict of str to str
        The gold annotator's levels (those given).
    """

    model_config = _FROZEN

    doc_id: str
    pages: int
    seconds: float
    risks: dict[str, str]
    gold: dict[str, str]


class LodoResult(BaseModel):
    """Scores of one model under leave-one-document-out.

    Attributes
    ----------
    model : str
        ``"cues"`` or ``"sentence"``.
    model_name : str
        Versioned name of the (last) model.
    gold : str
        Gold annotator.
    train_annotators : tuple of str
        Annotators whose spans trained the sentence model (empty for cues).
    documents, tokens : int
        As in :class:`clinex.rob.iaa.IAAReport`.
    sqs, domains, overall_f1, judgements
        As in :class:`clinex.rob.iaa.IAAReport` (F1 in %, truncated to 2 decimals).
    seconds_per_trial : float
        Mean prediction seconds per document.
    seconds_per_page : float
    train_seconds : float
        Mean training seconds per fold.
    per_document : tuple of LodoDocument
    warnings : tuple of str
        Problems met reading the corpus (tagtog offsets realigned or clamped).
    """

    model_config = _FROZEN

    model: str
    model_name: str
    gold: str
    train_annotators: tuple[str, ...]
    documents: int
    tokens: int
    sqs: tuple[SQAgreement, ...]
    domains: tuple[DomainAgreement, ...]
    overall_f1: float
    judgements: tuple[JudgementAgreement, ...]
    seconds_per_trial: float
    seconds_per_page: float
    train_seconds: float
    per_document: tuple[LodoDocument, ...]
    warnings: tuple[str, ...] = ()


def predictions_as_annotations(doc_id: str, document: Any, answers: dict[str, Any]) -> Any:
    """Wrap a model's answers as an :class:`clinex.rob.iaa.AnnotatedDocument`.

    Parameters
    ----------
    doc_id : str
    document : Document
    answers : dict of str to SQAnswer

    Returns
    -------
    AnnotatedDocument
        Evidence spans labelled with their SQ, D1..D5 and overall risk levels from
        :func:`clinex.rob.algorithm.all_domain_risks` / ``overall_risk``, and the
        responses of the questions asked (``NA`` left out, as
        :func:`clinex.rob.iaa.load_annotator` reads a clinex assessment JSON).
    """
    from clinex.rob.algorithm import all_domain_risks, overall_risk
    from clinex.rob.iaa import AnnotatedDocument

    spans = [ev.span.model_copy(update={"label": sq}) for sq, a in answers.items()
             for ev in a.evidence]
    risks: dict[str, str] = dict(all_domain_risks(answers))
    risks["overall"] = overall_risk(risks)
    # as clinex rob iaa reads an assessment's JSON: questions not asked (NA) carry no response
    responses = {sq: a.response for sq, a in answers.items() if a.response != "NA"}
    return AnnotatedDocument(doc_id, document, spans, risks, responses)


def leave_one_document_out(
    root: str | Path,
    *,
    model: str = "sentence",
    gold: str = "roger-annotation",
    train_annotators: Sequence[str] = ("roger-annotation",),
    params: dict[str, Any] | None = None,
    documents: Sequence[str] | None = None,
    progress: Callable[[str], None] | None = None,
) -> LodoResult:
    """Leave-one-document-out evaluation against one gold annotator.

    Parameters
    ----------
    root : str or Path
        Tagtog export folder (``plain.html/``, ``ann.json/``).
    model : str
        A name of :data:`clinex.rob.evidence.REGISTRY` (or ``auto``); ``sentence`` is retrained
        per fold on the other documents, every other kind is loaded once per fold.
    gold : str
        Gold annotator (member name).
    train_annotators : sequence of str
        Whose spans train the sentence model (pooled; ``("all",)`` = every member).
        The held-out document is excluded for every annotator.
    params : dict, optional
        Model constructor parameters.
    documents : sequence of str, optional
        Evaluate only these document ids (the folds); training still uses all
        other documents.
    progress : callable, optional
        Called with one status line per fold.

    Returns
    -------
    LodoResult

    Raises
    ------
    InputError
        Not an export, unknown annotator or model, a ``documents`` id that is not
        a gold document (the message lists the valid ids).
    EvaluationError
        No document to evaluate.
    """
    from clinex.rob.assess import assess
    from clinex.rob.evidence import AUTO, AUTO_KIND, REGISTRY, unknown_model_message
    from clinex.rob.iaa import judgement_agreement, load_annotator, span_agreement
    from clinex.rob.train import load_training_corpus, train_sentence_model

    model = AUTO_KIND if model == AUTO else model
    if model not in REGISTRY:  # the one list of evidence model names
        raise InputError(unknown_model_message(model, files=False), field="model")
    root = Path(root)
    gold_dir = root / "ann.json" / "members" / gold
    if not gold_dir.is_dir():
        from clinex.rob.train import list_annotators

        raise InputError(f"unknown gold annotator {gold!r}; known: "
                         f"{', '.join(list_annotators(root))}", path=root)
    problems: list[str] = []
    gold_docs = load_annotator(gold_dir, texts=root / "plain.html" / "pool", align=False,
                               warnings=problems)
    keys = sorted(k for k, v in gold_docs.items() if v.document is not None)
    if documents is not None:
        unknown = sorted(set(documents) - set(keys))
        if unknown:
            raise InputError(f"unknown document id(s) {', '.join(unknown)}; valid ids: "
                             f"{', '.join(keys) or '(none)'}", field="documents")
        wanted = set(documents)
        keys = [k for k in keys if k in wanted]
    if not keys:
        raise EvaluationError("no gold document to evaluate", path=gold_dir)
    corpus = None
    if model == "sentence":
        corpus = load_training_corpus(root, train_annotators, warnings=problems)
    preds: dict[str, Any] = {}
    rows: list[LodoDocument] = []
    train_secs: list[float] = []
    name = ""
    for n, key in enumerate(keys, start=1):
        t0 = time.perf_counter()
        if model == "sentence":  # the one kind trained per fold, on the other documents
            m = train_sentence_model(root, exclude=[key], params=params, corpus=corpus)
        elif params and model == "cues":
            from clinex.rob.evidence.cues import CueEvidenceModel

            m = CueEvidenceModel(**params)
        elif params and model == "rules":
            from clinex.rob.evidence.reasoning import RulesEvidenceModel

            m = RulesEvidenceModel(**params)
        else:  # a fixed model: the registry's loader, as every other surface loads it
            m = REGISTRY[model].loader()
        train_secs.append(time.perf_counter() - t0)
        name = m.name
        doc = gold_docs[key].document
        t1 = time.perf_counter()
        # through assess(), exactly as `clinex rob assess` writes the answers that
        # `clinex rob iaa` scores: questions RoB 2 does not ask become NA
        result = assess(doc, m)
        answers = {a.sq: a for d in result.domains for a in d.answers}
        secs = time.perf_counter() - t1
        preds[key] = predictions_as_annotations(key, doc, answers)
        rows.append(LodoDocument(doc_id=key, pages=len(doc.pages), seconds=secs,
                                 risks=preds[key].judgements, gold=gold_docs[key].judgements))
        if progress is not None:
            progress(f"[{n}/{len(keys)}] {key}: {secs:.2f} s")
    scored = {k: gold_docs[k] for k in keys}
    sqs, doms, overall, n_docs, n_tokens = span_agreement(scored, preds)
    pages = sum(r.pages for r in rows) or 1
    return LodoResult(
        model=model, model_name=name, gold=gold,
        train_annotators=tuple(train_annotators) if model == "sentence" else (),
        documents=n_docs, tokens=n_tokens, sqs=sqs, domains=doms, overall_f1=overall,
        judgements=judgement_agreement(scored, preds),
        seconds_per_trial=sum(r.seconds for r in rows) / len(rows),
        seconds_per_page=sum(r.seconds for r in rows) / pages,
        train_seconds=sum(train_secs) / len(train_secs),
        per_document=tuple(rows),
        warnings=tuple(problems),
    )
