"""Mutation fuzzing of every clinex reader: seeds, mutations, readers and the verdict.

Shared by ``tests/io/test_fuzz_readers.py`` (short "ci" profile) and ``bench/fuzz.py``
(long profile). Each reader has a small valid seed built here (no corpus needed); a
hypothesis strategy mutates one of its files (byte flips, truncation, deletion,
duplication, insertion of NUL bytes, lone surrogates, deep nesting, huge numbers,
wrong encodings, random unicode or bytes, and the hostile sizes of
:data:`HOSTILE_KINDS`); :func:`run_mutant` writes the files to a
fresh folder, calls the reader under a wall-clock alarm and classifies the outcome:

* ``"result"``: the reader returned;
* ``"clinex"``: it raised a :class:`clinex.errors.ClinexError` whose message has the
  ``[CLXnnn]`` code and names a file of the mutant (checked by :func:`error_problem`);
* ``"hang"``: it ran past the time bound;
* ``"other"``: anything else (a traceback: always a bug).

The module has no pytest dependency so that the bench can import it.
"""

from __future__ import annotations

import functools
import json
import os
import re
import signal
import tempfile
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st

from clinex.errors import ClinexError

__all__ = [
    "HOSTILE_KINDS",
    "READERS",
    "Outcome",
    "Reader",
    "error_problem",
    "mutants",
    "profile",
    "run_mutant",
    "time_limit",
]

# --------------------------------------------------------------------------- profiles

_COMMON = dict(
    derandomize=True,
    deadline=None,
    database=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                           HealthCheck.filter_too_much, HealthCheck.large_base_example],
)
#: CI: a few dozen mutants per reader (the whole module in well under a minute).
settings.register_profile("ci", max_examples=40, **_COMMON)
#: bench/fuzz.py: >= 2,000 mutants per reader, generation only (never shrinks).
settings.register_profile("long", max_examples=2000, phases=[Phase.explicit, Phase.generate], **_COMMON)

#: Seconds one mutant may take (wall clock) before it counts as a hang, plus
#: :data:`TIME_PER_MIB_S` for each MiB of its files (the hostile sizes reach 16 MiB: a
#: reader must stay linear, not finish 16 MiB as fast as 16 KiB).
TIME_LIMIT_S = 5.0
#: Seconds added to :data:`TIME_LIMIT_S` per MiB of a mutant's files.
TIME_PER_MIB_S = 1.0


def time_limit(files: dict[str, bytes], base: float = TIME_LIMIT_S) -> float:
    """The wall-clock bound of one mutant: ``base`` + :data:`TIME_PER_MIB_S` per MiB."""
    return base + TIME_PER_MIB_S * sum(len(v) for v in files.values()) / (1 << 20)


def profile(name: str | None = None) -> settings:
    """The fuzz profile ``name`` (default ``$CLINEX_FUZZ_PROFILE``, else ``"ci"``)."""
    return settings.get_profile(name or os.environ.get("CLINEX_FUZZ_PROFILE", "ci"))


# --------------------------------------------------------------------------- seeds

_PHEE_CONTEXT = "A 54-year-old man developed rash and fever after amoxicillin and clavulanate."


def _phee_line(i: int) -> dict[str, Any]:
    ev = {
        "event_id": "E1",
        "event_type": "Adverse_event",
        "Trigger": {"text": [["developed"]], "start": [[18]], "entity_id": ["T5"]},
        "Effect": {"text": [["rash"], ["fever"]], "start": [[28], [37]], "entity_id": ["T6", "T7"]},
        "Subject": {
            "text": [["A 54-year-old man"]], "start": [[0]], "entity_id": ["T3"],
            "Gender": {"text": [["man"]], "start": [[14]], "entity_id": ["T9"]},
            "Age": {"text": [["54-year-old"]], "start": [[2]], "entity_id": ["T8"]},
        },
        "Treatment": {
            "text": [["amoxicillin", "clavulanate"]], "start": [[49, 65]], "entity_id": ["T4"],
            "Drug": {"text": [["amoxicillin"], ["clavulanate"]], "start": [[49], [65]],
                     "entity_id": ["T10", "T11"]},
            "Combination": [{
                "event_id": "E2", "event_type": "Combination",
                "Trigger": {"text": [["and"]], "start": [[61]], "entity_id": ["T12"]},
                "Drug": {"text": [["amoxicillin"], ["clavulanate"]], "start": [[49], [65]],
                         "entity_id": ["T10", "T11"]},
            }],
        },
        "Severity": {"text": [["fever"]], "start": [[37]], "entity_id": ["T13"], "value": "High"},
    }
    return {"id": f"1_{i}", "context": _PHEE_CONTEXT, "is_mult_event": True,
            "annotations": [{"events": [ev]}], "model": "crf", "event_probability": 0.9}


def _seed_phee() -> dict[str, bytes]:
    lines = [json.dumps(_phee_line(1)), json.dumps({"id": "1_2", "context": "No event here.",
                                                    "annotations": []})]
    return {"s.json": ("\n".join(lines) + "\n").encode()}


def _seed_jsonl() -> dict[str, bytes]:
    rows = [{"id": "r1", "text": "Rash after amoxicillin."},
            {"id": 2, "text": "Patients were randomised by computer.\nAssessors were blinded."},
            {"id": "r3", "context": "Fever on day 3 (PHEE key)."}]
    return {"t.jsonl": ("\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n").encode()}


_BRAT_TEXT = "A 6-year-old boy had severe rash and mild fever after amoxicillin and clavulanate."
_BRAT_ANN = "\n".join([
    "T1\tSubject 0 16\tA 6-year-old boy",
    "T2\tAge 2 12\t6-year-old",
    "T3\tEffect 21 32;42 47\tsevere rash fever",
    "T4\tTreatment 54 81\tamoxicillin and clavulanate",
    "T5\tDrug 54 65\tamoxicillin",
    "T6\tDrug 70 81\tclavulanate",
    "T7\tAdverse_event 48 53\tafter",
    "T8\tSeverity_cue 21 27\tsevere",
    "T9\tCombination 66 69\tand",
    "T10\tGender 13 16\tboy",
    "E1\tAdverse_event:T7 Subject:T1 Effect:T3 Treatment:T4",
    "E2\tCombination:T9 arg:T5 arg2:T6",
    "A1\tSeverity E1 High",
    "#1\tAnnotatorNotes E1\tmodel=crf",
]) + "\n"


def _seed_brat() -> dict[str, bytes]:
    return {"s1.txt": (_BRAT_TEXT + "\n").encode(), "s1.ann": _BRAT_ANN.encode()}


_STAR = "*" * 100


def _seed_n2c2() -> dict[str, bytes]:
    text = (f"\nRecord date: 2071-03-10\nHbA1c 7.2%. Denies chest pain.\n\n{_STAR}\n"
            "Record date: 2072-01-15\nMI 2 months ago; creatinine 1.4 mg/dL.\n")
    xml = ('<?xml version="1.0" encoding="UTF-8" ?>\n<PatientMatching>\n'
           f"<TEXT><![CDATA[{text}]]></TEXT>\n<TAGS>\n"
           '<ABDOMINAL met="met" />\n<HBA1C met="not met" />\n</TAGS>\n</PatientMatching>\n')
    return {"001.xml": xml.encode()}


def _seed_notes() -> dict[str, bytes]:
    return {
        "2071-03-10_clinic.txt": b"HbA1c 7.2%.\nDenies chest pain.\n",
        "b.txt": b"Record date: 2072-01-15\nMI 2 months ago.\r\nCreatinine 1.4 mg/dL.\n",
        "c.txt": "Record date: 3/4/2073\nNo insulin. \u03bcmol/L\n".encode(),
    }


_TAGTOG_LEGEND = {"e_109": "1_1_Yes_Good", "e_115": "1_2_Yes_Good", "e_127": "2_1_No_Good",
                  "m_82": "RoB1", "m_35": "overall_RoB"}


def _seed_tagtog() -> dict[str, bytes]:
    import html as _html

    pages = [("s1v1", "Methods\nPatients were randomised & allocated by computer."),
             ("s2v1", "Outcome assessors were blinded <always>.")]
    body = "".join(f'<pre id="{pid}">{_html.escape(t, quote=False)}</pre>' for pid, t in pages)
    page = ('<!DOCTYPE html >\n<html id="x" class="anndoc" xmlns="http://www.w3.org/1999/xhtml">'
            '<head><meta charset="UTF-8"/><title>x</title></head><body><article><section data-type="">'
            f'<div class="content">{body}</div></section></article></body></html>')

    def ent(cls: str, part: str, start: int, text: str) -> dict:
        return {"classId": cls, "part": part, "offsets": [{"start": start, "text": text}],
                "confidence": {"state": "pre-added", "who": ["user:ann-a"], "prob": 1},
                "fields": {}, "normalizations": {}}

    ann = {"annotatable": {"parts": ["s1v1", "s2v1"]}, "anncomplete": True, "sources": [],
           "metas": {"m_82": {"value": "Low-risk"}, "m_35": {"value": "Some-concerns"}},
           "entities": [ent("e_109", "s1v1", 22, "randomised"), ent("e_127", "s2v1", 0, "Outcome assessors"),
                        ent("e_115", "s1v1", 40, "by computer"), ent("e_115", "s9v1", 0, "x")],
           "relations": []}
    return {"d1.plain.html": page.encode(), "d1.ann.json": json.dumps(ann).encode(),
            "annotations-legend.json": json.dumps(_TAGTOG_LEGEND).encode()}


def _seed_pdf() -> dict[str, bytes]:
    import io

    from reportlab.lib.pagesizes import A4
    from reportlab.pdfgen import canvas

    buf = io.BytesIO()
    c = canvas.Canvas(buf, pagesize=A4, invariant=1, pageCompression=0)
    for lines in (["Background", "Exercise helps patients with heart failure."],
                  ["Methods", "Patients were randomised by computer.", "Assessors were blinded."]):
        c.setFont("Helvetica", 10)
        y = A4[1] - 72
        for line in lines:
            c.drawString(72, y, line)
            y -= 13
        c.showPage()
    c.save()
    return {"trial.pdf": buf.getvalue()}


_JATS = """<?xml version="1.0" encoding="UTF-8"?>
<article xmlns:xlink="http://www.w3.org/1999/xlink" article-type="research-article">
  <front><article-meta>
    <article-id pub-id-type="pmid">12345678</article-id>
    <article-id pub-id-type="pmc">PMC1234567</article-id>
    <title-group><article-title>Exercise &amp; heart failure: a randomised trial</article-title></title-group>
    <abstract><sec><title>Background</title><p>Exercise helps.</p></sec></abstract>
  </article-meta></front>
  <body>
    <sec sec-type="intro"><title>Introduction</title><p>Heart failure is common.</p></sec>
    <sec><title>2. Materials and methods</title>
      <sec><title>Randomisation</title><p>Allocation used <italic>sealed</italic> envelopes.</p></sec>
      <list><list-item><p>Item one.</p></list-item></list>
    </sec>
    <sec><title>Results</title><p>All 120 were analysed.</p>
      <table-wrap><label>Table 1</label><caption><p>Baseline data.</p></caption></table-wrap></sec>
    <p>A loose paragraph.</p>
  </body>
  <back><ref-list><ref id="r1"><mixed-citation>Smith J. Trials. 2001.</mixed-citation></ref></ref-list></back>
</article>
"""


def _seed_jats() -> dict[str, bytes]:
    return {"PMC1.nxml": _JATS.encode()}


def _seed_text() -> dict[str, bytes]:
    text = ("Background\nExercise helps patients with heart failure. It is rarely offered.\n\f"
            "Methods\nPatients were randomised by computer (n = 120). Assessors were blinded.\n\n"
            "Results: 12 of 60 vs. 20 of 60 had events; p = 0.04.\n\f")
    return {"trial.txt": text.encode()}


# --------------------------------------------------------------------------- readers


def _read_phee(d: Path) -> Any:
    from clinex.pv.formats.phee_json import iter_phee_json, read_phee_json

    skipped: list[ClinexError] = []
    kept = list(iter_phee_json(d / "s.json", "skip", on_error=skipped.append))  # never raises
    if not skipped:  # strict mode gives the same sentences: no second full read
        return kept, skipped
    return kept, skipped, read_phee_json(d / "s.json")  # raises at the first bad line


def _read_jsonl(d: Path) -> Any:
    from clinex.io.jsonl import iter_jsonl_texts

    p = d / "t.jsonl"
    skipped: list[ClinexError] = []
    try:
        kept = list(iter_jsonl_texts(p, fallback_text_field="context", errors="skip",
                                     on_error=skipped.append))
    except ClinexError as exc:  # a binary file is refused whole, even in skip mode
        if exc.code != "CLX003":
            raise
        kept = []
    if not skipped:  # strict mode gives the same records: no second full read
        return kept, skipped
    return kept, skipped, list(iter_jsonl_texts(p, fallback_text_field="context"))  # raises


def _read_brat(d: Path) -> Any:
    from clinex.pv.formats.brat import read_brat, to_ann

    item = read_brat(d / "s1.txt")
    to_ann(item)  # what was read can be written back
    return item


def _read_n2c2(d: Path) -> Any:
    from clinex.cohort.formats.n2c2_xml import read_patient

    return read_patient(d / "001.xml")


def _read_notes(d: Path) -> Any:
    from clinex.cohort.formats.notes_folder import read_notes_folder

    return read_notes_folder(d)


def _read_tagtog(d: Path) -> Any:
    from clinex.rob.formats.tagtog import (
        read_tagtog_annotations,
        read_tagtog_document,
        read_tagtog_judgements,
    )

    doc = read_tagtog_document(d / "d1.plain.html")
    warnings: list[str] = []
    spans = read_tagtog_annotations(d / "d1.ann.json", doc, warnings=warnings)
    return doc, spans, read_tagtog_judgements(d / "d1.ann.json")


def _load(name: str) -> Callable[[Path], Any]:
    def read(d: Path) -> Any:
        from clinex.rob.formats.load import load_document

        return load_document(d / name)

    return read


@dataclass(frozen=True)
class Reader:
    """One reader under test: its seed files and how to call it on a folder."""

    name: str
    seed: Callable[[], dict[str, bytes]]
    read: Callable[[Path], Any]
    needs: str | None = None  # an optional module the seed needs (skip without it)


READERS: dict[str, Reader] = {r.name: r for r in [
    Reader("phee_json", _seed_phee, _read_phee),
    Reader("jsonl", _seed_jsonl, _read_jsonl),
    Reader("brat", _seed_brat, _read_brat),
    Reader("n2c2_xml", _seed_n2c2, _read_n2c2),
    Reader("notes_folder", _seed_notes, _read_notes),
    Reader("tagtog", _seed_tagtog, _read_tagtog),
    Reader("pdf", _seed_pdf, _load("trial.pdf"), needs="reportlab"),
    Reader("jats", _seed_jats, _load("PMC1.nxml")),
    Reader("plaintext", _seed_text, _load("trial.txt")),
]}

# --------------------------------------------------------------------------- mutations

_PAYLOADS: list[bytes] = [
    b"\x00", b"\x00" * 7, b"\\ud800", b'"\\udfff"', b"\\ud83d", b"\xed\xa0\x80",  # NUL, lone surrogates
    b"&#xD800;", b"&#0;", b"\xff\xfe", b"\xfe\xff", b"\xef\xbb\xbf", b"\xe9", b"\x80", b"\xc3",
    b"1e999999", b"-1e400", b"9" * 400, b"99999999999999999999999", b"NaN", b"Infinity", b"-0",
    b"\r\n", b"\r", b"\f", b"\t", b"\n\n\n", b" ", b"\u2028".decode("unicode_escape").encode(),
    b"]]>", b"<![CDATA[", b"<!ENTITY a 'b'>", b'<!DOCTYPE x [<!ENTITY e "x">]>', b"&e;", b"&amp;",
    b'<?xml version="1.0" encoding="klingon"?>', b'<?xml version="1.0" encoding="latin-1"?>',
    b'<?xml version="1.0" encoding="UTF-16"?>', b"<sec>", b"</sec>", b"<p>", b"<TEXT>", b"<x>",
    b"{", b"}", b"[", b"]", b'"', b"\\", b":", b",", b"null", b"true", b"[]", b"{}", b'""',
    b"T99\tDrug 0 999999\tx\n", b"E9\tAdverse_event:T99 Effect:E9\n", b"R1\tx Arg1:T1 Arg2:T2\n",
    b"A9\tNegated E1\n", b"#9\tAnnotatorNotes T1\tx=\n", b"T5\tDrug 3;4 5\tx\n", b"T1\t",
    b"Record date: 2071-99-99\n", b"Record date: 0/0/0\n", b"*" * 30 + b"\n",
    b"obj\n<< /Type /Pages /Kids [1 0 R] /Count 99999999 >>\nendobj\n", b"/Filter /FlateDecode",
    b"stream\r\n", b"endstream", b"xref\n0 1\n", b"trailer", b"%%EOF", b"startxref\n-1\n",
    b"BT /F1 10 Tf 72 700 Td (x) Tj ET", b"0 0 R", b"/Length 999999999",
]


def _nesting(kind: int, depth: int) -> bytes:
    if kind == 0:
        return b"[" * depth + b"]" * depth
    if kind == 1:
        return b'{"a":' * depth + b"1" + b"}" * depth
    if kind == 2:
        return b"<sec><p>x</p>" * depth + b"</sec>" * depth
    if kind == 3:
        return b"<x>" * depth + b"</x>" * depth
    if kind == 4:
        return b"[" * depth  # unclosed
    return b"(" * depth + b")" * depth  # PDF strings / regex-ish text


_pos = st.integers(min_value=0, max_value=1 << 20)


@st.composite
def _insertion(draw: st.DrawFn) -> bytes:
    choice = draw(st.integers(0, 4))
    if choice == 0:
        return draw(st.sampled_from(_PAYLOADS))
    if choice == 1:
        kind = draw(st.integers(0, 5))
        depth = draw(st.sampled_from([2, 50, 900, 1100, 5000, 20000, 100000]))
        return _nesting(kind, depth)
    if choice == 2:
        return draw(st.text(max_size=40)).encode("utf-8", "surrogatepass")
    if choice == 3:
        return draw(st.binary(min_size=1, max_size=40))
    return draw(st.sampled_from([b"\x00", b"\n", b"a", b"*", b" "])) * draw(st.integers(1, 3000))


#: The mutation kinds of issue 21 (hostile sizes), each built in :func:`apply` from a
#: small description so that hypothesis never holds megabytes:
#:
#: * ``bigint``: the n-th run of digits of the file (a JSON value, a brat offset, a PDF
#:   number, an XML date) replaced by an integer of thousands of digits;
#: * ``nest10k``: 10,000 nested pairs of ``(``, ``[`` or ``{"a":`` at a position;
#: * ``token``: one token of 100,000 to 1,000,000 characters without a space;
#: * ``longline``: the file's line breaks removed, or a 2-16 MB line of words inserted;
#: * ``repeat``: the n-th line of the file repeated 10,000 times, or the copied-forward
#:   medication line of issue 21 (``aspirin 81 mg daily, atorvastatin 80 mg.``);
#: * ``pdffilter``: the PDF's content streams compressed twice and declared with the
#:   chained filter ``/Filter [/FlateDecode /FlateDecode]``, or one replaced by a
#:   doubly compressed run of 256 MiB of zeros (a decompression bomb).
HOSTILE_KINDS = ("bigint", "nest10k", "token", "longline", "repeat", "pdffilter")
#: A mutant file is cut to this size (the issue's bound: inputs of up to 50 MB).
MAX_MUTANT_BYTES = 50 * (1 << 20)


@st.composite
def _op(draw: st.DrawFn) -> tuple:
    kind = draw(st.sampled_from(["flip", "flip", "byte", "truncate", "delete", "duplicate",
                                 "insert", "insert", "insert", "reencode", *HOSTILE_KINDS]))
    if kind == "bigint":
        return ("bigint", draw(_pos), draw(st.sampled_from([4301, 5000, 20000, 100000])))
    if kind == "nest10k":
        return ("nest10k", draw(_pos), draw(st.sampled_from(["(", "[", "{"])))
    if kind == "token":
        return ("token", draw(_pos), draw(st.sampled_from([100_000, 1_000_000])))
    if kind == "longline":
        return ("longline", draw(_pos), draw(st.sampled_from([0, 2, 16])))
    if kind == "repeat":
        return ("repeat", draw(_pos), draw(st.booleans()))
    if kind == "pdffilter":
        return ("pdffilter", draw(_pos), draw(st.booleans()))
    if kind == "flip":
        return ("flip", draw(_pos), draw(st.integers(0, 7)))
    if kind == "byte":
        return ("byte", draw(_pos), draw(st.sampled_from(b'{}[]<>"\\:,/&;\n\t 0-9e%\x00\xff')))
    if kind == "truncate":
        return ("truncate", draw(_pos))
    if kind in ("delete", "duplicate"):
        return (kind, draw(_pos), draw(st.integers(1, 400)))
    if kind == "insert":
        return ("insert", draw(_pos), draw(_insertion()))
    return ("reencode", draw(st.sampled_from(["utf-16", "utf-16-be", "utf-32", "latin-1",
                                              "cp1252", "utf-8-sig", "ascii"])))


_MEDICATION_LINE = b"aspirin 81 mg daily, atorvastatin 80 mg.\n"
_DIGITS = re.compile(rb"\d+")
_STREAM = re.compile(rb"stream\r?\n(.*?)\r?\nendstream", re.DOTALL)


@functools.lru_cache(maxsize=1)
def _zero_bomb() -> bytes:
    """256 MiB of zeros (twice MAX_PDF_INFLATED_BYTES) compressed twice with zlib (under 1 KB)."""
    z = zlib.compressobj(9)
    chunk = bytes(1 << 20)
    once = b"".join(z.compress(chunk) for _ in range(256)) + z.flush()
    return zlib.compress(once, 9)


def _chain_filters(data: bytes, at: int, bomb: bool) -> bytes:
    """Every content stream of a PDF compressed twice (or the ``at``-th one replaced by
    :func:`_zero_bomb`) and declared ``/Filter [/FlateDecode /FlateDecode]``; the
    stream dictionaries' ``/Length`` follow, the xref offsets do not (PDFium repairs
    them, as it does for many real files). Data without a stream gets the filter text
    inserted at ``at``."""
    streams = list(_STREAM.finditer(data))
    if not streams:
        return data[:at] + b"/Filter [/FlateDecode /FlateDecode]" + data[at:]
    pick = at % len(streams)
    out, last = [], 0
    for i, m in enumerate(streams):
        if bomb and i != pick:
            continue
        head = data[last:m.start()]
        dict_start = head.rfind(b"<<")
        body = _zero_bomb() if bomb else zlib.compress(zlib.compress(m.group(1)))
        if dict_start >= 0:
            d = re.sub(rb"/Filter\s*(\[[^\]]*\]|/\w+)", b"", head[dict_start:])
            d = re.sub(rb"/Length\s+\d+(\s+\d+\s+R)?", b"/Length %d" % len(body), d)
            d = d.replace(b">>", b" /Filter [/FlateDecode /FlateDecode] >>", 1)
            head = head[:dict_start] + d
        out += [head, b"stream\n", body, b"\nendstream"]
        last = m.end()
    return b"".join(out) + data[last:]


def _hostile(data: bytes, op: tuple) -> bytes:
    """Apply one of the :data:`HOSTILE_KINDS`."""
    kind, pos, arg = op
    at = pos % (len(data) + 1)
    if kind == "bigint":
        runs = list(_DIGITS.finditer(data))
        big = b"9" * arg
        if not runs:
            return data[:at] + big + data[at:]
        m = runs[pos % len(runs)]
        return data[:m.start()] + big + data[m.end():]
    if kind == "nest10k":
        opening, closing = {"(": (b"(", b")"), "[": (b"[", b"]"), "{": (b'{"a":', b"}")}[arg]
        return data[:at] + opening * 10_000 + (b"1" if arg == "{" else b"") + closing * 10_000 + data[at:]
    if kind == "token":
        return data[:at] + b"x" * arg + data[at:]
    if kind == "longline":
        if arg == 0:
            return data.replace(b"\r\n", b" ").replace(b"\n", b" ")
        words = b"Patients were randomised by computer and assessors were blinded. "
        return data[:at] + words * (arg * (1 << 20) // len(words)) + data[at:]
    if kind == "repeat":
        if arg:
            return data[:at] + _MEDICATION_LINE * 10_000 + data[at:]
        lines = data.splitlines(keepends=True) or [b"\n"]
        i = pos % len(lines)
        line = lines[i] if lines[i].endswith(b"\n") else lines[i] + b"\n"
        times = max(1, min(10_000, MAX_MUTANT_BYTES // len(line)))
        return b"".join(lines[:i]) + line * times + b"".join(lines[i + 1:])
    if kind == "pdffilter":
        return _chain_filters(data, at, arg)
    raise ValueError(f"unknown mutation kind {kind!r}")


def apply(data: bytes, ops: list[tuple]) -> bytes:
    """``data`` with the mutation ``ops`` applied in order (positions wrap around)."""
    for op in ops:
        n = len(data)
        kind = op[0]
        if kind in HOSTILE_KINDS:
            data = _hostile(data, op)[:MAX_MUTANT_BYTES]
            continue
        if kind == "reencode":
            text = data.decode("utf-8", "replace")
            data = text.encode(op[1], "replace")
            continue
        at = op[1] % (n + 1)
        if kind == "flip" and n:
            at %= n
            data = data[:at] + bytes([data[at] ^ (1 << op[2])]) + data[at + 1:]
        elif kind == "byte" and n:
            at %= n
            data = data[:at] + bytes([op[2]]) + data[at + 1:]
        elif kind == "truncate":
            data = data[:at]
        elif kind == "delete":
            data = data[:at] + data[at + op[2]:]
        elif kind == "duplicate":
            data = data[:at] + data[at:at + op[2]] + data[at:]
        elif kind == "insert":
            data = data[:at] + op[2] + data[at:]
    return data


@st.composite
def mutants(draw: st.DrawFn, seed: dict[str, bytes], hostile: bool = True) -> tuple[str, list[tuple]]:
    """(file name, mutation ops): which seed file to mutate and how; ``hostile=False``
    leaves out the :data:`HOSTILE_KINDS` (megabyte inputs: the bench's, not the default
    suite's)."""
    name = draw(st.sampled_from(sorted(seed)))
    op = _op() if hostile else _op().filter(lambda o: o[0] not in HOSTILE_KINDS)
    ops = draw(st.lists(op, min_size=1, max_size=4))
    return name, ops


# --------------------------------------------------------------------------- verdict


@dataclass
class Outcome:
    """What one mutant did."""

    kind: str  # "result" | "clinex" | "hang" | "other"
    seconds: float
    error: BaseException | None = None
    problem: str | None = None  # why a clinex error's message is not acceptable


class _Hang(BaseException):
    """Raised by the alarm: the reader ran past the time limit."""


def _alarm(signum: int, frame: Any) -> None:
    raise _Hang()


_CODE = re.compile(r"^\[CLX\d{3}\] ")
# how a wrapped bug reads ("unexpected KeyError (please report)"), not a parser's own
# wording ("Unexpected UTF-8 BOM")
_INTERNAL = re.compile(r"unexpected \w*(Error|Exception)\b|please report|Traceback \(most recent",
                       re.IGNORECASE)


def error_problem(exc: ClinexError, folder: Path) -> str | None:
    """Why ``exc`` is not an acceptable reader error, or None when it is: the message
    must start with its ``[CLXnnn]`` code, name a file or folder of the mutant, and not
    read like an internal failure ("unexpected", "please report")."""
    msg = str(exc)
    if not _CODE.match(msg):
        return f"message has no [CLXnnn] code: {msg[:200]!r}"
    if exc.path is None or not str(exc.path).startswith(str(folder)):
        return f"message names no file of the input: {msg[:200]!r}"
    if _INTERNAL.search(msg):
        return f"message reads like an internal error: {msg[:200]!r}"
    return None


def run_mutant(reader: Reader, files: dict[str, bytes], *, base_limit: float = TIME_LIMIT_S) -> Outcome:
    """Write ``files`` to a fresh folder, run ``reader`` on it and classify the outcome
    (a hang: past :func:`time_limit` of the files with ``base_limit``)."""
    limit = time_limit(files, base_limit)
    with tempfile.TemporaryDirectory(prefix=f"clinex-fuzz-{reader.name}-") as tmp:
        folder = Path(tmp)
        for name, data in files.items():
            (folder / name).write_bytes(data)
        old = signal.signal(signal.SIGALRM, _alarm)
        # the alarm repeats every 0.25 s: one raised where Python ignores exceptions (a
        # gc callback) must not let the reader run on unbounded
        signal.setitimer(signal.ITIMER_REAL, limit, 0.25)
        t0 = time.perf_counter()
        try:
            try:
                reader.read(folder)
                kind, err = "result", None
            except _Hang as exc:
                kind, err = "hang", exc
            except ClinexError as exc:
                kind, err = "clinex", exc
            except RecursionError as exc:
                kind, err = "other", exc
            except Exception as exc:  # noqa: BLE001  (the point: any other exception is a bug)
                kind, err = "other", exc
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
        except _Hang as exc:  # the alarm fired while an outcome was being taken
            signal.setitimer(signal.ITIMER_REAL, 0)
            kind, err = "hang", exc
        finally:
            signal.signal(signal.SIGALRM, old)
        problem = None
        if kind == "clinex":
            problem = error_problem(err, folder)
            kind = "clinex" if problem is None else "other"
        seconds = time.perf_counter() - t0
    if kind != "hang" and seconds > limit:  # C code the alarm could not interrupt
        kind = "hang"
    return Outcome(kind, seconds, err, problem)


def mutate(seed: dict[str, bytes], mutant: tuple[str, list[tuple]]) -> dict[str, bytes]:
    """The seed files with one of them mutated."""
    name, ops = mutant
    return {**seed, name: apply(seed[name], ops)}


def describe(mutant: tuple[str, list[tuple]]) -> str:
    """A short, reproducible description of a mutant (ops with payloads cut to 60 bytes)."""
    name, ops = mutant
    shown = [tuple(o[:2]) + ((o[2][:60] + (b"..." if len(o[2]) > 60 else b""),)
                             if len(o) > 2 and isinstance(o[2], bytes) else o[2:]) for o in ops]
    return f"{name}: {shown}"
