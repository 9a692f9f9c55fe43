"""Very long lines in PDFs (issue 21): the pre-checks are linear, over-long structure lines refused.

pdfminer, which the PDF reader's pre-checks use, reads a line and a token by
repeated ``bytes +=``: a fuzzer's mutant with one 16 MB line took 20-80 s, a 2 MB
one 5-7 s. The mutants here are the fuzzer's (``tests/fuzz_harness.py``,
``longline`` and ``token``) or written byte by byte.
"""

from __future__ import annotations

import io
import resource
import sys
import time
from pathlib import Path

import pytest

from clinex.errors import FormatError
from clinex.io import limits
from clinex.io.pdf import _parser, read_pdf

sys.path.insert(0, str(Path(__file__).parents[1]))
from fuzz_harness import apply  # noqa: E402

RCT = Path(__file__).parents[1] / "data" / "pdf" / "chromium_rct.pdf"
#: Byte offset in chromium_rct.pdf right after object 1's ``endobj`` line, before ``3 0 obj``.
BETWEEN_OBJECTS = 280
MIB = 1 << 20


def _refusal(path: Path, at: int) -> str:
    return (f"[CLX002] {path}: a line of more than 1,048,576 bytes outside stream data (at byte {at:,}), "
            "more than MAX_PDF_LINE_BYTES = 1,048,576 (clinex.io.limits): a PDF's structure lines are "
            "short; the file is broken or made to be slow to read")


def _one_page(content: bytes, pad: bytes = b"") -> bytes:
    """A one-page PDF (Helvetica) drawing ``content``, uncompressed, with its xref table;
    ``pad`` goes into the page dictionary on the page object's own line."""
    objects = {
        1: b"<< /Type /Catalog /Pages 2 0 R >>",
        2: b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        3: b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] " + pad
           + b" /Resources << /Font << /F1 4 0 R >> >> /Contents 5 0 R >>",
        4: b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        5: b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream",
    }
    out = bytearray(b"%PDF-1.4\n")
    offsets = {}
    for num, body in objects.items():
        offsets[num] = len(out)
        out += b"%d 0 obj\n" % num + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 6\n0000000000 65535 f \n"
    out += b"".join(b"%010d 00000 n \n" % offsets[n] for n in range(1, 6))
    out += b"trailer\n<< /Size 6 /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % xref
    return bytes(out)


HELLO = b"BT /F1 12 Tf 72 720 Td (Hello world) Tj ET"


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def _mutant(tmp_path: Path, ops: list[tuple]) -> Path:
    path = tmp_path / "mutant.pdf"
    path.write_bytes(apply(RCT.read_bytes(), ops))
    return path


# --- the fuzzer's mutants -------------------------------------------------------------


@pytest.mark.parametrize("op", [("longline", BETWEEN_OBJECTS, 2), ("longline", BETWEEN_OBJECTS, 16),
                                ("token", BETWEEN_OBJECTS, 2 * MIB)])
def test_long_line_between_objects_is_refused(tmp_path: Path, op: tuple) -> None:
    path = _mutant(tmp_path, [op])
    before = _rss_mb()
    with pytest.raises(FormatError) as err:
        read_pdf(path)
    assert str(err.value) == _refusal(path, BETWEEN_OBJECTS)
    assert _rss_mb() - before < 256


def test_line_breaks_removed_reads_as_before(tmp_path: Path) -> None:
    # CR and LF go inside the Flate data too, so PDFium finds no text (as before the fix)
    path = _mutant(tmp_path, [("longline", 0, 0)])
    with pytest.raises(FormatError) as err:
        read_pdf(path)
    assert str(err.value) == (f"[CLX002] {path}: no text layer on any of the 2 page(s): a scanned PDF? "
                              "Run OCR (e.g. ocrmypdf) first")


def test_short_token_between_objects_keeps_the_text(tmp_path: Path) -> None:
    path = _mutant(tmp_path, [("token", BETWEEN_OBJECTS, 100_000)])
    assert read_pdf(path).text == read_pdf(RCT).text


@pytest.mark.wallclock
@pytest.mark.parametrize("op", [("longline", BETWEEN_OBJECTS, 2), ("longline", BETWEEN_OBJECTS, 16)])
def test_long_line_mutant_is_refused_in_a_second(tmp_path: Path, op: tuple) -> None:
    path = _mutant(tmp_path, [op])
    start = time.perf_counter()
    with pytest.raises(FormatError):
        read_pdf(path)
    assert time.perf_counter() - start < 1.0  # 5 s (2 MB) and 20-80 s (16 MB) before


# --- lines inside stream data are not structure lines ------------------------------------


def _shifted(tmp_path: Path, line: bytes) -> Path:
    """The one-page PDF with ``line`` inserted into its content stream after the fact, as a
    fuzzer does: /Length and the xref offsets no longer fit, so pdfminer falls back to
    reading the file line by line."""
    data = _one_page(HELLO)
    at = data.index(HELLO)
    path = tmp_path / "shifted.pdf"
    path.write_bytes(data[:at] + line + data[at:])
    return path


def test_two_mb_comment_line_in_a_content_stream_keeps_the_text(tmp_path: Path) -> None:
    path = _shifted(tmp_path, b"%" + b"x" * (2 * MIB) + b"\n")
    before = _rss_mb()
    assert read_pdf(path).text == "Hello world"
    assert _rss_mb() - before < 256


def test_sixteen_mb_line_in_a_content_stream_is_the_page_content_limit(tmp_path: Path) -> None:
    path = _shifted(tmp_path, b"x" * (16 * MIB) + b" ")
    before = _rss_mb()
    with pytest.raises(FormatError) as err:
        read_pdf(path)
    assert str(err.value) == (
        f"[CLX002] {path}: page 1: content inflates past the limit of 16,777,216 decompressed bytes "
        "per page, MAX_PDF_PAGE_CONTENT_BYTES (clinex.io.limits): a decompression bomb?")
    assert _rss_mb() - before < 512


@pytest.mark.wallclock
def test_sixteen_mb_line_in_a_content_stream_is_checked_in_seconds(tmp_path: Path) -> None:
    path = _shifted(tmp_path, b"x" * (16 * MIB) + b" ")
    start = time.perf_counter()
    with pytest.raises(FormatError):
        read_pdf(path)
    assert time.perf_counter() - start < 3.0  # 60 s before (pdfminer's quadratic nextline)


# --- the limit itself -----------------------------------------------------------------------


def test_line_at_the_limit_reads_and_one_byte_more_is_refused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(limits, "MAX_PDF_LINE_BYTES", 200)
    base = _one_page(HELLO)
    page_line = len(b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
                    b" /Resources << /Font << /F1 4 0 R >> >> /Contents 5 0 R >>")
    pad = b"/Pad (" + b"p" * (200 - page_line - 7) + b")"
    at_limit = tmp_path / "at.pdf"
    at_limit.write_bytes(_one_page(HELLO, pad))
    assert max(len(line) for line in at_limit.read_bytes().split(b"\n")) == 200
    assert read_pdf(at_limit).text == "Hello world"
    over = tmp_path / "over.pdf"
    over.write_bytes(_one_page(HELLO, pad + b" "))
    start = base.index(b"3 0 obj\n") + len(b"3 0 obj\n")
    with pytest.raises(FormatError) as err:
        read_pdf(over)
    assert str(err.value) == (
        f"[CLX002] {over}: a line of more than 200 bytes outside stream data (at byte {start:,}), more "
        "than MAX_PDF_LINE_BYTES = 200 (clinex.io.limits): a PDF's structure lines are short; the file "
        "is broken or made to be slow to read")


def test_stream_data_lines_are_not_counted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(limits, "MAX_PDF_LINE_BYTES", 200)
    path = tmp_path / "comment.pdf"
    path.write_bytes(_one_page(HELLO + b"\n%" + b"c" * 5_000))
    assert read_pdf(path).text == "Hello world"


def test_line_after_endstream_is_counted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(limits, "MAX_PDF_LINE_BYTES", 200)
    data = _one_page(HELLO)
    at = data.index(b"endstream") + len(b"endstream")
    path = tmp_path / "tail.pdf"
    path.write_bytes(data[:at] + b" " * 300 + data[at:])
    with pytest.raises(FormatError, match=r"a line of more than 200 bytes outside stream data \(at byte "
                       + f"{data.index(b'endstream'):,}" + r"\)"):
        read_pdf(path)


def test_limit_is_documented_in_limits() -> None:
    assert limits.MAX_PDF_LINE_BYTES == 1_048_576
    assert "MAX_PDF_LINE_BYTES" in limits.__all__


# --- the linear line reader gives pdfminer's lines -------------------------------------------


@pytest.mark.parametrize("data", [
    b"a\nbb\r\ncc\rdd\n\n\r\r\nend",
    b"x" * 4095 + b"\r" + b"\n" + b"y" * 10_000 + b"\r" + b"z" * 3 + b"\n",
    b"p" * 4096 + b"\r" + b"\r\n" * 3000 + b"q" * 9000 + b"\n",
    b"\r" * 5000 + b"\n",
])
def test_linear_nextline_gives_pdfminers_lines(data: bytes) -> None:
    from pdfminer.pdfparser import PDFParser
    from pdfminer.psparser import PSEOF

    def lines(parser) -> list[tuple[int, bytes]]:
        out = []
        while True:
            try:
                out.append(parser.nextline())
            except PSEOF:
                return out

    ours = lines(_parser(io.BytesIO(data)))
    assert ours == lines(PDFParser(io.BytesIO(data)))
    assert b"".join(line for _, line in ours) == data[:len(b"".join(line for _, line in ours))]


def test_long_token_is_read_whole() -> None:
    from pdfminer.psparser import PSKeyword

    parser = _parser(io.BytesIO(b"1 0 obj " + b"k" * (3 * MIB) + b" endobj"))
    tokens = [parser.nexttoken()[1] for _ in range(4)]
    assert tokens[:2] == [1, 0]
    assert isinstance(tokens[3], PSKeyword) and tokens[3].name == b"k" * (3 * MIB)
