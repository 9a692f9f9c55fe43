"""The FastAPI app, called in-process through its real routes (fastapi.testclient)."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

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
    assert resp.status_code == 422 and resp.json()["error"]["code"] == "CLX005"
    assert resp.json()["error"]["field"] == "model"


def test_pv_extract(client: TestClient) -> None:
    text = "A 45-year-old man developed rash after amoxicillin. He recovered."
    resp = client.post("/api/pv/extract", json={"text": text})
    assert resp.status_code == 200, resp.text
    sentences = resp.json()["sentences"]
    assert [s["record"]["context"] for s in sentences] == [
        "A 45-year-old man developed rash after amoxicillin.",
        "He recovered.",
    ]
    assert [(s["start"], s["end"]) for s in sentences] == [(0, 51), (52, 65)]
    first = sentences[0]["record"]["annotations"][0]["events"]
    assert first and first[0]["event_type"] == "Adverse_event"
    trig = first[0]["Trigger"]
    start = sentences[0]["start"] + trig["start"][0][0]
    assert text[start : start + len(trig["text"][0][0])] == trig["text"][0][0]


def test_pv_extract_unknown_model_is_422(client: TestClient) -> None:
    resp = client.post("/api/pv/extract", json={"text": "Rash after drug.", "model": "/etc"})
    assert resp.status_code == 422
    err = resp.json()["error"]
    assert err["code"] == "CLX005" and "not one of auto, crf, transformer" in err["message"]


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
        "record": {
            "id": "text",
            "context": text,
            "is_mult_event": False,
            "annotations": [{"events": []}],
            "model": "clinex.pv.crf.v1",
        },
        "sentences": [
            {
                "start": 0,
                "end": len(text),
                "record": {
                        "id": "s1",
                        "context": text,
                        "is_mult_event": False,
                        "annotations": [{"events": []}],
                        "model": "clinex.pv.crf.v1",
                    },
            }
        ],
    }


def test_pv_extract_model_is_the_versioned_id_for_every_kind(client: TestClient) -> None:
    resp = client.post("/api/pv/extract", json={"text": "Rash after amoxicillin.", "model": "crf"})
    assert resp.status_code == 200 and resp.json()["model"] == "clinex.pv.crf.v1"
    from clinex.pv.models import load_model

    (event,) = load_model("crf").predict(["Rash after amoxicillin."])[0]
    assert event.source == "clinex.pv.crf.v1"  # the id is the provenance the CRF's events carry
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    for name in ("auto", "transformer"):
        resp = client.post("/api/pv/extract", json={"text": "Rash after amoxicillin.", "model": name})
        assert resp.status_code == 200 and resp.json()["model"] == "clinex.pv.transformer.v1"
