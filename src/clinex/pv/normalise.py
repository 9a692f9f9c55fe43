"""Drug normalisation: the gazetteer's canonical name and ids of one Drug mention.

:func:`drug_entry` is the one rule every PV output uses for a Drug or Combination drug
argument: PHEE JSON (``normalised``, :mod:`clinex.pv.formats.phee_json`), brat annotator
notes (:mod:`clinex.pv.formats.brat`), the ``clinex pv extract`` listing, the
``n_drugs_normalised`` / ``n_drugs_unmatched`` columns of ``clinex batch pv``
(:func:`drug_counts`) and the summary's drug names (:func:`clinex.pv.summary.normalize_drug`).

The rule: the whole mention, white space collapsed and case-folded, when it is a name
variant the gazetteer (:mod:`clinex.pv.gazetteer`, DrugBank, MeSH and NHS names) knows;
else the first drug the gazetteer finds among its tokens (text order). Only *specific*
drugs count: records whose MeSH tree numbers all lie under enzymes (D08), proteins and
receptors (D12.776), nucleic acids (D13) or drug classes (D27, "Anti-Bacterial Agents")
are no drug a report names, so "antibiotics" is unmatched. An unmatched mention keeps
its text (the argument itself) and is counted as unmatched.

The gazetteer's ``mesh_id`` is a pharmacological-action class shared by many drugs, not
the drug's own descriptor, so it is not given; ``mesh_tree`` is the drug's own first MeSH
tree number.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from typing import Any

from clinex.pv.types import Event

__all__ = ["drug_entry", "drug_label", "drug_arguments", "drug_counts", "NOT_A_PRODUCT", "names_no_product"]

#: Drug mentions that name no medicinal product: placebo and vehicles, bare numbers,
#: species and words that name no product ("substance", "drug"). The model tags them as
#: Drug now and then (fresh-user QA on BC5CDR: "placebo", "5", "human" and "rats" became
#: suspects or pair drugs); ICH E2B(R3) G.k asks for the medicinal product the reporter
#: suspects, and a drug -> reaction pair (:mod:`clinex.pv.pairs`) for a drug.
NOT_A_PRODUCT = re.compile(
    r"^\W*(?:(?:matching |identical )?placebos?|vehicle|saline|sham|control|controls|substances?|drugs?|agents?|"
    r"medications?|compounds?|treatments?|therapy|human|humans|rats?|mice|mouse|dogs?|rabbits?|"
    r"(?:tick|insect|bee|wasp|spider|snake|dog|cat)(?:\s+(?:bites?|stings?))?s?|bites?|stings?|"
    r"[\d.,\s%/-]+)\W*$", re.I)


def names_no_product(text: str) -> bool:
    """Whether a Drug mention names no medicinal product (:data:`NOT_A_PRODUCT`).

    Examples
    --------
    >>> [t for t in ("placebo", "matching placebo", "5", "rats", "human", "tick", "aspirin") if names_no_product(t)]
    ['placebo', 'matching placebo', '5', 'rats', 'human', 'tick']
    """
    return bool(NOT_A_PRODUCT.search(text))

# MeSH trees of gazetteer records that are no drug: enzymes, proteins and receptors,
# nucleic acids, drug classes
_NOT_A_DRUG = ("D08", "D12.776", "D13", "D27")


def _specific(rec: dict[str, Any]) -> bool:
    trees = [str(t) for t in (rec.get("mesh_tree") or [])]
    return bool(rec.get("name")) and not (trees and all(t.startswith(_NOT_A_DRUG) for t in trees))


def _entry(rec: dict[str, Any]) -> tuple[str, str | None, str | None]:
    return (
        str(rec["name"]),
        str(rec.get("drugbank_id") or "") or None,
        str((rec.get("mesh_tree") or [""])[0] or "") or None,
    )


def drug_entry(text: str) -> dict[str, str | None] | None:
    """The gazetteer entry of one drug mention, or None when it knows none (module notes).

    Parameters
    ----------
    text : str
        The drug as written ("Tylenol", "intravenous clonidine").

    Returns
    -------
    dict or None
        ``{"name", "drugbank_id", "mesh_tree"}``: the canonical name as the gazetteer
        spells it, the DrugBank id and the drug's first MeSH tree number (None where the
        gazetteer has none); a new dict on each call.

    Raises
    ------
    ModelError
        If the ``drug-named-entity-recognition`` package (the gazetteer's data) is missing.

    Examples
    --------
    >>> drug_entry("Tylenol")["name"], drug_entry("Tylenol")["drugbank_id"]
    ('Acetaminophen', 'DB00316')
    >>> drug_entry("SM-5887") is None
    True
    """
    found = _lookup(text)
    return None if found is None else dict(zip(("name", "drugbank_id", "mesh_tree"), found))


@functools.lru_cache(maxsize=65536)
def _lookup(text: str) -> tuple[str, str | None, str | None] | None:
    from clinex.pv.features import tokenize
    from clinex.pv.gazetteer import drug_record, find_drugs

    whole = [r for r in drug_record(" ".join(text.split()).casefold()) if _specific(r)]
    if whole:
        return _entry(whole[0])
    tokens = tokenize(text)
    matches = sorted(
        ((a, b, rec) for rec, a, b in find_drugs([text[s:e] for s, e in tokens]) if _specific(rec)),
        key=lambda m: (m[0], m[1]),
    )
    return _entry(matches[0][2]) if matches else None


def drug_label(entry: dict[str, str | None]) -> str:
    """``"Acetaminophen (DrugBank DB00316)"``: the name and DrugBank id (else the MeSH tree number).

    Examples
    --------
    >>> drug_label({"name": "Insulin", "drugbank_id": None, "mesh_tree": "D12.644.548"})
    'Insulin (MeSH tree D12.644.548)'
    """
    if entry.get("drugbank_id"):
        return f"{entry['name']} (DrugBank {entry['drugbank_id']})"
    if entry.get("mesh_tree"):
        return f"{entry['name']} (MeSH tree {entry['mesh_tree']})"
    return str(entry["name"])


def drug_arguments(event: Event) -> list[Any]:
    """The event's ``Treatment.Drug`` sub-arguments, then its Combination drugs (spans not repeated)."""
    seen: set[tuple] = set()
    out = []
    drugs = [a for a in event.sub_arguments.get("Treatment", ()) if a.role == "Drug"]
    drugs += [d for c in event.combinations for d in c.drugs]
    for a in drugs:
        key = tuple(a.span.offsets())
        if key not in seen:
            seen.add(key)
            out.append(a)
    return out


def drug_counts(events: Iterable[Event]) -> dict[str, int]:
    """``n_drugs_normalised`` / ``n_drugs_unmatched``: the record's drug mentions with / without an entry.

    A mention is one Drug or Combination drug span of any event (asserted or negated),
    counted once however many events share it.

    Examples
    --------
    >>> from clinex.text import Span
    >>> from clinex.pv.types import Argument, Event
    >>> t = "Tylenol and SM-5887 caused hepatotoxicity."
    >>> drugs = (Argument(role="Drug", span=Span.from_offsets(t, (0, 7))),
    ...          Argument(role="Drug", span=Span.from_offsets(t, (12, 19))))
    >>> ev = Event(event_type="Adverse_event", trigger=Span.from_offsets(t, (20, 26)),
    ...            arguments=(Argument(role="Treatment", span=Span.from_offsets(t, (0, 19))),),
    ...            sub_arguments={"Treatment": drugs})
    >>> drug_counts([ev])
    {'n_drugs_normalised': 1, 'n_drugs_unmatched': 1}
    """
    seen: set[tuple] = set()
    found = unmatched = 0
    for ev in events:
        for a in drug_arguments(ev):
            key = tuple(a.span.offsets())
            if key in seen:
                continue
            seen.add(key)
            if _lookup(a.span.text) is None:
                unmatched += 1
            else:
                found += 1
    return {"n_drugs_normalised": found, "n_drugs_unmatched": unmatched}
