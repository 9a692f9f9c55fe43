"""Where each RoB 2 answer came from: ``Evidence.section`` and answers decided outside Methods/Results.

A small trial report with an abstract, Methods, Results and Discussion; a fixed model
answers from known sentences, so the sections, ``decided_outside`` and every surface's
figures are exact. The real models (rules, cues, a scripted LLM) are checked to get a
section on every evidence span, the one holding the span's start.
"""

from __future__ import annotations

import re

import json
from pathlib import Path

import pytest

from clinex.rob import assess, read_json, write_json
from clinex.rob.answer_agreement import answer_agreement, assess_gold, load_gold, load_predictions
from clinex.rob.assess import decided_outside, decided_sections
from clinex.rob.report import render_html
from clinex.rob.sections import detect_sections
from clinex.rob.types import Evidence, SQAnswer, TrialAssessment
from clinex.text import Document, Span

TEXT = """Drug X versus placebo for migraine: a randomised controlled trial

Abstract
Background: Drug X may prevent migraine.
Methods: 120 adults were randomised. Outcome assessors were blinded.
Results: Migraine days fell more with drug X.

Methods
Participants were randomly assigned (1:1) using a computer-generated random sequence.
Allocation was concealed using sequentially numbered, sealed, opaque envelopes.

Results
Of 120 randomised, 118 completed follow-up.

Discussion
Drug X reduced migraine days.
"""

# RoB 2 responses of a key for this report (all 22 SQs; only the evidence sections matter here)
KEY = {
    "1.1": "Y", "1.2": "Y", "1.3": "N", "2.1": "N", "2.2": "N", "2.3": "NA", "2.4": "NA",
    "2.5": "NA", "2.6": "Y", "2.7": "NA", "3.1": "Y", "3.2": "NA", "3.3": "NA", "3.4": "NA",
    "4.1": "N", "4.2": "N", "4.3": "N", "4.4": "NA", "4.5": "NA", "5.1": "Y", "5.2": "N", "5.3": "N",
}  # fmt: skip


def _ev(phrase: str, sq: str, *, section: str | None = None) -> Evidence:
    start = TEXT.index(phrase)
    span = Span.from_offsets(TEXT, (start, start + len(phrase)), label=sq)
    return Evidence(span=span, score=0.9, source="test", section=section)


class Fixed:
    """Answers from known sentences of TEXT."""

    name = "fixed"

    def predict(self, doc):
        return {
            "1.1": SQAnswer(sq="1.1", response="Y", confidence=0.9,
                            evidence=(_ev("computer-generated random sequence", "1.1"),)),
            # first span in Methods, the second in the abstract: decided from the Methods
            "1.2": SQAnswer(sq="1.2", response="Y", confidence=0.9,
                            evidence=(_ev("Allocation was concealed", "1.2"),
                                      _ev("120 adults were randomised", "1.2"))),
            "2.1": SQAnswer(sq="2.1", response="N", confidence=0.5),  # no evidence: not counted
            "2.2": SQAnswer(sq="2.2", response="N", confidence=0.5),
            # not asked after 2.1 and 2.2 N: NA, its evidence kept (and stamped) but not counted
            "2.3": SQAnswer(sq="2.3", response="Y", confidence=0.5,
                            evidence=(_ev("Drug X reduced migraine days", "2.3"),)),
            "3.1": SQAnswer(sq="3.1", response="Y", confidence=0.9,
                            evidence=(_ev("118 completed follow-up", "3.1"),)),
            # said only in the abstract: decided outside Methods/Results
            "4.3": SQAnswer(sq="4.3", response="N", confidence=0.7,
                            evidence=(_ev("Outcome assessors were blinded.", "4.3"),)),
            # NI with evidence: not counted
            "5.1": SQAnswer(sq="5.1", response="NI", confidence=0.2,
                            evidence=(_ev("Drug X may prevent migraine", "5.1"),)),
        }


def _doc(doc_id: str = "mig") -> Document:
    return Document(id=doc_id, text=TEXT)


def _evidence(result: TrialAssessment) -> dict[str, list[str | None]]:
    return {a.sq: [ev.section for ev in a.evidence] for d in result.domains for a in d.answers
            if a.evidence}


def _strip_sections(result: TrialAssessment) -> str:
    """The rob.json of ``result`` as a clinex without ``Evidence.section`` wrote it."""
    data = json.loads(result.model_dump_json())
    for d in data["domains"]:
        for a in d["answers"]:
            for ev in a["evidence"]:
                del ev["section"]
    return json.dumps(data, indent=2)


def test_every_evidence_span_gets_the_section_of_its_start() -> None:
    result = assess(_doc(), Fixed())
    assert _evidence(result) == {
        "1.1": ["methods"], "1.2": ["methods", "abstract"], "2.3": ["discussion"],
        "3.1": ["results"], "4.3": ["abstract"], "5.1": ["abstract"],
    }  # fmt: skip
    assert decided_sections(result) == ["methods", "methods", "results", "abstract"]
    assert decided_outside(result) == (1, 4)
    assert decided_outside(result, sections=("methods",)) == (2, 4)
    assert decided_outside(result, sections=("methods", "results", "abstract")) == (0, 4)


def test_the_documents_own_sections_win_and_a_models_section_is_kept() -> None:
    whole = Span.from_offsets(TEXT, (0, len(TEXT)), label="results")  # e.g. a reader's sections
    doc = Document(id="mig", text=TEXT, sections=(whole,))
    result = assess(doc, Fixed())
    assert {s for secs in _evidence(result).values() for s in secs} == {"results"}
    assert decided_outside(result) == (0, 4)

    class Labelled:
        def predict(self, doc):
            ev = _ev("Outcome assessors were blinded.", "4.3", section="methods")
            return {"4.3": SQAnswer(sq="4.3", response="N", confidence=0.7, evidence=(ev,))}

    assert _evidence(assess(_doc(), Labelled())) == {"4.3": ["methods"]}


def _models(server, monkeypatch, tmp_path):
    """rules, cues and a scripted LLM (1.1 from the Methods, 4.3 from the abstract, NI else)."""
    from clinex.rob.assess import default_model
    from clinex.rob.evidence.llm import LLMEvidenceModel

    server.script([
        {"name": "1.1", "match": "Signalling question 1.1 (",
         "responses": [{"content": {"answer": "Y", "evidence": ["computer-generated random sequence"]}}]},
        {"name": "4.3", "match": "Signalling question 4.3 (",
         "responses": [{"content": {"answer": "N", "evidence": ["Outcome assessors were blinded."]}}]},
        {"name": "other", "match": "", "responses": [{"content": {"answer": "NI", "evidence": []}}]},
    ])
    monkeypatch.setenv("CLINEX_LLM_BASE_URL", server.url)
    monkeypatch.setenv("CLINEX_LLM_MODEL", "scripted")
    monkeypatch.setenv("CLINEX_LLM_CACHE", str(tmp_path / "cache.sqlite"))
    monkeypatch.setenv("CLINEX_LLM_TIMEOUT", "5")
    return {"rules": default_model("rules"), "cues": default_model("cues"), "llm": LLMEvidenceModel()}


def test_every_model_gets_sections(monkeypatch, tmp_path) -> None:
    from llm_server import ScriptedServer

    sections = detect_sections(TEXT)

    def holding(start: int) -> str | None:
        return next(s.label for s in sections if s.start <= start < s.end)

    with ScriptedServer() as server:
        models = _models(server, monkeypatch, tmp_path)
        for name, model in models.items():
            result = assess(_doc(), model)
            spans = [ev for d in result.domains for a in d.answers for ev in a.evidence]
            assert spans, name
            for ev in spans:
                assert ev.section is not None and ev.section == holding(ev.span.start), (name, ev)
            k, n = decided_outside(result)
            assert n == len(decided_sections(result)) and n > 0, name
            if name == "llm":
                assert _evidence(result) == {"1.1": ["methods"], "4.3": ["abstract"]}
                assert (k, n) == (1, 2)


def test_json_and_html_show_the_sections(tmp_path: Path) -> None:
    doc = _doc()
    result = assess(doc, Fixed())
    path = write_json(result, tmp_path / "mig.rob.json")
    data = json.loads(path.read_text(encoding="utf-8"))
    first = data["domains"][3]["answers"][2]["evidence"][0]  # 4.3
    assert first["section"] == "abstract" and first["span"]["label"] == "4.3"
    assert read_json(path) == result
    html = render_html(result, doc)
    assert re.search(r'<p class="decided-outside">Answers decided outside Methods/Results: 1 of 4 answers taken '
                     r'from the text: \d\.\d \((abstract|discussion|front|introduction)\)</p>', html)
    s = TEXT.index("Outcome assessors were blinded.")
    row = html[html.index('<tr id="sq-4.3">'):]
    row = row[: row.index("</tr>")]
    assert f"abstract, chars {s}&#8211;{s + 31}</a>" in row
    m = TEXT.index("computer-generated random sequence")
    assert f"methods, chars {m}&#8211;{m + 34}</a>" in html


def test_an_old_rob_json_without_sections_still_loads(tmp_path: Path) -> None:
    result = assess(_doc(), Fixed())
    old = tmp_path / "mig.rob.json"
    old.write_text(_strip_sections(result), encoding="utf-8")
    assert '"section"' not in old.read_text(encoding="utf-8")
    back = read_json(old)
    assert {s for secs in _evidence(back).values() for s in secs} == {None}
    assert decided_sections(back) == [None, None, None, None]
    assert decided_outside(back) == (0, 0)  # unknown sections count in neither
    html = render_html(back, _doc())
    assert ("Answers decided outside Methods/Results: 0 of 0 answers taken from the text (sections unknown for 4 answers)</p>"
            in html)
    assert "chars " in html and "methods, chars" not in html
    assert load_predictions(old)["mig"] == back


def _keys(folder: Path) -> Path:
    folder.mkdir()
    for doc_id in ("mig", "old"):
        lines = [f"id: {doc_id}", "responses:", *(f'  "{q}": {r}' for q, r in KEY.items()), ""]
        (folder / f"{doc_id}.key.yaml").write_text("\n".join(lines), encoding="utf-8")
        (folder / f"{doc_id}.txt").write_text(TEXT, encoding="utf-8")
    return folder


def test_agreement_counts_answers_decided_outside(cli, tmp_path: Path) -> None:
    keys = _keys(tmp_path / "keys")
    gold = load_gold(keys)
    rep = answer_agreement(gold, assess_gold(gold, Fixed()))
    assert (rep.decided_outside, rep.decided_total, rep.share_decided_outside, rep.decided_unknown) \
        == (2, 8, 0.25, 0)
    # predictions read back: "mig" written now, "old" by a clinex without sections
    preds = tmp_path / "preds"
    write_json(assess(_doc(), Fixed()), preds / "mig.rob.json")
    (preds / "old.rob.json").write_text(_strip_sections(assess(_doc("old"), Fixed())), encoding="utf-8")
    res = cli("rob", "agreement", keys, preds, "--json")
    assert res.code == 0, res.stderr
    data = json.loads(res.stdout)
    assert (data["decided_outside"], data["decided_total"], data["share_decided_outside"],
            data["decided_unknown"]) == (1, 4, 0.25, 4)
    res = cli("rob", "agreement", keys, preds)
    assert res.code == 0, res.stderr
    assert ("answers decided outside Methods/Results: 1 of 4 (0.25) (sections unknown for 4 answers)"
            in res.stdout)
    # none known: the share is undefined
    (preds / "mig.rob.json").unlink()
    del gold["mig"]
    rep = answer_agreement(gold, load_predictions(preds))
    assert (rep.decided_outside, rep.decided_total, rep.share_decided_outside, rep.decided_unknown) \
        == (0, 0, None, 4)


def test_cli_assess_prints_answers_decided_outside(cli, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("CLINEX_DATA", str(tmp_path / "no-models"))
    report = tmp_path / "mig.txt"
    report.write_text(TEXT, encoding="utf-8")
    out = tmp_path / "out"
    res = cli("rob", "assess", report, "-o", out, "--model", "cues", "--no-plot", "--no-html")
    assert res.code == 0, res.stderr
    k, n = decided_outside(read_json(out / "mig.rob.json"))
    assert n > 0
    assert "Outside M/R" in res.stdout and "answers decided outside Methods/Results" in res.stdout
    row = next(line for line in res.stdout.splitlines() if line.count("│") > 2)
    assert [c.strip() for c in row.split("│")[1:-1]][0] == "mig"
    assert [c.strip() for c in row.split("│")[1:-1]][-1] == f"{k}/{n}"
