"""Training the sentence evidence model: constructed corpora, persistence, CLI."""

from __future__ import annotations

import json

import pytest

from clinex.errors import InputError, ModelError, SchemaError
from clinex.rob.evidence import load_evidence_model
from clinex.rob.evidence.sentence_model import SentenceEvidenceModel, segment_labels
from clinex.text import Document, Span

RAND = [
    "Patients were randomly allocated using a random number table.",
    "Allocation used a random number table kept by the statistician.",
    "A random number table determined the allocation of children.",
]
ITT = [
    "All analyses followed the intention to treat principle.",
    "Data were analysed by intention to treat.",
    "The intention to treat population was analysed.",
]
FILLER = [
    "The weather was mild during the study.",
    "Participants enjoyed the sessions in the hall.",
    "The clinic is located near the river.",
    "Meals were served at noon every day.",
]


def _doc(i: int, sentences: list[tuple[str, str | None]]) -> tuple[Document, list[Span]]:
    text, spans, pos = "", [], 0
    parts = []
    for sent, label in sentences:
        if parts:
            pos += 1
        parts.append(sent)
        if label:
            spans.append((pos, pos + len(sent), label))
        pos += len(sent)
    text = " ".join(parts)
    doc = Document(id=f"d{i}", text=text)
    return doc, [Span.from_offsets(text, (s, e), label=lab) for s, e, lab in spans]


def _corpus() -> tuple[list[Document], list[list[Span]]]:
    docs, spans = [], []
    for i in range(3):
        d, s = _doc(i, [(FILLER[i], None), (RAND[i], "1_1_Yes_Good"),
                        (FILLER[i + 1], None), (ITT[i], "2_6_Yes_Good")])
        docs.append(d)
        spans.append(s)
    return docs, spans


def test_segment_labels_overlap_rule() -> None:
    text = "Alpha beta gamma delta. Epsilon zeta."
    segs = [(0, 23), (24, 37)]
    spans = [Span.from_offsets(text, (6, 10), label="1_2_ProbablyYes_Good"),  # inside seg 1
             Span.from_offsets(text, (20, 30), label="3_1_No_Bad"),  # 3 chars of seg 1, 6 of seg 2
             Span.from_offsets(text, (0, 5), label="not a label")]
    labels = segment_labels(segs, spans, min_overlap=0.3)
    # seg 1: span 1 lies wholly inside; span 2 covers 3/23 < 0.3 and 3/10 < 0.5 of itself
    assert labels[0] == {"1.2": ["PY"]}
    # seg 2: span 2 covers 6 of 13 characters (>= 0.3)
    assert labels[1] == {"3.1": ["N"]}


def test_sentence_model_learns_and_finds_exact_sentence() -> None:
    docs, spans = _corpus()
    model = SentenceEvidenceModel(use_cues=False, threshold=0.5).fit(docs, spans)
    assert model.n_positive_["1.1"] == 3 and model.n_positive_["2.6"] == 3
    assert model.detectors_["3.1"] is None  # never annotated: never answered
    new = "The sessions were held in the hall. A random number table was used for allocation."
    answers = model.predict(Document(id="new", text=new))
    a = answers["1.1"]
    start = new.index("A random number table")
    assert (a.evidence[0].span.start, a.evidence[0].span.end) == (start, len(new))
    assert (a.response, a.judgement) == ("Y", "Good")
    assert a.evidence[0].source == "clinex.rob.sentence.v1"
    assert answers["2.6"].evidence == () or all(
        e.span.start >= 0 for e in answers["2.6"].evidence)
    assert answers["3.1"].response == "NI"
    assert len(answers) == 22


def test_sentence_model_unfitted_bad_params_and_empty_data() -> None:
    with pytest.raises(ModelError, match="not fitted"):
        SentenceEvidenceModel().predict(Document(id="x", text="Some text."))
    docs, spans = _corpus()
    with pytest.raises(SchemaError, match="'threshold'"):
        SentenceEvidenceModel(threshold=1.5).fit(docs, spans)
    with pytest.raises(InputError, match="no annotated span"):
        SentenceEvidenceModel().fit(docs, [[] for _ in docs])


def test_sentence_model_save_load_round_trip(tmp_path) -> None:
    docs, spans = _corpus()
    model = SentenceEvidenceModel(threshold=0.5).fit(docs, spans)
    path = model.save(tmp_path / "m" / "rob.joblib")
    with pytest.raises(InputError, match="refusing to overwrite"):
        model.save(path)
    again = load_evidence_model(str(path))
    assert again.kind == "sentence"
    doc = Document(id="n", text=FILLER[0] + " " + RAND[1] + " " + ITT[2])
    assert again.predict(doc) == model.predict(doc)


# ---- a tiny tagtog export, for the CLI ------------------------------------------------

LEGEND = {"e_1": "1_1_Yes_Good", "e_2": "2_6_Yes_Good", "m_82": "RoB1"}


def _export(root, n_docs: int = 3) -> None:
    (root / "plain.html" / "pool").mkdir(parents=True)
    (root / "ann.json" / "members" / "ann1" / "pool").mkdir(parents=True)
    (root / "annotations-legend.json").write_text(json.dumps(LEGEND), encoding="utf-8")
    for i in range(n_docs):
        page1 = f"{FILLER[i]} {RAND[i]}"
        page2 = f"{FILLER[i + 1]} {ITT[i]}"
        html = ('<html xmlns="http://www.w3.org/1999/xhtml"><body>'
                f'<pre id="s1v1">{page1}</pre><pre id="s2v1">{page2}</pre></body></html>')
        (root / "plain.html" / "pool" / f"doc{i}.pdf.plain.html").write_text(html, encoding="utf-8")
        ents = [
            {"classId": "e_1", "part": "s1v1",
             "offsets": [{"start": len(FILLER[i]) + 1, "text": RAND[i]}]},
            {"classId": "e_2", "part": "s2v1",
             "offsets": [{"start": len(FILLER[i + 1]) + 1, "text": ITT[i]}]},
        ]
        ann = {"entities": ents, "metas": {"m_82": {"value": "Some-concerns"}}}
        (root / "ann.json" / "members" / "ann1" / "pool" / f"doc{i}.pdf.ann.json").write_text(
            json.dumps(ann), encoding="utf-8")


def test_cli_train_writes_a_model_and_refuses_to_overwrite(tmp_path, cli) -> None:
    _export(tmp_path / "corpus")
    out = tmp_path / "model.joblib"
    r = cli("rob", "train", str(tmp_path / "corpus"), "--annotator", "ann1", "--out", str(out),
            "--threshold", "0.5")
    assert r.code == 0, r.stderr
    assert "on 3 documents" in r.stdout and "1.1 3" in r.stdout
    model = load_evidence_model(str(out))
    doc = Document(id="n", text=RAND[0])
    assert model.predict(doc)["1.1"].evidence[0].span.end == len(RAND[0])
    again = cli("rob", "train", str(tmp_path / "corpus"), "--annotator", "ann1", "--out", str(out))
    assert again.code == 2 and "--force" in again.stderr
    bad = cli("rob", "train", str(tmp_path / "corpus"), "--annotator", "nobody", "--out",
              str(tmp_path / "x.joblib"))
    assert bad.code == 2 and "unknown annotator 'nobody'" in bad.stderr


def test_cli_evaluate_cues_hand_computed(tmp_path, cli) -> None:
    _export(tmp_path / "corpus")
    r = cli("rob", "evaluate", str(tmp_path / "corpus"), "--model", "cues", "--gold", "ann1",
            "--json")
    assert r.code == 0, r.stderr
    res = json.loads(r.stdout)
    f1 = {s["sq"]: s for s in res["sqs"]}
    # every random-number-table sentence is found exactly (cue seq_table): F1 100 on 1.1;
    # their tokens: 9 + 10 + 9 words
    assert (f1["1.1"]["tp"], f1["1.1"]["fp"], f1["1.1"]["fn"]) == (28, 0, 0)
    assert f1["1.1"]["f1"] == 100.0
    # ITT sentences: cue 'itt' finds all three
    assert f1["2.6"]["f1"] == 100.0
    assert res["documents"] == 3
    # D1 gold "Some concerns"; cues answer 1.1 Y, 1.2 NI, 1.3 NI -> Some concerns
    d1 = [j for j in res["judgements"] if j["scope"] == "D1"][0]
    assert (d1["n"], d1["observed"]) == (3, 1.0)
    # a lexicon without the 1.1 cues finds nothing for 1.1
    lex = tmp_path / "lex.yaml"
    lex.write_text('sqs:\n  "2.6": [{id: itt, pattern: "intention to treat", response: Y, '
                   'weight: 0.9}]\n', encoding="utf-8")
    r2 = cli("rob", "evaluate", str(tmp_path / "corpus"), "--model", "cues", "--gold", "ann1",
             "--lexicon", str(lex))
    assert r2.code == 0, r2.stderr
    assert "1.1 0.00" in r2.stdout and "2.6 100.00" in r2.stdout
    assert "Mean over SQs used" in r2.stdout


def test_models_on_an_empty_document_answer_no_information() -> None:
    docs, spans = _corpus()
    empty = Document(id="e", text="")
    for model in (SentenceEvidenceModel().fit(docs, spans), load_evidence_model("cues")):
        answers = model.predict(empty)
        assert len(answers) == 22
        assert all(a.response == "NI" and a.evidence == () for a in answers.values())


def test_sentence_model_load_rejects_foreign_and_stale_files(tmp_path) -> None:
    import joblib

    from clinex.errors import FormatError

    joblib.dump({"something": 1}, tmp_path / "other.joblib")
    with pytest.raises(FormatError, match="not a clinex.rob.sentence model"):
        SentenceEvidenceModel.load(tmp_path / "other.joblib")
    docs, spans = _corpus()
    path = SentenceEvidenceModel().fit(docs, spans).save(tmp_path / "m.joblib")
    data = joblib.load(path)
    data["format_version"] = 99
    joblib.dump(data, tmp_path / "future.joblib")
    with pytest.raises(ModelError, match="format version 99"):
        SentenceEvidenceModel.load(tmp_path / "future.joblib")
    data["format_version"] = 1
    data["state"]["cue_lexicon_"] = "clinex.rob.cues.v0"
    joblib.dump(data, tmp_path / "stale.joblib")
    with pytest.raises(ModelError, match="retrain"):
        SentenceEvidenceModel.load(tmp_path / "stale.joblib")
