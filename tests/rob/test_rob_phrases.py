"""Phrase suites: how real reports word each RoB 2 signalling question.

``tests/data/rob_phrases/*.jsonl`` holds short excerpts with the response an expert
gives to the SQs the excerpt speaks to (folded: Y/PY → Yes, N/PN → No, NI). The rules
model answers every listed SQ as if RoB 2 asked it (``conditional=False``). The
disagreements are pinned in ``KNOWN``: the test fails when one is fixed (update the list)
or a new one appears.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clinex.rob.evidence.reasoning import RulesEvidenceModel
from clinex.rob.schema import fold_response
from clinex.text import Document

SUITES = sorted((Path(__file__).parents[1] / "data" / "rob_phrases").glob("*.jsonl"))
PHRASES = [json.loads(line) for p in SUITES for line in p.read_text(encoding="utf-8").splitlines() if line.strip()]

#: (phrase id, SQ) -> what the rules answer instead, and why.
KNOWN: dict[tuple[str, str], str] = {
    ("d1-045", "1.3"): "NI: group sizes impossible under the blocked design (80 vs 40) are not checked",
    ("d5-007", "5.1"): "PY: a registration number alone counts as registration; the suite says NI without a date",
    ("d5-035", "5.2"): "PN: retrospective registration with the same outcome; the suite says NI",
}


@pytest.fixture(scope="module")
def model() -> RulesEvidenceModel:
    return RulesEvidenceModel()


def test_suites_are_there() -> None:
    assert len(PHRASES) >= 150


def test_phrase_suites(model) -> None:
    wrong = {}
    for ph in PHRASES:
        answers = model.predict(Document(id=ph["id"], text=ph["text"]), conditional=False)
        for sq, expected in ph["expected"].items():
            got = answers[sq].response
            if fold_response(got) != fold_response(expected):
                wrong[(ph["id"], sq)] = f"expected {expected}, got {got}"
    assert set(wrong) == set(KNOWN), {k: v for k, v in wrong.items() if k not in KNOWN}
