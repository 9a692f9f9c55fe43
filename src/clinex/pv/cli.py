"""``clinex pv ...`` commands (typer sub-app mounted by :mod:`clinex.cli`).

Each command parses its options, calls the Python API and prints with rich; heavy
libraries are imported inside the commands so that ``clinex --help`` stays fast.
"""

from __future__ import annotations

import typer

app = typer.Typer(no_args_is_help=True, pretty_exceptions_show_locals=False)

# Commands are added below, one function per verb.


# --- evaluate (PHEE metric; owner: PV-A) -------------------------------------------
from pathlib import Path as _Path  # noqa: E402


def _pct(value: float | None) -> str:
    return "" if value is None else f"{100 * value:.2f}"


@app.command("evaluate")
def evaluate(
    gold: _Path = typer.Option(..., "--gold", help="Gold PHEE JSON lines file."),
    pred: _Path = typer.Option(..., "--pred", help="Predicted PHEE JSON lines file (same sentence ids)."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object (fractions) instead of a table."),
) -> None:
    """Score predicted events against gold with the PHEE paper's metrics (§4.2).

    Trigger identification/classification, event classification, and argument
    identification/classification (main, sub, all, per role) as exact-match and
    token P/R/F1, micro-averaged; see docs/pv.md. Sentences missing from PRED
    count as predicting nothing; an id in PRED but not in GOLD is an error.
    """
    import json

    from rich.console import Console
    from rich.table import Table

    from clinex.pv.evaluate import evaluate_files

    result = evaluate_files(gold, pred)
    if as_json:
        typer.echo(json.dumps(result))
        return

    table = Table(title=f"PHEE evaluation (%) — gold {gold.name}, pred {pred.name}")
    for col in ("metric", "EM P", "EM R", "EM F1", "token P", "token R", "token F1"):
        table.add_column(col, justify="left" if col == "metric" else "right")

    def row(name: str, s: dict, prefix: str = "em_") -> None:
        if prefix == "em_":
            em = (s["em_precision"], s["em_recall"], s["em_f1"])
        else:
            em = (s["precision"], s["recall"], s["f1"])
        tok = (s.get("token_precision"), s.get("token_recall"), s.get("token_f1"))
        table.add_row(name, *map(_pct, em), *map(_pct, tok))

    row("Trig-I", result["trigger"]["identification"], prefix="")
    row("Trig-C", result["trigger"]["classification"], prefix="")
    row("Event-C", result["event_classification"], prefix="")
    table.add_section()
    for mode, label in (("identification", "Arg-I"), ("classification", "Arg-C")):
        for group in ("main", "sub", "all"):
            row(f"{label} {group}", result["arguments"][mode][group])
    table.add_section()
    for role, s in result["per_role"].items():
        row(f"Arg-C {role}", s)
    table.add_section()
    for name, s in result["attributes"].items():
        row(f"cue {name}", s)
    Console(width=100).print(table)
