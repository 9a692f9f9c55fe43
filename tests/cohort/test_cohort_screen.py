"""``clinex cohort screen`` and the ``clinex.cohort.screen`` API: outputs, bad input, own criteria."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest

import clinex.cohort
from clinex.cohort.criteria_names import N2C2_CRITERIA
from clinex.cohort.formats.n2c2_xml import read_patient
from clinex.errors import InputError

DATA = Path(__file__).parents[1] / "data" / "cohort"
GOOD = ["t01_window_edges_in", "t04_labs", "t06_history_guardian"]


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    d = tmp_path / "in"
    d.mkdir()
    for name in GOOD:
        shutil.copy(DATA / f"{name}.xml", d / f"{name}.xml")
    return d


def test_api_screen_returns_decisions_per_criterion() -> None:
    p = read_patient(DATA / "t04_labs.xml")
    d = clinex.cohort.screen(p)
    assert list(d) == list(N2C2_CRITERIA)
    assert d["CREATININE"].label == "met" and d["CREATININE"].score == 1.0
    assert d["ABDOMINAL"].label == "not met" and d["ABDOMINAL"].score == 0.0
    with pytest.raises(InputError, match="needs a Patient, not str"):
        clinex.cohort.screen("t04_labs.xml")  # type: ignore[arg-type]


def test_screen_folder_to_xml_round_trips_labels(cli, folder: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    r = cli("cohort", "screen", str(folder), "--output", str(out))
    assert r.code == 0, r.stderr
    assert "screened 3 patient(s), 0 skipped" in r.stderr
    assert sorted(p.name for p in out.iterdir()) == [f"{n}.xml" for n in GOOD]
    for name in GOOD:
        pred = read_patient(out / f"{name}.xml")
        gold = read_patient(DATA / f"{name}.xml")
        assert pred.text == gold.text
        assert pred.labels == gold.labels


def test_screen_json_has_evidence_offsets(cli, folder: Path, tmp_path: Path) -> None:
    out = tmp_path / "res.json"
    r = cli("cohort", "screen", str(folder / "t04_labs.xml"), "-o", str(out))
    assert r.code == 0, r.stderr
    data = json.loads(out.read_text(encoding="utf-8"))
    assert list(data) == ["t04_labs"]
    cr = data["t04_labs"]["CREATININE"]
    assert cr["label"] == "met" and cr["score"] == 1.0
    (ev,) = cr["evidence"]
    text = read_patient(DATA / "t04_labs.xml").text
    assert text[ev["start"] : ev["end"]] == ev["sentence"] == "Outside labs: creatinine 140 umol/L (ref 60-110)."
    assert ev["record_date"] == "2066-09-01"
    assert ev["rule"] == "CREATININE.serum_creatinine:value=140 (ULN 110 umol/L = 1.24 mg/dL)"
    assert ev["source"] == "CREATININE.v1"
    assert ev["value"] == pytest.approx(1.5837, abs=1e-4)
    assert data["t04_labs"]["ABDOMINAL"] == {"label": "not met", "score": 0.0, "evidence": []}


def test_screen_csv_and_jsonl(cli, folder: Path, tmp_path: Path) -> None:
    out = tmp_path / "res.csv"
    assert cli("cohort", "screen", str(folder), "-o", str(out), "-q").code == 0
    rows = list(csv.DictReader(out.open(encoding="utf-8")))
    assert list(rows[0]) == ["patient", "criterion", "label", "score", "record_date", "start", "end", "rule", "source", "value", "sentence"]
    assert {r["patient"] for r in rows} == set(GOOD)
    mi = [r for r in rows if r["patient"] == "t01_window_edges_in" and r["criterion"] == "MI-6MOS"]
    assert mi[0]["label"] == "met" and mi[0]["sentence"] == "Principal diagnosis: NSTEMI."
    assert mi[0]["record_date"] == "2080-01-01"
    out2 = tmp_path / "res.jsonl"
    assert cli("cohort", "screen", str(folder), "-o", str(out2), "-q").code == 0
    lines = [json.loads(x) for x in out2.read_text(encoding="utf-8").splitlines()]
    assert [x["patient"] for x in lines] == GOOD


def test_one_bad_patient_is_reported_and_others_screened(cli, folder: Path, tmp_path: Path) -> None:
    (folder / "a_malformed.xml").write_text("<PatientMatching><TEXT>unclosed", encoding="utf-8")
    (folder / "b_binary.xml").write_bytes(b"\x00\x01\x02 not xml")
    big = "Record date: 2070-01-01\n" + "Sodium 140 mmol/L, chloride 104 mmol/L.\n" * 130_000  # ~5.3 MB
    (folder / "c_big.xml").write_text(
        f'<?xml version="1.0" encoding="UTF-8" ?>\n<PatientMatching>\n<TEXT><![CDATA[{big}]]></TEXT>\n</PatientMatching>\n',
        encoding="utf-8",
    )
    assert (folder / "c_big.xml").stat().st_size > 5_000_000
    out = tmp_path / "out"
    r = cli("cohort", "screen", str(folder), "-o", str(out))
    assert r.code == 1  # some patients skipped (as `clinex batch cohort`); the others are written
    assert "a_malformed.xml" in r.stderr and "[CLX002]" in r.stderr
    assert "b_binary.xml" in r.stderr and "[CLX003]" in r.stderr
    assert "c_big.xml" in r.stderr and "exceed the screening limit" in r.stderr
    assert "screened 3 patient(s), 3 skipped" in r.stderr
    assert sorted(p.name for p in out.iterdir()) == [f"{n}.xml" for n in GOOD]


def test_missing_record_date_is_screened(cli, tmp_path: Path) -> None:
    src = tmp_path / "nodate.xml"
    src.write_text(
        '<?xml version="1.0" encoding="UTF-8" ?>\n<PatientMatching>\n<TEXT><![CDATA[\n'
        "Record date: sometime\n\nAdmitted with NSTEMI.\n]]></TEXT>\n</PatientMatching>\n",
        encoding="utf-8",
    )
    out = tmp_path / "o.json"
    r = cli("cohort", "screen", str(src), "-o", str(out))
    assert r.code == 0, r.stderr
    assert f"warning: {src}: record 1 of 1: date 'sometime' does not parse; no record is dated" in r.stderr
    d = json.loads(out.read_text(encoding="utf-8"))["nodate"]
    assert d["MI-6MOS"]["label"] == "met"  # no dates at all: the last record is "now"
    assert d["MI-6MOS"]["evidence"][0]["record_date"] is None


def test_nothing_screenable_exits_2(cli, tmp_path: Path) -> None:
    bad = tmp_path / "bad.xml"
    bad.write_text("<oops", encoding="utf-8")
    r = cli("cohort", "screen", str(bad), "-o", str(tmp_path / "o.json"))
    assert r.code == 2
    assert "[CLX002]" in r.stderr and "no patient could be screened" in r.stderr
    assert not (tmp_path / "o.json").exists()


def test_empty_folder_is_named(cli, folder: Path, tmp_path: Path) -> None:
    empty = tmp_path / "emptydir"
    empty.mkdir()
    r = cli("cohort", "screen", str(empty), "-o", str(tmp_path / "out"))
    assert r.code == 2
    assert f"[CLX001] {empty}: no *.xml files or note folders" in r.stderr
    assert not (tmp_path / "out").exists()  # nothing written, no empty folder left
    r = cli("cohort", "screen", str(folder), str(empty), "-o", str(tmp_path / "o.json"), "-q")
    assert r.code == 1 and f"{empty}: no *.xml files or note folders" in r.stderr
    assert list(json.loads((tmp_path / "o.json").read_text(encoding="utf-8"))) == GOOD


@pytest.mark.parametrize("name", ["x.txt", "res.jsn", "run.2024"])
def test_unknown_output_suffix_is_an_error(cli, folder: Path, tmp_path: Path, name: str) -> None:
    out = tmp_path / name
    r = cli("cohort", "screen", str(folder / "t04_labs.xml"), "-o", str(out))
    assert r.code == 2
    suffix = Path(name).suffix
    assert f"unknown output type '{suffix}' (use a folder, .json, .jsonl or .csv)" in r.stderr
    assert not out.exists()
    out.mkdir()  # an existing folder is fine, whatever its name
    assert cli("cohort", "screen", str(folder / "t04_labs.xml"), "-o", str(out), "-q").code == 0
    assert [p.name for p in out.iterdir()] == ["t04_labs.xml"]


def test_outputs_get_the_umask_mode(cli, folder: Path, tmp_path: Path) -> None:
    import os

    old = os.umask(0o022)
    try:
        assert cli("cohort", "screen", str(folder / "t04_labs.xml"), "-o", str(tmp_path / "out"), "-q").code == 0
        assert cli("cohort", "screen", str(folder / "t04_labs.xml"), "-o", str(tmp_path / "o.json"), "-q").code == 0
    finally:
        os.umask(old)
    assert (tmp_path / "out" / "t04_labs.xml").stat().st_mode & 0o777 == 0o644
    assert (tmp_path / "o.json").stat().st_mode & 0o777 == 0o644


def test_bad_last_record_date_warns_once(cli, tmp_path: Path) -> None:
    src = tmp_path / "shift.xml"
    stars = "*" * 100
    src.write_text(
        '<?xml version="1.0" encoding="UTF-8" ?>\n<PatientMatching>\n<TEXT><![CDATA[\n'
        f"Record date: 2070-05-01\n\nSeen in clinic.\n{stars}\nRecord date: 2071-02-30\n\nNSTEMI.\n"
        f"{stars}\nNo date here.\n]]></TEXT>\n</PatientMatching>\n",
        encoding="utf-8",
    )
    r = cli("cohort", "screen", str(src), "-o", str(tmp_path / "o.json"), "-q")
    assert r.code == 0, r.stderr
    warnings = [ln for ln in r.stderr.splitlines() if ln.startswith("warning:")]
    assert warnings == [
        f"warning: {src}: record 2 of 3: date '2071-02-30' does not parse; "
        "record 3 of 3: no 'Record date:' line; 'now' is 2070-05-01 (record 1)"
    ]


def test_a_note_folder_given_directly_is_one_patient(cli, tmp_path: Path) -> None:
    pat = tmp_path / "p9"
    pat.mkdir()
    (pat / "2080-01-10_discharge.txt").write_text("Principal diagnosis: NSTEMI.\n", encoding="utf-8")
    r = cli("cohort", "screen", str(pat), "-o", str(tmp_path / "o.json"), "-q")
    assert r.code == 0, r.stderr
    assert json.loads((tmp_path / "o.json").read_text(encoding="utf-8"))["p9"]["MI-6MOS"]["label"] == "met"


def test_bad_arguments(cli, folder: Path, tmp_path: Path) -> None:
    r = cli("cohort", "screen", str(tmp_path / "missing"), "-o", str(tmp_path / "o.json"))
    assert r.code == 2 and "no such file or folder" in r.stderr
    r = cli("cohort", "screen", str(folder), "-o", str(tmp_path / "o.xml"))
    assert r.code == 2 and "not a .xml file" in r.stderr
    r = cli("cohort", "screen", str(folder), "-o", str(folder))
    assert r.code == 2 and "refusing to overwrite the input" in r.stderr
    r = cli("cohort", "screen", str(folder), "-c", "n2c9", "-o", str(tmp_path / "o.json"))
    assert r.code == 2 and "unknown criteria set 'n2c9'" in r.stderr


def test_own_criterion_file_from_the_cli(cli, folder: Path, tmp_path: Path) -> None:
    crit = tmp_path / "insulin.toml"
    crit.write_text(
        'name = "ON-INSULIN"\nrule = "insulin"\n[concepts.insulin]\n'
        'phrases = ["insulin", "glargine", "lispro"]\nexclude_context = ["\\\\bif\\\\b"]\n',
        encoding="utf-8",
    )
    out = tmp_path / "o.json"
    r = cli("cohort", "screen", str(folder), "-c", str(crit), "-c", "n2c2", "-o", str(out), "-q")
    assert r.code == 0, r.stderr
    data = json.loads(out.read_text(encoding="utf-8"))
    assert list(data["t01_window_edges_in"]) == [*N2C2_CRITERIA, "ON-INSULIN"]
    assert data["t01_window_edges_in"]["ON-INSULIN"]["label"] == "met"  # "Treated with insulin drip"
    assert data["t04_labs"]["ON-INSULIN"]["label"] == "not met"  # only "If A1c stays above 9, start insulin"


def test_folder_of_dated_notes(cli, tmp_path: Path) -> None:
    pat = tmp_path / "notes" / "p7"
    pat.mkdir(parents=True)
    (pat / "2080-01-10_discharge.txt").write_text("Principal diagnosis: NSTEMI.\n", encoding="utf-8")
    (pat / "2080-05-02_clinic.txt").write_text("Doing well. Meds: fish oil daily.\n", encoding="utf-8")
    out = tmp_path / "o.json"
    r = cli("cohort", "screen", str(tmp_path / "notes"), "-o", str(out), "-q")
    assert r.code == 0, r.stderr
    d = json.loads(out.read_text(encoding="utf-8"))["p7"]
    assert d["MI-6MOS"]["label"] == "met"  # 113 days before the last note
    assert d["DIETSUPP-2MOS"]["label"] == "met"
    (ev,) = [e for e in d["MI-6MOS"]["evidence"] if "nstemi" in e["rule"]]
    assert ev["sentence"] == "Principal diagnosis: NSTEMI." and ev["record_date"] == "2080-01-10"


def test_docs_tables_match_the_code() -> None:
    """docs/cohort.md: the evidence-record keys and the fields marked required are the real ones."""
    from clinex.cohort.criteria import Criterion, LabSpec
    from clinex.cohort.screen import EVIDENCE_FIELDS

    doc = (Path(__file__).parents[2] / "docs" / "cohort.md").read_text(encoding="utf-8")
    table = doc.split("**Evidence records", 1)[1].split("In Python", 1)[0]
    keys = [k.strip("`") for row in table.splitlines() if row.startswith("| `") for k in row.split(" | ")[0][2:].split(", ")]
    assert tuple(keys) == EVIDENCE_FIELDS
    required = {
        f.strip("`").split(".")[-1]
        for row in doc.splitlines()
        if row.startswith("| `") and " | **required**" in row
        for f in row.split(" | ")[0][2:].split(", ")
    }
    code = {n for m in (Criterion, LabSpec) for n, f in m.model_fields.items() if f.is_required()}
    assert required == code == {"name", "rule", "names", "unit", "plausible"}


@pytest.mark.parametrize("name", ["res.json", "res.jsonl", "res.csv"])
def test_an_earlier_output_is_kept_without_force(cli, folder: Path, tmp_path: Path, name: str) -> None:
    out = tmp_path / name
    out.write_text("earlier results\n", encoding="utf-8")
    r = cli("cohort", "screen", str(folder / "t04_labs.xml"), "-o", str(out))
    assert r.code == 2
    assert r.stderr == f"[CLX001] {out}: output file exists; pass --force to replace it\n"
    assert out.read_text(encoding="utf-8") == "earlier results\n"
    r = cli("cohort", "screen", str(folder / "t04_labs.xml"), "-o", str(out), "--force")
    assert r.code == 0, r.stderr
    text = out.read_text(encoding="utf-8")
    assert "t04_labs" in text and "earlier" not in text
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["in", name])  # no temporary file left


def test_an_xml_folder_with_results_is_kept_without_force(cli, folder: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert cli("cohort", "screen", str(folder), "-o", str(out)).code == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    r = cli("cohort", "screen", str(folder / "t04_labs.xml"), "-o", str(out))
    assert r.code == 2
    assert r.stderr == f"[CLX001] {out}: output folder already holds n2c2 XML files; pass --force to replace them\n"
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert cli("cohort", "screen", str(folder / "t04_labs.xml"), "-o", str(out), "--force").code == 0
