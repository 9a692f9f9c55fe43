"""Leave-one-document-out benchmark of the RoB evidence models against roger-annotation.

Usage::

    python bench/rob.py [--data DIR] [--models cues,sentence] [--annotator roger-annotation ...]

For each evidence model, every document of the preliminary RoB corpus (10 RCTs) is
predicted by a model that has not seen it (the sentence model is retrained on the
other 9 documents; the cue model is a fixed lexicon) and scored with the counting of
``clinex rob iaa`` (:func:`clinex.rob.iaa.span_agreement` /
:func:`~clinex.rob.iaa.judgement_agreement`: whitespace tokens of each page, a token
carries an SQ when it overlaps a span of it, only pages roger annotated, per-SQ
F1 = 2TP/(2TP+FP+FN), domain = mean of its SQs, mean over the SQs used), with
martin-annotation's agreement with roger as the expert-expert reference. Domain
judgements come from the RoB 2 algorithm applied to the predicted answers and are
compared with roger's document-level judgements (observed agreement, PABAK).
Seconds per trial are prediction times in this process pinned to one CPU core,
plus the time to assess a 20-page trial built from the corpus's own pages.

The corpus defaults to ``../shared/data/rob_preliminary`` beside this checkout (relative
to the repository root), else ``$CLINEX_DATA/rob_preliminary``; ``--data PATH`` names it.
Without a corpus the bench exits 1 with a message naming the places it looked.

Targets (issue 10, for the shipped default ``rules``): mean SQ token F1 >= 0.11
(martin: 0.1087), domain-judgement observed agreement >= 0.45 (martin: 0.25), a
20-page trial in <= 5 s on one core.
The user's path (issue 11, item 6; ``bench/_cli.py``): ``clinex rob assess
tests/data/rob_cases --model M -o OUT`` on the 118 invented trial reports of the test
suite, timed as a subprocess (start-up included, all cores; min / median of
``--cli-runs``), with reports per second and the child's peak RSS (key ``cli``).
The last line is one JSON object (F1 values as fractions, not %).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

TARGETS = {"mean_sq_token_f1": 0.11, "domain_judgement_observed": 0.45, "s_per_20_pages": 5.0}


def _candidates() -> list[Path]:
    """Where the corpus is looked for without --data, in order."""
    from clinex.datasets import data_home

    here = Path(__file__).resolve().parents[1]
    return [here.parent / "shared" / "data" / "rob_preliminary", data_home() / "rob_preliminary"]


def _is_corpus(root: Path) -> bool:
    return (root / "ann.json" / "members" / "roger-annotation").is_dir()


def _default_data() -> Path:
    for cand in _candidates():
        if _is_corpus(cand):
            return cand
    return _candidates()[-1]


def _pin_one_core() -> bool:
    try:
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
        return True
    except (AttributeError, OSError):
        return False


def _twenty_pages(root: Path, n_pages: int = 20):
    """A trial of ``n_pages`` real pages: corpus documents' pages in order, concatenated."""
    from clinex.rob.formats.tagtog import PAGE_SEPARATOR, read_tagtog_document
    from clinex.text import Document, Fragment, Span

    texts: list[str] = []
    for html in sorted((root / "plain.html" / "pool").glob("*.plain.html")):
        doc = read_tagtog_document(html, sentences=False, sections=False)
        texts.extend(p.fragments[0].text for p in doc.pages)
        if len(texts) >= n_pages:
            break
    texts = texts[:n_pages]
    pages, pos = [], 0
    for i, t in enumerate(texts, start=1):
        pages.append(Span(fragments=(Fragment(start=pos, end=pos + len(t), text=t),), label=str(i)))
        pos += len(t) + len(PAGE_SEPARATOR)
    return Document(id="twenty-pages", text=PAGE_SEPARATOR.join(texts), pages=tuple(pages))


def _time_assess(model, doc, repeat: int = 3) -> float:
    from clinex.rob.algorithm import all_domain_risks, overall_risk

    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        answers = model.predict(doc)
        overall_risk(all_domain_risks(answers))
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=None, metavar="PATH",
                    help="the rob_preliminary tagtog export (default: ../shared/data/rob_preliminary "
                         "beside the repository, else $CLINEX_DATA/rob_preliminary)")
    ap.add_argument("--models", default="rules,cues,sentence")
    ap.add_argument("--annotator", action="append", default=None,
                    help="training annotator(s) of the sentence model (default roger-annotation)")
    ap.add_argument("--cli-runs", type=int, default=3, help="timed CLI subprocess runs (0 skips them)")
    args = ap.parse_args()
    root = args.data or _default_data()
    if not _is_corpus(root):
        looked = [root] if args.data else _candidates()
        sys.exit("no rob_preliminary corpus (tagtog export with ann.json/members/roger-annotation) at "
                 + " or ".join(str(p) for p in looked)
                 + "; pass its folder with --data PATH (Zenodo 10.5281/zenodo.7698940)")
    annotators = args.annotator or ["roger-annotation"]
    all_cores = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
    pinned = _pin_one_core()

    from clinex.rob.iaa import compare
    from clinex.rob.lodo import leave_one_document_out
    from clinex.rob.train import train_sentence_model

    summary: dict[str, object] = {"pinned_one_core": pinned, "gold": "roger-annotation",
                                  "targets": TARGETS}
    ref = compare(root / "ann.json" / "members" / "roger-annotation",
                  root / "ann.json" / "members" / "martin-annotation",
                  texts=root / "plain.html" / "pool")
    ref_j = [j for j in ref.judgements if j.scope == "domains"][0]
    summary["martin"] = {
        "mean_sq_token_f1": round(ref.overall_f1 / 100, 4),
        "domain_token_f1": {d.domain: round(d.f1 / 100, 4) for d in ref.domains},
        "domain_judgement_observed": round(ref_j.observed, 4),
        "domain_judgement_pabak": round(ref_j.pabak, 4),
    }
    print(f"martin-annotation vs roger: mean SQ token F1 {ref.overall_f1 / 100:.4f}, "
          f"domain judgements observed {ref_j.observed:.3f}, PABAK {ref_j.pabak:.3f}")
    doc20 = _twenty_pages(root)
    for name in args.models.split(","):
        t0 = time.perf_counter()
        res = leave_one_document_out(root, model=name, train_annotators=annotators)
        wall = time.perf_counter() - t0
        pooled = [j for j in res.judgements if j.scope == "domains"][0]
        overall = [j for j in res.judgements if j.scope == "overall"][0]
        resp = [j for j in res.judgements if j.scope == "responses"]
        if name == "sentence":
            full = train_sentence_model(root, annotators)
        elif name == "rules":
            from clinex.rob.evidence.reasoning import RulesEvidenceModel

            full = RulesEvidenceModel()
        else:
            from clinex.rob.evidence.cues import CueEvidenceModel

            full = CueEvidenceModel()
        s20 = _time_assess(full, doc20)
        print(f"\n== {res.model_name} (LODO, {res.documents} documents, "
              f"{res.tokens} tokens; training annotators: {', '.join(res.train_annotators) or '-'})")
        for d in res.domains:
            print(f"  {d.domain} {d.name:<40s} token F1 {d.f1 / 100:.4f}")
        print("  per SQ: " + ", ".join(f"{s.sq} {s.f1 / 100:.3f}" for s in res.sqs if s.used))
        print(f"  mean SQ token F1          {res.overall_f1 / 100:.4f}  (target >= 0.11)")
        print(f"  domain judgements         observed {pooled.observed:.3f}, PABAK {pooled.pabak:.3f}"
              f" (n={pooled.n}; target observed >= {TARGETS['domain_judgement_observed']})")
        print(f"  overall judgement         observed {overall.observed:.3f} (n={overall.n})")
        if resp:
            print(f"  SQ responses              observed {resp[0].observed:.3f} (n={resp[0].n}; "
                  "SQs both roger and the model answered)")
        print(f"  seconds per trial         {res.seconds_per_trial:.3f} (predict; "
              f"{res.seconds_per_page:.4f} s/page); 20-page trial {s20:.3f} s; "
              f"training {res.train_seconds:.1f} s per fold; LODO wall {wall:.1f} s")
        summary[name] = {
            "model_name": res.model_name,
            "train_annotators": list(res.train_annotators),
            "documents": res.documents,
            "domain_token_f1": {d.domain: round(d.f1 / 100, 4) for d in res.domains},
            "sq_token_f1": {s.sq: round(s.f1 / 100, 4) for s in res.sqs if s.used},
            "mean_sq_token_f1": round(res.overall_f1 / 100, 4),
            "domain_judgement_observed": round(pooled.observed, 4),
            "domain_judgement_pabak": round(pooled.pabak, 4),
            "overall_judgement_observed": round(overall.observed, 4),
            "sq_response_observed": round(resp[0].observed, 4) if resp else None,
            "s_per_trial": round(res.seconds_per_trial, 4),
            "s_per_20_pages": round(s20, 4),
            "train_s_per_fold": round(res.train_seconds, 2),
            "meets_targets": bool(res.overall_f1 / 100 >= TARGETS["mean_sq_token_f1"]
                                  and (pooled.observed or 0) >= TARGETS["domain_judgement_observed"]
                                  and s20 <= TARGETS["s_per_20_pages"]),
        }
    if args.cli_runs > 0:
        if all_cores is not None:
            os.sched_setaffinity(0, all_cores)  # the CLI runs as a user's would
        summary["cli"] = _cli_figures(args.models.split(",")[0], args.cli_runs)
    print(json.dumps(summary))


def _cli_figures(model: str, runs: int) -> dict[str, object]:
    """``clinex rob assess`` on the test suite's 118 invented reports, as a subprocess."""
    from _cli import time_cli

    cases = Path(__file__).resolve().parents[1] / "tests" / "data" / "rob_cases"
    n = len([p for p in cases.iterdir() if p.suffix == ".txt"])
    run = time_cli(lambda tmp: ["rob", "assess", str(cases), "--model", model, "-o", str(tmp / "out")], runs=runs)
    out = {"model": model, "reports": n, "wall_s_min": run["wall_s_min"], "wall_s_median": run["wall_s_median"],
           "reports_per_s": round(n / run["wall_s_median"], 2), "peak_rss_mb": run["peak_rss_mb"]}
    print(f"CLI (subprocess, {n} reports, JSON + HTML + plots, start-up included): wall min "
          f"{run['wall_s_min']:.2f} s / median {run['wall_s_median']:.2f} s = {out['reports_per_s']:.1f} "
          f"reports/s, peak RSS {run['peak_rss_mb']:.0f} MB")
    return out


if __name__ == "__main__":
    main()
