"""The sentence gate's hashed text features, computed without importing scikit-learn.

The gate's text model (:class:`clinex.pv.gate.SentenceGate`) is fitted on two
scikit-learn ``HashingVectorizer`` blocks: word 1-2-grams and ``char_wb`` 3-5-grams,
``2**18`` features each, ``alternate_sign=False``, L2-normalised per block. At run
time only the dot product of those rows with the fitted weights is needed, and
importing scikit-learn (with scipy.stats under it) costs about 1 s of every
``clinex pv extract`` start-up. :func:`hashed_logits` computes the same dot product
with the MurmurHash3 of the ``murmurhash`` package (spaCy's own dependency, the
same x86 32-bit hash with seed 0 as scikit-learn's ``murmurhash3_bytes_s32``).

The analyzers follow scikit-learn 1.x ``sklearn/feature_extraction/text.py``
(``_VectorizerMixin._word_ngrams``, ``_char_wb_ngrams``, default ``token_pattern``
and ``lowercase=True``) and the index rule of ``_hashing_fast.pyx`` (``abs(h) %
n_features``, with ``h = -2**31`` mapped as there); ``tests/pv/test_pv_gate.py`` checks
the logits against scikit-learn's own transform on every PHEE dev sentence.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

__all__ = ["word_ngrams", "char_wb_ngrams", "hashed_indices", "hashed_logits"]

#: scikit-learn's default ``token_pattern``.
_TOKEN = re.compile(r"(?u)\b\w\w+\b")
#: scikit-learn's ``_white_spaces`` (runs of two or more white-space characters).
_WHITE_SPACES = re.compile(r"\s\s+")
_INT32_MIN = -(2**31)


def word_ngrams(text: str, max_n: int = 2) -> list[str]:
    """Word 1..``max_n``-grams of the lower-cased ``text`` (scikit-learn's ``analyzer="word"``).

    Parameters
    ----------
    text : str
    max_n : int, default 2

    Returns
    -------
    list of str
        The tokens (``\\b\\w\\w+\\b``), then the 2-grams ... joined by one space.
    """
    tokens = _TOKEN.findall(text.lower())
    grams = list(tokens)
    for n in range(2, min(max_n, len(tokens)) + 1):
        grams += [" ".join(tokens[i : i + n]) for i in range(len(tokens) - n + 1)]
    return grams


def char_wb_ngrams(text: str, min_n: int = 3, max_n: int = 5) -> list[str]:
    """Character n-grams inside space-padded words (scikit-learn's ``analyzer="char_wb"``).

    A word shorter than ``n`` yields itself (padded) once and no longer n-grams.
    """
    grams: list[str] = []
    for w in _WHITE_SPACES.sub(" ", text.lower()).split():
        w = f" {w} "
        size = len(w)
        for n in range(min_n, max_n + 1):
            grams += [w[i : i + n] for i in range(max(1, size - n + 1))]
            if size <= n:
                break
    return grams


def hashed_indices(features: Sequence[str], n_features: int) -> tuple[Any, Any]:
    """The hashed columns of ``features`` and how many features fall in each.

    Parameters
    ----------
    features : sequence of str
    n_features : int
        Number of columns (``2**18`` for the gate).

    Returns
    -------
    (numpy.ndarray, numpy.ndarray)
        Sorted distinct column indices, shape ``(k,)``, and their counts (float64),
        shape ``(k,)``; both empty for no features. The column of a feature is
        ``abs(murmurhash3_32(f)) % n_features`` (``h = -2**31`` mapped as scikit-learn
        does).
    """
    import numpy as np
    from murmurhash.mrmr import hash as murmur

    h = np.fromiter((murmur(f) for f in features), dtype=np.int64, count=len(features))
    cols = np.where(h == _INT32_MIN, (2147483647 - (n_features - 1)) % n_features, np.abs(h) % n_features)
    cols, counts = np.unique(cols, return_counts=True)
    return cols, counts.astype(np.float64)


def _block_dot(features: list[str], coef: Any, offset: int, n_features: int) -> float:
    """``x @ coef[offset:offset + n_features]`` for the L2-normalised count vector of ``features``."""
    import numpy as np

    if not features:
        return 0.0
    cols, counts = hashed_indices(features, n_features)
    return float(counts @ np.asarray(coef[offset + cols], dtype=np.float64)) / math.sqrt(float(counts @ counts))


def hashed_logits(texts: Sequence[str], coef: Any, intercept: float, n_features: int) -> list[float]:
    """The gate text model's logit of each text.

    Parameters
    ----------
    texts : sequence of str
    coef : numpy.ndarray, shape (2 * n_features,)
        The word block's weights, then the character block's.
    intercept : float
    n_features : int
        Columns per block.

    Returns
    -------
    list of float
        ``x_word @ coef[:n] + x_char @ coef[n:] + intercept`` per text, where each block
        is the L2-normalised count vector (an empty block contributes 0).
    """
    return [
        _block_dot(word_ngrams(text), coef, 0, n_features)
        + _block_dot(char_wb_ngrams(text), coef, n_features, n_features)
        + float(intercept)
        for text in texts
    ]
