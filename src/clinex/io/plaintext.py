"""Plain-text trial reports: one UTF-8 ``.txt`` file -> one :class:`~clinex.text.Document`.

Form feeds (``\\f``, as written by ``pdftotext``) are read as page breaks, so that
a text exported page by page keeps its page numbers; the text itself is kept
byte for byte (offsets point into the file's characters).
"""

from __future__ import annotations

from pathlib import Path

from clinex.errors import FormatError
from clinex.io.textfile import read_text
from clinex.text import Document, Fragment, Span

__all__ = ["read_plaintext", "pages_from_form_feeds"]


def pages_from_form_feeds(text: str) -> tuple[Span, ...]:
    """Page spans split at form feeds; empty when the text has none.

    Parameters
    ----------
    text : str

    Returns
    -------
    tuple of Span
        Labelled ``"1"``, ``"2"``, ...; page ``k`` runs from after the (k-1)-th
        form feed to before the k-th (the form feed itself belongs to no page).
    """
    if "\f" not in text:
        return ()
    spans = []
    start = 0
    for n, chunk in enumerate(text.split("\f"), start=1):
        end = start + len(chunk)
        spans.append(Span(fragments=(Fragment(start=start, end=end, text=chunk),), label=str(n)))
        start = end + 1
    if spans and not spans[-1].fragments[0].text.strip():  # trailing form feed
        spans.pop()
    return tuple(spans)


def read_plaintext(path: str | Path) -> Document:
    """Read a UTF-8 text file as a document (pages at form feeds).

    Parameters
    ----------
    path : str or Path

    Returns
    -------
    Document
        ``id`` = file stem; ``meta`` = ``{"source", "format": "text"}``;
        sentences and sections are left empty (the caller fills them; for trial
        reports, :func:`clinex.rob.formats.load.load_document`).

    Raises
    ------
    InputError
        No such file.
    EncodingError
        Binary or non-UTF-8 file (file and line named).
    FormatError
        Empty or blank file.
    """
    p = Path(path)
    text = read_text(p)
    if not text.strip():
        raise FormatError("empty file: no text to read", path=p)
    return Document(id=p.stem, text=text, pages=pages_from_form_feeds(text),
                    meta={"source": str(p), "format": "text"})
