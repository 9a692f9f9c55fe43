"""The RoB 2 schema: five domains, 22 signalling questions and their responses.

The tool is the revised Cochrane risk-of-bias tool for randomized trials (RoB 2),
version for individually-randomized, parallel-group trials, assessing the *effect
of assignment to intervention* (the intention-to-treat effect). Domain names and
question wording follow the RoB 2 template and guidance of 22 August 2019; the
conditions ("If Y/PY/NI to 2.1 or 2.2") say when a question is asked at all and
are kept apart from the question text.

The spellings of responses (:func:`parse_response`, :func:`fold_response`,
:func:`is_yes`, :func:`is_no`) are in :mod:`~clinex.rob.response_codes`, re-exported here.

Responses are RoB 2's ``Y`` (yes), ``PY`` (probably yes), ``PN`` (probably no),
``N`` (no), ``NI`` (no information), plus ``NA`` for a question its condition
skips. RoBuster span labels (``1.1 Yes Good``) fold PY into Yes and PN into No and
add a judgement of the reported practice, Good or Bad.

References
----------
.. [1] Sterne JAC, Savović J, Page MJ, et al. RoB 2: a revised tool for assessing
   risk of bias in randomised trials. BMJ 2019;366:l4898.
.. [2] Higgins JPT, Savović J, Page MJ, Sterne JAC (eds). Revised Cochrane
   risk-of-bias tool for randomized trials (RoB 2), full guidance document,
   22 August 2019 (the template's signalling questions and response options).
.. [3] Dhrangadhariya A, et al. RoBuster: a corpus annotated with risk of bias
   text spans in randomized controlled trials (span labels ``SQ Response Judgement``).
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict

from clinex.errors import SchemaError
from clinex.rob.response_codes import RESPONSES, fold_response, is_no, is_yes, parse_response
from clinex.rob.types import Judgement, Response

__all__ = [
    "RESPONSES",
    "ANSWER_RESPONSES",
    "RISK_LEVELS",
    "Condition",
    "Domain",
    "SignallingQuestion",
    "DOMAINS",
    "DOMAIN_IDS",
    "SIGNALLING_QUESTIONS",
    "SQ_IDS",
    "domain",
    "sq",
    "questions_of",
    "parse_response",
    "fold_response",
    "is_yes",
    "is_no",
    "judgement_for",
    "parse_label",
]

#: The five responses a question that is asked can take (RoB 2 template).
ANSWER_RESPONSES: tuple[str, ...] = ("Y", "PY", "PN", "N", "NI")
#: Risk-of-bias judgements, least to most severe.
RISK_LEVELS: tuple[str, ...] = ("Low", "Some concerns", "High")

_FROZEN = ConfigDict(frozen=True, extra="forbid")


class Condition(BaseModel):
    """When a signalling question is asked ("If Y/PY/NI to 2.1 or 2.2").

    Attributes
    ----------
    on : tuple of str
        The earlier questions the condition looks at.
    responses : tuple of str
        Responses to those questions that open this one.
    combine : {"any", "all"}
        ``"any"``: one of ``on`` must have a response in ``responses`` (RoB 2's
        "or"); ``"all"``: every one must ("and").
    """

    model_config = _FROZEN

    on: tuple[str, ...]
    responses: tuple[str, ...]
    combine: Literal["any", "all"] = "any"

    def text(self) -> str:
        """The condition as the RoB 2 template writes it, e.g. ``If Y/PY/NI to 2.1 or 2.2``."""
        join = " or " if self.combine == "any" else " and "
        return f"If {'/'.join(self.responses)} to {join.join(self.on)}"


class SignallingQuestion(BaseModel):
    """One RoB 2 signalling question.

    Attributes
    ----------
    id : str
        ``"1.1"`` ... ``"5.3"``.
    domain : str
        ``"D1"`` ... ``"D5"``.
    text : str
        The question's official wording (RoB 2 template, 22 Aug 2019), without its condition.
    condition : Condition or None
        When the question is asked; None when always.
    options : tuple of str
        Response options of the template (``NA`` included for conditional questions).
    favourable : {"Y", "N"}
        The answer direction that speaks for a low risk of bias (``Y`` for 1.1
        "sequence random?", ``N`` for 1.3 "baseline differences suggest a
        problem?"); used to derive RoBuster's Good / Bad judgement.
    """

    model_config = _FROZEN

    id: str
    domain: str
    text: str
    condition: Condition | None = None
    options: tuple[str, ...] = ANSWER_RESPONSES
    favourable: Literal["Y", "N"]

    @property
    def full_text(self) -> str:
        """Condition and question as one string, as printed in the template."""
        if self.condition is None:
            return self.text
        return f"{self.condition.text()}: {self.text}"


class Domain(BaseModel):
    """One RoB 2 bias domain.

    Attributes
    ----------
    id : str
        ``"D1"`` ... ``"D5"``.
    name : str
        Official domain name (RoB 2 guidance, 22 Aug 2019).
    short_name : str
        A label for plots and tables.
    questions : tuple of str
        Signalling question ids, in order.
    """

    model_config = _FROZEN

    id: str
    name: str
    short_name: str
    questions: tuple[str, ...]


def _c(on: str, responses: str, combine: Literal["any", "all"] = "any") -> Condition:
    return Condition(on=tuple(on.split()), responses=tuple(responses.split("/")), combine=combine)


_NA_OPTIONS = ("NA", *ANSWER_RESPONSES)

#: The five domains for the effect of assignment to intervention, D1..D5 in order.
DOMAINS: tuple[Domain, ...] = (
    Domain(
        id="D1",
        name="Bias arising from the randomization process",
        short_name="Randomization process",
        questions=("1.1", "1.2", "1.3"),
    ),
    Domain(
        id="D2",
        name="Bias due to deviations from intended interventions",
        short_name="Deviations from intended interventions",
        questions=("2.1", "2.2", "2.3", "2.4", "2.5", "2.6", "2.7"),
    ),
    Domain(
        id="D3",
        name="Bias due to missing outcome data",
        short_name="Missing outcome data",
        questions=("3.1", "3.2", "3.3", "3.4"),
    ),
    Domain(
        id="D4",
        name="Bias in measurement of the outcome",
        short_name="Measurement of the outcome",
        questions=("4.1", "4.2", "4.3", "4.4", "4.5"),
    ),
    Domain(
        id="D5",
        name="Bias in selection of the reported result",
        short_name="Selection of the reported result",
        questions=("5.1", "5.2", "5.3"),
    ),
)

_Q = SignallingQuestion
_SELECTED = (
    "Is the numerical result being assessed likely to have been selected, on the basis of "
    "the results, from multiple eligible "
)

#: The 22 signalling questions, 1.1 .. 5.3 in order.
SIGNALLING_QUESTIONS: tuple[SignallingQuestion, ...] = (
    _Q(id="1.1", domain="D1", favourable="Y", text="Was the allocation sequence random?"),
    _Q(
        id="1.2",
        domain="D1",
        favourable="Y",
        text=(
            "Was the allocation sequence concealed until participants were enrolled and "
            "assigned to interventions?"
        ),
    ),
    _Q(
        id="1.3",
        domain="D1",
        favourable="N",
        text=(
            "Did baseline differences between intervention groups suggest a problem with the "
            "randomization process?"
        ),
    ),
    _Q(
        id="2.1",
        domain="D2",
        favourable="N",
        text="Were participants aware of their assigned intervention during the trial?",
    ),
    _Q(
        id="2.2",
        domain="D2",
        favourable="N",
        text=(
            "Were carers and people delivering the interventions aware of participants' "
            "assigned intervention during the trial?"
        ),
    ),
    _Q(
        id="2.3",
        domain="D2",
        favourable="N",
        condition=_c("2.1 2.2", "Y/PY/NI", "any"),
        options=_NA_OPTIONS,
        text=(
            "Were there deviations from the intended intervention that arose because of the "
            "trial context?"
        ),
    ),
    _Q(
        id="2.4",
        domain="D2",
        favourable="N",
        condition=_c("2.3", "Y/PY"),
        options=_NA_OPTIONS,
        text="Were these deviations likely to have affected the outcome?",
    ),
    _Q(
        id="2.5",
        domain="D2",
        favourable="Y",
        condition=_c("2.4", "Y/PY/NI"),
        options=_NA_OPTIONS,
        text="Were these deviations from intended intervention balanced between groups?",
    ),
    _Q(
        id="2.6",
        domain="D2",
        favourable="Y",
        text="Was an appropriate analysis used to estimate the effect of assignment to intervention?",
    ),
    _Q(
        id="2.7",
        domain="D2",
        favourable="N",
        condition=_c("2.6", "N/PN/NI"),
        options=_NA_OPTIONS,
        text=(
            "Was there potential for a substantial impact (on the result) of the failure to "
            "analyse participants in the group to which they were randomized?"
        ),
    ),
    _Q(
        id="3.1",
        domain="D3",
        favourable="Y",
        text=(
            "Were data for this outcome available for all, or nearly all, participants "
            "randomized?"
        ),
    ),
    _Q(
        id="3.2",
        domain="D3",
        favourable="Y",
        condition=_c("3.1", "N/PN/NI"),
        options=("NA", "Y", "PY", "PN", "N"),
        text="Is there evidence that the result was not biased by missing outcome data?",
    ),
    _Q(
        id="3.3",
        domain="D3",
        favourable="N",
        condition=_c("3.2", "N/PN"),
        options=_NA_OPTIONS,
        text="Could missingness in the outcome depend on its true value?",
    ),
    _Q(
        id="3.4",
        domain="D3",
        favourable="N",
        condition=_c("3.3", "Y/PY/NI"),
        options=_NA_OPTIONS,
        text="Is it likely that missingness in the outcome depended on its true value?",
    ),
    _Q(
        id="4.1",
        domain="D4",
        favourable="N",
        text="Was the method of measuring the outcome inappropriate?",
    ),
    _Q(
        id="4.2",
        domain="D4",
        favourable="N",
        text=(
            "Could measurement or ascertainment of the outcome have differed between "
            "intervention groups?"
        ),
    ),
    _Q(
        id="4.3",
        domain="D4",
        favourable="N",
        condition=_c("4.1 4.2", "N/PN/NI", "all"),
        options=_NA_OPTIONS,
        text="Were outcome assessors aware of the intervention received by study participants?",
    ),
    _Q(
        id="4.4",
        domain="D4",
        favourable="N",
        condition=_c("4.3", "Y/PY/NI"),
        options=_NA_OPTIONS,
        text=(
            "Could assessment of the outcome have been influenced by knowledge of intervention "
            "received?"
        ),
    ),
    _Q(
        id="4.5",
        domain="D4",
        favourable="N",
        condition=_c("4.4", "Y/PY/NI"),
        options=_NA_OPTIONS,
        text=(
            "Is it likely that assessment of the outcome was influenced by knowledge of "
            "intervention received?"
        ),
    ),
    _Q(
        id="5.1",
        domain="D5",
        favourable="Y",
        text=(
            "Were the data that produced this result analysed in accordance with a "
            "pre-specified analysis plan that was finalized before unblinded outcome data were "
            "available for analysis?"
        ),
    ),
    _Q(
        id="5.2",
        domain="D5",
        favourable="N",
        text=_SELECTED
        + "outcome measurements (e.g. scales, definitions, time points) within the outcome domain?",
    ),
    _Q(id="5.3", domain="D5", favourable="N", text=_SELECTED + "analyses of the data?"),
)

#: Domain ids in order.
DOMAIN_IDS: tuple[str, ...] = tuple(d.id for d in DOMAINS)
#: Signalling question ids in order.
SQ_IDS: tuple[str, ...] = tuple(q.id for q in SIGNALLING_QUESTIONS)

_BY_SQ = {q.id: q for q in SIGNALLING_QUESTIONS}
_BY_DOMAIN = {d.id: d for d in DOMAINS}


def sq(id: str) -> SignallingQuestion:
    """Look up a signalling question by id.

    Parameters
    ----------
    id : str
        ``"1.1"`` ... ``"5.3"``; ``"1_1"`` (RoBuster / tagtog spelling) is accepted too.

    Returns
    -------
    SignallingQuestion

    Raises
    ------
    SchemaError
        For an unknown id; the message lists the valid ids.

    Examples
    --------
    >>> sq("1.2").domain
    'D1'
    """
    key = str(id).strip().replace("_", ".")
    try:
        return _BY_SQ[key]
    except KeyError:
        raise SchemaError(
            f"unknown signalling question {id!r}; valid: {', '.join(SQ_IDS)}", field="sq"
        ) from None


def domain(id: str) -> Domain:
    """Look up a domain by id (``"D1"`` ... ``"D5"``; ``"1"`` and ``"d1"`` work too).

    Raises
    ------
    SchemaError
        For an unknown id; the message lists the valid ids.
    """
    key = str(id).strip().upper()
    if key.isdigit():
        key = "D" + key
    try:
        return _BY_DOMAIN[key]
    except KeyError:
        raise SchemaError(
            f"unknown domain {id!r}; valid: {', '.join(DOMAIN_IDS)}", field="domain"
        ) from None


def questions_of(domain_id: str) -> tuple[SignallingQuestion, ...]:
    """The signalling questions of one domain, in order.

    Raises
    ------
    SchemaError
        For an unknown domain id.
    """
    return tuple(_BY_SQ[q] for q in domain(domain_id).questions)


def judgement_for(sq_id: str, response: str) -> Judgement | None:
    """RoBuster's judgement of the reported practice implied by a response.

    ``Good`` when the (folded) response points in the question's favourable
    direction (e.g. Yes to 1.1 "sequence random?", No to 1.3 "baseline differences
    suggest a problem?"), ``Bad`` when it points the other way, None for NI / NA.

    Parameters
    ----------
    sq_id : str
        Signalling question id.
    response : str
        Any spelling :func:`parse_response` accepts.

    Raises
    ------
    SchemaError
        Unknown question or response.

    Examples
    --------
    >>> judgement_for("1.1", "Y"), judgement_for("3.1", "N"), judgement_for("1.3", "PN")
    ('Good', 'Bad', 'Good')
    """
    q = sq(sq_id)
    code = parse_response(response, field=q.id)
    if code in ("NI", "NA"):
        return None
    direction = "Y" if code in ("Y", "PY") else "N"
    return "Good" if direction == q.favourable else "Bad"


_LABEL = re.compile(
    r"^\s*(?P<sq>[1-5][._][1-7])[\s_]+(?P<resp>.+?)(?:[\s_]+(?P<judg>Good|Bad))?\s*$",
    re.IGNORECASE,
)


def parse_label(label: str) -> tuple[str, Response, Judgement | None]:
    """Split a RoBuster span label into question, response and judgement.

    Parameters
    ----------
    label : str
        ``"1.1 Yes Good"``, ``"2.1 No Information"``, or the tagtog class name
        ``"1_1_ProbablyYes_Good"``.

    Returns
    -------
    (sq_id, response, judgement)
        ``response`` as a RoB 2 code (unfolded when the label says "Probably");
        ``judgement`` None when the label has none.

    Raises
    ------
    SchemaError
        When the label does not have this shape, or names an unknown SQ or response.

    Examples
    --------
    >>> parse_label("3.1 No Bad")
    ('3.1', 'N', 'Bad')
    >>> parse_label("1_1_ProbablyYes_Good")
    ('1.1', 'PY', 'Good')
    """
    m = _LABEL.match(str(label))
    if m is None:
        raise SchemaError(
            f"label {label!r} is not 'SQ Response [Good|Bad]' (e.g. '1.1 Yes Good')", field="label"
        )
    q = sq(m.group("sq"))
    resp = parse_response(m.group("resp"), field="label")
    judg = m.group("judg")
    return q.id, resp, (judg.capitalize() if judg else None)  # type: ignore[return-value]
