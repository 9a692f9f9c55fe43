"""clinex.pv.gazetteer gives exactly what drug_named_entity_recognition.find_drugs gives."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from clinex.pv.features import tokenize
from clinex.pv.gazetteer import find_drugs

DEV = Path(__file__).resolve().parents[3] / "shared" / "data" / "phee" / "json" / "dev.json"


def _package(words: list[str]) -> list[tuple[str, int, int]]:
    from drug_named_entity_recognition import find_drugs as package_find

    return [(d.get("name"), s, e) for d, s, e in package_find(words, is_ignore_case=True)]


def _ours(words: list[str]) -> list[tuple[str, int, int]]:
    return [(d.get("name"), s, e) for d, s, e in find_drugs(words)]


def test_exact_matches_pairs_first_then_single_tokens() -> None:
    words = ["Rash", "after", "Tylenol", "and", "valproic", "acid", "."]
    got = find_drugs(words)
    assert [(d["name"], s, e, d["matching_string"]) for d, s, e in got] == [
        ("Valproic Acid", 4, 6, "valproic acid"),
        ("Acetaminophen", 2, 3, "Tylenol"),
    ]
    assert got[1][0]["drugbank_id"] == "DB00316"
    assert find_drugs([]) == [] and find_drugs(["the"]) == []


@pytest.mark.skipif(not DEV.is_file(), reason="PHEE dev split not present (../shared/data)")
def test_same_matches_as_the_package_on_every_phee_dev_sentence() -> None:
    from clinex.pv.formats.phee_json import read_phee_json

    n_matches = 0
    for item in read_phee_json(DEV):
        words = [item.text[s:e] for s, e in tokenize(item.text)]
        ours = _ours(words)
        assert ours == _package(words), item.id
        n_matches += len(ours)
    assert n_matches > 900  # the check is not vacuous


def test_reading_the_dictionary_does_not_import_the_package() -> None:
    code = (
        "import sys; from clinex.pv.gazetteer import find_drugs; "
        "print(len(find_drugs(['aspirin'])), 'drug_named_entity_recognition' in sys.modules)"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert res.stdout.split() == ["1", "False"], res.stderr
