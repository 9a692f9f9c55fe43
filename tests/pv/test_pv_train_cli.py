"""QA stop 7: `clinex pv train` --force replaces the folder whole, empty --train, --param encoder."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from clinex.errors import ModelError

TRAIN_LINE = (
    '{"id": "1", "context": "Rash after aspirin.", "annotations": [{"events": [{"event_type": '
    '"Adverse_event", "Trigger": {"text": [["after"]], "start": [[5]]}}]}]}\n'
)


class _FakeModel:
    name = "crf"

    def predict(self, texts):  # noqa: ANN001, ANN201
        return [[] for _ in texts]


@pytest.fixture
def fake_train(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, Path, dict]]:
    """Replace the trainer: write model.json + weights.bin into the folder it gets."""
    calls: list[tuple[str, Path, dict]] = []

    def train(kind, train, dev, out, **params):  # noqa: ANN001, ANN202
        skip = ("log", "command", "on_iteration")
        calls.append((kind, Path(out), {k: v for k, v in params.items() if k not in skip}))
        Path(out).mkdir(parents=True, exist_ok=True)
        (Path(out) / "model.json").write_text(json.dumps({"kind": kind, "new": True}), encoding="utf-8")
        (Path(out) / "weights.bin").write_text("w", encoding="utf-8")
        return _FakeModel()

    monkeypatch.setattr("clinex.pv.models.train", train)
    return calls


def _old_model(folder: Path) -> None:
    folder.mkdir()
    (folder / "model.json").write_text('{"kind": "crf", "old": true}', encoding="utf-8")
    (folder / "dev_scores.json").write_text("{}", encoding="utf-8")
    (folder / "notes.txt").write_text("old", encoding="utf-8")


def test_force_replaces_the_model_folder_whole(cli, tmp_path: Path, fake_train) -> None:  # noqa: ANN001
    train = tmp_path / "train.json"
    train.write_text(TRAIN_LINE, encoding="utf-8")
    model = tmp_path / "m_tiny"
    _old_model(model)
    res = cli("pv", "train", "--train", str(train), "--out", str(model), "--force")
    assert res.code == 0, res.stderr
    assert sorted(p.name for p in model.iterdir()) == ["model.json", "weights.bin"]
    assert json.loads((model / "model.json").read_text()) == {"kind": "crf", "new": True}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m_tiny", "train.json"]  # no staging left
    ((_, staged, _),) = fake_train
    assert staged.parent == tmp_path and staged != model  # trained beside, then swapped in
    assert os.stat(model).st_mode & 0o777 == 0o777 & ~_umask()  # the usual folder mode, not 0o700
    assert res.stderr.splitlines()[0] == f"training crf on 1 sentences from {train}"


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_force_with_dev_writes_new_dev_scores_only(cli, tmp_path: Path, fake_train) -> None:  # noqa: ANN001
    train = tmp_path / "train.json"
    train.write_text(TRAIN_LINE, encoding="utf-8")
    model = tmp_path / "m"
    _old_model(model)
    res = cli("pv", "train", "--train", str(train), "--dev", str(train), "--out", str(model), "--force")
    assert res.code == 0, res.stderr
    assert sorted(p.name for p in model.iterdir()) == ["dev_scores.json", "model.json", "weights.bin"]
    scores = json.loads((model / "dev_scores.json").read_text())
    assert scores["trigger"]["classification"]["f1"] == 0.0
    assert "dev trigger.classification.f1: 0.0000" in res.stdout


def test_failed_training_keeps_the_old_model(cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ANN001
    def broken(kind, train, dev, out, **params):  # noqa: ANN001, ANN202
        (Path(out) / "partial.bin").write_text("x", encoding="utf-8")
        raise ModelError("boom")

    monkeypatch.setattr("clinex.pv.models.train", broken)
    train = tmp_path / "train.json"
    train.write_text(TRAIN_LINE, encoding="utf-8")
    model = tmp_path / "m"
    _old_model(model)
    res = cli("pv", "train", "--train", str(train), "--out", str(model), "--force")
    assert res.code == 2 and res.stderr.endswith("[CLX006] boom\n")
    assert sorted(p.name for p in model.iterdir()) == ["dev_scores.json", "model.json", "notes.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m", "train.json"]


def test_force_refuses_a_folder_without_model_json(cli, tmp_path: Path, fake_train) -> None:  # noqa: ANN001
    train = tmp_path / "train.json"
    train.write_text(TRAIN_LINE, encoding="utf-8")
    other = tmp_path / "notes"
    other.mkdir()
    (other / "a.txt").write_text("x", encoding="utf-8")
    res = cli("pv", "train", "--train", str(train), "--out", str(other), "--force")
    assert res.code == 2
    assert res.stderr == f"[CLX001] {other}: --out holds files but no model.json; refusing to replace it\n"
    assert [p.name for p in other.iterdir()] == ["a.txt"] and fake_train == []


def test_into_empty_or_new_folder_trains_in_place(cli, tmp_path: Path, fake_train) -> None:  # noqa: ANN001
    train = tmp_path / "train.json"
    train.write_text(TRAIN_LINE, encoding="utf-8")
    empty = tmp_path / "empty"
    empty.mkdir()
    assert cli("pv", "train", "--train", str(train), "--out", str(empty)).code == 0
    assert cli("pv", "train", "--train", str(train), "--out", str(tmp_path / "new")).code == 0
    assert [c[1] for c in fake_train] == [empty, tmp_path / "new"]


@pytest.mark.parametrize("kind", ["crf", "transformer"])
def test_empty_train_file_names_the_file(cli, tmp_path: Path, fake_train, kind: str) -> None:  # noqa: ANN001
    empty = tmp_path / "empty.json"
    empty.write_text("", encoding="utf-8")
    extra = ["--encoder", "minilm"] if kind == "transformer" else []
    if kind == "transformer":
        pytest.importorskip("torch")
        pytest.importorskip("transformers")
    res = cli("pv", "train", "--model", kind, *extra, "--train", str(empty), "--out", str(tmp_path / "m"))
    assert res.code == 2
    assert res.stderr == f"[CLX001] {empty}: no training sentences in the file\n"
    assert not (tmp_path / "m").exists() and fake_train == []


def test_param_encoder_conflicts_with_encoder(cli, tmp_path: Path, fake_train) -> None:  # noqa: ANN001
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    train = tmp_path / "train.json"
    train.write_text(TRAIN_LINE, encoding="utf-8")
    res = cli("pv", "train", "--model", "transformer", "--encoder", "tinybert", "--param", "encoder=minilm",
              "--train", str(train), "--out", str(tmp_path / "m"))
    assert res.code == 2
    assert res.stderr == "[CLX001] --param encoder conflicts with --encoder; give one\n"
    assert fake_train == []


def test_param_encoder_alone_works_as_encoder(cli, tmp_path: Path, fake_train) -> None:  # noqa: ANN001
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    train = tmp_path / "train.json"
    train.write_text(TRAIN_LINE, encoding="utf-8")
    res = cli("pv", "train", "--model", "transformer", "--param", "encoder=minilm",
              "--train", str(train), "--out", str(tmp_path / "m"))
    assert res.code == 0, res.stderr
    assert fake_train == [("transformer", tmp_path / "m", {"encoder": "minilm"})]


def test_force_with_the_real_crf_trainer(cli, tmp_path: Path, shared_data: Path) -> None:  # noqa: ANN001
    """No fake: a real (tiny) CRF trained with --dev, then retrained with --force and no --dev."""
    from clinex.pv.models import load_model

    lines = (shared_data / "phee" / "json" / "train.json").read_text(encoding="utf-8").splitlines()
    train = tmp_path / "train.json"
    train.write_text("\n".join(lines[:40]) + "\n", encoding="utf-8")
    dev = tmp_path / "dev.json"
    dev.write_text("\n".join(lines[40:50]) + "\n", encoding="utf-8")
    model = tmp_path / "m"
    res = cli("pv", "train", "--train", str(train), "--dev", str(dev), "--out", str(model), "--max-iterations", "5")
    assert res.code == 0, res.stderr
    assert (model / "dev_scores.json").is_file()
    res = cli("pv", "train", "--train", str(train), "--out", str(model), "--max-iterations", "5", "--force")
    assert res.code == 0, res.stderr
    assert not (model / "dev_scores.json").exists()  # the old run's file went with the old folder
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dev.json", "m", "train.json"]
    assert isinstance(load_model(str(model)).predict(["Rash after aspirin."]), list)
