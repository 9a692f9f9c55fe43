"""Sections and sentences of a trial report: :func:`add_structure`.

Sections by :func:`clinex.rob.sections.detect_sections` (RoB 2's heading list);
sentences by :func:`clinex.text.split_sentences` (which also breaks at blank lines,
i.e. at page joins), cut again at section starts and after a heading (a structured
abstract's sub-headings included) that ends its line or has a colon, so that "Methods\nPatients were ..." gives the sentence
"Patients were ...". Used by :func:`clinex.rob.formats.load.load_document` and
:func:`clinex.rob.formats.tagtog.read_tagtog_document`.
"""

from __future__ import annotations

import bisect

from clinex.text import Document, Span, split_sentences

__all__ = ["add_structure"]


def add_structure(doc: Document, *, sentences: bool = True, sections: bool = True) -> Document:
    """Fill a document's sections and sentences where they are empty.

    Sections by :func:`clinex.rob.sections.detect_sections`; sentences by
    :func:`clinex.text.split_sentences`, cut again at section starts and after
    headings that end their line or carry a colon.

    Parameters
    ----------
    doc : Document
    sentences, sections : bool
        Which to fill.

    Returns
    -------
    Document
        A copy (or ``doc`` itself when nothing was to be done).
    """
    update: dict = {}
    cuts: set[int] = set()
    if sections:
        from clinex.rob.sections import detect_sections, find_headings

        if not doc.sections:
            update["sections"] = tuple(detect_sections(doc))
        for s in update.get("sections", doc.sections):
            cuts.add(s.start)
        for _, end, _ in find_headings(doc.text, parts=True):  # abstract parts too
            if doc.text[end : end + 1] in ("\n", "\r", "\f", ":"):
                cuts.add(end + (doc.text[end] == ":"))
    if sentences and not doc.sentences:
        update["sentences"] = tuple(_cut(doc.text, split_sentences(doc.text), cuts))
    return doc.model_copy(update=update) if update else doc


def _cut(text: str, sentences: list[Span], cuts: set[int]) -> list[Span]:
    """Split sentences at section starts and heading ends (a heading is no sentence's head)."""
    if not cuts:
        return sentences
    ordered = sorted(cuts)
    out: list[Span] = []
    for s in sentences:
        start, end = s.start, s.end
        lo = bisect.bisect_right(ordered, start)
        hi = bisect.bisect_left(ordered, end, lo)
        inner = ordered[lo:hi]  # cuts strictly inside the sentence; O(log n) per sentence
        if not inner:
            out.append(s)
            continue
        bounds = [start, *inner, end]
        for a, b in zip(bounds, bounds[1:]):
            while a < b and text[a].isspace():
                a += 1
            while b > a and text[b - 1].isspace():
                b -= 1
            if b > a:
                out.append(Span.from_offsets(text, (a, b)))
    return out
