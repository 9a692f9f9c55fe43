from __future__ import annotations

import pytest

from clinex.errors import OffsetError
from clinex.text import Document, Span, check_span, split_sentences


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
