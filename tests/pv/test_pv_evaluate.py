"""Hand-computed PHEE scores on a four-sentence toy corpus (see the comments)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clinex.errors import EvaluationError, SchemaError
from clinex.pv.evaluate import evaluate_files, flatten, score
from clinex.pv.formats.phee_json import write_phee_json
from clinex.pv.types import Argument, Attribute, Combination, Event, SentenceEvents
from clinex.text import Fragment, Span

T1 = "Two patients developed severe rash and fever after amoxicillin; one improved on prednisone."
T2 = "Acute and chronic hepatitis followed isoniazid."
T3 = "Warfarin and aspirin together caused bleeding."
T4 = "No adverse events were seen."


def sp(text: str, *parts: str) -> Span:
    """Span of the given substrings (first occurrence each), in the given order."""
    frags = []
    for part in parts:
        start = text.index(part)
        frags.append(Fragment(start=start, end=start + len(part), text=part))
    return Span(fragments=tuple(frags))


def ev(text: str, etype: str, trigger: str, args=(), subs=None, combos=(), attrs=()) -> Event:
    return Event(
        event_type=etype,
        trigger=sp(text, trigger),
        arguments=tuple(Argument(role=r, span=sp(text, *p)) for r, *p in args),
        sub_arguments={m: tuple(Argument(role=r, span=sp(text, p)) for r, p in v) for m, v in (subs or {}).items()},
        combinations=tuple(
            Combination(trigger=sp(text, t), drugs=tuple(Argument(role="Drug", span=sp(text, d)) for d in ds))
            for t, ds in combos
        ),
        attributes=tuple(Attribute(name=n, value=v, cue=sp(text, c)) for n, v, c in attrs),
    )


AE, PTE = "Adverse_event", "Potential_therapeutic_event"

GOLD = [
    SentenceEvents(id="s1", text=T1, events=(
        ev(T1, AE, "developed",
           args=[("Subject", "Two patients"), ("Treatment", "amoxicillin"),
                 ("Effect", "severe rash"), ("Effect", "fever")],
           subs={"Subject": [("Population", "Two")], "Treatment": [("Drug", "amoxicillin")]},
           attrs=[("Severity", "High", "severe")]),
        ev(T1, PTE, "improved", args=[("Subject", "one"), ("Treatment", "prednisone")],
           subs={"Treatment": [("Drug", "prednisone")]}),
    )),
    SentenceEvents(id="s2", text=T2, events=(
        ev(T2, AE, "followed", args=[("Effect", "Acute", "hepatitis"), ("Treatment", "isoniazid")],
           subs={"Treatment": [("Drug", "isoniazid")]}),
    )),
    SentenceEvents(id="s3", text=T3, events=(
        ev(T3, AE, "caused", args=[("Treatment", "Warfarin and aspirin"), ("Effect", "bleeding")],
           subs={"Treatment": [("Drug", "Warfarin"), ("Drug", "aspirin")]},
           combos=[("and", ["Warfarin", "aspirin"])]),
    )),
    SentenceEvents(id="s4", text=T4),
]

PRED = [
    SentenceEvents(id="s1", text=T1, events=(
        ev(T1, AE, "developed",
           args=[("Subject", "Two patients"), ("Treatment", "amoxicillin"),
                 ("Effect", "rash"), ("Effect", "fever"), ("Effect", "fever")],  # duplicate
           subs={"Subject": [("Population", "Two")], "Treatment": [("Drug", "amoxicillin")]},
           attrs=[("Severity", "Low", "severe")]),
        # right trigger and arguments, wrong event type
        ev(T1, AE, "improved", args=[("Treatment", "prednisone"), ("Subject", "one")],
           subs={"Treatment": [("Drug", "prednisone")]}),
    )),
    SentenceEvents(id="s2", text=T2, events=(
        ev(T2, AE, "followed", args=[("Effect", "Acute and chronic hepatitis"), ("Treatment", "isoniazid")],
           subs={"Treatment": [("Drug", "isoniazid")]}),
    )),
    # s3 missing: no predictions
    SentenceEvents(id="s4", text=T4, events=(ev(T4, AE, "seen"),)),
]


def test_triggers_and_event_classification_by_hand() -> None:
    r = score(GOLD, PRED)
    # Trig-C per (sentence, key) tp/pred/gold: s1 AE 1/2/1, s1 PTE 0/0/1, s2 1/1/1, s3 0/0/1, s4 0/1/0
    trc = r["trigger"]["classification"]
    assert (trc["precision"], trc["recall"], trc["f1"]) == (0.5, 0.5, 0.5)
    assert trc["token_f1"] == 0.5  # one token per trigger
    # Trig-I ignores the type: s1 2/2/2 -> 3 of 4 predicted, 3 of 4 gold
    tri = r["trigger"]["identification"]
    assert (tri["precision"], tri["recall"], tri["f1"]) == (0.75, 0.75, 0.75)
    # Event-C counts the *set* of types per sentence (released stage-1 script):
    # s1 {AE,PTE} vs {AE} 1/1/2, s2 1/1/1, s3 0/0/1, s4 0/1/0 -> tp 2, pred 3, gold 4
    ec = r["event_classification"]
    assert (ec["precision"], ec["recall"]) == (pytest.approx(2 / 3), 0.5)
    assert ec["f1"] == pytest.approx(4 / 7)


def test_main_arguments_by_hand() -> None:
    r = score(GOLD, PRED)["arguments"]
    # classification, EM: tp 4 (AE.Subject, AE.Treatment, AE.Effect "fever" in s1; isoniazid in s2)
    # predicted 9 (s1: AE.Subject 2, AE.Treatment 2, AE.Effect 3; s2: 2), gold 11
    # (the discontinuous gold effect "Acute ... hepatitis" is two span strings)
    c = r["classification"]["main"]
    assert c["em_precision"] == pytest.approx(4 / 9)
    assert c["em_recall"] == pytest.approx(4 / 11)
    assert c["em_f1"] == pytest.approx(8 / 20)
    # tokens: tp 8, predicted 13, gold 15 ("acute and chronic hepatitis" vs "acute", "hepatitis": 2 of 4)
    assert c["token_precision"] == pytest.approx(8 / 13)
    assert c["token_recall"] == pytest.approx(8 / 15)
    assert c["token_f1"] == pytest.approx(4 / 7)
    # identification pools the main roles within (sentence, event type): here the
    # mistyped "one"/"prednisone" stay unmatched, so the counts equal classification's
    i = r["identification"]["main"]
    assert (i["em_precision"], i["em_recall"]) == (pytest.approx(4 / 9), pytest.approx(4 / 11))
    assert i["token_f1"] == pytest.approx(4 / 7)


def test_identification_ignores_the_role_within_an_event_type() -> None:
    gold = [SentenceEvents(id="s2", text=T2, events=(
        ev(T2, AE, "followed", args=[("Effect", "hepatitis"), ("Treatment", "isoniazid")],
           subs={"Treatment": [("Drug", "isoniazid")]}),))]
    pred = [SentenceEvents(id="s2", text=T2, events=(
        ev(T2, AE, "followed", args=[("Subject", "hepatitis"), ("Treatment", "isoniazid")],
           subs={"Treatment": [("Dosage", "isoniazid")]}),))]
    r = score(gold, pred)["arguments"]
    assert r["classification"]["main"]["em_f1"] == 0.5  # tp 1, pred 2, gold 2
    assert r["identification"]["main"]["em_f1"] == 1.0
    assert r["classification"]["sub"]["em_f1"] == 0.0
    assert r["identification"]["sub"]["em_f1"] == 1.0


def test_sub_and_all_arguments_by_hand() -> None:
    r = score(GOLD, PRED)["arguments"]
    # classification: Population 1/1/1, AE.Drug s1 1/2/1, PTE.Drug 0/0/1, s2 Drug 1/1/1,
    # s3 Drug 0/0/2 and Combination.Drug 0/0/2 -> tp 3, pred 4, gold 8
    c = r["classification"]["sub"]
    assert (c["em_precision"], c["em_recall"], c["em_f1"]) == (0.75, 0.375, 0.5)
    assert (c["token_precision"], c["token_recall"], c["token_f1"]) == (0.75, 0.375, 0.5)
    # identification pools sub-roles per (sentence, type): s1 AE 2/3/2, s1 PTE 0/0/1,
    # s2 1/1/1, s3 0/0/4 -> tp 3, pred 4, gold 8
    i = r["identification"]["sub"]
    assert (i["em_precision"], i["em_recall"], i["em_f1"]) == (0.75, 0.375, 0.5)
    assert r["classification"]["all"]["em_f1"] == pytest.approx(14 / 32)  # tp 7, pred 13, gold 19
    assert r["identification"]["all"]["em_f1"] == pytest.approx(14 / 32)


def test_per_role_and_attributes_by_hand() -> None:
    r = score(GOLD, PRED)
    role = r["per_role"]
    assert role["Subject"]["em_f1"] == 0.5  # tp 1, pred 2, gold 2
    assert role["Subject"]["token_f1"] == pytest.approx(2 / 3)  # tp 2, pred 3, gold 3
    assert role["Effect"]["em_precision"] == 0.25 and role["Effect"]["em_recall"] == 0.2
    assert role["Effect"]["token_precision"] == pytest.approx(4 / 7)
    assert role["Effect"]["token_recall"] == pytest.approx(4 / 6)
    assert role["Effect"]["token_f1"] == pytest.approx(8 / 13)
    assert role["Treatment.Drug"]["em_f1"] == 0.5  # tp 2, pred 3, gold 5
    assert role["Subject.Population"]["em_f1"] == 1.0
    assert role["Combination.Drug"] == {k: 0.0 for k in role["Combination.Drug"]}
    assert role["Subject.Age"]["em_f1"] == 0.0  # no support: zero division gives 0.0
    assert list(role) == [
        "Subject", "Treatment", "Effect", "Subject.Age", "Subject.Gender", "Subject.Population",
        "Subject.Race", "Subject.Disorder", "Treatment.Drug", "Treatment.Dosage", "Treatment.Freq",
        "Treatment.Route", "Treatment.Time_elapsed", "Treatment.Duration", "Treatment.Disorder",
        "Combination.Drug",
    ]
    # the cue span is scored, not the value (gold High, predicted Low)
    assert r["attributes"]["Severity"]["em_f1"] == 1.0
    assert r["attributes"]["Speculated"]["em_f1"] == 0.0


def test_attributes_all_sums_the_three_attributes() -> None:
    text = "Aspirin may not cause severe rash."
    gold = [SentenceEvents(id="a", text=text, events=(
        ev(text, AE, "cause", attrs=[("Speculated", True, "may"), ("Negated", True, "not")]),))]
    pred = [SentenceEvents(id="a", text=text, events=(
        ev(text, AE, "cause", attrs=[("Speculated", True, "may"), ("Severity", "High", "severe")]),))]
    att = score(gold, pred)["attributes"]
    # Speculated tp 1/1/1, Negated 0 pred 1 gold, Severity 1 pred 0 gold -> tp 1, pred 2, gold 2
    assert (att["Speculated"]["em_f1"], att["Negated"]["em_recall"], att["Severity"]["em_precision"]) == (1.0, 0.0, 0.0)
    assert (att["all"]["em_precision"], att["all"]["em_recall"], att["all"]["em_f1"]) == (0.5, 0.5, 0.5)
    assert list(att) == ["Speculated", "Negated", "Severity", "all"]


def test_discontinuous_fragments_score_separately() -> None:
    pred = [SentenceEvents(id="s2", text=T2, events=(
        ev(T2, AE, "followed", args=[("Effect", "Acute", "hepatitis")]),))]
    r = score(GOLD[1:2], pred)
    assert r["per_role"]["Effect"]["em_f1"] == 1.0
    pred = [SentenceEvents(id="s2", text=T2, events=(
        ev(T2, AE, "followed", args=[("Effect", "hepatitis")]),))]
    r = score(GOLD[1:2], pred)["per_role"]["Effect"]  # 1 of 2 gold fragments
    assert (r["em_precision"], r["em_recall"], r["em_f1"]) == (1.0, 0.5, pytest.approx(2 / 3))


def test_empty_and_missing_predictions() -> None:
    r = flatten(score(GOLD, []))
    assert set(r.values()) == {0.0}
    assert "arguments.classification.main.token_recall" in r and "per_role.Treatment.Drug.em_f1" in r
    # s3 alone missing: its gold counts against recall only
    only_s3 = score(GOLD[2:3], [])
    assert only_s3["arguments"]["classification"]["all"]["em_recall"] == 0.0
    assert score(GOLD[2:3], GOLD[2:3])["per_role"]["Combination.Drug"]["em_f1"] == 1.0


def test_flatten_keys_and_ranges() -> None:
    flat = flatten(score(GOLD, PRED))
    for key in (
        "trigger.identification.precision", "trigger.classification.f1", "event_classification.recall",
        "arguments.identification.sub.em_f1", "arguments.classification.all.token_precision",
        "per_role.Subject.Age.token_f1", "per_role.Combination.Drug.em_recall",
        "attributes.Negated.em_precision",
    ):
        assert key in flat
    assert all(0.0 <= v <= 1.0 for v in flat.values())
    assert flatten({"a": {"b": 1.0}, "c": 0.5}) == {"a.b": 1.0, "c": 0.5}


def test_alignment_errors() -> None:
    with pytest.raises(EvaluationError, match=r"\[CLX007\].*predicted sentence id 'zz' is not in the gold"):
        score(GOLD, [SentenceEvents(id="zz", text="x")])
    with pytest.raises(EvaluationError, match="'s4' occurs twice in the predictions"):
        score(GOLD, [PRED[-1], PRED[-1]])
    with pytest.raises(EvaluationError, match="occurs twice in the gold"):
        score(GOLD + GOLD[:1], [])
    with pytest.raises(EvaluationError, match="predicted text differs"):
        score(GOLD, [SentenceEvents(id="s4", text="other")])
    bad = SentenceEvents(id="s4", text=T4, events=(ev(T4, "ADE", "seen"),))
    with pytest.raises(SchemaError, match="unknown event type 'ADE'"):
        score(GOLD, [bad])


def test_evaluate_files_names_the_prediction_file(tmp_path: Path) -> None:
    g, p = tmp_path / "gold.json", tmp_path / "pred.json"
    write_phee_json(GOLD, g)
    write_phee_json(PRED, p)
    assert evaluate_files(g, p) == score(GOLD, PRED)
    write_phee_json([SentenceEvents(id="nope", text="x")], p)
    with pytest.raises(EvaluationError, match=r"pred\.json: predicted sentence id 'nope'"):
        evaluate_files(g, p)


# ------------------------------------------------------------------ CLI


def test_cli_dev_against_itself_and_empty(cli, shared_data: Path, tmp_path: Path) -> None:
    dev = shared_data / "phee" / "json" / "dev.json"
    res = cli("pv", "evaluate", "--gold", dev, "--pred", dev, "--json")
    assert res.code == 0, res.stderr
    flat = flatten(json.loads(res.stdout))  # exactly one JSON object on stdout
    assert len(flat) > 100 and set(flat.values()) == {1.0}
    empty = tmp_path / "empty.json"
    empty.write_text("")
    res = cli("pv", "evaluate", "--gold", dev, "--pred", empty, "--json")
    assert res.code == 0
    flat = flatten(json.loads(res.stdout))
    assert all(v == 0.0 for k, v in flat.items() if k.endswith("recall"))


def test_cli_table(cli, tmp_path: Path) -> None:
    g, p = tmp_path / "g.json", tmp_path / "p.json"
    write_phee_json(GOLD, g)
    write_phee_json(PRED, p)
    res = cli("pv", "evaluate", "--gold", g, "--pred", p)
    assert res.code == 0, res.stderr
    lines = {line.split("│")[1].strip(): line for line in res.stdout.splitlines() if line.count("│") > 2}
    assert "75.00" in lines["Trig-I"] and "57.14" in lines["Event-C"]
    assert "40.00" in lines["Arg-C main"]  # EM F1 8/20
    assert "Arg-C Combination.Drug" in lines and "cue Severity" in lines


def test_cli_bad_files_exit_2(cli, tmp_path: Path) -> None:
    g = tmp_path / "g.json"
    write_phee_json(GOLD, g)
    bad = tmp_path / "bad.json"
    bad.write_text(g.read_text().splitlines()[0] + "\n{not json\n")
    res = cli("pv", "evaluate", "--gold", g, "--pred", bad)
    assert res.code == 2 and res.stdout == ""
    assert res.stderr.startswith(f"[CLX002] {bad}:2: not valid JSON")
    bad.write_bytes(b"\xff\xfe\x00\x01binary")
    res = cli("pv", "evaluate", "--gold", g, "--pred", bad, "--json")
    assert res.code == 2 and res.stderr.startswith(f"[CLX003] {bad}:1:")
    res = cli("pv", "evaluate", "--gold", tmp_path / "missing.json", "--pred", g)
    assert res.code == 2 and "[CLX001]" in res.stderr and "no such file" in res.stderr
    extra = tmp_path / "extra.json"
    write_phee_json([SentenceEvents(id="nope", text="x")], extra)
    res = cli("pv", "evaluate", "--gold", g, "--pred", extra)
    assert res.code == 2 and res.stderr.startswith(f"[CLX007] {extra}: predicted sentence id 'nope'")


def test_an_empty_gold_file_is_named_as_empty(cli, tmp_path) -> None:  # noqa: ANN001
    """Fresh-user defect (stop 19): an empty gold file said the first predicted id 'is not in the gold'."""
    gold, pred = tmp_path / "gold.json", tmp_path / "pred.json"
    gold.write_text("", encoding="utf-8")
    pred.write_text('{"id": "r1", "context": "Rash."}\n', encoding="utf-8")
    res = cli("pv", "evaluate", "--gold", str(gold), "--pred", str(pred))
    assert res.code == 2 and res.stderr.strip().endswith(f"[CLX007] {gold}: the gold file holds no sentences")


def test_an_output_below_a_file_names_the_file(cli, tmp_path) -> None:  # noqa: ANN001
    """Fresh-user defect (stop 19): '-o notes.txt/x.json' said 'File exists'."""
    (tmp_path / "notes.txt").write_text("user file", encoding="utf-8")
    out = tmp_path / "notes.txt" / "x.json"
    res = cli("pv", "extract", "--model", "crf", "Rash after amoxicillin.", "-o", str(out))
    assert res.code == 2
    assert res.stderr.strip() == f"[CLX001] {out}: cannot write the output file: {tmp_path / 'notes.txt'} is a file, not a folder"
    assert (tmp_path / "notes.txt").read_text(encoding="utf-8") == "user file"
