"""The RoB 2 algorithms: signalling-question answers to risk-of-bias judgements.

One function per domain implements the "algorithm for suggested judgement" of the
RoB 2 guidance (22 August 2019) for individually-randomized parallel-group trials
and the effect of assignment to intervention; :func:`domain_risk` dispatches to
them and :func:`overall_risk` combines the five domain judgements.

Y and PY are treated alike, as are N and PN, exactly as the guidance's decision
diagrams do. A question the algorithm needs but that has no answer (missing, or
``NA``) is read as ``NI`` unless ``strict=True``; NI to 3.2, which the template
does not offer, is read like N/PN ("no evidence that the result was not biased").

References
----------
.. [1] Sterne JAC, Savović J, Page MJ, et al. RoB 2: a revised tool for assessing
   risk of bias in randomised trials. BMJ 2019;366:l4898 (table 2, overall judgement).
.. [2] Higgins JPT, Savović J, Page MJ, Sterne JAC (eds). Revised Cochrane
   risk-of-bias tool for randomized trials (RoB 2), full guidance document,
   22 August 2019: algorithms for suggested judgements, domains 1-5, and
   "Reaching an overall risk-of-bias judgement".
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from clinex.errors import SchemaError
from clinex.rob.schema import (
    DOMAIN_IDS,
    RISK_LEVELS,
    SignallingQuestion,
    domain,
    parse_response,
    questions_of,
    sq,
)
from clinex.rob.types import Response, RiskLevel

__all__ = [
    "domain_risk",
    "overall_risk",
    "overall_judgement",
    "MULTIPLE_SOME_CONCERNS_SOURCE",
    "all_domain_risks",
    "is_applicable",
    "applicable_questions",
]

_YES = ("Y", "PY")
_NO = ("N", "PN")


class _Answers:
    """Normalised view of one domain's answers for the decision tables."""

    def __init__(self, domain_id: str, answers: Mapping[str, object], strict: bool) -> None:
        self.domain = domain_id
        self.strict = strict
        self.codes: dict[str, str] = {}
        for key, value in answers.items():
            q = sq(key)  # unknown ids raise, listing the valid ones
            code = parse_response(_response_of(value), field=q.id)
            if q.id in self.codes and self.codes[q.id] != code:
                raise SchemaError(
                    f"two different answers for SQ {q.id} ({self.codes[q.id]}, {code})",
                    field=q.id,
                )
            self.codes[q.id] = code

    def __getitem__(self, sq_id: str) -> str:
        code = self.codes.get(sq_id, "NA")
        if code == "NA":
            if self.strict:
                raise SchemaError(
                    f"the {self.domain} algorithm needs an answer to SQ {sq_id} "
                    "(missing or NA); answer NI when the report says nothing",
                    field=sq_id,
                )
            code = "NI"
        if sq_id == "3.2" and code == "NI":
            # The template offers no NI for 3.2; "no information" is no evidence that
            # the result was not biased, so it follows the N/PN branch.
            return "N"
        return code


def _response_of(value: object) -> str:
    """Accept a response string or an object with a ``response`` attribute (SQAnswer)."""
    resp = getattr(value, "response", value)
    if not isinstance(resp, str):
        raise SchemaError(f"answer {value!r} is neither a response string nor an SQAnswer")
    return resp


def _d1(a: _Answers) -> RiskLevel:
    # Guidance, domain 1 algorithm: concealment (1.2) first, then randomness (1.1),
    # then baseline imbalance (1.3).
    if a["1.2"] in _NO:
        return "High"
    if a["1.2"] == "NI":
        return "High" if a["1.3"] in _YES else "Some concerns"
    # 1.2 Y/PY
    if a["1.1"] in _NO:
        return "Some concerns"
    return "Some concerns" if a["1.3"] in _YES else "Low"


def _d2_part1(a: _Answers) -> RiskLevel:
    # Questions 2.1 to 2.5: awareness and deviations arising from the trial context.
    if a["2.1"] in _NO and a["2.2"] in _NO:
        return "Low"
    if a["2.3"] in _NO:
        return "Low"
    if a["2.3"] == "NI":
        return "Some concerns"
    # 2.3 Y/PY
    if a["2.4"] in _NO:
        return "Some concerns"
    # 2.4 Y/PY/NI
    return "Some concerns" if a["2.5"] in _YES else "High"


def _d2_part2(a: _Answers) -> RiskLevel:
    # Questions 2.6 and 2.7: appropriateness of the analysis.
    if a["2.6"] in _YES:
        return "Low"
    return "Some concerns" if a["2.7"] in _NO else "High"


def _d2(a: _Answers) -> RiskLevel:
    # Both parts Low -> Low; either High -> High; otherwise Some concerns.
    return _worst((_d2_part1(a), _d2_part2(a)))


def _d3(a: _Answers) -> RiskLevel:
    if a["3.1"] in _YES:
        return "Low"
    if a["3.2"] in _YES:
        return "Low"
    # 3.2 N/PN (NI is read as N, see _Answers)
    if a["3.3"] in _NO:
        return "Low"
    return "Some concerns" if a["3.4"] in _NO else "High"


def _d4(a: _Answers) -> RiskLevel:
    if a["4.1"] in _YES:
        return "High"
    if a["4.2"] in _YES:
        return "High"
    # 4.2 N/PN leads to Low when assessment cannot have been influenced; NI to 4.2
    # caps the domain at Some concerns.
    unsure = a["4.2"] == "NI"
    if a["4.3"] in _NO or a["4.4"] in _NO:
        return "Some concerns" if unsure else "Low"
    if a["4.5"] in _NO:
        return "Some concerns"
    return "High"


def _d5(a: _Answers) -> RiskLevel:
    if a["5.2"] in _YES or a["5.3"] in _YES:
        return "High"
    if a["5.2"] == "NI" or a["5.3"] == "NI":
        return "Some concerns"
    # both N/PN
    return "Low" if a["5.1"] in _YES else "Some concerns"


_ALGORITHMS = {"D1": _d1, "D2": _d2, "D3": _d3, "D4": _d4, "D5": _d5}


def domain_risk(
    domain_id: str, answers: Mapping[str, Response | str | object], *, strict: bool = False
) -> RiskLevel:
    """Risk-of-bias judgement of one domain from its signalling-question answers.

    Implements the decision diagrams of the RoB 2 guidance [2]_:

    * **D1** — 1.2 N/PN → High; 1.2 NI → High if 1.3 Y/PY else Some concerns;
      1.2 Y/PY → Some concerns if 1.1 N/PN or 1.3 Y/PY, else Low.
    * **D2** — part 1 (2.1–2.5): both 2.1 and 2.2 N/PN → Low; else 2.3 N/PN → Low,
      2.3 NI → Some concerns, 2.3 Y/PY → (2.4 N/PN → Some concerns; 2.4 Y/PY/NI →
      2.5 Y/PY → Some concerns, 2.5 N/PN/NI → High). Part 2 (2.6–2.7): 2.6 Y/PY →
      Low; else 2.7 N/PN → Some concerns, 2.7 Y/PY/NI → High. Domain: Low if both
      parts Low, High if either is High, else Some concerns.
    * **D3** — 3.1 Y/PY → Low; 3.2 Y/PY → Low; 3.3 N/PN → Low; 3.4 N/PN → Some
      concerns; 3.4 Y/PY/NI → High.
    * **D4** — 4.1 Y/PY → High; 4.2 Y/PY → High; then with 4.2 N/PN: 4.3 N/PN or
      4.4 N/PN → Low, 4.5 N/PN → Some concerns, 4.5 Y/PY/NI → High; with 4.2 NI the
      same path gives Some concerns in place of Low.
    * **D5** — 5.2 or 5.3 Y/PY → High; 5.2 or 5.3 NI → Some concerns; both N/PN →
      Low if 5.1 Y/PY, else Some concerns.

    Parameters
    ----------
    domain_id : str
        ``"D1"`` ... ``"D5"``.
    answers : mapping of str to response
        SQ id → response code (``"Y"``, ``"PY"``, ``"PN"``, ``"N"``, ``"NI"``,
        ``"NA"``; long spellings such as ``"Probably yes"`` accepted) or an
        :class:`~clinex.rob.types.SQAnswer`. May hold other domains' answers too
        (they are validated and ignored). Questions the path does not reach may be
        absent.
    strict : bool, default False
        If True, a question the path needs that is missing or ``NA`` raises; if
        False it is read as ``NI``.

    Returns
    -------
    {"Low", "Some concerns", "High"}

    Raises
    ------
    SchemaError
        Unknown domain, SQ id or response; with ``strict``, a needed answer missing.

    References
    ----------
    .. [2] RoB 2 full guidance document (22 August 2019), "Algorithm for suggested
       judgement" of each domain.

    Examples
    --------
    >>> domain_risk("D1", {"1.1": "Y", "1.2": "Y", "1.3": "N"})
    'Low'
    >>> domain_risk("D5", {"5.1": "Y", "5.2": "N", "5.3": "PY"})
    'High'
    """
    d = domain(domain_id)
    return _ALGORITHMS[d.id](_Answers(d.id, answers, strict))


def all_domain_risks(
    answers: Mapping[str, Response | str | object], *, strict: bool = False
) -> dict[str, RiskLevel]:
    """:func:`domain_risk` for D1..D5 from one mapping holding all 22 answers.

    Returns
    -------
    dict
        ``{"D1": risk, ..., "D5": risk}`` in domain order.
    """
    return {d: domain_risk(d, answers, strict=strict) for d in DOMAIN_IDS}


def overall_risk(
    domain_risks: Mapping[str, str] | Iterable[str],
    *,
    multiple_some_concerns_high: int | None = None,
) -> RiskLevel:
    """Overall risk-of-bias judgement from the domain judgements.

    The RoB 2 rule [1]_ [2]_: **Low** if every domain is Low; **High** if at least
    one domain is High; otherwise **Some concerns**. The guidance also allows High
    when "some concerns for multiple domains ... substantially lower confidence in
    the result"; that is a reviewer's judgement, applied here only when asked for
    through ``multiple_some_concerns_high``.

    Parameters
    ----------
    domain_risks : mapping of domain id to risk, or iterable of risks
        Domain judgements (``"Low"``, ``"Some concerns"``, ``"High"``); at least one.
    multiple_some_concerns_high : int or None, default None
        If given (>= 2), the overall judgement is High when at least this many
        domains are Some concerns. None applies the plain rule.

    Returns
    -------
    {"Low", "Some concerns", "High"}

    Raises
    ------
    SchemaError
        No judgements, an unknown risk level or domain id, or a threshold below 2.

    References
    ----------
    .. [1] Sterne et al., BMJ 2019;366:l4898, table 2 ("Approach to reaching an
       overall risk-of-bias judgement").
    .. [2] RoB 2 guidance (22 Aug 2019), "Reaching an overall risk-of-bias judgement".

    Examples
    --------
    >>> overall_risk(["Low", "Some concerns", "Low", "Low", "Low"])
    'Some concerns'
    >>> overall_risk(["Low", "Some concerns", "Some concerns", "Low", "Low"],
    ...              multiple_some_concerns_high=2)
    'High'
    """
    return overall_judgement(domain_risks, multiple_some_concerns_high=multiple_some_concerns_high)[0]


#: Where the optional "several Some concerns → High" judgement comes from (named in every
#: note of :func:`overall_judgement`).
MULTIPLE_SOME_CONCERNS_SOURCE = (
    "RoB 2: some concerns in multiple domains may lower confidence in the result substantially; "
    "Sterne et al., BMJ 2019, table 2"
)


def overall_judgement(
    domain_risks: Mapping[str, str] | Iterable[str],
    *,
    multiple_some_concerns_high: int | None = None,
) -> tuple[RiskLevel, str | None]:
    """The overall judgement (:func:`overall_risk`) and the rule that raised it, if any.

    Parameters
    ----------
    domain_risks : mapping of domain id to risk, or iterable of risks
        As in :func:`overall_risk`; an iterable is read as D1, D2 ... in order.
    multiple_some_concerns_high : int or None, default None
        As in :func:`overall_risk`.

    Returns
    -------
    (risk, note)
        ``note`` is None when the plain RoB 2 rule decided; when the option raised
        Some concerns to High it says so, with the domains, the threshold and the
        source, e.g. ``"raised to High: 3 domains with Some concerns (D1, D2, D4),
        at least 2 asked for (--multiple-some-concerns-high 2; RoB 2: some concerns
        in multiple domains may lower confidence in the result substantially;
        Sterne et al., BMJ 2019, table 2)"``.

    Raises
    ------
    SchemaError
        As :func:`overall_risk`.

    References
    ----------
    Sterne et al., BMJ 2019;366:l4898, table 2; RoB 2 guidance (22 Aug 2019),
    "Reaching an overall risk-of-bias judgement".

    Examples
    --------
    >>> overall_judgement(["Low", "Some concerns", "Low", "Low", "Low"], multiple_some_concerns_high=2)
    ('Some concerns', None)
    """
    if isinstance(domain_risks, Mapping):
        for key in domain_risks:
            domain(key)
        ids = [str(k) for k in domain_risks]
        risks = list(domain_risks.values())
    else:
        risks = list(domain_risks)
        ids = [f"D{i}" for i in range(1, len(risks) + 1)]
    if not risks:
        raise SchemaError("no domain judgements to combine", field="domain_risks")
    for r in risks:
        if r not in RISK_LEVELS:
            raise SchemaError(
                f"unknown risk level {r!r}; valid: {', '.join(RISK_LEVELS)}", field="risk"
            )
    if multiple_some_concerns_high is not None and multiple_some_concerns_high < 2:
        raise SchemaError(
            f"multiple_some_concerns_high must be >= 2 or None, got {multiple_some_concerns_high}",
            field="multiple_some_concerns_high",
        )
    worst = _worst(risks)
    concerns = [i for i, r in zip(ids, risks) if r == "Some concerns"]
    if (
        worst == "Some concerns"
        and multiple_some_concerns_high is not None
        and len(concerns) >= multiple_some_concerns_high
    ):
        return "High", (
            f"raised to High: {len(concerns)} domains with Some concerns ({', '.join(concerns)}), "
            f"at least {multiple_some_concerns_high} asked for (--multiple-some-concerns-high "
            f"{multiple_some_concerns_high}; {MULTIPLE_SOME_CONCERNS_SOURCE})"
        )
    return worst, None


def _worst(risks: Iterable[str]) -> RiskLevel:
    return max(risks, key=RISK_LEVELS.index)  # type: ignore[return-value]


def is_applicable(sq_id: str, answers: Mapping[str, Response | str | object]) -> bool:
    """Whether RoB 2 asks a signalling question, given the answers so far.

    A question with a condition ("If Y/PY/NI to 2.1 or 2.2") is asked when the
    questions it depends on are themselves asked and their answers meet the
    condition. Missing or NA answers count as NI.

    Parameters
    ----------
    sq_id : str
        Signalling question id.
    answers : mapping
        SQ id → response or SQAnswer (see :func:`domain_risk`).

    Raises
    ------
    SchemaError
        Unknown SQ id or response.

    Examples
    --------
    >>> is_applicable("2.3", {"2.1": "N", "2.2": "N"})
    False
    >>> is_applicable("2.3", {"2.1": "N", "2.2": "PY"})
    True
    """
    q = sq(sq_id)
    a = _Answers(q.domain, answers, strict=False)
    return _applicable(q, a)


def _applicable(q: SignallingQuestion, a: _Answers) -> bool:
    cond = q.condition
    if cond is None:
        return True
    hits = [_applicable(sq(p), a) and a[p] in cond.responses for p in cond.on]
    return any(hits) if cond.combine == "any" else all(hits)


def applicable_questions(
    domain_id: str, answers: Mapping[str, Response | str | object]
) -> tuple[str, ...]:
    """Ids of the questions of one domain that RoB 2 asks, given the answers.

    Raises
    ------
    SchemaError
        Unknown domain, SQ id or response.
    """
    d = domain(domain_id)
    a = _Answers(d.id, answers, strict=False)
    return tuple(q.id for q in questions_of(d.id) if _applicable(q, a))
