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
    # the BMJ paper's Methods is headed "Participants and methods" (issue 22); one protocol
    # has no Results
    assert sum("methods" in lab for lab in labels) == 10
    assert sum("results" in lab for lab in labels) == 9


def _heads(text: str) -> list[tuple[str, str]]:
    return [(label, text[a:b]) for a, b, label in find_headings(text)]


def test_numbered_headings_roman_only_as_a_whole_token() -> None:
    # issue 22: a roman numeral is a section number only as a token before a separator
    text = ("Trial of iron.\nI. Introduction\nAnaemia is common.\nII. Methods\nInterventions were "
            "given.\nIV Results\nInterpretation was easy.\nX) Discussion\nIron works.")
    assert _heads(text) == [("introduction", "I. Introduction"), ("methods", "II. Methods"),
                            ("results", "IV Results"), ("discussion", "X) Discussion")]
    assert _heads("Trial.\nIntroduction\nText.\nInterpretation\nIron works.") == [
        ("introduction", "Introduction"), ("conclusion", "Interpretation")]


def test_heading_right_after_a_version_number() -> None:
    # issue 22: "2.10.1." ends a sentence; it is not the number of the Results heading
    text = ("Methods\nAnalyses used R version 2.10.1.\n\nResults\nOf 120 patients, 118 finished."
            "\nDifferences were evaluated through χ2.\n      \n    Discussion\nIron works.")
    assert [(lab, a, b) for a, b, lab in find_headings(text)] == [
        ("methods", 0, 7), ("results", 41, 48), ("discussion", 130, 140)]
    assert text[41:48] == "Results" and text[130:140] == "Discussion"
    # a number on the same line is still the heading's number
    assert _heads("Text.\n2.1 Results\nDone.") == [("results", "2.1 Results")]


def test_real_journal_headings() -> None:
    # Diabetes Care, BMJ, Lancet headings (issue 22)
    dc = ("Lorcaserin in type 2 diabetes\nIntroduction\nObesity is common.\n"
          "RESEARCH DESIGN AND METHODS\nPatients were randomised.\nRESULTS\nWeight fell.")
    assert _heads(dc) == [("introduction", "Introduction"),
                          ("methods", "RESEARCH DESIGN AND METHODS"), ("results", "RESULTS")]
    for heading in ("Patients and methods", "Subjects and methods", "Materials and methods",
                    "Participants and methods", "Research Design and Methods"):
        assert _heads(f"Title.\n{heading}\nWe randomised 40 adults.") == [("methods", heading)]
    lancet = ("Summary\nBackground\nMalaria kills.\nMethods\nWe randomised 300 children.\n"
              "Findings\n150 got the drug.\nInterpretation\nThe drug works.\nFunding\nMRC.\n"
              "Introduction\nMalaria is common.\nMethods\nStudy design and participants\n"
              "We randomised 300 children.\nResults\nParticipants\n290 finished.\n"
              "Statistical analysis\nsee above.\nDiscussion\nThe drug works.")
    assert [s.label for s in detect_sections(lancet)] == [
        "abstract", "introduction", "methods", "results", "discussion"]
    # "Study design" opens Methods in a paper without a Methods heading; "Participants"
    # inside Results stays Results
    bmj = ("Title\nIntroduction\nWarts are common.\nStudy design\nWe randomised 240 people.\n"
           "Statistical analysis\nWe used ITT.\nResults\nParticipants\n229 finished.\n"
           "Discussion\nCryotherapy works.\nTrial registration\nISRCTN 12345678.")
    assert _heads(bmj) == [("introduction", "Introduction"), ("methods", "Study design"),
                           ("results", "Results"), ("discussion", "Discussion"),
                           ("registration", "Trial registration")]


def test_structured_abstract_subheadings_on_their_own_lines() -> None:
    # issue 22: the layout of a PMC article's text (CONSORT-TM, PMC3002766): the abstract's own
    # Objectives / Methods / Results / Conclusions lines are the abstract, not the paper's
    text = (
        "Title\nBosentan for digital ulcers: the RAPIDS-2 randomised trial\nAbstract\n\n"
        "        \n          Objectives\n          Digital ulcers are common in SSc.\n"
        "        \n          Methods\n          This double-blind trial randomised 188 patients.\n"
        "        \n          Results\n          Bosentan reduced new ulcers.\n"
        "        \n          Conclusions\n          Bosentan prevents new ulcers.\n"
        "    \n      Introduction\n      Digital ulcers cause disability.\n"
        "    \n      Patients and methods\n        \n        Study design\n"
        "        Patients were randomised by an interactive voice system.\n"
        "    \n      Results\n        \n        Participants\n        188 were randomised.\n"
        "    \n      Discussion\n      Bosentan did not heal ulcers.\n"
    )
    spans = detect_sections(text)
    assert [(s.label, s.text.split("\n")[0]) for s in spans] == [
        ("front", "Title"), ("abstract", "Abstract"), ("introduction", "Introduction"),
        ("methods", "Patients and methods"), ("results", "Results"),
        ("discussion", "Discussion")]
    abstract = spans[1].text
    assert "randomised 188 patients" in abstract and abstract.endswith("prevents new ulcers.")
    assert spans[3].start == text.index("Patients and methods")
    assert spans[4].start == text.index("Results\n        \n        Participants")
    # an unstructured abstract ends at the first heading on its own line
    plain = ("Title\nAbstract\nWe randomised 188 patients to bosentan.\nIntroduction\n"
             "Ulcers are common.\nMethods\nWe randomised.\nResults\nDone.")
    assert [s.label for s in detect_sections(plain)] == [
        "front", "abstract", "introduction", "methods", "results"]
    # a BMJ abstract: parts come in order; the body's Introduction goes back and starts the body
    bmj = ("Abstract\nObjective\nTo compare cryotherapy.\nDesign\nRandomised trial.\n"
           "Participants\n240 people.\nResults\n229 finished.\nConclusions\nNo difference.\n"
           "Trial registration\nISRCTN 12345678.\nIntroduction\nWarts.\nMethods\nWe randomised.")
    assert [(s.label, s.text.split("\n")[0]) for s in detect_sections(bmj)] == [
        ("abstract", "Abstract"), ("introduction", "Introduction"), ("methods", "Methods")]


def test_abstract_parts_still_cut_sentences() -> None:
    # the abstract's own "Methods" opens no section but heads no sentence either
    from clinex.rob.formats.structure import add_structure
    from clinex.text import Document

    text = ("Abstract\n  Background\n  SSc ulcers are common.\n  Methods\n"
            "  This double-blind trial randomised 188 patients.\n  Results\n  Ulcers fell.\n"
            "Introduction\nUlcers hurt.")
    assert find_headings(text) == [(0, 8, "abstract"), (133, 145, "introduction")]
    assert find_headings(text, parts=True) == [
        (0, 8, "abstract"), (11, 21, "introduction"), (49, 56, "methods"),
        (110, 117, "results"), (133, 145, "introduction")]
    assert text[110:117] == "Results" and text[133:145] == "Introduction"
    doc = add_structure(Document(id="a", text=text))
    assert [s.text for s in doc.sentences] == [
        "Abstract", "Background", "SSc ulcers are common.", "Methods",
        "This double-blind trial randomised 188 patients.", "Results", "Ulcers fell.",
        "Introduction", "Ulcers hurt."]
    assert [s.label for s in doc.sections] == ["abstract", "introduction"]
