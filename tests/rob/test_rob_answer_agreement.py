"""``clinex rob agreement``: RoBuster's PO_response / PO_extraction of automated answers.

Hand-checked figures on two invented answer keys and hand-made predictions; the
fuzzy-match scores in the comments are rapidfuzz 3.14 ``fuzz.partial_ratio`` of the
normalised texts; the corpus test pins the cue model's figures on the preliminary
corpus (gold = roger-annotation).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clinex.rob.answer_agreement import (
    THRESHOLD,
    answer_agreement,
    assess_gold,
    evidence_score,
    load_gold,
    load_predictions,
    read_answer_key,
)
from clinex.rob.report import write_json
from clinex.rob.schema import DOMAINS
from clinex.rob.types import DomainResult, Evidence, SQAnswer, TrialAssessment
from clinex.text import Fragment, Span

# RoB 2 key of a double-blind ITT trial with open outcome assessment (the key spec's example)
BASE = {
    "1.1": "Y", "1.2": "Y", "1.3": "N", "2.1": "N", "2.2": "N", "2.3": "NA", "2.4": "NA",
    "2.5": "NA", "2.6": "Y", "2.7": "NA", "3.1": "Y", "3.2": "NA", "3.3": "NA", "3.4": "NA",
    "4.1": "N", "4.2": "N", "4.3": "N", "4.4": "NA", "4.5": "NA", "5.1": "Y", "5.2": "N", "5.3": "N",
}
SEQ = "computer-generated random sequence"
BLIND = "Outcome assessors were not blinded to group allocation"
LOW = {"D1": "Low", "D2": "Low", "D3": "Low", "D4": "Low", "D5": "Low"}


def _key_yaml(doc_id: str, responses: dict[str, str], evidence: dict[str, list[str]]) -> str:
    lines = [f"id: {doc_id}", "note: invented", "responses:"]
    lines += [f'  "{q}": {r}' for q, r in responses.items()]
    lines.append("evidence:")
    lines += [f'  "{q}": {json.dumps(v)}' for q, v in evidence.items()]
    lines += ["domains: {D1: Low, D2: Low, D3: Low, D4: Low, D5: Low}", "overall: Low", ""]
    return "\n".join(lines)


def _write_keys(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    ev_a = {"1.1": [SEQ], "4.3": [BLIND]}
    ev_b = {"1.1": [SEQ], "1.2": [SEQ], "4.3": [BLIND]}
    for doc_id, ev in (("01_a", ev_a), ("02_b", ev_b)):
        (folder / f"{doc_id}.key.yaml").write_text(_key_yaml(doc_id, BASE, ev), encoding="utf-8")
        (folder / f"{doc_id}.txt").write_text(f"Methods\nA trial ({doc_id}). {SEQ}. {BLIND}.\n", encoding="utf-8")
    return folder


def _assessment(doc_id: str, responses: dict[str, str], evidence: dict[str, list[str]],
                risks: dict[str, str], overall: str) -> TrialAssessment:
    """A TrialAssessment with the given responses; each evidence text is its own span."""
    domains = []
    for d in DOMAINS:
        answers = []
        for q in d.questions:
            evs = tuple(
                Evidence(span=Span(fragments=(Fragment(start=0, end=len(t), text=t),), label=q),
                         score=1.0, source="test")
                for t in evidence.get(q, [])
            )
            answers.append(SQAnswer(sq=q, response=responses[q], confidence=1.0, evidence=evs))
        domains.append(DomainResult(domain=d.id, name=d.name, risk=risks[d.id], answers=tuple(answers)))
    return TrialAssessment(document_id=doc_id, domains=tuple(domains), overall=overall, model="test")


def _predictions() -> dict[str, TrialAssessment]:
    # 01_a: 1.1 PY (gold Y: exact wrong, folded right), 3.1 PY (same)
    # 02_b: 1.2 N (gold Y: both wrong), 3.2 NI (gold NA: both wrong)
    a = {**BASE, "1.1": "PY", "3.1": "PY"}
    b = {**BASE, "1.2": "N", "3.2": "NI"}
    ev_a = {
        # partial_ratio 100: the expert's span lies inside the predicted sentence
        "1.1": ["Allocation followed a computer-generated random sequence."],
        # partial_ratio 92.59 (hyphenation and a line break) >= 80: a match
        "4.3": ["outcome assessors were not blind-\ned to group allo- cation"],
        "2.1": ["Participants were masked."],  # gold has no 2.1 evidence: not counted
    }
    ev_b = {
        "1.1": ["computer-made random sequences"],  # partial_ratio 77.55 < 80: no match
        "1.2": ["computerised random sequence"],    # partial_ratio 80.85 >= 80: a match
        # 4.3: no predicted evidence while the gold has some: wrong
    }
    return {
        "01_a": _assessment("01_a", a, ev_a, {**LOW, "D1": "Some concerns"}, "Some concerns"),
        "02_b": _assessment("02_b", b, ev_b, LOW, "Low"),
    }


def test_fuzzy_scores_around_the_threshold() -> None:
    assert THRESHOLD == 80.0
    assert evidence_score(SEQ, "Allocation followed a computer-generated random sequence.") == 100.0
    assert evidence_score(BLIND, "outcome assessors were not blind-\ned to group allo- cation") \
        == pytest.approx(92.5926, abs=1e-4)
    assert evidence_score(SEQ, "computerised random sequence") == pytest.approx(80.8511, abs=1e-4)
    assert evidence_score(SEQ, "computer-made random sequences") == pytest.approx(77.5510, abs=1e-4)
    assert evidence_score(SEQ, "   ") == 0.0


def test_hand_checked_figures_on_two_keys(tmp_path: Path) -> None:
    gold = load_gold(_write_keys(tmp_path / "keys"))
    assert sorted(gold) == ["01_a", "02_b"]
    assert gold["01_a"].source == tmp_path / "keys" / "01_a.txt"
    rep = answer_agreement(gold, _predictions())
    assert rep.documents == 2 and rep.warnings == ()
    sq = {s.sq: s for s in rep.sqs}
    # every key answers all 22 SQs (NA included): n = 2 per SQ
    assert all(s.n_response == 2 for s in rep.sqs)
    assert (sq["1.1"].po_response_exact, sq["1.1"].po_response_folded) == (0.5, 1.0)
    assert (sq["1.2"].po_response_exact, sq["1.2"].po_response_folded) == (0.5, 0.5)
    assert (sq["3.2"].po_response_exact, sq["3.2"].po_response_folded) == (0.5, 0.5)
    assert (sq["2.3"].po_response_exact, sq["2.3"].po_response_folded) == (1.0, 1.0)
    # extraction: 1.1 A match / B no match; 1.2 B match; 4.3 A match / B no evidence
    assert (sq["1.1"].n_extraction, sq["1.1"].po_extraction) == (2, 0.5)
    assert (sq["1.2"].n_extraction, sq["1.2"].po_extraction) == (1, 1.0)
    assert (sq["4.3"].n_extraction, sq["4.3"].po_extraction) == (2, 0.5)
    assert (sq["2.1"].n_extraction, sq["2.1"].po_extraction) == (0, None)
    dom = {d.domain: d for d in rep.domains}
    # D1: 6 pairs, exact 4 (1.1 A and 1.2 B wrong), folded 5 (1.2 B wrong)
    assert (dom["D1"].n_response, dom["D1"].po_response_exact, dom["D1"].po_response_folded) \
        == (6, 4 / 6, 5 / 6)
    # D3: 8 pairs, exact 6 (3.1 A, 3.2 B wrong) -> 0.75, folded 7 (3.2 B) -> 0.875
    assert (dom["D3"].n_response, dom["D3"].po_response_exact, dom["D3"].po_response_folded) \
        == (8, 0.75, 0.875)
    assert (dom["D1"].n_extraction, dom["D1"].po_extraction) == (3, 2 / 3)
    assert (dom["D4"].n_extraction, dom["D4"].po_extraction) == (2, 0.5)
    assert (dom["D3"].n_extraction, dom["D3"].po_extraction) == (0, None)
    # judgements: A's D1 is Some concerns (gold Low)
    assert (dom["D1"].n_judgement, dom["D1"].po_judgement) == (2, 0.5)
    assert (dom["D2"].n_judgement, dom["D2"].po_judgement) == (2, 1.0)
    o = rep.overall
    assert (o.n_response, o.po_response_exact, o.po_response_folded) == (44, 40 / 44, 42 / 44)
    assert (o.n_extraction, o.po_extraction) == (5, 0.6)
    assert (o.n_judgement, o.po_judgement) == (2, 0.5)
    # lowering the threshold below 77.55 lets B's 1.1 match too
    low = answer_agreement(gold, _predictions(), threshold=77.5)
    assert (low.overall.n_extraction, low.overall.po_extraction) == (5, 0.8)
    assert json.loads(rep.model_dump_json())["overall"]["n_response"] == 44
    # hand-made evidence carries no section (as a rob.json of before Evidence.section): the
    # answers taken from the text (01_a: 1.1, 2.1, 4.3; 02_b: 1.1, 1.2) are all unknown
    assert (rep.decided_outside, rep.decided_total, rep.share_decided_outside, rep.decided_unknown) \
        == (0, 0, None, 5)


def test_missing_prediction_and_bad_threshold(tmp_path: Path) -> None:
    from clinex.errors import EvaluationError, InputError

    gold = load_gold(_write_keys(tmp_path / "keys"))
    preds = _predictions()
    del preds["02_b"]
    rep = answer_agreement(gold, preds)
    assert rep.documents == 1 and rep.document_ids == ("01_a",)
    assert any("'02_b' has no prediction" in w for w in rep.warnings)
    with pytest.raises(InputError, match="threshold"):
        answer_agreement(gold, preds, threshold=120)
    with pytest.raises(EvaluationError, match="no gold document has a prediction"):
        answer_agreement(gold, {})


def test_bad_key_is_reported_with_path_and_field(tmp_path: Path) -> None:
    from clinex.errors import FormatError

    folder = _write_keys(tmp_path / "keys")
    bad = folder / "03_bad.key.yaml"
    bad.write_text(_key_yaml("03_bad", {**BASE, "2.3": "Maybe"}, {}), encoding="utf-8")
    with pytest.raises(FormatError, match=r"03_bad\.key\.yaml: field 'responses\.2\.3'"):
        read_answer_key(bad)
    short = {q: r for q, r in BASE.items() if q != "5.3"}
    (folder / "04_short.key.yaml").write_text(_key_yaml("04_short", short, {}), encoding="utf-8")
    warnings: list[str] = []
    gold = load_gold(folder, warnings=warnings)
    assert sorted(gold) == ["01_a", "02_b"]
    assert len(warnings) == 2
    assert "03_bad.key.yaml: field 'responses.2.3'" in warnings[0] and warnings[0].endswith("skipped")
    assert "04_short.key.yaml: field 'responses.5.3': no response for 5.3" in warnings[1]


def test_tagtog_gold_ties_go_to_the_first_label_in_text_order(tmp_path: Path) -> None:
    page = "alpha beta gamma delta eps zeta eta theta"
    legend = {"e_1": "1_1_Yes_Good", "e_2": "1_1_ProbablyYes_Good", "e_3": "1_2_No_Bad",
              "e_4": "1_2_ProbablyNo_Bad", "m_82": "RoB1", "m_35": "overall_RoB"}
    (tmp_path / "plain.html" / "pool").mkdir(parents=True)
    (tmp_path / "annotations-legend.json").write_text(json.dumps(legend))
    (tmp_path / "plain.html/pool/d1-trial.pdf.plain.html").write_text(
        f'<html xmlns="http://www.w3.org/1999/xhtml"><body><pre id="s1v1">{page}</pre></body></html>')
    folder = tmp_path / "ann.json" / "members" / "expert" / "pool"
    folder.mkdir(parents=True)

    def ent(cls: str, start: int, end: int) -> dict:
        return {"classId": cls, "part": "s1v1", "offsets": [{"start": start, "text": page[start:end]}]}

    folder.joinpath("d1-trial.pdf.ann.json").write_text(json.dumps({
        "annotatable": {"parts": ["s1v1"]},
        "metas": {"m_82": {"value": "Low-risk"}, "m_35": {"value": "High-risk"}},
        # 1.1: one Yes (later in the text, first in the file) and one ProbablyYes (start 0):
        # a tie, the first in text order wins -> PY; 1.2: No twice, ProbablyNo once -> N
        "entities": [ent("e_1", 17, 22), ent("e_2", 0, 5), ent("e_3", 23, 26), ent("e_4", 27, 31),
                     ent("e_3", 32, 35)],
    }))
    gold = load_gold(folder.parent)
    g = gold["d1-trial"]
    assert g.responses == {"1.1": "PY", "1.2": "N"}
    assert g.evidence == {"1.1": ["alpha", "delta"], "1.2": ["eps", "zeta", "eta"]}
    assert g.judgements == {"D1": "Low", "overall": "High"}
    pred = _assessment("d1-trial", {**BASE, "1.1": "Y", "1.2": "N"},
                       {"1.1": ["Alpha beta"], "1.2": ["gamma"]}, LOW, "High")
    rep = answer_agreement(gold, {"x": pred})
    sq = {s.sq: s for s in rep.sqs}
    # only the SQs the expert labelled count
    assert rep.overall.n_response == 2 and sq["1.3"].n_response == 0
    assert (sq["1.1"].po_response_exact, sq["1.1"].po_response_folded) == (0.0, 1.0)
    assert (sq["1.2"].po_response_exact, sq["1.1"].po_extraction, sq["1.2"].po_extraction) \
        == (1.0, 1.0, 0.0)
    dom = {d.domain: d for d in rep.domains}
    assert (dom["D1"].n_judgement, dom["D1"].po_judgement) == (1, 1.0)
    assert (dom["D2"].n_judgement, dom["D2"].po_judgement) == (0, None)
    assert (rep.overall.n_judgement, rep.overall.po_judgement) == (1, 1.0)


def test_cli_folder_of_predictions_and_bad_key(cli, tmp_path: Path) -> None:
    keys = _write_keys(tmp_path / "keys")
    (keys / "03_bad.key.yaml").write_text("id: 03_bad\nresponses: [Y, N]\n", encoding="utf-8")
    preds = tmp_path / "preds"
    for doc_id, ta in _predictions().items():
        write_json(ta, preds / f"{doc_id}.rob.json")
    assert sorted(load_predictions(preds)) == ["01_a", "02_b"]
    res = cli("rob", "agreement", keys, preds, "--json")
    assert res.code == 1, res.stderr  # one key skipped: reported, the others counted
    data = json.loads(res.stdout)
    assert data["documents"] == 2 and data["overall"]["po_extraction"] == 0.6
    assert data["overall"]["po_response_exact"] == 40 / 44
    assert "03_bad.key.yaml: field 'responses'" in res.stderr and "skipped" in res.stderr
    res = cli("rob", "agreement", keys, preds)
    assert res.code == 1
    assert "D3 Missing outcome data" in res.stdout and "0.750" in res.stdout
    assert "answers decided outside Methods/Results: 0 of 0 (-) (sections unknown for 5 answers)" \
        in res.stdout
    # bad inputs: exit 2 with a message
    res = cli("rob", "agreement", tmp_path / "nowhere", preds)
    assert res.code == 2 and "GOLD must be a folder" in res.stderr
    res = cli("rob", "agreement", keys, tmp_path / "keys", "--json")
    assert res.code == 2 and "no *.rob.json" in res.stderr
    res = cli("rob", "agreement", keys, preds, "--model", "cues")
    assert res.code == 2 and "not both" in res.stderr


def test_cli_model_over_key_texts(cli, tmp_path: Path) -> None:
    keys = _write_keys(tmp_path / "keys")
    res = cli("rob", "agreement", keys, "--model", "cues", "--json")
    assert res.code == 0, res.stderr
    data = json.loads(res.stdout)
    assert data["predictions"] == "model:cues" and data["documents"] == 2
    assert data["overall"]["n_response"] == 44
    # a model run stamps every evidence span: no unknown sections; each report is "Methods" only
    assert (data["decided_outside"], data["decided_unknown"]) == (0, 0)
    assert data["share_decided_outside"] == (0.0 if data["decided_total"] else None)


@pytest.fixture
def roger(shared_data: Path) -> Path:
    root = shared_data / "rob_preliminary"
    gold = root / "ann.json" / "members" / "roger-annotation"
    if not gold.is_dir():
        pytest.skip("rob_preliminary corpus not present")
    return gold


def test_cue_model_on_the_preliminary_corpus(roger: Path) -> None:
    from clinex.rob.assess import default_model

    gold = load_gold(roger)
    preds = assess_gold(gold, default_model("cues"))
    rep = answer_agreement(gold, preds)
    assert rep.documents == 10 and {p.model for p in preds.values()} == {"clinex.rob.cues.v1"}

    def counts(r) -> tuple:
        def k(po, n):
            return None if po is None else round(po * n)
        return (r.n_response, k(r.po_response_exact, r.n_response),
                k(r.po_response_folded, r.n_response), r.n_extraction,
                k(r.po_extraction, r.n_extraction), r.n_judgement, k(r.po_judgement, r.n_judgement))

    # (n, agree exact, agree folded, n evidence, evidence matched, n judged, judgement agree)
    assert [(d.domain, *counts(d)) for d in rep.domains] == [
        ("D1", 26, 10, 22, 26, 11, 10, 4),
        ("D2", 27, 14, 19, 27, 12, 10, 4),  # 4 since the mitt cue stopped matching "committee"
        ("D3", 17, 3, 4, 17, 2, 9, 3),
        ("D4", 20, 7, 11, 20, 8, 9, 3),
        ("D5", 16, 3, 4, 16, 5, 9, 5),
    ]
    assert counts(rep.overall) == (106, 37, 60, 106, 38, 9, 8)
    o = rep.overall
    assert (o.po_response_exact, o.po_response_folded, o.po_extraction, o.po_judgement) \
        == (37 / 106, 60 / 106, 38 / 106, 8 / 9)
    sq = {s.sq: s for s in rep.sqs}
    assert (sq["1.1"].n_response, sq["1.1"].po_response_exact, sq["1.1"].po_response_folded,
            sq["1.1"].po_extraction) == (10, 0.4, 0.9, 0.5)
    assert (sq["4.3"].n_response, sq["4.3"].po_response_exact, sq["4.3"].po_extraction) \
        == (7, 4 / 7, 5 / 7)
    assert sq["2.4"].n_response == 0 and sq["2.4"].po_response_exact is None


def test_cli_each_skip_is_reported_once(cli, tmp_path: Path) -> None:
    keys = _write_keys(tmp_path / "keys2")
    bad = keys / "03_bad.key.yaml"
    bad.write_text("id: 03_bad\nresponses: [Y, N]\n", encoding="utf-8")
    (keys / "01_a.txt").unlink()  # 01_a cannot be assessed: one line, not a second 'has no prediction'
    res = cli("rob", "agreement", keys, "--model", "rules")
    assert res.code == 1
    assert res.stderr.splitlines() == [
        f"warning: [CLX002] {bad}: field 'responses': expected a mapping of the 22 SQs to "
        "Y/PY/PN/N/NI/NA; skipped",
        "warning: document '01_a': no report text beside its gold (.txt) or in --texts; not assessed",
    ]
    assert "1 document," in res.stdout
    # the skips read before an error are still reported, once, before it
    res = cli("rob", "agreement", keys, tmp_path / "nopreds")
    assert res.code == 2
    assert res.stderr.splitlines()[0].startswith(f"warning: [CLX002] {bad}: field 'responses'")
    assert res.stderr.count("03_bad") == 1 and res.stderr.splitlines()[-1].startswith("[CLX001]")


def test_cli_key_reports_from_texts_folder(cli, tmp_path: Path) -> None:
    """Keys apart from their articles (CONSORT-TM XML named by id): ``--texts`` finds them."""
    keys = tmp_path / "keys"
    keys.mkdir()
    arts = tmp_path / "articles"
    arts.mkdir()
    text = f"Methods\nA trial. Patients were allocated by a {SEQ}.\n\nResults\nAll were analysed.\n"
    (arts / "PMC9.xml").write_text(
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<document id="PMC9"><text xml:space="preserve">{text}</text>'
        f'<sentence charOffset="8-{text.index(".", 20) + 1}" id="S1" selection="8a"/></document>',
        encoding="utf-8",
    )
    (keys / "PMC9.key.yaml").write_text(_key_yaml("PMC9", BASE, {"1.1": [SEQ]}), encoding="utf-8")
    res = cli("rob", "agreement", keys, "--model", "rules", "--json")
    assert res.code == 2  # the only document could not be assessed
    assert "no report text beside its gold (.txt) or in --texts" in res.stderr
    res = cli("rob", "agreement", keys, "--model", "rules", "--texts", arts, "--json")
    assert res.code == 0, res.stderr
    data = json.loads(res.stdout)
    assert data["documents"] == 1 and data["overall"]["n_response"] == 22
    sq = {s["sq"]: s for s in data["sqs"]}
    assert sq["1.1"]["po_extraction"] == 1.0  # the rules cite the XML article's sentence
    res = cli("rob", "agreement", keys, "--model", "rules", "--texts", tmp_path / "none")
    assert res.code == 2 and "--texts must be a folder" in res.stderr


def test_cli_predictions_without_a_key_are_listed_not_a_failure(cli, tmp_path: Path) -> None:
    """An assess output folder holds more trials than the reviewer keyed: every key counted,
    the extra predictions listed on stderr, exit 0 (fresh-user QA: it exited 1)."""
    keys = _write_keys(tmp_path / "keys")
    (keys / "02_b.key.yaml").unlink()
    preds = tmp_path / "preds"
    for doc_id, ta in _predictions().items():
        write_json(ta, preds / f"{doc_id}.rob.json")
    res = cli("rob", "agreement", keys, preds)
    assert res.code == 0, res.stderr
    assert res.stderr.strip() == "warning: prediction '02_b' has no gold; ignored"
    assert "1 document," in res.stdout


def test_cli_key_contradicting_itself_or_its_report_is_warned_and_counted(cli, tmp_path: Path) -> None:
    """Fresh-user QA: a quote not in the report and an overall that contradicts the domains
    were accepted silently."""
    keys = _write_keys(tmp_path / "keys")
    p = keys / "01_a.key.yaml"
    text = p.read_text(encoding="utf-8")
    text = text.replace(json.dumps([SEQ]), json.dumps(["a sequence nobody wrote"]), 1)
    text = text.replace("D3: Low", "D3: High").replace("overall: Low", "overall: Some concerns")
    p.write_text(text, encoding="utf-8")
    res = cli("rob", "agreement", keys, "--model", "rules", "--json")
    assert res.code == 0, res.stderr
    assert res.stderr.splitlines() == [
        f"warning: {p}: field 'domains.D3': 'High' is not what the RoB 2 algorithm gives on the key's "
        "responses ('Low') (counted as written)",
        f"warning: {p}: field 'overall': 'Some concerns' is not the overall judgement of the key's domains "
        "('High') (counted as written)",
        f"warning: {p}: field 'evidence.1.1': 'a sequence nobody wrote' is not in the report (counted as written)",
    ]
    assert json.loads(res.stdout)["documents"] == 2
