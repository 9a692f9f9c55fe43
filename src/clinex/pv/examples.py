"""Bundled example sentences for ``clinex pv extract --example`` and the docs.

The sentences are written for clinex in the style of PubMed case-report titles and
abstracts (the PHEE source genre); none is taken from the PHEE corpus.
"""

from __future__ import annotations

__all__ = ["EXAMPLES", "example"]

EXAMPLES: tuple[tuple[str, str], ...] = (
    (
        "example_1",
        "A 63-year-old woman developed severe hepatotoxicity after 3 weeks of oral amoxicillin-clavulanate.",
    ),
    (
        "example_2",
        "Intravenous methylprednisolone was effective in treating refractory autoimmune hemolytic anemia "
        "in two children.",
    ),
    (
        "example_3",
        "Lithium-induced nephrogenic diabetes insipidus may not resolve after the drug is stopped.",
    ),
)
"""``(id, sentence)`` pairs; the first is what ``--example`` runs on."""


def example(index: int = 0) -> tuple[str, str]:
    """The ``index``-th bundled example as ``(id, sentence)``.

    Raises
    ------
    IndexError
        If there is no such example.
    """
    return EXAMPLES[index]
