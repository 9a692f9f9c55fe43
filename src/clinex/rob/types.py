"""Result types of the risk-of-bias task (RoB 2 signalling questions, RoBuster labels).

Responses follow RoB 2 (Sterne et al., BMJ 2019): Y (yes), PY (probably yes),
PN (probably no), N (no), NI (no information); ``NA`` marks a question that does
not apply (RoB 2 skips some questions depending on earlier answers). RoBuster folds
PY into Y and PN into N for span labels (``1.1 Yes Good``) and adds a judgement of
the reported practice: Good or Bad.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from clinex.text import Span

__all__ = [
    "Response",
    "Judgement",
    "RiskLevel",
    "Evidence",
    "SQAnswer",
    "DomainResult",
    "TrialAssessment",
]

Response = Literal["Y", "PY", "PN", "N", "NI", "NA"]
Judgement = Literal["Good", "Bad"]
RiskLevel = Literal["Low", "Some concerns", "High"]

_FROZEN = ConfigDict(frozen=True, extra="forbid")


class Evidence(BaseModel):
    """A text span offered as the answer to one signalling question.

    Attributes
    ----------
    span : Span
        Offsets into ``Document.text`` (characters, half-open); ``span.label`` is the SQ id.
    page : int or None
        1-based PDF page holding the span's start, when the input had pages.
    score : float
        Model or rule confidence in [0, 1].
    source : str
        The rule id or model name and version that found it.
    section : str or None
        Label of the report section holding the span's start, as
        :mod:`clinex.rob.sections` names them (``"methods"``, ``"results"``,
        ``"abstract"``, ``"introduction"``, ``"discussion"``, ``"conclusion"``,
        ``"registration"``, ``"front"`` for text before the first heading, ...; JATS
        input: its own ``<sec>`` labels, ``"other"`` for an unmatched one); stamped
        by :func:`clinex.rob.assess.assess`. None when unknown: files written before
        sections were recorded, or a span starting before the first section.
    """

    model_config = _FROZEN

    span: Span
    page: int | None = None
    score: float = Field(ge=0.0, le=1.0)
    source: str
    section: str | None = None


class SQAnswer(BaseModel):
    """The answer to one signalling question.

    Attributes
    ----------
    sq : str
        Signalling question id, ``"1.1"`` ... ``"5.3"``.
    response : Response
    judgement : Judgement or None
        RoBuster judgement of the reported practice (None when NI / NA).
    confidence : float
        In [0, 1].
    evidence : tuple of Evidence
        Best first; empty when the response is NI for lack of text.
    """

    model_config = _FROZEN

    sq: str
    response: Response
    judgement: Judgement | None = None
    confidence: float = Field(ge=0.0, le=1.0)
    evidence: tuple[Evidence, ...] = ()


class DomainResult(BaseModel):
    """One RoB 2 domain: its answers and the algorithm's risk level.

    Attributes
    ----------
    domain : str
        ``"D1"`` ... ``"D5"``.
    name : str
        Official domain name (e.g. "Bias arising from the randomization process").
    risk : RiskLevel
    answers : tuple of SQAnswer
    """

    model_config = _FROZEN

    domain: str
    name: str
    risk: RiskLevel
    answers: tuple[SQAnswer, ...] = ()


class TrialAssessment(BaseModel):
    """A whole trial's assessment.

    Attributes
    ----------
    document_id : str
    source : str or None
        Input file path.
    domains : tuple of DomainResult
        D1..D5 in order.
    overall : RiskLevel
        RoB 2 overall judgement.
    model : str
        Evidence model name and version.
    overall_rule : str or None
        Set when a rule beyond the plain RoB 2 one decided ``overall``: the note of
        :func:`clinex.rob.algorithm.overall_judgement` (``"raised to High: 3 domains
        with Some concerns ..."``); None when the plain rule decided.
    """

    model_config = ConfigDict(extra="forbid")

    document_id: str
    source: str | None = None
    domains: tuple[DomainResult, ...] = ()
    overall: RiskLevel
    model: str
    overall_rule: str | None = None
