"""The web app chooses its model by the one settings rule of every surface (issue 24):
the request's ``model`` when given, else ``CLINEX_<TASK>_MODEL``, else ``auto``
(:class:`clinex.surface.Settings`), checked against a real ``clinex serve``."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient
from live_server import live_server

from clinex.errors import ClinexError
from clinex.web.app import create_app

TRIAL = (
    "Methods\n\nParticipants were randomly assigned using a computer-generated random sequence. "
    "Allocation was concealed using sequentially numbered, opaque, sealed envelopes.\n"
)
ENV = {"CLINEX_PV_MODEL": "crf", "CLINEX_ROB_MODEL": "cues", "CLINEX_COHORT_MODEL": "rules"}
NOTE = [{"name": "2019-03-01.txt", "text": "Patient takes aspirin daily.\n"}]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with live_server(tmp_path_factory.mktemp("web-settings"), env=ENV) as base:
        yield base


def test_the_servers_variables_choose_the_model_when_the_request_names_none(server: str) -> None:
    with httpx.Client(base_url=server, timeout=120) as c:
        rob = c.post("/api/rob/assess", params={"filename": "t.txt"}, content=TRIAL.encode())
        assert rob.status_code == 200 and rob.json()["model"] == "clinex.rob.cues.v1"
        pv = c.post("/api/pv/extract", json={"text": "Rash after amoxicillin."})
        assert pv.status_code == 200 and pv.json()["model"] == "clinex.pv.crf.v1"
        cohort = c.post("/api/cohort/patient", json={"files": NOTE})
        assert cohort.status_code == 200 and cohort.json()["model"] == "clinex.cohort.rules.v1"


def test_a_model_the_request_names_wins_over_the_variables(server: str) -> None:
    with httpx.Client(base_url=server, timeout=120) as c:
        rob = c.post("/api/rob/assess", params={"filename": "t.txt", "model": "rules"}, content=TRIAL.encode())
        assert rob.status_code == 200 and rob.json()["model"] == "clinex.rob.rules.v1"
        pv = c.post("/api/pv/extract", json={"text": "Rash after amoxicillin.", "model": "crf"})
        assert pv.status_code == 200 and pv.json()["model"] == "clinex.pv.crf.v1"
        cohort = c.post("/api/cohort/patient", json={"files": NOTE, "model": "rules"})
        assert cohort.status_code == 200 and cohort.json()["model"] == "clinex.cohort.rules.v1"
        # a name the client gives is still a registry name only (no server paths)
        err = c.post("/api/rob/assess", params={"filename": "t.txt", "model": "/etc"}, content=b"x").json()["error"]
        assert (err["code"], err["field"]) == ("CLX006", "model")


def test_without_the_variables_the_default_is_auto(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for var in ENV:
        monkeypatch.delenv(var, raising=False)
    client = TestClient(create_app())
    rob = client.post("/api/rob/assess", params={"filename": "t.txt"}, content=TRIAL.encode())
    assert rob.status_code == 200 and rob.json()["model"] == "clinex.rob.rules.v1"  # auto: rules
    monkeypatch.setenv("CLINEX_ROB_MODEL", "cues")  # read per request, as the CLI reads it per run
    rob = client.post("/api/rob/assess", params={"filename": "t.txt"}, content=TRIAL.encode())
    assert rob.json()["model"] == "clinex.rob.cues.v1"


def test_a_folder_in_the_variable_is_refused_without_naming_it(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """On the web the variable, like the request, names a registry model: a folder there
    would put a server path in the answer."""
    folder = tmp_path / "secret-models" / "crf"
    client = TestClient(create_app())
    monkeypatch.setenv("CLINEX_PV_MODEL", str(folder))  # read per request
    r = client.post("/api/pv/extract", json={"text": "Rash after amoxicillin."})
    err = r.json()["error"]
    assert (r.status_code, err["code"], err["field"]) == (422, "CLX006", "model")
    assert "secret-models" not in r.text and str(tmp_path) not in r.text
    assert err["message"] == ("[CLX006] field 'model': the server's CLINEX_PV_MODEL names no pv model this server offers; "
                              "name one in the request or ask the server's operator")


def test_a_model_not_installed_is_refused_without_its_server_path(monkeypatch: pytest.MonkeyPatch,
                                                                  tmp_path: Path) -> None:
    """Fresh-user QA: ``model=sentence`` with no trained sentence model named the server's
    ``$CLINEX_DATA/models/rob-sentence.joblib`` in the answer."""
    monkeypatch.setenv("CLINEX_DATA", str(tmp_path / "data-home"))
    r = TestClient(create_app()).post("/api/rob/assess", params={"filename": "t.txt", "model": "sentence"},
                                      content=TRIAL.encode())
    assert r.status_code == 422 and "data-home" not in r.text and str(tmp_path) not in r.text
    assert r.json()["error"] == {
        "code": "CLX006", "field": "model",
        "message": "[CLX006] field 'model': no trained sentence model; run `clinex rob train CORPUS` first "
                   "or pass a model path"}


def test_a_bad_variable_stops_the_server_before_it_listens(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fresh-user QA: ``CLINEX_PV_MODEL=bogus clinex serve`` started and then failed every
    request; the CLI and batch refuse a bad model before any work, so does the server."""
    import subprocess
    import sys

    monkeypatch.setenv("CLINEX_COHORT_MODEL", "bogus")
    with pytest.raises(ClinexError) as err:
        create_app()
    assert str(err.value) == ("[CLX006] field 'model': unknown cohort model 'bogus': not one of rules, llm, auto "
                              "(the model named by $CLINEX_COHORT_MODEL)")
    run = subprocess.run([sys.executable, "-m", "clinex.cli", "serve", "--port", "0"], capture_output=True,
                         text=True, timeout=120, env={**os.environ, "CLINEX_COHORT_MODEL": "bogus"})
    assert (run.returncode, run.stderr.strip().splitlines()[-1]) == (2, str(err.value))
