"""Documented limits on the work one input may cause.

Each limit bounds the time or memory that a small, hostile or broken file can cost
(a 600 KB PDF whose content stream inflates to gigabytes, a page of 100,000 text
runs, a 10,000-page document). Past a limit a reader raises a
:class:`clinex.errors.FormatError` (``[CLX002]``) naming the file, the page or
object, the limit's name and its value, so that users can tell a refused input
from a bug. The values are module constants: a caller that must read bigger files
can raise them (``clinex.io.limits.MAX_PDF_PAGES = 20_000``) before reading.

The table in ``docs/batch-and-web.md`` ("Limits") lists every limit with the error
it gives.
"""

from __future__ import annotations

__all__ = [
    "MAX_PDF_PAGES",
    "MAX_PDF_TEXT_RUNS_PER_PAGE",
    "MAX_PDF_PAGE_CONTENT_BYTES",
    "MAX_PDF_INFLATED_BYTES",
    "MAX_PDF_FILTERS",
    "MAX_PDF_LINE_BYTES",
    "MAX_REPORT_FILE_BYTES",
    "MAX_REPORT_CHARS",
    "MAX_PV_TEXT_CHARS",
    "MAX_MEDLINE_CITATION_BYTES",
]

MIB = 1024 * 1024

#: Pages per PDF document. A 300-page trial report reads in about a second, so
#: this bounds a document to a few tens of seconds. Checked when the PDF is opened.
MAX_PDF_PAGES = 5_000

#: Text runs (PDFium text rectangles: stretches of one text object on one line) per
#: PDF page. A dense two-column page has about 1,500; the layout is linear in the
#: number of runs, so 100,000 runs read in a few seconds.
MAX_PDF_TEXT_RUNS_PER_PAGE = 100_000

#: Decompressed bytes of one PDF page's content: its content streams plus the form
#: XObjects they draw (each counted once per page). Text-heavy pages take 5-50 KB,
#: vector drawings a few MB. Checked before PDFium parses the page, by inflating
#: the streams in chunks and counting (nothing is kept), so a Flate bomb costs
#: CPU time up to the limit and no memory.
MAX_PDF_PAGE_CONTENT_BYTES = 16 * MIB

#: Decompressed bytes of all non-image streams of one PDF document together
#: (page contents, forms, fonts, object and cross-reference streams), and of any
#: one such stream. Images are not counted: text extraction never decodes them.
#: Every stage of a filter chain counts (``[/FlateDecode /FlateDecode]``: both
#: inflations; ``[/ASCII85Decode /FlateDecode]``: the ASCII85 output and the
#: inflated bytes), since PDFium keeps each stage's output in memory.
MAX_PDF_INFLATED_BYTES = 128 * MIB

#: Filters in one stream's ``/Filter`` array. Writers use one, at most two
#: (``[/ASCII85Decode /FlateDecode]``); PDFium sets no cap, and counting a chain's
#: output (:mod:`clinex.io.pdf_filters`) takes about half a MiB a stage.
#: Checked while the streams are counted, before PDFium parses a page.
MAX_PDF_FILTERS = 16

#: Bytes of one line of a PDF's structure: the objects, cross-reference table and
#: trailer outside stream data (a line ends at CR or LF; stream data, from the line
#: after ``stream`` to ``endstream``, is not counted: image and compressed data have
#: no lines). Writers keep these lines short: a dictionary or an xref entry per line
#: (20 bytes), the longest being arrays such as a font's ``/Widths`` or ``/W`` (a few
#: KB to about 100 KB for a large CJK font) and a flat page tree's ``/Kids`` (5,000
#: pages at 9 bytes a reference: 45 KB); 1 MiB leaves ten times that. pdfminer, which
#: reads the structure for the checks above, costs about 2 s per MiB of one line of
#: short tokens on a shared core, and a 16 MB line of words would take 30 s even read
#: linearly (:func:`clinex.io.pdf_checks._parser`); such files are broken (line breaks lost)
#: or hostile (issue 21's fuzzer). Checked by a linear scan of the file's bytes before
#: pdfminer or the stream checks read it.
MAX_PDF_LINE_BYTES = 1 * MIB

#: Characters of one trial report's text, whatever its format (PDF, text, JATS XML,
#: tagtog HTML). A long trial publication is about 100-300 KB of text (the
#: CONSORT items, tables and references of a large trial); 1,000,000 characters
#: leaves room for three to ten of them, or a report with its appendices. The RoB
#: 2 assessment is linear in the text but costs about a minute per million
#: characters (the ConText scope of each cue and the reasoning facts of each
#: sentence; measured with ``clinex rob assess`` on a 1 MB text: 57 s, 163 MB peak
#: RSS, on a shared 2-core machine), so this bounds one report to about a minute
#: and well under 1 GB. Checked by :func:`clinex.rob.formats.load.load_document`
#: right after reading, before sections, sentences and the assessment.
MAX_REPORT_CHARS = 1_000_000

#: Bytes of one trial report's text, XML or HTML file, checked (from the file's
#: size) before it is read at all. Text takes at most 4 bytes a character in UTF-8,
#: so a text file over 4 x :data:`MAX_REPORT_CHARS` bytes always has too many
#: characters; JATS XML holds its markup too (a PMC article is 2-3 times its
#: text). Reading a 50 MB JATS file took 23 s before it was refused; at this size
#: the parse takes under 4 s. PDFs are bounded by the ``MAX_PDF_*`` limits instead.
MAX_REPORT_FILE_BYTES = 8 * MIB

#: Characters of one PHEE extraction input: a plain-text document (before it is cut
#: into sentences) or one JSON-lines record. The default model reads about 8-20 KB of
#: ordinary text a second on one core, linear in the length (nested brackets, one
#: long token and a 410 KB run-on sentence included: issue 21), so this bounds one
#: input to about one or two minutes; a 50 MB line would take hours and, as one
#: sentence, several GB of sub-word offsets. Checked by
#: :func:`clinex.pv.pipeline.text_records` and :func:`clinex.pv.pipeline.extract_records`
#: before any model work.
MAX_PV_TEXT_CHARS = 1_000_000

#: Bytes of PubMed/MEDLINE XML read without a whole top-level element of the
#: ``<PubmedArticleSet>`` ending (a citation, or the stretch between two): what one
#: citation may hold in memory while :func:`clinex.io.medline.iter_medline` streams a
#: file. A citation is 2-50 KB; the largest (thousands of authors, long reference
#: lists) are 1-3 MB. Past the limit the file is refused from there on (the
#: citations before it were read): it is broken or made to exhaust memory.
MAX_MEDLINE_CITATION_BYTES = 16 * MIB
