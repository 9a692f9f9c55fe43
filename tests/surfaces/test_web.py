"""The FastAPI app, called in-process through its real routes (fastapi.testclient)."""

from __future__ import annotations

import json

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from clinex.pv.counts import COUNT_COLUMNS
from clinex.web.app import create_app

TRIAL = (
    "Methods\n\nParticipants were randomly assigned using a computer-generated random sequence. "
    "Allocation was concealed using sequentially numbered, opaque, sealed envelopes.\n"
)


@pytest.fixture(scope="module")
def client() -> TestClient:
    return TestClient(create_app())


def test_index_and_health(client: TestClient) -> None:
    page = client.get("/")
    assert page.status_code == 200 and "<h1>clinex</h1>" in page.text
    assert client.get("/api/health").json() == {"status": "ok", "version": "0.1.0"}


def test_rob_assess_upload(client: TestClient) -> None:
    resp = client.post("/api/rob/assess", params={"filename": "trial.txt"}, content=TRIAL.encode())
    assert resp.status_code == 200, resp.text
    body = resp.json()
    answers = {a["sq"]: a for d in body["domains"] for a in d["answers"]}
    assert len(answers) == 22
    ev = answers["1.1"]["evidence"][0]["span"]["fragments"][0]
    start = TRIAL.index("Participants")
    assert (ev["start"], ev["text"][:12]) == (start, "Participants")
    assert answers["1.1"]["response"] in {"Y", "PY"}


def test_rob_assess_empty_upload_is_422(client: TestClient) -> None:
    resp = client.post("/api/rob/assess", params={"filename": "empty.pdf"}, content=b"")
    assert resp.status_code == 422
    body = resp.json()["error"]
    assert body["code"].startswith("CLX")
    assert body["message"].split(": ")[0].endswith("] empty.pdf")  # not the server's temp path
    assert "clinex-web-" not in body["message"]


def test_rob_assess_model_parameter(client: TestClient) -> None:
    resp = client.post("/api/rob/assess", params={"filename": "t.txt", "model": "cues"},
                       content=TRIAL.encode())
    assert resp.status_code == 200
    assert resp.json()["model"].startswith("clinex.rob.cues") and resp.json()["source"] == "t.txt"
    resp = client.post("/api/rob/assess", params={"filename": "t.txt", "model": "nosuch"},
                       content=TRIAL.encode())
    assert resp.status_code == 422 and resp.json()["error"]["code"] == "CLX006"
    assert resp.json()["error"]["field"] == "model"


def test_pv_extract(client: TestClient) -> None:
    text = "A 45-year-old man developed rash after amoxicillin. He recovered."
    resp = client.post("/api/pv/extract", json={"text": text})
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert list(body) == ["model", "id", "record", "sentences", "counts", "table", "drugs", "pairs"]
    sentences = body["sentences"]
    # every offset is into the posted text: sentences by start/end, events by index into the record
    assert [(s["id"], s["start"], s["end"]) for s in sentences] == [("text_1", 0, 51), ("text_2", 52, 65)]
    assert [text[s["start"] : s["end"]] for s in sentences] == [
        "A 45-year-old man developed rash after amoxicillin.", "He recovered."]
    events = body["record"]["annotations"][0]["events"]
    assert sentences[0]["events"] == list(range(len(events))) and events and sentences[1]["events"] == []
    assert events[0]["event_type"] == "Adverse_event"
    for ev in events:
        for node in [ev["Trigger"], *(ev[r] for r in ("Subject", "Treatment", "Effect") if r in ev)]:
            for texts, starts in zip(node["text"], node["start"]):
                for t, start in zip(texts, starts):
                    assert text[start : start + len(t)] == t
    drug = next(d for d in body["drugs"] if d["text"] == "amoxicillin")
    assert drug == {"start": 39, "end": 50, "text": "amoxicillin", "name": "Amoxicillin",
                    "drugbank_id": "DB01060", "mesh_tree": "D03.633.100.300.750.750.050.050"}
    assert body["table"][0]["normalised_drug"] == "Amoxicillin" and body["table"][0]["record"] == "text_1"
    assert (body["table"][0]["sentence_start"], body["table"][0]["sentence_end"]) == (0, 51)


def test_pv_extract_unknown_model_is_422(client: TestClient) -> None:
    resp = client.post("/api/pv/extract", json={"text": "Rash after drug.", "model": "/etc"})
    assert resp.status_code == 422
    err = resp.json()["error"]
    assert err["code"] == "CLX006" and "not one of auto, crf, transformer" in err["message"]  # as the CLI


def test_cohort_screen_upload(client: TestClient, shared_data: Path) -> None:
    path = shared_data / "cohort_synthetic" / "dev" / "001.xml"
    resp = client.post("/api/cohort/screen", params={"filename": "001.xml"}, content=path.read_bytes())
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert len(body) == 13
    assert {d["label"] for d in body.values()} <= {"met", "not met"}
    # the evidence layout of `clinex cohort screen -o x.json` (clinex.cohort.screen.evidence_record)
    from clinex.cohort import screen
    from clinex.cohort.formats.n2c2_xml import read_patient
    from clinex.cohort.screen import decisions_to_dict

    assert body == decisions_to_dict(screen(read_patient(path)))
    ev = next(e for d in body.values() for e in d["evidence"])
    assert list(ev) == ["record_date", "start", "end", "rule", "source", "value", "sentence"]


def test_missing_filename_is_a_clinex_error(client: TestClient) -> None:
    resp = client.post("/api/rob/assess", content=TRIAL.encode())
    assert resp.status_code == 422
    body = resp.json()["error"]
    assert body["code"] == "CLX001" and "filename: Field required" in body["message"]
    assert body["field"] == "filename"


@pytest.mark.parametrize("text", ["", "   \n"])
def test_pv_extract_empty_text_is_one_record_without_events(client: TestClient, text: str) -> None:
    resp = client.post("/api/pv/extract", json={"text": text, "model": "crf"})
    assert resp.status_code == 200, resp.text
    assert resp.json() == {
        "model": "clinex.pv.crf.v1",
        "id": "text",
        "record": {
            "id": "text",
            "context": text,
            "is_mult_event": False,
            "annotations": [{"events": []}],
            "model": "clinex.pv.crf.v1",
        },
        "sentences": [{"id": "text_1", "start": 0, "end": len(text), "event_probability": None, "events": [],
                       "counts": dict.fromkeys(COUNT_COLUMNS, 0)}],
        "counts": dict.fromkeys(COUNT_COLUMNS, 0),
        "table": [],
        "drugs": [],
        "pairs": [],
    }


def test_pv_extract_model_is_the_versioned_id_for_every_kind(client: TestClient) -> None:
    resp = client.post("/api/pv/extract", json={"text": "Rash after amoxicillin.", "model": "crf"})
    assert resp.status_code == 200 and resp.json()["model"] == "clinex.pv.crf.v1"
    from clinex.pv.models import load_model

    (event,) = load_model("crf").predict(["Rash after amoxicillin."])[0]
    assert event.source == "clinex.pv.crf.v1"  # the id is the provenance the CRF's events carry
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from clinex.pv.models import model_id

    resp = client.post("/api/pv/extract", json={"text": "Rash after amoxicillin.", "model": "transformer"})
    assert resp.status_code == 200 and resp.json()["model"] == "clinex.pv.transformer.v2"
    # auto: the id of the kind the registry picks (clinex.pv.models.REGISTRY)
    resp = client.post("/api/pv/extract", json={"text": "Rash after amoxicillin.", "model": "auto"})
    assert resp.status_code == 200 and resp.json()["model"] == model_id(load_model("auto"))


# ----------------------------------------------------------------------------- issue 14: the page's API

REPO = Path(__file__).resolve().parents[2]
PV_TEXT = "Rash after penicillin. He recovered."
URL = __import__("re").compile(r"(?:https?:)?//[A-Za-z0-9.-]+\.[A-Za-z]{2,}")


def test_pages_and_openapi_reference_no_other_host(client: TestClient) -> None:
    """Every page, our assets and the OpenAPI document name no external URL; the docs pages
    load their scripts and styles from this server (the browser test records what they fetch)."""
    import re

    for path in ("/", "/static/app.js", "/static/app.css", "/openapi.json", "/docs", "/redoc"):
        resp = client.get(path)
        assert resp.status_code == 200, path
        assert URL.findall(resp.text) == [], path
    for path in ("/docs", "/redoc"):
        refs = re.findall(r'(?:src|href)="([^"]+)"', client.get(path).text)
        assert refs and all(r.startswith("/static-offline-docs/") for r in refs), refs
        for r in refs:
            assert client.get(r).status_code == 200, r
    # ReDoc's bundle would draw its logo from cdn.redoc.ly: served with a local one instead
    bundle = client.get("/static-offline-docs/redoc.standalone.js").text
    assert "cdn.redoc.ly" not in bundle and "/static-offline-docs/favicon.png" in bundle
    page = client.get("/").text
    assert re.findall(r'(?:src|href)="([^"#]+)"', page) == ["data:,", "/static/app.css", "/docs", "/redoc",
                                                           "/static/app.js"]


def test_serve_binds_loopback_by_default() -> None:
    import inspect

    from clinex.cli import serve

    assert inspect.signature(serve).parameters["host"].default.default == "127.0.0.1"


def test_models_lists_each_registry(client: TestClient) -> None:
    from clinex.cohort.models import model_names as cohort_names
    from clinex.pv.models import model_names as pv_names
    from clinex.rob.evidence import model_names as rob_names

    assert client.get("/api/models").json() == {
        "pv": list(pv_names()), "rob": list(rob_names()), "cohort": list(cohort_names())}


def _cli(args: list[str]) -> None:
    from typer.testing import CliRunner

    import clinex.cli as root

    res = CliRunner().invoke(root.app, args)
    assert res.exit_code == 0, res.output


def test_pv_downloads_are_what_the_cli_writes(client: TestClient, tmp_path: Path) -> None:
    import io
    import zipfile

    src = tmp_path / "notes.txt"
    src.write_text(PV_TEXT, "utf-8")
    _cli(["pv", "extract", "-i", str(src), "-o", str(tmp_path / "cli.json"), "--model", "crf"])
    _cli(["pv", "extract", "-i", str(src), "-o", str(tmp_path / "brat"), "--format", "brat", "--model", "crf"])
    params = {"filename": "notes.txt", "model": "crf"}
    resp = client.post("/api/pv/upload", params={**params, "format": "phee"}, content=PV_TEXT.encode())
    assert resp.status_code == 200 and resp.headers["content-disposition"] == 'attachment; filename="notes.phee.json"'
    assert resp.content == (tmp_path / "cli.json").read_bytes()
    resp = client.post("/api/pv/upload", params={**params, "format": "brat"}, content=PV_TEXT.encode())
    with zipfile.ZipFile(io.BytesIO(resp.content)) as z:
        assert sorted(z.namelist()) == sorted(p.name for p in (tmp_path / "brat").iterdir())
        for p in (tmp_path / "brat").iterdir():
            assert z.read(p.name) == p.read_bytes(), p.name
    resp = client.post("/api/pv/upload", params={**params, "format": "csv"}, content=PV_TEXT.encode())
    assert resp.headers["content-type"] == "text/csv; charset=utf-8"
    assert resp.text == (
        "record,sentence_start,sentence_end,event,event_type,trigger,trigger_probability,subject,treatment,drug,"
        "dose,route,effect,negated,speculated,severity,dechallenge,rechallenge,normalised_drug\n"
        "notes_1,0,22,1,Adverse_event,after,0.9778,,penicillin,penicillin,,,Rash,,,,,,Penicillins\n")
    # the pasted-text endpoint gives the same files for the same text (ids text_1, text_2)
    resp = client.post("/api/pv/extract", params={"format": "phee"}, json={"text": PV_TEXT, "model": "crf"})
    assert resp.content == (tmp_path / "cli.json").read_bytes().replace(b'"notes_', b'"text_')
    bad = client.post("/api/pv/extract", params={"format": "docx"}, json={"text": PV_TEXT})
    assert bad.status_code == 422 and bad.json()["error"]["field"] == "format"


def test_pv_upload_jsonl_records_are_read_whole(client: TestClient) -> None:
    from clinex.pv.formats.phee_json import to_phee_dict
    from clinex.pv.pipeline import extract_records

    lines = b'{"id": "a", "text": "Rash after penicillin. He recovered."}\n{"id": "b", "context": "Nausea."}\n'
    resp = client.post("/api/pv/upload", params={"filename": "x.jsonl", "model": "crf"}, content=lines)
    assert resp.status_code == 200, resp.text
    docs = resp.json()["documents"]
    expected = extract_records([("a", "Rash after penicillin. He recovered."), ("b", "Nausea.")], model="crf")
    assert [d["record"] for d in docs] == [to_phee_dict(e) for e in expected]
    assert [[(s["start"], s["end"]) for s in d["sentences"]] for d in docs] == [[(0, 36)], [(0, 7)]]
    err = client.post("/api/pv/upload", params={"filename": "x.jsonl"}, content=b"").json()["error"]
    assert err["message"] == "[CLX001] x.jsonl: no records (empty JSON lines file)"
    assert resp.json()["skipped"] == []


def test_pv_upload_skips_a_bad_json_line_as_the_cli_does(client: TestClient, cli, tmp_path: Path) -> None:  # noqa: ANN001
    """Fresh-user defect (stop 19): one bad line refused the whole upload, while
    `clinex pv extract` skips and reports it; now both keep the good records."""
    lines = b'{"id": "a", "text": "Rash after penicillin."}\n{not json\n{"id": "c", "text": "Nausea."}\n'
    resp = client.post("/api/pv/upload", params={"filename": "m.jsonl", "model": "crf"}, content=lines)
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert [d["record"]["id"] for d in body["documents"]] == ["a", "c"]
    assert len(body["skipped"]) == 1 and body["skipped"][0].startswith("[CLX002] m.jsonl:2: ")
    src = tmp_path / "m.jsonl"
    src.write_bytes(lines)
    res = cli("pv", "extract", "--model", "crf", "-i", str(src), "-o", str(tmp_path / "o.json"))
    assert res.code == 1 and f"skipped: [CLX002] {src}:2: " in res.stderr
    only_bad = client.post("/api/pv/upload", params={"filename": "b.jsonl"}, content=b"{x\n").json()["error"]
    assert only_bad["message"].startswith("[CLX001] b.jsonl: no usable line (1 bad lines; first: [CLX002] b.jsonl:1: ")


def test_uploads_are_sniffed(client: TestClient) -> None:
    cases = [
        ("/api/rob/assess", "t.pdf", b"Methods. Randomised.", "[CLX002] t.pdf: not a PDF file (it does not start with %PDF)"),
        ("/api/rob/report", "t.pdf", b"", "[CLX002] t.pdf: not a PDF file (an empty file)"),
        ("/api/rob/assess", "t.xml", b"<article><body>", "[CLX002] t.xml:1: not well-formed XML (no element found)"),
        ("/api/cohort/screen", "p.xml", b'<!DOCTYPE p [<!ENTITY e "x">]><p>&e;</p>',
         "[CLX002] p.xml: XML refused (EntitiesForbidden: entities and external DTDs are not read)"),
    ]
    for url, name, body, message in cases:
        resp = client.post(url, params={"filename": name}, content=body)
        assert resp.status_code == 422 and resp.json()["error"]["message"] == message, (url, resp.text)


def test_rob_report_is_the_cli_report(client: TestClient, tmp_path: Path) -> None:
    from clinex.rob.assess import assess, load_trial
    from clinex.rob.evidence import load_evidence_model
    from clinex.rob.report import render_html

    resp = client.post("/api/rob/report", params={"filename": "trial.txt", "model": "cues"}, content=TRIAL.encode())
    assert resp.status_code == 200, resp.text
    body = resp.json()
    path = tmp_path / "trial.txt"
    path.write_text(TRIAL, "utf-8")
    doc = load_trial(path)
    doc = doc.model_copy(update={"meta": {**doc.meta, "source": "trial.txt"}})
    result = assess(doc, load_evidence_model("cues")).model_copy(update={"source": "trial.txt"})
    assert body == {"assessment": result.model_dump(mode="json"), "html": render_html(result, doc)}
    assert body["assessment"] == client.post("/api/rob/assess", params={"filename": "trial.txt", "model": "cues"},
                                             content=TRIAL.encode()).json()


def test_rob_plot_and_robvis_of_several_trials(client: TestClient, tmp_path: Path) -> None:
    a = client.post("/api/rob/assess", params={"filename": "t.txt", "model": "cues"}, content=TRIAL.encode()).json()
    resp = client.post("/api/rob/robvis", json={"assessments": [a, a]})
    assert resp.status_code == 200 and resp.headers["content-disposition"] == 'attachment; filename="robvis.csv"'
    risks = ",".join(d["risk"] for d in a["domains"])
    assert resp.text == (f"Study,D1,D2,D3,D4,D5,Overall,Weight\nt,{risks},{a['overall']},1\n"
                         f"t-2,{risks},{a['overall']},1\n")  # a repeated id is numbered, as the CLI names files
    png = client.post("/api/rob/plot", json={"assessments": [a, a]})
    assert png.status_code == 200 and png.headers["content-type"] == "image/png"
    assert png.content.startswith(b"\x89PNG\r\n\x1a\n")
    one = client.post("/api/rob/json", json={"assessments": [a]})
    assert one.headers["content-disposition"] == 'attachment; filename="t.rob.json"'
    from clinex.rob.report import read_json

    path = tmp_path / "t.rob.json"
    path.write_bytes(one.content)
    assert read_json(path).model_dump(mode="json") == a  # the CLI's reader takes it back
    bad = client.post("/api/rob/robvis", json={"assessments": [{"document_id": "x"}]})
    assert bad.status_code == 422 and bad.json()["error"]["message"].startswith("[CLX005] field 'assessments': assessment 1: ")
    empty = client.post("/api/rob/plot", json={"assessments": []})
    assert empty.json()["error"]["message"] == "[CLX001] field 'assessments': no assessments"


NOTES = {
    "2071-03-10_clinic.txt": "HPI: 62 yo man with DM2 and HTN. Had an NSTEMI 2 weeks ago. HbA1c 7.2%. "
                             "Takes aspirin 81 mg daily.\n",
    "2071-09-02_visit.txt": "Record date: 2071-09-02\n\nCreatinine 2.1 mg/dL. Denies chest pain.\n",
}


def test_cohort_patient_from_dated_notes(client: TestClient) -> None:
    files = [{"name": k, "text": v} for k, v in NOTES.items()]
    resp = client.post("/api/cohort/patient", json={"files": files})
    assert resp.status_code == 200, resp.text
    view = resp.json()
    assert (view["patient"], view["source"], view["model"], view["now"], view["warning"]) == (
        "patient", "2071-03-10_clinic.txt, 2071-09-02_visit.txt", "clinex.cohort.rules.v1", "2071-09-02", None)
    assert view["records"] == [{"start": 0, "end": 123, "date": "2071-03-10"},
                               {"start": 225, "end": 290, "date": "2071-09-02"}]
    (ev,) = view["decisions"]["CREATININE"]["evidence"]
    assert view["text"][ev["start"] : ev["end"]] == ev["sentence"] == "Creatinine 2.1 mg/dL. Denies chest pain."
    assert (ev["record_date"], view["decisions"]["CREATININE"]["label"]) == ("2071-09-02", "met")


def test_cohort_downloads_are_what_the_cli_writes(client: TestClient, tmp_path: Path) -> None:
    src = REPO / "tests" / "data" / "cohort" / "t04_labs.xml"
    crit = REPO / "src" / "clinex" / "resources" / "criteria" / "n2c2" / "hba1c.yaml"
    body = {"files": [{"name": src.name, "text": src.read_text("utf-8")}],
            "criteria": [{"name": crit.name, "text": crit.read_text("utf-8")}]}
    for fmt, out, name in (("json", tmp_path / "x.json", "t04_labs.cohort.json"),
                           ("csv", tmp_path / "x.csv", "t04_labs.cohort.csv"),
                           ("xml", tmp_path / "xml", "t04_labs.xml")):
        _cli(["cohort", "screen", str(src), "-o", str(out), "-c", str(crit), "-q"])
        resp = client.post("/api/cohort/patient", params={"format": fmt}, json=body)
        assert resp.status_code == 200, resp.text
        assert resp.headers["content-disposition"] == f'attachment; filename="{name}"'
        written = out / "t04_labs.xml" if fmt == "xml" else out
        assert resp.content == written.read_bytes(), fmt
    view = client.post("/api/cohort/patient", json=body).json()
    assert list(view["decisions"]) == ["HBA1C"] and view["decisions"]["HBA1C"]["label"] == "met"


def test_cohort_model_and_input_errors(client: TestClient) -> None:
    notes = [{"name": k, "text": v} for k, v in NOTES.items()]
    err = client.post("/api/cohort/patient", json={"files": notes, "model": "nosuch"}).json()["error"]
    assert (err["code"], err["field"]) == ("CLX006", "model") and "not one of rules" in err["message"]
    err = client.post("/api/cohort/screen", params={"filename": "p.xml", "model": "nosuch"}, content=b"<x/>").json()
    assert err["error"]["field"] == "model"
    err = client.post("/api/cohort/patient", json={"files": [{"name": "a.pdf", "text": "x"}]}).json()["error"]
    assert err["message"] == "[CLX001] field 'files': a.pdf: expected an n2c2 .xml file or dated .txt notes"
    bad_crit = {"files": notes, "criteria": [{"name": "mine.yaml", "text": "name: X\n"}]}
    err = client.post("/api/cohort/patient", json=bad_crit).json()["error"]
    assert err["message"].startswith("[CLX005] mine.yaml: ") and "clinex-web" not in err["message"]
    err = client.post("/api/cohort/patient", json={"files": []}).json()["error"]
    assert err["field"] == "files"


def test_a_request_past_the_time_limit_is_504(monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    from clinex.web import app as web

    def slow(*_: object) -> dict:
        time.sleep(2.5)
        return {}

    monkeypatch.setattr(web, "_rob_work", slow)
    client = TestClient(web.create_app(timeout=1))
    start = time.monotonic()
    resp = client.post("/api/rob/assess", params={"filename": "t.txt"}, content=TRIAL.encode())
    assert time.monotonic() - start < 2.0
    assert resp.status_code == 504
    assert resp.json() == {"error": {"code": "CLX000", "field": None, "message":
                           "[CLX000] the request took longer than 1 s (CLINEX_WEB_TIMEOUT) and was stopped"}}


def test_limits_are_the_servers_settings() -> None:
    client = TestClient(create_app(max_upload=4096, timeout=7))
    assert client.get("/api/limits").json() == {"max_upload": 4096, "timeout": 7}
    resp = client.post("/api/pv/extract", json={"text": "x" * 5000})
    assert resp.status_code == 413 and resp.json()["error"]["message"] == (
        "[CLX001] field 'body': request body larger than 4096 bytes")


def test_pv_csv_record_is_the_sentence_record_of_the_phee_download(client: TestClient) -> None:
    """The CSV's ``record`` is the id the PHEE download gives the event's sentence (not the
    upload's name), with that sentence's offsets into the whole text."""
    import csv
    import io
    import json

    text = "A rash after amoxicillin. He recovered. Then nausea developed after metformin."
    body = {"text": text, "model": "crf"}
    rows = list(csv.DictReader(io.StringIO(client.post("/api/pv/extract", params={"format": "csv"}, json=body).text)))
    assert [(r["record"], r["sentence_start"], r["sentence_end"], r["event"], r["trigger"], r["effect"]) for r in rows] == [
        ("text_1", "0", "25", "1", "after", "A rash"), ("text_3", "40", "78", "2", "developed after", "nausea")]
    phee = [json.loads(x) for x in client.post("/api/pv/extract", params={"format": "phee"}, json=body).text.splitlines()]
    with_events = {x["id"]: x["context"] for x in phee if x["annotations"][0]["events"]}
    assert with_events == {r["record"]: text[int(r["sentence_start"]):int(r["sentence_end"])] for r in rows}
    resp = client.post("/api/pv/upload", params={"filename": "pv.txt", "model": "crf", "format": "csv"},
                       content=text.encode())
    assert [(r["record"], r["sentence_start"], r["sentence_end"]) for r in csv.DictReader(io.StringIO(resp.text))] == [
        ("pv_1", "0", "25"), ("pv_3", "40", "78")]


def test_openapi_declares_the_raw_file_bodies_and_the_file_responses(client: TestClient) -> None:
    """Swagger UI's "Try it out" needs a requestBody to offer a file chooser: the endpoints
    reading the raw body declare a required binary one; the plot is declared image/png."""
    paths = client.get("/openapi.json").json()["paths"]
    binary = {"type": "string", "format": "binary"}
    raw = {"/api/pv/upload": ["application/octet-stream", "text/plain", "application/x-ndjson"],
           "/api/cohort/screen": ["application/octet-stream", "application/xml"],
           "/api/rob/assess": ["application/octet-stream", "application/pdf", "text/plain", "application/xml"],
           "/api/rob/report": ["application/octet-stream", "application/pdf", "text/plain", "application/xml"]}
    for path, media in raw.items():
        body = paths[path]["post"]["requestBody"]
        assert body["required"] is True, path
        assert list(body["content"]) == media and all(c["schema"] == binary for c in body["content"].values()), path
    # every POST endpoint declares its body (the others as their JSON models)
    assert [p for p, ops in paths.items() if "post" in ops and "requestBody" not in ops["post"]] == []
    assert paths["/api/pv/extract"]["post"]["requestBody"]["content"] == {
        "application/json": {"schema": {"$ref": "#/components/schemas/PVRequest"}}}
    assert paths["/api/rob/plot"]["post"]["responses"]["200"]["content"] == {"image/png": {"schema": binary}}
    assert list(paths["/api/rob/robvis"]["post"]["responses"]["200"]["content"]) == ["text/csv"]
    assert list(paths["/api/rob/json"]["post"]["responses"]["200"]["content"]) == ["application/json", "application/zip"]
    assert list(paths["/api/pv/upload"]["post"]["responses"]["200"]["content"]) == [
        "application/json", "application/zip", "text/csv"]
    # and the plot really is what it declares
    ok = client.post("/api/rob/assess", params={"filename": "t.txt"}, content=TRIAL.encode()).json()
    png = client.post("/api/rob/plot", json={"assessments": [ok]})
    assert png.headers["content-type"] == "image/png" and png.content[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("content,headers,problem", [
    (b"text=rash after penicillin", {"content-type": "application/json"},
     "not valid JSON (Expecting value at character 0)"),
    (b'{"text": "x",}', {"content-type": "application/json"},
     "not valid JSON (Expecting property name enclosed in double quotes at character 13)"),
    (b'["rash"]', {"content-type": "application/json"}, "a JSON array, not an object"),
    (b"", {"content-type": "application/json"}, "empty"),
    (b"rash after penicillin", {"content-type": "application/octet-stream"},  # text/plain: 415 (CSRF)
     "not read as JSON (send it with Content-Type: application/json)"),
])
def test_a_body_that_is_not_a_json_object_is_named_body(
    client: TestClient, content: bytes, headers: dict[str, str], problem: str,
) -> None:
    resp = client.post("/api/pv/extract", content=content, headers=headers)
    assert resp.status_code == 422
    assert resp.json()["error"] == {"code": "CLX001", "field": "body", "message":
                                    f'[CLX001] bad request (body: {problem}; the body must be a JSON object '
                                    'like {"text": "..."})'}
    # a problem inside the object still names its field
    err = client.post("/api/pv/extract", json={"txt": "x"}).json()["error"]
    assert (err["field"], err["message"]) == ("text", "[CLX001] bad request (text: Field required)")
    err = client.post("/api/rob/plot", content=b"x", headers={"content-type": "application/json"}).json()["error"]
    assert err["message"] == ('[CLX001] bad request (body: not valid JSON (Expecting value at character 0); '
                              'the body must be a JSON object like {"assessments": [...]})')


@pytest.mark.parametrize("content,problem", [
    (b'{"text": "a", "x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
     "JSON nested too deeply (arrays or objects inside each other); send a flatter body"),
    (b'{"text": "rash", "x": ' + b"9" * 5000 + b"}", "a JSON integer of 5,000 digits; at most 4,300 digits are read"),
    (b'{"text": ' + b"9" * 5000 + b"}", "a JSON integer of 5,000 digits; at most 4,300 digits are read"),
    (b'{"text": -' + b"1" * 4301 + b"}", "a JSON integer of 4,301 digits; at most 4,300 digits are read"),
    (b'{"text": "rash \xff"}', "not UTF-8 (byte 0xff at position 15)"),
])
def test_a_body_the_json_parser_cannot_read_is_422_on_body(client: TestClient, content: bytes, problem: str) -> None:
    # FastAPI answers these "400 There was an error parsing the body"; the app says what is wrong
    for path in ("/api/pv/extract", "/api/rob/json", "/api/cohort/patient"):
        resp = client.post(path, content=content, headers={"content-type": "application/json"})
        assert resp.status_code == 422, path
        assert resp.json() == {"error": {"code": "CLX001", "field": "body",
                                         "message": f"[CLX001] bad request (body: {problem})"}}, path
    # 4,300 digits are read (then refused as not a string, naming the field)
    err = client.post("/api/pv/extract", content=b'{"text": ' + b"9" * 4300 + b"}",
                      headers={"content-type": "application/json"}).json()["error"]
    assert (err["field"], err["message"]) == ("text", "[CLX001] bad request (text: Input should be a valid string)")


def test_pv_text_over_the_documented_limit_gets_the_limit_message(client: TestClient,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from clinex.io import limits

    resp = client.post("/api/pv/extract", json={"text": "a" * 1_000_001, "unit": "record"})
    assert resp.status_code == 422
    assert resp.json() == {"error": {"code": "CLX002", "field": "text", "message": (
        "[CLX002] field 'text': text: 1,000,001 characters, more than MAX_PV_TEXT_CHARS = 1,000,000 "
        "(clinex.io.limits); split it into several files or JSON-lines records")}}
    # one limit: the web reads the constant the pipeline reads (raised or lowered at run time)
    monkeypatch.setattr(limits, "MAX_PV_TEXT_CHARS", 10)
    err = client.post("/api/pv/extract", json={"text": "rash rash rash"}).json()["error"]
    assert err["message"] == ("[CLX002] field 'text': text: 14 characters, more than MAX_PV_TEXT_CHARS = 10 "
                              "(clinex.io.limits); split it into several files or JSON-lines records")
    schema = create_app().openapi()["components"]["schemas"]["PVRequest"]["properties"]["text"]
    assert schema == {"type": "string", "maxLength": 10, "title": "Text"}  # /openapi.json says the same


def test_two_xml_patients_are_refused_with_what_to_choose(client: TestClient) -> None:
    xml = (Path(__file__).parents[1] / "data" / "cohort" / "t04_labs.xml").read_text("utf-8")
    two = [{"name": "t04_labs.xml", "text": xml}, {"name": "other.xml", "text": xml}]
    err = client.post("/api/cohort/patient", json={"files": two}).json()["error"]
    assert (err["field"], err["message"]) == ("files", "[CLX001] field 'files': 2 XML files given "
                                              "(t04_labs.xml, other.xml): choose one n2c2 XML file (one patient)")
    mixed = [{"name": "t04_labs.xml", "text": xml}, {"name": "2071-03-10_a.txt", "text": "HbA1c 7.2%."}]
    err = client.post("/api/cohort/patient", json={"files": mixed}).json()["error"]
    assert err["message"] == ("[CLX001] field 'files': give one n2c2 XML file, or the .txt notes of one patient, "
                              "not both")


def test_pv_table_shows_dechallenge(client: TestClient) -> None:
    """Issue 23 item 2: the web event table carries the dechallenge attribute."""
    resp = client.post("/api/pv/extract", json={"text": "The agranulocytosis resolved after clozapine was withdrawn."})
    assert resp.status_code == 200
    rows = resp.json()["table"]
    assert [(r["drug"], r["effect"], r["event_type"], r["dechallenge"], r["rechallenge"]) for r in rows] == [
        ("clozapine", "agranulocytosis", "Adverse_event", "yes", "")]


def test_pv_upload_record_gives_its_pairs(client: TestClient) -> None:
    """Issue 23 item 1: a JSON-lines record is read whole; the view carries its pairs."""
    rec = {"id": "1", "text": "Clozapine-induced agranulocytosis: a case report. A 34-year-old man developed "
                              "agranulocytosis. The drug was withdrawn and the neutrophil count recovered."}
    resp = client.post("/api/pv/upload", params={"filename": "abs.jsonl"}, content=(json.dumps(rec) + "\n").encode())
    assert resp.status_code == 200, resp.text
    (doc,) = resp.json()["documents"]
    assert [(p["drug"], p["reaction"], p["dechallenge"], p["evidence"]) for p in doc["pairs"]] == [
        ("clozapine", "agranulocytosis", True, [[0, 49], [50, 94], [95, 153]])]
