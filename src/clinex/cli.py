"""The ``clinex`` command line: ``clinex <task> <verb>``.

Thin by design: each task module owns its sub-app (``clinex.pv.cli``,
``clinex.rob.cli``, ``clinex.cohort.cli``, ``clinex.datasets``); this module only
mounts them and turns :class:`~clinex.errors.ClinexError` into ``[CODE] message``
on stderr with exit status 2. Tracebacks never show local variables, since they
may hold patient text (typer's ``pretty_exceptions_show_locals=False``).
"""

from __future__ import annotations

import importlib
import sys

import typer

from clinex.errors import ClinexError
from clinex.pv.surface import RECORDS_PER_CALL
from clinex.pv.surface import model_names as _pv_model_names

_PV_MODEL_CHOICES = " | ".join(_pv_model_names())  # the registry's names, for help (auto | onnx | ... | llm)

app = typer.Typer(
    name="clinex",
    help="Clinical and biomedical text to structured, checkable evidence.",
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
)

# (command name, module, attribute, help); modules import heavy libraries lazily.
_SUBAPPS = [
    ("pv", "clinex.pv.cli", "app", "Pharmacovigilance events (PHEE): extract, summarize, e2b, evaluate, train, gate, export-onnx."),
    ("rob", "clinex.rob.cli", "app", "Risk-of-bias evidence (RoB 2): assess, agreement, train, evaluate, iaa."),
    ("cohort", "clinex.cohort.cli", "app", "Cohort selection (n2c2 2018): screen, evaluate, compare, agreement, criteria."),
    ("data", "clinex.datasets", "app", "Named corpora: list, download."),
]

for _name, _module, _attr, _help in _SUBAPPS:  # a broken import fails here, loudly
    app.add_typer(getattr(importlib.import_module(_module), _attr), name=_name, help=_help)


@app.command("serve")
def serve(
    host: str = typer.Option("127.0.0.1", help="Interface to listen on (also accepted as the Host header)."),
    port: int = typer.Option(8000, help="TCP port."),
    allow_host: list[str] = typer.Option(
        None, "--allow-host",
        help="Another name the Host header may carry (repeatable; '*' any, '*.example.org' a domain); "
        "also CLINEX_WEB_ALLOWED_HOSTS.",
    ),
    header_timeout: int = typer.Option(
        None, help="Seconds a connection may take to send a request's headers (CLINEX_WEB_HEADER_TIMEOUT, 20).",
    ),
    body_timeout: int = typer.Option(
        None, help="Seconds a request body may take, plus 1 s per CLINEX_WEB_BODY_MIN_RATE (500) bytes "
        "(CLINEX_WEB_BODY_TIMEOUT, 20); past it 408.",
    ),
    per_client: int = typer.Option(
        None, help="Task requests admitted at once from one address (CLINEX_WEB_PER_CLIENT, 16); one more is 429.",
    ),
    log_level: str = typer.Option("info", help="uvicorn log level: critical, error, warning, info, debug."),
) -> None:
    """Run the web app (FastAPI) on HOST:PORT; limits and errors: docs/batch-and-web.md."""
    from clinex.web.server import serve as run_server

    run_server(host, port, allowed_hosts=tuple(allow_host or ()), header_timeout=header_timeout,
               body_timeout=body_timeout, per_client=per_client, log_level=log_level)


@app.command("batch")
def batch(
    task: str = typer.Argument(..., help="pv, cohort or rob."),
    inputs: list[str] = typer.Argument(..., help="Input files or folders."),
    output: str = typer.Option(..., "--output", "-o", help="Output folder (new, or a run to resume)."),
    partition_size: int = typer.Option(256, help="Items per partition (one part file each)."),
    batch_size: int = typer.Option(RECORDS_PER_CALL, "--batch-size", help="pv: records per model call within a partition."),
    workers: int = typer.Option(1, help="Dask worker processes (local runs)."),
    scheduler: str = typer.Option(
        None, "--scheduler",
        help="Run on a running Dask cluster: the scheduler's address, tcp://HOST:PORT (docs/batch-and-web.md).",
    ),
    scheduler_timeout: float = typer.Option(
        10.0, "--scheduler-timeout", help="Seconds to reach --scheduler, and for it to have a worker.",
    ),
    drug: list[str] = typer.Option(
        None, "--drug",
        help="pv only: keep only records mentioning this drug (any gazetteer synonym; whole word, any case); "
        "repeatable, or a file of one name a line.",
    ),
    criteria: list[str] = typer.Option(
        None, "--criteria", "-c",
        help="cohort only: 'n2c2' or criterion files/folders (repeatable), as 'clinex cohort screen'.",
    ),
    model: str = typer.Option(
        None, "--model",
        help=f"The task's model: pv {_PV_MODEL_CHOICES} | a model folder; rob rules | cues | sentence | llm | a file; "
        "cohort rules | llm (default $CLINEX_<TASK>_MODEL, e.g. CLINEX_PV_MODEL, else auto); built before any item, "
        "recorded in manifest.json.",
    ),
    force: bool = typer.Option(
        False, "--force",
        help="Start again: the earlier run's files in OUTPUT are removed (no others), resumable or not; "
        "without it a finished or stopped run is resumed, and one that cannot be is refused.",
    ),
) -> None:
    """Run TASK over many inputs with Dask; write results.parquet, errors.jsonl, manifest.json.

    Bad items (and folders holding none of the task's files) are reported and skipped.
    Exit status: 0 every item was processed; 1 some items were skipped (the others are
    written); 2 no item could be processed (when the inputs hold no item at all, nothing
    is written), or a bad option, input or model (a model that cannot be built stops
    the run before the output folder is created). Re-running the same command resumes
    an interrupted run; items that failed with a model or LLM error are retried.
    --scheduler tcp://HOST:PORT runs the partitions on a running Dask cluster instead of
    local processes (same results, same resume).
    """
    from clinex.batch import run_batch
    from clinex.progress import Progress
    from clinex.surface import exit_status, finish

    _check_batch_options(task, partition_size, batch_size, workers, scheduler, scheduler_timeout, drug)
    with Progress(f"batch {task}", unit="partitions") as bar:
        summary = run_batch(
            task, inputs, output, partition_size=partition_size, workers=workers, progress=bar.update,
            criteria=criteria or None, model=model, batch_size=batch_size, force=force,
            scheduler=scheduler, connect_timeout=scheduler_timeout, drugs=drug or None,
        )
    _report_batch(summary, len(inputs), bool(drug))
    finish(exit_status(summary.n_rows, len(summary.errors)))  # 2: not one item could be processed


def _check_batch_options(task: str, partition_size: int, batch_size: int, workers: int, scheduler: str | None,
                         scheduler_timeout: float, drug: list[str] | None) -> None:
    """Raise InputError for a bad option of ``clinex batch`` (named as the command line spells it)."""
    from clinex.errors import InputError
    from clinex.surface import option_owner, takes_option

    for name, value in (("--partition-size", partition_size), ("--batch-size", batch_size), ("--workers", workers)):
        if value < 1:
            raise InputError(f"{name} must be >= 1; got {value}", field=name)
    if scheduler is not None and "://" not in scheduler:
        raise InputError(f"expected a Dask scheduler address such as tcp://HOST:PORT; got {scheduler!r}",
                         field="--scheduler")
    if not scheduler_timeout > 0:
        raise InputError(f"--scheduler-timeout must be > 0; got {scheduler_timeout}", field="--scheduler-timeout")
    if drug and not takes_option(task, "drugs"):
        raise InputError(f"--drug screens {option_owner('drugs')} records; not for {task!r}", field="--drug")


def _report_batch(summary, n_inputs: int, drug: bool) -> None:  # noqa: ANN001 - BatchSummary
    """Notes and skipped items on stderr, the summary line on stdout.

    Raises
    ------
    InputError
        The inputs held no item at all (nothing was written).
    """
    from clinex.errors import InputError

    for note in summary.notes:
        typer.echo(note, err=True)
    for err in summary.errors:
        typer.echo(f"skipped {err.id}: {err.message}", err=True)
    if summary.n_items == 0 and summary.errors:
        raise InputError(f"none of the {n_inputs} input(s) holds an item to process (see above); nothing written",
                         field="inputs")
    screened = f"{summary.n_screened_out} screened out by --drug, " if drug else ""
    typer.echo(
        f"{summary.n_items} items, {screened}{summary.n_rows} rows, {len(summary.errors)} errors, "
        f"{summary.n_parts} parts ({summary.n_parts_skipped} resumed) -> {summary.out_dir}"
    )


@app.command("version")
def version() -> None:
    """Print the clinex version."""
    from clinex import __version__

    typer.echo(__version__)


def main() -> None:
    """Entry point: run the app, mapping ClinexError to exit status 2."""
    try:
        # In non-standalone mode click *returns* the exit code of typer.Exit / ctx.exit.
        rc = app(standalone_mode=False)
    except ClinexError as exc:
        typer.echo(str(exc), err=True)
        sys.exit(2)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:
        typer.echo("Aborted.", err=True)
        sys.exit(1)
    except typer.TyperException as exc:  # usage errors (unknown command, bad option)
        show = getattr(exc, "show", None)
        if show is None:
            raise
        show()
        sys.exit(getattr(exc, "exit_code", 2))
    if isinstance(rc, int) and rc:
        sys.exit(rc)


if __name__ == "__main__":  # pragma: no cover
    main()
