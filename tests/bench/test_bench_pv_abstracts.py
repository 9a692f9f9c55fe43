"""bench/pv_abstracts.py: PubTator parsing, span linking and pair scoring, by hand.

A tiny PubTator text written here (no corpus needed); the check on the real BC5CDR dev
file is skipped when ``../shared/data/bc5cdr`` is absent.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest

from clinex.pv.pipeline import sentence_pieces
from clinex.pv.types import Argument, Attribute, Combination, Event
from clinex.text import Span

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "pv_abstracts.py"
_spec = importlib.util.spec_from_file_location("pv_abstracts", SCRIPT)
assert _spec is not None and _spec.loader is not None
bench = importlib.util.module_from_spec(_spec)
sys.modules["pv_abstracts"] = bench  # dataclasses look their module up
_spec.loader.exec_module(bench)

PUBTATOR = """\
111|t|Lithium toxicity in a newborn.
111|a|The drug also caused cyanosis. Haloperidol was given for agitation.
111\t0\t7\tLithium\tChemical\tD008094
111\t8\t16\ttoxicity\tDisease\tD064420
111\t52\t60\tcyanosis\tDisease\tD003490
111\t62\t73\tHaloperidol\tChemical\tD006220
111\t88\t97\tagitation\tDisease\tD011595
111\tCID\tD008094\tD064420
111\tCID\tD008094\tD003490

222|t|Cisplatin nephrotoxicity and ototoxicity.
222|a|No neutropenia was seen.
222\t0\t9\tCisplatin\tChemical\tD002945
222\t10\t24\tnephrotoxicity\tDisease\tD007674|D006311\tnephrotoxicity|kidney disease
222\t29\t40\tototoxicity\tDisease\t-1
222\tCID\tD002945\tD007674
"""


@pytest.fixture(scope="module")
def docs() -> dict[str, object]:
    return {d.pmid: d for d in bench.parse_pubtator(PUBTATOR)}


def _ev(text: str, etype: str, trigger: tuple[int, int], *, treatment: tuple[int, int] | None = None,
        drug: tuple[int, int] | None = None, combo: tuple[int, int] | None = None,
        effect: tuple[int, int] | None = None, negated: bool = False) -> Event:
    sp = lambda o: Span.from_offsets(text, o)  # noqa: E731
    args = tuple(Argument(role=r, span=sp(o)) for r, o in (("Treatment", treatment), ("Effect", effect)) if o)
    subs = {"Treatment": (Argument(role="Drug", span=sp(drug)),)} if drug else {}
    combos = (Combination(drugs=(Argument(role="Drug", span=sp(combo)),)),) if combo else ()
    attrs = (Attribute(name="Negated", value=True, cue=sp(trigger)),) if negated else ()
    return Event(event_type=etype, trigger=sp(trigger), arguments=args, sub_arguments=subs,
                 combinations=combos, attributes=attrs)


def test_parse_pubtator(docs) -> None:
    a, b = docs["111"], docs["222"]
    assert a.text == "Lithium toxicity in a newborn. The drug also caused cyanosis. Haloperidol was given for agitation."
    assert all(d.text[m.start : m.end] == m.text for d in (a, b) for m in d.mentions)
    assert a.relations == {("D008094", "D064420"), ("D008094", "D003490")}
    # '|'-joined ids give several (the composite's extra column ignored); -1 gives none
    assert [m.ids for m in b.mentions] == [("D002945",), ("D007674", "D006311"), ()]
    with pytest.raises(ValueError, match="line 2: not a PubTator"):
        bench.parse_pubtator("1|t|T.\nnonsense line\n")


def test_linking_by_overlap(docs) -> None:
    m = docs["111"].mentions
    assert bench.linked_ids([(0, 16)], m, "Chemical") == {"D008094"}  # "Lithium toxicity": one chemical
    assert bench.linked_ids([(0, 16)], m, "Disease") == {"D064420"}
    assert bench.linked_ids([(6, 9)], m, "Disease") == {"D064420"}  # partial overlap links
    assert bench.linked_ids([(7, 8)], m, "Chemical") == set()  # touching is not overlapping (half-open)
    assert bench.linked_ids([(31, 39)], m, "Chemical") == set()  # "The drug": no gold mention
    assert bench.linked_ids([(0, 3), (62, 65)], m, "Chemical") == {"D008094", "D006220"}  # discontinuous span
    assert bench.linked_ids([(10, 40)], docs["222"].mentions, "Disease") == {"D007674", "D006311"}


def test_pairs_of_events(docs) -> None:
    a, b = docs["111"], docs["222"]
    ade = "Adverse_event"
    events_a = [
        _ev(a.text, ade, (8, 16), treatment=(0, 7), drug=(0, 7), effect=(8, 16)),  # lithium -> toxicity
        _ev(a.text, ade, (45, 51), treatment=(31, 39), effect=(52, 60)),  # "The drug" -> cyanosis: no chemical
        _ev(a.text, "Potential_therapeutic_event", (74, 83), treatment=(62, 73), effect=(88, 97)),  # no pair
        _ev(a.text, ade, (45, 51), treatment=(62, 73), effect=(52, 60), negated=True),  # negated: no pair
        # a Combination drug counts as a drug: haloperidol -> cyanosis (wrong, a false positive)
        _ev(a.text, ade, (45, 51), treatment=(31, 39), combo=(62, 73), effect=(52, 60)),
    ]
    assert [bench.event_pairs(e, a.mentions) for e in events_a] == [
        {("D008094", "D064420")}, set(), set(), set(), {("D006220", "D003490")}]
    assert bench.predicted_pairs(events_a, a.mentions) == {("D008094", "D064420"), ("D006220", "D003490")}
    # no Drug sub-argument: the Treatment span itself is linked; one effect on two ids gives two pairs
    ev_b = _ev(b.text, ade, (10, 24), treatment=(0, 9), effect=(10, 40))
    assert bench.predicted_pairs([ev_b, ev_b], b.mentions) == {("D002945", "D007674"), ("D002945", "D006311")}


def test_within_and_across_sentences(docs) -> None:
    a = docs["111"]
    sents = [(s, e) for s, e, _ in sentence_pieces(a.text)]
    assert sents == [(0, 30), (31, 61), (62, 98)]
    # lithium and toxicity share the title; lithium and cyanosis never share a sentence
    assert bench.within_sentence_pairs(a, sents) == {("D008094", "D064420")}
    assert bench.within_sentence_pairs(a, [(0, len(a.text))]) == a.relations


def test_score_by_hand(docs) -> None:
    gold = {k: d.relations for k, d in docs.items()}
    pred = {"111": {("D008094", "D064420"), ("D006220", "D003490")},
            "222": {("D002945", "D007674"), ("D002945", "D006311")}}
    within = {k: bench.within_sentence_pairs(d, [(s, e) for s, e, _ in sentence_pieces(d.text)])
              for k, d in docs.items()}
    assert within == {"111": {("D008094", "D064420")}, "222": {("D002945", "D007674")}}
    s = bench.score_pairs(gold, pred, within)
    # TP 2, FP 2, FN 1 (lithium -> cyanosis, across sentences): P 1/2, R 2/3, F1 4/7
    assert {k: s[k] for k in ("tp", "fp", "fn", "n_gold", "n_pred")} == {"tp": 2, "fp": 2, "fn": 1, "n_gold": 3,
                                                                          "n_pred": 4}
    assert (s["precision"], s["recall"]) == (0.5, pytest.approx(2 / 3))
    assert s["f1"] == pytest.approx(float(Fraction(4, 7)))
    assert {k: s[k] for k in ("gold_within", "gold_across", "found_within", "found_across")} == {
        "gold_within": 2, "gold_across": 1, "found_within": 2, "found_across": 0}
    assert (s["recall_within"], s["recall_across"]) == (1.0, 0.0)
    # an abstract only one side names counts as empty on the other; nothing at all is 0, not an error
    s = bench.score_pairs({"9": {("C", "D")}}, {"8": {("C", "D")}})
    assert (s["tp"], s["fp"], s["fn"], s["f1"]) == (0, 1, 1, 0.0) and "recall_within" not in s
    assert bench.score_pairs({}, {}, {})["recall_across"] == 0.0


def test_missing_corpus_exits_2(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, str(SCRIPT), "--data", str(tmp_path), "--cli-runs", "0"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"bench/pv_abstracts.py: no BC5CDR dev file at {tmp_path / bench.SPLITS['dev']}")
    assert "Traceback" not in proc.stderr


def test_real_dev_file_parses_and_splits(shared_data: Path) -> None:
    path = shared_data / "bc5cdr" / bench.SPLITS["dev"]
    if not path.is_file():
        pytest.skip("no BC5CDR dev file")
    docs = bench.parse_pubtator(path.read_text(encoding="utf-8"))
    assert len(docs) == 500 and sum(len(d.relations) for d in docs) == 1012
    assert all(d.text[m.start : m.end] == m.text for d in docs for m in d.mentions)
    within = sum(len(bench.within_sentence_pairs(d, [(s, e) for s, e, _ in sentence_pieces(d.text)])) for d in docs)
    assert within == 767  # about a quarter of the pairs are never stated within one sentence
