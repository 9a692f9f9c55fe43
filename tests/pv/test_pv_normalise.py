"""Drug normalisation in every PV output (issue 25 item 2): PHEE JSON, brat, listing, batch."""

from __future__ import annotations

import json

from clinex.pv.formats.brat import read_brat, to_ann, write_brat
from clinex.pv.formats.phee_json import dumps_phee, parse_phee_dict, to_phee_dict
from clinex.pv.normalise import drug_counts, drug_entry, drug_label
from clinex.pv.summary import normalize_drug
from clinex.pv.types import Argument, Combination, Event, SentenceEvents
from clinex.text import Span

TEXT = "Tylenol overdose caused hepatotoxicity."
TEXT2 = "Hepatotoxicity after SM-5887 and Tylenol."
ACETAMINOPHEN = {"name": "Acetaminophen", "drugbank_id": "DB00316", "mesh_tree": "D02.092.146.113.092.040"}


def _item(model: str | None = "clinex.pv.test.v1") -> SentenceEvents:
    t = TEXT
    ev = Event(
        event_type="Adverse_event",
        trigger=Span.from_offsets(t, (17, 23)),
        arguments=(Argument(role="Treatment", span=Span.from_offsets(t, (0, 16))),
                   Argument(role="Effect", span=Span.from_offsets(t, (24, 38)))),
        sub_arguments={"Treatment": (Argument(role="Drug", span=Span.from_offsets(t, (0, 7))),)},
        source=model,
    )
    return SentenceEvents(id="s1", text=t, events=(ev,), model=model)


def _combination_item() -> SentenceEvents:
    t = TEXT2
    drugs = (Argument(role="Drug", span=Span.from_offsets(t, (21, 28))),
             Argument(role="Drug", span=Span.from_offsets(t, (33, 40))))
    ev = Event(
        event_type="Adverse_event",
        trigger=Span.from_offsets(t, (15, 20)),
        arguments=(Argument(role="Treatment", span=Span.from_offsets(t, (21, 40))),
                   Argument(role="Effect", span=Span.from_offsets(t, (0, 14)))),
        sub_arguments={"Treatment": drugs},
        combinations=(Combination(trigger=Span.from_offsets(t, (29, 32)), drugs=drugs),),
        source="clinex.pv.test.v1",
    )
    return SentenceEvents(id="s2", text=t, events=(ev,), model="clinex.pv.test.v1")


def test_drug_entry_exact_values():
    assert drug_entry("Tylenol") == ACETAMINOPHEN
    assert drug_entry("paracetamol") == ACETAMINOPHEN
    assert drug_entry("SM-5887") is None
    assert drug_entry("antibiotics") is None  # a drug class, not a drug
    assert drug_label(drug_entry("Tylenol")) == "Acetaminophen (DrugBank DB00316)"
    e = drug_entry("Tylenol")
    e["name"] = "changed"  # a copy: the cache is not touched
    assert drug_entry("Tylenol")["name"] == "Acetaminophen"


def test_summary_uses_the_same_rule():
    for text in ("Tylenol", "CLOZAPINE", "intravenous clonidine", "SM-5887", "insulin", "  Study  Drug X "):
        entry = drug_entry(text)
        name = normalize_drug(text)
        if entry is None:
            assert (name.drugbank_id, name.mesh_tree) == (None, None)
        else:
            assert name == (entry["name"].lower(), entry["drugbank_id"], entry["mesh_tree"])


def test_phee_json_normalised_for_predictions_and_byte_round_trip():
    item = _item()
    d = to_phee_dict(item)
    drug = d["annotations"][0]["events"][0]["Treatment"]["Drug"]
    assert drug["text"] == [["Tylenol"]] and drug["normalised"] == [ACETAMINOPHEN]
    line = dumps_phee(item)
    back = parse_phee_dict(json.loads(line))
    assert dumps_phee(back) == line
    # ignored on read, whatever its form; recomputed on writing
    obj = json.loads(line)
    obj["annotations"][0]["events"][0]["Treatment"]["Drug"]["normalised"] = "junk"
    assert dumps_phee(parse_phee_dict(obj)) == line
    # gold (no model): no key; forced off / on
    assert "normalised" not in json.dumps(to_phee_dict(_item(model=None)))
    assert "normalised" not in json.dumps(to_phee_dict(item, normalised=False))
    assert "normalised" in json.dumps(to_phee_dict(_item(model=None), normalised=True))


def test_phee_json_combination_drugs_unmatched_kept():
    item = _combination_item()
    line = dumps_phee(item)
    ev = json.loads(line)["annotations"][0]["events"][0]
    assert ev["Treatment"]["Drug"]["normalised"] == [None, ACETAMINOPHEN]
    combo = ev["Treatment"]["Combination"][0]["Drug"]
    assert combo["text"] == [["SM-5887"], ["Tylenol"]] and combo["normalised"] == [None, ACETAMINOPHEN]
    assert dumps_phee(parse_phee_dict(json.loads(line))) == line


def test_brat_notes_and_round_trip(tmp_path):
    item = _item()
    ann = to_ann(item)
    notes = [line for line in ann.splitlines() if line.startswith("#")]
    tid = next(line.split("\t")[0] for line in ann.splitlines() if line.split("\t")[1].startswith("Drug "))
    assert f"#2\tAnnotatorNotes {tid}\tAcetaminophen (DrugBank DB00316)" in notes
    txt, ann_path = write_brat(item, tmp_path)
    back = read_brat(txt)
    assert to_ann(back) == ann
    # the unknown drug gets no note; gold gets none
    combo = to_ann(_combination_item())
    assert sum("AnnotatorNotes T" in line for line in combo.splitlines()) == 1
    assert "AnnotatorNotes" not in to_ann(_item(model=None))


def test_listing_shows_the_normalised_name(capsys):
    from clinex.pv.cli import _pv_echo_events

    _pv_echo_events(_item())
    out = capsys.readouterr().out
    assert "'Tylenol' [0:7] = Acetaminophen (DrugBank DB00316)" in out
    _pv_echo_events(_combination_item())
    out = capsys.readouterr().out
    assert "Combination 'SM-5887' + 'Tylenol' = Acetaminophen (DrugBank DB00316)" in out


def test_batch_counts_and_columns():
    assert drug_counts(_item().events) == {"n_drugs_normalised": 1, "n_drugs_unmatched": 0}
    # a combination drug that is also a Treatment.Drug counts once
    assert drug_counts(_combination_item().events) == {"n_drugs_normalised": 1, "n_drugs_unmatched": 1}
    from clinex.batch import TASKS

    cols = TASKS["pv"].columns
    assert cols["n_drugs_normalised"] == cols["n_drugs_unmatched"] == "INTEGER"


def test_batch_run_end_to_end(tmp_path):
    from clinex.batch import read_results, run_batch

    src = tmp_path / "in.jsonl"
    src.write_text(json.dumps({"id": "a", "text": TEXT}) + "\n"
                   + json.dumps({"id": "b", "text": "SM-5887 caused cardiotoxicity."}) + "\n")
    run_batch("pv", [src], tmp_path / "out")
    rows = read_results(tmp_path / "out", "SELECT id, n_drugs_normalised, n_drugs_unmatched, phee_json "
                                          "FROM results ORDER BY id")
    assert [r[:3] for r in rows] == [("a", 1, 0), ("b", 0, 1)]
    drug = json.loads(rows[0][3])["annotations"][0]["events"][0]["Treatment"]["Drug"]
    assert drug["text"] == [["Tylenol"]] and drug["normalised"] == [ACETAMINOPHEN]
    drug = json.loads(rows[1][3])["annotations"][0]["events"][0]["Treatment"]["Drug"]
    assert drug["text"] == [["SM-5887"]] and drug["normalised"] == [None]
