"""Are the sentences clinex cites as RoB 2 evidence the ones a reviewer would read? (CONSORT-TM)

Usage::

    python bench/rob_consort.py [--models rules,cues] [--corpus PATH] [--errors N]

The corpus is CONSORT-TM (Kilicoglu et al., J Biomed Inform 2021;116:103717): 38 real
RCT articles, ``xml/<PMCID>.xml``, one ``<text>`` and every sentence as a half-open
``charOffset="a-b"`` into it with the CONSORT 2010 items it reports (``selection``).
The default ``--corpus`` is ``../shared/data/consort_tm`` beside the repository; the
files are never copied here (no licence to redistribute).

What is measured
----------------
clinex's :func:`clinex.rob.assess.assess` cites evidence spans for each signalling
question (SQ). A corpus sentence is *cited for SQ q* when a fragment of the evidence
of q's answer shares at least one character with it (overlap matching, not exact
span matching); every response counts except NA (NI answers may carry evidence too).
The CONSORT items that are RoB 2 evidence map to SQs as in the corpus README table
(:data:`ITEM_SQS`): 8a, 8b -> 1.1; 9, 10 -> 1.2; 11a, 11b -> 2.1, 2.2, 4.3;
12a -> 2.6, 3.2; 13a, 13b, 16 -> 2.6, 2.7, 3.1-3.4; 23, 24 -> 5.1. Items 6a, 6b,
12b and 15 of that table are not scored here.

Two views, each counting sentences (TP: labelled and cited; FP: cited, not labelled;
FN: labelled, not cited):

(a) per **item**: gold = sentences labelled with the item; predicted = sentences cited
    for any SQ the item maps to. Micro (TP/FP/FN summed over the 12 items) and macro
    (mean of the per-item figures over the items with a gold or a predicted sentence
    in the split, as sklearn averages over the labels present).
(b) per **group** (the README table rows, :data:`GROUPS`): gold = sentences labelled
    with any item of the group; predicted = sentences cited for the group's SQs.
    This view is the fairer one: one citation for SQ 1.1 cannot say whether the
    sentence reports 8a or 8b, so view (a) counts a sentence labelled 8a only as a
    false positive of 8b, and an SQ shared by several items (2.6, 3.2) is charged to
    each of them.

P, R and F1 come from :func:`clinex.metrics.counts.prf`: any ratio with a zero
denominator is 0 (sklearn's ``zero_division=0.0``). The published figures printed
beside are as reported in the corpus README (not comparable task for task: they
classify every sentence into items, clinex only cites evidence for RoB 2):
Kilicoglu et al. 2021, Methods-section items, micro P 0.82, R 0.63, F1 0.71; Jiang
et al., Sci Rep 2024, all items, sentence-level micro F1 0.71.

Splits and what may be read
---------------------------
``bench/data/rob_consort/HELDOUT.txt`` lists 10 articles held out from any tuning of
the RoB rules; figures are printed for ``tune`` (the other 28), ``heldout`` and
``all``. ``--errors N`` prints, for the **tune split only**, up to N false positives
and N false negatives per group (article id, sentence text cut at 200 characters, the
SQs that cited it or the items it carries): errors of held-out articles are never
printed, so that nobody tunes rules on them.

The rules model learns nothing, so it needs no cross-validation. ``--models`` runs
only models shipped with clinex (:func:`clinex.rob.assess.default_model`), none of
them trained on CONSORT-TM; a model learned from this corpus must be scored
leave-one-document-out (train on 37 articles, score the 38th), never with this
script as it is.

The last line printed is one JSON object: per ``split/model`` the seconds per article
(read + assess, one process, one thread) and, per view, micro P/R/F1 with counts,
macro P/R/F1 (items) and the per-item / per-group figures.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

from clinex.metrics.classification import BinaryCounts  # noqa: E402
from clinex.metrics.counts import prf  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CORPUS = ROOT.parent / "shared" / "data" / "consort_tm"
HELDOUT_FILE = ROOT / "bench" / "data" / "rob_consort" / "HELDOUT.txt"

_FLOW_SQS = ("2.6", "2.7", "3.1", "3.2", "3.3", "3.4")
#: CONSORT 2010 item -> the RoB 2 signalling questions its sentences are evidence for.
ITEM_SQS: dict[str, tuple[str, ...]] = {
    "8a": ("1.1",), "8b": ("1.1",),
    "9": ("1.2",), "10": ("1.2",),
    "11a": ("2.1", "2.2", "4.3"), "11b": ("2.1", "2.2", "4.3"),
    "12a": ("2.6", "3.2"),
    "13a": _FLOW_SQS, "13b": _FLOW_SQS, "16": _FLOW_SQS,
    "23": ("5.1",), "24": ("5.1",),
}
#: The README table rows: group name -> its items.
GROUPS: dict[str, tuple[str, ...]] = {
    "seq": ("8a", "8b"),
    "concealment": ("9", "10"),
    "blinding": ("11a", "11b"),
    "analysis": ("12a",),
    "flow": ("13a", "13b", "16"),
    "registration": ("23", "24"),
}
PUBLISHED = {
    "kilicoglu2021_methods_items": {"p": 0.82, "r": 0.63, "f1": 0.71},
    "jiang2024_sentence_micro": {"f1": 0.71},
}
TEXT_CUT = 200


@dataclass(frozen=True)
class Sentence:
    """One corpus sentence: half-open offsets into ``<text>``, its id and CONSORT items."""

    sid: str
    start: int
    end: int
    items: frozenset[str]


@dataclass(frozen=True)
class Unit:
    """What one row of a view scores: gold items and the SQs whose citations predict them."""

    name: str
    items: frozenset[str]
    sqs: frozenset[str]


@dataclass(frozen=True)
class ArticleResult:
    """One article run through one model: its sentences and which SQs cited which."""

    doc_id: str
    text: str
    sentences: tuple[Sentence, ...]
    cited: Mapping[str, frozenset[int]]  # SQ -> indices into ``sentences``
    seconds: float


def item_units() -> list[Unit]:
    """View (a): one unit per item."""
    return [Unit(i, frozenset({i}), frozenset(sqs)) for i, sqs in ITEM_SQS.items()]


def group_units() -> list[Unit]:
    """View (b): one unit per README row; its SQs are the union of its items' SQs."""
    return [Unit(g, frozenset(items), frozenset(sq for i in items for sq in ITEM_SQS[i]))
            for g, items in GROUPS.items()]


# ---------------------------------------------------------------- reading the corpus
def read_sentences(path: Path) -> tuple[str, str, tuple[Sentence, ...]]:
    """All ``<sentence>`` elements of a CONSORT-TM file (labelled or not): ``(doc_id, text, sentences)``.

    Raises
    ------
    ValueError
        A ``charOffset`` that is not ``a-b`` inside the text (file and sentence named).
    """
    from clinex.io.xmlfile import parse_xml_file

    root = parse_xml_file(path)
    text_el = root.find("text")
    text = "" if text_el is None else (text_el.text or "")
    out = []
    for k, s in enumerate(root.iter("sentence"), start=1):
        sid = s.get("id") or f"#{k}"
        try:
            a, b = (int(x) for x in (s.get("charOffset") or "").split("-"))
        except ValueError:
            raise ValueError(f"{path.name}: sentence {sid}: charOffset {s.get('charOffset')!r} "
                             "is not 'a-b'") from None
        if not 0 <= a <= b <= len(text):
            raise ValueError(f"{path.name}: sentence {sid}: charOffset {a}-{b} outside the text")
        items = frozenset(x.strip() for x in (s.get("selection") or "").split(",") if x.strip())
        out.append(Sentence(sid, a, b, items))
    return (root.get("id") or "").strip() or path.stem, text, tuple(out)


def read_heldout(path: Path = HELDOUT_FILE) -> list[str]:
    """The held-out PMC ids (one a line; blank lines and ``#`` comments skipped)."""
    lines = (ln.split("#", 1)[0].strip() for ln in path.read_text(encoding="utf-8").splitlines())
    return [ln for ln in lines if ln]


# ---------------------------------------------------------------- pure scoring
def cited_sentences(
    sentences: Sequence[Sentence], evidence: Mapping[str, Iterable[tuple[int, int]]]
) -> dict[str, frozenset[int]]:
    """Per SQ, the indices of the sentences that an evidence fragment overlaps (> 0 characters).

    >>> s = [Sentence("S1", 0, 10, frozenset()), Sentence("S2", 11, 20, frozenset({"8a"}))]
    >>> cited_sentences(s, {"1.1": [(9, 12)], "1.2": [(10, 11)]})
    {'1.1': frozenset({0, 1}), '1.2': frozenset()}
    """
    out = {}
    for sq, spans in evidence.items():
        spans = list(spans)
        out[sq] = frozenset(k for k, s in enumerate(sentences)
                            if any(a < s.end and s.start < b for a, b in spans))
    return out


def unit_sets(
    sentences: Sequence[Sentence], cited: Mapping[str, frozenset[int]], unit: Unit
) -> tuple[frozenset[int], frozenset[int]]:
    """``(gold, predicted)`` sentence indices of one unit in one article."""
    gold = frozenset(k for k, s in enumerate(sentences) if s.items & unit.items)
    pred = frozenset(k for sq in unit.sqs for k in cited.get(sq, ()))
    return gold, pred


def set_counts(gold: frozenset[int], pred: frozenset[int]) -> BinaryCounts:
    """TP / FP / FN of two sets of sentences (``tn`` is left 0: unused)."""
    return BinaryCounts(tp=len(gold & pred), fp=len(pred - gold), fn=len(gold - pred))


def article_counts(article: ArticleResult, units: Sequence[Unit]) -> dict[str, BinaryCounts]:
    """Per unit, the counts of one article."""
    return {u.name: set_counts(*unit_sets(article.sentences, article.cited, u)) for u in units}


def sum_counts(
    per_article: Iterable[Mapping[str, BinaryCounts]], units: Sequence[Unit]
) -> dict[str, BinaryCounts]:
    """Per unit, the counts summed over articles."""
    total = {u.name: BinaryCounts() for u in units}
    for counts in per_article:
        for name, c in counts.items():
            total[name] = total[name] + c
    return total


def scores(c: BinaryCounts) -> dict[str, float | int]:
    """``{"p", "r", "f1", "tp", "fp", "fn"}`` of one count (zero division -> 0)."""
    p, r, f1 = prf(c.tp, c.fp, c.fn)
    return {"p": p, "r": r, "f1": f1, "tp": c.tp, "fp": c.fp, "fn": c.fn}


def micro(counts: Mapping[str, BinaryCounts]) -> dict[str, float | int]:
    """Scores of the counts summed over units."""
    return scores(sum(counts.values(), BinaryCounts()))


def macro(counts: Mapping[str, BinaryCounts]) -> dict[str, float | int]:
    """Mean P, R, F1 over the units with a gold or a predicted sentence (``n`` units)."""
    present = [scores(c) for c in counts.values() if c.tp + c.fp + c.fn]
    n = len(present)
    return {k: (sum(s[k] for s in present) / n if n else 0.0) for k in ("p", "r", "f1")} | {"n": n}


def view_report(per_article: Sequence[Mapping[str, BinaryCounts]], units: Sequence[Unit]) -> dict[str, Any]:
    """``{"micro", "macro", "per"}`` of one view over a split's articles."""
    total = sum_counts(per_article, units)
    return {"micro": micro(total), "macro": macro(total), "per": {n: scores(c) for n, c in total.items()}}


# ---------------------------------------------------------------- running clinex
def evidence_offsets(assessment: Any) -> dict[str, list[tuple[int, int]]]:
    """Per SQ, the evidence fragments' offsets, for every answer whose response is not NA."""
    out: dict[str, list[tuple[int, int]]] = {}
    for domain in assessment.domains:
        for ans in domain.answers:
            if ans.response == "NA":
                continue
            out[ans.sq] = [(f.start, f.end) for ev in ans.evidence for f in ev.span.fragments]
    return out


def run_article(path: Path, model: Any) -> ArticleResult:
    """Read one CONSORT-TM article, assess it with ``model`` and find the sentences each SQ cites."""
    from clinex.rob.assess import assess, load_trial

    doc_id, text, sentences = read_sentences(path)
    t0 = time.perf_counter()
    doc = load_trial(path)
    assessment = assess(doc, model)
    seconds = time.perf_counter() - t0
    if doc.text != text:
        raise ValueError(f"{path.name}: the reader's text differs from <text>: offsets would not align")
    cited = cited_sentences(sentences, evidence_offsets(assessment))
    return ArticleResult(doc_id, text, sentences, cited, seconds)


def run_model(paths: Sequence[Path], name: str) -> list[ArticleResult]:
    """Run one shipped model on every article, with progress on stderr."""
    from clinex.progress import Progress
    from clinex.rob.assess import default_model

    model = default_model(name)
    out = []
    with Progress(f"rob_consort {name}", total=len(paths), unit="articles", every_s=10.0) as bar:
        for p in paths:
            out.append(run_article(p, model))
            bar.advance()
    return out


# ---------------------------------------------------------------- errors (tune split only)
def _clip(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= TEXT_CUT else flat[: TEXT_CUT - 1] + "…"


def unit_errors(article: ArticleResult, unit: Unit) -> tuple[list[str], list[str]]:
    """False positive and false negative lines of one unit in one article."""
    gold, pred = unit_sets(article.sentences, article.cited, unit)
    fps, fns = [], []
    for k in sorted(pred - gold):
        s = article.sentences[k]
        sqs = ",".join(sorted(sq for sq in unit.sqs if k in article.cited.get(sq, ())))
        labels = ",".join(sorted(s.items)) or "none"
        fps.append(f"{article.doc_id} {s.sid} cited for {sqs} (items: {labels}): "
                   f"{_clip(article.text[s.start:s.end])}")
    for k in sorted(gold - pred):
        s = article.sentences[k]
        others = ",".join(sorted(sq for sq, ks in article.cited.items() if k in ks)) or "nothing"
        fns.append(f"{article.doc_id} {s.sid} item {','.join(sorted(s.items & unit.items))} "
                   f"(cited for {others}): {_clip(article.text[s.start:s.end])}")
    return fps, fns


def _round_robin(lists: Sequence[list[str]], n: int) -> list[str]:
    """Up to ``n`` lines taken one per article in turn, so that one article does not fill the quota."""
    out: list[str] = []
    depth = 0
    while len(out) < n and any(depth < len(x) for x in lists):
        out.extend(x[depth] for x in lists if depth < len(x))
        depth += 1
    return out[:n]


def print_errors(articles: Sequence[ArticleResult], heldout: set[str], n: int, model: str) -> None:
    """Print up to ``n`` FPs and FNs per group; refuses any held-out article."""
    leaked = sorted(a.doc_id for a in articles if a.doc_id in heldout)
    if leaked:
        raise ValueError(f"refusing to print errors of held-out articles: {leaked}")
    print(f"\n== errors, tune split only: {model} (up to {n} per group and kind)")
    for unit in group_units():
        per = [unit_errors(a, unit) for a in articles]
        for kind, lines in (("FP", _round_robin([p[0] for p in per], n)),
                            ("FN", _round_robin([p[1] for p in per], n))):
            total = sum(len(p[0 if kind == "FP" else 1]) for p in per)
            print(f"  [{unit.name}] {kind} ({total} in all)")
            for line in lines:
                print(f"    {line}")


# ---------------------------------------------------------------- report
def _fmt(s: Mapping[str, float | int]) -> str:
    counts = f"  TP {s['tp']:4d} FP {s['fp']:4d} FN {s['fn']:4d}" if "tp" in s else ""
    return f"P {s['p']:.3f} R {s['r']:.3f} F1 {s['f1']:.3f}{counts}"


def split_report(articles: Sequence[ArticleResult]) -> dict[str, Any]:
    """Both views and the seconds per article of one split."""
    items, groups = item_units(), group_units()
    return {
        "articles": len(articles),
        "s_per_article": sum(a.seconds for a in articles) / max(len(articles), 1),
        "items": view_report([article_counts(a, items) for a in articles], items),
        "groups": view_report([article_counts(a, groups) for a in articles], groups),
    }


def print_split(split: str, model: str, rep: Mapping[str, Any]) -> None:
    print(f"\n== {split}: {model} ({rep['articles']} articles, {rep['s_per_article']:.2f} s per article)")
    print("  (a) per item")
    for name, s in rep["items"]["per"].items():
        print(f"    {name:>4} {','.join(ITEM_SQS[name]):<23} {_fmt(s)}")
    print(f"    micro {_fmt(rep['items']['micro'])}")
    print(f"    macro {_fmt(rep['items']['macro'])} (over {rep['items']['macro']['n']} items)")
    print("  (b) per group")
    for name, s in rep["groups"]["per"].items():
        print(f"    {name:<12} {_fmt(s)}")
    print(f"    micro {_fmt(rep['groups']['micro'])}")
    print("  published (as reported): Kilicoglu 2021 Methods items micro P 0.82 R 0.63 F1 0.71; "
          "Jiang 2024 sentence-level micro F1 0.71")


def _rounded(obj: Any) -> Any:
    if isinstance(obj, float):
        return round(obj, 4)
    if isinstance(obj, dict):
        return {k: _rounded(v) for k, v in obj.items()}
    return obj


def json_entry(rep: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON summary of one split and model."""
    return _rounded({
        "articles": rep["articles"],
        "s_per_article": rep["s_per_article"],
        "items": {"micro": rep["items"]["micro"], "macro": rep["items"]["macro"],
                  "per_item": rep["items"]["per"]},
        "groups": {"micro": rep["groups"]["micro"], "per_group": rep["groups"]["per"]},
    })


def corpus_files(corpus: Path) -> list[Path]:
    """The corpus's ``xml/*.xml`` files, sorted; exits with a message if there are none."""
    files = sorted((corpus / "xml").glob("*.xml"))
    if not files:
        sys.exit(f"no CONSORT-TM corpus at {corpus} (expected {corpus / 'xml'}/<PMCID>.xml); "
                 f"name it with --corpus PATH")
    return files


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default="rules", help="comma list of shipped evidence models (default rules)")
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS,
                    help="CONSORT-TM folder holding xml/ "
                         "(default ../shared/data/consort_tm beside the repository)")
    ap.add_argument("--errors", type=int, default=0, metavar="N",
                    help="print up to N false positives and N false negatives per group, tune split only")
    args = ap.parse_args(argv)

    from clinex.errors import ClinexError

    files = corpus_files(args.corpus)
    heldout = set(read_heldout())
    missing = sorted(heldout - {p.stem for p in files})
    if missing:
        print(f"warning: held-out ids not in the corpus: {', '.join(missing)}", file=sys.stderr)
    summary: dict[str, Any] = {"published": PUBLISHED}
    for name in [m.strip() for m in args.models.split(",") if m.strip()]:
        try:
            results = run_model(files, name)
        except ClinexError as exc:
            sys.exit(f"{type(exc).__name__}: {exc}")
        splits = {
            "tune": [a for a in results if a.doc_id not in heldout],
            "heldout": [a for a in results if a.doc_id in heldout],
            "all": results,
        }
        for split, articles in splits.items():
            rep = split_report(articles)
            print_split(split, name, rep)
            summary[f"{split}/{name}"] = json_entry(rep)
        if args.errors > 0:
            print_errors(splits["tune"], heldout, args.errors, name)
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
