"""One model registry per task (issue 11 item 3), one atomic writer and one NUL/UTF-8 check (item 4)."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from clinex.errors import EncodingError, InputError, ModelError
from clinex.io.atomic import write_atomic
from clinex.io.textfile import decode_text, read_text


def test_pv_surfaces_use_the_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    import clinex.pv.models as pv_models
    from clinex.web import app as web

    assert pv_models.model_names() == ("auto", *pv_models.REGISTRY)
    for name in pv_models.model_names():
        web._model("pv", name)  # accepted
    crf = pv_models.REGISTRY["crf"]
    monkeypatch.setitem(pv_models.REGISTRY, "dummy", dataclasses.replace(crf, name="dummy"))
    assert "dummy" in pv_models.model_names()
    web._model("pv", "dummy")  # the web accepts what the registry holds
    assert type(pv_models.load_model("dummy")).__name__ == "CRFModel"  # the loader too


def test_pv_registry_versions_are_the_model_ids() -> None:
    from clinex.pv.models import REGISTRY, load_model, model_id

    assert model_id(load_model("crf")) == REGISTRY["crf"].version


def test_pv_unknown_name_is_the_same_error_everywhere(tmp_path: Path) -> None:
    from fastapi.testclient import TestClient

    from clinex.batch import run_batch
    from clinex.cli import app
    from clinex.pv.models import load_model, unknown_model_message
    from clinex.web.app import create_app

    msg = unknown_model_message("nosuch", folders=False)
    with pytest.raises(ModelError) as api:
        load_model("nosuch")
    assert msg in str(api.value)
    resp = TestClient(create_app()).post("/api/pv/extract", json={"text": "x", "model": "nosuch"})
    assert resp.status_code == 422 and msg in resp.json()["error"]["message"]
    src = tmp_path / "in.txt"
    src.write_text("Rash after aspirin.\n", encoding="utf-8")
    res = CliRunner().invoke(app, ["pv", "extract", "-i", str(src), "--model", "nosuch"])
    assert res.exit_code != 0 and isinstance(res.exception, ModelError) and msg in str(res.exception)
    with pytest.raises(ModelError) as batch:
        run_batch("pv", [str(src)], tmp_path / "out", model="nosuch")
    assert msg in str(batch.value)


def test_cli_help_lists_the_registry_names() -> None:
    import clinex.pv.models as pv_models
    import clinex.rob.evidence as rob_evidence
    from clinex.cli import app

    runner = CliRunner()
    for argv, names in ((["pv", "extract", "--help"], pv_models.model_names()),
                        (["pv", "train", "--help"], tuple(k for k, v in pv_models.REGISTRY.items() if v.trainable)),
                        (["batch", "--help"], pv_models.model_names()),
                        (["rob", "assess", "--help"], rob_evidence.model_names())):
        out = " ".join(runner.invoke(app, argv, env={"COLUMNS": "300"}).output.split())
        for name in names:
            assert name in out, (argv, name)


def test_rob_surfaces_use_the_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    import clinex.rob.evidence as ev
    from clinex.web import app as web

    assert set(ev.model_names()) == {*ev.REGISTRY, "auto"}
    assert ev.load_evidence_model("cues").name == ev.REGISTRY["cues"].version
    assert ev.load_evidence_model("rules").name == ev.REGISTRY["rules"].version
    sentinel = object()
    monkeypatch.setitem(ev.REGISTRY, "dummy", ev.EvidenceKind("dummy", lambda: sentinel, "x.v1", "test"))
    assert ev.load_evidence_model("dummy") is sentinel
    web._model("rob", "dummy")
    msg = ev.unknown_model_message("nosuch", files=False)
    with pytest.raises(ModelError) as api:
        ev.load_evidence_model("nosuch")
    assert msg in str(api.value)
    with pytest.raises(ModelError) as webexc:  # the CLI's code too (CLX006)
        web._model("rob", "nosuch")
    assert webexc.value.message == msg


def test_write_atomic(tmp_path: Path) -> None:
    p = tmp_path / "sub" / "out.txt"
    assert write_atomic(p, "a\n") == p and p.read_text() == "a\n"
    assert p.stat().st_mode & 0o777 == 0o666 & ~_umask()
    with pytest.raises(InputError, match=r"out\.txt: file exists"):
        write_atomic(p, "b\n")
    write_atomic(p, b"b\n", force=True)
    assert p.read_bytes() == b"b\n"

    def failing():
        yield "partial"
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        write_atomic(p, failing(), force=True)
    assert p.read_bytes() == b"b\n"  # old content kept
    assert sorted(x.name for x in p.parent.iterdir()) == ["out.txt"]  # no temp file left
    with pytest.raises(InputError, match="is a folder"):
        write_atomic(tmp_path, "x")


def _umask() -> int:
    m = os.umask(0)
    os.umask(m)
    return m


def test_one_nul_utf8_check_names_file_and_line(tmp_path: Path) -> None:
    f = tmp_path / "bad.txt"
    f.write_bytes(b"ok\nstill ok\nbin\x00ary\n")
    with pytest.raises(EncodingError, match=r"bad\.txt:3: binary file \(NUL byte\)"):
        read_text(f)
    f.write_bytes(b"ok\n\xe9\n")
    with pytest.raises(EncodingError, match=r"bad\.txt:2: not UTF-8 text \(byte 0xe9"):
        read_text(f)
    assert decode_text(b"\xef\xbb\xbfhi") == "hi"


def test_cohort_readers_use_the_one_check(tmp_path: Path) -> None:
    from clinex.cohort.formats.n2c2_xml import read_patient
    from clinex.cohort.formats.notes_folder import read_notes_folder

    x = tmp_path / "p.xml"
    x.write_bytes(b"<PatientMatching>\n<TEXT>\x00</TEXT></PatientMatching>")
    with pytest.raises(EncodingError, match=r"p\.xml:2: binary file \(NUL byte\)"):
        read_patient(x)
    d = tmp_path / "notes"
    d.mkdir()
    (d / "2071-01-01.txt").write_bytes(b"line\n\xff\n")
    with pytest.raises(EncodingError, match=r"2071-01-01\.txt:2: not UTF-8 text"):
        read_notes_folder(d)


def test_the_pv_model_cache_is_bounded(tmp_path, monkeypatch) -> None:
    import clinex.pv.models as registry

    loaded: list[str] = []
    monkeypatch.setattr(registry.REGISTRY, "read", lambda folder, kind=None: loaded.append(folder.name) or object())
    registry.clear_cache()
    folders = []
    for i in range(registry.REGISTRY.cache_size + 2):
        d = tmp_path / f"m{i}"
        d.mkdir()
        (d / "model.json").write_text('{"kind": "crf"}')
        folders.append(d)
        registry.load_model(d)
    assert len(registry.REGISTRY._cache) == registry.REGISTRY.cache_size
    registry.load_model(folders[-1])  # cached: not read again
    registry.load_model(folders[0])  # dropped: read again
    assert loaded == [f.name for f in folders] + ["m0"]
    registry.clear_cache()
