"""brat files as other tools write them (issue 21): text-bound annotations without E
lines, and offsets counted in UTF-8 bytes or UTF-16 code units instead of characters."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from clinex.errors import OffsetError
from clinex.pv.formats.brat import read_brat, to_ann, write_brat

TEXT = "Rash developed after amoxicillin."
ONLY_T = "\n".join([
    "T1\tEffect 0 4\tRash",
    "T2\tAdverse_event 5 14\tdeveloped",
    "T3\tTreatment 21 32\tamoxicillin",
    "T4\tDrug 21 32\tamoxicillin",
    "T5\tSeverity_cue 0 4\tRash",
]) + "\n"


def _pair(d: Path, ann: str, text: str, name: str = "s1") -> Path:
    (d / f"{name}.txt").write_text(text + "\n", encoding="utf-8")
    (d / f"{name}.ann").write_text(ann, encoding="utf-8")
    return d / f"{name}.txt"


def _summary(item) -> list[tuple]:  # noqa: ANN001
    return [(ev.event_type, ev.trigger.offsets(), ev.trigger_id,
             [(a.role, a.span.offsets(), a.span.text) for a in ev.arguments],
             {m: [(a.role, a.span.offsets()) for a in v] for m, v in ev.sub_arguments.items()},
             [(a.name, a.value, a.cue.offsets()) for a in ev.attributes]) for ev in item.events]


def test_trigger_without_event_line_is_an_event_and_round_trips(tmp_path: Path) -> None:
    warnings: list[str] = []
    item = read_brat(_pair(tmp_path, ONLY_T, TEXT), on_warning=warnings.append)
    assert warnings == []
    assert _summary(item) == [("Adverse_event", [(5, 14)], "T2",
                               [("Effect", [(0, 4)], "Rash"), ("Treatment", [(21, 32)], "amoxicillin")],
                               {"Treatment": [("Drug", [(21, 32)])]},
                               [("Severity", "Medium", [(0, 4)])])]
    assert item.events[0].event_id is None  # the file has no E line: the writer numbers it
    assert to_ann(item) == (
        "T2\tAdverse_event 5 14\tdeveloped\nT1\tEffect 0 4\tRash\nT3\tTreatment 21 32\tamoxicillin\n"
        "T4\tDrug 21 32\tamoxicillin\nT5\tSeverity_cue 0 4\tRash\n"
        "E1\tAdverse_event:T2 arg:T1 arg2:T3\nR1\thas Arg1:T3 Arg2:T4\nR2\thas_cue Arg1:E1 Arg2:T5\n"
        "A1\tSeverity E1 Medium\n"
    )
    txt, _ = write_brat(item, tmp_path / "out")
    back = read_brat(txt)
    assert _summary(back) == _summary(item) and back.events[0].event_id == "E1"


def test_several_triggers_without_events_keep_triggers_and_warn_per_dropped_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    text = "Rash after A; fever after B."
    ann = "T1\tEffect 0 4\tRash\nT2\tAdverse_event 5 10\tafter\nT3\tAdverse_event 20 25\tafter\n"
    with caplog.at_level(logging.WARNING, logger="clinex.pv.formats.brat"):
        item = read_brat(_pair(tmp_path, ann, text))
    assert [(ev.trigger.offsets(), ev.arguments) for ev in item.events] == [([(5, 10)], ()), ([(20, 25)], ())]
    assert caplog.messages == [f"{tmp_path / 's1.ann'}:1: T1 (Effect) is linked to no event; not read"]


def test_arguments_without_any_trigger_are_each_reported(tmp_path: Path) -> None:
    ann = "T1\tEffect 0 4\tRash\nT3\tTreatment 21 32\tamoxicillin\n"
    warnings: list[str] = []
    item = read_brat(_pair(tmp_path, ann, TEXT), on_warning=warnings.append)
    assert item.events == ()
    where = tmp_path / "s1.ann"
    assert warnings == [f"{where}:1: T1 (Effect) is linked to no event; not read",
                        f"{where}:2: T3 (Treatment) is linked to no event; not read"]


# "naïve" (2 UTF-8 bytes for ï), "µg" (2 bytes), an emoji (4 bytes, 2 UTF-16 units)
UTEXT = "The naïve patient 😀 got 5 µg of drug X and developed a rash."
CHARS = {"naïve": (4, 9), "µg": (26, 28), "drug X": (32, 38), "developed": (43, 52), "rash": (55, 59)}
UTF8 = {"naïve": (4, 10), "µg": (30, 33), "drug X": (37, 43), "developed": (48, 57), "rash": (60, 64)}
UTF16 = {"naïve": (4, 9), "µg": (27, 29), "drug X": (33, 39), "developed": (44, 53), "rash": (56, 60)}


def _uann(offsets: dict[str, tuple[int, int]]) -> str:
    o = offsets
    return (f"T1\tSubject {o['naïve'][0]} {o['naïve'][1]}\tnaïve\n"
            f"T2\tDosage {o['µg'][0] - 2} {o['µg'][1]}\t5 µg\n"
            f"T3\tTreatment {o['drug X'][0]} {o['drug X'][1]}\tdrug X\n"
            f"T4\tAdverse_event {o['developed'][0]} {o['developed'][1]}\tdeveloped\n"
            f"T5\tEffect {o['rash'][0]} {o['rash'][1]}\trash\n"
            "E1\tAdverse_event:T4 arg:T1 arg2:T3 arg3:T5\n")


@pytest.mark.parametrize(("unit", "offsets"), [("UTF-8 bytes", UTF8), ("UTF-16 code units", UTF16)])
def test_byte_and_utf16_offsets_are_converted_to_characters(
    tmp_path: Path, unit: str, offsets: dict[str, tuple[int, int]]
) -> None:
    assert UTEXT[CHARS["µg"][0]:CHARS["µg"][1]] == "µg"
    warnings: list[str] = []
    item = read_brat(_pair(tmp_path, _uann(offsets), UTEXT), on_warning=warnings.append)
    assert warnings == [f"{tmp_path / 's1.ann'}: offsets are {unit}, not characters; converted to character offsets"]
    (ev,) = item.events
    assert ev.trigger.offsets() == [CHARS["developed"]]
    assert [(a.role, a.span.offsets()) for a in ev.arguments] == [
        ("Subject", [CHARS["naïve"]]), ("Treatment", [CHARS["drug X"]]), ("Effect", [CHARS["rash"]])]
    assert [(a.role, a.span.offsets(), a.span.text) for a in ev.sub_arguments["Treatment"]] == [
        ("Dosage", [(24, 28)], "5 µg")]
    # written back in characters (brat's unit), read back without a notice
    assert to_ann(item) == (
        "T4\tAdverse_event 43 52\tdeveloped\nT1\tSubject 4 9\tnaïve\nT3\tTreatment 32 38\tdrug X\n"
        "T5\tEffect 55 59\trash\nT2\tDosage 24 28\t5 µg\nE1\tAdverse_event:T4 arg:T1 arg2:T3 arg3:T5\n"
        "R1\thas Arg1:T3 Arg2:T2\n"
    )
    txt, _ = write_brat(item, tmp_path / "out")
    again: list[str] = []
    assert read_brat(txt, on_warning=again.append).events == item.events and again == []


def test_character_offsets_need_no_conversion(tmp_path: Path) -> None:
    warnings: list[str] = []
    item = read_brat(_pair(tmp_path, _uann(CHARS), UTEXT), on_warning=warnings.append)
    assert warnings == [] and item.events[0].trigger.offsets() == [CHARS["developed"]]


def test_offsets_that_fit_no_unit_are_refused_at_the_first_bad_line(tmp_path: Path) -> None:
    mixed = dict(UTF8, rash=CHARS["rash"])  # bytes but for the last span: no unit fits; the character reading's error
    with pytest.raises(OffsetError) as info:
        read_brat(_pair(tmp_path, _uann(mixed), UTEXT))
    assert str(info.value) == (f"[CLX004] {tmp_path / 's1.ann'}:1: annotation text does not match "
                               "the text at offsets 4 10")


def test_combination_trigger_without_event_line_joins_the_only_event(tmp_path: Path) -> None:
    text = "Rash after aspirin and warfarin."
    ann = ("T1\tEffect 0 4\tRash\nT2\tAdverse_event 5 10\tafter\nT3\tTreatment 11 31\taspirin and warfarin\n"
           "T4\tDrug 11 18\taspirin\nT5\tDrug 23 31\twarfarin\nT6\tCombination 19 22\tand\n")
    warnings: list[str] = []
    item = read_brat(_pair(tmp_path, ann, text), on_warning=warnings.append)
    assert warnings == []
    (ev,) = item.events
    assert [(a.role, a.span.text) for a in ev.arguments] == [("Effect", "Rash"), ("Treatment", "aspirin and warfarin")]
    assert [a.span.text for a in ev.sub_arguments["Treatment"]] == ["aspirin", "warfarin"]
    # no E line names the combination's drugs: they are the Drugs of the Treatment holding "and"
    assert [(c.trigger.offsets(), c.trigger_id, c.event_id, [(d.entity_id, d.span.text) for d in c.drugs])
            for c in ev.combinations] == [([(19, 22)], "T6", None, [("T4", "aspirin"), ("T5", "warfarin")])]
    txt, _ = write_brat(item, tmp_path / "out")
    assert (tmp_path / "out" / "s1.ann").read_text(encoding="utf-8").endswith(
        "E1\tAdverse_event:T2 arg:T1 arg2:T3\nR1\thas Arg1:T3 Arg2:T4\nR2\thas Arg1:T3 Arg2:T5\n"
        "E2\tCombination:T6 arg:T4 arg2:T5\nR3\thas_child Arg1:E1 Arg2:E2\n")
    assert read_brat(txt).events[0].combinations == tuple(
        c.model_copy(update={"event_id": "E2"}) for c in ev.combinations)
