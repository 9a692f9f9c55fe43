"""bench/pv_medline.py: the MEDLINE XML it builds reads back with clinex's reader; projection arithmetic.

Three tiny abstracts written here (no corpus, no model, no subprocess).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from clinex.io.medline import iter_medline

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "pv_medline.py"
_spec = importlib.util.spec_from_file_location("pv_medline", SCRIPT)
assert _spec is not None and _spec.loader is not None
bench = importlib.util.module_from_spec(_spec)
sys.modules["pv_medline"] = bench
_spec.loader.exec_module(bench)

DOCS = [
    bench.Doc("111", "Lithium toxicity in a newborn.", "The drug also caused cyanosis & <b>rash</b>.",
              (("D008094", "Lithium"), ("D003490", "cyanosis"))),
    bench.Doc("222", "Cisplatin nephrotoxicity.", "No neutropenia was seen."),
    bench.Doc("333", "Rash after amoxicillin \"AMX\".", "A boy had a rash; it resolved."),
]


@pytest.mark.parametrize("compress", [False, True])
def test_xml_reads_back(tmp_path: Path, compress: bool) -> None:
    path = tmp_path / ("m.xml.gz" if compress else "m.xml")
    assert bench.write_medline(DOCS, path, compress=compress) == 3
    errors: list = []
    cits = list(iter_medline(path, on_error=errors.append))
    assert errors == []
    assert [c.pmid for c in cits] == ["111", "222", "333"]
    assert [c.text for c in cits] == [d.title + " " + d.abstract for d in DOCS]
    assert cits[0].mesh_headings == ("Lithium", "cyanosis")
    assert cits[0].publication_types == ("Journal Article",)
    assert cits[0].year == 1990 + 111 % 30


def test_cycling_gives_new_pmids(tmp_path: Path) -> None:
    path = tmp_path / "m.xml"
    assert bench.write_medline(bench.plan(DOCS, 7), path) == 7
    errors: list = []
    cits = list(iter_medline(path, on_error=errors.append))
    assert errors == []
    assert [c.pmid for c in cits] == ["111", "222", "333", "100000111", "100000222", "100000333", "200000111"]
    assert cits[3].text == cits[0].text


def test_projection_arithmetic() -> None:
    # 2 workers x 5 s + 1 s of summary over 100 abstracts = 0.11 core-s each
    rate = bench.core_s_per_abstract(100, 5.0, 2, 1.0)
    assert rate == pytest.approx(0.11)
    # 26e6 x 0.11 / 3600 = 794.44 core-hours; x 0.05 USD = 39.72 USD
    p = bench.project(26_000_000, rate, 0.05)
    assert p == {"citations": 26_000_000, "core_hours": 794.44, "cost_usd": 39.72}
    # 1.5e6 x 0.2 / 3600 = 83.33 core-hours; x 0.10 = 8.33
    assert bench.project(1_500_000, 0.2, 0.10) == {"citations": 1_500_000, "core_hours": 83.33, "cost_usd": 8.33}
