"""``clinex rob iaa``: token-level pairwise F1 per SQ/domain, PABAK/kappa on judgements.

The regression test reproduces the RoBuster paper's "before placards" IAA row on the
preliminary corpus (roger-annotation vs martin-annotation) to the hundredth.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clinex.rob.iaa import compare
from clinex.rob.types import DomainResult, Evidence, SQAnswer, TrialAssessment
from clinex.text import Span

PAGE1 = "alpha beta gamma delta eps zeta eta theta"
PAGE2 = "x y z"
LEGEND = {
    "e_1": "1_1_Yes_Good", "e_2": "1_2_No_Bad", "e_3": "2_1_No_Information", "e_4": "3_1_Yes_Good",
    "m_82": "RoB1", "m_83": "RoB2", "m_35": "overall_RoB",
}


def _ent(cls: str, part: str, start: int, end: int, text: str) -> dict:
    return {"classId": cls, "part": part, "offsets": [{"start": start, "text": text[start:end]}]}


def _write_annotator(root: Path, name: str, entities: list[dict], metas: dict[str, str]) -> Path:
    folder = root / "ann.json" / "members" / name / "pool"
    folder.mkdir(parents=True)
    (folder / "d1-trial.pdf.ann.json").write_text(json.dumps({
        "annotatable": {"parts": ["s1v1", "s2v1"]},
        "metas": {k: {"value": v} for k, v in metas.items()},
        "entities": entities,
    }))
    return folder.parent


@pytest.fixture
def export(tmp_path: Path) -> Path:
    (tmp_path / "plain.html" / "pool").mkdir(parents=True)
    (tmp_path / "annotations-legend.json").write_text(json.dumps(LEGEND))
    (tmp_path / "plain.html/pool/d1-trial.pdf.plain.html").write_text(
        f'<html xmlns="http://www.w3.org/1999/xhtml"><body><pre id="s1v1">{PAGE1}</pre>'
        f'<pre id="s2v1">{PAGE2}</pre></body></html>'
    )
    _write_annotator(tmp_path, "ann-a", [
        _ent("e_1", "s1v1", 0, 16, PAGE1),   # alpha beta gamma
        _ent("e_3", "s1v1", 32, 35, PAGE1),  # eta
        _ent("e_4", "s1v1", 23, 31, PAGE1),  # eps zeta
    ], {"m_82": "Low-risk", "m_83": "High-risk", "m_35": "High-risk"})
    _write_annotator(tmp_path, "ann-b", [
        _ent("e_1", "s1v1", 8, 19, PAGE1),   # "ta gamma de": beta gamma delta (partial words)
        _ent("e_2", "s1v1", 36, 41, PAGE1),  # theta
        _ent("e_4", "s1v1", 28, 30, PAGE1),  # "et" inside zeta
        _ent("e_3", "s2v1", 2, 3, PAGE2),    # y: page 2 has no span of A, not counted
        {"classId": "e_4", "part": "s1v1", "offsets": [{"start": 500, "text": "far away"}]},
    ], {"m_82": "Low-risk", "m_83": "Some-concerns", "m_35": "High-risk"})
    return tmp_path


# Hand count on page 1 (8 tokens): 1.1 TP 2 (beta gamma) FP 1 (delta) FN 1 (alpha) -> 66.66;
# 1.2 FP 1 -> 0; 2.1 FN 1 -> 0; 3.1 TP 1 (zeta) FN 1 (eps) -> 66.66.
# D1 = 66.66/3 = 22.22; D2 = 0; D3 = 66.66/4 = 16.665 -> 16.66 (truncated, not rounded);
# overall = (66.66 + 0 + 0 + 66.66)/4 = 33.33.
def _check_small(report) -> None:
    by_sq = {s.sq: s for s in report.sqs}
    assert (by_sq["1.1"].tp, by_sq["1.1"].fp, by_sq["1.1"].fn, by_sq["1.1"].f1) == (2, 1, 1, 66.66)
    assert (by_sq["1.2"].fp, by_sq["1.2"].f1, by_sq["1.2"].used) == (1, 0.0, True)
    assert (by_sq["2.1"].fn, by_sq["2.1"].tp, by_sq["2.1"].fp) == (1, 0, 0)
    assert (by_sq["3.1"].tp, by_sq["3.1"].fn, by_sq["3.1"].f1) == (1, 1, 66.66)
    assert not by_sq["4.1"].used
    assert [(d.domain, d.f1) for d in report.domains] == [
        ("D1", 22.22), ("D2", 0.0), ("D3", 16.66), ("D4", 0.0), ("D5", 0.0)
    ]
    assert report.overall_f1 == 33.33
    assert report.tokens == 8 and report.documents == 1


def test_small_tagtog_pair_hand_counted(export: Path) -> None:
    report = compare(export / "ann.json/members/ann-a", export / "ann.json/members/ann-b",
                     texts=export / "plain.html/pool")
    _check_small(report)
    assert any("outside page s1v1" in w for w in report.warnings)
    j = {r.scope: r for r in report.judgements}
    assert (j["D1"].n, j["D1"].observed) == (1, 1.0)
    assert (j["D2"].n, j["D2"].observed, j["D2"].pabak) == (1, 0.0, -0.5)
    assert (j["domains"].n, j["domains"].observed) == (2, 0.5)
    assert j["domains"].pabak == pytest.approx(0.25)
    assert (j["overall"].n, j["overall"].observed, j["overall"].kappa) == (1, 1.0, None)
    assert j["D3"].n == 0 and j["D3"].observed is None
    # responses from the span labels: 1.1 Y/Y, 2.1 NI/NI, 3.1 Y/Y (B's 1.2 has no partner)
    assert (j["responses"].n, j["responses"].observed, j["responses"].pabak) == (3, 1.0, 1.0)
    # texts found beside the export without --texts
    again = compare(export / "ann.json/members/ann-a/pool", export / "ann.json/members/ann-b")
    assert again.overall_f1 == 33.33


def _assessment(doc_text: str, spans: dict[str, list[tuple[int, int]]], risks: dict[str, str],
                overall: str, responses: dict[str, str]) -> dict:
    domains = []
    for d in ("D1", "D2", "D3"):
        answers = []
        for sq in sorted(q for q in set(spans) | set(responses) if q.startswith(d[1])):
            ev = tuple(
                Evidence(span=Span.from_offsets(doc_text, off, label=sq), page=1, score=0.9,
                         source="test")
                for off in spans.get(sq, [])
            )
            answers.append(SQAnswer(sq=sq, response=responses.get(sq, "NI"), confidence=0.5,
                                    evidence=ev))
        domains.append(DomainResult(domain=d, name=d, risk=risks[d], answers=tuple(answers)))
    ta = TrialAssessment(document_id="d1-trial", domains=tuple(domains), overall=overall,
                         model="test-model")
    return json.loads(ta.model_dump_json())


def test_clinex_json_against_tagtog_and_against_itself(export: Path, tmp_path: Path) -> None:
    from clinex.rob.formats.load import load_document

    doc = load_document(export / "plain.html/pool/d1-trial.pdf.plain.html")
    out_b = tmp_path / "out_b"
    out_b.mkdir()
    b = _assessment(doc.text, {"1.1": [(8, 19)], "1.2": [(36, 41)], "3.1": [(28, 30)]},
                    {"D1": "Low", "D2": "Some concerns", "D3": "Low"}, "High",
                    {"1.1": "Y", "1.2": "N", "3.1": "PY"})
    (out_b / "d1-trial.json").write_text(json.dumps(b))
    (out_b / "broken.json").write_text("{oops")
    report = compare(export / "ann.json/members/ann-a", out_b, texts=export / "plain.html/pool")
    _check_small(report)
    assert any("broken.json:1: invalid JSON" in w for w in report.warnings)

    out_a = tmp_path / "out_a"
    out_a.mkdir()
    a = _assessment(doc.text, {"1.1": [(0, 16)], "2.1": [(32, 35)], "3.1": [(23, 31)]},
                    {"D1": "Low", "D2": "High", "D3": "Low"}, "High",
                    {"1.1": "Y", "1.2": "PN", "3.1": "PY"})
    (out_a / "all.jsonl").write_text(json.dumps(a) + "\n")
    report = compare(out_a, out_b, texts=export / "plain.html/pool")
    _check_small(report)
    j = {r.scope: r for r in report.judgements}
    assert (j["domains"].n, j["domains"].observed) == (3, pytest.approx(2 / 3))
    assert (j["responses"].n, j["responses"].observed) == (3, pytest.approx(2 / 3))
    assert j["responses"].pabak == pytest.approx((5 * 2 / 3 - 1) / 4)


def test_cli_json_table_and_errors(cli, export: Path, tmp_path: Path) -> None:
    a, b = export / "ann.json/members/ann-a", export / "ann.json/members/ann-b"
    res = cli("rob", "iaa", a, b, "--texts", export / "plain.html/pool", "--json")
    assert res.code == 0, res.stderr
    data = json.loads(res.stdout)
    assert [d["f1"] for d in data["domains"]] == [22.22, 0.0, 16.66, 0.0, 0.0]
    assert data["overall_f1"] == 33.33
    assert "outside page" in res.stderr
    res = cli("rob", "iaa", a, b)
    assert res.code == 0
    assert "22.22" in res.stdout and "33.33" in res.stdout and "Overall" in res.stdout
    res = cli("rob", "iaa", a, tmp_path / "nowhere")
    assert res.code == 2 and "[CLX001]" in res.stderr and "nowhere" in res.stderr
    empty = tmp_path / "empty"
    empty.mkdir()
    res = cli("rob", "iaa", a, empty)
    assert res.code == 2 and "[CLX001]" in res.stderr
    other = tmp_path / "other"
    other.mkdir()
    (other / "x.json").write_text(json.dumps(
        {"document_id": "zzz", "domains": [], "overall": "Low", "model": "m"}))
    res = cli("rob", "iaa", a, other)
    assert res.code == 2 and "[CLX007]" in res.stderr


def test_paper_before_placards_row(shared_data: Path, cli) -> None:
    """RoBuster paper, IAA before placards: 31.72 / 12.76 / 5.89 / 4.07 / 0.00, overall 10.87."""
    root = shared_data / "rob_preliminary"
    res = cli("rob", "iaa", root / "ann.json/members/roger-annotation",
              root / "ann.json/members/martin-annotation", "--texts", root / "plain.html/pool",
              "--json")
    assert res.code == 0, res.stderr
    data = json.loads(res.stdout)
    assert [d["f1"] for d in data["domains"]] == [31.72, 12.76, 5.89, 4.07, 0.00]
    assert data["overall_f1"] == 10.87
    assert data["documents"] == 10
    assert sum(s["used"] for s in data["sqs"]) == 21


def test_iaa_table_fits_80_columns_unwrapped(shared_data: Path, cli) -> None:
    # QA defect 10d: the SQ cell wrapped ("2.7" dropped to the next line).
    root = shared_data / "rob_preliminary"
    res = cli("rob", "iaa", root / "ann.json/members/roger-annotation",
              root / "ann.json/members/martin-annotation", "--texts", root / "plain.html/pool")
    assert res.code == 0, res.stderr
    lines = res.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert any("2.6 68.85  2.7 6.52" in line for line in lines)
    d1 = [line.split() for line in lines if line.strip().startswith("D1 Randomization")]
    assert d1 == [["D1", "Randomization", "process", "31.72"]]
    assert any(line.split() == ["Overall", "(SQs", "used)", "10.87"] for line in lines)
