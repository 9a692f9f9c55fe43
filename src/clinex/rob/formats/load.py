"""One entry point for trial reports: ``load_document(path)`` by file suffix.

==========================  =====================================  ==============
Suffix                      Reader                                 Pages
==========================  =====================================  ==============
``.pdf``                    :func:`clinex.io.pdf.read_pdf`         PDF pages
``.txt``, ``.text``         :func:`clinex.io.plaintext.read_plaintext`  at form feeds
``.xml``, ``.nxml``         :func:`clinex.io.jats.read_jats`       none
                            (:func:`clinex.io.consort_tm.read_consort_tm`
                            when the root is CONSORT-TM's ``<document>``)  at form feeds
``.html``, ``.htm``         :func:`clinex.rob.formats.tagtog.read_tagtog_document` (tagtog ``plain.html``)
==========================  =====================================  ==============

Every document comes back with sections (:func:`clinex.rob.sections.detect_sections`,
or the JATS ``<sec>`` titles) and sentences (:func:`clinex.text.split_sentences`,
which also breaks at blank lines, i.e. at page joins; sentences are further cut at
section starts and after a heading that ends its line or has a colon, so that
"Methods\nPatients were ..." gives the sentence "Patients were ...").
"""

from __future__ import annotations

from pathlib import Path

from clinex.errors import FormatError, InputError
from clinex.rob.formats.structure import add_structure
from clinex.text import Document

__all__ = ["SUFFIXES", "load_document", "add_structure"]

#: Suffixes :func:`load_document` reads.
SUFFIXES = (".pdf", ".txt", ".text", ".xml", ".nxml", ".html", ".htm")


def load_document(path: str | Path, *, sentences: bool = True, sections: bool = True) -> Document:
    """Read a trial report (PDF, plain text, JATS/PMC XML or tagtog plain.html).

    Parameters
    ----------
    path : str or Path
        The file; the reader is chosen by suffix (case-insensitive).
    sentences : bool
        Fill ``Document.sentences``.
    sections : bool
        Fill ``Document.sections`` (kept as given when the reader found them, e.g. JATS).

    Returns
    -------
    Document
        Offsets are characters into ``Document.text``; ``Document.page_of`` maps an
        offset to its 1-based page for paged input.

    Raises
    ------
    InputError
        No such file, a folder, or an unsupported suffix.
    FormatError
        A 0-byte file, or a file that does not follow its format (named by the
        readers); a text, XML or HTML file over
        :data:`~clinex.io.limits.MAX_REPORT_FILE_BYTES` (checked before reading) or
        a text of more than :data:`~clinex.io.limits.MAX_REPORT_CHARS` characters
        (checked after reading, before sections and sentences).
    EncodingError
        Binary data where text was expected.
    """
    p = Path(path)
    if not p.exists():
        raise InputError("no such file", path=p)
    if not p.is_file():
        raise InputError("not a file", path=p)
    suffix = p.suffix.lower()
    if suffix not in SUFFIXES:
        raise InputError(
            f"unsupported file type {p.suffix or '(none)'!r}; expected one of {', '.join(SUFFIXES)}",
            path=p,
        )
    size = p.stat().st_size
    if size == 0:
        raise FormatError("empty file (0 bytes)", path=p)
    from clinex.io import limits

    if suffix != ".pdf" and size > limits.MAX_REPORT_FILE_BYTES:
        raise FormatError(
            f"file of {size:,} bytes, more than MAX_REPORT_FILE_BYTES = {limits.MAX_REPORT_FILE_BYTES:,} "
            f"(clinex.io.limits): a trial report is 100-300 KB of text; split the file", path=p)
    if suffix == ".pdf":
        from clinex.io.pdf import read_pdf

        doc = read_pdf(p)
    elif suffix in {".txt", ".text"}:
        from clinex.io.plaintext import read_plaintext

        doc = read_plaintext(p)
    elif suffix in {".xml", ".nxml"}:
        from clinex.io.consort_tm import looks_like_consort_tm, read_consort_tm

        if looks_like_consort_tm(p):  # the corpus's plain text with labelled sentences
            doc = read_consort_tm(p)
        else:
            from clinex.io.jats import read_jats
            from clinex.rob.sections import SECTION_NAMES

            doc = read_jats(p, section_names=SECTION_NAMES)
    else:
        from clinex.rob.formats.tagtog import read_tagtog_document

        doc = read_tagtog_document(p, sentences=False, sections=False)
    if len(doc.text) > limits.MAX_REPORT_CHARS:
        raise FormatError(
            f"text of {len(doc.text):,} characters, more than MAX_REPORT_CHARS = "
            f"{limits.MAX_REPORT_CHARS:,} (clinex.io.limits): a trial report is 100-300 KB of text; "
            "split the file", path=p)
    return add_structure(doc, sentences=sentences, sections=sections)
