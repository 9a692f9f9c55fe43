"""`clinex rob assess --model llm` end to end against the scripted server, scored by `clinex rob agreement`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml
from llm_server import ScriptedServer

CASE = Path(__file__).parents[1] / "data" / "rob_cases" / "01_relcomide_cough"
KEY = "sk-rob-44aa-secret"
WRONG_21 = "Nobody at all was masked in this study."  # not in the report: dropped


def _rules() -> list[dict]:
    key = yaml.safe_load(CASE.with_suffix(".key.yaml").read_text(encoding="utf-8"))
    rules = []
    for sq, resp in key["responses"].items():
        answer = {"answer": "NI" if resp == "NA" else resp, "evidence": list(key["evidence"].get(sq, []))}
        if sq == "1.1":  # the model drops a hyphen: grounded by the fuzzy match
            answer["evidence"] = ["computer generated sequence in permuted blocks of 4 and 6"]
        if sq == "2.1":  # wrong answer with an invented sentence
            answer = {"answer": "Y", "evidence": [WRONG_21]}
        responses = [{"content": answer}]
        if sq == "3.1":
            responses = [{"content": '{"answer": "Y", "evidence": ['}, *responses]
        rules.append({"name": sq, "match": f"Signalling question {sq} (", "responses": responses})
    return rules


@pytest.fixture(scope="module")
def server():
    with ScriptedServer() as srv:
        yield srv


def test_rob_assess_llm_end_to_end_and_agreement(cli, server: ScriptedServer, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLINEX_LLM_CACHE", str(tmp_path / "cache.sqlite"))
    monkeypatch.setenv("CLINEX_LLM_API_KEY", KEY)
    monkeypatch.setenv("CLINEX_LLM_TIMEOUT", "2")
    gold = tmp_path / "gold"
    gold.mkdir()
    for suffix in (".txt", ".key.yaml"):
        shutil.copy(CASE.with_suffix(suffix), gold / CASE.with_suffix(suffix).name)
    server.script(_rules())
    out = tmp_path / "out"
    res = cli("rob", "assess", str(gold / "01_relcomide_cough.txt"), "--model", "llm", "--llm-url", server.url,
              "--llm-model", "scripted", "--output", out, "--no-plot")
    assert res.code == 0, res.stderr
    assert server.stats()["requests"] == 23  # 22 SQs (the report fits one part) + 1 repair of 3.1
    # grounded: the key's evidence of the 11 SQs with evidence other than 2.1 (3.1 and 5.1 have two
    # sentences each) -> 13 quotes, 1.1's fuzzily; 2.1's invented sentence dropped
    # 2.1 (its only quote invented) and 4.2 (N, no quote: the key has none) have no grounded evidence
    assert ("13 spans grounded (1 fuzzy), 1 ungrounded dropped; 2 answers without grounded evidence downgraded "
            "to NI / not met") in res.stderr
    result = json.loads((out / "01_relcomide_cough.rob.json").read_text())
    answers = {a["sq"]: a for d in result["domains"] for a in d["answers"]}
    text = (gold / "01_relcomide_cough.txt").read_text(encoding="utf-8")
    ev11 = answers["1.1"]["evidence"][0]["span"]["fragments"][0]
    start = text.index("computer-generated sequence")
    assert (ev11["start"], ev11["end"]) == (start, start + len("computer-generated sequence in permuted blocks of 4 and 6"))
    assert answers["2.1"]["response"] == "NI" and answers["2.1"]["evidence"] == []  # not the invented Y
    assert answers["2.1"]["confidence"] == 0.0
    assert answers["1.1"]["evidence"][0]["source"] == "clinex.rob.llm.v1:scripted"
    assert result["model"] == "clinex.rob.llm.v1:scripted"
    agree = cli("rob", "agreement", gold, out, "--json")
    assert agree.code == 0, agree.stderr
    report = json.loads(agree.stdout)
    overall = report["overall"]
    # every SQ agrees with the key except 2.1 and 4.2 (NI for N: no grounded evidence) and, through
    # 2.1, 2.3: RoB 2 asks 2.3 after an NI to 2.1, so the model's NI stands where the key has NA; the
    # other NA of the key come back NA
    assert overall["n_response"] == 22 and overall["po_response_exact"] == pytest.approx(19 / 22)
    wrong = sorted(q["sq"] for q in report["sqs"] if q["po_response_exact"] != 1.0)
    assert wrong == ["2.1", "2.3", "4.2"]
    again = cli("rob", "assess", str(gold / "01_relcomide_cough.txt"), "--model", "llm", "--llm-url", server.url,
                "--llm-model", "scripted", "--output", tmp_path / "out2", "--no-plot")
    assert again.code == 0 and server.stats()["requests"] == 23  # all 22 from the cache
    assert "LLM: 22 answers, 0 requests, 22 from cache" in again.stderr
    for r in (res, agree, again):
        assert KEY not in r.stdout + r.stderr


def test_rob_llm_wrong_model_names_server_and_document(cli, server: ScriptedServer, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLINEX_LLM_BASE_URL", server.url)
    monkeypatch.setenv("CLINEX_LLM_MODEL", "gpt-nope")
    monkeypatch.setenv("CLINEX_LLM_TIMEOUT", "2")
    server.script(_rules())
    res = cli("rob", "assess", str(CASE.with_suffix(".txt")), "--model", "llm", "--output", tmp_path / "o",
              "--no-plot", "--no-cache")
    assert res.code == 2
    assert f"[CLX009] LLM server {server.url} (model 'gpt-nope'): document 01_relcomide_cough (SQ " in res.stderr
    assert "model 'gpt-nope' not found" in res.stderr


def test_rob_report_cut_into_parts_and_answers_combined(server: ScriptedServer, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from clinex.rob.assess import assess, load_trial
    from clinex.rob.evidence.llm import LLMEvidenceModel, part_budget

    doc = load_trial(CASE.with_suffix(".txt"))
    model = LLMEvidenceModel({"base_url": server.url, "model": "scripted", "cache": False, "timeout": 2,
                              "context_tokens": 600, "max_tokens": 100})
    assert part_budget(600, 100) == 500  # (600 - 100 - 400) * 3 = 300, raised to the floor of 500
    parts = model.parts(doc, 500)
    # contiguous, each at most 500 characters, covering the report from its start to its end (but
    # the final newline)
    assert parts[0][0] == 0 and parts[-1][1] == len(doc.text) - 1 and doc.text[-1] == "\n"
    assert all(doc.text[a[1]:b[0]].strip() == "" for a, b in zip(parts, parts[1:]))  # only blank lines between
    assert all(e - s <= 500 for s, e, _ in parts)
    assert [lab for *_, lab in parts] == ["front", *["methods"] * 4, *["results"] * 3]  # the sections, cut
    ends = {sp.end for sp in doc.iter_sentences()}
    assert all(e in ends or e == len(doc.text) for _, e, _ in parts[:-1])  # cut at sentence ends
    quote = "computer-generated sequence in permuted blocks of 4 and 6"
    k = next(i for i, (s, e, _) in enumerate(parts) if quote in doc.text[s:e])
    server.script([
        # 1.1: the part with the sequence answers Y; an earlier part answers PN without evidence
        {"name": "1.1-seq", "match": "Signalling question 1.1 (", "match_all": [quote],
         "responses": [{"content": {"answer": "Y", "evidence": [quote]}}]},
        {"name": "1.1-first", "match": "Signalling question 1.1 (", "match_all": ["Relcomide for Refractory"],
         "responses": [{"content": {"answer": "PN", "evidence": []}}]},
        {"name": "default", "match": "", "responses": [{"content": {"answer": "NI", "evidence": []}}]},
    ])
    result = assess(doc, model)
    assert server.stats()["requests"] == 22 * len(parts) and len(parts) == 8
    assert k > 0
    a11 = next(a for d in result.domains for a in d.answers if a.sq == "1.1")
    # the first part that is not NI and has grounded evidence wins over the earlier PN without evidence
    assert a11.response == "Y" and a11.confidence == 1.0
    start = doc.text.index(quote)
    assert (a11.evidence[0].span.start, a11.evidence[0].span.end) == (start, start + len(quote))


def test_rob_invented_quotes_end_ni_not_low(server: ScriptedServer, tmp_path: Path) -> None:
    from clinex.rob.assess import assess, load_trial
    from clinex.rob.evidence.llm import LLMEvidenceModel

    doc = load_trial(CASE.with_suffix(".txt"))
    model = LLMEvidenceModel({"base_url": server.url, "model": "scripted", "cache": False, "timeout": 2})
    # the key's answers (a Low trial), every one backed only by a sentence that is not in the report
    key = yaml.safe_load(CASE.with_suffix(".key.yaml").read_text(encoding="utf-8"))
    server.script([{"name": sq, "match": f"Signalling question {sq} (",
                    "responses": [{"content": {"answer": "NI" if r == "NA" else r, "evidence": [WRONG_21]}}]}
                   for sq, r in key["responses"].items()])
    result = assess(doc, model)
    answers = {a.sq: a for d in result.domains for a in d.answers}
    # every SQ NI (2.4 and 2.5 NA: RoB 2 asks them only after a Y/PY to 2.3)
    assert [sq for sq, a in answers.items() if a.response != "NI"] == ["2.4", "2.5"]
    assert all(a.confidence == 0.0 and a.evidence == () for a in answers.values())
    assert {(d, q) for d, q, _ in model.downgraded_} == {(doc.id, sq) for sq, r in key["responses"].items()
                                                          if r != "NA"}
    # the key's trial is Low in every domain; without grounded evidence it is not
    assert [d.risk for d in result.domains] == ["Some concerns", "High", "High", "High", "Some concerns"]
    assert result.overall == "High"
