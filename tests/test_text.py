from __future__ import annotations

import pytest

from clinex.errors import OffsetError
from clinex.text import (
    CLINICAL_ABBREVIATIONS,
    CLINICAL_NOTE_RULES,
    PROSE_ABBREVIATIONS,
    TRIAL_ABBREVIATIONS,
    TRIAL_REPORT_RULES,
    Abbreviations,
    Document,
    Span,
    check_span,
    sentence_offsets,
    split_sentences,
)


def test_span_from_offsets_discontinuous() -> None:
    text = "codeine intoxication in the neonate, for cough control"
    span = Span.from_offsets(text, [(37, 40), (0, 7)], label="X")
    assert span.offsets() == [(0, 7), (37, 40)]
    assert span.text == "codeine for"
    assert span.start == 0 and span.end == 40
    assert span.is_discontinuous
    check_span(span, text)


def test_span_outside_text_raises() -> None:
    with pytest.raises(OffsetError, match=r"CLX004.*5-12"):
        Span.from_offsets("short", (5, 12))


def test_span_json_round_trip() -> None:
    span = Span.from_offsets("abc def", [(0, 3), (4, 7)], label="Effect", score=0.5)
    assert Span.model_validate_json(span.model_dump_json()) == span


def test_split_sentences_offsets_and_abbreviations() -> None:
    text = "Dr. Smith saw him. He had e.g. rash! Then 3 days later\n\nNew para"
    spans = split_sentences(text)
    assert [s.text for s in spans] == [
        "Dr. Smith saw him.",
        "He had e.g. rash!",
        "Then 3 days later",
        "New para",
    ]
    for s in spans:
        assert text[s.start : s.end] == s.text


def test_split_sentences_empty() -> None:
    assert split_sentences("") == []
    assert split_sentences("   \n ") == []



def _starts_and_texts(text: str) -> list[tuple[int, str]]:
    spans = split_sentences(text)
    for s in spans:
        assert text[s.start : s.end] == s.text
    return [(s.start, s.text) for s in spans]


def test_split_sentences_upper_case_heading_line_ends_sentence() -> None:
    text = "CASE REPORT\nAmiodarone caused hypothyroidism in a 60-year-old man."
    assert _starts_and_texts(text) == [
        (0, "CASE REPORT"),
        (12, "Amiodarone caused hypothyroidism in a 60-year-old man."),
    ]


def test_split_sentences_colon_heading_lines() -> None:
    text = "RESULTS:\nTwo patients died. Outcome at day 3:\nboth recovered.\r\nDISCUSSION\r\nRare."
    assert _starts_and_texts(text) == [
        (0, "RESULTS:"),
        (9, "Two patients died."),
        (28, "Outcome at day 3:"),
        (46, "both recovered."),
        (63, "DISCUSSION"),
        (75, "Rare."),
    ]


def test_split_sentences_wrapped_prose_is_not_split() -> None:
    text = "The patient was given\namiodarone 200 mg daily.\nHe had HIV. ANA\nwas negative."
    assert _starts_and_texts(text) == [
        (0, "The patient was given\namiodarone 200 mg daily."),
        (47, "He had HIV."),
        (59, "ANA\nwas negative."),
    ]


def test_split_sentences_heading_rule_edge_cases() -> None:
    # one upper-case letter is not a heading; a trailing comma continues the line
    assert _starts_and_texts("A\nb c.") == [(0, "A\nb c.")]
    assert _starts_and_texts("NSAIDS, ACE INHIBITORS,\nand diuretics.") == [
        (0, "NSAIDS, ACE INHIBITORS,\nand diuretics.")
    ]
    # blank line after a heading: one boundary, not an empty sentence
    assert _starts_and_texts("CASE REPORT\n\nA man.\n\nlower case para") == [
        (0, "CASE REPORT"),
        (13, "A man."),
        (21, "lower case para"),
    ]

def test_document_page_and_section() -> None:
    doc = Document(
        id="d",
        text="p1 text p2 text",
        pages=(Span.from_offsets("p1 text p2 text", (0, 8), label="1"),
               Span.from_offsets("p1 text p2 text", (8, 15), label="2")),
    )
    assert doc.page_of(3) == 1
    assert doc.page_of(9) == 2
    assert doc.page_of(15) is None
    assert doc.section_of(0) is None


# --- the one splitter's parameters (issue 11, item 2) ---------------------------------

def _cut(text: str, **rules: object) -> list[tuple[int, int, str]]:
    return [(s, e, text[s:e]) for s, e in sentence_offsets(text, **rules)]


def test_clinical_single_line_break_ends_sentence_unless_continued() -> None:
    assert _cut("Meds:\nAspirin 81 mg\n", **CLINICAL_NOTE_RULES) == [(0, 5, "Meds:"), (6, 19, "Aspirin 81 mg")]
    # a lower-case next line continues (the heading rule of case reports would split)
    assert _cut("Meds:\naspirin 81 mg\n", **CLINICAL_NOTE_RULES) == [(0, 19, "Meds:\naspirin 81 mg")]
    assert _cut("Meds:\naspirin 81 mg\n") == [(0, 5, "Meds:"), (6, 19, "aspirin 81 mg")]
    # an upper-case next line after plain prose: a new sentence in notes, wrapped prose in case reports
    text = "BP 132/80 HR 68\nGen: well\nHe was given\nAspirin today."
    assert _cut(text, **CLINICAL_NOTE_RULES) == [
        (0, 15, "BP 132/80 HR 68"), (16, 25, "Gen: well"), (26, 38, "He was given"), (39, 53, "Aspirin today.")]
    # case reports: the all-capitals line is a heading, the rest wrapped prose
    assert _cut(text) == [(0, 15, "BP 132/80 HR 68"), (16, 53, "Gen: well\nHe was given\nAspirin today.")]


def test_clinical_bullets_and_indented_continuations() -> None:
    text = "Plan:\n- start aspirin\n- recheck A1C in 3 mo\n1. statin\n  continue diet\na) walk daily"
    assert _cut(text, **CLINICAL_NOTE_RULES) == [
        (0, 5, "Plan:"),
        (6, 21, "- start aspirin"),
        (22, 43, "- recheck A1C in 3 mo"),
        (44, 69, "1. statin\n  continue diet"),  # indented, not a list item: continues
        (70, 83, "a) walk daily"),  # "a) " is a list item although lower case
    ]
    # an indented list item still starts a sentence; a blank line always does
    assert _cut("Hx:\n  - MI 2069\n\nlow back pain", **CLINICAL_NOTE_RULES) == [
        (0, 3, "Hx:"), (6, 15, "- MI 2069"), (17, 30, "low back pain")]


def test_titles_initials_and_numbers() -> None:
    text = "Dr. Smith saw pt. on 3/4. He is well."
    want = [(0, 25, "Dr. Smith saw pt. on 3/4."), (26, 37, "He is well.")]
    assert _cut(text) == want
    assert _cut(text, **CLINICAL_NOTE_RULES) == want
    assert _cut(text, **TRIAL_REPORT_RULES) == want
    text = "Mortality fell, p < 0.05. The trial stopped."
    assert _cut(text) == _cut(text, **CLINICAL_NOTE_RULES) == _cut(text, **TRIAL_REPORT_RULES) == [
        (0, 25, "Mortality fell, p < 0.05."), (26, 44, "The trial stopped.")]
    text = "Use an NSAID, e.g. Ibuprofen. Or i.e. Naproxen."
    assert _cut(text) == _cut(text, **CLINICAL_NOTE_RULES) == _cut(text, **TRIAL_REPORT_RULES) == [
        (0, 29, "Use an NSAID, e.g. Ibuprofen."), (30, 47, "Or i.e. Naproxen.")]


def test_fig_in_brackets_splits_only_case_reports() -> None:
    # case reports test the whole word "(Fig" (kept as it was); trial reports test its parts
    text = "Rash (Fig. 2) resolved. See Fig. 3."
    assert _cut(text) == [(0, 10, "Rash (Fig."), (11, 23, "2) resolved."), (24, 35, "See Fig. 3.")]
    assert _cut(text, **TRIAL_REPORT_RULES) == [(0, 23, "Rash (Fig. 2) resolved."), (24, 35, "See Fig. 3.")]


def test_clinical_periods_spacy_kept_on_the_word() -> None:
    text = "Creatinine 2.1 mg/dL. Denies chest pain. BP stable on BID. Pt well."
    assert _cut(text, **CLINICAL_NOTE_RULES) == [
        (0, 40, "Creatinine 2.1 mg/dL. Denies chest pain."),  # "dL": a lone capital at the end
        (41, 58, "BP stable on BID."),
        (59, 67, "Pt well."),
    ]
    assert _cut(text)[:2] == [(0, 21, "Creatinine 2.1 mg/dL."), (22, 40, "Denies chest pain.")]
    # "f/u." (an initial after a slash) goes on; in notes the mark + spaces or tabs + a
    # capital or digit splits (not a bracket). Two spaces split too, unlike spaCy's tokens:
    # otherwise "No chest pain.  Aspirin daily." would put aspirin in the negation's scope.
    text = "S: f/u. Still tired. Walks daily.  Then naps. (Seen by Dr. Lee.) Rest.\n\nA/P: DM2."
    assert _cut(text, **CLINICAL_NOTE_RULES) == [
        (0, 20, "S: f/u. Still tired."),
        (21, 33, "Walks daily."),
        (35, 70, "Then naps. (Seen by Dr. Lee.) Rest."),
        (72, 81, "A/P: DM2."),
    ]
    text = "No chest pain.  Aspirin 81 mg daily.\tBP 120/80."
    assert _cut(text, **CLINICAL_NOTE_RULES) == [
        (0, 14, "No chest pain."), (16, 36, "Aspirin 81 mg daily."), (37, 47, "BP 120/80."),
    ]


def test_trial_report_rules_glued_stops_and_no_heading_rule() -> None:
    text = "METHODS\nPatients were randomised.Results were\nclear.\n\nDISCUSSION\nWe found benefit."
    assert _cut(text, **TRIAL_REPORT_RULES) == [
        (0, 33, "METHODS\nPatients were randomised."),
        (33, 52, "Results were\nclear."),
        (54, 82, "DISCUSSION\nWe found benefit."),
    ]
    assert _cut(text) == [
        (0, 7, "METHODS"),
        (8, 52, "Patients were randomised.Results were\nclear."),
        (54, 64, "DISCUSSION"),
        (65, 82, "We found benefit."),
    ]


def test_range_and_max_chars() -> None:
    text = "Intro. Dr. Ames met Bo. End here. Tail."
    # a range: offsets stay into the whole text; nothing after `end` is looked at
    assert sentence_offsets(text, 7, 33) == [(7, 23), (24, 33)]
    assert sentence_offsets(text, 7, 26) == [(7, 23), (24, 26)]
    assert sentence_offsets(text, 7, 24) == [(7, 23)]  # the capital after the space is not in range
    text = " ".join(["word"] * 30)
    assert sentence_offsets(text, **TRIAL_REPORT_RULES, max_chars=50) == [(0, 49), (50, 99), (100, 149)]
    assert sentence_offsets(text) == [(0, 149)]
    with pytest.raises(ValueError, match="line_breaks"):
        sentence_offsets(text, line_breaks="paragraphs")
    with pytest.raises(ValueError, match="max_chars"):
        sentence_offsets(text, max_chars=1)


def test_abbreviation_sets() -> None:
    assert "Fig" in PROSE_ABBREVIATIONS and "(Fig" not in PROSE_ABBREVIATIONS and "x" in PROSE_ABBREVIATIONS
    assert "(Fig" in TRIAL_ABBREVIATIONS and "U.S" in TRIAL_ABBREVIATIONS
    assert "fig" not in TRIAL_ABBREVIATIONS and "x" not in TRIAL_ABBREVIATIONS  # case-sensitive; upper initials
    assert all(w in CLINICAL_ABBREVIATIONS for w in ("Dr", "(Dr", "f/u", "c/c/e", "PA-C", "mg/dL", "A1C", "a.m"))
    assert not any(w in CLINICAL_ABBREVIATIONS for w in ("BID", "pt", "HIV/AIDS", "x-ray", "3/4", "dr", ""))
    with pytest.raises(ValueError, match="initials"):
        Abbreviations(frozenset(), initials="lower")


def test_clinical_abbreviations_cover_spacy_exceptions() -> None:
    """Every spaCy English tokenizer exception 'word.' is a clinical abbreviation (the
    periods the cohort pipeline's former token-level splitter never saw)."""
    spacy = pytest.importorskip("spacy")
    rules = spacy.blank("en").tokenizer.rules
    words = sorted({k[:-1] for k in rules if k.endswith(".") and k != "._." and not any(c.isspace() for c in k)})
    assert len(words) > 100
    assert [w for w in words if w not in CLINICAL_ABBREVIATIONS] == []


def test_cohort_doc_sentences_come_from_the_splitter() -> None:
    from clinex.cohort.nlp import get_nlp

    text = "Meds:\naspirin 81 mg\nNo bleeding. Dr. Smith saw pt.\n\nPlan: f/u. Recheck BP."
    doc = get_nlp(["aspirin"])(text)
    got = [(s.start_char, s.text.rstrip()) for s in doc.sents]
    assert got == [(0, "Meds:\naspirin 81 mg"), (20, "No bleeding."), (33, "Dr. Smith saw pt."),
                   (52, "Plan: f/u. Recheck BP.")]
    assert sentence_offsets(text, **CLINICAL_NOTE_RULES) == [(0, 19), (20, 32), (33, 50), (52, 74)]
    # whitespace between sentences stays with the sentence before it
    spaces = [t.is_sent_start for t in doc if t.is_space]
    assert len(spaces) == 3 and not any(spaces)


def test_case_report_letter_after_a_lower_case_word_ends_the_sentence() -> None:
    """QA stop 18: "drug X." / "vitamin D." end a sentence; a person's initial does not."""
    cases = {
        "No adverse events were observed with drug X.\nA 60-year-old man received warfarin.": [
            "No adverse events were observed with drug X.", "A 60-year-old man received warfarin.",
        ],
        "He took vitamin D. A man developed rash.": ["He took vitamin D.", "A man developed rash."],
        "Seen by J. Smith. He was well.": ["Seen by J. Smith.", "He was well."],
        "Reported by Smith J. The patient recovered.": ["Reported by Smith J. The patient recovered."],
        "Dr. K. Lee and J. Smith saw her.": ["Dr. K. Lee and J. Smith saw her."],
    }
    for text, expected in cases.items():
        assert [s.text for s in split_sentences(text)] == expected, text
    # the trial-report and clinical-note rules keep their own behaviour
    assert [s.text for s in split_sentences("He took vitamin D. A man.", **CLINICAL_NOTE_RULES)] == [
        "He took vitamin D. A man."
    ]
