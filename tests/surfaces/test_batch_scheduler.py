"""`clinex batch --scheduler tcp://HOST:PORT`: a real Dask distributed cluster on 127.0.0.1 gives
the local run's results row for row; resume works there too; a bad address is a clear error in time."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

import pytest

from clinex.batch import read_results

distributed = pytest.importorskip("distributed")

RECORDS = [
    ("a", "A 54-year-old man, treated with amiodarone, developed thyrotoxicosis."),
    ("b", "Gynaecomastia is a rarely reported adverse drug reaction due to isoniazid therapy."),
    ("c", "Metoprolol improved the tremor."),
    ("d", "No hepatotoxicity was observed."),
    ("e", "Rash developed after amoxicillin. The rash resolved after withdrawal."),
]


@pytest.fixture(scope="module")
def cluster():
    """A scheduler and one worker process of one thread on 127.0.0.1, over TCP: the tasks are pickled
    and the worker loads clinex and the model itself, as on another machine."""
    with distributed.LocalCluster(host="127.0.0.1", protocol="tcp://", n_workers=1, threads_per_worker=1,
                                  processes=True, dashboard_address=":0") as c:
        yield c


@pytest.fixture
def src(tmp_path: Path) -> Path:
    path = tmp_path / "in.jsonl"
    path.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in RECORDS), encoding="utf-8")
    return path


def _rows(out: Path) -> list[tuple]:
    return read_results(out, "SELECT * FROM results ORDER BY id")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_cluster_run_equals_local_run_and_resumes(cli, cluster, src: Path, tmp_path: Path) -> None:
    common = ("batch", "pv", src, "--model", "crf", "--partition-size", "2")
    local = cli(*common, "-o", tmp_path / "local")
    assert local.code == 0, local.stderr
    remote = cli(*common, "-o", tmp_path / "remote", "--scheduler", cluster.scheduler_address)
    assert remote.code == 0, remote.stderr
    assert remote.stdout.splitlines()[-1] == f"5 items, 5 rows, 0 errors, 3 parts (0 resumed) -> {tmp_path / 'remote'}"
    rows = _rows(tmp_path / "remote")
    assert len(rows) == 5 and rows == _rows(tmp_path / "local")
    local_bytes = (tmp_path / "local" / "results.parquet").read_bytes()
    assert (tmp_path / "remote" / "results.parquet").read_bytes() == local_bytes  # byte for byte
    for name in ("manifest.json", "errors.jsonl"):  # the run files do not say where the run was made
        local_m = (tmp_path / "local" / name).read_text().replace(str(tmp_path / "local"), "OUT")
        assert (tmp_path / "remote" / name).read_text().replace(str(tmp_path / "remote"), "OUT") == local_m
    # resumable as a local run: a lost part is made again on the cluster, the others are kept
    (tmp_path / "remote" / "parts" / "part-00001.parquet").unlink()
    again = cli(*common, "-o", tmp_path / "remote", "--scheduler", cluster.scheduler_address)
    assert again.code == 0, again.stderr
    assert again.stdout.splitlines()[-1].endswith("3 parts (2 resumed) -> " + str(tmp_path / "remote"))
    assert _rows(tmp_path / "remote") == rows


def test_unreachable_scheduler_is_an_error_within_the_timeout(cli, src: Path, tmp_path: Path) -> None:
    address = f"tcp://127.0.0.1:{_free_port()}"  # nothing listens there
    started = time.monotonic()
    res = cli("batch", "pv", src, "--model", "crf", "-o", tmp_path / "out", "--scheduler", address,
              "--scheduler-timeout", "1")
    assert time.monotonic() - started < 15
    assert res.code == 2
    assert res.stderr.splitlines()[-1] == (
        f"[CLX001] field '--scheduler': cannot reach the Dask scheduler at {address} within 1 s; "
        "is `dask scheduler` running there, and its port open to this machine?")
    assert not (tmp_path / "out").exists()  # checked before the output folder is made


def test_bad_scheduler_options(cli, src: Path, tmp_path: Path) -> None:
    res = cli("batch", "pv", src, "-o", tmp_path / "out", "--scheduler", "127.0.0.1:8786")
    assert res.code == 2 and res.stderr == (
        "[CLX001] field '--scheduler': expected a Dask scheduler address such as tcp://HOST:PORT; "
        "got '127.0.0.1:8786'\n")
    res = cli("batch", "pv", src, "--model", "crf", "-o", tmp_path / "out", "--scheduler", "tcp://127.0.0.1",
              "--scheduler-timeout", "1")
    assert res.code == 2
    assert res.stderr.splitlines()[-1].startswith(
        "[CLX001] field '--scheduler': not a Dask scheduler address: 'tcp://127.0.0.1' (")
    res = cli("batch", "pv", src, "--model", "crf", "-o", tmp_path / "out", "--scheduler", "tcp://127.0.0.1:1",
              "--workers", "2")
    assert res.code == 2 and res.stderr.splitlines()[-1] == (
        "[CLX001] field '--workers': --workers is for local runs; a cluster's workers are its own (dask worker ...)")
    assert not (tmp_path / "out").exists()


def test_scheduler_without_workers(cli, src: Path, tmp_path: Path) -> None:
    with distributed.LocalCluster(host="127.0.0.1", protocol="tcp://", n_workers=0, processes=False,
                                  dashboard_address=":0") as empty:
        res = cli("batch", "pv", src, "--model", "crf", "-o", tmp_path / "out", "--scheduler",
                  empty.scheduler_address, "--scheduler-timeout", "1")
    assert res.code == 2 and res.stderr.splitlines()[-1] == (
        f"[CLX001] field '--scheduler': the Dask scheduler at {empty.scheduler_address} has no worker "
        f"(waited 1 s); start one with: dask worker {empty.scheduler_address}")
