"""RoB 2 answers of an evidence model against expert answer keys of invented trial reports.

Usage::

    python bench/rob_cases.py [FOLDER ...] [--models rules,cues]

Each FOLDER holds ``*.txt`` reports with ``*.key.yaml`` answer keys (format in
``docs/rob.md``); the default is ``bench/data/rob_heldout`` (reports the rules were not
tuned on) and ``tests/data/rob_cases`` (the reports they were built on). For each model
the bench prints RoBuster's measures (Dhrangadhariya et al., Database 2023: observed
agreement on the response, exact and folded Y/PY → Yes, N/PN → No, and on the
evidence, fuzzy-matched with rapidfuzz; :mod:`clinex.rob.answer_agreement`) and the
observed agreement of the domain and overall judgements, plus the seconds per report
(whole ``assess``, one process).

Targets (issue 10, held-out reports): domain judgement agreement >= 0.85 and SQ
response agreement >= 0.80. The last line is one JSON object.
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

ROOT = Path(__file__).resolve().parents[1]
TARGETS = {"domain_judgement_observed": 0.85, "sq_response_observed": 0.80}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folders", nargs="*", type=Path,
                    default=[ROOT / "bench" / "data" / "rob_heldout", ROOT / "tests" / "data" / "rob_cases"])
    ap.add_argument("--models", default="rules,cues")
    args = ap.parse_args()

    from clinex.rob.answer_agreement import answer_agreement, assess_gold, load_gold
    from clinex.rob.assess import default_model

    summary: dict[str, object] = {"targets": TARGETS}
    for folder in args.folders:
        if not folder.is_dir():
            sys.exit(f"no such folder of answer keys: {folder}")
        warnings: list[str] = []
        gold = load_gold(folder, warnings=warnings)
        for w in warnings:
            print(f"warning: {w}", file=sys.stderr)
        for name in args.models.split(","):
            model = default_model(name)
            t0 = time.perf_counter()
            preds = assess_gold(gold, model)
            secs = (time.perf_counter() - t0) / max(len(preds), 1)
            rep = answer_agreement(gold, preds)
            o = rep.overall
            n_dom = sum(d.n_judgement for d in rep.domains)
            dom_po = sum((d.po_judgement or 0) * d.n_judgement for d in rep.domains) / max(n_dom, 1)
            print(f"\n== {folder.name}: {name} ({rep.documents} reports)")
            for d in rep.domains:
                print(f"  {d.domain}  SQ response exact {d.po_response_exact:.3f} folded {d.po_response_folded:.3f}"
                      f"  evidence {d.po_extraction if d.po_extraction is None else round(d.po_extraction, 3)}"
                      f"  judgement {d.po_judgement if d.po_judgement is None else round(d.po_judgement, 3)}")
            print(f"  all SQs   exact {o.po_response_exact:.3f} folded {o.po_response_folded:.3f} "
                  f"(n={o.n_response}); evidence {o.po_extraction:.3f} (n={o.n_extraction})")
            print(f"  domain judgements {dom_po:.3f} (n={n_dom}); overall {o.po_judgement:.3f} "
                  f"(n={o.n_judgement}); {secs:.3f} s per report")
            summary[f"{folder.name}/{name}"] = {
                "reports": rep.documents,
                "sq_response_exact": round(o.po_response_exact, 4),
                "sq_response_folded": round(o.po_response_folded, 4),
                "evidence": round(o.po_extraction, 4),
                "domain_judgement_observed": round(dom_po, 4),
                "overall_judgement_observed": round(o.po_judgement, 4),
                "s_per_report": round(secs, 4),
            }
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
