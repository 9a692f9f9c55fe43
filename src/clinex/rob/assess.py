"""Assess one trial: evidence model answers → RoB 2 domain and overall judgements.

The pipeline is:

0. the report's structure is computed once
   (:func:`clinex.rob.evidence.segment.with_structure`): its sections and its evidence
   segments as ``Document.sentences``, which every evidence model reads;
1. an evidence model answers the 22 signalling questions (``model.predict(document)``
   returns ``{sq_id: SQAnswer}`` with evidence spans);
2. the answers are checked (known SQ ids, evidence offsets inside the text), page
   numbers and RoBuster judgements are filled in where the model left them out, and
   every evidence span is stamped with the section holding its start
   (``Evidence.section``), whichever model found it;
3. questions RoB 2 does not ask given the earlier answers (their condition is not
   met, e.g. 2.3 when 2.1 and 2.2 are N/PN) get the response ``NA`` (their evidence
   is kept for the reader); a question that is asked but was answered ``NA`` becomes
   ``NI``, as the algorithms read it;
4. the RoB 2 algorithms (:mod:`clinex.rob.algorithm`) turn the answers into a
   judgement per domain and an overall judgement.

References
----------
.. [1] Sterne JAC, Savović J, Page MJ, et al. RoB 2: a revised tool for assessing
   risk of bias in randomised trials. BMJ 2019;366:l4898.
.. [2] RoB 2 full guidance document, 22 August 2019 (conditions of the signalling
   questions; algorithms for suggested judgements).
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from clinex.errors import InputError, ModelError, OffsetError, SchemaError
from clinex.rob.algorithm import domain_risk, is_applicable, overall_judgement
from clinex.rob.schema import DOMAINS, SQ_IDS, judgement_for, sq
from clinex.rob.types import DomainResult, SQAnswer, TrialAssessment
from clinex.text import Document, check_span

__all__ = [
    "EvidenceModel",
    "assess",
    "assess_path",
    "load_trial",
    "default_model",
    "resolve_model",
    "structured",
    "model_name",
    "decided_sections",
    "decided_outside",
]


class EvidenceModel(Protocol):
    """What :func:`assess` needs from an evidence model."""

    def predict(self, document: Document) -> Mapping[str, SQAnswer]:
        """Answer the signalling questions for one document."""
        ...


class _NoEvidenceModel:
    """Answers NI to every question: used only while no evidence model is installed."""

    name = "clinex.rob.no_evidence.v1"

    def predict(self, document: Document) -> dict[str, SQAnswer]:
        return {q: SQAnswer(sq=q, response="NI", confidence=0.0) for q in SQ_IDS}


def default_model(name: str = "auto") -> Any:
    """Load an evidence model by name through :func:`clinex.rob.evidence.load_evidence_model`.

    Parameters
    ----------
    name : str, default "auto"
        Model name or folder understood by ``load_evidence_model``. ``"auto"`` is
        the best model shipped with clinex.

    Returns
    -------
    object
        An evidence model with ``predict(document) -> dict[str, SQAnswer]``.

    Raises
    ------
    ModelError
        If the model cannot be loaded, or no evidence-model module is installed
        and ``name`` is not ``"auto"``.
    """
    try:
        from clinex.rob.evidence import load_evidence_model
    except ImportError as exc:  # the evidence package is absent or incomplete
        missing = getattr(exc, "name", None) or ""
        if not (missing.startswith("clinex") or "load_evidence_model" in str(exc)):
            raise
        if name == "auto":
            return _NoEvidenceModel()
        raise ModelError(
            f"no evidence model {name!r}: clinex.rob.evidence is not installed", field="model"
        ) from None
    return load_evidence_model(name=name)


def model_name(model: Any) -> str:
    """A model's name and version for the provenance field of a result.

    Uses ``model.name`` (or ``model.model_name``) and ``model.version`` when the
    model has them, else the class name.
    """
    name = None
    for attr in ("name", "model_name", "name_"):
        value = getattr(model, attr, None)
        if isinstance(value, str) and value:
            name = value
            break
    if name is None:
        name = type(model).__name__
    version = getattr(model, "version", None)
    if version is not None and str(version) and str(version) not in name:
        name = f"{name} {version}"
    return name


def _check_answers(raw: Any, document: Document) -> dict[str, SQAnswer]:
    if not isinstance(raw, Mapping):
        raise ModelError(
            f"model.predict returned {type(raw).__name__}, expected a dict of SQ id to SQAnswer"
        )
    answers: dict[str, SQAnswer] = {}
    for key, ans in raw.items():
        if not isinstance(ans, SQAnswer):
            raise ModelError(
                f"model.predict gave {type(ans).__name__} for SQ {key}, expected SQAnswer",
                field=str(key),
            )
        q = sq(key)
        if sq(ans.sq).id != q.id:
            raise SchemaError(f"answer for SQ {ans.sq} filed under key {key}", field=str(key))
        evidence = []
        for ev in ans.evidence:
            try:
                check_span(ev.span, document.text)
            except OffsetError as exc:
                raise OffsetError(
                    f"document {document.id}: evidence for SQ {q.id}: {exc.message}", field=q.id
                ) from None
            if ev.page is None and document.pages:
                page = document.page_of(ev.span.start)
                if page is not None:
                    ev = ev.model_copy(update={"page": page})
            evidence.append(ev)
        update: dict[str, Any] = {"sq": q.id, "evidence": tuple(evidence)}
        if ans.judgement is None and ans.response not in ("NI", "NA"):
            update["judgement"] = judgement_for(q.id, ans.response)
        answers[q.id] = ans.model_copy(update=update)
    for q_id in SQ_IDS:
        answers.setdefault(q_id, SQAnswer(sq=q_id, response="NI", confidence=0.0))
    return answers


def _stamp_sections(answers: dict[str, SQAnswer], document: Document) -> dict[str, SQAnswer]:
    """Set each evidence's ``section``: the label of the section holding its span's start.

    The sections are the document's own (a reader's, e.g. JATS ``<sec>``) or, when it
    has none, :func:`clinex.rob.sections.detect_sections`; a span in the blank run
    that ends a section belongs to that section. A section the model already set is
    kept.
    """
    if all(ev.section is not None for a in answers.values() for ev in a.evidence):
        return answers
    from clinex.rob.evidence.segment import document_sections

    ordered = sorted(document_sections(document), key=lambda s: s.start)
    starts = [s.start for s in ordered]
    out = {}
    for q_id, ans in answers.items():
        evidence = []
        for ev in ans.evidence:
            if ev.section is None:
                i = bisect.bisect_right(starts, ev.span.start) - 1
                if i >= 0 and ordered[i].label is not None:
                    ev = ev.model_copy(update={"section": ordered[i].label})
            evidence.append(ev)
        out[q_id] = ans.model_copy(update={"evidence": tuple(evidence)})
    return out


def _mark_not_asked(answers: dict[str, SQAnswer]) -> dict[str, SQAnswer]:
    """Set NA on questions whose RoB 2 condition is not met, NI on asked ones answered NA.

    The algorithms read an asked question answered NA as NI; storing NI keeps the
    written answers and the judgements consistent.
    """
    out = {}
    for q_id, ans in answers.items():
        asked = is_applicable(q_id, answers)
        if not asked and ans.response != "NA":
            ans = ans.model_copy(update={"response": "NA", "judgement": None})
        elif asked and ans.response == "NA":
            ans = ans.model_copy(update={"response": "NI", "judgement": None})
        out[q_id] = ans
    return out


def resolve_model(model: EvidenceModel | str | Path | None = None) -> Any:
    """The evidence model ``model`` names: None (``auto``), a registry name, a saved
    model's path (resolved by :data:`clinex.rob.evidence.REGISTRY`) or a model object
    (returned as it is).

    Raises
    ------
    ModelError
        Unknown name and no such file, or a model that cannot be loaded.
    """
    if model is None:
        return default_model()
    if isinstance(model, (str, Path)):
        return default_model(str(model))
    return model


def structured(document: Document, model: Any = None) -> Document:
    """``document`` with its sections and the evidence segments ``model`` reads (its
    ``max_chars``, default 500), computed once (:func:`clinex.rob.evidence.segment.with_structure`)."""
    try:
        from clinex.rob.evidence.segment import with_structure
    except ImportError as exc:  # the evidence package is absent: models segment themselves
        if not (getattr(exc, "name", "") or "").startswith("clinex"):
            raise
        return document
    max_chars = getattr(model, "max_chars", 500)
    return with_structure(document, max_chars=max_chars if isinstance(max_chars, int) else 500)


def assess(
    document: Document,
    model: EvidenceModel | str | Path | None = None,
    *,
    multiple_some_concerns_high: int | None = None,
) -> TrialAssessment:
    """Assess one trial report with RoB 2.

    Parameters
    ----------
    document : Document
        The trial report (text, optional pages and sections).
    model : str, Path or object with ``predict(document) -> dict[str, SQAnswer]``, optional
        The evidence model: a name of :data:`clinex.rob.evidence.REGISTRY`, a saved
        model's path, or a model object (:func:`resolve_model`); by default ``"auto"``.
        Questions the model leaves out are answered NI with confidence 0.
    multiple_some_concerns_high : int or None, default None
        Passed to :func:`~clinex.rob.algorithm.overall_judgement`: overall High when at
        least this many domains are Some concerns (the guidance's optional judgement);
        the result's ``overall_rule`` then says so.

    Returns
    -------
    TrialAssessment
        Domains D1..D5 with all their answers (non-asked questions as ``NA``), the
        overall judgement (with ``overall_rule`` when ``multiple_some_concerns_high``
        raised it to High), the document's source path (``document.meta["source"]``)
        and the model's name.

    Raises
    ------
    ModelError
        If the model's output is not a mapping of SQ id to SQAnswer.
    SchemaError
        Unknown SQ ids in the model's output.
    OffsetError
        An evidence span that does not match the document text.

    References
    ----------
    RoB 2 guidance (22 Aug 2019): conditions of the signalling questions and the
    algorithms for suggested judgements; Sterne et al., BMJ 2019 (overall judgement).

    Examples
    --------
    >>> from clinex.text import Document
    >>> class Silent:  # a model that finds nothing: every question is NI
    ...     def predict(self, doc):
    ...         return {}
    >>> result = assess(Document(id="t1", text="A randomised trial."), Silent())
    >>> [d.risk for d in result.domains], result.overall
    (['Some concerns', 'High', 'High', 'High', 'Some concerns'], 'High')
    """
    model = resolve_model(model)
    document = structured(document, model)
    answers = _check_answers(model.predict(document), document)
    answers = _mark_not_asked(_stamp_sections(answers, document))
    domains = []
    for d in DOMAINS:
        risk = domain_risk(d.id, {q: answers[q] for q in d.questions})
        domains.append(
            DomainResult(
                domain=d.id,
                name=d.name,
                risk=risk,
                answers=tuple(answers[q] for q in d.questions),
            )
        )
    overall, overall_rule = overall_judgement(
        {d.domain: d.risk for d in domains}, multiple_some_concerns_high=multiple_some_concerns_high
    )
    source = document.meta.get("source") if isinstance(document.meta, dict) else None
    return TrialAssessment(
        document_id=document.id,
        source=str(source) if source is not None else None,
        domains=tuple(domains),
        overall=overall,
        model=model_name(model),
        overall_rule=overall_rule,
    )


def decided_sections(assessment: TrialAssessment) -> list[str | None]:
    """The section each answer was decided from: its first evidence span's section.

    Over the answers taken from the text: response not ``NA`` / ``NI`` and at least
    one evidence span (the best, first, is the one the answer rests on), in RoB 2
    order. A section is None when unknown (a ``*.rob.json`` written before
    ``Evidence.section`` existed).

    Parameters
    ----------
    assessment : TrialAssessment

    Returns
    -------
    list of str or None
        One section label per such answer.
    """
    return [
        a.evidence[0].section
        for d in assessment.domains
        for a in d.answers
        if a.response not in ("NA", "NI") and a.evidence
    ]


def decided_outside(
    assessment: TrialAssessment, sections: Sequence[str] = ("methods", "results")
) -> tuple[int, int]:
    r"""How many answers were decided from text outside the Methods and Results.

    RoB 2 assesses the result of this trial as its report describes what was done
    (Sterne et al., BMJ 2019), and RoBuster's annotation placards send the reader to
    the Methods and Results first (1.1 and 1.2 Methods first, 3.1 Results first ...).
    An answer taken from elsewhere (the abstract, the introduction's account of
    earlier trials, the discussion) may rest on a summary, a plan or another trial,
    and deserves a reviewer's second look.

    Parameters
    ----------
    assessment : TrialAssessment
    sections : sequence of str, default ("methods", "results")
        The section labels (:mod:`clinex.rob.sections`) that count as inside.

    Returns
    -------
    (int, int)
        ``(k, n)``: ``n`` answers taken from the text (response not ``NA`` / ``NI``,
        with evidence; :func:`decided_sections`) whose first evidence span's section
        is known, ``k`` of them with that section not in ``sections``. Answers whose
        section is unknown (a ``*.rob.json`` written before sections were recorded)
        count in neither.

    References
    ----------
    Sterne JAC, Savović J, Page MJ, et al. RoB 2: a revised tool for assessing risk
    of bias in randomised trials. BMJ 2019;366:l4898.
    Dhrangadhariya A, et al. RoBuster: a corpus annotated with risk of bias text spans
    in randomized controlled trials. Database 2023 (annotation placards).

    Examples
    --------
    >>> from clinex.text import Document, Span
    >>> from clinex.rob.types import Evidence, SQAnswer
    >>> text = "Abstract\nPatients were randomised.\n\nMethods\nA computer made the list."
    >>> def answer(q, phrase):
    ...     s = text.index(phrase)
    ...     span = Span.from_offsets(text, (s, s + len(phrase)), label=q)
    ...     ev = Evidence(span=span, score=1.0, source="example")
    ...     return SQAnswer(sq=q, response="Y", confidence=1.0, evidence=(ev,))
    >>> class Fixed:
    ...     def predict(self, doc):
    ...         return {"1.1": answer("1.1", "A computer made the list"),
    ...                 "1.2": answer("1.2", "Patients were randomised")}
    >>> result = assess(Document(id="t", text=text), Fixed())
    >>> decided_sections(result)
    ['methods', 'abstract']
    >>> decided_outside(result)
    (1, 2)
    """
    inside = {sections} if isinstance(sections, str) else set(sections)
    known = [s for s in decided_sections(assessment) if s is not None]
    return sum(s not in inside for s in known), len(known)


def load_trial(path: str | Path) -> Document:
    """Read a trial report with :func:`clinex.rob.formats.load.load_document`, with its
    RoB structure (:func:`structured`: sections, and the evidence segments as sentences).

    ``document.meta["source"]`` is set to the path when the reader did not set it.

    Raises
    ------
    InputError
        Missing file or unsupported format (and the readers' FormatError /
        EncodingError for broken files).
    """
    p = Path(path)
    try:
        from clinex.rob.formats.load import load_document
    except ImportError as exc:  # reader module not installed: plain text only
        if not (getattr(exc, "name", "") or "").startswith("clinex"):
            raise
        if p.suffix.lower() != ".txt":
            raise InputError(
                "no reader for this file type (clinex.rob.formats.load is missing; .txt only)", path=p
            ) from None
        from clinex.io.textfile import read_text

        doc = Document(id=p.stem, text=read_text(p))
    else:
        doc = load_document(p, sentences=False)  # the evidence segments are the sentences
    if "source" not in doc.meta:
        doc = doc.model_copy(update={"meta": {**doc.meta, "source": str(p)}})
    return structured(doc)


def assess_path(
    path: str | Path,
    model: EvidenceModel | str | Path | None = None,
    *,
    multiple_some_concerns_high: int | None = None,
) -> TrialAssessment:
    """Read a trial report (.pdf, .txt, .xml, .html) and :func:`assess` it.

    Parameters
    ----------
    path : str or Path
        The report; read with :func:`clinex.rob.formats.load.load_document`.
    model, multiple_some_concerns_high
        As for :func:`assess`.

    Returns
    -------
    TrialAssessment
        With ``source`` set to ``path``.

    Raises
    ------
    InputError
        Missing or unreadable file (FormatError / EncodingError for broken ones).
    """
    return assess(
        load_trial(path), model, multiple_some_concerns_high=multiple_some_concerns_high
    )
