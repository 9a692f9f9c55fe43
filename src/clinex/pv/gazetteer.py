"""Drug-name gazetteer: exact, case-insensitive lookup of one- and two-token drug names.

The dictionary is the one shipped by the ``drug-named-entity-recognition`` package
(Fast Data Science; DrugBank, MeSH and Wikipedia names and synonyms,
``drug_ner_dictionary.pkl.bz2``). That package's ``find_drugs`` builds a character
3-gram index of all 107,360 variants for fuzzy matching when it is imported, which
costs about 1.5 s of every CLI start-up; clinex needs only exact matching, so it reads
the same dictionary file without importing the package and applies the same exact
matching rule (:func:`find_drugs`, identical results to
``drug_named_entity_recognition.find_drugs(tokens, is_ignore_case=True)``; checked on
every PHEE dev sentence by ``tests/pv/test_pv_gazetteer.py``).
"""

from __future__ import annotations

import bz2
import importlib.util
import pickle
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from clinex.errors import ModelError

__all__ = ["find_drugs", "drug_record"]

_PACKAGE = "drug_named_entity_recognition"
_FILE = "drug_ner_dictionary.pkl.bz2"
_LOCK = threading.Lock()
_DATA: dict[str, dict[str, Any]] = {}


def _dictionary() -> dict[str, dict[str, Any]]:
    """The three maps of the dictionary file (read once per process, ~0.4 s)."""
    if _DATA:
        return _DATA
    with _LOCK:
        if not _DATA:
            spec = importlib.util.find_spec(_PACKAGE)  # locates the package without running it
            if spec is None or not spec.submodule_search_locations:
                raise ModelError(f"the drug gazetteer needs the {_PACKAGE!r} package (pip install drug-named-entity-recognition)")
            path = Path(next(iter(spec.submodule_search_locations))) / _FILE
            with bz2.open(path, "rb") as fh:
                # the package's own data file, as its own import reads it
                _DATA.update(pickle.load(fh))  # noqa: S301
    return _DATA


def drug_record(variant: str) -> list[dict[str, Any]]:
    """The dictionary's records for one lower-cased name variant (empty if none).

    Each record is the canonical drug's data (``name``, ``drugbank_id``, ``mesh_id``
    ...) updated with the variant's own data, as ``find_drugs`` of the package gives it.
    """
    d = _dictionary()
    canonicals = d["drug_variant_to_canonical"].get(variant)
    if not canonicals:
        return []
    extra = d["drug_variant_to_variant_data"].get(variant, {})
    return [dict(d["drug_canonical_to_data"].get(c, {})) | extra for c in canonicals]


def find_drugs(tokens: Sequence[str]) -> list[tuple[dict[str, Any], int, int]]:
    """Drug names among ``tokens``: two-token names first, then single tokens not in one.

    The rule of ``drug_named_entity_recognition.find_drugs`` with exact,
    case-insensitive matching: every adjacent pair ``"tok tok"`` that is a name variant
    matches (pairs may overlap); then each token not inside a matched pair matches
    on its own.

    Parameters
    ----------
    tokens : sequence of str
        Token texts of one sentence.

    Returns
    -------
    list of (dict, int, int)
        ``(record, start, end)`` per match, token indices half-open, in the order
        the package gives them (pairs left to right, then single tokens); a variant
        with several canonical drugs gives one item per drug.

    Raises
    ------
    ModelError
        If the ``drug-named-entity-recognition`` package is not installed.
    """
    out: list[tuple[dict[str, Any], int, int]] = []
    excluded: set[int] = set()
    for i in range(len(tokens) - 1):
        variant = (tokens[i] + " " + tokens[i + 1]).lower()
        records = drug_record(variant)
        for rec in records:
            out.append((rec | {"match_type": "exact", "matching_string": tokens[i] + " " + tokens[i + 1]}, i, i + 2))
        if records:
            excluded.update((i, i + 1))
    for i, tok in enumerate(tokens):
        if i in excluded:
            continue
        records = drug_record(tok.lower())
        for rec in records:
            out.append((rec | {"match_type": "exact", "matching_string": tok}, i, i + 1))
        if records:
            excluded.add(i)
    return out
