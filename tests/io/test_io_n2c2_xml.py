"""n2c2 2018 Track 1 XML reader/writer and the notes-folder reader."""

from __future__ import annotations

import datetime as dt
import time
from pathlib import Path

import pytest

from clinex.cohort.criteria_names import N2C2_CRITERIA
from clinex.cohort.formats.n2c2_xml import (
    SEPARATOR,
    parse_patient_xml,
    read_patient,
    read_patients,
    split_records,
    write_patient,
)
from clinex.cohort.formats.notes_folder import read_notes_folder
from clinex.cohort.types import Decision, Patient
from clinex.errors import EncodingError, FormatError, InputError

STAR = "*" * 100


def xml(text: str, tags: str = '<ABDOMINAL met="met" />\n<HBA1C met="not met" />') -> str:
    return (
        '<?xml version="1.0" encoding="UTF-8" ?>\n<PatientMatching>\n'
        f"<TEXT><![CDATA[{text}]]></TEXT>\n<TAGS>\n{tags}\n</TAGS>\n</PatientMatching>\n"
    )


TWO = f"\nRecord date: 2071-03-10\nfirst note\n\n{STAR}\nRecord date: 2072-01-15\nsecond note\n"


# --------------------------------------------------------------------------- dev corpus


def test_round_trip_every_dev_patient(shared_data: Path, tmp_path: Path) -> None:
    files = sorted((shared_data / "cohort_synthetic" / "dev").glob("*.xml"))
    assert len(files) == 36
    for f in files:
        p = read_patient(f)
        assert set(p.labels) == set(N2C2_CRITERIA)
        assert 2 <= len(p.records) <= 5
        assert all(r.date is not None for r in p.records)
        assert all(p.record_text(r).startswith("Record date: ") for r in p.records)
        out = write_patient(p, tmp_path / f.name)
        assert out.read_bytes() == f.read_bytes()  # the layout is reproduced byte for byte
        q = read_patient(out)
        assert q.model_dump(exclude={"source"}) == p.model_dump(exclude={"source"})


def test_dev_001_records_and_labels(shared_data: Path) -> None:
    p = read_patient(shared_data / "cohort_synthetic" / "dev" / "001.xml")
    assert p.id == "001"
    assert [r.date for r in p.records] == [dt.date(2071, 3, 10), dt.date(2072, 1, 15), dt.date(2072, 5, 20)]
    assert p.now == dt.date(2072, 5, 20)
    assert p.labels["ADVANCED-CAD"] == "met" and p.labels["ABDOMINAL"] == "not met"
    assert list(p.labels) == list(N2C2_CRITERIA)
    # records exclude the separator lines and surrounding blank lines
    between = p.text[p.records[0].end : p.records[1].start]
    assert between.strip() == SEPARATOR
    assert p.record_text(p.records[-1]).endswith("Cardiology")


# --------------------------------------------------------------------------- records


def test_split_records_offsets_by_hand() -> None:
    text = "Record date: 2071-03-10\nA\n" + STAR + "\nRecord date: 2072-01-15\nB\n"
    recs = split_records(text)
    assert [(r.date, r.start, r.end) for r in recs] == [
        (dt.date(2071, 3, 10), 0, 25),
        (dt.date(2072, 1, 15), 127, 152),
    ]
    assert text[127:152] == "Record date: 2072-01-15\nB"


def test_missing_and_unparsable_dates_are_none() -> None:
    text = f"no date line here\n{STAR}\nRecord date: 2071-02-30\nx\n{STAR}\nrecord DATE: 3/9/2073\ny"
    assert [r.date for r in split_records(text)] == [None, None, dt.date(2073, 3, 9)]


def test_empty_records_are_skipped_and_short_star_lines_kept() -> None:
    text = f"Record date: 2071-01-01\na\n*****\nb\n{STAR}\n   \n\n{STAR}\n{STAR}\nRecord date: 2071-06-01\nc"
    recs = split_records(text)
    assert [r.date for r in recs] == [dt.date(2071, 1, 1), dt.date(2071, 6, 1)]
    assert text[recs[0].start : recs[0].end] == "Record date: 2071-01-01\na\n*****\nb"
    assert split_records("") == () and split_records(" \n ") == ()


def test_parse_patient_xml_text_and_tags() -> None:
    p = parse_patient_xml(xml(TWO), path="x/017.xml")
    assert p.id == "017" and p.source == "x/017.xml"
    assert p.text == TWO
    assert [p.record_text(r) for r in p.records] == [
        "Record date: 2071-03-10\nfirst note",
        "Record date: 2072-01-15\nsecond note",
    ]
    assert p.labels == {"ABDOMINAL": "met", "HBA1C": "not met"}


def test_tag_names_and_values_are_normalised_like_the_official_scorer() -> None:
    p = parse_patient_xml(xml(TWO, '<abdominal met=" Not Met " />'), path="a.xml")
    assert p.labels == {"ABDOMINAL": "not met"}


def test_no_tags_gives_no_labels() -> None:
    doc = f'<?xml version="1.0"?><PatientMatching><TEXT><![CDATA[{TWO}]]></TEXT></PatientMatching>'
    assert parse_patient_xml(doc, path="a.xml").labels == {}


# --------------------------------------------------------------------------- bad input


def test_malformed_xml_names_file_and_line(tmp_path: Path) -> None:
    f = tmp_path / "003.xml"
    f.write_text(xml(TWO).replace("</TAGS>", "</TAG>"), encoding="utf-8")
    with pytest.raises(FormatError, match=r"CLX002.*003\.xml:14: malformed XML: mismatched tag, column 3") as e:
        read_patient(f)
    assert e.value.line == 14


def test_missing_text_is_a_format_error_naming_the_file(tmp_path: Path) -> None:
    f = tmp_path / "009.xml"
    f.write_text('<?xml version="1.0"?>\n<PatientMatching><TAGS/></PatientMatching>', encoding="utf-8")
    with pytest.raises(FormatError, match=r"009\.xml: field 'TEXT': no <TEXT> element"):
        read_patient(f)


@pytest.mark.parametrize(
    ("tags", "message"),
    [
        ('<HBA1C met="maybe" />', r"a\.xml:\d+: field 'TAGS/HBA1C': met='maybe' is not one of"),
        ("<HBA1C />", r"field 'TAGS/HBA1C': <HBA1C> has no 'met' attribute"),
        ('<HBA1C met="met" />\n<HBA1C met="met" />', r"a\.xml:13: field 'TAGS/HBA1C': criterion appears twice"),
    ],
)
def test_bad_tags(tags: str, message: str) -> None:
    with pytest.raises(FormatError, match=message):
        parse_patient_xml(xml(TWO, tags), path="a.xml")


def test_wrong_root_and_markup_in_text() -> None:
    with pytest.raises(FormatError, match="root element is <Patient>"):
        parse_patient_xml("<Patient><TEXT>x</TEXT></Patient>", path="a.xml")
    with pytest.raises(FormatError, match="<TEXT> holds markup"):
        parse_patient_xml("<PatientMatching><TEXT>a <b>c</b></TEXT></PatientMatching>", path="a.xml")


def test_entity_declarations_are_refused() -> None:
    bomb = (
        '<?xml version="1.0"?><!DOCTYPE p [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;">]>'
        "<PatientMatching><TEXT>&b;</TEXT></PatientMatching>"
    )
    with pytest.raises(FormatError, match=r"forbidden XML construct \(EntitiesForbidden\)"):
        parse_patient_xml(bomb, path="bomb.xml")


def test_encoding_errors(tmp_path: Path) -> None:
    latin = tmp_path / "l.xml"
    latin.write_bytes(xml("\nRecord date: 2071-01-01\ncaf\xe9\n").encode("latin-1"))
    with pytest.raises(EncodingError, match=r"l\.xml:5: not UTF-8 text"):
        read_patient(latin)
    declared = tmp_path / "d.xml"
    declared.write_bytes(
        xml("\nRecord date: 2071-01-01\ncaf\xe9\n").replace("UTF-8", "ISO-8859-1").encode("latin-1")
    )
    assert read_patient(declared).text.endswith("caf\xe9\n")
    binary = tmp_path / "b.xml"
    binary.write_bytes(b"\x00\x01PK")
    with pytest.raises(EncodingError, match="binary file"):
        read_patient(binary)
    with pytest.raises(InputError, match="no such file"):
        read_patient(tmp_path / "nope.xml")


def test_five_megabyte_patient_reads_quickly_and_size_limit(tmp_path: Path) -> None:
    note = "Blood pressure 130/80. HbA1c 7.2%. Continue metformin 1000 mg BID.\n" * 800
    records = [f"Record date: 20{60 + i // 12}-{i % 12 + 1:02d}-01\n{note}" for i in range(100)]
    f = tmp_path / "big.xml"
    f.write_text(xml("\n" + f"\n{STAR}\n".join(records)), encoding="utf-8")
    assert f.stat().st_size > 5_000_000
    t0 = time.perf_counter()
    p = read_patient(f)
    assert time.perf_counter() - t0 < 5
    assert len(p.records) == 100 and p.now == dt.date(2068, 4, 1)
    with pytest.raises(FormatError, match=r"file is \d+ bytes, above the limit of 1000000 bytes"):
        read_patient(f, max_bytes=1_000_000)


def test_folder_run_reports_a_bad_patient_and_reads_the_rest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("001", "003"):
        (tmp_path / f"{name}.xml").write_text(xml(TWO), encoding="utf-8")
    (tmp_path / "002.xml").write_text("<PatientMatching><TEXT>", encoding="utf-8")
    errors: list = []
    got = [p.id for p in read_patients(tmp_path, error_log=errors)]
    assert got == ["001", "003"]
    assert len(errors) == 1 and errors[0].path.endswith("002.xml")
    err = capsys.readouterr().err
    assert "002.xml:1: malformed XML" in err and "[CLX002]" in err
    with pytest.raises(FormatError):
        list(read_patients([tmp_path], errors="raise"))


# --------------------------------------------------------------------------- writing


def test_write_refuses_to_overwrite_the_input(tmp_path: Path) -> None:
    f = tmp_path / "001.xml"
    f.write_text(xml(TWO), encoding="utf-8")
    before = f.read_bytes()
    p = read_patient(f)
    with pytest.raises(InputError, match="refusing to overwrite the input file"):
        write_patient(p, tmp_path / "." / "001.xml")
    assert f.read_bytes() == before


def test_write_decisions_in_canonical_order_and_cdata_escape(tmp_path: Path) -> None:
    text = "\nRecord date: 2071-01-01\nodd ]]> marker & <tags>\n"
    p = Patient(id="p", text=text, records=split_records(text), labels={"HBA1C": "met"})
    dec = {
        "MI-6MOS": Decision(criterion="MI-6MOS", label="not met", score=0.1),
        "ABDOMINAL": Decision(criterion="ABDOMINAL", label="met", score=0.9),
    }
    out = write_patient(p, tmp_path / "sub" / "p.xml", dec)
    body = out.read_text(encoding="utf-8")
    assert body.index("<ABDOMINAL") < body.index("<MI-6MOS") and "<HBA1C" not in body
    q = read_patient(out)
    assert q.text == text and q.records == p.records
    assert q.labels == {"ABDOMINAL": "met", "MI-6MOS": "not met"}
    # without decisions the gold labels are written
    assert read_patient(write_patient(p, tmp_path / "g.xml")).labels == {"HBA1C": "met"}


def test_write_rejects_text_xml_cannot_carry(tmp_path: Path) -> None:
    p = Patient(id="p", text="Record date: 2071-01-01\nbell\x07")
    with pytest.raises(InputError, match=r"U\+0007 at offset 28"):
        write_patient(p, tmp_path / "p.xml")
    assert not (tmp_path / "p.xml").exists()


# --------------------------------------------------------------------------- notes folder


def test_notes_folder_dates_order_and_structure(tmp_path: Path) -> None:
    d = tmp_path / "patient-7"
    d.mkdir()
    (d / "2072-01-15_discharge.txt").write_text("DISCHARGE\nNSTEMI, stent.\n", encoding="utf-8")
    (d / "a_clinic.txt").write_text("Record date: 2071-03-10\n\nClinic visit.\n", encoding="utf-8")
    (d / "zz_history.txt").write_text("Old history, undated.\n", encoding="utf-8")
    (d / "2073-01-01_blank.txt").write_text("  \n", encoding="utf-8")
    (d / "ignored.md").write_text("not a note", encoding="utf-8")
    p = read_notes_folder(d)
    assert p.id == "patient-7" and p.labels == {}
    assert [r.date for r in p.records] == [None, dt.date(2071, 3, 10), dt.date(2072, 1, 15)]
    assert [p.record_text(r) for r in p.records] == [
        "Old history, undated.",
        "Record date: 2071-03-10\n\nClinic visit.",
        "Record date: 2072-01-15\n\nDISCHARGE\nNSTEMI, stent.",
    ]
    assert p.now == dt.date(2072, 1, 15)
    assert p.records == split_records(p.text)
    # it writes as an n2c2 file and reads back the same
    q = read_patient(write_patient(p, tmp_path / "out.xml"))
    assert q.text == p.text and q.records == p.records


def test_notes_folder_errors(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such folder"):
        read_notes_folder(tmp_path / "none")
    (tmp_path / "empty").mkdir()
    with pytest.raises(FormatError, match="holds no \\*.txt notes"):
        read_notes_folder(tmp_path / "empty")
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "2071-01-01.txt").write_bytes(b"ok\nno\xff\n")
    with pytest.raises(EncodingError, match=r"2071-01-01\.txt:2: not UTF-8 text"):
        read_notes_folder(bad)


def test_read_patients_mixes_xml_files_and_note_folders(tmp_path: Path, capsys) -> None:
    (tmp_path / "001.xml").write_text(xml(TWO), encoding="utf-8")
    (tmp_path / "p2").mkdir()
    (tmp_path / "p2" / "2071-01-01.txt").write_text("note", encoding="utf-8")
    (tmp_path / "p3").mkdir()
    (tmp_path / "p3" / "x.txt").write_bytes(b"\xff")
    assert [p.id for p in read_patients(tmp_path)] == ["001", "p2"]
    assert "x.txt" in capsys.readouterr().err


def test_an_empty_patient_file_says_so(tmp_path) -> None:  # noqa: ANN001
    """Fresh-user check (stop 19): a 0-byte .xml said 'malformed XML: no element found'."""
    from clinex.cohort.formats.n2c2_xml import read_patient
    from clinex.errors import FormatError

    empty = tmp_path / "p.xml"
    empty.write_bytes(b"")
    with pytest.raises(FormatError) as exc:
        read_patient(empty)
    assert str(exc.value) == f"[CLX002] {empty}: empty file (0 bytes), expected n2c2 XML"
