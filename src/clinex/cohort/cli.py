"""``clinex cohort ...`` commands (typer sub-app mounted by :mod:`clinex.cli`).

Each command parses its options, calls the Python API and prints with rich; heavy
libraries are imported inside the commands so that ``clinex --help`` stays fast.
"""

from __future__ import annotations

import typer

from clinex.cohort.surface import model_names as _cohort_model_names
from clinex.llm.options import llm_options  # light: typer only

_COHORT_MODELS = _cohort_model_names()

app = typer.Typer(no_args_is_help=True, pretty_exceptions_show_locals=False)

# Commands are added below, one function per verb.


# --- evaluate / compare / agreement: official Track 1 scoring and statistics -----------


def _print_table(title: str, rows: list[list[str]]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title)
    for i, head in enumerate(rows[0]):
        table.add_column(head, justify="left" if i == 0 else "right")
    for row in rows[1:]:
        table.add_row(*row)
    Console(width=140).print(table)


@app.command("evaluate")
def evaluate(
    gold_dir: str = typer.Argument(..., help="Folder of gold n2c2 XML files (NNN.xml)."),
    pred_dir: str = typer.Argument(..., help="Folder of predicted n2c2 XML files, same names."),
    as_json: bool = typer.Option(False, "--json", help="Print the scores as one JSON object."),
    scores: str = typer.Option(
        None, "--scores",
        help="JSON {patient: {criterion: met-confidence or {score: ...}}} (e.g. screen's JSON) for ROC AUC.",
    ),
) -> None:
    """Score PRED_DIR against GOLD_DIR as the official n2c2 2018 Track 1 scorer does.

    Per criterion: precision, recall, specificity and F1 of 'met' and of 'not met',
    criterion F1 = their mean, AUC; overall micro (pooled counts) and macro.
    Files are matched by name; a missing or extra file is an error (exit 2). A
    criterion tag missing from a gold file is scored as 'not met', with a warning
    naming the file and the criterion on stderr.
    """
    import json
    from pathlib import Path

    from clinex.cohort.evaluate import evaluate_dirs, format_table
    from clinex.errors import InputError

    score_table = None
    if scores is not None:
        from clinex.io.textfile import parse_json

        try:
            raw_scores = Path(scores).read_text(encoding="utf-8")
        except (OSError, ValueError) as exc:
            raise InputError(f"cannot read scores JSON ({exc})", path=scores) from None
        # one JSON decoder: a syntax error, an integer past 4,300 digits or too deep a
        # nesting is a [CLX002] naming the line or field, never a traceback (issue 21)
        score_table = parse_json(raw_scores, path=scores)
        if not isinstance(score_table, dict):
            raise InputError("scores JSON must be an object {patient: {criterion: score}}", path=scores)
    result = evaluate_dirs(gold_dir, pred_dir, scores=score_table)
    for line in result["warnings"]:  # a gold file lacking a criterion tag: scored as not met
        typer.echo(line, err=True)
    if as_json:
        typer.echo(json.dumps(result))
        return
    _print_table(f"n2c2 2018 Track 1 - {result['n_patients']} patients", format_table(result))
    if result["ignored_criteria"]:
        typer.echo(f"ignored (not in gold): {', '.join(result['ignored_criteria'])}", err=True)


@app.command("compare")
def compare(
    gold_dir: str = typer.Argument(..., help="Folder of gold n2c2 XML files."),
    run_a: str = typer.Argument(..., help="Predictions of system A (same file names)."),
    run_b: str = typer.Argument(..., help="Predictions of system B (same file names)."),
    shuffles: int = typer.Option(50_000, "--shuffles", min=1, help="Random shuffles (paper: 50,000)."),
    seed: int = typer.Option(0, "--seed", help="Random seed (same seed, same p-values)."),
    alpha: float = typer.Option(0.1, "--alpha", help="Significance level (paper: 0.1)."),
    unit: str = typer.Option("patient", "--unit", help="What a shuffle swaps: 'patient' or 'decision'."),
    as_json: bool = typer.Option(False, "--json", help="Print the results as one JSON object."),
) -> None:
    """Approximate randomization test of P, R and F1 between RUN_A and RUN_B.

    Two-sided, p = (c + 1) / (n + 1) (Noreen 1989; Yeh 2000), as used by
    Stubbs et al. 2019 for the n2c2 2018 Track 1 systems.
    """
    from clinex.cohort.stats import compare_dirs
    from clinex.errors import InputError

    if unit not in ("patient", "decision"):
        raise InputError(f"--unit must be 'patient' or 'decision', not {unit!r}", field="unit")
    res = compare_dirs(gold_dir, run_a, run_b, n_shuffles=shuffles, seed=seed, alpha=alpha, unit=unit)
    if as_json:
        typer.echo(res.model_dump_json())
        return
    rows = [["metric", "A", "B", "A - B", "p", f"p < {alpha:g}"]]
    for name, r in res.results.items():
        rows.append([name, f"{r.a:.4f}", f"{r.b:.4f}", f"{r.diff:+.4f}", f"{r.p_value:.5f}",
                     "yes" if name in res.significant else ""])
    _print_table(
        f"Approximate randomization: {shuffles} shuffles, seed {seed}, {res.n_items} {unit}s", rows
    )


@app.command("agreement")
def agreement(
    dir_a: str = typer.Argument(..., help="Annotator A: folder of n2c2 XML files."),
    dir_b: str = typer.Argument(..., help="Annotator B: same file names."),
    as_json: bool = typer.Option(False, "--json", help="Print the results as one JSON object."),
) -> None:
    """Cohen's kappa per criterion between two annotators (and pooled).

    Kappa is undefined (shown '-', null in JSON) when both annotators gave one and
    the same label to every patient.
    """
    from clinex.cohort.stats import agreement_dirs

    res = agreement_dirs(dir_a, dir_b)
    if as_json:
        typer.echo(res.model_dump_json())
        return

    def fmt(x: float | None) -> str:
        return "-" if x is None else f"{x:.3f}"

    rows = [["criterion", "n", "observed", "kappa", "A met", "B met"]]
    for name, r in [*res.criteria.items(), ("pooled", res.pooled)]:
        rows.append([name, str(r.n), fmt(r.observed), fmt(r.kappa), str(r.a_met), str(r.b_met)])
    _print_table(f"Agreement - {res.n_patients} patients, mean kappa {fmt(res.mean_kappa)}", rows)


# --- screen: decide the criteria for patients (engine: clinex.cohort.engine) -------------


@app.command("screen")
@llm_options
def screen(
    paths: list[str] = typer.Argument(..., help="n2c2 XML files, note folders, or folders of them."),
    criteria: list[str] = typer.Option(
        ["n2c2"], "--criteria", "-c", help="'n2c2' (the 13 packaged criteria) or criterion files/folders (repeatable)."
    ),
    output: str = typer.Option(
        ..., "--output", "-o", help="Folder (n2c2 XML with TAGS filled) or a .json / .jsonl / .csv file."
    ),
    model: str = typer.Option(
        None, "--model", "-m",
        help=f"Cohort model: {' | '.join(_COHORT_MODELS)} (default $CLINEX_COHORT_MODEL, else auto = rules).",
    ),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar or summary."),
    batch_size: int = typer.Option(32, "--batch-size", help="Note pieces per spaCy/medspaCy nlp.pipe call (rules model)."),
    force: bool = typer.Option(False, "--force", help="Replace an earlier output file (or the XML files in the folder)."),
) -> None:
    """Screen patients against the criteria; write decisions with their evidence.

    A bad patient file (or an empty folder) is reported on stderr and skipped; all
    others are screened. A record whose date is missing or does not parse gets one
    warning line per patient on stderr. Exit status: 0 when every patient was
    screened, 1 when some were skipped (the others are written), 2 when none could
    be screened or the usage is wrong (bad output type, unknown criteria). The model is
    --model, else the environment variable CLINEX_COHORT_MODEL, else auto.
    """
    from rich.console import Console

    from clinex.cohort import surface
    from clinex.cohort.models import check_model_name
    from clinex.errors import ClinexError, InputError
    from clinex.progress import Progress
    from clinex.surface import Settings, exit_status, finish

    if batch_size < 1:  # the option's own message, as `clinex pv extract --batch-size`
        raise InputError(f"--batch-size must be >= 1; got {batch_size}", field="--batch-size")
    settings = Settings.resolve("cohort", model=model)
    settings.load(check_model_name)
    model = settings.model
    total = surface.count_patients(paths)
    errors: list[ClinexError] = []
    console = Console(stderr=True)
    options = {"batch_size": batch_size} if batch_size != 32 else None
    with Progress("screen", total=total, unit="patients", enabled=not quiet and total > 1) as bar:
        n = surface.screen_paths(paths, output, criteria, errors=errors, model=model, options=options, force=force,
                                 on_patient=lambda _p: bar.advance())
    if not quiet:
        console.print(f"screened {n} patient(s), {len(errors)} skipped -> {output}" if n else
                      f"no patient could be screened ({len(errors)} skipped); nothing written")
    if n == 0 and not errors:
        raise InputError("no patient could be screened")
    # each skipped patient's reason, naming its file or folder, is already on stderr
    finish(exit_status(n, len(errors)))


@app.command("criteria")
def criteria_cmd(
    specs: list[str] = typer.Argument(None, help="'n2c2' (default) or criterion files/folders to validate and list."),
) -> None:
    """Validate criterion files and list their concepts, labs, windows and rules."""
    from rich.console import Console
    from rich.table import Table

    from clinex.cohort.criteria import load_criteria

    crits = load_criteria(specs or ["n2c2"])
    table = Table(title=f"{len(crits)} criteria")
    for head in ("criterion", "labels (true/otherwise)", "concepts", "labs", "window (days)", "rule", "file"):
        table.add_column(head)
    for c in crits:
        windows = sorted({w for w in [*(s.window_days for s in c.concepts.values()), *(s.window_days for s in c.labs.values())] if w})
        rule = c.rule if isinstance(c.rule, str) else c.rule.model_dump_json(by_alias=True)
        table.add_row(
            c.name, f"{c.when_true} / {c.otherwise}", ", ".join(c.concepts) or "-", ", ".join(c.labs) or "-",
            ", ".join(map(str, windows)) or "-", rule, c.source.rsplit("/", 1)[-1] if c.source else "",
        )
    Console(width=200).print(table)
