"""Batch mode: real tasks over small inputs, bad items skipped and reported, resume."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clinex.batch import read_results, run_batch
from clinex.errors import InputError, SchemaError

TRIAL = (
    "Methods\n\nParticipants were randomly assigned using a computer-generated random sequence. "
    "Allocation was concealed using sequentially numbered, opaque, sealed envelopes.\n"
)


def _trials(tmp_path: Path) -> Path:
    folder = tmp_path / "trials"
    folder.mkdir()
    (folder / "a.txt").write_text(TRIAL, encoding="utf-8")
    (folder / "b.txt").write_text(TRIAL.replace("Methods", "Methods of trial B"), encoding="utf-8")
    (folder / "bad.pdf").write_bytes(b"")  # 0-byte PDF: reported, not fatal
    return folder


def test_rob_batch_skips_bad_file_and_resumes(tmp_path: Path) -> None:
    folder = _trials(tmp_path)
    out = tmp_path / "out"
    summary = run_batch("rob", [folder], out, partition_size=1)
    assert summary.n_items == 3 and summary.n_parts == 3
    assert summary.n_rows == 44  # 2 trials x 22 signalling questions
    assert [Path(e.id).name for e in summary.errors] == ["bad.pdf"]
    rows = read_results(out, "SELECT document, count(*) FROM results GROUP BY 1 ORDER BY 1")
    assert rows == [("a.txt", 22), ("b.txt", 22)]
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "done" and manifest["n_errors"] == 1
    assert len((out / "errors.jsonl").read_text().splitlines()) == 1
    # the same command again resumes: every part is already there
    again = run_batch("rob", [folder], out, partition_size=1)
    assert again.n_parts_skipped == 3 and again.n_rows == 44 and len(again.errors) == 1


def test_rob_batch_keeps_same_stem_inputs_apart(tmp_path: Path) -> None:
    folder = tmp_path / "t"
    folder.mkdir()
    (folder / "trial.txt").write_text(TRIAL, encoding="utf-8")
    from reportlab.pdfgen.canvas import Canvas

    pdf = Canvas(str(folder / "trial.pdf"))
    pdf.drawString(72, 720, "Participants were randomly assigned using a computer-generated sequence.")
    pdf.save()
    summary = run_batch("rob", [folder], tmp_path / "out")
    assert not summary.errors
    rows = read_results(
        tmp_path / "out", "SELECT document, source, count(*) FROM results GROUP BY 1, 2 ORDER BY 1"
    )
    assert [(d, Path(s).name, n) for d, s, n in rows] == [
        ("trial.pdf", "trial.pdf", 22), ("trial.txt", "trial.txt", 22)]


def test_batch_refuses_foreign_output_folder(tmp_path: Path) -> None:
    folder = _trials(tmp_path)
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("user file")
    with pytest.raises(InputError, match="not empty"):
        run_batch("rob", [folder], out)
    assert (out / "notes.txt").read_text() == "user file"
    run_batch("rob", [folder / "a.txt"], tmp_path / "o2")
    with pytest.raises(InputError, match="different batch run"):
        run_batch("rob", [folder / "b.txt"], tmp_path / "o2")


def test_unknown_task_and_missing_input(tmp_path: Path) -> None:
    with pytest.raises(SchemaError, match="valid: pv, cohort, rob"):
        run_batch("ner", [tmp_path], tmp_path / "o")
    with pytest.raises(InputError, match="input does not exist"):
        run_batch("rob", [tmp_path / "nope.txt"], tmp_path / "o")


def test_pv_batch_jsonl_with_bad_line(tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    src.write_text(
        '{"id": "a", "text": "Rash developed after amoxicillin."}\n'
        "{broken\n"
        '{"id": "b", "text": "Metoprolol improved the tremor."}\n',
        encoding="utf-8",
    )
    summary = run_batch("pv", [src], tmp_path / "out", partition_size=1)
    assert summary.n_items == 2 and summary.n_rows == 2
    assert [e.id for e in summary.errors] == [f"{src}:2"]
    assert summary.errors[0].message.startswith(f"[CLX002] {src}:2: not valid JSON")
    rows = dict(read_results(tmp_path / "out", "SELECT id, phee_json FROM results"))
    assert json.loads(rows["a"])["context"] == "Rash developed after amoxicillin."


def test_pv_batch_folder_and_file_as_output(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "a.jsonl").write_text('{"id": "x", "text": "Rash after amoxicillin."}\n', encoding="utf-8")
    (folder / "notes.txt").write_text("Rash after amoxicillin. Fever after vancomycin.", encoding="utf-8")
    summary = run_batch("pv", [folder], tmp_path / "out")
    assert summary.n_items == 3 and not summary.errors
    ids = [r[0] for r in read_results(tmp_path / "out", "SELECT id FROM results ORDER BY id")]
    assert ids == ["notes_1", "notes_2", "x"]
    # a plain-text file's sentences name where they start in it; a JSON-lines record does not
    got = read_results(tmp_path / "out", "SELECT id, phee_json FROM results ORDER BY id")
    assert [(rid, json.loads(doc).get("offset")) for rid, doc in got] == [("notes_1", 0), ("notes_2", 24), ("x", None)]
    with pytest.raises(InputError, match="output must be a folder"):
        run_batch("pv", [folder], folder / "a.jsonl")


def test_cohort_batch_on_dev_patients(tmp_path: Path, shared_data: Path) -> None:
    dev = shared_data / "cohort_synthetic" / "dev"
    summary = run_batch("cohort", [dev / "001.xml", dev / "002.xml"], tmp_path / "out")
    assert summary.n_rows == 26 and not summary.errors
    rows = read_results(tmp_path / "out", "SELECT DISTINCT patient FROM results ORDER BY 1")
    assert rows == [("001",), ("002",)]


def test_batch_cli_exit_code_reports_skips(cli, tmp_path: Path) -> None:
    folder = _trials(tmp_path)
    res = cli("batch", "rob", folder, "--output", tmp_path / "cli-out", "--partition-size", "2")
    assert res.code == 1
    assert "bad.pdf" in res.stderr
    assert "3 items, 44 rows, 1 errors" in res.stdout


def test_pv_batch_equals_pv_extract(cli, tmp_path: Path) -> None:
    src = tmp_path / "r.jsonl"
    src.write_text(
        '{"id": "r3", "text": "Vancomycin was effective in treating MRSA pneumonia. Aspirin caused ulcer."}\n',
        encoding="utf-8",
    )
    res = cli("pv", "extract", "--input", src, "--output", tmp_path / "p.json")
    assert res.code == 0, res.stderr
    extracted = json.loads((tmp_path / "p.json").read_text().splitlines()[0])
    run_batch("pv", [src], tmp_path / "out")
    (phee,) = read_results(tmp_path / "out", "SELECT phee_json FROM results")[0]
    assert json.loads(phee) == extracted


COHORT = Path(__file__).parents[1] / "data" / "cohort"


def test_cohort_batch_criteria_evidence_layout_and_resume(cli, tmp_path: Path) -> None:
    """`clinex batch cohort --criteria` screens with those criteria; evidence_json is the
    screen layout (clinex.cohort.screen.evidence_record); other criteria cannot resume the run."""
    folder = tmp_path / "pats"
    folder.mkdir()
    for name in ("t01_window_edges_in", "t04_labs"):
        (folder / f"{name}.xml").write_bytes((COHORT / f"{name}.xml").read_bytes())
    crit = tmp_path / "insulin.yaml"
    crit.write_text("name: ON-INSULIN\nconcepts:\n  insulin:\n    phrases: [insulin]\n    exclude_context: ['\\bif\\b']\nrule: insulin\n",
                    encoding="utf-8")
    out = tmp_path / "run"
    res = cli("batch", "cohort", folder, "-o", out, "--criteria", crit, "--criteria", "n2c2")
    assert res.code == 0, res.stderr
    assert "2 items, 28 rows, 0 errors" in res.stdout  # 2 patients x (13 + 1) criteria
    rows = read_results(out, "SELECT patient, label FROM results WHERE criterion = 'ON-INSULIN' ORDER BY 1")
    assert rows == [("t01_window_edges_in", "met"), ("t04_labs", "not met")]
    assert json.loads((out / "manifest.json").read_text())["criteria"] == [str(crit.resolve()), "n2c2"]
    # the same evidence records as `clinex cohort screen ... -o x.json`
    assert cli("cohort", "screen", folder / "t04_labs.xml", "-o", tmp_path / "s.json", "-q").code == 0
    screened = json.loads((tmp_path / "s.json").read_text(encoding="utf-8"))["t04_labs"]["CREATININE"]["evidence"]
    (ev_json,) = read_results(out, "SELECT evidence_json FROM results WHERE patient = 't04_labs' AND criterion = 'CREATININE'")[0]
    assert json.loads(ev_json) == screened
    assert list(screened[0]) == ["record_date", "start", "end", "rule", "source", "value", "sentence"]
    # resuming with other criteria (or an edited criterion file) is refused
    res = cli("batch", "cohort", folder, "-o", out)
    assert res.code == 2 and "different batch run" in res.stderr
    crit.write_text(crit.read_text(encoding="utf-8").replace("[insulin]", "[insulin, glargine]"), encoding="utf-8")
    res = cli("batch", "cohort", folder, "-o", out, "--criteria", crit, "--criteria", "n2c2")
    assert res.code == 2 and "different batch run" in res.stderr


def test_cohort_batch_bad_criteria_and_empty_folder(cli, tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: X\nlabs:\n  egfr:\n    names: [egfr]\n    below: sixty\nrule: egfr\n", encoding="utf-8")
    res = cli("batch", "cohort", COHORT / "t04_labs.xml", "-o", tmp_path / "o1", "--criteria", bad)
    assert res.code == 2 and "field 'labs.egfr.below'" in res.stderr and "field 'labs.egfr.unit'" in res.stderr
    res = cli("batch", "rob", COHORT / "t04_labs.xml", "-o", tmp_path / "o2", "--criteria", "n2c2")
    assert res.code == 2 and "criteria are for the cohort task" in res.stderr
    empty = tmp_path / "emptydir"
    empty.mkdir()
    res = cli("batch", "cohort", empty, COHORT / "t04_labs.xml", "-o", tmp_path / "o3")
    assert res.code == 1 and f"{empty}: no *.xml files or note folders" in res.stderr
    assert "1 items, 13 rows, 1 errors" in res.stdout


def test_pv_batch_model_option_recorded_and_resume_guarded(cli, tmp_path: Path) -> None:
    src = tmp_path / "r.jsonl"
    src.write_text('{"id": "r1", "text": "Rash after amoxicillin."}\n', encoding="utf-8")
    out = tmp_path / "out"
    res = cli("batch", "pv", src, "--output", out, "--model", "crf")
    assert res.code == 0, res.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["model"] == "clinex.pv.crf.v1" and "model_folder" not in manifest
    (n_events,) = read_results(out, "SELECT n_events FROM results")[0]
    assert n_events == 1
    assert cli("batch", "pv", src, "--output", out, "--model", "crf").code == 0  # same model resumes
    from clinex.pv.models import shipped_model_dir

    folder = shipped_model_dir("crf")
    res = cli("batch", "pv", src, "--output", out, "--model", str(folder))
    assert res.code == 2
    assert res.stderr == (
        f"[CLX001] {out / 'manifest.json'}: the run in this folder used model clinex.pv.crf.v1, not "
        f"clinex.pv.crf.v1 from {folder.resolve()}; give the same --model (or $CLINEX_PV_MODEL) to resume, or a new --output\n"
    )
    res = cli("batch", "pv", src, "--output", tmp_path / "out2", "--model", str(folder))
    assert res.code == 0, res.stderr
    manifest = json.loads((tmp_path / "out2" / "manifest.json").read_text())
    assert (manifest["model"], manifest["model_folder"]) == ("clinex.pv.crf.v1", str(folder.resolve()))


def test_pv_batch_auto_records_the_resolved_model(tmp_path: Path) -> None:
    src = tmp_path / "r.jsonl"
    src.write_text('{"id": "r1", "text": "Rash after amoxicillin."}\n', encoding="utf-8")
    run_batch("pv", [src], tmp_path / "out", model="crf")
    expected = "clinex.pv.onnx.v2"  # auto = the ONNX default, installed with the base dependencies (issue 12)
    with pytest.raises(InputError, match="used model clinex.pv.crf.v1, not clinex.pv.onnx.v2"):
        run_batch("pv", [src], tmp_path / "out")
    run_batch("pv", [src], tmp_path / "auto")
    assert json.loads((tmp_path / "auto" / "manifest.json").read_text())["model"] == expected


def test_batch_model_is_checked_against_each_tasks_registry(cli, tmp_path: Path) -> None:
    folder = _trials(tmp_path)
    res = cli("batch", "rob", folder, "--output", tmp_path / "o", "--model", "crf")
    assert res.code == 2
    from clinex.cohort.models import unknown_model_message as cohort_message
    from clinex.rob.evidence import unknown_model_message as rob_message

    assert rob_message("crf").startswith("unknown evidence model 'crf': not one of rules, cues, sentence, ")
    assert res.stderr == f"[CLX006] {rob_message('crf')}\n"
    assert not (tmp_path / "o").exists()
    res = cli("batch", "cohort", folder, "--output", tmp_path / "o1", "--model", "crf")
    assert res.code == 2
    assert res.stderr == f"[CLX006] {cohort_message('crf')}\n"
    assert not (tmp_path / "o1").exists()
    src = tmp_path / "r.jsonl"
    src.write_text('{"id": "r1", "text": "Rash."}\n', encoding="utf-8")
    res = cli("batch", "pv", src, "--output", tmp_path / "o2", "--model", "nosuch")
    assert res.code == 2 and res.stderr.startswith("[CLX006] unknown model 'nosuch'")
    assert not (tmp_path / "o2").exists()


def test_resume_refuses_an_input_edited_in_place(tmp_path: Path) -> None:
    # issue 13: an input changed after a run (same size, new content) must not resume with stale results
    import os

    src = tmp_path / "in.jsonl"
    src.write_text('{"id": "a", "text": "Rash after amoxicillin."}\n', encoding="utf-8")
    out = tmp_path / "out"
    run_batch("pv", [src], out, model="crf")
    src.write_text('{"id": "a", "text": "Rash after penicillin."}\n'[:len(src.read_text())], encoding="utf-8")
    st = src.stat()
    os.utime(src, ns=(st.st_atime_ns, st.st_mtime_ns + 10_000_000))
    with pytest.raises(InputError, match="input file changed since"):
        run_batch("pv", [src], out, model="crf")


# --------------------------------------------------------------------------- QA defects (CLI / batch layer)


def _broken_kinds(monkeypatch: pytest.MonkeyPatch) -> str:
    """Register a kind named 'broken' in each task's registry whose model cannot be built
    (a ModelError, as an LLM kind without a configured server raises its CLX009)."""
    import dataclasses

    import clinex.cohort.models as cohort_models
    import clinex.pv.models as pv_models
    import clinex.rob.evidence as rob_evidence
    from clinex.errors import ModelError

    def fail(*_args: object, **_options: object) -> None:
        raise ModelError("no server configured for the broken kind")

    monkeypatch.setitem(cohort_models.REGISTRY, "broken",
                        cohort_models.CohortKind("broken", fail, "test.broken.v1", "test"))
    monkeypatch.setitem(rob_evidence.REGISTRY, "broken",
                        rob_evidence.EvidenceKind("broken", fail, "test.broken.v1", "test"))
    # pv kinds are classes named by module: a module that is not there cannot be built
    monkeypatch.setitem(pv_models.REGISTRY, "broken", dataclasses.replace(
        pv_models.REGISTRY["crf"], name="broken", module="clinex_test_no_such_module", shipped=None))
    return "no server configured for the broken kind"


def test_a_model_that_cannot_be_built_stops_every_task_before_any_output(
    cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    message = _broken_kinds(monkeypatch)
    src = tmp_path / "r.jsonl"
    src.write_text('{"id": "r1", "text": "Rash after amoxicillin."}\n', encoding="utf-8")
    for task, inp, expected in (
        ("cohort", COHORT / "t04_labs.xml", f"[CLX006] {message}\n"),
        ("rob", _trials(tmp_path), f"[CLX006] {message}\n"),
        ("pv", src, "[CLX006] the 'broken' model needs 'clinex_test_no_such_module', which is not installed "
                    "(for the transformer and training: pip install 'clinex[train]')\n"),
    ):
        out = tmp_path / f"out-{task}"
        res = cli("batch", task, inp, "--output", out, "--model", "broken")
        assert (res.code, res.stderr, res.stdout) == (2, expected, ""), task
        assert not out.exists(), task  # no folder, no manifest: a fixed config starts afresh


def test_cohort_manifest_always_records_the_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import clinex.cohort.models as cohort_models

    src = COHORT / "t04_labs.xml"
    run_batch("cohort", [src], tmp_path / "out")
    assert json.loads((tmp_path / "out" / "manifest.json").read_text())["model"] == "clinex.cohort.rules.v1"
    assert run_batch("cohort", [src], tmp_path / "out", model="rules").n_parts_skipped == 1  # auto = rules
    import copy

    rules = cohort_models.REGISTRY["rules"]

    def other(criteria, **options):  # the rules engine under another versioned id
        clone = copy.copy(rules.factory(criteria, **options))
        clone.name = "test.other.v1"
        return clone

    monkeypatch.setitem(cohort_models.REGISTRY, "other", cohort_models.CohortKind("other", other, "test.other.v1", "test"))
    with pytest.raises(InputError, match="used model clinex.cohort.rules.v1, not test.other.v1"):
        run_batch("cohort", [src], tmp_path / "out", model="other")


def test_resume_retries_model_errors_and_replays_input_errors(
    cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An item that failed with CLX009 (server down) is screened again on resume; a
    malformed file's CLX002 is replayed from its part's errors."""
    import clinex.cohort.models as cohort_models
    from clinex.errors import LLMError

    down = [True]

    class Flaky:
        name = "test.flaky.v1"

        def __init__(self, criteria: object) -> None:
            self.engine = cohort_models.get_engine(criteria)

        def screen(self, patient):  # noqa: ANN001, ANN202
            if down[0]:
                raise LLMError("server http://127.0.0.1:9/v1 not reachable", path=patient.id)
            return self.engine.screen(patient)

    monkeypatch.setitem(cohort_models.REGISTRY, "flaky", cohort_models.CohortKind(
        "flaky", lambda criteria="n2c2", **_o: Flaky(criteria), "test.flaky.v1", "test"))
    folder = tmp_path / "pats"
    folder.mkdir()
    for name in ("t01_window_edges_in", "t04_labs"):
        (folder / f"{name}.xml").write_bytes((COHORT / f"{name}.xml").read_bytes())
    (folder / "bad.xml").write_text("<PatientMatching><TEXT>no end", encoding="utf-8")
    out = tmp_path / "run"
    args = ("batch", "cohort", folder, "-o", out, "--model", "flaky", "--partition-size", "1")
    res = cli(*args)
    assert res.code == 2  # not one patient screened
    assert "3 items, 0 rows, 3 errors, 3 parts (0 resumed)" in res.stdout
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "done" and manifest["model"] == "test.flaky.v1"
    assert sorted(e["message"][:8] for e in manifest["errors"]) == ["[CLX002]", "[CLX009]", "[CLX009]"]
    down[0] = False  # the server is back: the same command screens the two patients
    res = cli(*args)
    assert res.code == 1
    assert "3 items, 26 rows, 1 errors, 3 parts (1 resumed)" in res.stdout
    assert [e["id"] for e in json.loads((out / "manifest.json").read_text())["errors"]] == [str(folder / "bad.xml")]
    assert read_results(out, "SELECT DISTINCT patient FROM results ORDER BY 1") == [
        ("t01_window_edges_in",), ("t04_labs",)]
    res = cli(*args)  # now every part is done
    assert res.code == 1 and "3 items, 26 rows, 1 errors, 3 parts (3 resumed)" in res.stdout


def test_pv_rows_name_their_source_file(tmp_path: Path) -> None:
    for name in ("dupA", "dupB"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "notes.txt").write_text("Rash after amoxicillin.", encoding="utf-8")
        (tmp_path / name / "r.jsonl").write_text('{"id": "r1", "text": "Fever after vancomycin."}\n',
                                                 encoding="utf-8")
    summary = run_batch("pv", [tmp_path / "dupA", tmp_path / "dupB"], tmp_path / "out", model="crf",
                        partition_size=3)
    assert (summary.n_items, summary.n_rows, summary.errors) == (4, 4, [])
    rows = read_results(tmp_path / "out", "SELECT id, source, text FROM results ORDER BY source")
    assert rows == [
        ("notes_1", str(tmp_path / "dupA" / "notes.txt"), "Rash after amoxicillin."),
        ("r1", str(tmp_path / "dupA" / "r.jsonl"), "Fever after vancomycin."),
        ("notes_1", str(tmp_path / "dupB" / "notes.txt"), "Rash after amoxicillin."),
        ("r1", str(tmp_path / "dupB" / "r.jsonl"), "Fever after vancomycin."),
    ]
    from clinex.batch import TASKS

    assert list(TASKS["pv"].columns)[:3] == ["id", "source", "text"]


def test_option_below_one_is_refused_with_the_same_message_everywhere(cli, tmp_path: Path) -> None:
    src = tmp_path / "r.jsonl"
    src.write_text('{"id": "r1", "text": "Rash."}\n', encoding="utf-8")
    for value in ("0", "-2"):
        res = cli("batch", "pv", src, "-o", tmp_path / "o", "--workers", value)
        assert (res.code, res.stderr) == (2, f"[CLX001] field '--workers': --workers must be >= 1; got {value}\n")
        res = cli("batch", "pv", src, "-o", tmp_path / "o", "--batch-size", value)
        assert (res.code, res.stderr) == (2, f"[CLX001] field '--batch-size': --batch-size must be >= 1; got {value}\n")
        res = cli("batch", "pv", src, "-o", tmp_path / "o", "--partition-size", value)
        assert (res.code, res.stderr) == (
            2, f"[CLX001] field '--partition-size': --partition-size must be >= 1; got {value}\n")
        res = cli("cohort", "screen", COHORT / "t04_labs.xml", "-o", tmp_path / "s.json", "--batch-size", value)
        assert (res.code, res.stderr) == (2, f"[CLX001] field '--batch-size': --batch-size must be >= 1; got {value}\n")
        res = cli("pv", "extract", "-i", src, "-o", tmp_path / "p.json", "--batch-size", value)
        assert (res.code, res.stderr) == (2, f"[CLX001] field '--batch-size': --batch-size must be >= 1; got {value}\n")
    assert not (tmp_path / "o").exists() and not (tmp_path / "s.json").exists()
    with pytest.raises(InputError, match=r"field 'workers': workers must be >= 1; got 0"):
        run_batch("pv", [src], tmp_path / "o", workers=0)


def test_folders_without_the_tasks_files(cli, tmp_path: Path) -> None:
    empty = tmp_path / "EMPTY"
    empty.mkdir()
    (empty / "readme.md").write_text("not an input", encoding="utf-8")
    out = tmp_path / "out"
    res = cli("batch", "pv", empty, "-o", out, "--model", "crf")
    assert res.code == 2
    assert res.stderr == (
        f"skipped {empty}: [CLX001] {empty}: folder without .jsonl/.json/.ndjson/.txt/.xml/.xml.gz files\n"
        "[CLX001] field 'inputs': none of the 1 input(s) holds an item to process (see above); nothing written\n"
    )
    assert not out.exists()  # so the same command works once the files are there
    src = tmp_path / "r.jsonl"
    src.write_text('{"id": "r1", "text": "Rash after amoxicillin."}\n', encoding="utf-8")
    res = cli("batch", "pv", empty, src, "-o", out, "--model", "crf")
    assert res.code == 1
    assert res.stderr == f"skipped {empty}: [CLX001] {empty}: folder without .jsonl/.json/.ndjson/.txt/.xml/.xml.gz files\n"
    assert res.stdout.startswith("1 items, 1 rows, 1 errors")
    summary = run_batch("rob", [empty], tmp_path / "rob-out")
    assert summary.n_items == 0 and not (tmp_path / "rob-out").exists()
    assert [e.message for e in summary.errors] == [
        f"[CLX001] {empty}: folder without .pdf/.txt/.xml/.html/.htm files"]
