"""Shared pieces live once (issue 11, item 4): P/R/F1 and the ``CLINEX_DATA`` default.

Precision, recall and F1 from counts are computed only in
``clinex/metrics/counts.py`` (:func:`clinex.metrics.prf`), and ``$CLINEX_DATA`` is
read only in ``clinex/datasets.py`` (:func:`clinex.datasets.data_home`). These
tests grep the package so a copy cannot come back unnoticed.
"""

from __future__ import annotations

import io
import re
import tokenize
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

import clinex
from clinex.metrics import f1_from, prf

PKG = Path(clinex.__file__).resolve().parent

#: Formulas that recompute P/R/F1 from counts (the arithmetic, not the words).
PRF_PATTERNS = {
    "harmonic mean 2*P*R": re.compile(r"\b2\s*\*\s*[\w.\[\]]+\s*\*\s*[\w.\[\]]+\s*/"),
    "2*TP over counts": re.compile(r"\b2\s*\*\s*[\w.]*tp\b[\w.\[\]]*\s*[/+]", re.IGNORECASE),
    "tp / (tp + ...)": re.compile(r"\b([A-Za-z_][\w.]*(?:\[\w+\])?)\s*/\s*\(\s*\1\s*\+"),
    "div(tp, tp + ...)": re.compile(
        r"\w*(?:div|ratio)\w*\(\s*([\w.]*tp\w*(?:\[\w+\])?)\s*,\s*\1\s*\+", re.IGNORECASE
    ),
}
PRF_HOME = PKG / "metrics" / "counts.py"

DATA_ENV = re.compile(r"""environ(?:\.get\(|\[)\s*['"]CLINEX_DATA['"]|getenv\(\s*['"]CLINEX_DATA['"]""")
DATA_HOME = PKG / "datasets.py"


def _code(path: Path) -> str:
    """The file's code: comments and string literals (docstrings) blanked, lines kept."""
    src = path.read_text(encoding="utf-8")
    lines = src.splitlines(keepends=True)
    out = [list(line) for line in lines]
    for tok in tokenize.generate_tokens(io.StringIO(src).readline):
        if tok.type in (tokenize.COMMENT, tokenize.STRING) or tok.type == getattr(tokenize, "FSTRING_MIDDLE", -1):
            (r0, c0), (r1, c1) = tok.start, tok.end
            for r in range(r0, r1 + 1):
                row = out[r - 1]
                lo = c0 if r == r0 else 0
                hi = c1 if r == r1 else len(row)
                for c in range(lo, hi):
                    if row[c] != "\n":
                        row[c] = " "
    return "".join("".join(row) for row in out)


def _sources() -> list[Path]:
    return sorted(PKG.rglob("*.py"))


def test_prf_is_computed_in_one_module() -> None:
    hits = []
    for path in _sources():
        if path == PRF_HOME:
            continue
        text = _code(path)
        for name, pat in PRF_PATTERNS.items():
            for m in pat.finditer(text):
                line = text.count("\n", 0, m.start()) + 1
                hits.append(f"{path.relative_to(PKG)}:{line}: {name}: {m.group(0).strip()!r}")
    assert not hits, "P/R/F1 recomputed outside clinex/metrics/counts.py (use clinex.metrics.prf):\n" + "\n".join(hits)


def test_clinex_data_read_in_one_module() -> None:
    hits = [
        str(p.relative_to(PKG))
        for p in _sources()
        if p != DATA_HOME and DATA_ENV.search(_code(p))
    ]
    assert not hits, "read $CLINEX_DATA through clinex.datasets.data_home(), not in: " + ", ".join(hits)


def test_guards_catch_copies(tmp_path: Path) -> None:
    """The patterns match the copies this change removed."""
    copies = [
        "f = 2 * p * r / (p + r) if p + r else 0.0",
        "out = 2 * prec * rec / (prec + rec)",
        "return 0.0 if denom == 0 else 2 * tp / denom",
        "denom = 2 * tp[q] + fp[q] + fn[q]",
        "p = tp / (tp + fp)",
        "p, r = _div(tp, tp + fp), _div(tp, tp + fn)",
    ]
    for c in copies:
        assert any(p.search(c) for p in PRF_PATTERNS.values()), c
    assert DATA_ENV.search('Path(os.environ.get("CLINEX_DATA", Path.home() / ".cache"))')
    assert DATA_ENV.search("os.getenv('CLINEX_DATA')")


def test_data_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from clinex.datasets import data_home
    from clinex.rob.evidence import default_model_path

    monkeypatch.setenv("CLINEX_DATA", str(tmp_path))
    assert data_home() == tmp_path
    assert default_model_path() == tmp_path / "models" / "rob-sentence.joblib"
    monkeypatch.delenv("CLINEX_DATA")
    assert data_home() == Path.home() / ".cache" / "clinex"


@pytest.mark.parametrize(
    ("tp", "fp", "fn", "expected"),
    [
        (1, 1, 3, (0.5, 0.25, 1 / 3)),
        (0, 0, 0, (0.0, 0.0, 0.0)),  # empty gold and prediction: 0, not 1
        (0, 2, 0, (0.0, 0.0, 0.0)),  # no gold: recall 0
        (0, 0, 2, (0.0, 0.0, 0.0)),  # no prediction: precision 0
        (3, 0, 0, (1.0, 1.0, 1.0)),
    ],
)
def test_prf_float(tp: int, fp: int, fn: int, expected: tuple[float, float, float]) -> None:
    got = prf(tp, fp, fn)
    assert got == pytest.approx(expected) and all(type(x) is float for x in got)


def test_prf_fraction_is_exact_and_equals_pairwise_form() -> None:
    for tp, fp, fn in [(1, 2, 3), (7, 0, 5), (0, 4, 0), (0, 0, 0), (13, 29, 31)]:
        p, r, f = prf(Fraction(tp), Fraction(fp), Fraction(fn))
        assert all(isinstance(x, Fraction) for x in (p, r, f))
        denom = 2 * tp + fp + fn
        assert f == (Fraction(2 * tp, denom) if denom else 0)


def test_prf_arrays_match_scalars() -> None:
    tp = np.array([[1.0, 0.0, 3.0], [0.0, 5.0, 2.0]])
    fp = np.array([[1.0, 0.0, 0.0], [2.0, 1.0, 0.0]])
    fn = np.array([[3.0, 0.0, 0.0], [0.0, 0.0, 4.0]])
    p, r, f = prf(tp, fp, fn)
    assert p.shape == r.shape == f.shape == tp.shape
    for i in np.ndindex(tp.shape):
        assert (p[i], r[i], f[i]) == prf(float(tp[i]), float(fp[i]), float(fn[i]))
    assert prf(np.float64(0.0), np.float64(0.0), np.float64(0.0))[2] == 0.0  # numpy scalars too
    assert f1_from(0.0, 0.0) == 0.0


#: Signs of a sentence splitter other than clinex.text's (issue 11, item 2), in raw source
#: (strings included: spaCy pipe names and regular expressions are string literals).
SPLITTER_SOURCE = {
    "spaCy/medspaCy sentencizer pipe": re.compile(
        r"""add_pipe\(\s*['"](?:sentencizer|senter|parser|medspacy_pyrush|pyrush)['"]"""),
    "sentence-splitting library": re.compile(
        r"\b(?:import|from)\s+(?:pysbd|nltk|syntok|blingfire|stanza|PyRuSH)\b|sent_tokenize|PunktSentenceTokenizer"),
    "sentence-boundary regex (end mark look-behind, capital look-ahead)": re.compile(
        r"\(\?<=[^)\n]*\[[.!?]{3}\][^)\n]*\)[^\n]{0,40}?\(\?=[^)\n]*A-Z"),
}
#: Setting spaCy sentence starts (in code): only cohort/nlp.py, from clinex.text's offsets;
#: elsewhere only ``= i == 0`` (the whole Doc one sentence, as the ConText scorers do).
SENT_START = re.compile(r"\.is_sent_start\s*=(?!\s*i\s*==\s*0\s*$)", re.MULTILINE)
SPLITTER_HOME = PKG / "text.py"
SENT_START_HOME = PKG / "cohort" / "nlp.py"


def _splitter_hits(rel: str, raw: str, code: str) -> list[str]:
    hits = [f"{rel}: {name}" for name, pat in SPLITTER_SOURCE.items() if pat.search(raw)]
    if rel != str(SENT_START_HOME.relative_to(PKG)) and SENT_START.search(code):
        hits.append(f"{rel}: sets is_sent_start")
    return hits


def test_one_sentence_splitter() -> None:
    """clinex.text.sentence_offsets is the package's only sentence splitter: no spaCy or
    library sentencizer, no boundary regex and no ``is_sent_start`` rules elsewhere; the
    cohort pipeline copies the splitter's offsets onto its tokens."""
    hits = []
    for path in _sources():
        if path == SPLITTER_HOME:
            continue
        hits += _splitter_hits(str(path.relative_to(PKG)), path.read_text(encoding="utf-8"), _code(path))
    assert not hits, "a second sentence splitter (use clinex.text.sentence_offsets):\n" + "\n".join(hits)
    nlp_src = SENT_START_HOME.read_text(encoding="utf-8")
    assert "from clinex.text import CLINICAL_NOTE_RULES, sentence_offsets" in nlp_src
    assert re.search(r"sentence_offsets\(doc\.text, \*\*CLINICAL_NOTE_RULES\)", _code(SENT_START_HOME))
    # the patterns catch the splitters this change removed
    copies = [
        ('nlp.add_pipe("sentencizer")', ""),
        ("import pysbd", ""),
        (r'''_BOUNDARY = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9])|\n\s*\n")''', ""),
        (r'''    r"|(?<=[a-z0-9][.!?])(?=[A-Z][a-z])"''', ""),
        ("", "            tok.is_sent_start = start\n"),
    ]
    for raw, code in copies:
        assert _splitter_hits("x.py", raw, code), (raw, code)
    assert not _splitter_hits("x.py", "", "        tok.is_sent_start = i == 0\n")


def test_one_json_lines_sniffer() -> None:
    """Issue 24: the JSON-lines test (a .jsonl/.json/.ndjson name, or content starting with
    '{') lives only in ``clinex/io/jsonl.py`` (:func:`clinex.io.jsonl.is_jsonl`); the CLI,
    batch and the web upload call it."""
    copies = []
    suffixes = re.compile(r"""\(\s*["']\.jsonl["']\s*,\s*["']\.(nd)?json["']""")
    for path in sorted(PKG.rglob("*.py")):
        if path == PKG / "io" / "jsonl.py":
            continue
        text = path.read_text(encoding="utf-8")
        if suffixes.search(text) or 'startswith(b"{")' in text:
            copies.append(str(path.relative_to(PKG)))
    assert copies == [], "JSON-lines sniffing outside clinex/io/jsonl.py: " + ", ".join(copies)


def _hits(pattern: re.Pattern[str], allowed: set[str]) -> list[str]:
    """``file:line: match`` of every match of ``pattern`` in the package's code (comments
    and docstrings blanked) outside the files named in ``allowed`` (paths under clinex/)."""
    hits = []
    for path in _sources():
        rel = path.relative_to(PKG).as_posix()
        if rel in allowed:
            continue
        code = _code(path)
        for m in pattern.finditer(code):
            hits.append(f"{rel}:{code.count(chr(10), 0, m.start()) + 1}: {m.group(0)}")
    return hits


XML_PARSE = re.compile(r"\bdefusedxml\b|\b(?:ElementTree|ET|etree)\.(?:parse|fromstring|iterparse|XMLParser|XML)\(")
XML_HOMES = {"io/xmlfile.py", "io/medline.py"}


def test_one_xml_parse() -> None:
    """docs/ARCHITECTURE.md: ``io/xmlfile.py`` is the one safe XML parse of the document
    readers (:func:`clinex.io.xmlfile.parse_xml`); the MEDLINE reader streams with
    defusedxml's ``iterparse``, the only other parse. Building XML (E2B) is no parse."""
    hits = _hits(XML_PARSE, XML_HOMES)
    assert hits == [], "XML parsed outside clinex.io.xmlfile.parse_xml:\n" + "\n".join(hits)
    for copy in ("from defusedxml import ElementTree", "tree = ElementTree.parse(str(path))",
                 "root = SafeET.fromstring(source)" .replace("SafeET", "ET")):
        assert XML_PARSE.search(copy), copy
    assert not XML_PARSE.search("el = ET.SubElement(parent, tag)")


PROGRESS_LIB = re.compile(r"\brich\.progress\b|\btqdm\b|\balive_progress\b")


def test_one_progress_reporter() -> None:
    """docs/ARCHITECTURE.md: ``progress.py`` is the one progress reporter of every long
    verb; no other module draws a bar with a library of its own."""
    hits = _hits(PROGRESS_LIB, {"progress.py"})
    assert hits == [], "a progress bar outside clinex.progress:\n" + "\n".join(hits)
    assert PROGRESS_LIB.search("from rich.progress import Progress, BarColumn")
    assert PROGRESS_LIB.search("for x in tqdm(items):")


THREAD_KNOBS = re.compile(
    r"\bintra_op_num_threads\b|\bset_num_threads\(|\bOMP_NUM_THREADS\b|\bMKL_NUM_THREADS\b|\bsched_getaffinity\b"
)


def test_one_thread_setting() -> None:
    """docs/ARCHITECTURE.md: ``threads.py`` is the one thread setting of model calls. A model
    may apply a thread count to its runtime (ONNX Runtime's session options, torch), but
    only a module that takes the count from :mod:`clinex.threads` may do so."""
    bad = []
    for hit in _hits(THREAD_KNOBS, {"threads.py"}):
        rel = hit.split(":", 1)[0]
        if "clinex.threads" not in (PKG / rel).read_text(encoding="utf-8"):
            bad.append(hit)
    assert bad == [], "a thread count set without clinex.threads:\n" + "\n".join(bad)
    assert THREAD_KNOBS.search("opts.intra_op_num_threads = 2")
    assert THREAD_KNOBS.search('os.environ["OMP_NUM_THREADS"] = "1"')


LEAVING = re.compile(r"\bSystemExit\(|\bsys\.exit\(|\bos\._exit\(|\btyper\.Exit\(\s*(?!(?:code\s*=\s*)?0\s*\))(?!\))")


def test_one_exit_status() -> None:
    """docs/ARCHITECTURE.md: a run that may skip items leaves through the one exit-status
    helper (:func:`clinex.surface.exit_status` and :func:`clinex.surface.finish`: 0 all
    done, 1 some skipped, 2 none done); only the root entry point (:func:`clinex.cli.main`)
    also maps errors to a status."""
    hits = _hits(LEAVING, {"surface.py", "cli.py"})
    assert hits == [], "a command leaves with its own status (use clinex.surface.finish):\n" + "\n".join(hits)
    for copy in ("raise typer.Exit(code=1)", "raise typer.Exit(1)", "sys.exit(status)", "raise SystemExit(2)",
                 "raise typer.Exit(code=rc)"):
        assert LEAVING.search(copy), copy
    assert not LEAVING.search("raise typer.Exit(code=0)") and not LEAVING.search("raise typer.Exit()")


def test_one_model_setting() -> None:
    """docs/ARCHITECTURE.md: the model of a run is resolved once, by
    :class:`clinex.surface.Settings` (the option, then ``$CLINEX_<TASK>_MODEL``, then
    ``auto``); no surface reads a model variable itself (``$CLINEX_LLM_MODEL``, the LLM
    server's model name, is read by :mod:`clinex.llm.config`)."""
    hits = []
    for path in _sources():
        rel = path.relative_to(PKG).as_posix()
        if rel in ("surface.py", "llm/config.py"):
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if re.search(r"\b(?:environ|getenv)\b", line) and "_MODEL" in line:
                hits.append(f"{rel}:{n}: {line.strip()}")
    assert hits == [], "a model variable read outside clinex.surface.Settings:\n" + "\n".join(hits)
