"""Huge trial reports (issue 21): refused by size before the expensive work.

A 50 MB text on one line kept ``clinex rob assess`` running past a minute above
1.6 GB; the assessment costs about a minute per million characters. Text, XML and
HTML files over ``MAX_REPORT_FILE_BYTES`` are refused from their size, unread; any
report whose text passes ``MAX_REPORT_CHARS`` is refused right after reading.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from clinex.errors import FormatError
from clinex.io import limits
from clinex.rob.formats.load import load_document

SENTENCE = "Participants were randomly assigned by a computer-generated sequence. "


def _jats(path: Path, paragraphs: int) -> Path:
    body = "".join(f"<p>{SENTENCE * 10}</p>\n" for _ in range(paragraphs))
    path.write_text('<?xml version="1.0"?>\n<article><front><article-meta><title-group>'
                    "<article-title>Trial</article-title></title-group></article-meta></front>"
                    f'<body><sec sec-type="methods"><title>Methods</title>{body}</sec></body></article>\n',
                    encoding="utf-8")
    return path


def test_limit_values() -> None:
    assert limits.MAX_REPORT_CHARS == 1_000_000
    assert limits.MAX_REPORT_FILE_BYTES == 8 * 1024 * 1024


def test_text_of_too_many_characters_is_refused(tmp_path: Path) -> None:
    # one line of 1,000,020 characters (under the byte limit: read, then refused)
    txt = tmp_path / "one_line.txt"
    txt.write_text(SENTENCE * 14_286, encoding="utf-8")
    assert len(SENTENCE) * 14_286 == 1_000_020
    with pytest.raises(FormatError) as info:
        load_document(txt)
    assert str(info.value) == (
        f"[CLX002] {txt}: text of 1,000,020 characters, more than MAX_REPORT_CHARS = 1,000,000 "
        "(clinex.io.limits): a trial report is 100-300 KB of text; split the file")


def test_text_at_the_limit_is_read(tmp_path: Path) -> None:
    txt = tmp_path / "long.txt"
    txt.write_text(SENTENCE * 14_285, encoding="utf-8")  # 999,950 characters
    doc = load_document(txt)
    assert len(doc.text) == 999_950
    assert len(doc.sentences) == 14_285


@pytest.mark.parametrize("suffix", [".txt", ".xml", ".html"])
def test_file_over_the_byte_limit_is_refused_unread(tmp_path: Path, suffix: str) -> None:
    big = tmp_path / f"huge{suffix}"
    with open(big, "wb") as fh:  # a sparse file: the size alone decides
        fh.truncate(limits.MAX_REPORT_FILE_BYTES + 1)
    with pytest.raises(FormatError) as info:
        load_document(big)
    assert str(info.value) == (
        f"[CLX002] {big}: file of 8,388,609 bytes, more than MAX_REPORT_FILE_BYTES = 8,388,608 "
        "(clinex.io.limits): a trial report is 100-300 KB of text; split the file")


def test_jats_under_the_byte_limit_with_too_much_text_is_refused(tmp_path: Path) -> None:
    xml = _jats(tmp_path / "long.xml", 1_500)  # 1.06 MB of XML
    assert xml.stat().st_size < limits.MAX_REPORT_FILE_BYTES
    with pytest.raises(FormatError) as info:
        load_document(xml)
    # the text as read_jats lays it out: title, heading, 1,500 paragraphs
    assert str(info.value) == (
        f"[CLX002] {xml}: text of 1,051,514 characters, more than MAX_REPORT_CHARS = 1,000,000 "
        "(clinex.io.limits): a trial report is 100-300 KB of text; split the file")


def test_pdf_text_is_held_to_the_character_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("reportlab")
    from reportlab.pdfgen import canvas

    pdf = tmp_path / "short.pdf"
    c = canvas.Canvas(str(pdf))
    c.setFont("Helvetica", 10)
    c.drawString(72, 700, "Allocation was concealed.")
    c.showPage()
    c.save()
    assert load_document(pdf).text == "Allocation was concealed."
    monkeypatch.setattr(limits, "MAX_REPORT_CHARS", 20)  # read at call time
    with pytest.raises(FormatError) as info:
        load_document(pdf)
    assert str(info.value) == (
        f"[CLX002] {pdf}: text of 25 characters, more than MAX_REPORT_CHARS = 20 "
        "(clinex.io.limits): a trial report is 100-300 KB of text; split the file")


_PEAK = textwrap.dedent(
    """
    import json, resource, subprocess, sys, time
    t0 = time.perf_counter()
    proc = subprocess.run(sys.argv[1:], capture_output=True, text=True)
    print(json.dumps([proc.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024,
                      time.perf_counter() - t0, proc.stderr.splitlines()]))
    """
)


@pytest.mark.parametrize(("name", "size"), [("one_line_50mb.txt", 50_000_000), ("one_line_4mb.txt", 4_000_000)])
def test_cli_refuses_huge_one_line_text_in_little_memory(tmp_path: Path, name: str, size: int) -> None:
    # the case: 50 MB on one line ran past a minute above 1.6 GB
    txt = tmp_path / name
    with open(txt, "w", encoding="utf-8") as fh:
        for _ in range(size // len(SENTENCE)):
            fh.write(SENTENCE)
    n = (size // len(SENTENCE)) * len(SENTENCE)
    clinex = Path(sys.executable).with_name("clinex")
    out = subprocess.run([sys.executable, "-c", _PEAK, str(clinex), "rob", "assess", str(txt),
                          "-o", str(tmp_path / "out")], capture_output=True, text=True, timeout=300)
    code, peak_mb, seconds, lines = json.loads(out.stdout)
    assert code == 2
    assert peak_mb < 1024, peak_mb
    expected = (f"file of {n:,} bytes, more than MAX_REPORT_FILE_BYTES = 8,388,608"
                if n > limits.MAX_REPORT_FILE_BYTES else
                f"text of {n:,} characters, more than MAX_REPORT_CHARS = 1,000,000")
    assert lines[0] == (f"skipped {txt}: [CLX002] {txt}: {expected} (clinex.io.limits): "
                        "a trial report is 100-300 KB of text; split the file")
    assert lines[-1] == "[CLX001] field 'inputs': none of the 1 input(s) could be assessed"
    assert not (tmp_path / "out").exists()
