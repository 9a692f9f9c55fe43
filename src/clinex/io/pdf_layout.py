"""Reading order of a PDF page's text runs, and the page text with line-end hyphens decided.

The layout half of :func:`clinex.io.pdf.read_pdf` (steps 0-3 of
:mod:`clinex.io.pdf`'s docstring), pure Python on :class:`_Run` boxes in PDF points:
:func:`_merge_runs` joins the runs of one text line that a producer drew apart,
:func:`_blocks` finds a column gutter (:func:`_gutter`) and groups the runs into
blocks of lines in reading order, :func:`_keep_hyphen` counts a document's words
and :func:`_join_page` writes a page's text, rejoining words broken at a line end
(:func:`keep_line_hyphen`). The layout is ``O(n log n)`` in the runs of a page.

References
----------
Breuel TM. High performance document layout analysis. Proc. Symposium on Document
Image Understanding Technology 2003 (whitespace gutters as column separators).
Chicago Manual of Style, 17th ed., 7.40-7.47 (word division).
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections import Counter
from dataclasses import dataclass
from itertools import accumulate

__all__ = ["COMPOUND_HEADS", "GUTTER_ZONE", "JOIN_GAP", "JOIN_OVERLAP", "MIN_GUTTER", "PARAGRAPH_GAP",
           "keep_line_hyphen"]

#: Where (fraction of page width) a column gutter may lie.
GUTTER_ZONE = (0.30, 0.70)
#: A vertical gap larger than this many line heights starts a new paragraph.
PARAGRAPH_GAP = 0.8
#: Smallest gutter width, in PDF points (1/72 inch).
MIN_GUTTER = 4.0

_HYPHENS = "-\u00ad\u2010\x02"
_WORD = re.compile(r"[^\W\d_]+(?:[-\u2010][^\W\d_]+)*")


@dataclass
class _Run:
    """A text run: its box (PDF points, y upwards) and its text."""

    left: float
    bottom: float
    right: float
    top: float
    text: str

    @property
    def height(self) -> float:
        """The box's height (at least 1e-6, so that ratios are defined)."""
        return max(self.top - self.bottom, 1e-6)


#: Consecutive runs of one line are one run when the second starts at most this many
#: line heights right of the first's end. Own choice, measured on Chromium's justified
#: text (a text object per word and kerning pair): 94-97 % of the gaps between such
#: runs are under 0.8 (10 pt Liberation and DejaVu Serif justified to 225 and 315 pt,
#: about 2,850 gaps each); a column gutter is 1 em (about 1.1 line heights) and more,
#: and producers draw one column after the other.
JOIN_GAP = 0.8
#: ... or overlaps its end by at most this many line heights (a kerning pair, "AV";
#: own choice: kerning pairs overlap by under a tenth of an em).
JOIN_OVERLAP = 0.3


def _merge_runs(runs: list[_Run]) -> list[_Run]:
    """Join runs that PDFium reads one after the other on one line, less than
    :data:`JOIN_GAP` line heights apart, into one run (text stripped).

    Producers such as Chromium (Skia) start a text object at every kerning pair or
    justified word ("four", ". ", "Allocation ", "was "); left apart, their tiny
    boxes (a full stop is 1.3 pt tall) put spaces before full stops and make the
    word gaps of a justified paragraph look like a column gutter. Two runs are
    joined when the second follows the first in PDFium's order, their vertical
    extents overlap by half the smaller height (as in :func:`_lines`), and the
    second starts between :data:`JOIN_OVERLAP` line heights left of and
    :data:`JOIN_GAP` line heights right of the first's end (line height: the
    taller run). A space is put between them where PDFium has one (a space
    character or one PDFium generated from the glyph advances) or where the gap is
    wider than half the line height; otherwise they touch ("four" + "."). (Text
    drawn twice on itself, for fake bold, PDFium already reads once.) Own rules,
    checked on Chromium and reportlab PDFs (``tests/io/test_io_pdf.py``).
    """
    out: list[_Run] = []
    for r in runs:
        text = r.text.strip()
        if not text:  # a space alone: a word break after the run before
            if out and not out[-1].text.endswith(" "):
                out[-1].text += " "
            continue
        if out:
            p = out[-1]
            h = max(p.height, r.height)
            gap = r.left - p.right
            overlap = min(p.top, r.top) - max(p.bottom, r.bottom)
            if overlap >= 0.5 * min(p.height, r.height) and -JOIN_OVERLAP * h <= gap <= JOIN_GAP * h:
                space = p.text[-1:].isspace() or r.text[:1].isspace() or gap > 0.5 * h
                p.text = p.text.rstrip() + (" " if space else "") + r.text.lstrip()
                p.left, p.bottom = min(p.left, r.left), min(p.bottom, r.bottom)
                p.right, p.top = max(p.right, r.right), max(p.top, r.top)
                continue
        out.append(_Run(r.left, r.bottom, r.right, r.top, r.text.lstrip()))
    for r in out:
        r.text = r.text.rstrip()
    return out


def _gutter(runs: list[_Run], width: float) -> float | None:
    """x of the column gutter, or None for a one-column page (see module docstring)."""
    if len(runs) < 4:
        return None
    zone_lo, zone_hi = GUTTER_ZONE[0] * width, GUTTER_ZONE[1] * width
    # piecewise-constant count of runs crossing x over the zone (sweep over run edges)
    events = [(zone_lo, 0)]
    for r in runs:
        if r.right > zone_lo and r.left < zone_hi:
            events.append((max(r.left, zone_lo), 1))
            events.append((min(r.right, zone_hi), -1))
    events.append((zone_hi, 0))
    events.sort()
    crossing = 0
    best: tuple[int, float, float, float] | None = None  # (count, -width, lo, hi)
    for (x0, d), (x1, _) in zip(events, events[1:]):
        crossing += d
        if x1 - x0 >= MIN_GUTTER:
            cand = (crossing, -(x1 - x0), x0, x1)
            if best is None or cand[:2] < best[:2]:
                best = cand
    if best is None:
        return None
    count, _, lo, hi = best
    x = (lo + hi) / 2
    left = [r for r in runs if r.right <= x]
    right = [r for r in runs if r.left >= x]
    if count * 3 > len(left) + len(right):
        return None
    # left runs with a right run at the same height (vertical extents overlap):
    # right runs sorted by bottom, running maximum of their tops (n log n, not n^2)
    spans = sorted((b.bottom, b.top) for b in right if b.top > b.bottom)
    bottoms = [lo for lo, _ in spans]
    max_top = list(accumulate((hi for _, hi in spans), max))
    paired = 0
    for a in left:
        if a.top > a.bottom:
            k = bisect_left(bottoms, a.top)  # right runs starting below a's top
            if k and max_top[k - 1] > a.bottom:
                paired += 1
                if paired >= 2:
                    return x
    return None


def _lines(runs: list[_Run]) -> list[list[_Run]]:
    lines: list[list[_Run]] = []
    # the last line's lowest bottom, highest top and tallest run, kept as runs join
    bottom = top = height = 0.0
    for r in sorted(runs, key=lambda r: (-r.top, r.left)):
        if lines:
            lo = max(bottom, r.bottom)
            hi = min(top, r.top)
            if hi - lo >= 0.5 * min(r.height, height):
                lines[-1].append(r)
                bottom, top, height = min(bottom, r.bottom), max(top, r.top), max(height, r.height)
                continue
        lines.append([r])
        bottom, top, height = r.bottom, r.top, r.height
    return [sorted(line, key=lambda r: r.left) for line in lines]


def _line_text(line: list[_Run]) -> str:
    parts = [line[0].text]
    for prev, cur in zip(line, line[1:]):
        if cur.left - prev.right > 0.15 * max(prev.height, cur.height):
            parts.append(" ")
        parts.append(cur.text)
    return "".join(parts)


def _blocks(runs: list[_Run], width: float) -> tuple[list[list[tuple[str, float, float]]], int]:
    """Blocks (lists of (line text, top, bottom)) in reading order, and the column count."""
    x = _gutter(runs, width)
    if x is None:
        groups = [runs]
    else:
        # runs crossing the gutter, top to bottom by their middle, cut the page into
        # bands; each other run goes to the band its middle lies strictly inside
        crossing = sorted((r for r in runs if r.left < x < r.right),
                          key=lambda r: (-(r.top + r.bottom) / 2, -r.top))
        neg_cuts = [-(r.top + r.bottom) / 2 for r in crossing]  # ascending
        bands: list[list[_Run]] = [[] for _ in range(len(crossing) + 1)]
        for r in runs:
            if r.left < x < r.right:
                continue
            neg_mid = -(r.top + r.bottom) / 2
            band = bisect_left(neg_cuts, neg_mid)
            if band < len(neg_cuts) and neg_cuts[band] == neg_mid:
                continue  # on a cut: in no band
            bands[band].append(r)
        groups = []
        for band, inside in enumerate(bands):
            groups.append([r for r in inside if r.right <= x])
            groups.append([r for r in inside if r.left >= x])
            if band < len(crossing):
                groups.append([crossing[band]])
    blocks = []
    for g in groups:
        if g:
            blocks.append([(_line_text(line), max(r.top for r in line), min(r.bottom for r in line))
                           for line in _lines(g)])
    return blocks, 1 if x is None else 2


def _join_page(blocks: list[list[tuple[str, float, float]]], keep_hyphen: _Vocabulary) -> str:
    parts: list[str] = []
    for block in blocks:
        if parts:
            parts.append("\n\n")
        prev = None
        for text, top, bottom in block:
            if prev is not None:
                ptext, ptop, pbottom = prev
                height = max(ptop - pbottom, 1e-6)
                if pbottom - top > PARAGRAPH_GAP * height:
                    parts.append("\n\n")
                elif _hyphenated(ptext, text):
                    head = _LINE_END_WORD.search(ptext).group(1)  # type: ignore[union-attr]
                    tail = re.match(r"\w+", text).group(0)  # type: ignore[union-attr]
                    parts[-1] = parts[-1][:-1]  # drop the hyphen
                    if keep_line_hyphen(head, tail, keep_hyphen):
                        parts[-1] += "-"
                    prev = (text, top, bottom)
                    parts.append(text)
                    continue
                else:
                    parts.append("\n")
            parts.append(text)
            prev = (text, top, bottom)
    return "".join(parts)


#: The word (a compound with its hyphens, "intention-to") before a line-end hyphen.
_LINE_END_WORD = re.compile(r"([^\W\d_]+(?:[-\u2010][^\W\d_]+)*)[" + _HYPHENS + r"]$")


def _hyphenated(prev: str, cur: str) -> bool:
    return (len(prev) >= 2 and prev[-1] in _HYPHENS and prev[-2].isalpha()
            and cur[:1].islower())


#: First parts of compounds that keep their hyphen at a line break ("placebo-" +
#: "controlled", "well-" + "known"): whole words that head hyphenated compounds in
#: trial reports, not prefixes that also start single words ("pre-", "co-", "sub-").
COMPOUND_HEADS = frozenset({
    "placebo", "well", "double", "single", "triple", "open", "follow", "self", "non",
    "long", "short", "time", "dose", "evidence", "intention", "computer", "block", "sex",
    "age", "high", "low", "full", "cross", "quasi", "all", "day", "week", "month", "year",
    "care", "cost", "risk", "patient", "investigator", "assessor", "outcome", "treatment",
    "health", "web", "end", "blood", "heart", "case", "group", "cluster", "one", "two",
    "three", "four", "first", "second", "third", "side", "drug", "study", "participant",
    "community", "hospital", "home", "person", "face", "hand", "real",
})

#: Word endings that are never a word of their own: a line starting with one
#: continues the word broken before it ("assign-" + "ment", "follow-" + "ing").
_SUFFIXES = frozenset({
    "ing", "ings", "ed", "er", "ers", "ly", "ness", "ment", "ments", "tion", "tions",
    "sion", "sions", "al", "ally", "ity", "ities", "ive", "ives", "ous", "able", "ible",
    "ance", "ances", "ence", "ences", "ure", "ures", "es", "s", "ation", "ations", "ised",
    "ized", "ise", "ize", "ising", "izing", "ant", "ants", "ent", "ents", "ism", "ist",
    "ists",
})


class _Vocabulary:
    """Word counts of a document, for deciding line-end hyphens (see :func:`keep_line_hyphen`)."""

    def __init__(self) -> None:
        self.hyphenated: Counter[str] = Counter()
        self.words: Counter[str] = Counter()


def _keep_hyphen(pages: list[list[list[tuple[str, float, float]]]]) -> _Vocabulary:
    """Count the document's words, leaving out the pieces around line-end hyphens."""
    vocab = _Vocabulary()
    for blocks in pages:
        for block in blocks:
            prev_broken = False
            for text, _, _ in block:
                words = _WORD.findall(text)
                broken = len(text) >= 2 and text[-1] in _HYPHENS and text[-2].isalpha()
                if prev_broken and words and text[:1].islower():
                    words = words[1:]  # the tail of the word broken at the line before
                if broken and words:
                    words = words[:-1]  # the head of a word broken at this line's end
                for w in words:
                    w = w.lower()
                    if "-" in w or "\u2010" in w:
                        vocab.hyphenated[w.replace("\u2010", "-")] += 1
                    else:
                        vocab.words[w] += 1
                prev_broken = broken
    return vocab


def keep_line_hyphen(head: str, tail: str, vocab: _Vocabulary) -> bool:
    """Whether the hyphen of ``head-`` at a line end followed by ``tail`` is a real one.

    Parameters
    ----------
    head : str
        The word before the hyphen: letters, or a compound whose parts are joined
        by hyphens ("intention-to" of "intention-to-" + "treat").
    tail : str
        The word part starting the next line.
    vocab : _Vocabulary
        The document's other words (pieces around line-end hyphens left out).

    Returns
    -------
    bool
        True to keep ``head-tail``, False to join ``headtail``. In order: the
        hyphenated form written elsewhere and the joined form never -> keep; the
        joined form written elsewhere -> join; ``tail`` a word ending
        (``_SUFFIXES``) -> join; ``head`` itself hyphenated (the break falls
        after a hyphen inside a compound: "intention-to-" + "treat",
        "end-of-" + "study") -> keep; ``head`` in :data:`COMPOUND_HEADS` -> keep;
        both parts (3+ letters) written elsewhere as words -> keep; else join (a
        broken syllable).

    References
    ----------
    The heuristics follow how typeset English breaks words: at syllables
    (hyphen dropped when rejoined) or at the hyphen of a compound (kept);
    Chicago Manual of Style, 17th ed., 7.40-7.47 (word division): a hyphenated
    compound is broken only at its hyphen. TeX does the same: a word holding an
    explicit hyphen is broken after that hyphen and not hyphenated further
    (Knuth, The TeXbook, appendix H, "Hyphenation").
    """
    h, t = head.lower().replace("\u2010", "-"), tail.lower()
    hyphenated, joined = f"{h}-{t}", h + t

    def written(word: str) -> int:
        return vocab.hyphenated.get(word, 0) if "-" in word else vocab.words.get(word, 0)

    if vocab.hyphenated.get(hyphenated) and not written(joined):
        return True
    if written(joined):
        return False
    if t in _SUFFIXES:
        return False
    if "-" in h:
        return True
    if h in COMPOUND_HEADS:
        return True
    return len(h) >= 3 and len(t) >= 3 and bool(vocab.words.get(h)) and bool(vocab.words.get(t))
