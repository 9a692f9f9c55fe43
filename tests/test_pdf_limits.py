"""Bounded work in the PDF reader (issue 13): many text runs, Flate bombs, page-tree cycles.

The PDFs are written byte by byte (one page, one content stream), so each test
controls exactly what PDFium and the limit checks see.
"""

from __future__ import annotations

import random
import re
import resource
import time
import zlib
from pathlib import Path

import pytest

from clinex.errors import FormatError
from clinex.io import limits
from clinex.io.pdf import read_pdf

FONT = b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"


def _pdf(objects: dict[int, bytes]) -> bytes:
    """A PDF file of the numbered objects (object 1 the catalog), with its xref table."""
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = {}
    for num in sorted(objects):
        offsets[num] = len(out)
        out += b"%d 0 obj\n" % num + objects[num] + b"\nendobj\n"
    size = max(objects) + 1
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % size
    for num in range(1, size):
        out += b"%010d 00000 n \n" % offsets[num] if num in offsets else b"0000000000 65535 f \n"
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (size, xref)
    return bytes(out)


def _stream(data: bytes, flate: bool = False) -> bytes:
    extra = b"/Filter /FlateDecode " if flate else b""
    return b"<< /Length %d %s>>\nstream\n" % (len(data), extra) + data + b"\nendstream"


def _page(content: bytes, flate: bool = False) -> bytes:
    return _pdf({
        1: b"<< /Type /Catalog /Pages 2 0 R >>",
        2: b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        3: b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
           b"/Resources << /Font << /F1 4 0 R >> >> /Contents 5 0 R >>",
        4: FONT,
        5: _stream(content, flate),
    })


def _zeros_deflated(total: int, chunk: int = 1 << 22) -> bytes:
    """``b"0" * total`` deflated, compressed piece by piece (never held whole)."""
    z = zlib.compressobj(9)
    block = b"0" * chunk
    parts = []
    while total > 0:
        parts.append(z.compress(block[:min(chunk, total)]))
        total -= chunk
    parts.append(z.flush())
    return b"".join(parts)


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def test_30000_scattered_text_runs_read_in_seconds(tmp_path: Path) -> None:
    # 30,000 one-word runs at random places on one page (85-250 KB): the reader took
    # 149 s here before (PDFium's bounded-text call per run and band-by-band layout)
    rnd = random.Random(13)
    runs = [b"BT /F1 8 Tf %.2f %.2f Td (w%d) Tj ET" % (rnd.uniform(20, 580), rnd.uniform(20, 770), i % 10)
            for i in range(30_000)]
    pdf = tmp_path / "runs.pdf"
    pdf.write_bytes(_page(zlib.compress(b"\n".join(runs)), flate=True))
    t0 = time.perf_counter()
    doc = read_pdf(pdf)
    seconds = time.perf_counter() - t0
    assert seconds < 10, seconds
    # random runs overlap, so lines run together and words touch: count the words
    words = re.findall(r"w\d", doc.text)
    assert len(words) == 30_000  # every run read once (overlapping runs not doubled)
    assert set(words) == {f"w{i}" for i in range(10)}


def test_grid_of_text_runs_keeps_lines_in_order(tmp_path: Path) -> None:
    # 100 lines x 25 runs: more than the per-rectangle threshold, read char by char
    lines = []
    for row in range(100):
        y = 760 - row * 7
        # equal-width words under 1 pt apart: one column (no gap wide enough for a gutter)
        lines += [b"BT /F1 5 Tf %d %d Td (r%02dc%02d) Tj ET" % (20 + col * 16, y, row, col) for col in range(25)]
    pdf = tmp_path / "grid.pdf"
    pdf.write_bytes(_page(b"\n".join(lines)))
    doc = read_pdf(pdf)
    got = [line for line in doc.text.split("\n") if line]
    assert got == [" ".join(f"r{row:02d}c{col:02d}" for col in range(25)) for row in range(100)]


def test_flate_bomb_is_refused_without_taking_memory(tmp_path: Path) -> None:
    # ~400 KB that inflate to 400 MB: 2.7 GB and minutes before; now refused while
    # counting, memory flat
    pdf = tmp_path / "bomb.pdf"
    pdf.write_bytes(_page(_zeros_deflated(400_000_000), flate=True))
    assert pdf.stat().st_size < 1_000_000
    before = _rss_mb()
    t0 = time.perf_counter()
    with pytest.raises(FormatError) as info:
        read_pdf(pdf)
    assert time.perf_counter() - t0 < 10
    assert _rss_mb() - before < 1024
    msg = str(info.value)
    assert msg.startswith("[CLX002] ") and "bomb.pdf" in msg
    assert "page 1" in msg and "MAX_PDF_INFLATED_BYTES" in msg
    assert f"{limits.MAX_PDF_INFLATED_BYTES:,}" in msg


def test_page_content_past_the_page_limit_is_refused(tmp_path: Path) -> None:
    # under the document limit, over the per-page one (checked before PDFium parses)
    size = limits.MAX_PDF_PAGE_CONTENT_BYTES + 1_000_000
    assert size < limits.MAX_PDF_INFLATED_BYTES
    pdf = tmp_path / "page.pdf"
    pdf.write_bytes(_page(_zeros_deflated(size), flate=True))
    before = _rss_mb()
    with pytest.raises(FormatError, match=r"page 1: content inflates past .*MAX_PDF_PAGE_CONTENT_BYTES"):
        read_pdf(pdf)
    assert _rss_mb() - before < 1024


def test_limits_are_read_at_call_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runs = b"\n".join(b"BT /F1 8 Tf %d 700 Td (w) Tj ET" % (20 + 10 * i) for i in range(50))
    pdf = tmp_path / "small.pdf"
    pdf.write_bytes(_page(runs))
    assert read_pdf(pdf).text.split() == ["w"] * 50
    monkeypatch.setattr(limits, "MAX_PDF_TEXT_RUNS_PER_PAGE", 10)
    with pytest.raises(FormatError, match=r"small\.pdf: page 1: 50 text runs, more than "
                                          r"MAX_PDF_TEXT_RUNS_PER_PAGE = 10"):
        read_pdf(pdf)
    monkeypatch.setattr(limits, "MAX_PDF_TEXT_RUNS_PER_PAGE", 100_000)
    monkeypatch.setattr(limits, "MAX_PDF_PAGE_CONTENT_BYTES", 100)
    with pytest.raises(FormatError, match="MAX_PDF_PAGE_CONTENT_BYTES"):
        read_pdf(pdf)
    monkeypatch.setattr(limits, "MAX_PDF_PAGE_CONTENT_BYTES", 16 * 1024 * 1024)
    monkeypatch.setattr(limits, "MAX_PDF_INFLATED_BYTES", 100)
    assert read_pdf(pdf).text.split() == ["w"] * 50  # not deflated: nothing to inflate
    pdf.write_bytes(_page(zlib.compress(runs), flate=True))
    with pytest.raises(FormatError, match=r"small\.pdf: page 1: object 5 \(at byte \d+\) inflates past "
                                          r"the document's limit of 100 decompressed bytes"):
        read_pdf(pdf)


def test_page_count_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pages = {3 + 2 * i: b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
                        b"/Resources << /Font << /F1 1000 0 R >> >> /Contents %d 0 R >>" % (4 + 2 * i)
             for i in range(3)}
    contents = {4 + 2 * i: _stream(b"BT /F1 12 Tf 72 700 Td (Page %d) Tj ET" % (i + 1)) for i in range(3)}
    kids = b" ".join(b"%d 0 R" % n for n in pages)
    pdf = tmp_path / "three.pdf"
    pdf.write_bytes(_pdf({1: b"<< /Type /Catalog /Pages 2 0 R >>",
                          2: b"<< /Type /Pages /Kids [%s] /Count 3 >>" % kids,
                          **pages, **contents, 1000: FONT}))
    assert read_pdf(pdf).text == "Page 1\n\nPage 2\n\nPage 3"
    monkeypatch.setattr(limits, "MAX_PDF_PAGES", 2)
    with pytest.raises(FormatError, match=r"three\.pdf: 3 pages, more than MAX_PDF_PAGES = 2"):
        read_pdf(pdf)


def _cycle_pdf(kids_of_root: bytes, kids_of_6: bytes) -> bytes:
    return _pdf({
        1: b"<< /Type /Catalog /Pages 2 0 R >>",
        2: b"<< /Type /Pages /Kids [%s] /Count 2 >>" % kids_of_root,
        3: b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
           b"/Resources << /Font << /F1 4 0 R >> >> /Contents 5 0 R >>",
        4: FONT,
        5: _stream(b"BT /F1 12 Tf 72 700 Td (Hello) Tj ET"),
        6: b"<< /Type /Pages /Parent 2 0 R /Kids [%s] /Count 1 >>" % kids_of_6,
    })


@pytest.mark.parametrize(
    ("root_kids", "kids_6", "loop"),
    [
        (b"3 0 R 6 0 R", b"2 0 R", "object 6's /Kids points back to its ancestor object 2"),
        (b"6 0 R 3 0 R", b"2 0 R", "object 6's /Kids points back to its ancestor object 2"),
        (b"6 0 R 3 0 R", b"6 0 R", "object 6's /Kids points back to its ancestor object 6"),
        (b"2 0 R", b"3 0 R", "object 2's /Kids points back to its ancestor object 2"),
    ],
)
def test_page_tree_cycle_is_a_clear_error(tmp_path: Path, root_kids: bytes, kids_6: bytes, loop: str) -> None:
    # before: PDFium's "Failed to load page." traceback, or the page read twice
    pdf = tmp_path / "cycle.pdf"
    pdf.write_bytes(_cycle_pdf(root_kids, kids_6))
    with pytest.raises(FormatError) as info:
        read_pdf(pdf)
    assert str(info.value) == f"[CLX002] {pdf}: page tree cycle: {loop}"


def test_shared_page_tree_node_is_no_cycle(tmp_path: Path) -> None:
    # the same page twice in /Kids is odd but finite: read as PDFium counts it
    pdf = tmp_path / "twice.pdf"
    pdf.write_bytes(_cycle_pdf(b"3 0 R 3 0 R", b"3 0 R"))
    assert read_pdf(pdf).text == "Hello\n\nHello"


def test_limits_are_documented() -> None:
    docs = Path(__file__).parents[1] / "docs" / "batch-and-web.md"
    text = docs.read_text(encoding="utf-8")
    section = text[text.index("## Limits"):]
    for name in limits.__all__:
        value = getattr(limits, name)
        assert isinstance(value, int) and value > 0
        assert f"`{name}`" in section, name
        assert f"{value:,}" in section, (name, value)
