"""CONSORT-TM article XML: one trial publication as plain text with labelled sentences.

The CONSORT-TM corpus (Kilicoglu et al., "Toward assessing clinical trial publications
for reporting transparency", J Biomed Inform 2021;116:103717) stores each article as::

    <document id="PMC3002766">
      <text xml:space="preserve">Title
    ...the whole article as plain text, headings on their own lines...</text>
      <section .../>
      <sentence charOffset="a-b" id="S12" selection="8a,9"/>
      ...
    </document>

:func:`read_consort_tm` keeps ``<text>`` exactly as written, so that the corpus's
``charOffset`` values (half-open, into that text) point into :attr:`Document.text`; the
sentences' CONSORT items are kept in ``meta["consort_items"]`` as ``[start, end, items]``
triples for evaluation. Sections and sentences are left to the caller, as for the other
document readers (for trial reports, :func:`clinex.rob.formats.load.load_document`).
"""

from __future__ import annotations

import re
from pathlib import Path

from clinex.errors import FormatError
from clinex.io.plaintext import pages_from_form_feeds
from clinex.io.textfile import require_file
from clinex.text import Document

__all__ = ["looks_like_consort_tm", "read_consort_tm"]

#: The root element of a CONSORT-TM article, after an optional XML declaration and comments.
_ROOT = re.compile(rb"\A(?:\xef\xbb\xbf)?\s*(?:<\?xml[^>]*\?>\s*)?(?:<!--.*?-->\s*)*<document[\s>]", re.S)

_OFFSET = re.compile(r"(\d{1,9})-(\d{1,9})")


def looks_like_consort_tm(path: str | Path) -> bool:
    """Whether a file's root element is CONSORT-TM's ``<document>`` (reads its first 4 KiB).

    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "a.xml"
    >>> _ = p.write_text('<?xml version="1.0"?>\\n<document id="PMC1"><text>T</text></document>')
    >>> looks_like_consort_tm(p)
    True
    """
    with Path(path).open("rb") as f:
        return bool(_ROOT.match(f.read(4096)))


def read_consort_tm(path: str | Path) -> Document:
    """Read a CONSORT-TM article XML file as one document.

    Parameters
    ----------
    path : str or Path

    Returns
    -------
    Document
        ``id`` = the ``<document id>`` (else the file stem); ``text`` = ``<text>``
        exactly; ``pages`` at form feeds; ``meta`` = ``{"source", "format":
        "consort-tm", "consort_items": [[start, end, [item, ...]], ...]}`` (sentences
        with at least one item, offsets into ``text``).

    Raises
    ------
    InputError
        No such file.
    FormatError
        Not well-formed or unsafe XML (defusedxml), no ``<text>``, a blank text, or a
        ``charOffset`` that is not ``a-b`` inside the text (line named where known).
    EncodingError
        The XML is not in its declared encoding.
    """
    from clinex.io.xmlfile import parse_xml_file

    p = require_file(path)
    root = parse_xml_file(p)
    if root.tag != "document":
        raise FormatError(f"not a CONSORT-TM article (root element <{root.tag}>)", path=p)
    text_el = root.find("text")
    text = "" if text_el is None else (text_el.text or "")
    if text_el is None:
        raise FormatError("no <text> element: a CONSORT-TM article holds its text there", path=p,
                          field="text")
    if not text.strip():
        raise FormatError("empty <text>: no article text to read", path=p, field="text")
    items = []
    for k, s in enumerate(root.iter("sentence"), start=1):
        labels = [x.strip() for x in (s.get("selection") or "").split(",") if x.strip()]
        if not labels:
            continue
        m = _OFFSET.fullmatch((s.get("charOffset") or "").strip())
        if m is None or not int(m.group(1)) <= int(m.group(2)) <= len(text):
            raise FormatError(f"sentence {s.get('id') or k}: charOffset {s.get('charOffset')!r} is not "
                              f"'start-end' inside a text of {len(text):,} characters", path=p,
                              field="charOffset")
        items.append([int(m.group(1)), int(m.group(2)), labels])
    doc_id = (root.get("id") or "").strip() or p.stem
    return Document(id=doc_id, text=text, pages=pages_from_form_feeds(text),
                    meta={"source": str(p), "format": "consort-tm", "consort_items": items})
