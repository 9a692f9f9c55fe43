"""PDFium from many threads at once (issue 21): one process-wide lock, no crash.

pypdfium2 / PDFium is not thread-safe; two web requests reading a 2.8 KB PDF each on
worker threads aborted ``clinex serve`` ("double free or corruption"). The reads run
in a child process, so that a crash of PDFium fails the test instead of killing
pytest.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("reportlab")

from reportlab.lib.pagesizes import A4  # noqa: E402
from reportlab.pdfgen import canvas  # noqa: E402

W, H = A4

_CHILD = textwrap.dedent(
    """
    import json, sys
    from concurrent.futures import ThreadPoolExecutor
    from clinex.io.pdf import read_pdf

    paths = sys.argv[1:]
    def read(path):
        doc = read_pdf(path)
        return [doc.text, [(p.start, p.end) for p in doc.pages], doc.meta["columns"]]

    sequential = [read(p) for p in paths]
    with ThreadPoolExecutor(max_workers=16) as pool:
        # 16 threads; every file read 40 times (without the lock this crashed the
        # child with SIGSEGV in 3 of 7 runs here; the issue saw "double free or corruption")
        threaded = list(pool.map(read, paths * 40))
    print(json.dumps({"sequential": sequential, "threaded": threaded}))
    """
)

#: One standard font per file: PDFium's font cache is process-wide state too.
FONTS = ["Helvetica", "Times-Roman", "Courier", "Helvetica-Bold", "Times-Italic", "Courier-Bold",
         "Helvetica-Oblique", "Times-Bold"]


def _report(path: Path, k: int) -> Path:
    """A small two-page, two-column report (1.5-3 KB, like the upload of the issue) in font ``k``."""
    c = canvas.Canvas(str(path), pagesize=A4)
    for page in range(2):
        c.setFont(FONTS[k], 10)
        for col, x in enumerate((60, W / 2 + 20)):
            y = H - 72
            for line in range(6):
                c.drawString(x, y, f"Report {k} page {page + 1} column {col + 1} line {line + 1}.")
                y -= 13
        c.showPage()
    c.save()
    return path


def test_sixteen_threads_read_pdfs_as_one_thread_does(tmp_path: Path) -> None:
    paths = [str(_report(tmp_path / f"r{k}.pdf", k)) for k in range(len(FONTS))]
    proc = subprocess.run([sys.executable, "-c", _CHILD, *paths],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
    out = json.loads(proc.stdout)
    sequential, threaded = out["sequential"], out["threaded"]
    assert threaded == sequential * 40
    # each file read whole: 2 pages of 2 columns, left column first, its own text
    for k, (text, pages, columns) in enumerate(sequential):
        assert columns == [2, 2]
        assert len(pages) == 2
        first = [f"Report {k} page 1 column {c} line {n}." for c in (1, 2) for n in range(1, 7)]
        assert text[pages[0][0]:pages[0][1]] == "\n".join(first[:6]) + "\n\n" + "\n".join(first[6:])
        assert text.count(f"Report {k} page 2 column 2 line ") == 6
