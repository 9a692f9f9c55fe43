"""Batch runs over many documents on Dask, with resumable part files and Parquet output.

A run splits its input items into partitions of ``partition_size`` items. Each
partition is processed by one Dask task (a bag element) that writes
``parts/part-NNNNN.parquet`` and returns its item errors. A re-run of the same command
on the same output folder skips partitions whose part file is whole, so an interrupted
MEDLINE-sized run resumes where it stopped. When all partitions are done the parts are
merged into ``results.parquet`` with DuckDB and ``manifest.json`` records the inputs,
the settings, the counts and every item that failed (also in ``errors.jsonl``).

The package: this module runs a batch (:func:`run_batch`) and reads its results;
:mod:`clinex.batch.parts` writes and checks part files, :mod:`clinex.batch.folder` opens
the output folder (resume, rebuild, ``force``), :mod:`clinex.batch.cluster` runs the
partitions (local processes or a Dask cluster).

Every file of a run is written through :mod:`clinex.io.atomic` (temporary file, fsync,
rename): a full disk, a read-only folder or a kill leaves whole files or none. A
partition's sidecar ``part-NNNNN.errors.json`` (written before its part file) holds its
row count, item errors and a stamp of the run (fingerprint and model); on a resume a part
file that DuckDB cannot read or whose row count differs is run again, and a torn or empty
``manifest.json`` is rebuilt when every sidecar carries this run's stamp (otherwise the
error names it and says to start again with ``force``).

One bad item (an unreadable file, a malformed JSON line, an input the task rejects)
is reported in the manifest and skipped; it never stops the other items.

The tasks (:data:`TASKS`: each task's surface adapter, ``clinex.<task>.surface``, looked up
by name with :func:`clinex.surface.get_surface`; this package knows no task) turn one
input path into items and a list of items into result rows:

- ``pv``: JSON-lines files (``id`` and ``text``, or PHEE's ``context``, per line; a
  record is one unit, as for ``clinex pv extract``), PubMed/MEDLINE XML (``.xml``,
  ``.xml.gz``, or content whose root is ``<PubmedArticleSet>``: one item per citation, id =
  its PMID, text = title + " " + abstract, :mod:`clinex.io.medline`), plain ``.txt`` files
  (one item per sentence), or folders of them; one row per record with its events as PHEE
  JSON (``source`` = the input file, so equal record ids of two files stay apart), its
  citation metadata for MEDLINE (``meta_json``: PMID, year, publication types, MeSH
  headings, where title and abstract sections lie) and its event counts
  (:data:`clinex.pv.counts.COUNT_COLUMNS`: ``n_events``, ``n_adverse``, ``n_therapeutic``
  count asserted events only; negated ones are in ``n_*_negated``, speculated ones also
  in ``n_*_speculated``).
- ``cohort``: n2c2 XML files or folders of them; one row per patient and criterion
  (``patient`` = file stem, ``source`` = the input path).
- ``rob``: trial files (PDF, text, XML, tagtog HTML) or folders of them; one row per
  trial and signalling question (``document`` = file name with its suffix, so
  ``trial.txt`` and ``trial.pdf`` stay apart; ``source`` = the input path).

A folder that holds none of its task's files is an error item naming the folder.

Every task's model (``model=``; pv ``auto``, a kind or a model folder; rob and cohort a
registry name; default ``$CLINEX_<TASK>_MODEL``, else ``auto``: :class:`clinex.surface.Settings`)
is built once before any item, so a model that cannot be built (unknown name, missing
file, an LLM kind without a server configured) stops the run before the output folder
is created. ``manifest.json`` records its versioned id (``model``) and, for a folder or
file, its path (``model_folder``); a run that names another model is not resumed.

``drugs=`` (pv; ``clinex batch pv --drug NAME|FILE``) keeps only the records whose text
mentions one of the drugs (:func:`clinex.pv.surface.drug_screen`: a whole-word,
case-insensitive match of a name, or any synonym the drug gazetteer gives the same drug);
the others are counted in the summary and the manifest (``n_screened_out``).

``scheduler="tcp://HOST:PORT"`` runs the partitions on a running Dask distributed cluster
(:func:`clinex.batch.cluster._connect`) instead of local processes, with the same tasks, part files and resume.

On a resume, a partition whose item errors include a model or LLM error
(:data:`RETRY_CODES`: ``CLX006``, ``CLX009``; e.g. a server that was down) is run again
instead of replaying its errors; other item errors (a malformed line, an unreadable
file) come from the input and are replayed.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clinex.batch.cluster import _connect, run_waves
from clinex.batch.folder import _fingerprint, _open_run
from clinex.batch.parts import (
    RESUME_HINT,
    RETRY_CODES,
    _part_stamp,
    _sql_path,
    merge_parts,
    todo_partitions,
)
from clinex.errors import ClinexError, InputError
from clinex.surface import SURFACES, Item, ItemError, Settings, TaskSurface, get_surface, option_owner

__all__ = ["BatchTask", "BatchSummary", "Item", "ItemError", "TASKS", "RETRY_CODES", "run_batch", "read_results"]

BatchTask = TaskSurface
"""How a task takes part in batch mode: :class:`clinex.surface.TaskSurface` (the old name)."""


class _Tasks(Mapping[str, TaskSurface]):
    """Task name -> its surface adapter (:func:`clinex.surface.get_surface`), imported on first use."""

    def __getitem__(self, task: str) -> TaskSurface:
        if task not in SURFACES:
            raise KeyError(task)
        return get_surface(task)

    def __contains__(self, task: object) -> bool:
        return task in SURFACES

    def __iter__(self) -> Iterator[str]:
        return iter(SURFACES)

    def __len__(self) -> int:
        return len(SURFACES)


TASKS: Mapping[str, TaskSurface] = _Tasks()
"""The batch tasks by name (``pv``, ``cohort``, ``rob``): each task's :class:`~clinex.surface.TaskSurface`."""


@dataclass
class BatchSummary:
    """What a batch run did.

    Attributes
    ----------
    out_dir : Path
    n_items : int
        Items found in the inputs (bad lines of an input count as errors, not items).
    n_rows : int
        Rows in ``results.parquet``.
    n_parts, n_parts_skipped : int
        Partitions in the run, and those found done from an earlier run.
    errors : list of ItemError
    notes : list of str
        What the run did to the output folder besides resuming (a rebuilt manifest,
        an earlier run removed by ``force``, records screened out by ``drugs``), for the user.
    n_screened_out : int
        pv with ``drugs``: records that mention none of the drugs (not in ``n_items``).
    """

    out_dir: Path
    n_items: int = 0
    n_rows: int = 0
    n_parts: int = 0
    n_parts_skipped: int = 0
    errors: list[ItemError] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    n_screened_out: int = 0


@dataclass
class _Plan:
    """A run's checked options: inputs, criteria, screen, worker options, model record, fingerprint."""

    task: str
    surface: TaskSurface
    paths: list[Path]
    out: Path
    partition_size: int
    crits: list[str]
    screen: Any
    options: dict[str, Any]
    model_record: dict[str, str]
    fingerprint: str = ""


def _task_options(surface: TaskSurface, task: str, criteria: Sequence[str | Path] | None,
                  drugs: Sequence[str] | None) -> tuple[list[str], Any]:
    """Validated criteria (``[]``: the default) and the drugs screen (None), before any item.

    Raises
    ------
    InputError
        ``criteria`` or ``drugs`` for a task that does not take them; a bad names file.
    SchemaError
        A criterion file that does not validate.
    """
    crits: list[str] = []
    if criteria is not None:
        if "criteria" not in surface.batch_options:
            raise InputError(f"criteria are for the {option_owner('criteria')} task, not {task!r}",
                             field="criteria")
        crits = surface.criteria([str(c) for c in criteria])  # a bad criterion file stops the run here
    screen = None
    if drugs:
        if "drugs" not in surface.batch_options:
            raise InputError(f"drugs screen {option_owner('drugs')} records, not {task!r} items", field="drugs")
        screen = surface.screen(list(drugs))  # a bad names file stops the run before any item
    return crits, screen


def _plan(task: str, inputs: Iterable[str | Path], out_dir: str | Path, partition_size: int, workers: int,
          scheduler: str | None, criteria: Sequence[str | Path] | None, model: str | Path | None,
          batch_size: int | None, drugs: Sequence[str] | None) -> _Plan:
    """Check every option and build the task's model, in the order the errors are documented."""
    from clinex.errors import SchemaError

    if task not in SURFACES:
        raise SchemaError(f"unknown batch task '{task}'; valid: {', '.join(TASKS)}")
    surface = get_surface(task)
    if partition_size < 1:
        raise InputError(f"partition_size must be >= 1; got {partition_size}", field="partition_size")
    if workers < 1:
        raise InputError(f"workers must be >= 1; got {workers}", field="workers")
    paths = [Path(p) for p in inputs]
    for p in paths:
        if not p.exists():
            raise InputError("input does not exist", path=p)
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise InputError("output must be a folder, not an existing file", path=out)
    crits, screen = _task_options(surface, task, criteria, drugs)
    if scheduler is not None and "://" in scheduler and workers != 1:
        raise InputError("--workers is for local runs; a cluster's workers are its own (dask worker ...)",
                         field="--workers")
    if batch_size is not None and batch_size < 1:
        raise InputError(f"batch_size must be >= 1; got {batch_size}", field="batch_size")
    options: dict[str, Any] = {"criteria": tuple(crits)} if crits else {}
    if batch_size is not None and "batch_size" in surface.batch_options:
        options["batch_size"] = batch_size  # else the task's own default
    # the settings of the run, resolved once: --model, else $CLINEX_<TASK>_MODEL, else auto
    settings = Settings.resolve(task, model=model)
    options["model"], record = settings.load(lambda spec: surface.resolve_model(spec, crits))  # before any item
    plan = _Plan(task, surface, paths, out, partition_size, crits, screen, options, record)
    plan.fingerprint = _fingerprint(task, list(surface.columns), paths, partition_size, crits,
                                    screen.terms if screen else ())
    return plan


def _collect(plan: _Plan, summary: BatchSummary) -> list[Item]:
    """The items of every input (error items and screened-out records counted in ``summary``)."""
    items: list[Item] = []
    screen, surface = plan.screen, plan.surface
    for p in plan.paths:
        try:
            for it in surface.expand(p):
                if isinstance(it, ItemError):
                    summary.errors.append(it)
                elif screen is not None and not screen.match(surface.item_text(it)):
                    summary.n_screened_out += 1
                else:
                    items.append(it)
        except ClinexError as exc:
            summary.errors.append(ItemError(str(p), str(exc)))
    summary.n_items = len(items)
    if screen is not None:
        summary.notes.extend(f"warning: --drug {t!r} is not in the drug gazetteer; matched as written only"
                             for t in screen.unknown)
        summary.notes.append(f"--drug: {summary.n_screened_out} of {summary.n_screened_out + len(items)} records "
                             "screened out (no mention of the drugs)")
    return items


def _manifest(plan: _Plan, summary: BatchSummary, n_parts: int) -> dict[str, Any]:
    """The manifest of a running run (its key order is the file's)."""
    screen = plan.screen
    return {
        "task": plan.task,
        "fingerprint": plan.fingerprint,
        "inputs": [str(p) for p in plan.paths],
        "partition_size": plan.partition_size,
        **({"criteria": plan.crits} if plan.crits else {}),
        **plan.model_record,
        **({"drugs": list(screen.terms), "n_screened_out": summary.n_screened_out} if screen else {}),
        "n_items": summary.n_items,
        "n_parts": n_parts,
        "status": "running",
    }


def _start(out: Path, manifest: dict[str, Any]) -> None:
    """Write the manifest first (a folder holding anything of a run holds its manifest), then ``parts/``.

    Raises
    ------
    InputError
        A file or folder the OS refused; a folder this call created is removed again.
    """
    from clinex.io.atomic import write_atomic, write_error

    new_folder = not out.exists()
    try:
        write_atomic(out / "manifest.json", json.dumps(manifest, indent=2), force=True)
    except InputError:
        if new_folder and out.is_dir() and not any(out.iterdir()):
            out.rmdir()  # nothing of the run is left, not even an empty folder
        raise
    try:
        (out / "parts").mkdir(exist_ok=True)
    except OSError as exc:
        raise write_error(out / "parts", exc, folder=True) from None


def _finish(plan: _Plan, n_parts: int, manifest: dict[str, Any], summary: BatchSummary) -> None:
    """Merge the parts into ``results.parquet``; write ``errors.jsonl`` and the finished manifest.

    Raises
    ------
    InputError
        A file the OS refused; the message says the finished parts are kept for a resume.
    """
    from clinex.io.atomic import write_atomic

    out = plan.out
    try:
        summary.n_rows = merge_parts(out, n_parts, plan.surface.columns)
        write_atomic(out / "errors.jsonl",
                     (json.dumps(e.__dict__, ensure_ascii=False) + "\n" for e in summary.errors), force=True)
        manifest.update(status="done", n_rows=summary.n_rows, n_errors=len(summary.errors),
                        errors=[e.__dict__ for e in summary.errors])
        write_atomic(out / "manifest.json", json.dumps(manifest, indent=2), force=True)
    except InputError as exc:
        raise InputError(exc.message + RESUME_HINT, path=exc.path) from None


def _run_parts(plan: _Plan, chunks: list[list[Item]], summary: BatchSummary, workers: int,
               scheduler: str | None, client: Any, progress: Callable[[int, int], None] | None) -> None:
    """Run the partitions not done before (their errors, and those of the done ones, into ``summary``).

    Raises
    ------
    InputError
        A file the OS refused to write in a worker (the finished parts are kept).
    """
    todo, old_errors = todo_partitions(plan.out, chunks)
    summary.n_parts_skipped = len(chunks) - len(todo)
    summary.errors.extend(old_errors)
    done = summary.n_parts_skipped
    if progress:
        progress(done, len(chunks))
    stamp = _part_stamp(plan.fingerprint, plan.model_record)
    args = [(plan.task, i, chunks[i], str(plan.out), plan.options, stamp) for i in todo]

    def on_wave(batch: list[Any], results: list[dict[str, Any]]) -> None:
        nonlocal done
        failed = [res["write_error"] for res in results if "write_error" in res]
        if failed:  # a file the OS refused to write (full disk, read-only): stop, keep finished parts
            raise InputError(failed[0]["message"] + RESUME_HINT, path=failed[0]["path"])
        for res in results:
            summary.errors.extend(ItemError(**e) for e in res["errors"])
        done += len(batch)
        if progress:
            progress(done, len(chunks))

    if args:
        run_waves(args, workers, scheduler, client, on_wave)


def run_batch(
    task: str,
    inputs: Iterable[str | Path],
    out_dir: str | Path,
    *,
    partition_size: int = 256,
    workers: int = 1,
    scheduler: str | None = None,
    progress: Callable[[int, int], None] | None = None,
    criteria: Sequence[str | Path] | None = None,
    model: str | Path | None = None,
    batch_size: int | None = None,
    force: bool = False,
    drugs: Sequence[str] | None = None,
    connect_timeout: float = 10.0,
) -> BatchSummary:
    """Run ``task`` over ``inputs`` and write Parquet results into ``out_dir``.

    Parameters
    ----------
    task : {"pv", "cohort", "rob"}
    inputs : iterable of path
        Files (or folders, for cohort and rob).
    out_dir : path
        Created if missing. An existing folder must be empty or hold a manifest of
        the same run (same task, inputs and partition size), which is resumed.
    partition_size : int, default 256
        Items per partition (one Dask task, one part file).
    workers : int, default 1
        Dask workers (>= 1); with 1 the run is synchronous in this process. Local runs only.
    scheduler : {"sync", "threads", "processes"}, an address, or None
        Dask scheduler; default "sync" for one worker, else "processes". An address
        (``tcp://HOST:PORT``, any ``PROTOCOL://``) runs the partitions on that running Dask
        distributed cluster (``dask scheduler`` / ``dask worker``; needs the ``distributed``
        package, ``clinex[cluster]``): the same tasks, part files, resume and results as a
        local run. Every worker must run this clinex version, load the same model (a kind
        name, or a model folder at the same path) and see the output folder at the same
        path (a shared file system); the inputs are read here and sent with the tasks.
    progress : callable, optional
        Called as ``progress(done_partitions, total_partitions)``.
    criteria : list of str or Path, optional
        cohort only: criterion set names and/or criterion files or folders, as
        ``clinex cohort screen --criteria`` (default the 13 n2c2 criteria). They are
        validated before the run and are part of its fingerprint (files by
        content), so resuming with other criteria is refused.
    model : str or Path, optional
        The task's model, from its registry: pv ``auto``, ``crf``, ``transformer`` or a
        model folder (:data:`clinex.pv.models.REGISTRY`); rob an evidence model name or
        file (:data:`clinex.rob.evidence.REGISTRY`); cohort a name of
        :data:`clinex.cohort.models.REGISTRY`, built for ``criteria``. Default
        ``$CLINEX_<TASK>_MODEL`` (``CLINEX_PV_MODEL``, ``CLINEX_ROB_MODEL``,
        ``CLINEX_COHORT_MODEL``), else ``auto`` (:class:`clinex.surface.Settings`).
        Built once before any item and before ``out_dir`` is created; its versioned id
        (and folder or file) is recorded in ``manifest.json`` (``auto`` as the kind it
        stands for), and resuming a run whose manifest names another model is refused.
    batch_size : int, optional
        pv only: records per model call within a partition (results do not depend on it);
        default the task's own, :data:`clinex.pv.pipeline.RECORDS_PER_CALL` (512).
    force : bool, default False
        Start again in an output folder that holds a run which cannot be resumed (other
        inputs or model, or a torn ``manifest.json`` that cannot be rebuilt): that run's
        own files (``manifest.json``, ``results.parquet``, ``errors.jsonl``, ``parts/``)
        are removed first. Files clinex did not write are never removed.
    drugs : list of str, optional
        pv only: drug names and/or files of one name a line (``--drug``); only the
        records whose text mentions one of them (any synonym the drug gazetteer knows:
        :func:`clinex.pv.surface.drug_screen`) are processed, the others are counted in
        ``n_screened_out``. The names are part of the run's fingerprint.
    connect_timeout : float, default 10.0
        With a scheduler address: seconds to reach the scheduler, and again for it to
        have a worker, before the run stops with an error.

    Returns
    -------
    BatchSummary
        When the inputs hold no item at all but some error items (e.g. only empty
        folders or unreadable files), nothing is written, ``out_dir`` is not created
        and the summary has ``n_items == 0`` and those errors.

    Raises
    ------
    SchemaError
        Unknown task (the message lists the valid ones).
    InputError
        An input path does not exist, or ``out_dir`` holds other files or another run
        (or a run of another model: the error names its manifest.json), or a torn
        ``manifest.json`` whose part files are not this run's (without ``force``);
        ``criteria`` or ``drugs`` given for a task it does not apply to; ``partition_size``,
        ``workers`` or ``batch_size`` below 1; a scheduler address that cannot be reached
        within ``connect_timeout``, a cluster without workers or with a worker of another
        clinex version, ``workers`` above 1 with an address; a cluster lost during the run
        (the finished parts are kept: the same command resumes). A file the operating system refuses to
        write (full disk, read-only folder) stops the run: the message names the file
        and the reason (``cannot write the output file (No space left on device)``),
        no temporary file is left, and the finished parts are kept for a resume.
    ModelError, LLMError
        The task's model cannot be built (unknown name, missing file, an LLM kind
        without a configured server); nothing is written.
    SchemaError
        A criterion file does not validate (see :func:`clinex.cohort.criteria.load_criterion`).
    """
    plan = _plan(task, inputs, out_dir, partition_size, workers, scheduler, criteria, model, batch_size, drugs)
    summary = BatchSummary(out_dir=plan.out)
    # a cluster is reached (and checked) before the output folder is touched
    client = _connect(scheduler, connect_timeout) if scheduler is not None and "://" in scheduler else None
    try:
        summary.notes.extend(_open_run(plan.out, plan.fingerprint, plan.model_record, force))
        items = _collect(plan, summary)
        if not items and summary.errors:  # nothing to process: no folder a later run would have to match
            return summary
        chunks = [items[i : i + partition_size] for i in range(0, len(items), partition_size)]
        summary.n_parts = len(chunks)
        manifest = _manifest(plan, summary, len(chunks))
        _start(plan.out, manifest)
        _run_parts(plan, chunks, summary, workers, scheduler, client, progress)
        _finish(plan, len(chunks), manifest, summary)
        return summary
    finally:
        if client is not None:
            client.close()


def read_results(out_dir: str | Path, sql: str | None = None) -> list[tuple[Any, ...]]:
    """Query a batch run's ``results.parquet`` with DuckDB.

    Parameters
    ----------
    out_dir : path
        A folder written by :func:`run_batch`.
    sql : str, optional
        A query over the view ``results``; default ``SELECT * FROM results``.

    Returns
    -------
    list of tuple
        The rows.

    Raises
    ------
    InputError
        If the folder holds no ``results.parquet``.
    """
    import duckdb

    path = Path(out_dir) / "results.parquet"
    if not path.is_file():
        raise InputError("no results.parquet (run `clinex batch` first)", path=out_dir)
    con = duckdb.connect()
    try:
        con.execute(f"CREATE VIEW results AS SELECT * FROM read_parquet('{_sql_path(path)}')")
        return con.execute(sql or "SELECT * FROM results").fetchall()
    finally:
        con.close()
