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


PLOS = """<?xml version="1.0" encoding="UTF-8"?>
<article xmlns:xlink="http://www.w3.org/1999/xlink" article-type="research-article">
  <front><article-meta>
    <article-id pub-id-type="doi">10.1371/journal.pmed.1001518</article-id>
    <title-group><article-title>Zinc for childhood pneumonia: a randomised trial</article-title></title-group>
    <abstract abstract-type="toc"><p>A trial finds zinc does not speed recovery.</p></abstract>
    <abstract>
      <sec><title>Background</title><p>Pneumonia kills children.</p></sec>
      <sec><title>Methods and Findings</title><p>We randomised 610 children.</p></sec>
      <sec><title>Conclusions</title><p>Zinc did not help.</p></sec>
      <sec><title>Trial registration</title><p>ClinicalTrials.gov NCT00373100</p></sec>
    </abstract>
    <abstract abstract-type="summary"><title>Editors' Summary</title>
      <sec><title>Background</title><p>Many children die of pneumonia.</p></sec></abstract>
  </article-meta></front>
  <body>
    <sec><title>Introduction</title><p>Zinc may help.</p></sec>
    <sec><title>I. Interventions</title><p>Zinc 20 mg daily.</p></sec>
    <sec><title>II. Methods</title><p>Randomised by computer.</p></sec>
    <sec><title>IV Results</title><p>600 finished.</p></sec>
    <sec><title>X) Interpretation</title><p>No benefit.</p></sec>
  </body>
</article>
"""


def test_jats_plos_real_abstract_not_the_toc_blurb(tmp_path: Path) -> None:
    # issue 22: PLOS puts the one-line blurb in <abstract abstract-type="toc"> and the
    # Editors' Summary in abstract-type="summary"; the article's abstract has no type
    path = tmp_path / "journal.pmed.1001518.xml"
    path.write_text(PLOS, encoding="utf-8")
    from clinex.rob.sections import SECTION_NAMES

    doc = read_jats(path, section_names=SECTION_NAMES)
    assert doc.text.split("\n\n") == [
        "Zinc for childhood pneumonia: a randomised trial",
        "Abstract", "Background", "Pneumonia kills children.", "Methods and Findings",
        "We randomised 610 children.", "Conclusions", "Zinc did not help.",
        "Trial registration", "ClinicalTrials.gov NCT00373100",
        "Introduction", "Zinc may help.", "I. Interventions", "Zinc 20 mg daily.",
        "II. Methods", "Randomised by computer.", "IV Results", "600 finished.",
        "X) Interpretation", "No benefit.",
    ]
    assert "zinc does not speed" not in doc.text and "Editors" not in doc.text
    assert [(s.label, s.text.split("\n")[0]) for s in doc.sections] == [
        ("front", "Zinc for childhood pneumonia: a randomised trial"),
        ("abstract", "Abstract"), ("introduction", "Introduction"),
        ("other", "I. Interventions"), ("methods", "II. Methods"), ("results", "IV Results"),
        ("conclusion", "X) Interpretation")]
    abstract = doc.sections[1]
    assert abstract.text.endswith("ClinicalTrials.gov NCT00373100")
    # only the blurb: it is still no abstract
    only = tmp_path / "blurb.xml"
    only.write_text(PLOS.replace("<abstract>", "<abstract abstract-type=\"toc\">"), encoding="utf-8")
    blurb = read_jats(only)
    assert "abstract" not in {s.label for s in blurb.sections}
    assert blurb.text.split("\n\n")[:3] == [
        "Zinc for childhood pneumonia: a randomised trial", "Introduction", "Zinc may help."]


def test_section_label_roman_numerals_keep_the_words_letters() -> None:
    from clinex.rob.sections import SECTION_NAMES

    # issue 22: "Introduction", "Interpretation" lost their I and fell to "other"
    assert section_label("Introduction", section_names=SECTION_NAMES) == "introduction"
    assert section_label("INTERPRETATION", section_names=SECTION_NAMES) == "conclusion"
    assert section_label("Interventions", section_names={"methods": ("Interventions",)}) == "methods"
    assert section_label("Xenografts", section_names={"methods": ("Xenografts",)}) == "methods"
    assert section_label("II. Methods", section_names=SECTION_NAMES) == "methods"
    assert section_label("IV Results", section_names=SECTION_NAMES) == "results"
    assert section_label("X) Discussion", section_names=SECTION_NAMES) == "discussion"
    assert section_label("2.1. Study design", section_names=SECTION_NAMES) == "methods"
    assert section_label("RESEARCH DESIGN AND METHODS", section_names=SECTION_NAMES) == "methods"
