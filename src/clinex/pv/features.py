"""Tokens and CRF features for PHEE sentences.

A sentence is cut into word tokens by a regular expression (runs of letters, numbers
with their decimal part, or single punctuation marks), so that ``54-year-old`` becomes
``54 - year - old`` and ``heparin-induced`` becomes ``heparin - induced``: on the PHEE
training split 41 of 18,172 annotated fragments (0.2 %) do not start and end on these
token boundaries. Each token gets a list of binary string features for python-crfsuite:
the word, its shape, affixes, a context window of two tokens each side, and a drug-name
gazetteer flag from ``drug-named-entity-recognition`` (Fast Data Science; DrugBank,
MeSH and NHS names).

All offsets are characters into the sentence, half-open ``[start, end)``.

References
----------
Lafferty, McCallum & Pereira (2001), "Conditional random fields", ICML.
Sun et al. (2022), "PHEE: A dataset for pharmacovigilance event extraction from
text", EMNLP, section 4 (sequence-labelling baseline over word tokens).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from functools import lru_cache

__all__ = [
    "TOKEN_PATTERN",
    "tokenize",
    "word_shape",
    "drug_flags",
    "sentence_features",
    "extra_features",
    "EXTRAS",
]

EXTRAS = ("window3", "trigram", "drugdist", "drugside")
"""Optional feature groups of :func:`sentence_features` (all on by default)."""

TOKEN_PATTERN = re.compile(r"\d+(?:[.,]\d+)*|[^\W\d_]+|[^\w\s]|_")
"""Regular expression of one token: a number, a run of letters, or one other character."""

_SHAPE_SUBS = (
    (re.compile(r"[A-Z]"), "X"),
    (re.compile(r"[a-z]"), "x"),
    (re.compile(r"\d"), "d"),
)
_REPEAT = re.compile(r"(.)\1+")


def tokenize(text: str) -> list[tuple[int, int]]:
    """Word tokens of ``text`` as character offsets.

    Parameters
    ----------
    text : str
        One sentence (or any text).

    Returns
    -------
    list of (int, int)
        ``(start, end)`` character offsets, half-open, in text order; whitespace is
        never part of a token. Empty for empty or blank text.

    Examples
    --------
    >>> [("A 54-year-old man"[s:e]) for s, e in tokenize("A 54-year-old man")]
    ['A', '54', '-', 'year', '-', 'old', 'man']
    """
    return [(m.start(), m.end()) for m in TOKEN_PATTERN.finditer(text)]


@lru_cache(maxsize=4096)
def has_gazetteer_drug(text: str) -> bool:
    """True if the drug-name gazetteer (:func:`drug_flags`) finds a drug in ``text``.

    Cached (4,096 sentences): a model's evidence rules and the sentence gate
    (:mod:`clinex.pv.gate`) ask it of the same sentence.

    Parameters
    ----------
    text : str
        One sentence; tokenised with :func:`tokenize`.
    """
    toks = tokenize(text)
    return any(drug_flags([text[s:e] for s, e in toks]))


@lru_cache(maxsize=65536)
def word_shape(word: str) -> str:
    """Collapsed word shape: ``Paclitaxel`` -> ``Xx``, ``5.0`` -> ``d.d``.

    Upper-case letters become ``X``, lower-case ``x``, digits ``d``; runs of the same
    symbol collapse to one (Collins 2002's "brief word class").
    """
    shape = word
    for pattern, sub in _SHAPE_SUBS:
        shape = pattern.sub(sub, shape)
    return _REPEAT.sub(r"\1", shape)


def drug_flags(words: Sequence[str]) -> list[str]:
    """Mark the tokens that the drug-name gazetteer finds.

    Uses :func:`clinex.pv.gazetteer.find_drugs` (the dictionary of
    ``drug-named-entity-recognition``: exact, case-insensitive match of one- and
    two-token drug names and their synonyms; no network).

    Parameters
    ----------
    words : sequence of str
        Token texts of one sentence.

    Returns
    -------
    list of str
        One flag per token: ``"B"`` (first token of a drug name), ``"I"`` (inside),
        or ``""`` (no drug).
    """
    flags = [""] * len(words)
    if not words:
        return flags
    from clinex.pv.gazetteer import find_drugs

    for _data, start, end in find_drugs(list(words)):
        if flags[start] == "":
            flags[start] = "B"
        for i in range(start + 1, min(end, len(words))):
            if flags[i] == "":
                flags[i] = "I"
    return flags


@lru_cache(maxsize=65536)
def _token_features(word: str) -> tuple[str, ...]:
    """Features of one token that do not depend on its neighbours (cached)."""
    low = word.lower()
    feats = [
        "w=" + low,
        "sh=" + word_shape(word),
        "p2=" + low[:2],
        "p3=" + low[:3],
        "p4=" + low[:4],
        "s2=" + low[-2:],
        "s3=" + low[-3:],
        "s4=" + low[-4:],
        "len=" + (str(len(word)) if len(word) < 6 else "6+"),
    ]
    if word.isupper() and len(word) > 1:
        feats.append("upper")
    if word[:1].isupper():
        feats.append("title")
    if word.isdigit():
        feats.append("digit")
    if not word[:1].isalnum():
        feats.append("punct")
    return tuple(feats)


def _bucket(d: int) -> str:
    """Signed distance in tokens, bucketed: exact up to 3, then 4-6, 7+."""
    a = abs(d)
    sign = "-" if d < 0 else "+"
    return sign + (str(a) if a <= 3 else "4-6" if a <= 6 else "7+")


def sentence_features(
    text: str,
    tokens: Sequence[tuple[int, int]],
    drugs: Sequence[str] | None = None,
    extras: Collection[str] = EXTRAS,
) -> list[list[str]]:
    """CRF features of every token of one sentence.

    Parameters
    ----------
    text : str
        The sentence.
    tokens : sequence of (int, int)
        Token offsets from :func:`tokenize`, length ``n``.
    drugs : sequence of str, optional
        Gazetteer flags from :func:`drug_flags` (length ``n``); computed when None.
    extras : collection of str, default all of :data:`EXTRAS`
        Optional feature groups: ``"window3"`` (words at -3 and +3), ``"trigram"``
        (previous, own and next word), ``"drugdist"`` (bucketed distance to the
        nearest gazetteer drug), ``"drugside"`` (side of that drug combined with
        the word). A model stores the groups it was trained with.

    Returns
    -------
    list of list of str
        ``n`` lists of binary feature names: the token's own features, the lower-cased
        words and shapes at offsets -2..+2, word bigrams with the neighbours, the
        gazetteer flag of the token and its neighbours, the relative position in the
        sentence (fifths), ``BOS``/``EOS`` marks, and the ``extras`` groups.

    References
    ----------
    Window and affix features follow the CoNLL-style CRF feature sets of
    Okazaki's CRFsuite tutorial (chunking / NER examples).
    """
    words = [text[s:e] for s, e in tokens]
    n = len(words)
    if drugs is None:
        drugs = drug_flags(words)
    lows = [w.lower() for w in words]
    shapes = [word_shape(w) for w in words]
    unknown = set(extras) - set(EXTRAS)
    if unknown:
        raise ValueError(f"unknown feature groups {sorted(unknown)}; known: {', '.join(EXTRAS)}")
    out: list[list[str]] = []
    for i in range(n):
        feats = ["bias", *(_token_features(words[i]))]
        feats.append("pos=" + str(5 * i // max(n, 1)))
        if drugs[i]:
            feats.append("drug=" + drugs[i])
        for off in (-2, -1, 1, 2):
            j = i + off
            if 0 <= j < n:
                feats.append(f"w[{off}]=" + lows[j])
                feats.append(f"sh[{off}]=" + shapes[j])
                if drugs[j]:
                    feats.append(f"drug[{off}]")
            elif off in (-1, 1):
                feats.append("BOS" if off < 0 else "EOS")
        if i > 0:
            feats.append("bi[-1]=" + lows[i - 1] + "|" + lows[i])
        if i + 1 < n:
            feats.append("bi[+1]=" + lows[i] + "|" + lows[i + 1])
        if i > 0:
            feats.append("s3[-1]=" + lows[i - 1][-3:])
        if i + 1 < n:
            feats.append("s3[+1]=" + lows[i + 1][-3:])
        out.append(feats)
    if extras:
        for feats, more in zip(out, _extra(lows, drugs, extras)):
            feats.extend(more)
    return out


def extra_features(
    text: str,
    tokens: Sequence[tuple[int, int]],
    drugs: Sequence[str],
    extras: Collection[str],
) -> list[list[str]]:
    """Only the ``extras`` feature groups of each token (see :func:`sentence_features`).

    ``sentence_features(..., extras=A + B)`` holds, per token, the same features as
    ``sentence_features(..., extras=A)`` plus ``extra_features(..., B)``; a model
    that needs both sets computes the second one this way.

    Raises
    ------
    ValueError
        If a group is not in :data:`EXTRAS`.
    """
    unknown = set(extras) - set(EXTRAS)
    if unknown:
        raise ValueError(f"unknown feature groups {sorted(unknown)}; known: {', '.join(EXTRAS)}")
    return _extra([text[s:e].lower() for s, e in tokens], drugs, extras)


def _extra(lows: Sequence[str], drugs: Sequence[str], extras: Collection[str]) -> list[list[str]]:
    n = len(lows)
    use_w3, use_tri = "window3" in extras, "trigram" in extras
    use_dist, use_side = "drugdist" in extras, "drugside" in extras
    drug_at = [i for i in range(n) if drugs[i]]
    out: list[list[str]] = []
    for i in range(n):
        feats: list[str] = []
        if not drugs[i] and drug_at and (use_dist or use_side):
            near = min(drug_at, key=lambda j: abs(j - i))
            if use_dist:
                feats.append("drugdist=" + _bucket(near - i))
            if use_side:
                feats.append("drugside=" + ("R" if near > i else "L") + "|" + lows[i])
        if use_w3:
            for off in (-3, 3):
                j = i + off
                if 0 <= j < n:
                    feats.append(f"w[{off}]=" + lows[j])
        if use_tri and 0 < i < n - 1:
            feats.append("tri=" + lows[i - 1] + "|" + lows[i] + "|" + lows[i + 1])
        out.append(feats)
    return out
