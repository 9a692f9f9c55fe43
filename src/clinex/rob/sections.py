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
"Abstract", or on lines of their own when the abstract opens with one) stay inside the
abstract while they come once each and in the abstract's order (background, methods,
results, conclusions, registration / funding), within ``ABSTRACT_WINDOW`` characters:
the first heading met a second time (the body's "Methods") or out of order (the body's
"Introduction" after "Conclusions") starts the body, as a reviewer reads a paper. A section
number is a heading's only on its own line ("2.1 Results", "II. Methods", "X) Discussion");
in "R version 2.10.1.\n\nResults" the number ends a sentence. Everything after
"References" is references.

References
----------
Hopewell S et al. CONSORT for reporting randomized trials in journal and conference
abstracts. PLoS Med 2008;5(1):e20 (structured abstract parts).
Sollaci LB, Pereira MG. The introduction, methods, results, and discussion (IMRAD)
structure: a fifty-year survey. J Med Libr Assoc 2004;92(3):364-367.
CONSORT 2010 statement, Schulz KF et al. BMJ 2010;340:c332 (trial report sections).
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

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
    subsections : dict of str to tuple of str
        Section label -> spellings of sub-section headings ("Study design",
        "Participants") that open their section only while the paper has reached no
        body section but the introduction; later they are sub-headings of the section
        they stand in (default: none).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    version: int
    name: str
    sections: dict[str, tuple[str, ...]]
    subsections: dict[str, tuple[str, ...]] = Field(default_factory=dict)


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
    for key, table in (("sections", headings.sections), ("subsections", headings.subsections)):
        for label, names in table.items():
            if not re.fullmatch(r"[a-z]+(?:_[a-z]+)*", label):
                raise FormatError("section labels are lower-case words", path=where,
                                  field=f"{key}.{label}")
            if not names:
                raise FormatError("no heading spelling", path=where, field=f"{key}.{label}")
            for i, n in enumerate(names):
                try:
                    re.compile(n)
                except re.error as exc:
                    raise FormatError(f"not a regular expression: {exc}", path=where,
                                      field=f"{key}.{label}[{i}]") from None
    return headings


#: Section label -> heading spellings of the packaged list (sections, then sub-section
#: headings, which label a whole section when it is a top-level one, e.g. a JATS ``<sec>``).
SECTION_NAMES: dict[str, tuple[str, ...]] = {
    label: names + load_headings().subsections.get(label, ())
    for label, names in load_headings().sections.items()
}
#: Label of the text before the first heading (title, authors, affiliations).
FRONT = "front"

#: How far (characters) after "Abstract" sub-headings are read as part of it.
ABSTRACT_WINDOW = 4000

#: A section number before a heading on the same line: "2. ", "2.1 ", "II. ", "IV ", "X) ".
#: Not across a line break: in "R version 2.10.1.\n\nResults" the number ends a sentence.
_NUMBER = r"(?:(?:\d{1,2}(?:\.\d{1,2})*|[IVX]{1,4})[.)]?[ \t]+)?"
#: Order of a structured abstract's parts (ICMJE / CONSORT for abstracts, Hopewell et al.
#: PLoS Med 2008;5:e20): background, methods, results, conclusions, then registration and
#: funding. A heading that goes back in this order after "Abstract" starts the body.
_ABSTRACT_ORDER = {"introduction": 0, "methods": 1, "results": 2, "discussion": 3,
                   "conclusion": 3, "registration": 4, "funding": 4}
#: A sub-heading of its own on the first line after "Abstract" ("Objectives", "Background:").
_FIRST_SUBHEADING = re.compile(r"[ \t\r\n]*\n[ \t]*[A-Z][A-Za-z/&,' -]{1,40}:?[ \t]*\r?\n|"
                               r"[ \t\r\n]*[A-Z][A-Za-z/&'-]*(?: [A-Za-z/&'-]+){0,3}:")


_SUB = "__sub"


@lru_cache(maxsize=8)
def _pattern(path: str | None = None) -> tuple[re.Pattern[str], dict[str, re.Pattern[str]]]:
    """The scanning pattern (case-insensitive names) and, per label, the as-written check."""
    alts = []
    exact = {}
    headings = load_headings(path)
    groups = [(label, names) for label, names in headings.sections.items()]
    groups += [(f"{label}{_SUB}", names) for label, names in headings.subsections.items()]
    for label, names in groups:
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


def find_headings(text: str, *, headings: str | Path | None = None,
                  parts: bool = False) -> list[tuple[int, int, str]]:
    """Headings found in ``text`` as ``(start, end, label)``, in text order.

    Parameters
    ----------
    text : str
    headings : str or Path, optional
        A heading list file (see :func:`load_headings`); default the packaged one.
    parts : bool
        Also give the structured abstract's sub-headings ("Methods" inside the
        abstract), labelled with their own label; they open no section. Default False.

    Returns
    -------
    list of (int, int, str)
        Character offsets (half-open) of each heading and its section label.
    """
    found: list[tuple[int, int, str]] = []
    current = None
    abstract_at = -1
    in_abstract: set[str] = set()
    structured = False  # the abstract opens with a sub-heading: its parts may stand on lines
    last_part = -1  # rank (_ABSTRACT_ORDER) of the abstract's last sub-heading
    body: set[str] = set()  # labels of the body sections found so far
    scan, exact = _pattern(None if headings is None else str(headings))
    for m in scan.finditer(text):
        group = m.lastgroup or ""
        label = group.removesuffix(_SUB)
        name = m.group(group)
        if not (exact[group].fullmatch(name) or name.isupper()):
            continue  # neither as written (Title case) nor in UPPER CASE
        start, end = m.start(), m.end()
        if not _starts_ok(text, start):
            # "... in 2.Results" / "version 2.10.1. Results": the number belongs to the sentence
            start = m.start(group)
            if start == m.start() or not _starts_ok(text, start):
                continue
        ok, colon = _ends_ok(text, end)
        if not ok:
            continue
        if current == "references":
            break
        if current == "abstract" and label != "abstract" and _abstract_part(
                text, start, end, label, colon, start - abstract_at, in_abstract, structured,
                last_part):
            in_abstract.add(label)  # a sub-heading; the same heading again starts the body
            last_part = max(last_part, _ABSTRACT_ORDER.get(label, last_part))
            if parts:
                found.append((start, end, label))
            continue
        if group != label and body - {"introduction"}:
            continue  # "Participants" inside Results is a sub-heading of the Results
        if label == current:
            continue
        if label == "abstract":
            abstract_at = start
            # "AbstractBackground": a sub-heading glued to "Abstract" itself
            after = text[end : end + 40]
            in_abstract = {lab.removesuffix(_SUB) for lab, rx in exact.items()
                           if rx.match(after) or rx.match(after.title())}
            structured = bool(in_abstract) or bool(_FIRST_SUBHEADING.match(text, end))
            last_part = max((_ABSTRACT_ORDER.get(lab, -1) for lab in in_abstract), default=-1)
        else:
            body.add(label)
        found.append((start, end, label))
        current = label
    return found


def _abstract_part(text: str, start: int, end: int, label: str, colon: bool, offset: int,
                   seen: set[str], structured: bool, last_part: int) -> bool:
    """Whether a heading met inside the abstract is one of the abstract's own sub-headings.

    As a reader takes a structured abstract: its parts (Background, Methods, Results,
    Conclusions, ...) come once each, in that order, within :data:`ABSTRACT_WINDOW`
    characters of "Abstract"; a part met again ("Methods" of the body) or out of order
    ("Introduction" after "Conclusions") starts the body. A part on a line of its own counts
    only when the abstract opens with a sub-heading (a structured abstract); otherwise a
    line heading ends an unstructured abstract.
    """
    if offset >= ABSTRACT_WINDOW or label in seen:
        return False
    if _ABSTRACT_ORDER.get(label, last_part) < last_part:
        return False
    if _is_line_heading(text, start, end):
        return structured and label in _ABSTRACT_ORDER
    return colon or label in {"introduction", "methods", "results", "conclusion"}


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
