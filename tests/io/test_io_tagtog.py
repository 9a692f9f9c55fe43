"""tagtog plain.html + ann.json reader: page joins, offsets, labels, judgements, bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clinex.errors import FormatError, InputError, SchemaError
from clinex.rob.formats.tagtog import (
    PAGE_SEPARATOR,
    doc_key,
    iter_corpus,
    parse_label,
    read_tagtog_annotations,
    read_tagtog_document,
    read_tagtog_judgements,
    sq_of,
)

LEGEND = {
    "e_109": "1_1_ProbablyYes_Good",
    "e_127": "2_1_No_Information",
    "e_115": "1_2_No_Bad",
    "m_82": "RoB1",
    "m_35": "overall_RoB",
}

PAGE1 = "Patients were randomised & allocated by computer."
PAGE2 = "Outcome assessors were blinded <always>."


def _html(pages: list[tuple[str, str]]) -> str:
    import html

    body = "".join(f'<pre id="{pid}">{html.escape(t, quote=False)}</pre>' for pid, t in pages)
    return (
        '<!DOCTYPE html >\n<html id="x" class="anndoc" xmlns="http://www.w3.org/1999/xhtml">'
        f'<head><meta charset="UTF-8"/><title>x</title></head><body><article><section data-type="">'
        f'<div class="content">{body}</div></section></article></body></html>'
    )


def _entity(cls: str, part: str, start: int, text: str) -> dict:
    return {
        "classId": cls,
        "part": part,
        "offsets": [{"start": start, "text": text}],
        "confidence": {"state": "pre-added", "who": ["user:ann-a"], "prob": 1},
        "fields": {},
        "normalizations": {},
    }


@pytest.fixture
def export(tmp_path: Path) -> Path:
    """A two-page, one-annotator tagtog export (pages given out of order in the file)."""
    (tmp_path / "plain.html" / "pool").mkdir(parents=True)
    (tmp_path / "ann.json" / "members" / "ann-a" / "pool").mkdir(parents=True)
    (tmp_path / "annotations-legend.json").write_text(json.dumps(LEGEND))
    html = tmp_path / "plain.html" / "pool" / "d1-trial.pdf.plain.html"
    html.write_text(_html([("s2v1", PAGE2), ("s1v1", PAGE1)]), encoding="utf-8")
    ann = {
        "annotatable": {"parts": ["s1v1", "s2v1"]},
        "anncomplete": True,
        "sources": [],
        "metas": {
            "m_82": {"value": "Low-risk"},
            "m_35": {"value": "Some-concerns"},
        },
        "entities": [
            _entity("e_109", "s1v1", 14, "randomised"),          # exact
            _entity("e_127", "s2v1", 0, "Outcome assessors"),    # exact, page 2
            _entity("e_115", "s1v1", 30, "by computer"),          # off by -7 (true start 37)
            _entity("e_115", "s1v1", 40, "computer. and beyond"),  # runs past the page end
            _entity("e_115", "s1v1", 900, "nowhere"),             # outside the page
            _entity("e_115", "s9v1", 0, "x"),                     # unknown page
            _entity("e_999", "s2v1", 31, "<always>"),             # unknown class, escaped text
        ],
        "relations": [],
    }
    (tmp_path / "ann.json" / "members" / "ann-a" / "pool" / "d1-trial.pdf.ann.json").write_text(
        json.dumps(ann)
    )
    return tmp_path


def test_document_pages_and_offsets(export: Path) -> None:
    doc = read_tagtog_document(export / "plain.html/pool/d1-trial.pdf.plain.html")
    assert doc.id == "d1-trial"
    assert doc.text == PAGE1 + PAGE_SEPARATOR + PAGE2
    assert doc.meta["page_ids"] == ["s1v1", "s2v1"]
    assert [p.label for p in doc.pages] == ["1", "2"]
    assert doc.pages[1].start == len(PAGE1) + 2
    assert doc.page_of(0) == 1 and doc.page_of(len(PAGE1) + 2) == 2
    assert [s.text for s in doc.sentences] == [PAGE1, PAGE2]


def test_annotations_labels_offsets_and_warnings(export: Path) -> None:
    doc = read_tagtog_document(export / "plain.html/pool/d1-trial.pdf.plain.html")
    warnings: list[str] = []
    spans = read_tagtog_annotations(
        export / "ann.json/members/ann-a/pool/d1-trial.pdf.ann.json", doc, warnings=warnings
    )
    got = [(s.label, s.text, doc.page_of(s.start)) for s in spans]
    assert got == [
        ("1_1_ProbablyYes_Good", "randomised", 1),
        ("2_1_No_Information", "Outcome assessors", 2),
        ("1_2_No_Bad", "by computer", 1),
        ("1_2_No_Bad", "computer.", 1),
        ("e_999", "<always>", 2),
    ]
    assert spans[0].source == "tagtog:ann-a"
    assert spans[2].start == 37
    assert len(warnings) == 5
    assert "realigned by +7" in warnings[0]
    assert "clamped" in warnings[1]
    assert "outside page s1v1" in warnings[2]
    assert "'s9v1' is not in the document" in warnings[3]
    assert "'e_999' not in the legend" in warnings[4]


def test_annotations_without_alignment_keep_export_offsets(export: Path) -> None:
    doc = read_tagtog_document(export / "plain.html/pool/d1-trial.pdf.plain.html")
    spans = read_tagtog_annotations(
        export / "ann.json/members/ann-a/pool/d1-trial.pdf.ann.json", doc, align=False, warnings=[]
    )
    assert (spans[2].start, spans[2].end) == (30, 41)


def test_judgements(export: Path) -> None:
    got = read_tagtog_judgements(export / "ann.json/members/ann-a/pool/d1-trial.pdf.ann.json")
    assert got == {"D1": "Low", "overall": "Some concerns"}


def test_iter_corpus(export: Path) -> None:
    items = list(iter_corpus(export, "ann-a", warnings=[]))
    assert [(k, len(s)) for k, _, s in items] == [("d1-trial", 5)]
    with pytest.raises(InputError):
        list(iter_corpus(export, "nobody"))


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("1_1_ProbablyYes_Good", ("1.1", "Yes", "Good")),
        ("1_3_ProbablyNo_Good", ("1.3", "No", "Good")),
        ("2_1_No_Information", ("2.1", "No Information", None)),
        ("5_2_Yes_Bad", ("5.2", "Yes", "Bad")),
    ],
)
def test_parse_label(name: str, expected: tuple) -> None:
    assert parse_label(name) == expected


def test_parse_label_unfolded_and_bad() -> None:
    assert parse_label("4_2_ProbablyYes_Bad", fold=False) == ("4.2", "Probably yes", "Bad")
    for bad in ("RoB1", "1_1_Maybe_Good", "1_1_Yes_Information"):
        with pytest.raises(SchemaError):
            parse_label(bad)
    assert sq_of("2_7_No_Good") == "2.7" and sq_of("3.4") == "3.4" and sq_of("RoB1") is None
    assert doc_key("a.b-x.pdf.ann.json") == doc_key("a.b-x.pdf.plain.html") == "a.b-x"


def test_bad_files(tmp_path: Path, export: Path) -> None:
    empty = tmp_path / "e.plain.html"
    empty.write_bytes(b"")
    with pytest.raises(FormatError, match="empty file"):
        read_tagtog_document(empty)
    broken = tmp_path / "b.plain.html"
    broken.write_text("<html><pre id='s1v1'>unclosed</html>")
    with pytest.raises(FormatError, match="not well-formed"):
        read_tagtog_document(broken)
    nopages = tmp_path / "n.plain.html"
    nopages.write_text("<html><p>no pages</p></html>")
    with pytest.raises(FormatError, match="no <pre"):
        read_tagtog_document(nopages)
    doc = read_tagtog_document(export / "plain.html/pool/d1-trial.pdf.plain.html")
    badjson = export / "ann.json/members/ann-a/pool/bad.ann.json"
    badjson.write_text("{not json")
    with pytest.raises(FormatError, match="invalid JSON"):
        read_tagtog_annotations(badjson, doc)


def test_real_corpus_reads_without_crash(shared_data: Path) -> None:
    root = shared_data / "rob_preliminary"
    warnings: list[str] = []
    n_spans = 0
    for _doc_id, doc, spans in iter_corpus(root, "katia-giacomino", warnings=warnings, sentences=False):
        for s in spans:
            assert doc.text[s.start : s.end] == s.fragments[0].text
            assert doc.page_of(s.start) is not None
        n_spans += len(spans)
    assert n_spans > 50
    assert any("realigned" in w for w in warnings)
