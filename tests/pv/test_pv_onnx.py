"""The ONNX default PHEE model (issue 12): no torch at run time, the torch model's events.

- extraction with the default model imports neither torch nor transformers (checked in
  a subprocess that makes them unimportable, as in an install without the ``train``
  extra, and records every attempt to import them);
- the ONNX and torch paths give the same events on every PHEE dev sentence;
- exact events on hand-written sentences (a negated one among them);
- the onnxruntime thread settings;
- the shipped ``model.onnx`` is the export of the shipped torch checkpoint (same bytes).
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from clinex.errors import ModelError
from clinex.pv.models import load_model, model_id, shipped_model_dir
from clinex.pv.models.onnx import OnnxExtractor, session_threads

_NO_TORCH = r"""
import json, sys, traceback
attempts = []

class _Block:
    # an install without the train extra: torch and transformers are not there
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("torch", "transformers"):
            frames = [f.filename for f in traceback.extract_stack()[:-1] if "importlib" not in f.filename]
            attempts.append({"module": name, "importer": frames[-1] if frames else ""})
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, _Block())
import clinex.pv
from clinex.pv.models import load_model, model_id

events = clinex.pv.extract("The patient did not develop a rash after amoxicillin.")
print(json.dumps({
    "model": model_id(load_model("auto")),
    "events": [[e.event_type, e.trigger.text, [a.name for a in e.attributes]] for e in events],
    "loaded": sorted(m for m in sys.modules if m.split(".")[0] in ("torch", "transformers")),
    "attempts": attempts,
}))
"""


def test_default_extraction_imports_no_torch() -> None:
    proc = subprocess.run([sys.executable, "-c", _NO_TORCH], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["model"] == "clinex.pv.onnx.v2"
    assert out["events"] == [["Adverse_event", "after", ["Negated"]]]
    assert out["loaded"] == []
    # the only attempt allowed is thinc's optional probe (spaCy, loaded by the attribute
    # scope rules, looks for torch and carries on without it); none comes from clinex
    importers = {Path(a["importer"]).as_posix() for a in out["attempts"]}
    assert all(p.endswith("thinc/compat.py") for p in importers), out["attempts"]
    assert not any("/clinex/" in p for p in importers)


def test_auto_is_the_shipped_onnx_model() -> None:
    model = load_model("auto")
    assert isinstance(model, OnnxExtractor)
    assert model is load_model("onnx")
    assert model_id(model) == "clinex.pv.onnx.v2"
    folder = shipped_model_dir("onnx")
    assert folder is not None and folder.parts[-4:] == ("clinex", "resources", "models", "pv_onnx")
    size = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
    assert size <= 50_000_000
    assert sorted(p.name for p in folder.iterdir()) == [
        "MODEL_CARD.md", "gate.npz", "model.json", "model.onnx", "tokenizer.json",
    ]
    meta = json.loads((folder / "model.json").read_text(encoding="utf-8"))
    assert (meta["kind"], meta["name"], meta["graph"]["quantization"]) == ("onnx", "clinex.pv.onnx.v2", "none")


def _key(event) -> tuple:  # noqa: ANN001 - Event
    def sp(span) -> tuple | None:  # noqa: ANN001 - Span or None
        return None if span is None else tuple((f.start, f.end) for f in span.fragments)

    return (
        event.event_type,
        sp(event.trigger),
        tuple(sorted((a.role, sp(a.span)) for a in event.arguments)),
        tuple(sorted((main, a.role, sp(a.span)) for main, args in event.sub_arguments.items() for a in args)),
        tuple((sp(c.trigger), tuple(sp(d.span) for d in c.drugs)) for c in event.combinations),
        tuple(sorted((a.name, str(a.value), sp(a.cue), a.source) for a in event.attributes)),
    )


def test_onnx_and_torch_give_the_same_events_on_phee_dev(shared_data: Path) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from clinex.pv.formats.phee_json import read_phee_json

    dev_file = shared_data / "phee" / "json" / "dev.json"
    if not dev_file.is_file():
        pytest.skip(f"PHEE dev split not found at {dev_file}")
    texts = [s.text for s in read_phee_json(dev_file)]
    assert len(texts) == 961
    onnx = load_model("onnx").predict_detailed(texts)
    torch = load_model("transformer").predict_detailed(texts)
    assert [[_key(e) for e in evs] for evs, _ in onnx] == [[_key(e) for e in evs] for evs, _ in torch]
    # clinex.pv.onnx.v2 (trained on train + dev); 953 before issue 23: a dechallenge
    # (pv.challenge) gives "The nodules regressed after withdrawal of methotrexate ..." its
    # Effect, so its event is no longer an Effect-less ADE below no_effect_min_prob
    assert sum(len(evs) for evs, _ in onnx) == 954
    # the event probabilities (gate) agree to float32 noise, shown after rounding to 4 places
    assert max(abs(a - b) for (_, a), (_, b) in zip(onnx, torch)) <= 2e-4


def _events(text: str) -> list[tuple]:
    out = []
    for e in load_model("onnx").predict([text])[0]:
        out.append((
            e.event_type,
            (e.trigger.start, e.trigger.end),
            [(a.role, a.span.start, a.span.end) for a in e.arguments],
            {k: [(a.role, a.span.start, a.span.end) for a in v] for k, v in e.sub_arguments.items()},
            [(a.name, a.value, a.cue.start, a.cue.end, a.source) for a in e.attributes],
        ))
    return out


def test_exact_events_on_hand_written_sentences() -> None:
    # "not" (16-19) governs "develop": PHEE keeps the event, with Negated (appendix A)
    assert _events("The patient did not develop a rash after amoxicillin.") == [(
        "Adverse_event", (35, 40),
        [("Subject", 0, 11), ("Effect", 28, 34), ("Treatment", 41, 52)],
        {"Treatment": [("Drug", 41, 52)]},
        [("Negated", True, 16, 19, "rule:neg.not")],
    )]
    assert _events("A 45-year-old man developed severe hepatotoxicity after taking isoniazid.") == [(
        "Adverse_event", (18, 27),
        [("Subject", 0, 17), ("Effect", 28, 49), ("Treatment", 63, 72)],
        {"Subject": [("Age", 2, 13), ("Gender", 14, 17)], "Treatment": [("Drug", 63, 72)]},
        [("Severity", "High", 28, 34, "model")],
    )]
    assert _events("Seizures may have been induced by tramadol.") == [(
        "Adverse_event", (23, 30),
        [("Effect", 0, 8), ("Treatment", 34, 42)],
        {"Treatment": [("Drug", 34, 42)]},
        [("Speculated", True, 9, 12, "model")],
    )]
    assert _events("The weather was pleasant yesterday.") == []


def test_events_name_the_onnx_model() -> None:
    (ev,) = load_model("onnx").predict(["Seizures may have been induced by tramadol."])[0]
    assert ev.source == "clinex.pv.onnx.v2:joint"


def test_thread_setting_is_honoured(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    folder = shipped_model_dir("onnx")
    monkeypatch.setenv("CLINEX_THREADS", "1")
    model = OnnxExtractor.load(folder)
    opts = model.session_.get_session_options()
    assert (model.threads_, opts.intra_op_num_threads, opts.inter_op_num_threads) == (1, 1, 1)
    assert opts.get_session_config_entry("session.intra_op.allow_spinning") == "0"
    monkeypatch.setenv("CLINEX_THREADS", "3")
    assert OnnxExtractor.load(folder).session_.get_session_options().intra_op_num_threads == 3
    assert session_threads({}) == min(len(os.sched_getaffinity(0)), 4)  # clinex.threads, the one setting
    assert session_threads({"CLINEX_THREADS": " 4 "}) == 4
    for bad in ("0", "two", "-1", "1.5"):
        with pytest.raises(ModelError, match=f"CLINEX_THREADS must be a whole number >= 1; got '{bad}'"):
            session_threads({"CLINEX_THREADS": bad})


def test_batches_keep_to_the_token_budget() -> None:
    model = load_model("onnx")
    toks = [{"input_ids": [0] * n} for n in (10, 100, 30, 30, 100, 50)]
    # sorted by length; 3 x 30 + ... : a call holds at most 2048 padded tokens (20 x 100 would)
    assert model._batches(toks) == [[0, 2, 3, 5, 1, 4]]
    toks = [{"input_ids": [0] * 100}] * 25
    assert [len(b) for b in model._batches(toks)] == [20, 5]
    toks = [{"input_ids": [0] * 5}] * 70
    assert [len(b) for b in model._batches(toks)] == [64, 6]


def test_load_refuses_a_broken_folder(tmp_path: Path) -> None:
    src = shipped_model_dir("onnx")
    for name in ("model.json", "tokenizer.json", "gate.npz"):
        (tmp_path / name).write_bytes((src / name).read_bytes())
    with pytest.raises(ModelError, match="file named in model.json is missing"):
        OnnxExtractor.load(tmp_path)
    meta = json.loads((src / "model.json").read_text(encoding="utf-8"))
    meta["kind"] = "transformer"
    (tmp_path / "model.json").write_text(json.dumps(meta), encoding="utf-8")
    with pytest.raises(ModelError, match="kind is 'transformer', not 'onnx'"):
        OnnxExtractor.load(tmp_path)
    meta["kind"], meta["params"]["variant"] = "onnx", "pairwise"
    (tmp_path / "model.json").write_text(json.dumps(meta), encoding="utf-8")
    with pytest.raises(ModelError, match="runs the 'joint' variant only"):
        OnnxExtractor.load(tmp_path)


def test_shipped_graph_is_the_export_of_the_shipped_checkpoint(tmp_path: Path, cli) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("onnx")
    res = cli("pv", "export-onnx", str(shipped_model_dir("transformer")), "--out", str(tmp_path / "x"))
    assert res.code == 0, res.stderr
    shipped = shipped_model_dir("onnx")

    def sha1(p: Path) -> str:
        return hashlib.sha1(p.read_bytes()).hexdigest()

    for name in ("model.onnx", "tokenizer.json", "gate.npz", "model.json"):
        assert sha1(tmp_path / "x" / name) == sha1(shipped / name), name
    res = cli("pv", "export-onnx", str(shipped_model_dir("transformer")), "--out", str(tmp_path / "x"))
    assert res.code == 2
    assert "model folder exists and is not empty; pass --force to replace it" in res.stderr
    res = cli("pv", "export-onnx", str(shipped_model_dir("crf")), "--out", str(tmp_path / "y"))
    assert res.code == 2
    assert "kind is 'crf', not 'transformer'" in res.stderr


def test_long_text_is_cut_into_windows_as_the_torch_model_does() -> None:
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    sentences = [
        "The patient did not develop a rash after amoxicillin.",
        "A 45-year-old man developed severe hepatotoxicity after taking isoniazid.",
        "Seizures may have been induced by tramadol.",
    ]
    text = " ".join(sentences * 6)  # about 260 sub-word tokens: past the 192-token window
    onnx, torch = load_model("onnx"), load_model("transformer")
    assert len(onnx._tokenize([text])[0]["input_ids"]) == 192  # truncated, so cut into pieces
    assert [off for off, _ in onnx._pieces(text)] == [off for off, _ in torch._pieces(text)] == [0, 688]
    (got,), (want,) = onnx.predict([text]), torch.predict([text])
    assert [_key(e) for e in got] == [_key(e) for e in want]
    # a record passed whole is one text: on 9 sentences in one window the joint model
    # finds one trigger per window ("developed"), with the arguments of all its events
    assert [(e.trigger.start, e.trigger.text) for e in got] == [(72, "developed"), (760, "developed")]


def test_save_writes_a_folder_that_loads_the_same(tmp_path: Path) -> None:
    model = load_model("onnx")
    model.save(tmp_path / "copy")
    assert sorted(p.name for p in (tmp_path / "copy").iterdir()) == ["gate.npz", "model.json", "model.onnx", "tokenizer.json"]
    again = OnnxExtractor.load(tmp_path / "copy")
    assert again.get_params() == model.get_params()
    assert again.event_threshold == 0.1724 and again.no_effect_min_prob == 0.5
    text = "A 45-year-old man developed severe hepatotoxicity after taking isoniazid."
    assert [_key(e) for e in again.predict([text])[0]] == [_key(e) for e in model.predict([text])[0]]
    assert model_id(load_model(str(tmp_path / "copy"))).startswith("clinex.pv.onnx.v2+")


_LIGHT_START = """
import json, sys
import clinex.pv

events = clinex.pv.extract("Amiodarone caused hypothyroidism in a 60-year-old man.")
heavy = sorted(m for m in sys.modules if m.split(".")[0] in ("sklearn", "nltk", "torch", "transformers") or m == "scipy.stats")
import nltk  # the real one is still importable after medspaCy's import
print(json.dumps({"events": [[e.event_type, e.trigger.text] for e in events], "heavy": heavy,
                  "nltk_real": hasattr(nltk, "__version__")}))
"""


def test_default_extraction_start_up_skips_heavy_libraries() -> None:
    """The default model's run-time path imports neither scikit-learn (the gate's text
    features are hashed without it), scipy.stats, NLTK (stubbed while medspaCy is
    imported), torch nor transformers; NLTK is importable as usual afterwards."""
    proc = subprocess.run([sys.executable, "-c", _LIGHT_START], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["events"] == [["Adverse_event", "caused"]]
    assert out["heavy"] == []
    assert out["nltk_real"] is True
