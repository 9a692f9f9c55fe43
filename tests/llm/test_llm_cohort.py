"""`clinex cohort screen --model llm` end to end against the scripted server, scored by `clinex cohort evaluate`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from llm_server import ScriptedServer

from clinex.cohort.criteria_names import N2C2_CRITERIA as CRITERIA

NOTES_A = ("\nRecord date: 2070-01-05\n\n58 yo woman, s/p appendectomy in 2060.\nSpeaks English fluently.\n\n"
           + "*" * 100 + "\nRecord date: 2071-02-01\n\nFollow up. Doing well.\n")
NOTES_B = "\nRecord date: 2072-03-03\n\nHbA1c 8.1 today.\nSpeaks English fluently.\n"
NOTES_C = "\nRecord date: 2073-01-01\n\nBROKEN-SERVER-CASE note.\n"


def _xml(text: str, met: set[str]) -> str:
    tags = "\n".join(f'<{c} met="{"met" if c in met else "not met"}" />' for c in CRITERIA)
    return (f'<?xml version="1.0" encoding="UTF-8" ?>\n<PatientMatching>\n<TEXT><![CDATA[{text}]]></TEXT>\n'
            f"<TAGS>\n{tags}\n</TAGS>\n</PatientMatching>\n")


RULES = [
    {"name": "broken", "match": "BROKEN-SERVER-CASE", "responses": [{"status": 500, "error": "engine crashed"}]},
    {"name": "abd-A", "match": "Criterion ABDOMINAL:", "match_all": ["appendectomy"],
     "responses": [{"content": {"decision": "met", "evidence": ["s/p appendectomy in 2060."]}}]},
    {"name": "english", "match": "Criterion ENGLISH:", "match_all": ["Speaks English"],
     "responses": [{"content": {"decision": "met", "evidence": ["speaks english fluently", "Speaks Klingon"]}}]},
    # 'met' on a quote with another number (8.1 in the notes): not grounded, so not met
    {"name": "hba1c-B", "match": "Criterion HBA1C:", "match_all": ["HbA1c 8.1"],
     "responses": [{"content": {"decision": "met", "evidence": ["HbA1c 9.1 today."]}}]},
    {"name": "default", "match": "", "responses": [{"content": {"decision": "not met", "evidence": []}}]},
]


@pytest.fixture(scope="module")
def server():
    with ScriptedServer() as srv:
        yield srv


@pytest.fixture
def data(server: ScriptedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    monkeypatch.setenv("CLINEX_LLM_BASE_URL", server.url)
    monkeypatch.setenv("CLINEX_LLM_MODEL", "scripted")
    monkeypatch.setenv("CLINEX_LLM_CACHE", str(tmp_path / "cache.sqlite"))
    monkeypatch.setenv("CLINEX_LLM_BACKOFF", "0.01")
    monkeypatch.setenv("CLINEX_LLM_TIMEOUT", "2")
    monkeypatch.setenv("CLINEX_LLM_RETRIES", "1")
    server.script(RULES)
    gold, inputs = tmp_path / "gold", tmp_path / "in"
    gold.mkdir()
    inputs.mkdir()
    for name, text, met in (("101", NOTES_A, {"ABDOMINAL", "ENGLISH"}), ("102", NOTES_B, {"ENGLISH", "HBA1C"})):
        (gold / f"{name}.xml").write_text(_xml(text, met), encoding="utf-8")
        (inputs / f"{name}.xml").write_text(_xml(text, set()), encoding="utf-8")
    return gold, inputs


def test_cohort_screen_llm_end_to_end_and_evaluate(cli, data: tuple[Path, Path], server: ScriptedServer,
                                                   tmp_path: Path) -> None:
    gold, inputs = data
    pred = tmp_path / "pred"
    res = cli("cohort", "screen", inputs, "--model", "llm", "--output", pred, "--quiet")
    assert res.code == 0, res.stderr
    st = server.stats()
    assert st["requests"] == 26  # 13 criteria x 2 patients, all notes of each in one prompt
    assert st["by_rule"] == {"abd-A": 1, "english": 2, "hba1c-B": 1, "default": 22}
    # ABDOMINAL 1 quote; ENGLISH 2 x (1 grounded case-insensitively, 'Speaks Klingon' dropped);
    # HBA1C of 102: its one quote changes a number, dropped, and the 'met' downgraded
    assert ("3 spans grounded (0 fuzzy), 3 ungrounded dropped; 1 answers without grounded evidence downgraded "
            "to NI / not met") in res.stderr
    bodies = [b["messages"][1]["content"] for b in st["last_bodies"]]
    assert any("Latest note dated: 2071-02-01\n" in b for b in bodies)  # patient 101's two records, both sent
    assert all(("Follow up. Doing well." in b) == ("Latest note dated: 2071-02-01\n" in b) for b in bodies)
    js = tmp_path / "pred.json"
    again = cli("cohort", "screen", inputs, "--model", "llm", "--output", js, "--quiet")
    assert again.code == 0 and server.stats()["requests"] == 26  # every answer from the cache
    dec = json.loads(js.read_text())
    abd = dec["101"]["ABDOMINAL"]
    assert abd["label"] == "met" and abd["score"] == 1.0
    ev = abd["evidence"][0]
    start = NOTES_A.index("s/p appendectomy")
    assert (ev["start"], ev["end"]) == (start, start + len("s/p appendectomy in 2060."))
    assert ev["record_date"] == "2070-01-05" and ev["rule"] == "clinex.cohort.llm.v1:ABDOMINAL.v1"
    assert dec["102"]["HBA1C"] == {**dec["102"]["HBA1C"], "label": "not met", "score": 0.25, "evidence": []}
    eng = dec["102"]["ENGLISH"]["evidence"]
    assert len(eng) == 1 and (eng[0]["start"], eng[0]["end"]) == (NOTES_B.index("Speaks"), NOTES_B.index("Speaks") + 23)
    out = cli("cohort", "evaluate", gold, pred, "--json")
    assert out.code == 0, out.stderr
    scores = json.loads(out.stdout)
    crit = scores["criteria"] if "criteria" in scores else scores
    # ABDOMINAL and ENGLISH decided as the gold; HBA1C of 102 missed: 'met' recall 0 of 1
    assert crit["ABDOMINAL"]["f1"] == pytest.approx(1.0)
    assert crit["HBA1C"]["met"]["recall"] == pytest.approx(0.0)
    assert crit["HBA1C"]["not met"]["precision"] == pytest.approx(0.5)


def test_cohort_failed_patient_reported_others_written(cli, data: tuple[Path, Path], server: ScriptedServer,
                                                       tmp_path: Path) -> None:
    _, inputs = data
    (inputs / "103.xml").write_text(_xml(NOTES_C, set()), encoding="utf-8")
    out = tmp_path / "o.json"
    res = cli("cohort", "screen", inputs, "--model", "llm", "--output", out, "--quiet")
    assert res.code == 1
    assert "[CLX009] LLM server" in res.stderr and "document patient 103 (criterion " in res.stderr
    assert "HTTP 500: engine crashed (after 2 attempts)" in res.stderr
    assert sorted(json.loads(out.read_text())) == ["101", "102"]


def test_cohort_notes_cut_into_parts_of_whole_records(tmp_path: Path) -> None:
    from clinex.cohort.formats.n2c2_xml import read_patient
    from clinex.cohort.llm import LLMCohortModel, part_budget

    f = tmp_path / "101.xml"
    f.write_text(_xml(NOTES_A, set()), encoding="utf-8")
    p = read_patient(f)
    (r1, r2) = p.records
    model = LLMCohortModel("n2c2", {"base_url": "http://127.0.0.1:9/v1", "model": "m"})
    assert model.name == "clinex.cohort.llm.v1:m"
    assert part_budget(8192, 1024) == (8192 - 1024 - 400) * 3
    assert model.parts(p, 20_304) == [(r1.start, r2.end)]  # everything in one prompt
    assert model.parts(p, r1.end - r1.start) == [(r1.start, r1.end), (r2.start, r2.end)]  # one record each
    cut = model.parts(p, 40)  # records longer than a part are cut at line ends
    assert all(e - s <= 40 for s, e in cut) and cut[0][0] == r1.start and cut[-1][1] == r2.end
    assert all(p.text[e - 1] == "\n" for _, e in cut[:-1] if e not in (r1.end,))
