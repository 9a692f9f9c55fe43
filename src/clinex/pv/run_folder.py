"""Checking a finished ``clinex batch pv`` output folder before reading it (issue 24).

``clinex pv summarize`` (:mod:`clinex.pv.summary`) and ``clinex pv e2b``
(:mod:`clinex.pv.e2b`) read the same kind of folder: ``manifest.json`` (task ``pv``,
status ``done``) and ``results.parquet`` with the pv columns. :func:`check_pv_run` is the
one check both call; its messages are one template that names the command (``verb``), the
folder or file at fault, what is missing and what to do. :func:`record_pmid` is the one
rule both use for a row's PubMed id.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from clinex.errors import FormatError, InputError

__all__ = ["PV_RUN_COLUMNS", "check_pv_run", "record_pmid", "sql_str"]

#: A record id of 5 to 9 digits, no leading zero: a PMID (PubTator, BC5CDR and PubMed
#: exports name their records so).
_PMID_LIKE = re.compile(r"^[1-9]\d{4,8}$")


def record_pmid(record_id: str, meta: Mapping[str, Any] | None) -> str | None:
    """The PubMed id of one row of a pv run: ``meta_json``'s ``pmid`` (MEDLINE input), else
    a record id of 5 to 9 digits (a JSON-lines record named by its PMID), else None.

    Examples
    --------
    >>> record_pmid("x", {"pmid": 123456}), record_pmid("6794356", {}), record_pmid("doc_1", None)
    ('123456', '6794356', None)
    """
    if meta and meta.get("pmid"):
        return str(meta["pmid"])
    return record_id if _PMID_LIKE.match(record_id) else None

#: The ``results.parquet`` columns that every reader of a pv run needs.
PV_RUN_COLUMNS: tuple[str, ...] = ("id", "text", "phee_json")


def sql_str(path: Path | str) -> str:
    """``path`` as a quoted SQL string literal (single quotes doubled), for DuckDB.

    >>> sql_str("/tmp/o'brien/results.parquet")
    "'/tmp/o''brien/results.parquet'"
    """
    return "'" + str(path).replace("'", "''") + "'"


def check_pv_run(run: str | Path, verb: str, *,
                 columns: Iterable[str] = PV_RUN_COLUMNS) -> tuple[dict[str, Any], set[str]]:
    """Check that ``run`` is a finished ``clinex batch pv`` folder; return its manifest and columns.

    Parameters
    ----------
    run : path
        The ``--output`` folder of a ``clinex batch pv`` run.
    verb : str
        The ``clinex pv`` command that reads it (``"summarize"``, ``"e2b"``); the messages
        name it.
    columns : iterable of str, default :data:`PV_RUN_COLUMNS`
        The columns ``results.parquet`` must hold.

    Returns
    -------
    tuple of (dict, set of str)
        The manifest (``manifest.json``) and the column names of ``results.parquet``.

    Raises
    ------
    InputError
        ``run`` does not exist or is not a folder, has no ``manifest.json`` or an unreadable
        one, is another task's run, is not finished (status other than ``done``: the message
        gives the part files on disk and the command that finishes it), has no
        ``results.parquet``, or one whose row count is not the manifest's. Each names the
        folder or the file.
    FormatError
        ``results.parquet`` cannot be read as Parquet or lacks one of ``columns`` (names
        the file).

    References
    ----------
    The folder layout written by :mod:`clinex.batch` (``manifest.json``, ``parts/``,
    ``results.parquet``).
    """
    folder = Path(run)
    manifest = _manifest(folder, verb)
    results = folder / "results.parquet"
    if not results.is_file():
        raise InputError("the run's manifest says done but there is no results.parquet; run the same "
                         "`clinex batch pv` command again to rebuild it", path=folder)
    found, n_rows = _describe(results)
    missing = [c for c in columns if c not in found]
    if missing:
        raise FormatError(f"no column(s) {', '.join(missing)}: not the results of `clinex batch pv` from this "
                          "clinex version; run the batch again with --force", path=results)
    if isinstance(manifest.get("n_rows"), int) and manifest["n_rows"] != n_rows:
        raise InputError(f"holds {n_rows} rows, the manifest says {manifest['n_rows']}: the run is "
                         "incomplete or was changed; run the same `clinex batch pv` command again", path=results)
    return manifest, found


def _manifest(folder: Path, verb: str) -> dict[str, Any]:
    """The manifest of a finished pv run in ``folder``, or the :class:`InputError` that says why not."""
    reads = f"`clinex pv {verb}` reads the --output folder of a `clinex batch pv` run"
    if not folder.exists():
        raise InputError(f"no such folder; {reads}", path=folder)
    if not folder.is_dir():
        raise InputError(f"not a folder; {reads}", path=folder)
    manifest_path = folder / "manifest.json"
    if not manifest_path.is_file():
        raise InputError(f"not a `clinex batch pv` output folder (no manifest.json); {reads}", path=folder)
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        if not isinstance(manifest, dict):
            raise ValueError("not a JSON object")
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise InputError(f"the batch run's manifest cannot be read ({exc}); run the same `clinex batch pv` "
                         "command again to rebuild it", path=manifest_path) from None
    if manifest.get("task") != "pv":
        raise InputError(f"a `clinex batch {manifest.get('task')}` run, not `clinex batch pv`; {reads}",
                         path=folder)
    if manifest.get("status") != "done":
        parts = len(list((folder / "parts").glob("part-*.parquet"))) if (folder / "parts").is_dir() else 0
        raise InputError(
            f"the batch run is incomplete (manifest status {manifest.get('status')!r}; {parts} of "
            f"{manifest.get('n_parts', '?')} part file(s) on disk); run the same `clinex batch pv ... "
            f"--output {folder}` command again to finish it, then `clinex pv {verb}`", path=folder)
    return manifest


def _describe(results: Path) -> tuple[set[str], int]:
    """The column names and the row count of the Parquet file ``results``, or :class:`FormatError`."""
    import duckdb

    con = duckdb.connect()
    try:
        found = {r[0] for r in con.execute(f"DESCRIBE SELECT * FROM read_parquet({sql_str(results)})").fetchall()}
        n_rows = int(con.execute(f"SELECT count(*) FROM read_parquet({sql_str(results)})").fetchone()[0])
    except duckdb.Error as exc:
        raise FormatError(f"cannot be read as Parquet ({str(exc).splitlines()[0]}); run the same `clinex batch pv` "
                          "command again (with --force if it says the run is torn)", path=results) from None
    finally:
        con.close()
    return found, n_rows
