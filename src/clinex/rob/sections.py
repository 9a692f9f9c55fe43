"""Section detection for trial reports: Abstract, Introduction, Methods, Results, ...

Rule-based and layout-free, so that it works on text from PDFs (where line breaks
may be lost and a heading is glued to the next word, "MethodsStudy design"), on
plain text and on JATS. A heading is one of the names in :data:`SECTION_NAMES`
(IMRaD headings and the usual back matter, optionally numbered "2." / "II.") that

* stands at the start of the text, a line, or after a sentence end
  (``.``, ``:``, ``;``, ``)``, ``]``, a digit, or two spaces), and
* is followed by a line break, a colon, the end of the text, or directly by an
  upper-case letter / digit (a glued PDF heading), never by a space and a
  lower-case word ("Results will be expressed ..." is not a heading).

Sub-headings of a structured abstract ("Background:", "Methods:" right after
"Abstract") stay inside the abstract; everything after "References" is references.

References
----------
Sollaci LB, Pereira MG. The introduction, methods, results, and discussion (IMRAD)
structure: a fifty-year survey. J Med Libr Assoc 2004;92(3):364-367.
CONSORT 2010 statement, Schulz KF et al. BMJ 2010;340:c332 (trial report sections).
"""

from __future__ import annotations

import re

from clinex.text import Document, Fragment, Span

__all__ = ["SECTION_NAMES", "FRONT", "detect_sections", "find_headings"]

#: Section label -> heading spellings (regular expressions, matched case-sensitively
#: in Title case or in UPPER CASE).
SECTION_NAMES: dict[str, tuple[str, ...]] = {
    "abstract": ("Abstract", "Summary"),
    "introduction": ("Introduction", "Background"),
    "methods": (
        "Methods?(?:/[Dd]esign)?",
        "Materials? and [Mm]ethods",
        "Patients and [Mm]ethods",
        "Subjects and [Mm]ethods",
        "Methodology",
    ),
    "results": ("Results",),
    "discussion": ("Discussion", "Comment"),
    "conclusion": ("Conclusions?",),
    "acknowledgements": ("Acknowledge?ments?",),
    "funding": ("Funding",),
    "references": ("References", "Bibliography", "Literature [Cc]ited"),
}
#: Label of the text before the first heading (title, authors, affiliations).
FRONT = "front"

#: How far (characters) after "Abstract" sub-headings are read as part of it.
ABSTRACT_WINDOW = 4000

_NUMBER = r"(?:(?:\d{1,2}(?:\.\d{1,2})*|[IVX]{1,4})\.?\s+)?"


def _pattern() -> re.Pattern[str]:
    alts = []
    for label, names in SECTION_NAMES.items():
        variants = []
        for n in names:
            variants.append(n)
            plain = re.sub(r"\(\?:/\[Dd\]esign\)\?", "", n).replace("?", "")
            if re.fullmatch(r"[A-Za-z ]+", plain):
                variants.append(plain.upper())
        alts.append(f"(?P<{label}>{'|'.join(variants)})")
    # the look-ahead lets the scan skip lower-case positions fast
    return re.compile(rf"(?=[A-Z\d])(?<![A-Za-z]){_NUMBER}(?:{'|'.join(alts)})")


_HEADING = _pattern()


def _starts_ok(text: str, i: int) -> bool:
    if i == 0:
        return True
    j = i - 1
    spaces = 0
    while j >= 0 and text[j] in " \t":
        j -= 1
        spaces += 1
    if j < 0 or text[j] in "\n\r\f":
        return True
    if text[j] in ".:;)]" or text[j].isdigit():
        return True
    return spaces >= 2


def _ends_ok(text: str, end: int) -> tuple[bool, bool]:
    """(is a heading end, followed by a colon)."""
    if end >= len(text):
        return True, False
    c = text[end]
    if c == ":":
        return True, True
    if c in "\n\r\f":
        return True, False
    if c.isupper() or c.isdigit():
        return True, False
    if c in " \t":
        k = end
        while k < len(text) and text[k] in " \t":
            k += 1
        return (k >= len(text) or text[k] in "\n\r\f"), False
    return False, False


def find_headings(text: str) -> list[tuple[int, int, str]]:
    """Headings found in ``text`` as ``(start, end, label)``, in text order.

    Parameters
    ----------
    text : str

    Returns
    -------
    list of (int, int, str)
        Character offsets (half-open) of each heading and its section label.
    """
    found: list[tuple[int, int, str]] = []
    current = None
    abstract_at = -1
    for m in _HEADING.finditer(text):
        start, end = m.start(), m.end()
        if not _starts_ok(text, start):
            continue
        ok, colon = _ends_ok(text, end)
        if not ok:
            continue
        label = m.lastgroup or ""
        if current == "references":
            break
        if (current == "abstract" and label != "abstract" and start - abstract_at < ABSTRACT_WINDOW
                and (colon or label in {"introduction", "methods", "results", "conclusion"})
                and not _is_line_heading(text, start, end)):
            continue
        if label == current:
            continue
        if label == "abstract":
            abstract_at = start
        found.append((start, end, label))
        current = label
    return found


def _is_line_heading(text: str, start: int, end: int) -> bool:
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", end)
    line_end = len(text) if line_end == -1 else line_end
    return text[line_start:start].strip() == "" and text[end:line_end].strip(" :\t") == "" \
        and "\n" in text[max(0, start - 1): start + 1] + text[end: end + 1]


def detect_sections(document: Document | str) -> list[Span]:
    """Section spans of a trial report.

    Parameters
    ----------
    document : Document or str
        The text (a Document's ``text`` is used).

    Returns
    -------
    list of Span
        Contiguous, non-overlapping spans covering the text from its first
        non-blank character, each from its heading to the next heading, labelled
        with a key of :data:`SECTION_NAMES` or :data:`FRONT` (text before the first
        heading); empty for blank text. Without any heading the whole text is
        one ``"front"`` span.
    """
    text = document.text if isinstance(document, Document) else document
    first = len(text) - len(text.lstrip())
    if first >= len(text):
        return []
    cuts = [(first, FRONT)]
    for start, _, label in find_headings(text):
        if start <= cuts[-1][0]:
            cuts[-1] = (cuts[-1][0], label)
        else:
            cuts.append((start, label))
    spans = []
    for i, (start, label) in enumerate(cuts):
        end = cuts[i + 1][0] if i + 1 < len(cuts) else len(text)
        while end > start and text[end - 1].isspace():
            end -= 1
        if end > start:
            spans.append(Span(fragments=(Fragment(start=start, end=end, text=text[start:end]),),
                              label=label, source="clinex.rob.sections"))
    return spans
