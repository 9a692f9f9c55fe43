"""The 13 criterion names of the n2c2 2018 Track 1 (cohort selection) task.

The order is the canonical one: the order of the ``<TAGS>`` elements in the n2c2
files and of the rows of the official evaluation script.

References
----------
.. [1] Stubbs A, Filannino M, Soysal E, Henry S, Uzuner Ö. Cohort selection for
   clinical trials: n2c2 2018 shared task track 1. JAMIA 2019;26(11):1163-1171,
   Table 1 (the 13 criteria).
.. [2] n2c2 2018 Track 1 evaluation script ``track1_eval.py`` (the tag list).
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["N2C2_CRITERIA", "canonical_order"]

#: The 13 n2c2 2018 Track 1 criteria in canonical (file and scorer) order.
N2C2_CRITERIA: tuple[str, ...] = (
    "ABDOMINAL",
    "ADVANCED-CAD",
    "ALCOHOL-ABUSE",
    "ASP-FOR-MI",
    "CREATININE",
    "DIETSUPP-2MOS",
    "DRUG-ABUSE",
    "ENGLISH",
    "HBA1C",
    "KETO-1YR",
    "MAJOR-DIABETES",
    "MAKES-DECISIONS",
    "MI-6MOS",
)

_RANK = {name: i for i, name in enumerate(N2C2_CRITERIA)}


def canonical_order(names: Iterable[str]) -> list[str]:
    """Sort criterion names: the n2c2 ones in canonical order, then others alphabetically.

    Parameters
    ----------
    names : iterable of str
        Criterion names (duplicates are dropped).

    Returns
    -------
    list of str

    Examples
    --------
    >>> canonical_order(["MI-6MOS", "MY-OWN", "ABDOMINAL"])
    ['ABDOMINAL', 'MI-6MOS', 'MY-OWN']
    """
    return sorted(set(names), key=lambda n: (_RANK.get(n, len(_RANK)), n))
