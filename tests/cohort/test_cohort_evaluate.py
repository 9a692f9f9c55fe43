"""Official n2c2 2018 Track 1 scoring, checked number by number on tiny folders.

Hand case (3 patients, 2 criteria):

============  =================  =================
patient       ABDOMINAL g / p    HBA1C g / p
============  =================  =================
1             met / met          met / not met
2             not met / met      met / met
3             not met / not met  not met / met
============  =================  =================

ABDOMINAL met: tp1 fp1 fn0 tn1 -> P .5 R 1 Spec .5 F1 2/3; not met: tp1 fp0 fn1 tn1 ->
P 1 R .5 Spec 1 F1 2/3; criterion F1 2/3; AUC (1 + .5)/2 = .75.
HBA1C met: tp1 fp1 fn1 tn0 -> P .5 R .5 Spec 0 F1 .5; not met: tp0 fp1 fn1 tn1 ->
P 0 R 0 Spec .5 F1 0; criterion F1 .25; AUC (.5 + 0)/2 = .25.
Micro met: tp2 fp2 fn1 tn1 -> P .5 R 2/3 Spec 1/3 F1 4/7; not met: tp1 fp1 fn2 tn2 ->
P .5 R 1/3 Spec 2/3 F1 .4; micro F1 (4/7 + .4)/2 = 17/35; AUC (2/3 + 1/3)/2 = .5.
Macro met: P .5 R .75 Spec .25 F1 7/12; not met: P .5 R .25 Spec .75 F1 1/3;
macro F1 (2/3 + .25)/2 = 11/24; AUC (.75 + .25)/2 = .5.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cohort_tables import GOLD, PRED  # noqa: E402  (tests/ is on sys.path)

from clinex.cohort.evaluate import evaluate_dirs, evaluate_labels, format_table, score
from clinex.cohort.formats.n2c2_xml import write_patient
from clinex.cohort.types import Patient
from clinex.errors import EvaluationError


def write_dir(folder: Path, table: dict) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for pid, labels in table.items():
        text = f"\nRecord date: 2071-0{pid}-01\nnote {pid}\n"
        write_patient(Patient(id=pid, text=text, labels=labels), folder / f"00{pid}.xml")
    return folder


def class_tuple(c: dict) -> tuple:
    return (c["precision"], c["recall"], c["specificity"], c["f1"])


def check_hand_case(r: dict) -> None:
    a, h = r["criteria"]["ABDOMINAL"], r["criteria"]["HBA1C"]
    assert list(r["criteria"]) == ["ABDOMINAL", "HBA1C"]
    assert {k: a["met"][k] for k in ("tp", "fp", "fn", "tn")} == {"tp": 1, "fp": 1, "fn": 0, "tn": 1}
    assert class_tuple(a["met"]) == pytest.approx((0.5, 1.0, 0.5, 2 / 3))
    assert class_tuple(a["not met"]) == pytest.approx((1.0, 0.5, 1.0, 2 / 3))
    assert (a["f1"], a["auc"], a["auc_from"]) == (pytest.approx(2 / 3), 0.75, "labels")
    assert class_tuple(h["met"]) == pytest.approx((0.5, 0.5, 0.0, 0.5))
    assert class_tuple(h["not met"]) == pytest.approx((0.0, 0.0, 0.5, 0.0))
    assert (h["f1"], h["auc"]) == (pytest.approx(0.25), 0.25)
    mi, ma = r["micro"], r["macro"]
    assert (mi["met"]["tp"], mi["met"]["fp"], mi["met"]["fn"], mi["met"]["tn"]) == (2, 2, 1, 1)
    assert class_tuple(mi["met"]) == pytest.approx((0.5, 2 / 3, 1 / 3, 4 / 7))
    assert class_tuple(mi["not met"]) == pytest.approx((0.5, 1 / 3, 2 / 3, 0.4))
    assert mi["f1"] == pytest.approx(17 / 35) and mi["auc"] == pytest.approx(0.5)
    assert ma["met"]["tp"] is None
    assert class_tuple(ma["met"]) == pytest.approx((0.5, 0.75, 0.25, 7 / 12))
    assert class_tuple(ma["not met"]) == pytest.approx((0.5, 0.25, 0.75, 1 / 3))
    assert ma["f1"] == pytest.approx(11 / 24) and ma["auc"] == pytest.approx(0.5)
    assert r["n_patients"] == 3


def test_score_hand_case() -> None:
    check_hand_case(score(GOLD, PRED))


def test_evaluate_dirs_hand_case(tmp_path: Path) -> None:
    r = evaluate_dirs(write_dir(tmp_path / "gold", GOLD), write_dir(tmp_path / "pred", PRED))
    check_hand_case(r)
    rows = format_table(r)
    assert rows[1] == ["ABDOMINAL", "0.5000", "1.0000", "0.5000", "0.6667", "1.0000", "0.5000", "0.6667", "0.6667", "0.7500"]
    assert rows[-2][0] == "Overall (micro)" and rows[-2][-2] == "0.4857"


def test_auc_from_scores() -> None:
    sc = {
        "1": {"ABDOMINAL": 0.9, "HBA1C": 0.3},
        "2": {"ABDOMINAL": 0.4, "HBA1C": 0.8},
        "3": {"ABDOMINAL": 0.2, "HBA1C": 0.6},
    }
    r = score(GOLD, PRED, sc)
    assert (r["criteria"]["ABDOMINAL"]["auc"], r["criteria"]["ABDOMINAL"]["auc_from"]) == (1.0, "scores")
    assert r["criteria"]["HBA1C"]["auc"] == 0.5
    assert r["micro"]["auc"] == pytest.approx(7 / 9)  # pooled: 7 of 9 met/not-met pairs ordered
    assert r["macro"]["auc"] == pytest.approx(0.75)
    # incomplete scores for a criterion: hard-label AUC for it and for micro
    del sc["3"]["HBA1C"]
    r = score(GOLD, PRED, sc)
    assert r["criteria"]["HBA1C"]["auc_from"] == "labels" and r["criteria"]["HBA1C"]["auc"] == 0.25
    assert r["micro"]["auc"] == pytest.approx(0.5)


def test_single_class_criterion_perfect_run_scores_half() -> None:
    gold = {"1": {"ENGLISH": "met"}, "2": {"ENGLISH": "met"}}
    r = evaluate_labels(gold, gold)
    c = r.criteria["ENGLISH"]
    assert c.met.f1 == 1.0 and c.not_met.f1 == 0.0 and c.f1 == 0.5
    assert c.auc == 0.5  # sensitivity 1, specificity 0/0 -> 0


def test_missing_and_extra_files_are_named(tmp_path: Path, cli) -> None:
    gold = write_dir(tmp_path / "gold", GOLD)
    pred = write_dir(tmp_path / "pred", {k: v for k, v in PRED.items() if k != "2"})
    write_patient(Patient(id="9", text="x", labels=PRED["1"]), pred / "009.xml")
    with pytest.raises(EvaluationError, match=r"missing from .*pred: 002\.xml; extra in .*pred .*: 009\.xml"):
        evaluate_dirs(gold, pred)
    res = cli("cohort", "evaluate", gold, pred)
    assert res.code == 2 and "[CLX007]" in res.stderr and "002.xml" in res.stderr and "009.xml" in res.stderr


def test_missing_criterion_is_named(tmp_path: Path) -> None:
    gold = write_dir(tmp_path / "gold", GOLD)
    pred = write_dir(tmp_path / "pred", {**PRED, "3": {"ABDOMINAL": "met"}})
    with pytest.raises(EvaluationError, match=r"003\.xml: field 'HBA1C': prediction file has no label"):
        evaluate_dirs(gold, pred)
    nolabels = write_dir(tmp_path / "nolab", {k: {} for k in GOLD})
    with pytest.raises(EvaluationError, match=r"001\.xml: gold file has no labels"):
        evaluate_dirs(nolabels, pred)


def test_missing_gold_tag_is_not_met_with_a_warning(tmp_path: Path, cli) -> None:
    """As n2c2 reads an absent criterion: not met; the file and criterion are named (no hard error)."""
    gold = write_dir(tmp_path / "gold", {**GOLD, "3": {"ABDOMINAL": "not met"}})  # 003.xml lacks HBA1C
    pred = write_dir(tmp_path / "pred", PRED)
    r = evaluate_dirs(gold, pred)
    assert r["warnings"] == [f"warning: {gold / '003.xml'}: no <HBA1C> tag; scored as 'not met'"]
    explicit = score({f"00{k}.xml": v for k, v in GOLD.items()}, {f"00{k}.xml": v for k, v in PRED.items()})
    assert r["criteria"] == explicit["criteria"] and r["micro"] == explicit["micro"]  # GOLD has 3: HBA1C not met
    res = cli("cohort", "evaluate", gold, pred, "--json")
    assert res.code == 0
    assert "003.xml" in res.stderr and "<HBA1C>" in res.stderr and "not met" in res.stderr
    assert json.loads(res.stdout)["criteria"]["HBA1C"]["met"]["tp"] == 1
    res = cli("cohort", "evaluate", gold, pred)
    assert res.code == 0 and "003.xml: no <HBA1C> tag" in res.stderr and "Overall (micro)" in res.stdout
    assert evaluate_dirs(write_dir(tmp_path / "g2", GOLD), pred)["warnings"] == []


def test_label_table_checks() -> None:
    with pytest.raises(EvaluationError, match="missing from the prediction: 3"):
        score(GOLD, {k: v for k, v in PRED.items() if k != "3"})
    with pytest.raises(EvaluationError, match="no gold patients"):
        score({}, {})
    with pytest.raises(EvaluationError, match="label 'yes' is not"):
        score(GOLD, {**PRED, "1": {"ABDOMINAL": "yes", "HBA1C": "met"}})
    r = score(GOLD, {k: {**v, "EXTRA": "met"} for k, v in PRED.items()})
    assert r["ignored_criteria"] == ["EXTRA"] and list(r["criteria"]) == ["ABDOMINAL", "HBA1C"]


def test_cli_evaluate_json_and_table(tmp_path: Path, cli) -> None:
    gold, pred = write_dir(tmp_path / "g", GOLD), write_dir(tmp_path / "p", PRED)
    res = cli("cohort", "evaluate", gold, pred, "--json")
    assert res.code == 0
    check_hand_case(json.loads(res.stdout))
    res = cli("cohort", "evaluate", gold, pred)
    assert res.code == 0 and "Overall (micro)" in res.stdout and "0.4857" in res.stdout
    scores = tmp_path / "s.json"
    scores.write_text(json.dumps({"001": {"ABDOMINAL": 0.9}}), encoding="utf-8")
    out = json.loads(cli("cohort", "evaluate", gold, pred, "--json", "--scores", scores).stdout)
    assert out["criteria"]["ABDOMINAL"]["auc_from"] == "labels"  # incomplete scores
    # the JSON `clinex cohort screen` writes: {patient: {criterion: {label, score, evidence}}}
    sc = {f"00{p}": {c: {"label": "met", "score": s, "evidence": []} for c, s in row.items()}
          for p, row in {"1": {"ABDOMINAL": 0.9}, "2": {"ABDOMINAL": 0.4}, "3": {"ABDOMINAL": 0.2}}.items()}
    scores.write_text(json.dumps(sc), encoding="utf-8")
    out = json.loads(cli("cohort", "evaluate", gold, pred, "--json", "--scores", scores).stdout)
    assert (out["criteria"]["ABDOMINAL"]["auc"], out["criteria"]["ABDOMINAL"]["auc_from"]) == (1.0, "scores")
    scores.write_text(json.dumps({"001": {"ABDOMINAL": "high"}}), encoding="utf-8")
    res = cli("cohort", "evaluate", gold, pred, "--scores", scores)
    assert res.code == 2 and "score 'high' is not a number" in res.stderr


def test_dev_against_itself_is_perfect(shared_data: Path, cli) -> None:
    dev = shared_data / "cohort_synthetic" / "dev"
    res = cli("cohort", "evaluate", dev, dev, "--json")
    assert res.code == 0
    r = json.loads(res.stdout)
    assert r["n_patients"] == 36 and len(r["criteria"]) == 13
    assert r["micro"]["f1"] == 1.0 and r["macro"]["f1"] == 1.0 and r["micro"]["auc"] == 1.0
    assert r["micro"]["met"]["tp"] + r["micro"]["met"]["tn"] == 36 * 13


def test_a_file_where_a_folder_is_expected_is_named_as_a_file(tmp_path: Path, cli) -> None:
    gold = write_dir(tmp_path / "gold", GOLD)
    screened = tmp_path / "cohbad_out.json"
    screened.write_text("{}", encoding="utf-8")
    res = cli("cohort", "evaluate", gold, screened)
    assert res.code == 2
    assert res.stderr == (
        f"[CLX001] {screened}: is a file, not a folder; expected a folder of n2c2 XML files "
        "(NNN.xml, as `clinex cohort screen -o FOLDER` writes) (a `clinex cohort screen` .json file goes "
        "to `clinex cohort evaluate --scores`, for AUC)\n"
    )
    res = cli("cohort", "evaluate", gold / "001.xml", gold)
    assert res.code == 2 and res.stderr == (
        f"[CLX001] {gold / '001.xml'}: is a file, not a folder; expected a folder of n2c2 XML files "
        "(NNN.xml, as `clinex cohort screen -o FOLDER` writes)\n")
    res = cli("cohort", "evaluate", gold, tmp_path / "nowhere")
    assert res.code == 2 and res.stderr == (
        f"[CLX001] {tmp_path / 'nowhere'}: no such folder; expected a folder of n2c2 XML files "
        "(NNN.xml, as `clinex cohort screen -o FOLDER` writes)\n")
