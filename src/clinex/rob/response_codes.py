"""RoB 2 response codes and their spellings: ``Y`` (yes), ``PY`` (probably yes), ``PN``
(probably no), ``N`` (no), ``NI`` (no information) and ``NA`` (a question its
condition skips); long forms, the RoBuster / tagtog class names and RoBuster's folding
of PY into Yes and PN into No. Re-exported by :mod:`~clinex.rob.schema`.

References
----------
.. [1] Sterne JAC, Savović J, Page MJ, et al. RoB 2: a revised tool for assessing
   risk of bias in randomised trials. BMJ 2019;366:l4898.
.. [2] Higgins JPT, Savović J, Page MJ, Sterne JAC (eds). Revised Cochrane
   risk-of-bias tool for randomized trials (RoB 2), full guidance document,
   22 August 2019 (the template's response options).
.. [3] Dhrangadhariya A, et al. RoBuster: a corpus annotated with risk of bias
   text spans in randomized controlled trials (span labels ``SQ Response Judgement``).
"""

from __future__ import annotations

import re
from typing import Literal, get_args

from clinex.errors import SchemaError
from clinex.rob.types import Response

__all__ = ["RESPONSES", "parse_response", "fold_response", "is_yes", "is_no"]

#: Every response code, in the order of the RoB 2 template ("NA" last).
RESPONSES: tuple[str, ...] = get_args(Response)


# Long spellings of responses: RoB 2 words, the RoBuster / tagtog class names
# ("ProbablyYes", "No_Information") and the folded RoBuster forms.
_RESPONSE_WORDS = {
    "y": "Y",
    "yes": "Y",
    "py": "PY",
    "probablyyes": "PY",
    "pn": "PN",
    "probablyno": "PN",
    "n": "N",
    "no": "N",
    "ni": "NI",
    "noinformation": "NI",
    "noinfo": "NI",
    "na": "NA",
    "notapplicable": "NA",
}


def parse_response(value: str, *, field: str | None = None) -> Response:
    """Read a response in any common spelling and return its RoB 2 code.

    Parameters
    ----------
    value : str
        ``"Y"``, ``"Probably yes"``, ``"ProbablyYes"``, ``"No Information"``,
        ``"no_information"``, ``"NA"`` ... (case, spaces, ``_`` and ``-`` ignored).
    field : str, optional
        Field name reported in the error (e.g. the SQ id).

    Returns
    -------
    str
        One of ``Y PY PN N NI NA``.

    Raises
    ------
    SchemaError
        For anything else; the message lists the valid codes.

    Examples
    --------
    >>> parse_response("Probably no")
    'PN'
    """
    key = re.sub(r"[\s_\-/]", "", str(value)).lower()
    try:
        return _RESPONSE_WORDS[key]  # type: ignore[return-value]
    except KeyError:
        raise SchemaError(
            f"unknown response {value!r}; valid: {', '.join(RESPONSES)} "
            "(or Yes, Probably yes, Probably no, No, No information, Not applicable)",
            field=field,
        ) from None


def fold_response(response: str) -> Literal["Yes", "No", "No Information", "NA"]:
    """Fold a RoB 2 response into RoBuster's three values.

    RoBuster span labels merge "Probably yes" into Yes and "Probably no" into No [3]_.

    Parameters
    ----------
    response : str
        Any spelling :func:`parse_response` accepts.

    Returns
    -------
    {"Yes", "No", "No Information", "NA"}

    Examples
    --------
    >>> fold_response("PY"), fold_response("PN"), fold_response("NI")
    ('Yes', 'No', 'No Information')
    """
    code = parse_response(response)
    return {"Y": "Yes", "PY": "Yes", "N": "No", "PN": "No", "NI": "No Information", "NA": "NA"}[
        code
    ]  # type: ignore[return-value]


def is_yes(response: str) -> bool:
    """True for Y and PY (RoB 2 treats them alike in every algorithm)."""
    return parse_response(response) in ("Y", "PY")


def is_no(response: str) -> bool:
    """True for N and PN (RoB 2 treats them alike in every algorithm)."""
    return parse_response(response) in ("N", "PN")
