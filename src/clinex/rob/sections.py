"""Section detection for trial reports: Abstract, Introduction, Methods, Results, ...

Rule-based and layout-free, so that it works on text from PDFs (where line breaks
may be lost and a heading is glued to the next word, "MethodsStudy design"), on
plain text and on JATS. A heading is one of the names in :data:`SECTION_NAMES`
(IMRaD headings and the usual back matter, optionally numbered "2." / "II.") that

* stands at the start of the text, a line, or after a sentence end
  (``.``, ``:``, ``;``, ``)``, ``]``, a digit, or two spaces), and
* is followed by a line break, a colon, the end of the text, or directly by an
  upper-case letter / digit (a glued PDF heading), never by a space and a
  lower-case word ("Results will be expressed ..." is not a heading); a heading
  written in UPPER CASE may also be followed by spaces and an upper-case letter or
  digit (texts whose line breaks were lost: "...data structure.RESULTS The
  sample was ...", "RESULTS Subjects ...").

The heading list is data: ``clinex/resources/rob/section_headings.yaml``
(:func:`load_headings` reads and validates it, or another file given as
``headings=``). Sub-headings of a structured abstract ("Background:", "Methods:" right after
"Abstract") stay inside the abstract, up to the first heading met a second time
(the body's "Background"); everything after "References" is references.

References
----------
Sollaci LB, Pereira MG. The introduction, methods, results, and discussion (IMRAD)
structure: a fifty-year survey. J Med Libr Assoc 2004;92(3):364-367.
CONSORT 2010 statement, Schulz KF et al. BMJ 2010;340:c332 (trial report sections).
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from clinex.errors import FormatError, InputError
from clinex.io.textfile import parse_yaml
from clinex.text import Document, Fragment, Span

__all__ = [
    "DEFAULT_HEADINGS",
    "HeadingList",
    "load_headings",
    "SECTION_NAMES",
    "FRONT",
    "detect_sections",
    "find_headings",
]

#: The packaged heading list (``clinex/resources/rob/section_headings.yaml``).
DEFAULT_HEADINGS = "section_headings.yaml"


class HeadingList(BaseModel):
    """A validated heading list (see ``section_headings.yaml``).

    Attributes
    ----------
    version : int
    name : str
        Versioned name, e.g. ``"clinex.rob.sections.v1"``.
    sections : dict of str to tuple of str
        Section label -> heading spellings (regular expressions).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    version: int
    name: str
    sections: dict[str, tuple[str, ...]]


@lru_cache(maxsize=8)
def load_headings(path: str | None = None) -> HeadingList:
    """Read and validate a heading list (YAML).

    Parameters
    ----------
    path : str, optional
        A YAML file like ``section_headings.yaml``; None or ``"default"`` for the
        packaged list.

    Returns
    -------
    HeadingList

    Raises
    ------
    InputError
        No such file.
    FormatError
        Not YAML, a missing or extra key, a label that is not a lower-case word, or
        a spelling that is not a valid regular expression (label and index named).
    """
    from importlib import resources

    from pydantic import ValidationError

    if path is None or path == "default":
        where = f"clinex/resources/rob/{DEFAULT_HEADINGS}"
        raw = resources.files("clinex.resources").joinpath("rob", DEFAULT_HEADINGS).read_text("utf-8")
    else:
        if not Path(path).is_file():
            raise InputError("no such heading list", path=path)
        where, raw = path, Path(path).read_text(encoding="utf-8")
    data = parse_yaml(raw, path=where)
    try:
        headings = HeadingList.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise FormatError(err["msg"], path=where,
                          field=".".join(str(x) for x in err["loc"]) or None) from None
    for label, names in headings.sections.items():
        if not re.fullmatch(r"[a-z_]+", label):
            raise FormatError("section labels are lower-case words", path=where,
                              field=f"sections.{label}")
        if not names:
            raise FormatError("no heading spelling", path=where, field=f"sections.{label}")
        for i, n in enumerate(names):
            try:
                re.compile(n)
            except re.error as exc:
                raise FormatError(f"not a regular expression: {exc}", path=where,
                                  field=f"sections.{label}[{i}]") from None
    return headings


#: Section label -> heading spellings of the packaged list.
SECTION_NAMES: dict[str, tuple[str, ...]] = dict(load_headings().sections)
#: Label of the text before the first heading (title, authors, affiliations).
FRONT = "front"

#: How far (characters) after "Abstract" sub-headings are read as part of it.
ABSTRACT_WINDOW = 4000

_NUMBER = r"(?:(?:\d{1,2}(?:\.\d{1,2})*|[IVX]{1,4})\.?\s+)?"


@lru_cache(maxsize=8)
def _pattern(path: str | None = None) -> tuple[re.Pattern[str], dict[str, re.Pattern[str]]]:
    """The scanning pattern (case-insensitive names) and, per label, the as-written check."""
    alts = []
    exact = {}
    for label, names in load_headings(path).sections.items():
        alts.append(f"(?P<{label}>{'|'.join(names)})")
        exact[label] = re.compile("|".join(f"(?:{n})" for n in names))
    # the look-ahead lets the scan skip lower-case positions fast
    scan = re.compile(rf"(?=[A-Z\d])(?<![A-Za-z]){_NUMBER}(?i:{'|'.join(alts)})")
    return scan, exact



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
        if k >= len(text) or text[k] in "\n\r\f":
            return True, False
        # an UPPER-CASE heading whose line break was lost: "structure.RESULTS The sample"
        word = re.search(r"[A-Za-z]+$", text[max(0, end - 40):end])
        name = word.group(0) if word else ""
        return (name.isupper() and len(name) >= 4 and (text[k].isupper() or text[k].isdigit())), False
    return False, False


def find_headings(text: str, *, headings: str | Path | None = None) -> list[tuple[int, int, str]]:
    """Headings found in ``text`` as ``(start, end, label)``, in text order.

    Parameters
    ----------
    text : str
    headings : str or Path, optional
        A heading list file (see :func:`load_headings`); default the packaged one.

    Returns
    -------
    list of (int, int, str)
        Character offsets (half-open) of each heading and its section label.
    """
    found: list[tuple[int, int, str]] = []
    current = None
    abstract_at = -1
    in_abstract: set[str] = set()
    scan, exact = _pattern(None if headings is None else str(headings))
    for m in scan.finditer(text):
        start, end = m.start(), m.end()
        label = m.lastgroup or ""
        name = m.group(label)
        if not (exact[label].fullmatch(name) or name.isupper()):
            continue  # neither as written (Title case) nor in UPPER CASE
        if not _starts_ok(text, start):
            continue
        ok, colon = _ends_ok(text, end)
        if not ok:
            continue
        if current == "references":
            break
        if (current == "abstract" and label != "abstract" and start - abstract_at < ABSTRACT_WINDOW
                and label not in in_abstract
                and (colon or label in {"introduction", "methods", "results", "conclusion"})
                and not _is_line_heading(text, start, end)):
            in_abstract.add(label)  # a sub-heading; the same heading again starts the body
            continue
        if label == current:
            continue
        if label == "abstract":
            abstract_at = start
            # "AbstractBackground": a sub-heading glued to "Abstract" itself
            after = text[end : end + 40]
            in_abstract = {lab for lab, rx in exact.items()
                           if rx.match(after) or rx.match(after.title())}
        found.append((start, end, label))
        current = label
    return found


def _is_line_heading(text: str, start: int, end: int) -> bool:
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", end)
    line_end = len(text) if line_end == -1 else line_end
    return text[line_start:start].strip() == "" and text[end:line_end].strip(" :\t") == "" \
        and "\n" in text[max(0, start - 1): start + 1] + text[end: end + 1]


def detect_sections(document: Document | str, *, headings: str | Path | None = None) -> list[Span]:
    """Section spans of a trial report.

    Parameters
    ----------
    document : Document or str
        The text (a Document's ``text`` is used).
    headings : str or Path, optional
        A heading list file (see :func:`load_headings`); default the packaged one.

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
    for start, _, label in find_headings(text, headings=headings):
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
