"""brat writer on predicted events: combination drugs and orphan sub-arguments.

Predictions carry no entity ids and may hold what PHEE's gold never does: a
Combination drug that is no Treatment.Drug, a sub-argument whose event lacks its
main argument. What ``write_brat`` writes must read back to the same events, and
what brat cannot hold must be reported, not dropped silently.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from event_forms import canonical

from clinex.pv.formats.brat import read_brat, read_brat_dir, to_ann, write_brat
from clinex.pv.formats.phee_json import read_phee_json, to_phee_dict
from clinex.pv.types import Argument, Combination, Event, SentenceEvents
from clinex.text import Span

TEXT = "Rash and fever after amoxicillin and clavulanate or aspirin plus heparin for pain."


def _sp(start: int, end: int) -> Span:
    return Span.from_offsets(TEXT, (start, end))


def _drug(start: int, end: int) -> Argument:
    return Argument(role="Drug", span=_sp(start, end))


def _item(with_orphan: bool = False) -> SentenceEvents:
    """One ADE event (no ids, as a model predicts it) with two combinations:
    amoxicillin + clavulanate (both also Treatment.Drug) and aspirin + heparin
    (neither is a Treatment.Drug); optionally a PTE whose Treatment.Disorder has no
    Treatment."""
    ade = Event(
        event_type="Adverse_event",
        trigger=_sp(15, 20),  # after
        arguments=(Argument(role="Effect", span=_sp(0, 4)), Argument(role="Treatment", span=_sp(21, 48))),
        sub_arguments={"Treatment": (_drug(21, 32), _drug(37, 48))},
        combinations=(
            Combination(trigger=_sp(33, 36), drugs=(_drug(21, 32), _drug(37, 48))),  # and
            Combination(trigger=_sp(60, 64), drugs=(_drug(52, 59), _drug(65, 72))),  # plus
        ),
    )
    events = [ade]
    if with_orphan:
        events.append(Event(
            event_type="Potential_therapeutic_event",
            trigger=_sp(73, 76),  # for
            arguments=(Argument(role="Effect", span=_sp(77, 81)),),
            sub_arguments={"Treatment": (Argument(role="Disorder", span=_sp(77, 81)),)},
        ))
    return SentenceEvents(id="p1", text=TEXT, events=tuple(events))


def test_combination_drug_reuses_the_treatment_drug_t_line() -> None:
    ann = to_ann(_item()).splitlines()
    assert ann == [
        "T1\tAdverse_event 15 20\tafter",
        "T2\tEffect 0 4\tRash",
        "T3\tTreatment 21 48\tamoxicillin and clavulanate",
        "T4\tDrug 21 32\tamoxicillin",
        "T5\tDrug 37 48\tclavulanate",
        "T6\tCombination 33 36\tand",
        "T7\tCombination 60 64\tplus",
        "T8\tDrug 52 59\taspirin",
        "T9\tDrug 65 72\theparin",
        "E1\tAdverse_event:T1 arg:T2 arg2:T3",
        "R1\thas Arg1:T3 Arg2:T4",
        "R2\thas Arg1:T3 Arg2:T5",
        "E2\tCombination:T6 arg:T4 arg2:T5",  # the Treatment.Drug T lines, not new ones
        "R3\thas_child Arg1:E1 Arg2:E2",
        "E3\tCombination:T7 arg:T8 arg2:T9",
        "R4\thas_child Arg1:E1 Arg2:E3",
        "R5\thas Arg1:E3 Arg2:T8",  # claimed by their combination: no overlap fallback
        "R6\thas Arg1:E3 Arg2:T9",
    ]


def test_combination_drugs_read_back_exactly(tmp_path: Path) -> None:
    item = _item()
    txt, _ = write_brat(item, tmp_path)
    back = read_brat(txt)
    assert canonical(back) == canonical(item)
    (ev,) = back.events
    assert [(a.role, a.span.offsets()) for a in ev.sub_arguments["Treatment"]] == [
        ("Drug", [(21, 32)]), ("Drug", [(37, 48)]),
    ]
    assert [[d.entity_id for d in c.drugs] for c in ev.combinations] == [["T4", "T5"], ["T8", "T9"]]


def test_without_the_claim_the_drugs_would_become_treatment_drugs(tmp_path: Path) -> None:
    # the same file less R5/R6: the reader's fallback (only Treatment of the
    # sentence) attaches aspirin and heparin to T3, as PHEE's converter would
    ann = [line for line in to_ann(_item()).splitlines() if not line.startswith(("R5\t", "R6\t"))]
    (tmp_path / "p1.txt").write_text(TEXT + "\n")
    (tmp_path / "p1.ann").write_text("\n".join(ann) + "\n")
    (ev,) = read_brat(tmp_path / "p1.txt").events
    assert [a.span.text for a in ev.sub_arguments["Treatment"]] == ["amoxicillin", "clavulanate", "aspirin", "heparin"]


def test_orphan_sub_argument_is_reported_not_written(tmp_path: Path) -> None:
    item = _item(with_orphan=True)
    warnings: list[str] = []
    txt, ann_path = write_brat(item, tmp_path, on_warning=warnings.append)
    assert warnings == ["p1: not written to brat: Treatment.Disorder has no Treatment (event E4, 'pain' 77-81)"]
    ann = ann_path.read_text().splitlines()
    assert "E4\tPotential_therapeutic_event:T10 arg:T11" in ann
    assert not any("Treat-Disorder" in line for line in ann)
    back = read_brat(txt)
    assert canonical(back) == canonical(_item(with_orphan=True).model_copy(update={"events": (
        item.events[0], item.events[1].model_copy(update={"sub_arguments": {}}),
    )}))


def test_default_report_is_a_logged_warning(caplog: pytest.LogCaptureFixture) -> None:
    item = _item(with_orphan=True)
    no_trigger = item.events[0].model_copy(update={"combinations": (Combination(drugs=(_drug(52, 59),)),)})
    item = item.model_copy(update={"events": (no_trigger, item.events[1])})
    with caplog.at_level(logging.WARNING, logger="clinex.pv.formats.brat"):
        to_ann(item)
    assert [r.getMessage() for r in caplog.records] == [
        "p1: not written to brat: Combination without a trigger (event E1; drugs 'aspirin' 52-59); "
        "Treatment.Disorder has no Treatment (event E2, 'pain' 77-81)"
    ]
    assert caplog.records[0].levelno == logging.WARNING


def test_extract_brat_puts_the_warning_on_stderr(cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import clinex.pv.models
    import clinex.pv.pipeline

    monkeypatch.setattr(clinex.pv.models, "load_model", lambda name: object())
    monkeypatch.setattr(
        clinex.pv.pipeline, "extract_records",
        lambda records, **kw: [_item(with_orphan=True).model_copy(update={"id": rid}) for rid, _ in records],
    )
    out = tmp_path / "out"
    res = cli("pv", "extract", TEXT, "--format", "brat", "-o", str(out))
    assert res.code == 0, res.stderr
    assert "warning: text_1: not written to brat: Treatment.Disorder has no Treatment (event E4, 'pain' 77-81)" \
        in res.stderr
    assert sorted(p.name for p in out.iterdir()) == ["text_1.ann", "text_1.txt"]


def test_gold_train_brat_equals_json_and_round_trips(shared_data: Path, tmp_path: Path) -> None:
    # the claim relation must leave PHEE's own files as they were: train split too
    phee = shared_data / "phee"
    from_json = {it.id: it for it in read_phee_json(phee / "json" / "train.json")}
    from_brat = read_brat_dir(phee / "brat" / "train")
    assert len(from_brat) == len(from_json) == 2898
    assert [it.id for it in from_brat if to_phee_dict(it) != to_phee_dict(from_json[it.id])] == []
    warnings: list[str] = []
    for item in from_json.values():
        write_brat(item, tmp_path, on_warning=warnings.append)
    assert warnings == []
    back = read_brat_dir(tmp_path)
    assert [it.id for it in back if to_phee_dict(it) != to_phee_dict(from_json[it.id])] == []


def test_extract_brat_warning_with_the_shipped_transformer(cli, tmp_path: Path) -> None:
    """No stubs: the shipped model (v2) tags 'erectile dysfunction' as a Treatment.Disorder
    of an event without a Treatment (dev sentence 16244351_2); brat cannot hold it."""
    pytest.importorskip("torch")
    text = "Vardenafil is a new oral phosphodiesterase inhibitor used for erectile dysfunction."
    out = tmp_path / "out"
    res = cli("pv", "extract", text, "--model", "transformer", "--format", "brat", "-o", str(out))
    assert res.code == 0, res.stderr
    assert (
        "warning: text_1: not written to brat: Treatment.Disorder has no Treatment "
        "(event E2, 'erectile dysfunction' 62-82)"
    ) in res.stderr
    back = read_brat_dir(out)
    assert [it.id for it in back] == ["text_1"]
    assert all(a.span.text != "erectile dysfunction" for ev in back[0].events for a in ev.arguments)
