"""Drug mentions and referring expressions of a record, for :mod:`clinex.pv.record`.

What the cross-sentence resolution reads of a record's text: the drugs it names (the drug
gazetteer's specific drugs, the Drug arguments of its events and the abbreviations it
defines for them: :func:`drug_mentions`), one key per drug (:func:`drug_key`), and the
referring expressions that stand for a drug named before ("the drug", "this agent", "the
statin": :data:`ANAPHOR`, :func:`anaphor_spans`, :func:`is_anaphor`,
:func:`is_anaphoric_argument`). The rules and their sources are described in
:mod:`clinex.pv.record`; every public name here is importable from there.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from clinex.pv.types import Argument, Event

__all__ = [
    "ANAPHOR",
    "DrugMention",
    "anaphor_spans",
    "drug_key",
    "drug_mentions",
    "is_anaphor",
    "is_anaphoric_argument",
    "sentence_index",
]

_ANAPHOR_HEAD = r"(?:drugs?|medications?|medicines?|medicaments?|agents?|compounds?|preparations?)"
_ANAPHOR_MOD = (
    r"(?:(?:same|above|above-mentioned|aforementioned|offending|suspect|suspected|causative|culprit"
    r"|responsible|implicated|incriminated)\s+)?"
)

#: Referring expressions that stand for a drug named before (case-insensitive). "The drug",
#: "this agent", "these medications", "the offending drug", "this treatment" / "this
#: therapy" (not "the treatment", which is as often the treatment of a disease), "its use"
#: / "its administration" / "its withdrawal" ... A drug class named with a determiner
#: ("the statin", "these antibiotics") is found with the gazetteer's classes
#: (:func:`anaphor_spans`). Not followed by a hyphen ("the drug-induced ...").
ANAPHOR = re.compile(
    r"\b(?:(?:the|this|these|that|those|such|said)\s+" + _ANAPHOR_MOD + _ANAPHOR_HEAD
    + r"|(?:this|that|these|those|such|the\s+same)\s+(?:treatments?|therapy|therapies|regimens?|medication)"
    r"|its\s+(?:use|usage|administration|withdrawal|discontinuation|cessation|intake|ingestion|introduction"
    r"|initiation|continuation|reintroduction|readministration))\b(?!-)",
    re.I,
)

_CLASS_ANAPHOR = re.compile(r"\b(?:the|this|these|that|those|such)\s+([A-Za-z][\w-]*)(?:\s+([A-Za-z][\w-]*))?", re.I)

# gazetteer records that are no drug a report blames: enzymes (D08), proteins and
# receptors (D12.776), nucleic acids (D13); D27 are classes ("Anti-Bacterial Agents")
_NOT_A_DRUG = ("D08", "D12.776", "D13")
_CLASS = ("D27",)


def _trees(rec: dict[str, Any]) -> list[str]:
    return [str(t) for t in (rec.get("mesh_tree") or [])]


def _is_specific(rec: dict[str, Any]) -> bool:
    trees = _trees(rec)
    return bool(rec.get("name")) and not (trees and all(t.startswith(_NOT_A_DRUG + _CLASS) for t in trees))


def _is_class(rec: dict[str, Any]) -> bool:
    trees = _trees(rec)
    return bool(trees) and all(t.startswith(_CLASS) for t in trees)


def _norm(text: str) -> str:
    return " ".join(text.split()).casefold()


def _gazetteer(text: str) -> list[tuple[int, int, dict[str, Any]]]:
    """Gazetteer matches in ``text``: ``(start, end, record)``, first record per span, text order."""
    from clinex.pv.features import tokenize
    from clinex.pv.gazetteer import find_drugs

    toks = tokenize(text)
    if not toks:
        return []
    seen: dict[tuple[int, int], dict[str, Any]] = {}
    for rec, a, b in find_drugs([text[s:e] for s, e in toks]):
        seen.setdefault((toks[a][0], toks[b - 1][1]), rec)
    return sorted((s, e, rec) for (s, e), rec in seen.items())


def drug_key(text: str, aliases: dict[str, str] | None = None) -> str:
    """The normalised name of a drug mention: one key per drug.

    The canonical name (lower case) of the first specific drug the gazetteer finds in
    ``text`` ("Tylenol" and "paracetamol" -> ``"acetaminophen"``; "intravenous clonidine"
    -> ``"clonidine"``), else an abbreviation's drug (``aliases``, from
    :func:`drug_mentions`), else ``text`` case-folded with its whitespace collapsed.

    Examples
    --------
    >>> drug_key("Clozapine"), drug_key("  Study  Drug X ")
    ('clozapine', 'study drug x')
    """
    from clinex.pv.gazetteer import drug_record

    norm = _norm(text)
    if aliases and norm in aliases:
        return aliases[norm]
    for rec in drug_record(norm):  # the whole text a name ("amphotericin b lipid complex")
        if _is_specific(rec):
            return str(rec["name"]).lower()
    for _s, _e, rec in _gazetteer(text):
        if _is_specific(rec):
            return str(rec["name"]).lower()
    return norm


@dataclass(frozen=True)
class DrugMention:
    """A drug named in a record: offsets into its text, key (:func:`drug_key`), sentence index."""

    start: int
    end: int
    text: str
    key: str
    sentence: int


def sentence_index(starts: Sequence[int], pos: int) -> int:
    """Index of the sentence (given by its sorted ``starts``) that holds offset ``pos``."""
    return max(0, bisect.bisect_right(starts, pos) - 1)


def _event_drug_args(event: Event) -> list[Argument]:
    """The Drug sub-arguments and combination drugs of ``event``."""
    drugs = [a for a in event.sub_arguments.get("Treatment", ()) if a.role == "Drug"]
    return drugs + [d for c in event.combinations for d in c.drugs]


_ABBREVIATION = re.compile(r"\s*\(\s*([A-Za-z][A-Za-z0-9-]{0,9})\s*\)")


def drug_mentions(
    text: str, sentences: Sequence[tuple[int, int]], events: Sequence[Event] = ()
) -> tuple[list[DrugMention], dict[str, str]]:
    """The drugs named in a record, and the abbreviations it defines for them.

    Parameters
    ----------
    text : str
        The record's text.
    sentences : sequence of (int, int)
        Its sentences, ``[start, end)`` in text order.
    events : sequence of Event
        Its events (offsets into ``text``): their Drug sub-arguments and combination
        drugs that are not referring expressions count as mentions too.

    Returns
    -------
    (list of DrugMention, dict of str to str)
        The mentions in text order (one per span) and the abbreviations, lower case, each
        mapped to its drug's key ("carbamazepine (CBZ)" -> ``{"cbz": "carbamazepine"}``;
        every later "CBZ" is a mention of carbamazepine).
    """
    starts = [s for s, _ in sentences]
    found: dict[tuple[int, int], str] = {}
    aliases: dict[str, str] = {}
    for s, e, rec in _gazetteer(text):
        if not _is_specific(rec):
            continue
        key = str(rec["name"]).lower()
        found[(s, e)] = key
        m = _ABBREVIATION.match(text, e)
        if m and not any(_is_specific(r) for _, _, r in _gazetteer(m.group(1))):
            aliases.setdefault(m.group(1).lower(), key)
    if aliases:
        pattern = re.compile(r"\b(?:" + "|".join(re.escape(a) for a in sorted(aliases, key=len, reverse=True)) + r")\b", re.I)
        for m in pattern.finditer(text):
            found.setdefault((m.start(), m.end()), aliases[m.group(0).lower()])
    for ev in events:
        for a in _event_drug_args(ev):
            if len(a.span.fragments) == 1 and not is_anaphoric_argument(text, a):
                found.setdefault((a.span.start, a.span.end), drug_key(a.span.text, aliases))
    mentions = []
    reach = -1
    for (s, e), key in sorted(found.items(), key=lambda x: (x[0][0], -x[0][1])):
        if e <= reach:
            continue  # inside a longer mention: the outermost span only
        reach = e
        mentions.append(DrugMention(s, e, text[s:e], key, sentence_index(starts, s)))
    return mentions, aliases


def is_anaphor(text: str) -> bool:
    """True when ``text`` holds a referring expression (:func:`anaphor_spans`) and names no drug.

    >>> is_anaphor("The drug was withdrawn"), is_anaphor("this agent"), is_anaphor("the drug clozapine")
    (True, True, False)
    """
    return bool(anaphor_spans(text)) and not any(_is_specific(rec) for _, _, rec in _gazetteer(text))


_DETERMINER_BEFORE = re.compile(r"\b(?:the|this|these|that|those|such|said|its)\s+$", re.I)


def is_anaphoric_argument(text: str, arg: Argument) -> bool:
    """True when the argument ``arg`` (offsets into ``text``) is a referring expression
    (:func:`is_anaphor`), read with the determiner just before it: a model often leaves
    the article out of its span ("the drug was started" tagged as ``drug was started``).

    >>> from clinex.text import Span
    >>> t = "Fever developed after the drug was started."
    >>> is_anaphoric_argument(t, Argument(role="Treatment", span=Span.from_offsets(t, (26, 42))))
    True
    """
    span = arg.span
    if len(span.fragments) != 1:
        return is_anaphor(span.text)
    start = span.start
    m = _DETERMINER_BEFORE.search(text, max(0, start - 8), start)
    return is_anaphor(text[m.start() if m else start : span.end])


def anaphor_spans(text: str, start: int = 0, end: int | None = None) -> list[tuple[int, int]]:
    """Referring expressions for a drug in ``text[start:end]``: :data:`ANAPHOR` and a drug
    class of the gazetteer after a determiner ("the statin", "these antibiotics").

    Returns
    -------
    list of (int, int)
        Offsets into ``text``, in text order.

    Examples
    --------
    >>> t = "The drug was stopped; these antibiotics and the statin were not."
    >>> [t[s:e] for s, e in anaphor_spans(t)]
    ['The drug', 'these antibiotics', 'the statin']
    """
    from clinex.pv.gazetteer import drug_record

    end = len(text) if end is None else end
    out = [(m.start(), m.end()) for m in ANAPHOR.finditer(text, start, end)]
    for m in _CLASS_ANAPHOR.finditer(text, start, end):
        if any(s <= m.start() < e for s, e in out):
            continue
        words = [(m.start(1), m.end(1))] + ([(m.start(2), m.end(2))] if m.group(2) else [])
        for k in (len(words), 1):
            s, e = words[0][0], words[k - 1][1]
            if text[e : e + 1] == "-":
                continue
            recs = drug_record(_norm(text[s:e]))
            if recs and all(_is_class(r) for r in recs):
                out.append((m.start(), e))
                break
    return sorted(out)
