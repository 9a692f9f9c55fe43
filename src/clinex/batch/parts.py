"""Part files of a batch run: one Parquet file and one sidecar per partition, merged at the end.

A partition's sidecar ``part-NNNNN.errors.json`` (written before its part file) holds its
row count, item errors, the partition key (its number and item ids) and a stamp of the run
(fingerprint and model); then the part file's SHA-256. On a resume a part file is taken
as done only when all of them match (:func:`_done_errors`). Every file goes through
:mod:`clinex.io.atomic`.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from clinex.errors import InputError
from clinex.surface import Item, ItemError, get_surface

RETRY_CODES = ("CLX006", "CLX009")
"""Error codes of item errors that a resume retries (:class:`~clinex.errors.ModelError`,
:class:`~clinex.errors.LLMError`): they depend on the model or its server, not on the
input, so they may not happen again. Own choice; other codes are replayed."""


RESUME_HINT = ("; the finished parts are kept: run the same command again to resume once the disk has room "
               "or the folder is writable")
"""Added to the error of a write that the operating system refused during a run."""

def _os_error_of(exc: Exception) -> OSError:
    """The :class:`OSError` behind a DuckDB I/O error: DuckDB names the ``errno`` in its
    message (``"errno":"28"``); without one, the first line of DuckDB's message."""
    import errno as errno_mod
    import re

    m = re.search(r'"errno"\s*:\s*"?(\d+)', str(exc))
    if m:
        code = int(m.group(1))
        return OSError(code, os.strerror(code))
    return OSError(errno_mod.EIO, str(exc).splitlines()[0] if str(exc) else type(exc).__name__)


def _write_parquet(rows: list[dict[str, Any]], columns: dict[str, str], path: Path) -> None:
    """Write ``rows`` as Parquet with DuckDB, atomically (:func:`clinex.io.atomic.atomic_path`).

    Raises
    ------
    InputError
        The file cannot be written (full disk, read-only folder): names ``path`` and the
        operating system's reason; no temporary file is left.
    """
    import duckdb

    from clinex.io.atomic import atomic_path

    with atomic_path(path, force=True) as tmp:
        con = duckdb.connect()
        try:
            cols = ", ".join(f'"{c}" {t}' for c, t in columns.items())
            con.execute(f"CREATE TABLE t ({cols})")
            if rows:
                marks = ", ".join("?" for _ in columns)
                con.executemany(f"INSERT INTO t VALUES ({marks})", [[r[c] for c in columns] for r in rows])
            con.execute(f"COPY t TO '{_sql_path(tmp)}' (FORMAT PARQUET, USE_TMP_FILE false)")
        except duckdb.IOException as exc:
            raise _os_error_of(exc) from None
        finally:
            con.close()


def _sql_path(path: Path) -> str:
    """``path`` quoted for a DuckDB string literal."""
    return str(path).replace("'", "''")


def _sidecar(part: Path) -> Path:
    """``part-NNNNN.errors.json``: the partition's row count, item errors and run fingerprint."""
    return part.with_suffix(".errors.json")


def _run_partition(args: tuple[str, int, list[Item], str, dict[str, Any], str]) -> dict[str, Any]:
    """Process one partition (in a worker) and write its sidecar and part file.

    ``args`` is ``(task, index, items, out_dir, options, run stamp)``. Returns its index, row
    count and item errors, or the write error of a file the OS refused (returned, not raised).
    """
    from clinex.io.atomic import write_atomic

    task_name, index, items, out_dir, options, fingerprint = args
    task = get_surface(task_name)
    part = Path(out_dir) / "parts" / f"part-{index:05d}.parquet"
    rows, errors = task.process(items, **options)
    # the errors first, then the part file: a part file on disk means its errors are there too;
    # the row count lets a resume tell a whole part file from a torn one, the partition key
    # (its number and item ids) a part and sidecar copied from another partition
    side = {"fingerprint": fingerprint, "partition": _partition_key(index, items), "rows": len(rows),
            "errors": [e.__dict__ for e in errors]}
    try:
        write_atomic(_sidecar(part), json.dumps(side), force=True)
        _write_parquet(rows, task.columns, part)
        # then the part file's checksum: a part file copied or swapped in from elsewhere (same
        # row count, other items) is told from this partition's own and run again
        side["sha256"] = _file_sha256(part)
        write_atomic(_sidecar(part), json.dumps(side), force=True)
    except InputError as exc:
        # returned, not raised: Dask's process scheduler would add the worker's traceback
        # to the message; the caller raises it once the wave is done
        return {"index": index, "rows": 0, "errors": [],
                "write_error": {"message": exc.message, "path": exc.path}}
    return {"index": index, "rows": len(rows), "errors": side["errors"]}


def _partition_key(index: int, items: Sequence[Item]) -> str:
    """Hex SHA-256 of a partition's number and its items' ids, in order: what a part's sidecar
    must match for the part to be resumed as this partition's."""
    h = hashlib.sha256(f"{index}\n".encode())
    for item in items:
        h.update(item.id.encode("utf-8", "surrogatepass") + b"\n")
    return h.hexdigest()


def _file_sha256(path: Path) -> str:
    """Hex SHA-256 of a file's bytes, read in 1 MiB pieces."""
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _read_sidecar(part: Path) -> dict[str, Any] | None:
    """The sidecar of ``part`` as ``{"rows", "errors", "fingerprint", "sha256"}`` (None: missing
    or torn). A sidecar of an older clinex (a bare list of errors) has ``rows`` and
    ``fingerprint`` None; ``sha256`` is None when the run stopped between writing the part file
    and its checksum (the row count is then the check)."""
    try:
        data = json.loads(_sidecar(part).read_text("utf-8"))
        if isinstance(data, list):
            data = {"rows": None, "errors": data, "fingerprint": None}
        errors = [ItemError(**e) for e in data["errors"]]
    except (OSError, ValueError, TypeError, KeyError):
        return None
    return {"rows": data.get("rows"), "errors": errors, "fingerprint": data.get("fingerprint"),
            "sha256": data.get("sha256"), "partition": data.get("partition")}


def _part_rows(con: Any, part: Path) -> int | None:
    """Rows in a Parquet part file, or None when DuckDB cannot read it (empty, torn)."""
    import duckdb

    try:
        return int(con.execute(
            f"SELECT sum(num_rows) FROM parquet_file_metadata('{_sql_path(part)}')").fetchone()[0] or 0)
    except duckdb.Error:
        return None


def _done_errors(part: Path, con: Any = None, partition: str | None = None) -> list[ItemError] | None:
    """The item errors of a finished partition, or None when it must be run (again): no
    part file; a part file DuckDB cannot read (empty, torn) or whose row count or SHA-256
    differs from its sidecar's; a missing or torn sidecar; a sidecar of another partition
    (``partition``, :func:`_partition_key`, differs); or an item error with a code in
    :data:`RETRY_CODES`."""
    import duckdb

    if not part.is_file():
        return None
    side = _read_sidecar(part)
    if side is None:
        return None
    if partition is not None and side["partition"] is not None and side["partition"] != partition:
        return None  # a part and sidecar of another partition (copied or swapped in)
    own = con is None
    con = duckdb.connect() if own else con
    try:
        rows = _part_rows(con, part)
    finally:
        if own:
            con.close()
    if rows is None or (side["rows"] is not None and rows != side["rows"]):
        return None
    if side["sha256"] is not None and _file_sha256(part) != side["sha256"]:
        return None  # not the part file this partition wrote (copied, swapped or edited)
    errors = side["errors"]
    if any(e.message.startswith(tuple(f"[{c}]" for c in RETRY_CODES)) for e in errors):
        return None
    return errors


def _part_stamp(fingerprint: str, model_record: dict[str, str]) -> str:
    """What a part's sidecar records of its run: the run's fingerprint and its model, so that
    parts rebuilt into a manifest are of the same inputs, settings and model."""
    key = fingerprint + "|" + json.dumps(model_record, sort_keys=True)
    return hashlib.sha256(key.encode()).hexdigest()[:16]


def merge_parts(out: Path, n_parts: int, columns: dict[str, str]) -> int:
    """Merge this run's ``n_parts`` part files into ``results.parquet`` (atomically); return its rows.

    Only this run's parts: a part file of a longer earlier run never comes in. No part:
    an empty file with ``columns``.

    Raises
    ------
    InputError
        The file cannot be written (full disk, read-only folder).
    """
    import duckdb

    from clinex.io.atomic import atomic_path

    results_path = out / "results.parquet"
    if n_parts:
        files = ", ".join(f"'{_sql_path(out / 'parts' / f'part-{i:05d}.parquet')}'" for i in range(n_parts))
        with atomic_path(results_path, force=True) as tmp:
            con = duckdb.connect()
            try:
                con.execute(f"COPY (SELECT * FROM read_parquet([{files}])) "
                            f"TO '{_sql_path(tmp)}' (FORMAT PARQUET, USE_TMP_FILE false)")
            except duckdb.IOException as exc:
                raise _os_error_of(exc) from None
            finally:
                con.close()
    else:
        _write_parquet([], columns, results_path)
    con = duckdb.connect()
    try:
        return int(con.execute(f"SELECT count(*) FROM read_parquet('{_sql_path(results_path)}')").fetchone()[0])
    finally:
        con.close()


def todo_partitions(out: Path, chunks: list[list[Item]]) -> tuple[list[int], list[ItemError]]:
    """The partitions still to run (their numbers), and the item errors of those done before."""
    import duckdb

    todo: list[int] = []
    errors: list[ItemError] = []
    con = duckdb.connect()
    try:
        for i, chunk in enumerate(chunks):
            old_errors = _done_errors(out / "parts" / f"part-{i:05d}.parquet", con, _partition_key(i, chunk))
            if old_errors is None:
                todo.append(i)
            else:
                errors.extend(old_errors)
    finally:
        con.close()
    return todo, errors
