from __future__ import annotations

import logging
from pathlib import Path

import pytest
from event_forms import canonical

from clinex.errors import EncodingError, FormatError, InputError, OffsetError, SchemaError
from clinex.pv.formats.brat import iter_brat_dir, read_brat, read_brat_dir, to_ann, write_brat
from clinex.pv.formats.phee_json import read_phee_json, to_phee_dict
from clinex.pv.types import SentenceEvents

TEXT = "A 6-year-old boy had severe rash and mild fever after amoxicillin and clavulanate."


def _pair(tmp_path: Path, ann: str, text: str = TEXT, name: str = "s1") -> Path:
    txt = tmp_path / f"{name}.txt"
    txt.write_text(text + "\n")
    (tmp_path / f"{name}.ann").write_text(ann)
    return txt


IMPLICIT = "\n".join([
    "T1\tSubject 0 16\tA 6-year-old boy",
    "T2\tAge 2 12\t6-year-old",            # linked by overlap with T1
    "T3\tEffect 21 32;42 47\tsevere rash fever",  # discontinuous
    "T4\tTreatment 54 81\tamoxicillin and clavulanate",
    "T5\tDrug 54 65\tamoxicillin",
    "T6\tDrug 70 81\tclavulanate",
    "T7\tAdverse_event 48 53\tafter",
    "T8\tSeverity_cue 21 27\tsevere",       # linked to the only ADE/PTE event, value Medium
    "T9\tCombination 66 69\tand",
    "T10\tGender 13 16\tboy",
    "E1\tAdverse_event:T7 ",                # lists no argument: the default event
    "E2\tCombination:T9 arg:T5 arg2:T6",    # linked to the only ADE/PTE event
])


def test_implicit_links_follow_the_phee_converter(tmp_path: Path) -> None:
    item = read_brat(_pair(tmp_path, IMPLICIT))
    assert item.id == "s1" and item.text == TEXT  # trailing newline dropped
    (ev,) = item.events
    assert (ev.event_type, ev.event_id, ev.trigger_id, ev.trigger.text) == ("Adverse_event", "E1", "T7", "after")
    assert [(a.role, a.entity_id) for a in ev.arguments] == [("Subject", "T1"), ("Effect", "T3"), ("Treatment", "T4")]
    eff = ev.main("Effect")[0].span
    assert eff.offsets() == [(21, 32), (42, 47)] and eff.text == "severe rash fever"
    assert [(a.role, a.entity_id) for a in ev.sub_arguments["Subject"]] == [("Age", "T2"), ("Gender", "T10")]
    assert [(a.role, a.span.text) for a in ev.sub_arguments["Treatment"]] == [
        ("Drug", "amoxicillin"), ("Drug", "clavulanate"),
    ]
    (combo,) = ev.combinations
    assert (combo.event_id, combo.trigger.text) == ("E2", "and")
    assert [d.entity_id for d in combo.drugs] == ["T5", "T6"]
    (sev,) = ev.attributes
    assert (sev.name, sev.value, sev.cue.text, sev.entity_id) == ("Severity", "Medium", "severe", "T8")


def test_explicit_relations_and_attribute_lines(tmp_path: Path) -> None:
    text = "Rash after drug A, and fever after drug B may occur."
    ann = "\n".join([
        "T1\tEffect 0 4\tRash",
        "T2\tTreatment 11 17\tdrug A",
        "T3\tAdverse_event 5 10\tafter",
        "T4\tEffect 23 28\tfever",
        "T5\tTreatment 35 41\tdrug B",
        "T6\tAdverse_event 29 34\tafter",
        "T7\tDrug 35 41\tdrug B",
        "T8\tSpeculation_cue 42 45\tmay",
        "T9\tDrug 11 17\tdrug A",
        "E1\tAdverse_event:T3 arg:T1 arg2:T2",
        "E2\tAdverse_event:T6 arg:T4 arg2:T5",
        "A1\tSpeculated E2",
        "R1\thas Arg1:T5 Arg2:T7",
        "R2\tis_a Arg1:T1 Arg2:T4",  # other relation types are ignored
    ])
    item = read_brat(_pair(tmp_path, ann, text))
    e1, e2 = item.events
    assert [a.span.text for a in e1.arguments] == ["Rash", "drug A"]
    assert [a.span.text for a in e1.sub_arguments["Treatment"]] == ["drug A"]  # by overlap
    assert e1.attributes == ()
    assert [a.entity_id for a in e2.sub_arguments["Treatment"]] == ["T7"]  # by R has
    (spec,) = e2.attributes  # the only event with a Speculated A line
    assert (spec.value, spec.cue.text) == (True, "may")


def test_ambiguous_annotations_are_dropped(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    text = "Rash after A; fever after B."
    ann = "\n".join([
        "T1\tEffect 0 4\tRash",
        "T2\tAdverse_event 5 10\tafter",
        "T3\tAdverse_event 20 25\tafter",
        "E1\tAdverse_event:T2",
        "E2\tAdverse_event:T3",
    ])
    warnings: list[str] = []
    item = read_brat(_pair(tmp_path, ann, text), on_warning=warnings.append)
    assert [ev.arguments for ev in item.events] == [(), ()]
    assert warnings == [f"{tmp_path / 's1.ann'}:1: T1 (Effect) is linked to no event; not read"]
    with caplog.at_level(logging.WARNING, logger="clinex.pv.formats.brat"):  # the default: a WARNING
        read_brat(tmp_path / "s1.txt")
    assert caplog.messages == warnings


def test_dev_split_brat_equals_json(shared_data: Path) -> None:
    phee = shared_data / "phee"
    from_brat = read_brat_dir(phee / "brat" / "dev")
    from_json = {it.id: it for it in read_phee_json(phee / "json" / "dev.json")}
    assert len(from_brat) == len(from_json) == 961
    for item in from_brat:
        gold = from_json[item.id]
        assert canonical(item) == canonical(gold), item.id
        assert to_phee_dict(item) == to_phee_dict(gold), item.id  # same order and ids too
    n_events = sum(len(it.events) for it in from_brat)
    n_combos = sum(len(ev.combinations) for it in from_brat for ev in it.events)
    assert (n_events, n_combos) > (961, 100)


def test_write_then_read_round_trips_dev(shared_data: Path, tmp_path: Path) -> None:
    items = read_phee_json(shared_data / "phee" / "json" / "dev.json")
    for item in items:
        write_brat(item, tmp_path)
    back = {it.id: it for it in read_brat_dir(tmp_path)}
    assert all(canonical(back[it.id]) == canonical(it) for it in items)
    assert all(to_phee_dict(back[it.id]) == to_phee_dict(it) for it in items)


def test_writer_makes_links_explicit(tmp_path: Path) -> None:
    item = read_brat(_pair(tmp_path, IMPLICIT))
    ann = to_ann(item).splitlines()
    assert "T3\tEffect 21 32;42 47\tsevere rash fever" in ann
    assert "E1\tAdverse_event:T7 arg:T1 arg2:T3 arg3:T4" in ann
    assert "E2\tCombination:T9 arg:T5 arg2:T6" in ann
    relations = sorted(line.split("\t")[1] for line in ann if line.startswith("R"))
    assert relations == [
        "has Arg1:T1 Arg2:T10", "has Arg1:T1 Arg2:T2", "has Arg1:T4 Arg2:T5", "has Arg1:T4 Arg2:T6",
        "has_child Arg1:E1 Arg2:E2", "has_cue Arg1:E1 Arg2:T8",
    ]
    assert [line.split("\t")[1] for line in ann if line.startswith("A")] == ["Severity E1 Medium"]
    assert sum(line.startswith("T5\t") for line in ann) == 1  # shared entities written once
    out = tmp_path / "out"
    txt, _ = write_brat(item, out)
    assert txt.read_text() == TEXT + "\n"
    assert canonical(read_brat(txt)) == canonical(item)
    with pytest.raises(InputError, match="refusing to overwrite"):
        write_brat(item, out)
    with pytest.raises(InputError, match="not a plain file name"):
        write_brat(item.model_copy(update={"id": "../x"}), out)


@pytest.mark.parametrize(
    ("line", "error", "pattern"),
    [
        ("T11\tEffect 70 95\tx", OffsetError, r"s1\.ann:13: offsets 70-95 fall outside a text of 82"),
        ("T11\tEffect 0 4\tRash", OffsetError, r"s1\.ann:13: annotation text does not match"),
        ("T11\tEffect 9 4\tx", OffsetError, r"s1\.ann:13: offsets 9-4: end before start"),
        ("T11\tEffect four 9\tx", FormatError, r"s1\.ann:13: bad offsets 'four 9'"),
        ("T11\tOutcome 0 1\tA", SchemaError, r"s1\.ann:13: unknown entity label 'Outcome'"),
        ("E3\tAdverse_event:T99", FormatError, r"s1\.ann:13: E3 refers to unknown id T99"),
        ("A1\tSeverity E1 Extreme", SchemaError, r"s1\.ann:13: attribute Severity has value 'Extreme'"),
        ("X1\twhat", FormatError, r"s1\.ann:13: unknown annotation line type 'X1'"),
        ("T11\tEffect 0 1", FormatError, r"s1\.ann:13: a T line needs 3"),
    ],
)
def test_bad_ann_lines_name_file_and_line(tmp_path: Path, line: str, error: type, pattern: str) -> None:
    txt = _pair(tmp_path, IMPLICIT + "\n" + line + "\n")
    with pytest.raises(error, match=pattern):
        read_brat(txt)


def test_bad_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = _pair(tmp_path, IMPLICIT, name="a")
    bad = _pair(tmp_path, IMPLICIT, name="b")
    (tmp_path / "b.ann").write_bytes(b"T1\tEffect 0 4\t\xff\x00\x00")
    with pytest.raises(EncodingError, match=r"b\.ann:1: binary file"):
        read_brat(bad)
    (tmp_path / "b.ann").write_bytes(b"T1\tEffect 0 1\t\xe9\n")
    with pytest.raises(EncodingError, match=r"b\.ann:1: not UTF-8"):
        read_brat(bad)
    assert [it.id for it in iter_brat_dir(tmp_path, errors="skip")] == ["a"]
    assert "b.ann:1: not UTF-8" in capsys.readouterr().err
    with pytest.raises(EncodingError):
        read_brat_dir(tmp_path)
    (tmp_path / "a.ann").unlink()
    with pytest.raises(InputError, match=r"a\.ann: no such file"):
        read_brat(good)
    with pytest.raises(InputError, match="not a folder"):
        read_brat_dir(tmp_path / "nope")


def test_writer_leaves_out_what_it_cannot_express(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    from clinex.pv.types import Argument, Attribute, Event
    from clinex.text import Span

    text = "Rash may follow aspirin."
    ev = Event(
        event_type="Adverse_event",
        trigger=Span.from_offsets(text, (9, 15)),
        arguments=(Argument(role="Effect", span=Span.from_offsets(text, (0, 4))),),
        sub_arguments={"Treatment": (Argument(role="Drug", span=Span.from_offsets(text, (16, 23))),)},
        attributes=(Attribute(name="Speculated", value=False, cue=Span.from_offsets(text, (5, 8))),
                    Attribute(name="Negated", value=True)),
    )
    item = SentenceEvents(id="w1", text=text, events=(ev,))
    with caplog.at_level(logging.INFO, logger="clinex.pv.formats.brat"):
        ann = to_ann(item)
    assert ann == "T1\tAdverse_event 9 15\tfollow\nT2\tEffect 0 4\tRash\nE1\tAdverse_event:T1 arg:T2\n"
    assert "Treatment.Drug has no Treatment" in caplog.text
    bad = SentenceEvents(id="w2", text=text, events=(ev.model_copy(update={
        "attributes": (Attribute(name="Severity", value="Huge"),)}),))
    with pytest.raises(SchemaError, match="Severity has value 'Huge'"):
        to_ann(bad)
