"""What the LLM kinds cost per document, measured against the scripted server (no model).

Starts ``tests/llm_server.py`` on a free port of 127.0.0.1, answers every prompt with
a valid empty answer, and runs each task's ``llm`` kind:

* PV: the first ``--pv-n`` sentences of PHEE dev (``/work/shared/data/phee/json/dev.json``),
  zero-shot and with ``--shots`` BM25 demonstrations from PHEE train;
* RoB: one trial report (``tests/data/rob_cases/01_relcomide_cough.txt``);
* cohort: one patient (``/work/shared/data/cohort_synthetic/dev/001.xml``), 13 criteria.

For each: requests and prompt tokens per document, then the cache hit rate of a
rerun, and a token projection (PV: per sentence x 968, the PHEE test split's size).
Tokens are what the scripted server reports: whitespace-separated words of the
messages. Real BPE tokenizers give about 1.3 tokens per English word, so multiply
by that for a server's count. The last line is one JSON object.

Usage::

    python bench/llm.py [--pv-n 50] [--shots 5]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

PHEE = Path("/work/shared/data/phee/json")
RCT = ROOT / "tests" / "data" / "rob_cases" / "01_relcomide_cough.txt"
PATIENT = Path("/work/shared/data/cohort_synthetic/dev/001.xml")
PHEE_TEST_SENTENCES = 968

RULES = [
    {"name": "pv", "match": "Sentence:", "responses": [{"content": {"events": []}}]},
    {"name": "rob", "match": "Signalling question", "responses": [{"content": {"answer": "NI", "evidence": []}}]},
    {"name": "cohort", "match": "Criterion", "responses": [{"content": {"decision": "not met", "evidence": []}}]},
]


def _measure(run, server) -> dict:
    from clinex.llm.client import reset_session_usage, session_usage

    out = {}
    for label in ("first", "rerun"):
        reset_session_usage()
        before = server.stats()["requests"]
        t0 = time.perf_counter()
        run()
        u = session_usage()
        out[label] = {"requests": server.stats()["requests"] - before, "answers": u.calls,
                      "cache_hits": u.cache_hits, "prompt_tokens": u.prompt_tokens,
                      "completion_tokens": u.completion_tokens, "seconds": round(time.perf_counter() - t0, 3)}
    out["cache_hit_rate_rerun"] = round(out["rerun"]["cache_hits"] / max(1, out["rerun"]["answers"]), 4)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pv-n", type=int, default=50)
    ap.add_argument("--shots", type=int, default=5)
    args = ap.parse_args()
    from llm_server import ScriptedServer

    from clinex.cohort.formats.n2c2_xml import read_patient
    from clinex.cohort.llm import LLMCohortModel
    from clinex.pv.formats.phee_json import read_phee_json
    from clinex.pv.models.llm import LLMExtractor
    from clinex.rob.assess import load_trial
    from clinex.rob.evidence.llm import LLMEvidenceModel

    result: dict = {"tokens": "scripted-server words (x1.3 for BPE tokens)"}
    with ScriptedServer() as server, tempfile.TemporaryDirectory() as tmp:
        os.environ.update(CLINEX_LLM_BASE_URL=server.url, CLINEX_LLM_MODEL="scripted",
                          CLINEX_LLM_CACHE=str(Path(tmp) / "cache.sqlite"))
        server.script(RULES)
        sentences = [s.text for s in read_phee_json(PHEE / "dev.json")[: args.pv_n]]
        for label, opts in (("pv_zero_shot", {}),
                            ("pv_few_shot", {"shots": args.shots, "train_file": str(PHEE / "train.json")})):
            model = LLMExtractor(opts)
            r = _measure(lambda m=model: m.predict(sentences), server)
            n = len(sentences)
            per = r["first"]["prompt_tokens"] / n
            r.update(documents=n, requests_per_sentence=round(r["first"]["requests"] / n, 3),
                     prompt_tokens_per_sentence=round(per, 1),
                     projected_prompt_tokens_phee_test=round(per * PHEE_TEST_SENTENCES))
            result[label] = r
        doc = load_trial(RCT)
        rob = LLMEvidenceModel()
        r = _measure(lambda: rob.predict(doc), server)
        r.update(document=RCT.name, characters=len(doc.text), requests_per_document=r["first"]["requests"],
                 prompt_tokens_per_document=r["first"]["prompt_tokens"])
        result["rob_one_rct"] = r
        patient = read_patient(PATIENT)
        cohort = LLMCohortModel("n2c2")
        r = _measure(lambda: cohort.screen(patient), server)
        r.update(patient=patient.id, characters=len(patient.text), records=len(patient.records),
                 requests_per_patient=r["first"]["requests"], prompt_tokens_per_patient=r["first"]["prompt_tokens"])
        result["cohort_one_patient"] = r
    for key in ("pv_zero_shot", "pv_few_shot", "rob_one_rct", "cohort_one_patient"):
        r = result[key]
        print(f"{key}: {r['first']['requests']} requests, {r['first']['prompt_tokens']:,} prompt tokens; "
              f"rerun {r['rerun']['requests']} requests, cache hit rate {r['cache_hit_rate_rerun']:.0%}")
    for key in ("pv_zero_shot", "pv_few_shot"):
        print(f"{key}: {result[key]['prompt_tokens_per_sentence']} prompt tokens/sentence -> "
              f"{result[key]['projected_prompt_tokens_phee_test']:,} for the PHEE test split ({PHEE_TEST_SENTENCES})")
    print(json.dumps(result, sort_keys=True))


if __name__ == "__main__":
    main()
