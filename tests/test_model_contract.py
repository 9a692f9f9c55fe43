"""One model contract for every registered kind of every task (issue 24 item 2).

In the spirit of scikit-learn's common estimator checks: every kind of
``clinex.pv.models.REGISTRY``, ``clinex.rob.evidence.REGISTRY`` and
``clinex.cohort.models.REGISTRY``

* loads by name and, where the task saves models, by folder or file;
* predicts on a blank and on a normal input;
* gives spans whose every fragment satisfies ``text[start:end] == fragment.text``;
* carries a versioned id (``clinex.<task>.<kind>.v<N>``, optionally ``+<hash>`` or
  ``:<server model>``);
* survives save -> load (through the registry, by path) with identical predictions.

The ``llm`` kinds run against the scripted local server (``tests/llm_server.py``); the
RoB ``sentence`` kind is trained on a tiny corpus first (no trained model ships).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from llm_server import ScriptedServer
from pydantic import BaseModel

import clinex.cohort.models as cohort_models
import clinex.pv.models as pv_models
import clinex.rob.evidence as rob_evidence
from clinex.errors import InputError, ModelError
from clinex.text import Document, Span

DATA = Path(__file__).parent / "data"
PV_TEXT = "A 45-year-old woman developed severe rash after aspirin 100 mg."
ROB_TEXT = ("Methods\nPatients were randomised by a computer-generated list held by the pharmacy. "
            "Outcome assessors were not blinded to group allocation. "
            "All 120 randomised patients were included in the analysis.")
REGISTRIES = {"pv": pv_models.REGISTRY, "rob": rob_evidence.REGISTRY, "cohort": cohort_models.REGISTRY}
KINDS = [(task, kind) for task, reg in REGISTRIES.items() for kind in reg]
VERSIONED = re.compile(r"^clinex\.(pv|rob|cohort)\.[a-z_]+\.v\d+(\+[0-9a-f]{8}|:[\w.\-]+)?$")


# ------------------------------------------------------------------ fixtures


@pytest.fixture(scope="module")
def server():
    with ScriptedServer() as srv:
        yield srv


@pytest.fixture
def llm_env(server: ScriptedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ScriptedServer:
    """Every task's llm kind pointed at the scripted server, one valid answer per task."""
    monkeypatch.setenv("CLINEX_LLM_BASE_URL", server.url)
    monkeypatch.setenv("CLINEX_LLM_MODEL", "scripted")
    monkeypatch.setenv("CLINEX_LLM_API_KEY", "sk-contract")
    monkeypatch.setenv("CLINEX_LLM_CACHE", str(tmp_path / "cache.sqlite"))
    monkeypatch.setenv("CLINEX_LLM_BACKOFF", "0.01")
    pv_answer = {"events": [{"event_type": "Adverse_event", "trigger": "developed", "arguments": [
        {"role": "Treatment", "text": "aspirin 100 mg"}, {"role": "Effect", "text": "severe rash"}],
        "sub_arguments": [{"main": "Treatment", "role": "Drug", "text": "aspirin"}]}]}
    server.script([
        {"match": "severe rash", "responses": [{"content": pv_answer}]},
        {"match": "Signalling question", "responses": [
            {"content": {"answer": "N", "evidence": ["Outcome assessors were not blinded to group allocation."]}}]},
        {"match": "Criterion ", "responses": [{"content": {"decision": "not met", "evidence": []}}]},
        {"match": "", "responses": [{"content": {"events": []}}]},
    ])
    return server


@pytest.fixture
def trained_sentence_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A tiny sentence model at the default path (``CLINEX_DATA`` in ``tmp_path``)."""
    from clinex.rob.evidence.sentence_model import SentenceEvidenceModel

    monkeypatch.setenv("CLINEX_DATA", str(tmp_path / "data"))
    docs, spans = [], []
    for i, (rand, itt) in enumerate([
        ("Patients were randomised by computer.", "Analysis was by intention to treat."),
        ("A random number table allocated patients.", "All randomised patients were analysed."),
        ("Allocation used sealed envelopes.", "We analysed every randomised participant."),
    ]):
        text = f"The weather was mild. {rand} Meals were served. {itt}"
        a, b = text.index(rand), text.index(itt)
        docs.append(Document(id=f"d{i}", text=text))
        spans.append([Span.from_offsets(text, (a, a + len(rand)), label="1_1_Yes_Good"),
                      Span.from_offsets(text, (b, b + len(itt)), label="2_6_Yes_Good")])
    path = rob_evidence.default_model_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    SentenceEvidenceModel().fit(docs, spans).save(path)
    return path


@pytest.fixture
def ready(request: pytest.FixtureRequest) -> None:
    """What a kind needs before it loads by name (a server, a trained model)."""
    task, kind = request.node.callspec.params["task_kind"]
    if kind == "llm":
        request.getfixturevalue("llm_env")
    if (task, kind) == ("rob", "sentence"):
        request.getfixturevalue("trained_sentence_model")


# ------------------------------------------------------------------ the checks, per task


def _inputs(task: str) -> list[Any]:
    """A blank and a normal input of the task."""
    if task == "pv":
        return [["", PV_TEXT]]
    if task == "rob":
        return [Document(id="blank", text=""), Document(id="t", text=ROB_TEXT)]
    from clinex.cohort.formats.n2c2_xml import read_patient
    from clinex.cohort.types import Patient

    return [Patient(id="blank", text=""), read_patient(DATA / "cohort" / "t04_labs.xml")]


def _predict(task: str, model: Any, item: Any) -> Any:
    if task == "pv":
        return model.predict(item)
    if task == "rob":
        return model.predict(item)
    return model.screen(item)


def _texts(task: str, item: Any) -> list[str]:
    """The texts the prediction's offsets point into (PV: one per input text)."""
    return list(item) if task == "pv" else [item.text]


def _spans(obj: Any) -> list[Span]:
    """Every Span inside a prediction (pydantic models, lists, tuples, dicts)."""
    if isinstance(obj, Span):
        return [obj]
    if isinstance(obj, BaseModel):
        return [s for name in type(obj).model_fields for s in _spans(getattr(obj, name))]
    if isinstance(obj, (list, tuple)):
        return [s for x in obj for s in _spans(x)]
    if isinstance(obj, dict):
        return [s for x in obj.values() for s in _spans(x)]
    return []


def check_offsets(task: str, item: Any, prediction: Any) -> int:
    """Assert ``text[start:end] == fragment.text`` for every fragment; return the span count."""
    texts = _texts(task, item)
    per_text = prediction if task == "pv" else [prediction]
    n = 0
    for text, pred in zip(texts, per_text, strict=True):
        for span in _spans(pred):
            for f in span.fragments:
                assert text[f.start:f.end] == f.text, (task, f)
            n += 1
    return n


def model_id(task: str, model: Any) -> str:
    return pv_models.model_id(model) if task == "pv" else str(model.name)


def _dump(prediction: Any) -> Any:
    """A comparable form of a prediction."""
    if isinstance(prediction, BaseModel):
        return prediction.model_dump(mode="json")
    if isinstance(prediction, dict):
        return {k: _dump(v) for k, v in prediction.items()}
    if isinstance(prediction, (list, tuple)):
        return [_dump(x) for x in prediction]
    return prediction


def predict_all(task: str, model: Any) -> list[Any]:
    """Predictions on the blank and the normal input, offsets checked. A blank patient is
    refused by the cohort rules engine (``InputError``: nothing to screen, rather than
    confident decisions about nothing); its prediction is then None."""
    out = []
    for item in _inputs(task):
        try:
            prediction = _predict(task, model, item)
        except InputError as exc:
            assert task == "cohort" and not item.text and "nothing to screen" in exc.message, exc
            out.append(None)
            continue
        check_offsets(task, item, prediction)
        out.append(_dump(prediction))
    return out


def save_path(task: str, kind: str, tmp_path: Path) -> Path | None:
    """Where a model of the kind is saved (a folder for PV, a file for RoB); None: not saved."""
    if task == "pv":
        return tmp_path / f"saved-{kind}"
    if task == "rob":
        return tmp_path / f"saved-{kind}.{ {'sentence': 'joblib', 'llm': 'json'}.get(kind, 'yaml') }"
    return None


def check_save_load(task: str, kind: str, model: Any, tmp_path: Path) -> Any:
    """Save ``model``, load it back through the registry by path; return the loaded one."""
    path = save_path(task, kind, tmp_path)
    assert path is not None
    model.save(path)
    REGISTRIES[task].clear_cache()
    return REGISTRIES[task].load(str(path))


# ------------------------------------------------------------------ the contract


@pytest.mark.parametrize("task_kind", KINDS, ids=[f"{t}-{k}" for t, k in KINDS])
def test_model_contract(task_kind: tuple[str, str], ready: None, tmp_path: Path) -> None:
    task, kind = task_kind
    registry = REGISTRIES[task]
    model = registry.load(kind, *(("n2c2",) if task == "cohort" else ()))
    assert model is not None
    mid = model_id(task, model)
    assert VERSIONED.match(mid), mid
    assert mid.split("+")[0].split(":")[0] == registry[kind].version
    outputs = [predict_all(task, model)]
    blank = outputs[0][0]
    if task == "pv":
        assert blank[0] == []  # a blank text has no event
    elif blank is not None:  # nothing to cite in a blank report or patient
        assert not _spans(blank), task
    outputs = outputs[0]
    location = registry[kind].location()
    if location is not None:  # by folder or file: the same model as by name
        again = registry.load(str(location))
        assert model_id(task, again) == mid
        assert predict_all(task, again) == outputs
    if save_path(task, kind, tmp_path) is None:
        with pytest.raises(ModelError, match="unknown"):  # cohort models are not saved: a path is no name
            registry.load(str(tmp_path))
        return
    loaded = check_save_load(task, kind, model, tmp_path)
    assert type(loaded) is type(model)
    assert predict_all(task, loaded) == outputs


def test_the_contract_catches_a_saved_kind_that_does_not_load_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The old defect: ``RulesEvidenceModel.save`` wrote ``kind: rules`` and the path
    loader sent every YAML file to the cue lexicon loader. With that loader back, the
    contract's save -> load check fails as the bug did."""
    model = rob_evidence.load_evidence_model("rules")
    monkeypatch.setattr(rob_evidence.REGISTRY, "kind_of", lambda path: "cues")  # the old dispatch
    with pytest.raises(ModelError, match="'rules' is not 'cues'"):
        check_save_load("rob", "rules", model, tmp_path)
    monkeypatch.undo()
    assert type(check_save_load("rob", "rules", model, tmp_path / "x")).__name__ == "RulesEvidenceModel"


def test_every_task_has_one_registry_type_and_entry_shape() -> None:
    from clinex.registry import ModelKind, Registry

    for task, reg in REGISTRIES.items():
        assert isinstance(reg, Registry), task
        assert all(isinstance(k, ModelKind) for k in reg.values()), task
        assert reg.resolve("auto") in reg, task
        assert reg.check_name("auto", field="model") == "auto"
        with pytest.raises(ModelError) as exc:
            reg.check_name("/etc", field="model")  # the web's check: names only, never a path
        assert exc.value.field == "model" and exc.value.message == reg.unknown_message("/etc", paths=False)
    assert rob_evidence.EvidenceKind is cohort_models.CohortKind is pv_models.ModelKind


def test_task_apis_take_a_name_a_path_or_a_model(tmp_path: Path) -> None:
    from clinex.cohort import screen
    from clinex.cohort.formats.n2c2_xml import read_patient
    from clinex.rob.assess import assess

    doc = Document(id="t", text=ROB_TEXT)
    by_object = assess(doc, rob_evidence.load_evidence_model("rules")).model_dump(mode="json")
    assert assess(doc, "rules").model_dump(mode="json") == by_object
    saved = rob_evidence.load_evidence_model("rules").save(tmp_path / "rules.yaml")
    assert assess(doc, saved).model_dump(mode="json") == by_object
    assert assess(doc, str(saved)).model_dump(mode="json") == by_object
    patient = read_patient(DATA / "cohort" / "t04_labs.xml")
    engine = cohort_models.get_model("rules")
    assert screen(patient, model=engine) == screen(patient, model="rules") == screen(patient)
    with pytest.raises(ModelError, match="unknown cohort model"):
        screen(patient, model=tmp_path)


def test_a_lookup_starts_no_thread() -> None:
    import threading

    pv_models.clear_cache()
    before = set(threading.enumerate())
    pv_models.load_model("crf")
    assert set(threading.enumerate()) <= before


def test_the_sentence_model_loads_by_name_from_its_default_path(trained_sentence_model: Path) -> None:
    rob_evidence.REGISTRY.clear_cache()
    model = rob_evidence.load_evidence_model("sentence")
    assert rob_evidence.REGISTRY["sentence"].location() == trained_sentence_model
    assert model.name.startswith("clinex.rob.sentence.v1")
    assert json.dumps(_dump(model.predict(Document(id="b", text=""))))
