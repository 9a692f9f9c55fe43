"""Thread counts are set deliberately (clinex.threads)."""

from __future__ import annotations

import os

import pytest

from clinex.errors import InputError
from clinex.threads import MAX_DEFAULT_THREADS, cpu_budget, intra_op_threads, worker_environment


def test_default_is_the_affinity_capped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CLINEX_THREADS", raising=False)
    assert cpu_budget() == len(os.sched_getaffinity(0))
    assert intra_op_threads() == min(len(os.sched_getaffinity(0)), MAX_DEFAULT_THREADS)
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: set(range(16)))
    assert intra_op_threads() == 4
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: {3})
    assert intra_op_threads() == 1


def test_env_overrides_and_bad_values_name_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLINEX_THREADS", "3")
    assert intra_op_threads() == 3
    for bad in ("0", "two", "-1"):
        monkeypatch.setenv("CLINEX_THREADS", bad)
        with pytest.raises(InputError, match=f"field 'CLINEX_THREADS': must be a whole number >= 1, got '{bad}'"):
            intra_op_threads()


def test_workers_split_the_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CLINEX_THREADS", raising=False)
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: {0, 1, 2, 3})
    assert worker_environment(2) == {"CLINEX_THREADS": "2", "OMP_NUM_THREADS": "2", "OMP_WAIT_POLICY": "PASSIVE"}
    assert worker_environment(8)["CLINEX_THREADS"] == "1"
    monkeypatch.setenv("CLINEX_THREADS", "3")
    assert worker_environment(2)["OMP_NUM_THREADS"] == "3"
