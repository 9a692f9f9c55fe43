"""Drug → reaction pairs of whole PubMed abstracts: clinex's PV extraction scored on BC5CDR.

Usage::

    python bench/pv_abstracts.py [--split dev|train|both] [--data FOLDER] [--model auto|crf|...]
                                 [--batch-size N] [--cli-runs N] [--limit N] [--no-cross-sentence]

What a drug-safety scientist asks of an abstract: which drugs does it say caused which
reactions? Each abstract of the BioCreative V Chemical-Disease Relation corpus (BC5CDR:
PubMed titles and abstracts, every chemical and disease mention with its MeSH ids, and
the abstract-level chemical-induced-disease (CID) relations; Li et al., Database 2016,
baw068) is one record, title first: ``title + " " + abstract``, the text PubTator's
offsets index. It is extracted as ``clinex pv extract -i abstracts.jsonl`` reads a JSON
line: :func:`clinex.pv.pipeline.extract_records` (a record of several sentences is cut
into its sentences for the model and its events come back with offsets into the
record; the record is then read as one document: an event whose sentence names no drug,
or refers back to one, takes the drug named in an earlier sentence, :mod:`clinex.pv.record`),
``--batch-size`` records per call (default :data:`clinex.pv.pipeline.RECORDS_PER_CALL`).
``--no-cross-sentence`` reads each sentence alone (``extract_records(...,
cross_sentence=False)``, the figures before issue 23 item 1; no CLI run, the CLI always
reads records whole). The events given a drug from another sentence are counted per rule
(key ``resolved_events``, ``resolved.<rule>``).

Pairs. Every asserted ADE (an ``Adverse_event`` without a Negated attribute; a
Speculated one counts, as in :mod:`clinex.pv.counts`) gives its drug spans (the
Treatment's ``Drug`` sub-arguments and Combination drugs; the Treatment itself when it
has none) and its Effect spans. Each predicted span is linked to every gold mention it
overlaps (characters, half-open): a drug span to the Chemical mentions' MeSH ids, an
effect span to the Disease mentions' ('|'-joined ids give several; ``-1`` none). Each
(chemical, disease) of one event is a predicted pair; pairs are unique per abstract.
This is the "gold entities given" setting: mentions and ids come from the corpus, the
relation from clinex. Negated and therapeutic events give no pair.

Metric. The relation score of the BioCreative V CDR task (Wei et al., Database 2016,
baw032): a predicted (chemical MeSH, disease MeSH) pair is a true positive when the
abstract's gold CID relations hold it; precision, recall and F1 micro-averaged over
abstracts (sums of TP, FP and FN; 0 on a zero division: :func:`clinex.metrics.prf`).
The gold pairs are split into *within one sentence* (some sentence of the record, as
the model reads them (:func:`clinex.pv.pipeline.sentence_pieces`), holds a mention of
both concepts) and *across sentences*; for each: how many exist, how many are found,
their recall.

Speed. Abstracts (and sentences) per second of the whole extraction in this process,
after loading the model; and of ``clinex pv extract -i SPLIT.jsonl -o out.json`` as a
subprocess on the whole split converted to the JSON lines it reads (``{"id": PMID,
"text": title + " " + abstract}``), start-up and model load included (``bench/_cli.py``;
median of ``--cli-runs``, 0 skips it). The CLI's pairs are checked to equal the API's
(key ``cli.same_pairs``).

Published figures, printed beside (as reported, on the 500-abstract test set, which
this bench never reads; it scores train and dev): the BioCreative V best team, entities
not given, F1 0.570, the ensemble of teams 0.628 (Wei et al. 2016); systems given the
gold entities about 0.62–0.70. Issue 23's target: F1 >= 0.65 on the held-out test set.

The corpus is ``../shared/data/bc5cdr`` beside this checkout (``--data FOLDER``): when
it is missing the script says so and exits with status 2. BLAS / OpenMP pools are set
to one thread (``OMP_NUM_THREADS`` ...), as in the other benches. The last printed line
is one JSON object.
"""

from __future__ import annotations

import os

if __name__ == "__main__":  # before numpy loads; not when a test imports the scoring functions
    for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(_var, "1")

import argparse
import json
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "bc5cdr"
SPLITS = {"train": "CDR_TrainingSet.PubTator.txt", "dev": "CDR_DevelopmentSet.PubTator.txt"}
PUBLISHED = {
    "bc5_best_team_no_gold_entities_f1": 0.570,
    "bc5_ensemble_no_gold_entities_f1": 0.628,
    "gold_entities_f1_range": [0.62, 0.70],
}
"""Published test-set figures (Wei et al., Database 2016, baw032; gold-entity systems approximate)."""
TARGET_F1 = 0.65
"""Issue 23: pair F1 on the held-out BC5CDR test set."""

Pair = tuple[str, str]


@dataclass(frozen=True)
class Mention:
    """One PubTator mention: half-open offsets into ``title + " " + abstract``."""

    start: int
    end: int
    text: str
    kind: str  # "Chemical" or "Disease"
    ids: tuple[str, ...]  # MeSH ids; '|'-joined ids split, -1 dropped


@dataclass
class Abstract:
    """One PubTator document: title, abstract, mentions and gold CID pairs."""

    pmid: str
    title: str = ""
    abstract: str = ""
    mentions: list[Mention] = field(default_factory=list)
    relations: set[Pair] = field(default_factory=set)

    @property
    def text(self) -> str:
        """``title + " " + abstract``: the text the offsets index, and the record extracted."""
        return self.title + " " + self.abstract


_HEAD = re.compile(r"^([^|\t]+)\|([ta])\|(.*)$")


def parse_pubtator(text: str) -> list[Abstract]:
    """Documents of a PubTator file, in order.

    Lines ``PMID|t|title``, ``PMID|a|abstract``, mention lines ``PMID<TAB>start<TAB>end
    <TAB>text<TAB>Chemical|Disease<TAB>ids[<TAB>...]`` (composite mentions' extra column
    ignored) and relation lines ``PMID<TAB>CID<TAB>chemical<TAB>disease``; blank lines
    between documents.

    Raises
    ------
    ValueError
        For a line of none of these shapes (its line number given).
    """
    docs: dict[str, Abstract] = {}
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        head = _HEAD.match(line)
        if head:
            doc = docs.setdefault(head[1], Abstract(head[1]))
            if head[2] == "t":
                doc.title = head[3]
            else:
                doc.abstract = head[3]
            continue
        cols = line.split("\t")
        if len(cols) >= 4 and cols[1] == "CID":
            docs.setdefault(cols[0], Abstract(cols[0])).relations.add((cols[2], cols[3]))
        elif len(cols) >= 6 and cols[1].isdigit() and cols[2].isdigit():
            ids = tuple(i for i in cols[5].split("|") if i and i != "-1")
            docs.setdefault(cols[0], Abstract(cols[0])).mentions.append(
                Mention(int(cols[1]), int(cols[2]), cols[3], cols[4], ids))
        else:
            raise ValueError(f"line {n}: not a PubTator title, abstract, mention or relation line: {line[:80]!r}")
    return list(docs.values())


def linked_ids(fragments: Iterable[tuple[int, int]], mentions: Iterable[Mention], kind: str) -> set[str]:
    """MeSH ids of the ``kind`` mentions that overlap any of ``fragments`` (half-open).

    >>> m = [Mention(0, 7, "lithium", "Chemical", ("D008094",)), Mention(8, 16, "toxicity", "Disease", ("D064420",))]
    >>> sorted(linked_ids([(3, 9)], m, "Chemical")), sorted(linked_ids([(7, 8)], m, "Disease"))
    (['D008094'], [])
    """
    frags = list(fragments)
    return {i for m in mentions if m.kind == kind and any(s < m.end and m.start < e for s, e in frags) for i in m.ids}


def _frags(span: Any) -> list[tuple[int, int]]:
    return [(f.start, f.end) for f in span.fragments]


def drug_spans(event: Any) -> list[list[tuple[int, int]]]:
    """The drug spans of ``event`` (fragments each): the Treatment's Drug sub-arguments and
    Combination drugs, or its Treatment arguments when it has neither."""
    drugs = [_frags(a.span) for a in event.sub_arguments.get("Treatment", ()) if a.role == "Drug"]
    drugs += [_frags(d.span) for c in event.combinations for d in c.drugs]
    return drugs or [_frags(a.span) for a in event.main("Treatment")]


def effect_spans(event: Any) -> list[list[tuple[int, int]]]:
    """The Effect arguments of ``event`` (fragments each)."""
    return [_frags(a.span) for a in event.main("Effect")]


def is_asserted_ade(event: Any) -> bool:
    """An ``Adverse_event`` without a Negated attribute (speculated ones count)."""
    from clinex.pv.counts import is_asserted

    return event.event_type == "Adverse_event" and is_asserted(event)


def event_pairs(event: Any, mentions: Sequence[Mention]) -> set[Pair]:
    """(chemical, disease) MeSH pairs of one event: its drug spans' Chemical ids × its
    effect spans' Disease ids (empty for a negated or therapeutic event)."""
    if not is_asserted_ade(event):
        return set()
    chems = set().union(*(linked_ids(f, mentions, "Chemical") for f in drug_spans(event)))
    dis = set().union(*(linked_ids(f, mentions, "Disease") for f in effect_spans(event)))
    return {(c, d) for c in chems for d in dis}


def predicted_pairs(events: Iterable[Any], mentions: Sequence[Mention]) -> set[Pair]:
    """Unique pairs of one abstract's events (:func:`event_pairs`)."""
    return set().union(*(event_pairs(ev, mentions) for ev in events))


def within_sentence_pairs(doc: Abstract, sentences: Iterable[tuple[int, int]]) -> set[Pair]:
    """Gold pairs of ``doc`` stated within one sentence: some sentence ``[start, end)``
    overlaps a mention of the chemical and a mention of the disease.

    >>> d = Abstract("1", "Lithium toxicity.", "It was seen.", [Mention(0, 7, "Lithium", "Chemical", ("C",)),
    ...     Mention(8, 16, "toxicity", "Disease", ("D",))], {("C", "D"), ("C", "E")})
    >>> within_sentence_pairs(d, [(0, 17), (18, 30)])
    {('C', 'D')}
    """
    out: set[Pair] = set()
    for s, e in sentences:
        inside = [m for m in doc.mentions if m.start < e and s < m.end]
        chems = {i for m in inside if m.kind == "Chemical" for i in m.ids}
        dis = {i for m in inside if m.kind == "Disease" for i in m.ids}
        out |= {(c, d) for c, d in doc.relations if c in chems and d in dis}
    return out


def score_pairs(
    gold: Mapping[str, set[Pair]], pred: Mapping[str, set[Pair]], within: Mapping[str, set[Pair]] | None = None
) -> dict[str, Any]:
    """Micro-averaged pair precision, recall and F1 over abstracts, and recall within / across sentences.

    Parameters
    ----------
    gold, pred : mapping of PMID to set of (chemical, disease)
        Gold CID pairs and predicted pairs per abstract (an id missing from one side has
        none there).
    within : mapping of PMID to set of (chemical, disease), optional
        The gold pairs stated within one sentence (:func:`within_sentence_pairs`); the
        other gold pairs are across sentences.

    Returns
    -------
    dict
        ``tp``, ``fp``, ``fn``, ``n_gold``, ``n_pred``, ``precision``, ``recall``, ``f1``;
        with ``within``: ``gold_within``, ``gold_across`` (how many), ``found_within``,
        ``found_across`` (true positives of each), ``recall_within``, ``recall_across``
        (0 when there are none).

    Examples
    --------
    >>> s = score_pairs({"1": {("C", "D"), ("C", "E")}}, {"1": {("C", "D"), ("X", "D")}}, {"1": {("C", "D")}})
    >>> s["precision"], s["recall"], s["recall_within"], s["recall_across"]
    (0.5, 0.5, 1.0, 0.0)
    """
    from clinex.metrics import prf

    tp = fp = fn = 0
    n_in = n_across = found_in = found_across = 0
    for pmid in sorted(set(gold) | set(pred)):
        g, p = gold.get(pmid, set()), pred.get(pmid, set())
        hit = g & p
        tp, fp, fn = tp + len(hit), fp + len(p - g), fn + len(g - p)
        if within is not None:
            w = within.get(pmid, set()) & g
            n_in, n_across = n_in + len(w), n_across + len(g - w)
            found_in, found_across = found_in + len(hit & w), found_across + len(hit - w)
    precision, recall, f1 = prf(tp, fp, fn)
    out: dict[str, Any] = {"tp": tp, "fp": fp, "fn": fn, "n_gold": tp + fn, "n_pred": tp + fp,
                           "precision": precision, "recall": recall, "f1": f1}
    if within is not None:
        out.update({
            "gold_within": n_in, "gold_across": n_across, "found_within": found_in, "found_across": found_across,
            "recall_within": found_in / n_in if n_in else 0.0,
            "recall_across": found_across / n_across if n_across else 0.0,
        })
    return out


# --------------------------------------------------------------------------- the run


def _load(data: Path, split: str) -> list[Abstract]:
    names = list(SPLITS) if split == "both" else [split]
    docs: list[Abstract] = []
    for name in names:
        path = data / SPLITS[name]
        if not path.is_file():
            print(f"bench/pv_abstracts.py: no BC5CDR {name} file at {path}; pass --data FOLDER "
                  "(the folder of CDR_TrainingSet.PubTator.txt and CDR_DevelopmentSet.PubTator.txt)", file=sys.stderr)
            sys.exit(2)
        docs += parse_pubtator(path.read_text(encoding="utf-8"))
    return docs


def _cli_figures(args: argparse.Namespace, docs: Sequence[Abstract], api_pairs: Mapping[str, set[Pair]]) -> dict:
    """``clinex pv extract`` as a subprocess on the split as JSON lines: wall time, RSS, same pairs."""
    from _cli import run_once

    from clinex.pv.formats.phee_json import read_phee_json

    by_id = {d.pmid: d for d in docs}
    walls, rss, same = [], [], None
    with tempfile.TemporaryDirectory(prefix="clinex-bench-") as tmp:
        src = Path(tmp) / f"bc5cdr_{args.split}.jsonl"
        src.write_text("".join(json.dumps({"id": d.pmid, "text": d.text}, ensure_ascii=False) + "\n" for d in docs),
                       encoding="utf-8")
        for k in range(args.cli_runs):
            out = Path(tmp) / f"out{k}.json"
            res = run_once(["pv", "extract", "--model", args.model, "--batch-size", str(args.batch_size),
                            "-i", str(src), "-o", str(out)])
            walls.append(res["wall_s"])
            rss.append(res["peak_rss_mb"])
            if k == 0:
                cli_pairs = {it.id: predicted_pairs(it.events, by_id[it.id].mentions) for it in read_phee_json(out)}
                same = cli_pairs == {pmid: api_pairs.get(pmid, set()) for pmid in cli_pairs} and len(cli_pairs) == len(docs)
    wall = statistics.median(walls)
    return {"cli.wall_s_median": round(wall, 2), "cli.wall_s_min": round(min(walls), 2),
            "cli.abstracts_per_s": round(len(docs) / wall, 2), "cli.peak_rss_mb": round(max(rss), 1),
            "cli.runs": len(walls), "cli.same_pairs": same}


def main() -> None:
    from clinex.pv.pipeline import RECORDS_PER_CALL

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--split", choices=["train", "dev", "both"], default="dev")
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA, help="folder of the BC5CDR PubTator files")
    ap.add_argument("--model", default="auto", help="PV model name or folder (default auto, as the CLI)")
    ap.add_argument("--batch-size", type=int, default=RECORDS_PER_CALL, help="records per model call")
    ap.add_argument("--cli-runs", type=int, default=1, help="timed `clinex pv extract` subprocess runs (0 skips)")
    ap.add_argument("--limit", type=int, default=0, help="first N abstracts only (0: all; for a quick look)")
    ap.add_argument("--no-cross-sentence", action="store_true",
                    help="read each sentence alone (no drug taken from another sentence; no CLI run)")
    args = ap.parse_args()
    if args.batch_size < 1:
        ap.error("--batch-size must be >= 1")
    cross = not args.no_cross_sentence
    if not cross:
        args.cli_runs = 0  # `clinex pv extract` always reads a record as one document

    from clinex.pv.models import load_model, model_id
    from clinex.pv.pipeline import extract_records, sentence_pieces

    docs = _load(args.data, args.split)
    if args.limit > 0:
        docs = docs[: args.limit]
    bad = [(d.pmid, m) for d in docs for m in d.mentions if d.text[m.start : m.end] != m.text]
    if bad:
        print(f"warning: {len(bad)} mentions whose offsets do not give their text (first: {bad[0]})", file=sys.stderr)
    records = [(d.pmid, d.text) for d in docs]

    t0 = time.perf_counter()
    model = load_model(args.model)
    extract_records(records[:2], model=model, cross_sentence=cross)  # warm-up: imports, gazetteer, sessions
    load_s = time.perf_counter() - t0
    t = time.perf_counter()
    items = []
    for b in range(0, len(records), args.batch_size):
        items += extract_records(records[b : b + args.batch_size], model=model, cross_sentence=cross)
    secs = time.perf_counter() - t

    gold = {d.pmid: set(d.relations) for d in docs}
    sentences = {d.pmid: [(s, e) for s, e, _ in sentence_pieces(d.text)] for d in docs}
    within = {d.pmid: within_sentence_pairs(d, sentences[d.pmid]) for d in docs}
    by_id = {d.pmid: d for d in docs}
    pred = {it.id: predicted_pairs(it.events, by_id[it.id].mentions) for it in items}
    s = score_pairs(gold, pred, within)
    ades = [ev for it in items for ev in it.events if is_asserted_ade(ev)]
    no_drug = sum(not set().union(*(linked_ids(f, by_id[it.id].mentions, "Chemical") for f in drug_spans(ev)))
                  for it in items for ev in it.events if is_asserted_ade(ev))
    no_effect = sum(not set().union(*(linked_ids(f, by_id[it.id].mentions, "Disease") for f in effect_spans(ev)))
                    for it in items for ev in it.events if is_asserted_ade(ev))
    n_sent = sum(len(v) for v in sentences.values())
    resolved: dict[str, int] = {}
    for it in items:
        for ev in it.events:
            rules = {a.source for a in (*ev.arguments, *(x for v in ev.sub_arguments.values() for x in v))
                     if a.source is not None and a.source.startswith("rule:record.")}
            for rule in rules:
                resolved[rule.removeprefix("rule:")] = resolved.get(rule.removeprefix("rule:"), 0) + 1

    mid = model_id(model)
    print(f"BC5CDR {args.split}: {len(docs)} abstracts, {n_sent} sentences, {s['n_gold']} gold CID pairs "
          f"({s['gold_within']} within one sentence, {s['gold_across']} across sentences)")
    print(f"model {mid}: {len(ades)} asserted ADE events; {no_drug} with no drug span on a gold Chemical, "
          f"{no_effect} with no effect span on a gold Disease")
    print(f"cross-sentence reading {'on' if cross else 'off'}: "
          + (", ".join(f"{n} events given a drug by {r}" for r, n in sorted(resolved.items())) or "no event given a drug")
          + " from another sentence")
    print(f"pairs: {s['n_pred']} predicted, {s['tp']} correct -> precision {s['precision']:.3f}, "
          f"recall {s['recall']:.3f}, F1 {s['f1']:.3f} (micro over abstracts)")
    print(f"recall within one sentence {s['recall_within']:.3f} ({s['found_within']}/{s['gold_within']}), "
          f"across sentences {s['recall_across']:.3f} ({s['found_across']}/{s['gold_across']})")
    print(f"published (test set): BioCreative V best team without gold entities F1 {PUBLISHED['bc5_best_team_no_gold_entities_f1']:.3f}, "
          f"ensemble {PUBLISHED['bc5_ensemble_no_gold_entities_f1']:.3f} (Wei et al., Database 2016); with gold entities "
          f"about {PUBLISHED['gold_entities_f1_range'][0]:.2f}-{PUBLISHED['gold_entities_f1_range'][1]:.2f}; "
          f"issue 23 target F1 >= {TARGET_F1} on test")
    print(f"extraction: {len(docs) / secs:.2f} abstracts/s, {n_sent / secs:.1f} sentences/s "
          f"({secs:.1f} s, one process, batches of {args.batch_size}); model load + warm-up {load_s:.1f} s")
    cli = _cli_figures(args, docs, pred) if args.cli_runs > 0 else {}
    if cli:
        print(f"CLI (subprocess, whole split as JSON lines, start-up included): {cli['cli.abstracts_per_s']:.2f} "
              f"abstracts/s (median wall {cli['cli.wall_s_median']:.1f} s of {cli['cli.runs']}), peak RSS "
              f"{cli['cli.peak_rss_mb']:.0f} MB; same pairs as the API: {cli['cli.same_pairs']}")
    summary = {
        "bench": "pv_abstracts", "split": args.split, "model": mid, "abstracts": len(docs), "sentences": n_sent,
        **{k: round(v, 4) if isinstance(v, float) else v for k, v in s.items()},
        "asserted_ade_events": len(ades), "events_no_linked_drug": no_drug, "events_no_linked_effect": no_effect,
        "cross_sentence": cross, "resolved_events": sum(resolved.values()),
        **{f"resolved.{r}": n for r, n in sorted(resolved.items())},
        "abstracts_per_s": round(len(docs) / secs, 2), "sentences_per_s": round(n_sent / secs, 1),
        "load_s": round(load_s, 2), **cli,
        **{f"published.{k}": v for k, v in PUBLISHED.items()}, "target_f1_test": TARGET_F1,
    }
    sys.stdout.flush()
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
