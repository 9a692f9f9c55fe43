"""bench/rob_consort.py: sentence-level scoring of cited RoB 2 evidence against CONSORT-TM items."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from xml.sax.saxutils import escape

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench" / "rob_consort.py"
CORPUS = ROOT.parent / "shared" / "data" / "consort_tm"

# (sentence text, CONSORT items); sentences are joined by a newline into <text>.
SENTENCES = [
    ("A randomised trial of drug X versus placebo in adults with asthma", ""),  # S1
    ("Randomisation was done with a computer-generated sequence in blocks of four.", "8a"),  # S2
    ("Randomisation was stratified by centre.", "8b"),  # S3
    ("Allocation was concealed in sequentially numbered, opaque, sealed envelopes.", "9"),  # S4
    ("Participants and outcome assessors were blinded to the assigned treatment.", "11a"),  # S5
    ("Adults aged 18 to 65 years were eligible.", ""),  # S6
]


def _bench():
    name = "clinex_bench_rob_consort"
    if name not in sys.modules:  # dataclasses look their module up in sys.modules
        spec = importlib.util.spec_from_file_location(name, BENCH)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
    return sys.modules[name]


def _tiny_article(folder: Path, doc_id: str = "PMC0000001") -> Path:
    text, parts = "Methods\n", []  # a heading that is no sentence, as in the corpus
    for k, (sent, items) in enumerate(SENTENCES, start=1):
        a, b = len(text), len(text) + len(sent)
        parts.append(f'<sentence charOffset="{a}-{b}" id="S{k}" selection="{items}"/>')
        text += sent + "\n"
    path = folder / f"{doc_id}.xml"
    path.write_text(f'<?xml version="1.0" encoding="UTF-8"?>\n<document id="{doc_id}">'
                    f'<text xml:space="preserve">{escape(text)}</text>{"".join(parts)}</document>',
                    encoding="utf-8")
    return path


def _sentences(tmp_path: Path):
    mod = _bench()
    doc_id, text, sents = mod.read_sentences(_tiny_article(tmp_path))
    return mod, doc_id, text, sents


def test_read_sentences_keeps_every_sentence_with_exact_offsets(tmp_path: Path) -> None:
    _, doc_id, text, sents = _sentences(tmp_path)
    assert doc_id == "PMC0000001"
    assert [text[s.start:s.end] for s in sents] == [t for t, _ in SENTENCES]
    assert [sorted(s.items) for s in sents] == [[], ["8a"], ["8b"], ["9"], ["11a"], []]


def test_cited_sentences_needs_one_shared_character(tmp_path: Path) -> None:
    mod, _, _, sents = _sentences(tmp_path)
    s2, s3 = sents[1], sents[2]
    cited = mod.cited_sentences(sents, {
        "1.1": [(s2.end - 1, s3.start + 1)],  # straddles S2 and S3
        "1.2": [(s2.end, s3.start)],  # the newline between them: half-open, touches neither
        "2.1": [],
    })
    assert cited == {"1.1": frozenset({1, 2}), "1.2": frozenset(), "2.1": frozenset()}


def _hand_article(mod, sents, text):
    spans = {  # S1 = index 0 ... S6 = index 5
        "1.1": [(sents[0].start, sents[0].end), (sents[1].start + 5, sents[1].start + 20)],
        "1.2": [(sents[3].start, sents[3].end)],
        "2.1": [(sents[4].start, sents[4].end)],
        "4.3": [(sents[4].start + 3, sents[4].start + 9)],
    }
    return mod.ArticleResult("PMC0000001", text, sents, mod.cited_sentences(sents, spans), 0.0)


def test_view_a_per_item_counts_and_averages_by_hand(tmp_path: Path) -> None:
    mod, _, text, sents = _sentences(tmp_path)
    art = _hand_article(mod, sents, text)
    rep = mod.view_report([mod.article_counts(art, mod.item_units())], mod.item_units())
    per = rep["per"]
    # 8a: gold {S2}, cited for 1.1 {S1, S2}: 1 TP 1 FP
    assert (per["8a"]["tp"], per["8a"]["fp"], per["8a"]["fn"]) == (1, 1, 0)
    assert per["8a"]["p"] == pytest.approx(0.5) and per["8a"]["r"] == 1.0
    assert per["8a"]["f1"] == pytest.approx(2 / 3)
    # 8b: gold {S3}, same prediction as 8a (one citation cannot tell 8a from 8b)
    assert (per["8b"]["tp"], per["8b"]["fp"], per["8b"]["fn"]) == (0, 2, 1)
    assert (per["9"]["tp"], per["9"]["fp"], per["9"]["fn"]) == (1, 0, 0)
    assert (per["10"]["tp"], per["10"]["fp"], per["10"]["fn"]) == (0, 1, 0)
    assert (per["11a"]["tp"], per["11a"]["fp"], per["11a"]["fn"]) == (1, 0, 0)
    assert (per["11b"]["tp"], per["11b"]["fp"], per["11b"]["fn"]) == (0, 1, 0)
    untouched = ("12a", "13a", "13b", "16", "23", "24")
    assert all(per[i]["tp"] + per[i]["fp"] + per[i]["fn"] == 0 for i in untouched)
    # micro: 3 TP 5 FP 1 FN -> P 3/8, R 3/4, F1 1/2
    m = rep["micro"]
    assert (m["tp"], m["fp"], m["fn"]) == (3, 5, 1)
    assert (m["p"], m["r"], m["f1"]) == pytest.approx((0.375, 0.75, 0.5))
    # macro over the 6 items with gold or predicted sentences
    a = rep["macro"]
    assert a["n"] == 6
    assert (a["p"], a["r"], a["f1"]) == pytest.approx((2.5 / 6, 3 / 6, (2 / 3 + 2) / 6))


def test_view_b_per_group_counts_by_hand(tmp_path: Path) -> None:
    mod, _, text, sents = _sentences(tmp_path)
    art = _hand_article(mod, sents, text)
    rep = mod.view_report([mod.article_counts(art, mod.group_units())], mod.group_units())
    per = rep["per"]
    # seq: gold {S2, S3}, cited for 1.1 {S1, S2}: 1 TP 1 FP 1 FN
    assert (per["seq"]["tp"], per["seq"]["fp"], per["seq"]["fn"]) == (1, 1, 1)
    assert (per["seq"]["p"], per["seq"]["r"], per["seq"]["f1"]) == pytest.approx((0.5, 0.5, 0.5))
    assert (per["concealment"]["tp"], per["concealment"]["fp"], per["concealment"]["fn"]) == (1, 0, 0)
    assert (per["blinding"]["tp"], per["blinding"]["fp"], per["blinding"]["fn"]) == (1, 0, 0)
    # micro: 3 TP 1 FP 1 FN -> P R F1 0.75
    m = rep["micro"]
    assert (m["tp"], m["fp"], m["fn"]) == (3, 1, 1)
    assert (m["p"], m["r"], m["f1"]) == pytest.approx((0.75, 0.75, 0.75))


def test_counts_sum_over_articles_and_empty_split_scores_zero(tmp_path: Path) -> None:
    mod, _, text, sents = _sentences(tmp_path)
    art = _hand_article(mod, sents, text)
    units = mod.group_units()
    rep = mod.view_report([mod.article_counts(art, units)] * 2, units)
    assert (rep["micro"]["tp"], rep["micro"]["fp"], rep["micro"]["fn"]) == (6, 2, 2)
    assert rep["micro"]["f1"] == pytest.approx(0.75)
    empty = mod.view_report([], units)
    assert (empty["micro"]["p"], empty["micro"]["r"], empty["micro"]["f1"]) == (0.0, 0.0, 0.0)
    assert empty["macro"]["n"] == 0


def test_errors_name_article_sq_and_item_and_refuse_held_out(tmp_path: Path, capsys) -> None:
    mod, _, text, sents = _sentences(tmp_path)
    art = _hand_article(mod, sents, text)
    seq = next(u for u in mod.group_units() if u.name == "seq")
    fps, fns = mod.unit_errors(art, seq)
    assert fps == [f"PMC0000001 S1 cited for 1.1 (items: none): {SENTENCES[0][0]}"]
    assert fns == [f"PMC0000001 S3 item 8b (cited for nothing): {SENTENCES[2][0]}"]
    with pytest.raises(ValueError, match="held-out"):
        mod.print_errors([art], {"PMC0000001"}, 5, "rules")
    mod.print_errors([art], set(), 5, "rules")
    assert "[seq] FP (1 in all)" in capsys.readouterr().out


def test_na_answers_are_not_counted_as_citations() -> None:
    from clinex.rob.types import DomainResult, Evidence, SQAnswer, TrialAssessment
    from clinex.text import Span

    text = "Randomised by computer. Allocation concealed."

    def ans(sq: str, response: str, a: int, b: int) -> SQAnswer:
        ev = Evidence(span=Span.from_offsets(text, (a, b), label=sq), score=1.0, source="test")
        return SQAnswer(sq=sq, response=response, confidence=1.0, evidence=(ev,))

    ta = TrialAssessment(document_id="d", overall="Low", model="test", domains=(
        DomainResult(domain="D1", name="x", risk="Low",
                     answers=(ans("1.1", "NI", 0, 23), ans("1.2", "NA", 24, 45))),))
    assert _bench().evidence_offsets(ta) == {"1.1": [(0, 23)]}


def test_rules_model_cites_the_sequence_generation_sentence_for_8a(tmp_path: Path) -> None:
    from clinex.rob.assess import default_model

    mod = _bench()
    art = mod.run_article(_tiny_article(tmp_path), default_model("rules"))
    unit_8a = next(u for u in mod.item_units() if u.name == "8a")
    gold, pred = mod.unit_sets(art.sentences, art.cited, unit_8a)
    assert gold == {1}
    assert 1 in pred


def test_missing_corpus_exits_with_a_message(tmp_path: Path) -> None:
    res = subprocess.run([sys.executable, str(BENCH), "--corpus", str(tmp_path / "nowhere")],
                         capture_output=True, text=True, timeout=120, check=False)
    assert res.returncode == 1
    assert "--corpus PATH" in res.stderr and str(tmp_path / "nowhere") in res.stderr
    assert "Traceback" not in res.stderr


def test_held_out_ids_are_ten_corpus_articles_named_as_their_files() -> None:
    mod = _bench()
    heldout = mod.read_heldout()
    assert len(heldout) == len(set(heldout)) == 10
    if not (CORPUS / "xml").is_dir():
        pytest.skip("CONSORT-TM corpus not present at ../shared/data/consort_tm")
    files = sorted((CORPUS / "xml").glob("*.xml"))
    assert set(heldout) <= {p.stem for p in files}
    assert all(mod.read_sentences(p)[0] == p.stem for p in files)  # split by doc id == by file name
