"""RoB 2 agreement on real publications: clinex against two blind reviewers, and the reviewers with each other.

Usage::

    python bench/rob_consort_keys.py [--keys bench/data/rob_consort] [--corpus ../shared/data/consort_tm]
                                     [--models rules]

``KEYS/a`` and ``KEYS/b`` hold two independent answer keys per trial (``<PMCID>.key.yaml``,
format of ``docs/rob.md``); the trials are CONSORT-TM articles (``CORPUS/xml/<PMCID>.xml``,
read as ``clinex rob assess`` reads them). Measures are RoBuster's observed agreement
(Dhrangadhariya et al., Database 2023; :mod:`clinex.rob.answer_agreement`): signalling-question
responses exact and folded (Y/PY -> Yes, N/PN -> No), evidence (a cited text fuzzy-matches
a reviewer's quote, ``partial_ratio`` >= 80), domain and overall judgements. Reported:

* ``reviewers``: key b against key a (the ceiling a tool can be expected to reach);
* per model and per reviewer, clinex's agreement, beside the **all-Low baseline** (every
  domain and the overall judged Low) that issue 22 asks to beat;
* the ``pooled`` figures: clinex against both keys, every (trial, reviewer) pair counted.

These ten trials were set aside before any tuning of the rules on CONSORT-TM text
(``KEYS/README.md``); print figures, never tune on them. ``--pred`` scores saved
``*.rob.json`` instead (the figures of an earlier version: run its ``clinex rob assess``). The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

ROOT = Path(__file__).resolve().parents[1]
DOMAINS = ("D1", "D2", "D3", "D4", "D5")


def key_vs_key(a: dict, b: dict) -> dict[str, float]:
    """Observed agreement of two reviewers' keys (same measures as against clinex).

    Parameters
    ----------
    a, b : dict of str to GoldDocument
        By trial id; only trials in both are counted.

    Returns
    -------
    dict
        ``sq_exact``, ``sq_folded``, ``evidence`` (b's quotes matching a's, over the
        (trial, SQ) pairs where both quote), ``domains``, ``overall`` and ``n_trials``.
    """
    from clinex.rob.answer_agreement import evidence_matches, fold_response

    ids = sorted(set(a) & set(b))
    sq = fold = n_sq = ev = n_ev = dom = n_dom = ov = 0
    for i in ids:
        ga, gb = a[i], b[i]
        for q, ra in ga.responses.items():
            rb = gb.responses.get(q)
            n_sq += 1
            sq += ra == rb
            fold += fold_response(ra) == fold_response(rb)
            if ga.evidence.get(q) and gb.evidence.get(q):
                n_ev += 1
                ev += evidence_matches(ga.evidence[q], gb.evidence[q])
        for d in DOMAINS:
            n_dom += 1
            dom += ga.judgements.get(d) == gb.judgements.get(d)
        ov += ga.judgements.get("overall") == gb.judgements.get("overall")
    return {"n_trials": len(ids), "sq_exact": round(sq / max(n_sq, 1), 4),
            "sq_folded": round(fold / max(n_sq, 1), 4), "evidence": round(ev / max(n_ev, 1), 4),
            "domains": round(dom / max(n_dom, 1), 4), "overall": round(ov / max(len(ids), 1), 4)}


def all_low(gold: dict) -> dict[str, float]:
    """Agreement of judging every domain and the overall Low (issue 22's baseline)."""
    n = len(gold)
    dom = sum(g.judgements.get(d) == "Low" for g in gold.values() for d in DOMAINS)
    ov = sum(g.judgements.get("overall") == "Low" for g in gold.values())
    return {"domains": round(dom / max(5 * n, 1), 4), "overall": round(ov / max(n, 1), 4)}


def model_vs_key(gold: dict, preds: dict) -> dict[str, float]:
    """clinex's answers against one reviewer's keys (:func:`answer_agreement`)."""
    from clinex.rob.answer_agreement import answer_agreement

    rep = answer_agreement(gold, preds)
    o = rep.overall
    n_dom = sum(d.n_judgement for d in rep.domains)
    dom = sum((d.po_judgement or 0) * d.n_judgement for d in rep.domains) / max(n_dom, 1)
    return {"sq_exact": round(o.po_response_exact, 4), "sq_folded": round(o.po_response_folded, 4),
            "evidence": round(o.po_extraction, 4), "domains": round(dom, 4),
            "overall": round(o.po_judgement, 4),
            "per_domain": {d.domain: round(d.po_judgement or 0, 4) for d in rep.domains}}


def _pooled(parts: list[tuple[dict, int]]) -> dict[str, float]:
    total = sum(n for _, n in parts)
    keys = ("sq_exact", "sq_folded", "evidence", "domains", "overall")
    return {k: round(sum(p[k] * n for p, n in parts) / max(total, 1), 4) for k in keys}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--keys", type=Path, default=ROOT / "bench" / "data" / "rob_consort")
    ap.add_argument("--corpus", type=Path, default=ROOT.parent / "shared" / "data" / "consort_tm")
    ap.add_argument("--models", default="rules")
    ap.add_argument("--pred", type=Path, default=None,
                    help="a folder of *.rob.json (clinex rob assess output, e.g. of an earlier "
                         "version) to score instead of running --models")
    args = ap.parse_args()
    xml = args.corpus / "xml"
    if not xml.is_dir():
        sys.exit(f"no CONSORT-TM articles at {xml} (pass --corpus)")

    from clinex.rob.answer_agreement import assess_gold, load_answer_keys, load_predictions
    from clinex.rob.assess import default_model

    keys = {r: load_answer_keys(args.keys / r, texts=xml) for r in ("a", "b")}
    summary: dict[str, object] = {"reviewers": key_vs_key(keys["a"], keys["b"])}
    print(f"reviewer b vs reviewer a ({summary['reviewers']['n_trials']} trials): {summary['reviewers']}")
    for r, gold in keys.items():
        summary[f"all_low/{r}"] = all_low(gold)
    summary["all_low/pooled"] = _pooled([(summary[f"all_low/{r}"] | {"sq_exact": 0, "sq_folded": 0,
                                                                     "evidence": 0}, len(keys[r]))
                                         for r in keys])
    for name in (["pred"] if args.pred else args.models.split(",")):
        preds = (load_predictions(args.pred) if args.pred
                 else assess_gold(keys["a"], default_model(name)))
        parts = []
        for r, gold in keys.items():
            res = model_vs_key(gold, preds)
            summary[f"{name}/{r}"] = res
            parts.append((res, len(gold)))
            print(f"{name} vs reviewer {r}: {res}  (all-Low: {summary[f'all_low/{r}']})")
        summary[f"{name}/pooled"] = _pooled(parts)
        print(f"{name} pooled: {summary[f'{name}/pooled']}  (all-Low: "
              f"{ {k: summary['all_low/pooled'][k] for k in ('domains', 'overall')} })")
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
