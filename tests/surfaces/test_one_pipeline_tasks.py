"""One pipeline per task, risk of bias and cohort selection: the Python API, the CLI, the
web API and ``clinex batch`` give the same answers, evidence offsets and errors for the
same input (PV: tests/surfaces/test_one_pipeline.py).

RoB: :func:`clinex.rob.assess.assess_path` with a model from
:data:`clinex.rob.evidence.REGISTRY`; cohort: :func:`clinex.cohort.screen` with a model
from :data:`clinex.cohort.models.REGISTRY`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from live_server import live_server
from typer.testing import CliRunner

import clinex.cli as root
from clinex.batch import read_results, run_batch
from clinex.errors import ClinexError

ROB_CASES = Path(__file__).parents[1] / "data" / "rob_cases"
REPORT = ROB_CASES / "01_relcomide_cough.txt"

PATIENT = """<?xml version="1.0" encoding="UTF-8" ?>
<PatientMatching>
<TEXT><![CDATA[
Record date: 2070-01-12

Cardiology follow-up. 66 yo man with type 2 diabetes on metformin and insulin.
Acute myocardial infarction in December 2069, treated with a drug-eluting stent.
He does not drink alcohol. HbA1c 7.9 today. Creatinine 1.1.

****************************************************************************************************
Record date: 2070-03-02

Seen for chest pain. Denies any history of drug abuse. Speaks English.
Aspirin 81 mg daily.
]]></TEXT>
<TAGS>
</TAGS>
</PatientMatching>
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with live_server(tmp_path_factory.mktemp("web")) as base:
        yield base


def _cli(*args: Any) -> Any:
    return CliRunner().invoke(root.app, [str(a) for a in args])


# ------------------------------------------------------------------------------ RoB


def _ev(e: dict[str, Any]) -> tuple:
    """(fragment offsets, source) of one evidence item as JSON."""
    return tuple((f["start"], f["end"]) for f in e["span"]["fragments"]), e["source"]


def _rob_norm(result: dict[str, Any]) -> tuple:
    """(overall, per domain (domain, risk), per SQ (sq, response, evidence offsets + source))
    of a TrialAssessment as JSON (API model_dump, CLI .rob.json and web are this layout)."""
    answers = []
    for dom in result["domains"]:
        for ans in dom["answers"]:
            ev = tuple(_ev(e) for e in ans["evidence"])
            answers.append((ans["sq"], ans["response"], ev))
    return result["overall"], tuple((d["domain"], d["risk"]) for d in result["domains"]), tuple(answers)


def _rob_batch_norm(rows: list[tuple]) -> tuple:
    overall = {r[2] for r in rows}
    assert len(overall) == 1
    domains = tuple(dict.fromkeys((r[0], r[1]) for r in rows))
    answers = tuple(
        (sq, resp, tuple(_ev(e) for e in json.loads(ev)))
        for *_, sq, resp, ev in rows
    )
    return overall.pop(), domains, answers


@pytest.mark.parametrize("model", ["rules", "cues"])
def test_rob_is_identical_on_all_four_surfaces(tmp_path: Path, server: str, model: str) -> None:
    from clinex.rob.assess import assess_path
    from clinex.rob.evidence import load_evidence_model

    text = REPORT.read_text("utf-8")
    api = _rob_norm(assess_path(REPORT, load_evidence_model(model)).model_dump(mode="json"))

    res = _cli("rob", "assess", REPORT, "--output", tmp_path / "cli", "--model", model)
    assert res.exit_code == 0, res.output
    cli = _rob_norm(json.loads((tmp_path / "cli" / "01_relcomide_cough.rob.json").read_text("utf-8")))

    r = httpx.post(f"{server}/api/rob/assess", params={"filename": REPORT.name, "model": model},
                   content=REPORT.read_bytes(), timeout=120)
    assert r.status_code == 200, r.text
    web = _rob_norm(r.json())

    summary = run_batch("rob", [REPORT], tmp_path / "batch", model=model)
    assert not summary.errors
    rows = read_results(tmp_path / "batch", "SELECT domain, domain_risk, overall, sq, response, evidence_json FROM results")
    batch = _rob_batch_norm(rows)
    manifest = json.loads((tmp_path / "batch" / "manifest.json").read_text("utf-8"))
    assert manifest["model"] == f"clinex.rob.{model}.v1"

    assert len(api[2]) == 22
    assert cli == api
    assert web == api
    assert batch == api
    # the comparison is not vacuous: answers carry evidence, and every offset indexes the text
    cited = [ev for _, _, evs in api[2] for ev in evs]
    assert len(cited) >= 5
    for frags, _ in cited:
        for start, end in frags:
            assert 0 <= start < end <= len(text)


@pytest.mark.parametrize(("name", "content"), [("blank.txt", b""), ("spaces.txt", b"  \n ")])
def test_rob_blank_report_is_the_same_error_on_all_four_surfaces(
    cli: Any, tmp_path: Path, server: str, name: str, content: bytes
) -> None:
    from clinex.rob.assess import assess_path

    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(ClinexError) as api:
        assess_path(path)
    assert api.value.code == "CLX002"

    res = cli("rob", "assess", path, "--output", tmp_path / "cli")
    assert res.code == 2
    assert f"skipped {path}: [CLX002] {path}: empty file" in res.stderr

    r = httpx.post(f"{server}/api/rob/assess", params={"filename": name}, content=content, timeout=60)
    assert r.status_code == 422
    assert "empty file" in r.text and str(tmp_path) not in r.text  # no server path reaches a client

    summary = run_batch("rob", [path], tmp_path / "batch")
    assert [e.id for e in summary.errors] == [str(path)]
    assert "[CLX002]" in summary.errors[0].message and "empty file" in summary.errors[0].message
    assert read_results(tmp_path / "batch") == []


# --------------------------------------------------------------------------- cohort


def _cohort_norm(decisions: dict[str, Any]) -> tuple:
    """Per criterion (name, label, evidence (record date, start, end, rule)) of
    :func:`clinex.cohort.screen.decisions_to_dict` output (CLI .json and web use it)."""
    return tuple(
        (name, d["label"], tuple((e["record_date"], e["start"], e["end"], e["rule"]) for e in d["evidence"]))
        for name, d in sorted(decisions.items())
    )


def test_cohort_is_identical_on_all_four_surfaces(tmp_path: Path, server: str) -> None:
    from clinex.cohort import screen
    from clinex.cohort.formats.n2c2_xml import read_patient
    from clinex.cohort.screen import decisions_to_dict

    src = tmp_path / "p1.xml"
    src.write_text(PATIENT, "utf-8")
    patient = read_patient(src)
    api = _cohort_norm(decisions_to_dict(screen(patient, model="rules")))

    res = _cli("cohort", "screen", src, "--output", tmp_path / "cli.json", "--model", "rules")
    assert res.exit_code == 0, res.output
    cli = _cohort_norm(json.loads((tmp_path / "cli.json").read_text("utf-8"))["p1"])

    r = httpx.post(f"{server}/api/cohort/screen", params={"filename": "p1.xml"},
                   content=src.read_bytes(), timeout=120)
    assert r.status_code == 200, r.text
    body = r.json()
    web = _cohort_norm(body.get("decisions", body))

    summary = run_batch("cohort", [src], tmp_path / "batch", model="rules")
    assert not summary.errors
    rows = read_results(tmp_path / "batch", "SELECT criterion, label, evidence_json FROM results ORDER BY criterion")
    batch = tuple(
        (c, label, tuple((e["record_date"], e["start"], e["end"], e["rule"]) for e in json.loads(ev)))
        for c, label, ev in rows
    )
    assert json.loads((tmp_path / "batch" / "manifest.json").read_text("utf-8"))["model"] == "clinex.cohort.rules.v1"

    assert len(api) == 13
    assert cli == api
    assert web == api
    assert batch == api
    labels = {name: label for name, label, _ in api}
    assert {k for k, v in labels.items() if v == "met"} == {
        "ADVANCED-CAD", "ASP-FOR-MI", "ENGLISH", "HBA1C", "MAKES-DECISIONS", "MI-6MOS",
    }
    evidence = {name: ev for name, _, ev in api}
    assert evidence["MI-6MOS"] == (("2070-01-12", 105, 185, "MI-6MOS.mi:term=myocardial infarction@111-132"),)
    assert patient.text[105:185] == "Acute myocardial infarction in December 2069, treated with a drug-eluting stent."
    assert patient.text[111:132] == "myocardial infarction"
    assert evidence["CREATININE"][0][3] == "CREATININE.serum_creatinine:value-not-meeting=1.1"
    # a lab value cites its own sentence, not its whole line (QA stop 18)
    assert evidence["HBA1C"] == (("2070-01-12", 213, 229, "HBA1C.a1c:value=7.9"),)
    assert patient.text[213:229] == "HbA1c 7.9 today."
    for _, _, evidence in api:  # every offset indexes the patient's text
        for _, start, end, _ in evidence:
            assert 0 <= start < end <= len(patient.text)


def test_cohort_unknown_model_is_the_same_message_everywhere(cli: Any, tmp_path: Path) -> None:
    from clinex.cohort import screen
    from clinex.cohort.formats.n2c2_xml import read_patient

    src = tmp_path / "p1.xml"
    src.write_text(PATIENT, "utf-8")
    from clinex.cohort.models import unknown_model_message

    message = unknown_model_message("crf")
    assert message.startswith("unknown cohort model 'crf': not one of rules, ") and message.endswith("auto")
    with pytest.raises(ClinexError, match=message):
        screen(read_patient(src), model="crf")
    res = cli("cohort", "screen", src, "--output", tmp_path / "x.json", "--model", "crf")
    assert res.code == 2 and res.stderr == f"[CLX006] {message}\n"
    with pytest.raises(ClinexError, match=message):
        run_batch("cohort", [src], tmp_path / "batch", model="crf")
    assert not (tmp_path / "x.json").exists() and not (tmp_path / "batch").exists()
