"""``clinex rob ...`` commands (typer sub-app mounted by :mod:`clinex.cli`).

Each command parses its options, calls the Python API and prints with rich; heavy
libraries are imported inside the commands so that ``clinex --help`` stays fast.
"""

from __future__ import annotations

import typer

app = typer.Typer(no_args_is_help=True, pretty_exceptions_show_locals=False)

# Commands are added below, one function per verb.


@app.command("iaa")
def iaa(
    dir_a: str = typer.Argument(..., help="Reference annotator: tagtog ann.json folder or clinex JSON folder."),
    dir_b: str = typer.Argument(..., help="Other annotator (same kinds)."),
    texts: str = typer.Option(None, "--texts", help="Folder of the documents (tagtog plain.html/pool, PDFs, ...)."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as one JSON object."),
    align: bool = typer.Option(
        False, "--align/--no-align",
        help="Realign tagtog offsets that miss their text (default off: the paper's counting).",
    ),
) -> None:
    """Agreement of DIR_B with DIR_A: token-level F1 per SQ/domain, PABAK and kappa on judgements.

    Counting (default, reproduces the RoBuster paper's "before placards" row):
    whitespace tokens of the pages DIR_A annotated; a token carries an SQ if any
    character overlaps a span of it; per-SQ F1 = 2TP/(2TP+FP+FN) in %, truncated
    to 2 decimals; domain = mean of its SQs; overall = mean of the SQs used.
    """
    from rich.console import Console
    from rich.table import Table

    from clinex.rob.iaa import compare

    report = compare(dir_a, dir_b, texts=texts, align=align)
    err = Console(stderr=True)
    for w in report.warnings:
        err.print(f"warning: {w}", markup=False, highlight=False)
    if as_json:
        typer.echo(report.model_dump_json())
        return
    out = Console(width=120)
    t = Table(title=f"Token-level pairwise F1 (%) - {report.documents} documents, {report.tokens} tokens")
    t.add_column("Domain")
    t.add_column("F1", justify="right")
    t.add_column("SQs (F1)")
    for d in report.domains:
        sqs = ", ".join(f"{s.sq} {s.f1:.2f}" if s.used else f"{s.sq} -" for s in report.sqs
                        if s.domain == d.domain)
        t.add_row(f"{d.domain} {d.name}", f"{d.f1:.2f}", sqs)
    t.add_row("Overall (SQs used)", f"{report.overall_f1:.2f}", "")
    out.print(t)
    j = Table(title="Judgement agreement (risk levels; k = 3)")
    for col in ("Scope", "n", "Observed", "PABAK", "Cohen's kappa"):
        j.add_column(col, justify="left" if col == "Scope" else "right")

    def fmt(x: float | None) -> str:
        return "-" if x is None else f"{x:.3f}"

    for r in report.judgements:
        j.add_row(r.scope, str(r.n), fmt(r.observed), fmt(r.pabak), fmt(r.kappa))
    out.print(j)
