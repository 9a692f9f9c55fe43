"""JATS / PMC XML reader: text layout, sections from the XML, sentences, bad input."""

from __future__ import annotations

from pathlib import Path

import pytest

from clinex.errors import FormatError
from clinex.io.jats import read_jats, section_label
from clinex.rob.formats.load import load_document

ARTICLE = """<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE article PUBLIC "-//NLM//DTD JATS (Z39.96) Journal Archiving and Interchange DTD v1.2 20190208//EN" "JATS-archivearticle1.dtd">
<article xmlns:xlink="http://www.w3.org/1999/xlink" article-type="research-article">
  <front>
    <article-meta>
      <article-id pub-id-type="pmid">12345678</article-id>
      <article-id pub-id-type="pmc">PMC1234567</article-id>
      <article-id pub-id-type="doi">10.1000/xyz</article-id>
      <title-group><article-title>Exercise &amp; heart failure: a randomised trial</article-title></title-group>
      <abstract>
        <sec><title>Background</title><p>Exercise helps.</p></sec>
        <sec><title>Methods</title><p>We randomised
          120 patients.</p></sec>
      </abstract>
    </article-meta>
  </front>
  <body>
    <sec sec-type="intro"><title>Introduction</title><p>Heart failure is common.</p></sec>
    <sec><title>2. Materials and methods</title>
      <sec><title>Randomisation</title>
        <p>Allocation used <italic>sealed</italic> envelopes<xref ref-type="bibr" rid="r1">1</xref>. Staff were blinded.</p>
      </sec>
    </sec>
    <sec><title>Results</title>
      <p>All 120 were analysed.</p>
      <table-wrap><label>Table 1</label><caption><p>Baseline data.</p></caption><table><tr><td>x</td></tr></table></table-wrap>
    </sec>
    <sec><title>Ethics approval</title><p>Approved.</p></sec>
  </body>
  <back><ref-list><ref id="r1"><mixed-citation>Smith J. Trials. 2001.</mixed-citation></ref></ref-list></back>
</article>
"""

EXPECTED = "\n\n".join([
    "Exercise & heart failure: a randomised trial",
    "Abstract", "Background", "Exercise helps.", "Methods", "We randomised 120 patients.",
    "Introduction", "Heart failure is common.",
    "2. Materials and methods", "Randomisation",
    "Allocation used sealed envelopes1. Staff were blinded.",
    "Results", "All 120 were analysed.", "Table 1 Baseline data.",
    "Ethics approval", "Approved.",
    "References", "Smith J. Trials. 2001.",
])


def test_jats_text_sections_and_ids(tmp_path: Path) -> None:
    path = tmp_path / "a.nxml"
    path.write_text(ARTICLE, encoding="utf-8")
    doc = load_document(path)
    assert doc.text == EXPECTED
    assert doc.id == "PMC1234567"
    assert doc.meta["pmid"] == "12345678" and doc.meta["doi"] == "10.1000/xyz"
    assert doc.pages == ()
    got = [(s.label, s.text.split("\n\n")[0]) for s in doc.sections]
    assert got == [
        ("front", "Exercise & heart failure: a randomised trial"),
        ("abstract", "Abstract"),
        ("introduction", "Introduction"),
        ("methods", "2. Materials and methods"),
        ("results", "Results"),
        ("other", "Ethics approval"),
        ("references", "References"),
    ]
    at = doc.text.index("sealed")
    assert doc.section_of(at) == "methods"
    sentences = [s.text for s in doc.sentences]
    assert "Allocation used sealed envelopes1." in sentences
    assert "Staff were blinded." in sentences


def test_section_label() -> None:
    from clinex.rob.sections import SECTION_NAMES

    assert section_label("Patients and Methods", section_names=SECTION_NAMES) == "methods"
    assert section_label("3. RESULTS", section_names=SECTION_NAMES) == "results"
    assert section_label("Whatever", "materials|methods") == "methods"
    assert section_label("Limitations", section_names=SECTION_NAMES) == "other"
    # io knows formats only: without heading names a title alone labels nothing
    assert section_label("Patients and Methods") == "other"


def test_jats_bad_input(tmp_path: Path) -> None:
    empty = tmp_path / "e.xml"
    empty.write_bytes(b"")
    with pytest.raises(FormatError, match="0 bytes"):
        load_document(empty)
    broken = tmp_path / "b.xml"
    broken.write_text("<article>\n<body>\n<p>open</body></article>")
    with pytest.raises(FormatError, match=r"b\.xml:3: .*not well formed"):
        read_jats(broken)
    bomb = tmp_path / "bomb.xml"
    bomb.write_text('<?xml version="1.0"?><!DOCTYPE a [<!ENTITY x "xxxxxxxx">'
                    '<!ENTITY y "&x;&x;&x;">]><article><body><p>&y;</p></body></article>')
    with pytest.raises(FormatError, match="unsafe XML"):
        read_jats(bomb)
    other = tmp_path / "o.xml"
    other.write_text("<html><body><p>hi</p></body></html>")
    with pytest.raises(FormatError, match="not a JATS article"):
        read_jats(other)
    blank = tmp_path / "n.xml"
    blank.write_text("<article><front/></article>")
    with pytest.raises(FormatError, match="no text"):
        read_jats(blank)
