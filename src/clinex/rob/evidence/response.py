"""From evidence to an answer: response option, judgement and confidence per SQ.

Each piece of evidence carries a *vote*: the response option it implies (a cue's
response, or a classifier's prediction) and a score. :func:`answer_from_votes`
turns the votes for one signalling question into an :class:`~clinex.rob.types.SQAnswer`:
the response with the largest summed score wins, confidence is that share of the
total, and the judgement (RoBuster's Good/Bad) follows from the response and the
question's favourable direction (:func:`clinex.rob.schema.judgement_for`). Without evidence the answer is
"No information" (NI), as RoB 2 prescribes when a report is silent.

References
----------
Sterne JAC et al. RoB 2: a revised tool for assessing risk of bias in randomised
trials. BMJ 2019;366:l4898 (response options Y/PY/PN/N/NI).
Higgins JPT et al. Revised Cochrane risk-of-bias tool for randomized trials
(RoB 2), full guidance document, 22 August 2019 (direction of each question).
Dhrangadhariya A et al. RoBuster. Database 2023 (Good/Bad judgement labels).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence

from clinex.errors import SchemaError
from clinex.rob.schema import SQ_IDS as _SCHEMA_SQ_IDS
from clinex.rob.schema import judgement_for
from clinex.rob.types import Evidence, SQAnswer

__all__ = [
    "SQ_IDS",
    "RESPONSES",
    "judgement_of",
    "response_from_label",
    "answer_from_votes",
]

#: The 22 RoB 2 signalling questions, in order (from :mod:`clinex.rob.schema`).
SQ_IDS: tuple[str, ...] = _SCHEMA_SQ_IDS

#: Response options an evidence vote may carry (NA is decided by the RoB 2 algorithm,
#: not by evidence).
RESPONSES: tuple[str, ...] = ("Y", "PY", "PN", "N", "NI")

_TAGTOG = {"Yes": "Y", "ProbablyYes": "PY", "ProbablyNo": "PN", "No": "N"}


def judgement_of(sq: str, response: str) -> str | None:
    """RoBuster judgement implied by a response (:func:`clinex.rob.schema.judgement_for`).

    Parameters
    ----------
    sq : str
        SQ id, ``"1.1"`` ... ``"5.3"``.
    response : str
        One of Y, PY, PN, N, NI, NA.

    Returns
    -------
    str or None
        ``"Good"`` when the response points in the question's favourable direction,
        ``"Bad"`` otherwise; None for NI and NA.

    Raises
    ------
    SchemaError
        Unknown SQ or response.

    Examples
    --------
    >>> judgement_of("1.1", "Y"), judgement_of("2.1", "PY"), judgement_of("2.1", "NI")
    ('Good', 'Bad', None)
    """
    return judgement_for(sq, response)


def response_from_label(label: str) -> tuple[str, str]:
    """SQ and unfolded response (Y/PY/PN/N/NI) of a tagtog label name.

    Parameters
    ----------
    label : str
        E.g. ``"1_1_ProbablyYes_Good"`` or ``"2_1_No_Information"``.

    Returns
    -------
    (sq, response)
        ``("1.1", "PY")``, ``("2.1", "NI")``.

    Raises
    ------
    SchemaError
        Not a signalling-question label.
    """
    parts = label.strip().split("_")
    if len(parts) < 4 or not (parts[0].isdigit() and parts[1].isdigit()):
        raise SchemaError(f"not a signalling-question label: {label!r}", field="label")
    sq = f"{int(parts[0])}.{int(parts[1])}"
    if sq not in SQ_IDS:
        raise SchemaError(f"unknown signalling question {sq!r} in label {label!r}", field="label")
    if parts[2] == "No" and parts[3] == "Information":
        return sq, "NI"
    if parts[2] not in _TAGTOG:
        raise SchemaError(f"unknown response {parts[2]!r} in label {label!r}", field="label")
    return sq, _TAGTOG[parts[2]]


def answer_from_votes(
    sq: str,
    evidence: Sequence[Evidence],
    votes: Iterable[tuple[str, float]],
    *,
    max_evidence: int | None = None,
) -> SQAnswer:
    """Combine evidence votes for one SQ into an answer.

    Parameters
    ----------
    sq : str
        SQ id.
    evidence : sequence of Evidence
        The evidence, any order; returned best (highest score) first.
    votes : iterable of (response, weight)
        One vote per evidence: the response option (Y, PY, PN, N, NI) it implies
        and a non-negative weight (its score).
    max_evidence : int, optional
        Keep at most this many pieces of evidence.

    Returns
    -------
    SQAnswer
        ``response`` = the option with the largest summed weight (ties: the
        option of the single best-scored vote); ``confidence`` = that option's
        share of the total weight times the best evidence score; ``NI`` with
        confidence 0.5 and no evidence when there are no votes.

    Raises
    ------
    SchemaError
        Unknown SQ or response.
    """
    votes = list(votes)
    if sq not in SQ_IDS:
        raise SchemaError(f"unknown signalling question {sq!r}; known: {', '.join(SQ_IDS)}",
                          field="sq")
    if not votes:
        return SQAnswer(sq=sq, response="NI", judgement=None, confidence=0.5, evidence=())
    totals: dict[str, float] = defaultdict(float)
    best_resp, best_w = votes[0]
    for resp, w in votes:
        if resp not in RESPONSES:
            raise SchemaError(f"unknown response {resp!r}; known: {', '.join(RESPONSES)}",
                              field="response")
        totals[resp] += max(w, 0.0)
        if w > best_w:
            best_resp, best_w = resp, w
    top = max(totals.values())
    winners = [r for r, t in totals.items() if t == top]
    response = best_resp if best_resp in winners else winners[0]
    total = sum(totals.values()) or 1.0
    ranked = sorted(evidence, key=lambda e: (-e.score, e.span.start))
    if max_evidence is not None:
        ranked = ranked[:max_evidence]
    best_score = max((e.score for e in evidence), default=0.5)
    confidence = min(1.0, max(0.0, (top / total) * best_score))
    return SQAnswer(
        sq=sq,
        response=response,  # type: ignore[arg-type]
        judgement=judgement_of(sq, response),  # type: ignore[arg-type]
        confidence=confidence,
        evidence=tuple(ranked),
    )
