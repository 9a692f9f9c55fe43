"""Bounded work in the PDF reader (issue 13): many text runs, Flate bombs, page-tree cycles.

The PDFs are written byte by byte (one page, one content stream), so each test
controls exactly what PDFium and the limit checks see.
"""

from __future__ import annotations

import base64
import functools
import json
import random
import re
import resource
import subprocess
import sys
import textwrap
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
    docs = Path(__file__).parents[2] / "docs" / "batch-and-web.md"
    text = docs.read_text(encoding="utf-8")
    section = text[text.index("## Limits"):]
    for name in limits.__all__:
        value = getattr(limits, name)
        assert isinstance(value, int) and value > 0
        assert f"`{name}`" in section, name
        assert f"{value:,}" in section, (name, value)


# --- chained and nested filters (issue 21): every stage counts ---------------------------

BOMB = 400_000_000  # zeros: deflated once about 390 KB, twice about 1-2 KB


def _lzw(data: bytes) -> bytes:
    """LZW-encode ``data`` as PDF's LZWDecode reads it (ISO 32000-1, 7.4.4.2; EarlyChange 1)."""
    table = {bytes((i,)): i for i in range(256)}
    out, acc, nacc, width = bytearray(), 0, 0, 9

    def put(code: int) -> None:
        nonlocal acc, nacc
        acc, nacc = (acc << width) | code, nacc + width
        while nacc >= 8:
            nacc -= 8
            out.append((acc >> nacc) & 255)
        acc &= (1 << nacc) - 1

    put(256)
    w = b""
    for byte in data:
        wc = w + bytes((byte,))
        if wc in table:
            w = wc
            continue
        put(table[w])
        table[wc] = len(table) + 2  # 256, 257 are clear and end
        w = bytes((byte,))
        n = len(table) + 2  # the next code; the reader's table is one entry behind (EarlyChange 1)
        if n >= 4093:
            put(256)
            table = {bytes((i,)): i for i in range(256)}
            width = 9
        else:
            width = 12 if n >= 2048 else 11 if n >= 1024 else 10 if n >= 512 else 9
    put(table[w])
    put(257)
    if nacc:
        out.append((acc << (8 - nacc)) & 255)
    return bytes(out)


def _run_length(data: bytes) -> bytes:
    """RunLengthDecode data: literal runs of 128 bytes, then the end byte 128."""
    out = bytearray()
    for i in range(0, len(data), 128):
        piece = data[i:i + 128]
        out += bytes((len(piece) - 1,)) + piece
    return bytes(out + b"\x80")


def _png_up(data: bytes, columns: int) -> bytes:
    """PNG 'Up' rows (predictor 12) of ``columns`` bytes: what PDFium undoes after a stage."""
    data += bytes(-len(data) % columns)
    out, prior = bytearray(), bytes(columns)
    for i in range(0, len(data), columns):
        row = data[i:i + columns]
        out += b"\x02" + bytes((a - b) & 255 for a, b in zip(row, prior))
        prior = row
    return bytes(out)


@functools.lru_cache(maxsize=1)
def _once() -> bytes:
    return _zeros_deflated(BOMB)


@functools.lru_cache(maxsize=None)
def _chained(name: str) -> tuple[bytes, bytes, dict[int, bytes]]:
    """(stream data, dictionary entries, extra objects) of a bomb mutant."""
    once = _once()
    if name == "flate-flate":
        return zlib.compress(once, 9), b"/Filter [/FlateDecode /FlateDecode]", {}
    if name == "fl-fl-short-names":
        return zlib.compress(once, 9), b"/Filter [/Fl /Fl]", {}
    if name == "flate-flate-indirect":
        return zlib.compress(once, 9), b"/Filter 6 0 R", {6: b"[/FlateDecode 7 0 R]", 7: b"/FlateDecode"}
    if name == "ahx-flate":
        return once.hex().encode() + b">", b"/Filter [/ASCIIHexDecode /FlateDecode]", {}
    if name == "a85-flate":
        return base64.a85encode(once, wrapcol=72) + b"~>", b"/Filter [/A85 /FlateDecode]", {}
    if name == "lzw-flate":
        return _lzw(once), b"/Filter [/LZWDecode /FlateDecode]", {}
    if name == "rl-flate":
        return _run_length(once), b"/Filter [/RunLengthDecode /FlateDecode]", {}
    if name == "flate-predictor-flate":
        return (zlib.compress(_png_up(once, 100), 9),
                b"/Filter [/FlateDecode /FlateDecode] /DecodeParms [<< /Predictor 12 /Columns 100 >> null]", {})
    if name == "flate-flate-last-predictor":
        return (zlib.compress(once, 9),
                b"/Filter [/FlateDecode /FlateDecode] /DecodeParms [null << /Predictor 12 /Columns 100 >>]", {})
    raise AssertionError(name)


def _bomb_pdf(name: str) -> bytes:
    data, entries, extra = _chained(name)
    stream = b"<< /Length %d %s >>\nstream\n" % (len(data), entries) + data + b"\nendstream"
    return _pdf({
        1: b"<< /Type /Catalog /Pages 2 0 R >>",
        2: b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        3: b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
           b"/Resources << /Font << /F1 4 0 R >> >> /Contents 5 0 R >>",
        4: FONT,
        5: stream,
        **extra,
    })


CHAINS = ["flate-flate", "fl-fl-short-names", "flate-flate-indirect", "ahx-flate", "a85-flate",
          "lzw-flate", "rl-flate", "flate-predictor-flate", "flate-flate-last-predictor"]


@pytest.mark.parametrize("name", CHAINS)
def test_chained_filter_bomb_is_refused(tmp_path: Path, name: str) -> None:
    # before: only the first Flate stage was counted; a 2,469-byte doubly deflated
    # stream was read at 2.1 GB peak memory
    raw = _bomb_pdf(name)
    pdf = tmp_path / "bomb.pdf"
    pdf.write_bytes(raw)
    at = raw.index(b"stream\n", raw.index(b"5 0 obj")) + len(b"stream\n")
    before = _rss_mb()
    t0 = time.perf_counter()
    with pytest.raises(FormatError) as info:
        read_pdf(pdf)
    assert time.perf_counter() - t0 < 10
    assert _rss_mb() - before < 256
    assert str(info.value) == (
        f"[CLX002] {pdf}: page 1: object 5 (at byte {at:,}) inflates past the document's limit of "
        "134,217,728 decompressed bytes, MAX_PDF_INFLATED_BYTES (clinex.io.limits): a decompression bomb?")


def test_doubly_deflated_bomb_is_a_few_kilobytes() -> None:
    assert len(_bomb_pdf("flate-flate")) < 4_000


@pytest.mark.parametrize("name", ["flate-flate", "ahx-flate", "lzw-flate", "flate-predictor-flate"])
def test_chained_filters_of_an_ordinary_page_read_as_text(tmp_path: Path, name: str) -> None:
    # the same chains on a real content stream: decoded by PDFium, counted under the limits
    content = b"BT /F1 12 Tf 72 700 Td (Allocation was concealed) Tj ET"
    once = zlib.compress(content)
    data, entries = {
        "flate-flate": (zlib.compress(once), b"/Filter [/FlateDecode /FlateDecode]"),
        "ahx-flate": (once.hex().encode() + b">", b"/Filter [/AHx /Fl]"),
        "lzw-flate": (_lzw(once), b"/Filter [/LZWDecode /FlateDecode]"),
        "flate-predictor-flate": (zlib.compress(_png_up(once, 7)),
                                  b"/Filter [/FlateDecode /FlateDecode] "
                                  b"/DecodeParms [<< /Predictor 12 /Columns 7 >> null]"),
    }[name]
    pdf = tmp_path / "ok.pdf"
    pdf.write_bytes(_pdf({
        1: b"<< /Type /Catalog /Pages 2 0 R >>",
        2: b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        3: b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
           b"/Resources << /Font << /F1 4 0 R >> >> /Contents 5 0 R >>",
        4: FONT,
        5: b"<< /Length %d %s >>\nstream\n" % (len(data), entries) + data + b"\nendstream",
    }))
    assert read_pdf(pdf).text == "Allocation was concealed"


def test_chained_page_content_past_the_page_limit_is_refused(tmp_path: Path) -> None:
    # 20 MB doubly deflated: under the document limit, over the page limit (pdfminer's
    # page walk runs the chain too)
    size = limits.MAX_PDF_PAGE_CONTENT_BYTES + 4_000_000
    data = zlib.compress(_zeros_deflated(size), 9)
    pdf = tmp_path / "page.pdf"
    pdf.write_bytes(_page(b"") .replace(b"<< /Length 0 >>\nstream\n\nendstream",
                                        b"<< /Length %d /Filter [/FlateDecode /FlateDecode] >>\nstream\n"
                                        % len(data) + data + b"\nendstream"))
    with pytest.raises(FormatError) as info:
        read_pdf(pdf)
    assert str(info.value) == (
        f"[CLX002] {pdf}: page 1: content inflates past the limit of 16,777,216 decompressed bytes "
        "per page, MAX_PDF_PAGE_CONTENT_BYTES (clinex.io.limits): a decompression bomb?")


def test_too_many_filters_on_one_stream(tmp_path: Path) -> None:
    data = b"BT /F1 12 Tf 72 700 Td (Hi) Tj ET"
    for _ in range(17):
        data = zlib.compress(data)
    chain = b"/Filter [" + b" /FlateDecode" * 17 + b"]"
    pdf = tmp_path / "many.pdf"
    pdf.write_bytes(_page(b"").replace(b"<< /Length 0 >>\nstream\n\nendstream",
                                       b"<< /Length %d %s >>\nstream\n" % (len(data), chain)
                                       + data + b"\nendstream"))
    with pytest.raises(FormatError) as info:
        read_pdf(pdf)
    assert str(info.value) == (f"[CLX002] {pdf}: object 5: 17 filters on one stream, more than "
                               "MAX_PDF_FILTERS = 16 (clinex.io.limits)")


_PEAK = textwrap.dedent(
    """
    import json, resource, subprocess, sys
    proc = subprocess.run(sys.argv[1:], capture_output=True, text=True)
    peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(json.dumps([proc.returncode, peak_mb, proc.stderr.splitlines()]))
    """
)


def test_cli_refuses_doubly_deflated_bomb_in_little_memory(tmp_path: Path) -> None:
    # the case: `clinex rob assess bomb.pdf` ran to exit 0 at 2.1 GB peak RSS
    pdf = tmp_path / "bomb.pdf"
    pdf.write_bytes(_bomb_pdf("flate-flate"))
    clinex = Path(sys.executable).with_name("clinex")
    out = subprocess.run([sys.executable, "-c", _PEAK, str(clinex), "rob", "assess", str(pdf),
                          "-o", str(tmp_path / "out")], capture_output=True, text=True, timeout=300)
    code, peak_mb, lines = json.loads(out.stdout)
    assert code == 2
    assert peak_mb < 600, peak_mb  # MB; 2,100 before
    assert lines[-1] == "[CLX001] field 'inputs': none of the 1 input(s) could be assessed"
    assert lines[0] == (
        f"skipped {pdf}: [CLX002] {pdf}: page 1: object 5 (at byte {_bomb_pdf('flate-flate').index(b'stream') + 7:,}) "
        "inflates past the document's limit of 134,217,728 decompressed bytes, MAX_PDF_INFLATED_BYTES "
        "(clinex.io.limits): a decompression bomb?")
