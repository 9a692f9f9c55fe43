"""Locate the text a model returns in the source text: every offset clinex gives is real.

A model answers with quotes (a trigger, an argument, a supporting sentence), never
with offsets. :func:`ground` finds each quote in the source:

1. **exact**: the quote as it is, then the quote with any run of whitespace matching
   any run and letter case ignored (a model often re-flows line breaks or changes
   the case of a sentence start); a quote that starts or ends with a letter or digit
   must start or end on a word boundary there ("no" is not found inside "know"). Of several occurrences the one inside the
   ``window`` (the sentence, section or record the prompt showed) and nearest the
   ``hint`` offset (e.g. the event's trigger) wins; then the first.
2. **fuzzy**: :func:`rapidfuzz.fuzz.partial_ratio_alignment` of the lower-cased quote
   against the window (then the whole text); accepted when the score reaches
   :data:`FUZZY_THRESHOLD` *and* the numbers of the quote equal the numbers of the
   matched text (digit runs, in order: "INR rose to 9" never grounds to "INR rose to
   8", however high the score), and the aligned stretch is trimmed to whole words.

Occurrences listed in ``avoid`` (spans already taken, e.g. the trigger of an earlier
event with the same word) lose to any other occurrence.

A quote found neither way is *ungrounded*: callers drop it and count it
(:class:`GroundingStats`), so an invented span never reaches an output.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field

__all__ = ["FUZZY_THRESHOLD", "MIN_FUZZY_CHARS", "Grounding", "GroundingStats", "ground"]

FUZZY_THRESHOLD = 90.0
"""Least :func:`rapidfuzz.fuzz.partial_ratio_alignment` score (0-100) of a fuzzy match.
clinex's own choice: at 90 a quote may differ from the text by about one character in
ten (a dropped hyphen, a changed number format, British/American spelling), which is
what models do when they copy; at 80 (the threshold RoBuster-style evidence scoring
uses, :mod:`clinex.rob.answer_agreement`) short quotes start to land on the wrong
word."""

MIN_FUZZY_CHARS = 4
"""Quotes shorter than this are only matched exactly: a fuzzy three-letter match is
almost always somewhere wrong (own choice)."""

_WORD = re.compile(r"\w")
_DIGITS = re.compile(r"\d+")


@dataclass(frozen=True)
class Grounding:
    """Where a quote was found.

    Attributes
    ----------
    start, end : int
        Half-open character offsets into the source text.
    method : {"exact", "exact-normalised", "fuzzy"}
    score : float
        100 for exact matches, the rapidfuzz score for fuzzy ones.
    """

    start: int
    end: int
    method: str
    score: float


@dataclass
class GroundingStats:
    """Counts of quotes grounded and dropped (thread-safe)."""

    grounded: int = 0
    fuzzy: int = 0
    ungrounded: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, g: Grounding | None) -> None:
        """Count one result of :func:`ground`."""
        with self._lock:
            if g is None:
                self.ungrounded += 1
            else:
                self.grounded += 1
                self.fuzzy += g.method == "fuzzy"

    def as_dict(self) -> dict[str, int]:
        return {"grounded": self.grounded, "fuzzy": self.fuzzy, "ungrounded": self.ungrounded}


def _pick(starts: list[tuple[int, int]], window: tuple[int, int] | None, hint: int | None,
          avoid: frozenset[tuple[int, int]] = frozenset()) -> tuple[int, int]:
    free = [se for se in starts if se not in avoid]
    starts = free or starts
    if window is not None:
        inside = [se for se in starts if se[0] >= window[0] and se[1] <= window[1]]
        starts = inside or starts
    if hint is not None:
        return min(starts, key=lambda se: (abs(se[0] - hint), se[0]))
    return starts[0]


def _trim(text: str, start: int, end: int) -> tuple[int, int]:
    """Shrink ``[start, end)`` to whole words (and no outer spaces or punctuation)."""
    while start < end and not _WORD.match(text[start]):
        start += 1
    while end > start and not _WORD.match(text[end - 1]):
        end -= 1
    # extend a cut word to its edges
    while start > 0 and start < end and _WORD.match(text[start - 1]) and _WORD.match(text[start]):
        start -= 1
    while end < len(text) and end > start and _WORD.match(text[end]) and _WORD.match(text[end - 1]):
        end += 1
    return start, end


def ground(
    text: str,
    quote: str,
    *,
    window: tuple[int, int] | None = None,
    hint: int | None = None,
    threshold: float = FUZZY_THRESHOLD,
    avoid: frozenset[tuple[int, int]] | set[tuple[int, int]] = frozenset(),
) -> Grounding | None:
    """Find ``quote`` in ``text``.

    Parameters
    ----------
    text : str
        The source text (offsets point into it).
    quote : str
        What the model returned.
    window : (int, int), optional
        Half-open character range the prompt showed; matches inside it win, and the
        fuzzy search looks there first.
    hint : int, optional
        An offset the quote is expected near (another span of the same answer).
    threshold : float, default :data:`FUZZY_THRESHOLD`
        Least fuzzy score; ``> 100`` turns fuzzy matching off.
    avoid : set of (int, int), optional
        ``(start, end)`` spans already taken: an exact occurrence there is chosen
        only when no other occurrence exists.

    Returns
    -------
    Grounding or None
        None when the quote is empty or found neither exactly nor fuzzily.

    Examples
    --------
    >>> g = ground("Rash after aspirin. Aspirin stopped.", "aspirin stopped")
    >>> (g.start, g.end, g.method)
    (20, 35, 'exact-normalised')
    >>> ground("Rash after aspirin.", "penicillin") is None
    True
    """
    q = quote.strip()
    if not q:
        return None
    left = r"(?<!\w)" if _WORD.match(q[0]) else ""
    right = r"(?!\w)" if _WORD.match(q[-1]) else ""
    exact = [(m.start(), m.end()) for m in re.finditer(left + re.escape(q) + right, text)]
    if exact:
        s, e = _pick(exact, window, hint, frozenset(avoid))
        return Grounding(s, e, "exact", 100.0)
    words = q.split()
    pattern = left + r"\s+".join(re.escape(w) for w in words) + right
    loose = [(m.start(), m.end()) for m in re.finditer(pattern, text, flags=re.IGNORECASE)]
    if loose:
        s, e = _pick(loose, window, hint, frozenset(avoid))
        return Grounding(s, e, "exact-normalised", 100.0)
    if len(q) < MIN_FUZZY_CHARS or threshold > 100:
        return None
    from rapidfuzz import fuzz

    needle = " ".join(words).lower()
    areas = [window] if window is not None else []
    if window is None or (window[0], window[1]) != (0, len(text)):
        areas.append((0, len(text)))
    for lo, hi in areas:
        hay = text[lo:hi]
        if not hay:
            continue
        folded = hay.lower()
        if len(folded) != len(hay):  # a character whose lower case is longer: keep offsets exact
            folded = hay
        al = fuzz.partial_ratio_alignment(needle, folded)
        if al is None or al.score < threshold:
            continue
        s, e = _trim(text, lo + al.dest_start, lo + al.dest_end)
        want = _DIGITS.findall(q)
        if e > s and want != _DIGITS.findall(text[s:e]):
            # the alignment may stop short of a last number ("... on day 3"): widen it word by
            # word up to about the quote's length; a changed number is another fact, not a
            # copying slip, and is never grounded
            limit = min(hi, s + len(needle) + len(needle) // 10 + 1)
            ends = [m.end() for m in re.finditer(r"\w+", text[e:limit])]
            widened = [e + k for k in ends if want == _DIGITS.findall(text[s : e + k])]
            if not widened:
                continue
            e = widened[0]
        if e > s:
            return Grounding(s, e, "fuzzy", round(float(al.score), 2))
    return None
