"""Check RoB 2 answer keys: all 22 responses, judgements equal the RoB 2 algorithm, evidence verbatim.

Usage::

    python bench/check_rob_key.py KEY.key.yaml [...] [--texts DIR]

Each key is read with :func:`clinex.rob.answer_agreement.read_answer_key` (the format of
``docs/rob.md``, "Answer keys"). Its report is the ``.txt`` beside it or, with
``--texts``, ``DIR/<id>.txt`` / ``DIR/<id>.xml`` (a CONSORT-TM article: its ``<text>``).
The checks:

* the domain judgements equal the RoB 2 algorithm on the responses
  (:func:`clinex.rob.algorithm.all_domain_risks`, RoB 2 guidance of 22 August 2019) and
  the overall judgement equals :func:`clinex.rob.algorithm.overall_risk` on them;
* every evidence string occurs in the report text after whitespace runs become one
  space (the quotes are the reviewer's, verbatim).

It never runs an evidence model, so a reviewer writing a blind key can use it. Prints one
line per problem, then one JSON object (``keys``, ``problems``); exit 1 on any problem.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def report_text(key: Path, doc_id: str, texts: Path | None) -> str | None:
    """The report a key is about: ``<key>.txt`` beside it, or ``texts/<id>.txt|.xml``."""
    from clinex.rob.formats.load import load_document

    candidates = [key.with_name(key.name[: -len(".key.yaml")] + ".txt")]
    if texts is not None:
        candidates += [texts / f"{doc_id}.txt", texts / f"{doc_id}.xml"]
    for c in candidates:
        if c.is_file():
            return load_document(c).text
    return None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("keys", nargs="+", type=Path)
    ap.add_argument("--texts", type=Path, default=None)
    args = ap.parse_args()

    from clinex.errors import ClinexError
    from clinex.rob.algorithm import all_domain_risks, overall_risk
    from clinex.rob.answer_agreement import read_answer_key

    problems: list[str] = []
    for key in args.keys:
        try:
            gold = read_answer_key(key)
        except ClinexError as exc:
            problems.append(str(exc))
            continue
        domains = all_domain_risks(gold.responses)
        for d, level in domains.items():
            if gold.judgements.get(d) != level:
                problems.append(f"{key}: {d} is {gold.judgements.get(d)!r} but the RoB 2 algorithm "
                                f"on the responses gives {level!r}")
        overall = overall_risk(domains)
        if gold.judgements.get("overall") != overall:
            problems.append(f"{key}: overall is {gold.judgements.get('overall')!r} but the domains "
                            f"give {overall!r}")
        text = report_text(key, gold.doc_id, args.texts)
        if text is None:
            problems.append(f"{key}: no report text found for id {gold.doc_id!r}")
            continue
        flat = _norm(text).casefold()
        for sq, quotes in gold.evidence.items():
            for q in quotes:
                if _norm(q).casefold() not in flat:
                    problems.append(f"{key}: evidence for {sq} is not verbatim in the report: {q!r}")
    for p in problems:
        print(p)
    print(json.dumps({"keys": len(args.keys), "problems": len(problems)}))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
