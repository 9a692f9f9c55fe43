"""Section detection on trial-report text (PDF-style glued headings, plain text, custom lists)."""

from __future__ import annotations

from pathlib import Path

import pytest

from clinex.errors import FormatError, InputError
from clinex.rob.sections import detect_sections, find_headings, load_headings


def _labels(text: str, **kw) -> list[tuple[str, str]]:
    return [(s.label, s.text[:12]) for s in detect_sections(text, **kw)]


def test_glued_pdf_headings_and_structured_abstract() -> None:
    text = (
        "BMC Trials 2020 Exercise trial. AbstractBackground: Heart failure is common. "
        "Methods: We randomised 40 adults. Results: All finished.BackgroundHeart failure "
        + "is a burden. " * 400
        + "Methods/DesignThe trial was pragmatic. Results  will be expressed as means. "
        "RESULTSOf 40 patients, 39 finished. DiscussionThe trial shows benefit. "
        "References1. Smith J. Methods in trials. Results of trials."
    )
    assert _labels(text) == [
        ("front", "BMC Trials 2"),
        ("abstract", "AbstractBack"),
        ("introduction", "BackgroundHe"),
        ("methods", "Methods/Desi"),
        ("results", "RESULTSOf 40"),
        ("discussion", "DiscussionTh"),
        ("references", "References1."),
    ]


def test_line_headings_numbered_and_not_in_sentences() -> None:
    text = "Title\n\n1. Introduction\nText.\n\n2 MATERIALS AND METHODS\nWe used results from\nResults\nDone."
    assert [h[2] for h in find_headings(text)] == ["introduction", "methods", "results"]
    spans = detect_sections(text)
    assert spans[1].text.startswith("1. Introduction") and spans[2].text.startswith("2 MATERIALS")
    for a, b in zip(spans, spans[1:]):
        assert a.end <= b.start
    assert detect_sections("   \n ") == []
    assert _labels("No headings at all here.") == [("front", "No headings ")]


def test_custom_heading_list_and_bad_files(tmp_path: Path) -> None:
    custom = tmp_path / "h.yaml"
    custom.write_text("version: 1\nname: test.v1\nsections:\n  trial_design: ['Trial design']\n")
    assert _labels("Intro.\nTrial design\nParallel groups.", headings=custom) == [
        ("front", "Intro."), ("trial_design", "Trial design"),
    ]
    assert "methods" in load_headings().sections
    bad_re = tmp_path / "bad.yaml"
    bad_re.write_text("version: 1\nname: x\nsections:\n  methods: ['Meth(ods']\n")
    with pytest.raises(FormatError, match=r"field 'sections.methods\[0\]'"):
        load_headings(str(bad_re))
    extra = tmp_path / "extra.yaml"
    extra.write_text("version: 1\nname: x\nsections: {}\nother: 1\n")
    with pytest.raises(FormatError, match="other"):
        load_headings(str(extra))
    broken = tmp_path / "broken.yaml"
    broken.write_text("version: [1\n")
    with pytest.raises(FormatError, match="not valid YAML"):
        load_headings(str(broken))
    with pytest.raises(InputError):
        load_headings(str(tmp_path / "missing.yaml"))


def test_upper_case_headings_inside_running_text() -> None:
    # QA defect 8: tagtog texts lost their line breaks, "RESULTS" is followed by a space.
    text = ("METHODS Patients were randomised. Models accounted for the correlated data "
            "structure.RESULTS The sample was mostly female. DISCUSSION We found benefit. "
            "The Results section and the RESULTS of trials are not headings.")
    assert [(h[2], text[h[0]:h[1]]) for h in find_headings(text)] == [
        ("methods", "METHODS"), ("results", "RESULTS"), ("discussion", "DISCUSSION")]
    assert [h[2] for h in find_headings("to 130%. RESULTS Subjects Twenty-four")] == ["results"]
    # Title case followed by a space and a capital stays running text
    assert find_headings("as shown. Results The end") == []


def test_methods_and_results_sections_on_the_preliminary_corpus(shared_data: Path) -> None:
    from clinex.rob.formats.tagtog import read_tagtog_document

    root = shared_data / "rob_preliminary" / "plain.html"
    files = sorted(root.rglob("*.html"))
    if not files:
        pytest.skip("no rob_preliminary plain.html documents")
    labels = [{s.label for s in detect_sections(read_tagtog_document(f))} for f in files]
    assert len(files) == 10
    # one BMJ paper has no Methods heading at all, one protocol has no Results
    assert sum("methods" in lab for lab in labels) == 9
    assert sum("results" in lab for lab in labels) == 9
