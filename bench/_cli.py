"""Time ``clinex`` as a user runs it: a subprocess on a whole input, start-up included.

Shared by ``bench/pv.py``, ``bench/cohort.py`` and ``bench/rob.py`` (issue 11, item 6).
Each run's wall time is measured around the child process, and its peak resident
memory comes from ``os.wait4`` (the child's own ``ru_maxrss``, not this process's).

:func:`sharing` measures what issue 11 calls "sharing the machine": the same command
twice at once, and once beside a CPU-bound process (a pure-Python busy loop), each
as a share of the single-run rate.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

CLINEX = [sys.executable, "-m", "clinex.cli"]
"""The command line of ``clinex`` in this interpreter (same as the console script)."""


def _spawn(args: Sequence[str], env: dict[str, str] | None) -> tuple[subprocess.Popen, float]:
    proc = subprocess.Popen(
        [*CLINEX, *map(str, args)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        env=dict(os.environ, CLINEX_PROGRESS="0", **(env or {})),
    )
    return proc, time.perf_counter()


def _reap(proc: subprocess.Popen, t0: float) -> dict[str, Any]:
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode("utf-8", "replace") if proc.stderr else ""
    if proc.stderr:
        proc.stderr.close()
    return {"wall_s": wall, "peak_rss_mb": usage.ru_maxrss / 1024, "rc": proc.returncode, "stderr": err[-2000:]}


def run_once(args: Sequence[str], *, env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run ``clinex ARGS`` once; return ``wall_s``, ``peak_rss_mb`` (child's own), ``rc``, ``stderr`` tail.

    Raises
    ------
    RuntimeError
        If the command exits non-zero (its stderr tail is in the message).
    """
    res = _reap(*_spawn(args, env))
    if res["rc"] != 0:
        raise RuntimeError(f"clinex {' '.join(map(str, args))} exited {res['rc']}: {res['stderr']}")
    return res


def time_cli(
    make_args: Callable[[Path], Sequence[str]], *, runs: int = 3, env: dict[str, str] | None = None
) -> dict[str, Any]:
    """Run ``clinex`` ``runs`` times, each with a fresh output path; min / median wall and max RSS.

    Parameters
    ----------
    make_args : callable
        ``make_args(tmp_folder) -> argv`` after ``clinex`` (a new empty folder per run,
        so no run finds the previous one's output).
    runs : int, default 3
    env : dict, optional
        Extra environment variables.

    Returns
    -------
    dict
        ``wall_s_min``, ``wall_s_median``, ``wall_s`` (every run), ``peak_rss_mb`` (largest).
    """
    walls, rss = [], []
    for _ in range(max(1, runs)):
        tmp = Path(tempfile.mkdtemp(prefix="clinex-bench-"))
        try:
            res = run_once(make_args(tmp), env=env)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        walls.append(res["wall_s"])
        rss.append(res["peak_rss_mb"])
    return {
        "wall_s_min": round(min(walls), 3),
        "wall_s_median": round(statistics.median(walls), 3),
        "wall_s": [round(w, 3) for w in walls],
        "peak_rss_mb": round(max(rss), 1),
    }


_BURNER = "import time\nend = time.time() + 600\nwhile time.time() < end:\n    pass\n"


def sharing(
    make_args: Callable[[Path], Sequence[str]], single_wall_s: float, *, env: dict[str, str] | None = None
) -> dict[str, Any]:
    """Share of the single-run rate each run keeps when the machine is shared.

    Two cases: the same command twice at once (``pair``: the slower run's share), and
    the command beside one CPU-bound Python process (``beside_busy``).

    Parameters
    ----------
    make_args : callable
        As in :func:`time_cli`.
    single_wall_s : float
        Wall time of one run alone (e.g. ``wall_s_median`` of :func:`time_cli`).

    Returns
    -------
    dict
        ``pair_wall_s`` (both runs), ``pair_share`` (single wall / slower pair wall),
        ``beside_busy_wall_s``, ``beside_busy_share``. A share of 1.0 means no slow-down;
        issue 11's target is >= 0.40.
    """
    tmps = [Path(tempfile.mkdtemp(prefix="clinex-bench-")) for _ in range(3)]
    try:
        started = [_spawn(make_args(tmps[0]), env), _spawn(make_args(tmps[1]), env)]
        pair = [_reap(p, t0) for p, t0 in started]
        burner = subprocess.Popen([sys.executable, "-c", _BURNER])
        try:
            time.sleep(0.2)
            beside = _reap(*_spawn(make_args(tmps[2]), env))
        finally:
            burner.kill()
            burner.wait()
    finally:
        for t in tmps:
            shutil.rmtree(t, ignore_errors=True)
    for r in (*pair, beside):
        if r["rc"] != 0:
            raise RuntimeError(f"a shared run exited {r['rc']}: {r['stderr']}")
    slow = max(r["wall_s"] for r in pair)
    return {
        "pair_wall_s": [round(r["wall_s"], 3) for r in pair],
        "pair_share": round(single_wall_s / slow, 3),
        "beside_busy_wall_s": round(beside["wall_s"], 3),
        "beside_busy_share": round(single_wall_s / beside["wall_s"], 3),
    }
