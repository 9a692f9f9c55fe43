"""How many threads a model may use: one deliberate setting for every surface.

Neural inference (ONNX Runtime, torch) would otherwise start one busy thread per core
in every process; two such processes on a 2-core laptop, or one beside any other
CPU-bound job, then fight over the cores and each runs many times slower than alone
(issue 11 measured 56 -> 3-8 sentences/s). clinex therefore

* gives each process :func:`intra_op_threads` threads: ``$CLINEX_THREADS`` when set,
  else the cores this process may run on (``os.sched_getaffinity``), at most
  :data:`MAX_DEFAULT_THREADS`;
* asks the runtimes not to spin-wait (ONNX Runtime ``allow_spinning=0``;
  ``OMP_WAIT_POLICY=PASSIVE`` for torch's OpenMP), so an idle thread gives its core back;
* splits the cores between Dask worker processes (:func:`worker_environment`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from clinex.errors import InputError

__all__ = ["MAX_DEFAULT_THREADS", "cpu_budget", "intra_op_threads", "worker_environment"]

MAX_DEFAULT_THREADS = 4
"""Default cap: beyond 4 threads one small encoder gains little and starves neighbours."""


def cpu_budget() -> int:
    """Cores this process may run on (its CPU affinity), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not Linux
        return max(1, os.cpu_count() or 1)


def intra_op_threads(environ: Mapping[str, str] | None = None) -> int:
    """Threads one model call may use in this process.

    Parameters
    ----------
    environ : mapping, optional
        Environment to read (default ``os.environ``).

    Returns
    -------
    int
        ``$CLINEX_THREADS`` if set, else ``min(cpu_budget(), MAX_DEFAULT_THREADS)``.

    Raises
    ------
    InputError
        ``$CLINEX_THREADS`` is not a whole number >= 1 (the message names it).
    """
    raw = (os.environ if environ is None else environ).get("CLINEX_THREADS")
    if raw is None or raw.strip() == "":
        return min(cpu_budget(), MAX_DEFAULT_THREADS)
    try:
        value = int(raw)
    except ValueError:
        raise InputError(f"must be a whole number >= 1, got {raw!r}", field="CLINEX_THREADS") from None
    if value < 1:
        raise InputError(f"must be a whole number >= 1, got {raw!r}", field="CLINEX_THREADS")
    return value


def worker_environment(workers: int) -> dict[str, str]:
    """Environment for each of ``workers`` worker processes sharing this machine's cores.

    Each worker gets ``max(1, cpu_budget() // workers)`` threads (``CLINEX_THREADS`` and
    ``OMP_NUM_THREADS``), unless ``$CLINEX_THREADS`` is set, which every worker then uses.

    Parameters
    ----------
    workers : int
        Worker processes that will run at once (>= 1).
    """
    per = os.environ.get("CLINEX_THREADS") or str(max(1, cpu_budget() // max(1, workers)))
    return {"CLINEX_THREADS": per, "OMP_NUM_THREADS": per, "OMP_WAIT_POLICY": "PASSIVE"}
