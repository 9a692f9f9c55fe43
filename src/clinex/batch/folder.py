"""The output folder of a batch run: start, resume, rebuild or refuse (:func:`_open_run`).

A run is known by its fingerprint (:func:`_fingerprint`: task, inputs and their stamps,
partition size, result columns, criteria, drug names) and its model record; the manifest
of an earlier run in the folder must match both to be resumed.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from clinex.batch.parts import _part_stamp, _read_sidecar
from clinex.errors import InputError
from clinex.surface import model_env

_RUN_FILES = ("manifest.json", "results.parquet", "errors.jsonl", "parts")
"""What a run writes into its output folder (``--force`` removes these, nothing else)."""


def _open_run(out: Path, fingerprint: str, model_record: dict[str, str], force: bool) -> list[str]:
    """Check the output folder before a run; return notes for the user (a repair made).

    A folder that does not exist or is empty starts a new run. One that holds the
    manifest of the same run (same fingerprint and model) is resumed. A torn or empty
    ``manifest.json`` is rebuilt when every part file's sidecar carries this run's
    fingerprint and model (:func:`_part_stamp`; or there is no part file yet): those parts are this run's. With
    ``force`` a run's own files (:data:`_RUN_FILES`) are removed first; other files are
    never removed. Leftover temporary files of an interrupted write are removed.

    Raises
    ------
    InputError
        The folder holds files of no clinex run, a run of other inputs or model (without
        ``force``), or a torn manifest whose parts cannot be matched to this run (without
        ``force``). Each names the folder or its ``manifest.json`` and what to do.
    """
    from clinex.io.atomic import remove_temporaries

    if not out.is_dir():
        return []
    remove_temporaries(out, _RUN_FILES)
    remove_temporaries(out / "parts")
    entries = [e for e in out.iterdir()]
    if not entries:
        return []
    manifest_path = out / "manifest.json"
    # a run folder the user added files to (it holds a manifest) is resumed as before, never
    # cleaned by --force; other files without a manifest are no clinex run
    if any(e.name not in _RUN_FILES for e in entries) and not manifest_path.is_file():
        raise InputError("output folder is not empty and holds no clinex manifest", path=out)
    if force:
        _remove_run(out)
        return ["--force: the earlier run's files in this folder were removed; starting again"]
    old, torn = _read_manifest(manifest_path)
    if old is not None:
        if old.get("fingerprint") != fingerprint:
            raise InputError(
                "output folder holds a different batch run (other task, inputs, partition size or criteria, "
                "an input file changed since: size or modification time, or a clinex version with other "
                "result columns); pass another output folder, or --force to replace that run",
                path=out,
            )
        _check_same_model(old, model_record, manifest_path)
        return []
    return _rebuild_notes(out, manifest_path, torn, _part_stamp(fingerprint, model_record))


def _remove_run(out: Path) -> None:
    """Remove a run's own files (:data:`_RUN_FILES`; in ``parts/`` its part and temporary files)."""
    from clinex.io.atomic import TEMP_PATTERN

    for name in _RUN_FILES:
        target = out / name
        if target.is_dir():
            parts = [f for f in target.iterdir()
                     if f.name.startswith("part-") or TEMP_PATTERN.match(f.name)]
            for f in parts:
                f.unlink()
            if not any(target.iterdir()):
                target.rmdir()
        elif target.exists():
            target.unlink()


def _read_manifest(manifest_path: Path) -> tuple[dict[str, Any] | None, str]:
    """The earlier run's manifest, or None and why not (missing, torn, empty)."""
    try:
        old = json.loads(manifest_path.read_text(encoding="utf-8"))
        if not isinstance(old, dict) or not isinstance(old.get("fingerprint"), str):
            raise ValueError("no fingerprint")
    except FileNotFoundError:
        return None, "is missing"
    except (OSError, ValueError):
        return None, "is torn (not a clinex manifest)" if manifest_path.stat().st_size else "is empty (0 bytes)"
    return old, ""


def _rebuild_notes(out: Path, manifest_path: Path, torn: str, stamp: str) -> list[str]:
    """A missing or torn manifest: rebuilt when every part's sidecar carries this run's ``stamp``.

    Raises
    ------
    InputError
        A part file of another run (or without a readable sidecar).
    """
    parts = sorted((out / "parts").glob("part-*.parquet")) if (out / "parts").is_dir() else []
    sides = [_read_sidecar(p) for p in parts]
    if all(s is not None and s["fingerprint"] == stamp for s in sides):
        # no part file yet (a run stopped before its first part): nothing to rebuild, a fresh start
        if not parts:
            return []
        return [f"{manifest_path}: {torn}; rebuilt from the {len(parts)} part file(s) of this run on disk"]
    raise InputError(
        f"the batch run's manifest {torn}, and the part files in {out / 'parts'} cannot be matched to this "
        "command's inputs; start again with --force (removes that run's files), or pass another --output",
        path=manifest_path,
    )


def _stamp(p: Path) -> str:
    """Size and modification time (ns) of a file, or of every file in a folder: an input
    edited in place changes the run's fingerprint, so a resume refuses it."""
    if p.is_file():
        st = p.stat()
        return f"{st.st_size}:{st.st_mtime_ns}"
    if p.is_dir():
        parts = []
        for f in sorted(q for q in p.rglob("*") if q.is_file()):
            st = f.stat()
            parts.append(f"{f.relative_to(p)}:{st.st_size}:{st.st_mtime_ns}")
        return "|".join(parts)
    return "0"


def _fingerprint(task: str, columns: Sequence[str], inputs: Sequence[Path], partition_size: int,
                 criteria: Sequence[str] = (), drugs: Sequence[str] = ()) -> str:
    """Hex digest (16) of what makes two runs the same: task, partition size, result columns,
    each input's path and stamp (:func:`_stamp`), criteria (files by content) and drug names."""
    # the result columns too: parts of a clinex with other columns (pv before `source`) never merge with these
    h = hashlib.sha256(f"{task}|{partition_size}|{','.join(columns)}".encode())
    for p in inputs:
        h.update(str(p.resolve()).encode())
        h.update(_stamp(p).encode())
    for c in criteria:  # cohort criteria other than the default: names, and files by content
        q = Path(c)
        files = sorted(f for f in q.iterdir() if f.is_file()) if q.is_dir() else [q] if q.is_file() else []
        h.update(f"|criteria:{q.resolve() if files else c}".encode())
        for f in files:
            h.update(f.name.encode() + hashlib.sha256(f.read_bytes()).digest())
    if drugs:  # pv --drug: other names screen other records
        h.update(("|drugs:" + "\n".join(drugs)).encode())
    return h.hexdigest()[:16]


def _check_same_model(old: dict[str, Any], record: dict[str, str], manifest_path: Path) -> None:
    """Raise InputError (naming ``manifest_path``) when the earlier run used another model."""
    keys = ("model", "model_folder")
    if "model" not in old or all(old.get(k) == record.get(k) for k in keys):
        return

    def describe(d: dict[str, Any]) -> str:
        return d["model"] + (f" from {d['model_folder']}" if d.get("model_folder") else "")

    raise InputError(
        f"the run in this folder used model {describe(old)}, not {describe(record)}; "
        f"give the same --model (or ${model_env(old.get('task', '<task>'))}) to resume, or a new --output",
        path=manifest_path,
    )
