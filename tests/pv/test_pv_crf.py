"""The CRF model: tiny training run, save/load round trip, registry, errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clinex.errors import ModelError
from clinex.pv.models import load_model, train
from clinex.pv.models.crf import CRFModel


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list]:
    """A CRF trained on the first 40 PHEE training sentences (about a second)."""
    path = Path(__file__).resolve().parents[3] / "shared" / "data" / "phee" / "json" / "train.json"
    if not path.is_file():
        pytest.skip("../shared/data is not beside this checkout")
    from clinex.pv.formats.phee_json import iter_phee_json

    items = [s for _, s in zip(range(40), iter_phee_json(path))]
    out = tmp_path_factory.mktemp("crf") / "model"
    train("crf", items, None, out, max_iterations=40)
    return out, items


def test_train_writes_model_folder(tiny_model: tuple[Path, list]) -> None:
    out, items = tiny_model
    meta = json.loads((out / "model.json").read_text())
    assert meta["kind"] == "crf" and meta["version"] == 1
    assert meta["n_train"] == 40
    assert meta["params"]["max_iterations"] == 40
    assert meta["params"]["layout"] == "full"
    assert {"O", "Adverse_event|O", "Subject|O", "Treatment|Treatment.Drug", "Effect|O"} <= set(meta["labels"]["args"])
    assert "Treatment.Drug" in meta["labels"]["sub"] and "Speculated" in meta["labels"]["attr"]
    assert sorted(p.name for p in out.iterdir()) == [
        "args.crfsuite", "attr.crfsuite", "main.crfsuite", "model.json", "sub.crfsuite"
    ]
    assert {"O", "Subject", "Treatment", "Effect"} <= set(meta["labels"]["main"])


def test_round_trip_predicts_training_sentences(tiny_model: tuple[Path, list], tmp_path: Path) -> None:
    out, items = tiny_model
    model = load_model(str(out))
    assert isinstance(model, CRFModel) and model.name == "crf"
    texts = [s.text for s in items[:10]]
    preds = model.predict(texts)
    assert len(preds) == 10
    # a CRF fits most of its own training triggers
    hits = sum(
        any(p.trigger.text == g.trigger.text and p.event_type == g.event_type for p in pr for g in s.events)
        for pr, s in zip(preds, items[:10])
    )
    assert hits >= 7
    for text, events in zip(texts, preds):
        for ev in events:
            assert ev.source == "clinex.pv.crf.v1"
            assert 0.0 <= ev.score <= 1.0
            for f in ev.trigger.fragments:
                assert text[f.start : f.end] == f.text
    # save elsewhere and load again: same predictions
    copy = model.save(tmp_path / "copy")
    assert CRFModel.load(copy).predict(texts) == preds
    assert model.predict([""]) == [[]]


def test_params_and_fitting_checks() -> None:
    with pytest.raises(ModelError, match="not fitted"):
        CRFModel().predict(["Rash after aspirin."])
    with pytest.raises(ModelError, match="'c1' parameter"):
        CRFModel(c1=-1.0).fit([])
    with pytest.raises(ModelError, match="layout must be one of joint, split, hybrid"):
        CRFModel(layout="stacked").fit([])
    with pytest.raises(ModelError, match="no training sentences"):
        CRFModel().fit([])
    assert CRFModel(c2=0.3).get_params()["c2"] == 0.3


def test_load_errors(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match="unknown model 'nope'"):
        load_model("nope")
    with pytest.raises(ModelError, match="no model.json"):
        load_model(str(tmp_path))
    (tmp_path / "model.json").write_text('{"kind": "hmm", "version": 1}')
    with pytest.raises(ModelError, match="unknown model kind 'hmm'"):
        load_model(str(tmp_path))
    (tmp_path / "model.json").write_text('{"kind": "crf", "version": 99}')
    with pytest.raises(ModelError, match="version 99"):
        CRFModel.load(tmp_path)
    (tmp_path / "model.json").write_text('{"kind": "crf", "version": 1, "params": {"layout": "split"}}')
    with pytest.raises(ModelError, match="missing main.crfsuite"):
        CRFModel.load(tmp_path)
    with pytest.raises(ModelError, match="unknown model kind 'svm'"):
        train("svm", [], None, tmp_path)


def test_auto_falls_back_to_crf_without_neural_extra(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import clinex.pv.models as registry

    real = registry.shipped_model_dir
    fake = tmp_path / "pv_transformer"
    fake.mkdir()
    (fake / "model.json").write_text('{"kind": "transformer", "version": 1}')
    monkeypatch.setattr(registry, "shipped_model_dir", lambda kind: fake if kind == "transformer" else real(kind))
    import dataclasses

    monkeypatch.setitem(registry.REGISTRY, "transformer",
                        dataclasses.replace(registry.REGISTRY["transformer"], module="clinex_no_such_module"))
    # the ONNX default (issue 12) missing too, e.g. an environment without onnxruntime
    monkeypatch.setitem(registry.REGISTRY, "onnx",
                        dataclasses.replace(registry.REGISTRY["onnx"], module="clinex_no_such_module"))
    assert isinstance(registry.load_model("auto"), CRFModel)
    with pytest.raises(ModelError, match="needs 'clinex_no_such_module'"):
        registry.load_model("transformer")


def test_drop_weak_extra_triggers() -> None:
    args = ["Effect|O", "Adverse_event|O", "O", "Adverse_event|Treatment.Drug", "Treatment|Treatment.Drug"]
    scores = [0.9, 0.95, 0.9, 0.6, 0.9]
    kept = CRFModel(extra_trigger_min=0.8)._drop_weak_triggers(list(args), scores)
    assert kept == ["Effect|O", "Adverse_event|O", "O", "O|Treatment.Drug", "Treatment|Treatment.Drug"]
    assert CRFModel(extra_trigger_min=0.5)._drop_weak_triggers(list(args), scores) == args
    assert CRFModel()._drop_weak_triggers(["Adverse_event|O"], [0.1]) == ["Adverse_event|O"]
