"""Drug and reaction names of a PV summary (:mod:`clinex.pv.summary`, module notes).

A drug's name is the drug gazetteer's canonical one (:func:`normalize_drug`, the one rule
of every PV output: :func:`clinex.pv.normalise.drug_entry`); a reaction's is its text
case-folded, without a leading article, in American spelling (:func:`reaction_base`),
then made singular when the run also names the singular (:func:`reaction_forms`). Every
public name here is importable from :mod:`clinex.pv.summary`.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Iterator
from typing import NamedTuple

__all__ = ["REFERRING", "SPELLING", "DrugName", "normalize_drug", "reaction_base", "reaction_forms"]

#: British -> American spellings of reaction names (regular expression, replacement), applied in order.
SPELLING: tuple[tuple[str, str], ...] = (
    (r"haem", "hem"),            # haemorrhage, haematoma, haemolytic
    (r"oedem", "edem"),          # oedema, oedematous
    (r"aemi(?=a|c)", "emi"),     # anaemia, hypokalaemia, leukaemia, ischaemic
    (r"oesophag", "esophag"),    # oesophagitis
    (r"rrhoea", "rrhea"),        # diarrhoea, amenorrhoea
    (r"anaesth", "anesth"),      # anaesthesia
    (r"isation\b", "ization"),   # hospitalisation
)
_SPELLING = tuple((re.compile(p), r) for p, r in SPELLING)

#: A Treatment that only refers to a drug named elsewhere ("the drug", "this medication"):
#: no drug name of its own.
REFERRING = re.compile(
    r"(?:the|this|that|these|those|such|said|its|their)(?:\s+(?:same|offending|suspected|causative|study))?"
    r"\s+(?:drugs?|medications?|medicines?|agents?|compounds?|treatments?|therap(?:y|ies)|regimens?)",
    re.I,
)

_ARTICLE = re.compile(r"^(?:a|an|the)\s+")

class DrugName(NamedTuple):
    """A drug's normalised name (:func:`normalize_drug`) and the gazetteer's ids, if it knows it."""

    key: str
    drugbank_id: str | None = None
    mesh_tree: str | None = None


def _collapse(text: str) -> str:
    return " ".join(text.split()).casefold()


@functools.lru_cache(maxsize=65536)
def normalize_drug(text: str) -> DrugName:
    """The normalised name of a drug mention (module notes).

    Parameters
    ----------
    text : str
        The drug as written ("Clozapine", "Tylenol", "intravenous clonidine").

    Returns
    -------
    DrugName
        ``key``: the gazetteer's canonical name in lower case when it knows the whole text
        or finds a specific drug in it, else the text case-folded with its white space
        collapsed; ``drugbank_id`` / ``mesh_tree`` (the drug's own first MeSH tree number; the gazetteer's
        ``mesh_id`` is a pharmacological-action class, not the drug's descriptor) when the gazetteer gives them.

    Raises
    ------
    ModelError
        If the ``drug-named-entity-recognition`` package (the gazetteer's data) is missing.

    Examples
    --------
    >>> normalize_drug("Tylenol").key, normalize_drug("  Study  Drug X ").key
    ('acetaminophen', 'study drug x')
    """
    from clinex.pv.normalise import drug_entry

    entry = drug_entry(text)  # the one normalisation rule of every PV output
    if entry is None:
        return DrugName(_collapse(text))
    return DrugName(str(entry["name"]).lower(), entry["drugbank_id"], entry["mesh_tree"])


def reaction_base(text: str) -> str:
    """A reaction's name before the run-wide plural step (module notes, :data:`SPELLING`).

    Examples
    --------
    >>> reaction_base("  The   Haemorrhage."), reaction_base("Peripheral oedema"), reaction_base("Anaemia")
    ('hemorrhage', 'peripheral edema', 'anemia')
    """
    s = _collapse(text).strip(".,;: ")
    s = _ARTICLE.sub("", s)
    for pattern, repl in _SPELLING:
        s = pattern.sub(repl, s)
    return s


def _singulars(phrase: str) -> Iterator[str]:
    head, _, last = phrase.rpartition(" ")
    stem = head + " " if head else ""
    if len(last) > 4 and last.endswith("ies"):
        yield stem + last[:-3] + "y"
    if len(last) > 3 and last.endswith("es"):
        yield stem + last[:-2]
    if len(last) > 2 and last.endswith("s") and not last.endswith("ss"):
        yield stem + last[:-1]


def reaction_forms(names: Iterable[str]) -> dict[str, str]:
    """The plural step: each name whose last word's singular is also among ``names`` -> that singular.

    Parameters
    ----------
    names : iterable of str
        The :func:`reaction_base` names of a run.

    Returns
    -------
    dict of str to str
        Only the names that change.

    Examples
    --------
    >>> reaction_forms(["seizures", "seizure", "rashes", "rash", "arrhythmias", "diabetes", "abscess"])
    {'rashes': 'rash', 'seizures': 'seizure'}
    """
    seen = set(names)
    out: dict[str, str] = {}
    for name in sorted(seen):
        for singular in _singulars(name):
            if singular in seen and singular != name:
                out[name] = singular
                break
    return out
