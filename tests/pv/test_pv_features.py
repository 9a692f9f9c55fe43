"""Tokens and CRF features of clinex.pv.features."""

from __future__ import annotations

from clinex.pv.features import drug_flags, sentence_features, tokenize, word_shape


def test_tokenize_offsets_split_hyphens_and_keep_decimals() -> None:
    text = "A 54-year-old man got 2.5 mg/kg of heparin-induced"
    toks = tokenize(text)
    words = [text[s:e] for s, e in toks]
    assert words == ["A", "54", "-", "year", "-", "old", "man", "got", "2.5", "mg", "/", "kg", "of",
                     "heparin", "-", "induced"]
    assert toks[0] == (0, 1)
    assert toks[8] == (22, 25)
    assert toks[-1] == (43, 50)


def test_tokenize_empty_and_blank() -> None:
    assert tokenize("") == []
    assert tokenize("  \n\t ") == []


def test_word_shape_collapses_runs() -> None:
    assert word_shape("Paclitaxel") == "Xx"
    assert word_shape("5-FU") == "d-X"
    assert word_shape("2.5") == "d.d"
    assert word_shape("IgA") == "XxX"


def test_drug_flags_marks_gazetteer_drugs() -> None:
    words = ["PLP", "after", "paclitaxel", "and", "heparin", "."]
    assert drug_flags(words) == ["", "", "B", "", "B", ""]
    assert drug_flags([]) == []


def test_sentence_features_window_and_gazetteer() -> None:
    text = "Rash after aspirin."
    toks = tokenize(text)
    feats = sentence_features(text, toks)
    assert len(feats) == 4
    first, drug = feats[0], feats[2]
    assert "w=rash" in first and "BOS" in first and "title" in first
    assert "w[1]=after" in first and "w[2]=aspirin" in first and "drug[2]" in first
    assert "drugdist=+2" in first
    assert "drug=B" in drug and "s3=rin" in drug and "bi[-1]=after|aspirin" in drug
    assert "EOS" in feats[-1] and "punct" in feats[-1]
    # given flags are used instead of the gazetteer
    assert "drug=B" not in sentence_features(text, toks, ["", "", "", ""])[2]
