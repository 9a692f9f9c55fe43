"""Where a batch run's partitions run: this process, local worker processes, or a Dask cluster.

:func:`run_waves` submits the partitions in waves of ``workers`` (a cluster: its threads)
so that progress can be reported; :func:`_connect` reaches and checks a running Dask
distributed cluster before any task.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from clinex.batch.parts import _run_partition
from clinex.errors import InputError


def _process_pool(workers: int) -> Any:
    """One process pool for the whole run (each worker loads the model once, not once a wave).

    One partition per task hand-out: dask's default bundles 6 ready tasks per process, which
    ran a wave of 2 partitions in one process (bench/pv_medline.py: at most 1 worker alive
    with --workers 2).
    """
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    import dask

    ctx = multiprocessing.get_context(dask.config.get("multiprocessing.context", "spawn"))
    return ProcessPoolExecutor(max_workers=workers, mp_context=ctx)


def _compute_wave(batch: list[Any], sched: Any, workers: int, pool: Any, client: Any,
                  address: str | None) -> list[dict[str, Any]]:
    """Run one wave of partitions (:func:`clinex.batch.parts._run_partition`); their results."""
    import dask
    import dask.bag as db

    bag = db.from_sequence(batch, npartitions=len(batch)).map(_run_partition)
    if client is not None:
        return _compute_on_cluster(bag, client, address)
    if pool is not None:
        with dask.config.set(scheduler=sched, num_workers=workers, pool=pool, chunksize=1):
            return bag.compute()
    with dask.config.set(scheduler=sched, num_workers=workers):
        return bag.compute()


def run_waves(todo: list[Any], workers: int, scheduler: str | None, client: Any,
              on_wave: Callable[[list[Any], list[dict[str, Any]]], None]) -> None:
    """Run the partitions ``todo`` in waves; call ``on_wave(batch, results)`` after each.

    Parameters
    ----------
    todo : list
        :func:`clinex.batch.parts._run_partition` arguments, one per partition.
    workers : int
        Local worker processes (1: this process, synchronously).
    scheduler : str or None
        A Dask scheduler name or cluster address.
    client : distributed.Client or None
        The cluster's client (:func:`_connect`).
    on_wave : callable
        Told each wave's arguments and results (it may raise to stop the run).
    """
    sched: Any = client if client is not None else scheduler or ("sync" if workers <= 1 else "processes")
    wave = max(1, sum(client.nthreads().values()) if client is not None else workers)
    env = {}
    if sched == "processes":  # the cores are split between the workers (clinex.threads)
        from clinex.threads import worker_environment

        env = worker_environment(workers)
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    pool = None
    try:
        if sched == "processes":
            pool = _process_pool(workers)
        for start in range(0, len(todo), wave):
            batch = todo[start : start + wave]
            on_wave(batch, _compute_wave(batch, sched, workers, pool, client, scheduler))
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _clinex_version() -> str:
    """This process's clinex version (run on each cluster worker by :func:`_connect`)."""
    from clinex import __version__

    return __version__


def _connect(address: str, timeout: float) -> Any:
    """A ``distributed.Client`` of the running cluster at ``address``, checked before any task.

    Raises
    ------
    InputError
        ``distributed`` is not installed; the address is malformed or its scheduler cannot be
        reached within ``timeout`` seconds; it has no worker within ``timeout`` seconds; a
        worker cannot import clinex or runs another version. Each names the address.
    """
    try:
        from distributed import Client
    except ModuleNotFoundError:
        raise InputError("a scheduler address needs the 'distributed' package: pip install 'clinex[cluster]'",
                         field="--scheduler") from None
    from clinex import __version__

    try:
        client = Client(address, timeout=timeout, set_as_default=False)
    except ValueError as exc:
        raise InputError(f"not a Dask scheduler address: {address!r} ({exc}); expected tcp://HOST:PORT",
                         field="--scheduler") from None
    except (OSError, TimeoutError):
        raise InputError(f"cannot reach the Dask scheduler at {address} within {timeout:g} s; is `dask scheduler` "
                         "running there, and its port open to this machine?", field="--scheduler") from None
    try:
        try:
            client.wait_for_workers(1, timeout=timeout)
        except TimeoutError:
            raise InputError(f"the Dask scheduler at {address} has no worker (waited {timeout:g} s); start one "
                             f"with: dask worker {address}", field="--scheduler") from None
        for worker, version in sorted(client.run(_clinex_version, on_error="return").items()):
            if isinstance(version, BaseException):
                raise InputError(f"Dask worker {worker} cannot run clinex ({type(version).__name__}: {version}); "
                                 f"install clinex {__version__} there", field="--scheduler")
            if version != __version__:
                raise InputError(f"Dask worker {worker} runs clinex {version}, this is clinex {__version__}; "
                                 "every worker needs the same version", field="--scheduler")
    except BaseException:
        client.close()
        raise
    return client


def _compute_on_cluster(bag: Any, client: Any, address: str) -> list[dict[str, Any]]:
    """``bag.compute()`` on the cluster; a lost connection is an InputError that says to resume."""
    try:
        return list(bag.compute(scheduler=client))
    except OSError as exc:  # distributed's CommClosedError and its kin: the scheduler or a worker went away
        raise InputError(f"lost the Dask cluster at {address} ({type(exc).__name__}: {exc}); the finished parts "
                         "are kept: run the same command again to resume", field="--scheduler") from None
