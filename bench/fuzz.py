"""Mutation fuzzing of every clinex reader: the long profile of tests/io/test_fuzz_readers.py.

For each reader (PHEE JSON, JSON lines, brat, n2c2 XML, notes folders, tagtog, PDF,
JATS, plain text) a child process feeds ``--n`` mutants of a small valid seed
(hypothesis, derandomized: the same mutants on every run, see
``tests/fuzz_harness.py``) to the reader and counts what happened: a result, a
``[CLXnnn]`` clinex error naming the file, any other exception (a traceback: must
be 0), a hang (past ``--time-limit`` seconds). The mutations include the hostile sizes
of issue 21 (``fuzz_harness.HOSTILE_KINDS``: integers of thousands of digits, 10,000
nested brackets, a 1,000,000-character token, multi-megabyte lines, a line repeated
10,000 times, chained PDF filters and a doubly compressed bomb). It prints one line
per reader with mutants, ok (a result), clx (a clinex error), tracebacks, hangs, the
slowest mutant's seconds and the child's peak RSS, then the mutation kinds that gave
a traceback or a hang, the first few bad mutants with their exception, and last one
JSON object with all figures: per reader ``mutants``, ``ok``, ``clx_errors``,
``tracebacks``, ``hangs``, ``peak_rss_mb`` and ``by_kind`` (the same per mutation
kind, ``classic`` for mutants with none of the hostile kinds).

Usage::

    python bench/fuzz.py                       # 2,000 mutants per reader
    python bench/fuzz.py --n 300 --readers pdf,jats -j 2

Exit status 1 when any reader had another exception, a hang or a peak RSS above
``--max-rss-mb``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))


def child(name: str, n: int, time_limit: float, show: int) -> dict:
    """Run ``n`` mutants of reader ``name`` in this process; the figures as a dict."""
    from fuzz_harness import HOSTILE_KINDS, READERS, describe, mutants, mutate, profile, run_mutant
    from hypothesis import given, settings

    reader = READERS[name]
    seed = reader.seed()
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    counts = {"result": 0, "clinex": 0, "other": 0, "hang": 0}
    bad: list[dict] = []
    slowest = [0.0, ""]
    by_kind: dict[str, dict] = {}
    t0 = time.perf_counter()

    @settings(profile("long"), max_examples=n)
    @given(mutant=mutants(seed))
    def fuzz(mutant) -> None:
        out = run_mutant(reader, mutate(seed, mutant), base_limit=time_limit)
        counts[out.kind] += 1
        for k in sorted({op[0] for op in mutant[1]} & set(HOSTILE_KINDS)) or ["classic"]:
            row = by_kind.setdefault(k, {"mutants": 0, "tracebacks": 0, "hangs": 0, "max_seconds": 0.0})
            row["mutants"] += 1
            row["tracebacks"] += out.kind == "other"
            row["hangs"] += out.kind == "hang"
            row["max_seconds"] = round(max(row["max_seconds"], out.seconds), 3)
        if out.seconds > slowest[0]:
            slowest[:] = [out.seconds, describe(mutant)]
        if out.kind in ("other", "hang") and len(bad) < show:
            last = "".join(traceback.format_exception(out.error)[-3:]) if out.error else ""
            bad.append({"kind": out.kind, "mutant": describe(mutant), "seconds": round(out.seconds, 3),
                        "error": out.problem or f"{type(out.error).__name__}: {str(out.error)[:300]}",
                        "where": last[-1500:]})

    fuzz()
    return {
        "reader": name,
        "mutants": sum(counts.values()),
        "ok": counts["result"],
        "clx_errors": counts["clinex"],
        "tracebacks": counts["other"],
        "hangs": counts["hang"],
        "max_seconds": round(slowest[0], 3),
        "slowest_mutant": slowest[1][:300],
        "wall_seconds": round(time.perf_counter() - t0, 1),
        "baseline_rss_mb": round(rss0 / 1024, 1),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "by_kind": dict(sorted(by_kind.items())),
        "bad": bad,
    }


def run_child(name: str, args: argparse.Namespace) -> dict:
    cmd = [sys.executable, __file__, "--child", name, "--n", str(args.n),
           "--time-limit", str(args.time_limit), "--show", str(args.show)]
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    budget = args.n * (args.time_limit + 20) + 120  # 20: the bound's share for the largest mutants
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=budget, env=env, cwd=REPO)
    except subprocess.TimeoutExpired:
        return {"reader": name, "mutants": None, "hangs": 1, "tracebacks": 0,
                "error": f"child ran past {budget:.0f} s (a hang the alarm could not stop)"}
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        return {"reader": name, "mutants": None, "hangs": 0, "tracebacks": 1,
                "error": f"child exited {proc.returncode}: {proc.stderr[-1500:]}"}
    return json.loads(lines[-1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=2000, help="mutants per reader (default 2000)")
    ap.add_argument("--readers", default="", help="comma-separated reader names (default all)")
    ap.add_argument("--time-limit", type=float, default=5.0,
                    help="seconds per mutant, plus 1 s per MiB of its files (default 5)")
    ap.add_argument("--max-rss-mb", type=float, default=1024.0, help="peak RSS bound (default 1024)")
    ap.add_argument("-j", "--jobs", type=int, default=1, help="readers fuzzed at once (default 1)")
    ap.add_argument("--show", type=int, default=3, help="bad mutants shown per reader (default 3)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child, args.n, args.time_limit, args.show)))
        return 0

    from fuzz_harness import READERS

    names = [r for r in args.readers.split(",") if r] or list(READERS)
    unknown = sorted(set(names) - set(READERS))
    if unknown:
        ap.error(f"unknown reader(s) {', '.join(unknown)}; known: {', '.join(READERS)}")
    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        rows = list(pool.map(lambda n: run_child(n, args), names))
    head = f"{'reader':<13} {'mutants':>7} {'ok':>7} {'clx':>7} {'trace':>5} {'hangs':>5} " \
           f"{'max s':>6} {'peak RSS MB':>11}"
    print(head)
    ok = True
    for r in rows:
        if r.get("mutants") is None:
            print(f"{r['reader']:<13} FAILED: {r['error']}")
            ok = False
            continue
        print(f"{r['reader']:<13} {r['mutants']:>7} {r['ok']:>7} {r['clx_errors']:>7} "
              f"{r['tracebacks']:>5} {r['hangs']:>5} {r['max_seconds']:>6.2f} {r['peak_rss_mb']:>11.0f}")
        for kind, k in r["by_kind"].items():
            if k["tracebacks"] or k["hangs"]:
                print(f"  {kind}: {k['tracebacks']} tracebacks, {k['hangs']} hangs of {k['mutants']} mutants "
                      f"(slowest {k['max_seconds']} s)")
        ok &= r["tracebacks"] == 0 and r["hangs"] == 0 and r["peak_rss_mb"] <= args.max_rss_mb
    for r in rows:
        for b in r.get("bad", []):
            print(f"\n{r['reader']} {b['kind']} ({b['seconds']} s): {b['mutant']}\n  {b['error']}\n{b['where']}")
    summary = {
        "mutants_per_reader": args.n,
        "time_limit_s": args.time_limit,
        "wall_seconds": round(time.perf_counter() - t0, 1),
        "total_mutants": sum(r.get("mutants") or 0 for r in rows),
        "tracebacks": sum(r.get("tracebacks") or 0 for r in rows),
        "hangs": sum(r.get("hangs") or 0 for r in rows),
        "max_peak_rss_mb": max((r.get("peak_rss_mb") or 0 for r in rows), default=0),
        "ok": ok,
        "readers": {r["reader"]: {k: v for k, v in r.items() if k not in ("reader", "bad")} for r in rows},
    }
    print(json.dumps(summary))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
