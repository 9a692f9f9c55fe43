"""Evidence models of the RoB task: cue lexicon, segmentation, response from votes."""

from __future__ import annotations

import pytest

from clinex.errors import FormatError, InputError, ModelError
from clinex.rob.evidence import load_evidence_model
from clinex.rob.evidence.cues import CueEvidenceModel, lexicon_from_dict, load_lexicon
from clinex.rob.evidence.response import SQ_IDS, answer_from_votes, response_from_label
from clinex.rob.evidence.segment import normalise
from clinex.rob.types import Evidence
from clinex.text import TRIAL_REPORT_RULES, Document, Fragment, Span, sentence_offsets

S1 = "Randomisation was performed using a computer-generated sequence."
S2 = "The trial was double-blind."
S3 = "Analyses were performed on a per-protocol basis."


def _paged(*pages: str) -> Document:
    text = "\n\n".join(pages)
    spans, pos = [], 0
    for i, p in enumerate(pages, start=1):
        spans.append(Span(fragments=(Fragment(start=pos, end=pos + len(p), text=p),), label=str(i)))
        pos += len(p) + 2
    return Document(id="t", text=text, pages=tuple(spans))


def test_cue_model_finds_exact_sentence_and_response() -> None:
    text = f"Methods. {S1} Follow-up lasted a year."
    answers = CueEvidenceModel().predict(Document(id="t", text=text))
    assert list(answers) == list(SQ_IDS)
    a = answers["1.1"]
    assert (a.response, a.judgement) == ("Y", "Good")
    ev = a.evidence[0]
    start = text.index(S1)
    assert (ev.span.start, ev.span.end) == (start, start + len(S1))
    assert text[ev.span.start:ev.span.end] == S1
    assert ev.span.label == "1.1"
    assert ev.source == "clinex.rob.cues.v1:1.1/seq_computer"
    assert ev.score == pytest.approx(0.95)
    assert ev.page is None
    # a question nothing speaks to is "no information"
    assert answers["3.4"].response == "NI"
    assert answers["3.4"].evidence == () and answers["3.4"].judgement is None


def test_cue_model_pages_and_directions() -> None:
    doc = _paged(S2, "Intro.", S3)
    answers = CueEvidenceModel().predict(doc)
    blind = answers["2.1"]
    assert (blind.response, blind.judgement) == ("N", "Good")  # participants not aware
    assert blind.evidence[0].page == 1
    assert (blind.evidence[0].span.start, blind.evidence[0].span.end) == (0, len(S2))
    pp = answers["2.6"]
    assert (pp.response, pp.judgement) == ("N", "Bad")  # per-protocol is not ITT
    start = doc.text.index(S3)
    assert pp.evidence[0].page == 3
    assert (pp.evidence[0].span.start, pp.evidence[0].span.end) == (start, start + len(S3))


def test_glued_pdf_text_is_split_and_cues_survive_hyphenation() -> None:
    text = "discharged from hospital.Design Single blind trial. Patients were allocated by a com-\nputer generated list."
    segs = sentence_offsets(text, **TRIAL_REPORT_RULES, max_chars=500)
    assert [text[s:e] for s, e in segs] == [
        "discharged from hospital.", "Design Single blind trial.",
        "Patients were allocated by a com-\nputer generated list."]
    assert normalise("com-\nputer Generated (ITT)") == "computer generated itt "
    a = CueEvidenceModel().predict(Document(id="g", text=text))["1.1"]
    assert a.response == "Y"
    assert a.evidence[0].span.start == segs[2][0]


def test_segments_longer_than_max_chars_are_cut_at_whitespace() -> None:
    text = " ".join(["word"] * 60)  # 299 characters, no full stop
    segs = sentence_offsets(text, **TRIAL_REPORT_RULES, max_chars=100)
    assert all(e - s <= 100 for s, e in segs)
    assert "".join(text[s:e] for s, e in segs).replace(" ", "") == "word" * 60
    assert segs[0] == (0, 99)


def test_answer_from_votes_hand_computed() -> None:
    doc = Document(id="v", text="aaaa bbbb cccc")
    ev = [Evidence(span=doc.span(0, 4, "1.1"), score=0.9, source="x"),
          Evidence(span=doc.span(5, 9, "1.1"), score=0.5, source="x"),
          Evidence(span=doc.span(10, 14, "1.1"), score=0.3, source="x")]
    a = answer_from_votes("1.1", ev, [("Y", 0.9), ("N", 0.5), ("Y", 0.3)])
    assert a.response == "Y" and a.judgement == "Good"
    assert a.confidence == pytest.approx(1.2 / 1.7 * 0.9)
    assert [e.span.start for e in a.evidence] == [0, 5, 10]
    b = answer_from_votes("2.1", ev[:2], [("PY", 0.9), ("N", 0.5)], max_evidence=1)
    assert (b.response, b.judgement, len(b.evidence)) == ("PY", "Bad", 1)
    none = answer_from_votes("5.3", [], [])
    assert (none.response, none.judgement, none.confidence) == ("NI", None, 0.5)


def test_response_from_label() -> None:
    assert response_from_label("1_1_ProbablyYes_Good") == ("1.1", "PY")
    assert response_from_label("2_1_No_Information") == ("2.1", "NI")
    assert response_from_label("3_1_No_Bad") == ("3.1", "N")


def test_lexicon_errors_name_the_field(tmp_path) -> None:
    with pytest.raises(FormatError, match=r"sqs\.1\.1\[0\]\.response"):
        lexicon_from_dict({"sqs": {"1.1": [{"id": "a", "pattern": "x", "response": "Maybe",
                                             "weight": 0.5}]}})
    with pytest.raises(FormatError, match="unknown signalling question '9.9'"):
        lexicon_from_dict({"sqs": {"9.9": [{"id": "a", "pattern": "x", "response": "Y",
                                             "weight": 0.5}]}})
    with pytest.raises(FormatError, match="regular expression"):
        lexicon_from_dict({"sqs": {"1.1": [{"id": "a", "pattern": "(x", "response": "Y",
                                             "weight": 0.5}]}})
    bad = tmp_path / "bad.yaml"
    bad.write_text("sqs: [unclosed\n", encoding="utf-8")
    with pytest.raises(FormatError, match="bad.yaml"):
        load_lexicon(bad)


def test_packaged_lexicon_covers_every_question() -> None:
    lex = load_lexicon()
    assert lex.name == "clinex.rob.cues.v1"
    assert set(lex.sqs) == set(SQ_IDS)


def test_cue_model_save_load_round_trip(tmp_path) -> None:
    small = lexicon_from_dict({"name": "test.cues.v1", "sqs": {"2.6": [
        {"id": "itt", "pattern": "intention to treat", "response": "Y", "weight": 0.8}]}})
    model = CueEvidenceModel(small, max_evidence=1)
    path = model.save(tmp_path / "cues.yaml")
    with pytest.raises(InputError, match="refusing to overwrite"):
        model.save(path)
    again = load_evidence_model(str(path))
    doc = Document(id="r", text="Data were analysed by intention-to-treat. Nothing else.")
    a, b = model.predict(doc), again.predict(doc)
    assert a == b
    assert a["2.6"].evidence[0].span.end == len("Data were analysed by intention-to-treat.")
    assert a["1.1"].response == "NI"


def test_load_evidence_model_names(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("CLINEX_DATA", str(tmp_path))
    assert load_evidence_model("cues").kind == "cues"
    assert load_evidence_model("auto").kind == "rules"  # the shipped default
    assert load_evidence_model("rules").name == "clinex.rob.rules.v1"
    with pytest.raises(ModelError, match="clinex rob train"):
        load_evidence_model("sentence")
    with pytest.raises(ModelError, match="rules, cues, sentence, llm, auto"):
        load_evidence_model("nonsense")


def test_run_in_labels_are_left_out_but_sentences_with_colons_kept() -> None:
    from clinex.rob.evidence.segment import heading_ranges

    text = ("Design: Randomised controlled trial. Main outcome measures: pain.\n"
            "We used two scales: the VAS and the NRS. The groups were: A and B.")
    assert [text[s:e] for s, e in heading_ranges(text)] == ["Design:", "Main outcome measures:"]


def test_segments_never_cross_headings_nor_include_them() -> None:
    # QA defect 5: evidence ran across "Abstract"/"Methods"/"Study design" headings.
    from clinex.rob.evidence.segment import segment_document

    text = ("A randomised trial of drug Y\n\nAbstract\nBackground: We tested drug Y.\n\n"
            "Methods\nParticipants were randomised using a computer-generated sequence.\n\n"
            "Methods\nStudy design\nThis was a double-blind trial.")
    doc = Document(id="t", text=text)
    got = [text[s:e] for s, e in segment_document(doc)]
    assert got == [
        "A randomised trial of drug Y",
        "We tested drug Y.",
        "Participants were randomised using a computer-generated sequence.",
        "This was a double-blind trial.",
    ]
    answers = CueEvidenceModel().predict(doc)
    for q in ("1.1", "2.1"):
        for ev in answers[q].evidence:
            assert "Methods" not in ev.span.text and "\n" not in ev.span.text


@pytest.mark.parametrize(("sentence", "response", "cue"), [
    ("All 100 randomised patients completed follow-up; no outcome data were missing.", "Y",
     "complete_counted"),
    ("No outcome data were missing.", "Y", "no_missing_data"),
    ("Outcome data were available for 294 participants (98%).", "Y", "available_all"),
    ("Only 3 patients (1%) were lost to follow-up.", "PY", "few_lost"),
    ("Analysis was by intention-to-treat, including all 300 randomised participants.", "Y",
     "itt_all_analysed"),
    ("45 patients were lost to follow-up.", "N", "missing_dropout"),
    ("Data were available for 150 of 200 participants (75%).", "NI", None),
])
def test_cue_model_answers_plain_3_1_phrasings(sentence: str, response: str, cue: str | None) -> None:
    # QA defect 6: common "complete outcome data" sentences were answered NI.
    answer = CueEvidenceModel().predict(Document(id="t", text=sentence))["3.1"]
    assert answer.response == response
    assert [e.source for e in answer.evidence] == ([f"clinex.rob.cues.v1:3.1/{cue}"] if cue else [])


def test_an_edited_lexicon_is_named_apart_from_the_shipped_one() -> None:
    # QA: a custom lexicon passed with --model was recorded as clinex.rob.cues.v1
    from clinex.rob.evidence.cues import CueEvidenceModel, CueLexicon, load_lexicon

    lex = load_lexicon(None)
    assert CueEvidenceModel(lex).name == "clinex.rob.cues.v1"
    sqs = dict(lex.sqs)
    sqs["1.1"] = sqs["1.1"][:-1]
    name = CueEvidenceModel(CueLexicon(version=1, name=lex.name, sqs=sqs)).name
    assert name.startswith("clinex.rob.cues.v1+") and len(name) == len("clinex.rob.cues.v1+") + 8
