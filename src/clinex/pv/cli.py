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

from clinex.llm.options import llm_options  # noqa: E402  (light: typer only)
from clinex.pv.surface import RECORDS_PER_CALL  # noqa: E402  (light: clinex.text only)
from clinex.pv.surface import model_names as _model_names  # noqa: E402  (light: no model library)

_MODEL_CHOICES = " | ".join(_model_names())  # help texts: the registry's names


def _pct(value: float | None) -> str:
    return "" if value is None else f"{100 * value:.2f}"


@app.command("evaluate")
def evaluate(
    gold: _Path = typer.Option(..., "--gold", help="Gold PHEE JSON lines file."),
    pred: _Path = typer.Option(..., "--pred", help="Predicted PHEE JSON lines file (same sentence ids)."),
    as_json: bool = typer.Option(
        False, "--json", help="Print one flat JSON object (fractions, dotted keys such as trigger.classification.f1)."
    ),
    nested: bool = typer.Option(False, "--nested", help="With --json: print the nested JSON object instead."),
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

    from clinex.pv.evaluate import evaluate_files, flatten

    result = evaluate_files(gold, pred, on_warning=lambda msg: typer.echo(f"warning: {msg}", err=True))
    if as_json or nested:
        typer.echo(json.dumps(result if nested else flatten(result)))
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


# --- extract / train (CRF + model registry; owner: PV-B) --------------------------------
from clinex.pv.surface import drug_screen  # noqa: E402,F401  (public here since `--drug`; lives in the surface)
from clinex.pv.surface import records_from_text as _pv_records_from_text  # noqa: E402,F401


def _pv_echo_events(item) -> None:  # noqa: ANN001 - SentenceEvents, imported lazily
    """Print one record and its events in a readable form (stdout)."""
    from rich.console import Console
    from rich.markup import escape

    console = Console(highlight=False, soft_wrap=True)
    console.print(f"[bold]{escape(item.id)}[/bold]: {escape(item.text)}")
    if item.event_probability is not None:
        console.print(f"  event probability {item.event_probability:.2f}")
    if not item.events:
        console.print("  (no events)")
    for k, ev in enumerate(item.events, start=1):
        score = f" p={ev.score:.2f}" if ev.score is not None else ""
        console.print(
            f"  E{k} [cyan]{ev.event_type}[/cyan] trigger '{escape(ev.trigger.text)}' "
            f"[{ev.trigger.start}:{ev.trigger.end}]{score}"
        )
        for arg in ev.arguments:
            console.print(f"     {arg.role:<10} '{escape(arg.span.text)}' [{arg.span.start}:{arg.span.end}]"
                          f"{_resolved(arg)}")
            for sub in ev.sub_arguments.get(arg.role, ()):
                if arg.span.overlaps(sub.span.start, sub.span.end):
                    console.print(f"       .{sub.role:<12} '{escape(sub.span.text)}' [{sub.span.start}:{sub.span.end}]"
                                  f"{_resolved(sub)}{_normalised(sub)}")
        for main, subs in ev.sub_arguments.items():
            for sub in subs:
                if not any(a.role == main and a.span.overlaps(sub.span.start, sub.span.end) for a in ev.arguments):
                    console.print(
                        f"     {main}.{sub.role:<8} '{escape(sub.span.text)}' [{sub.span.start}:{sub.span.end}]"
                        f"{_resolved(sub)}{_normalised(sub)}"
                    )
        for comb in ev.combinations:
            console.print("     Combination " + " + ".join(f"'{escape(d.span.text)}'{_normalised(d)}"
                                                         for d in comb.drugs))
        for att in ev.attributes:
            cue = f" cue '{escape(att.cue.text)}' [{att.cue.start}:{att.cue.end}]" if att.cue else ""
            by = f" ({escape(att.source)})" if att.source else ""
            console.print(f"     {att.name}={att.value}{cue}{by}")


def _normalised(arg) -> str:  # noqa: ANN001 - Argument
    """' = Acetaminophen (DrugBank DB00316)' after a Drug the gazetteer knows (clinex.pv.normalise)."""
    from rich.markup import escape

    from clinex.pv.normalise import drug_entry, drug_label

    if arg.role != "Drug":
        return ""
    entry = drug_entry(arg.span.text)
    return "" if entry is None else f" = {escape(drug_label(entry))}"


def _resolved(arg) -> str:  # noqa: ANN001 - Argument
    """' (from sentence N, rule:...)' for an argument resolved across the record's sentences."""
    if arg.from_sentence is None:
        return ""
    return f" (from sentence {arg.from_sentence}, {arg.source})"


def _pv_echo_pairs(item) -> None:  # noqa: ANN001 - SentenceEvents
    """Print the record's case-level drug -> reaction pairs (:func:`clinex.pv.pairs.record_pairs`)."""
    from rich.console import Console
    from rich.markup import escape

    from clinex.pv.pairs import record_pairs

    pairs = record_pairs(item)
    if not pairs:
        return
    console = Console(highlight=False, soft_wrap=True)
    console.print("  pairs:")
    for p in pairs:
        flags = [f for f in ("negated", "speculated", "dechallenge", "rechallenge", "across_sentences") if getattr(p, f)]
        ev = ", ".join(f"[{a}:{b}]" for a, b in p.evidence)
        kind = "ADE" if p.event_type == "Adverse_event" else "PTE"
        console.print(f"     {kind} {escape(p.drug)} -> {escape(p.reaction)}"
                      f"{' (' + ', '.join(flags) + ')' if flags else ''}  sentences {ev}")


def _check_extract_options(text: str | None, input_path: str | None, example: bool, input_format: str,
                           output: _Path | None, fmt: str, batch_size: int, min_trigger_prob: float) -> None:
    """Raise InputError for a bad option of ``clinex pv extract`` (before any reading)."""
    from clinex.errors import InputError

    if fmt not in ("phee", "brat"):
        raise InputError(f"unknown --format {fmt!r}; use phee or brat", field="--format")
    if input_format not in ("auto", "text", "jsonl", "medline"):
        raise InputError(f"unknown --input-format {input_format!r}; use auto, text, jsonl or medline",
                         field="--input-format")
    sources = sum(x is not None and x is not False for x in (text, input_path, example or None))
    if sources != 1:
        raise InputError("give exactly one of TEXT, --input FILE or --example")
    if fmt == "brat" and (output is None or str(output) == "-"):
        raise InputError("--format brat needs --output FOLDER", field="--output")
    if batch_size < 1:
        raise InputError(f"--batch-size must be >= 1; got {batch_size}", field="--batch-size")
    if not 0.0 <= min_trigger_prob <= 1.0:
        raise InputError(f"--min-trigger-prob must be in [0, 1]; got {min_trigger_prob}", field="--min-trigger-prob")
    if fmt == "phee" and output is not None and str(output) != "-":
        if output.is_dir():
            raise InputError("is a folder, expected a file path for --output", path=output)


def _warn(line: str) -> None:
    """One line on stderr."""
    typer.echo(line, err=True)


def _print_output(items: list, output: _Path | None, model_name: str) -> None:
    """The events on stdout: the listing without --output, PHEE JSON lines with ``-o -``."""
    if output is None:
        typer.echo(f"model: {model_name}")
        for item in items:
            _pv_echo_events(item)
            _pv_echo_pairs(item)
        return
    from clinex.pv.formats.phee_json import dumps_phee

    for item in items:
        typer.echo(dumps_phee(item))


def _echo_counts(items: list, output: _Path) -> None:
    """The summary line of a written output (asserted events; negated ones apart, as ``clinex batch pv``)."""
    from clinex.pv.counts import event_counts

    c = event_counts(ev for i in items for ev in i.events)
    typer.echo(f"{len(items)} records, {c['n_events']} events asserted ({c['n_adverse']} adverse, "
               f"{c['n_therapeutic']} therapeutic), {c['n_events_negated']} negated -> {output}", err=True)


@app.command("extract")
@llm_options
def extract_cmd(
    text: str = typer.Argument(None, help="Text to analyse; '-' reads standard input."),
    input_path: str = typer.Option(
        None, "--input", "-i",
        help="Input file ('-' = stdin): plain text, JSON lines with 'id' and 'text', or PubMed/MEDLINE XML (.xml[.gz]).",
    ),
    input_format: str = typer.Option(
        "auto", "--input-format",
        help="auto | text | jsonl | medline (auto: .jsonl/.json or a first '{' means JSON lines; .xml, .xml.gz, "
        "gzip data or a <PubmedArticleSet> root means MEDLINE).",
    ),
    output: _Path = typer.Option(
        None, "--output", "-o", help="Write PHEE JSON lines here ('-' = stdout), or a folder with --format brat."
    ),
    fmt: str = typer.Option("phee", "--format", help="Output format for --output: phee | brat."),
    model: str = typer.Option(
        None, "--model", help=f"{_MODEL_CHOICES} | a model folder (default $CLINEX_PV_MODEL, else auto)."
    ),
    example: bool = typer.Option(False, "--example", help="Run on a bundled example sentence."),
    strict: bool = typer.Option(False, "--strict", help="Stop at the first bad JSON line (exit 2) instead of skipping it."),
    min_trigger_prob: float = typer.Option(
        0.0, "--min-trigger-prob", help="Drop events whose trigger probability is below this (0-1; default 0 keeps all)."
    ),
    force: bool = typer.Option(False, "--force", help="Replace an existing --output file (or brat files)."),
    batch_size: int = typer.Option(
        RECORDS_PER_CALL, "--batch-size", help="Records per model call (all surfaces batch the same way; memory grows with it)."
    ),
    drug: list[str] = typer.Option(
        None, "--drug",
        help="Keep only records mentioning this drug (any gazetteer synonym; whole word, any case); "
        "repeatable, or a file of one name a line. The others are counted as screened out.",
    ),
) -> None:
    """Extract adverse / therapeutic drug events (PHEE schema) from text.

    Plain text is split into sentences (one output record per sentence, ids
    NAME_1, NAME_2 ...); a JSON line (PHEE 'context' or 'id'/'text') is ONE
    output record (offsets into that line's text; a record of several sentences is
    read sentence by sentence). A PubMed/MEDLINE XML citation (.xml or .xml.gz) is ONE
    record: id = its PMID, text = title + " " + abstract (offsets into it).
    Empty text gives one record with no events. An existing output is
    never replaced without --force. The model is --model, else the environment
    variable CLINEX_PV_MODEL, else auto (as `clinex batch pv`).
    Exit status: 0 ok; 1 when some JSON lines or citations were bad (reported on stderr,
    skipped, all others written); 2 on bad input (binary / non-UTF-8 file, no
    usable line, unknown option value, existing or unwritable output) or a model error.
    """
    from clinex.progress import Progress
    from clinex.pv import surface
    from clinex.surface import Settings, exit_status, finish

    _check_extract_options(text, input_path, example, input_format, output, fmt, batch_size, min_trigger_prob)
    settings = Settings.resolve("pv", model=model)
    screen = drug_screen(drug) if drug else None  # a bad names file stops before any reading
    skipped: list[str] = []

    def note(exc: Exception) -> None:
        skipped.append(str(exc))
        typer.echo(f"skipped: {exc}", err=True)

    read = surface.read_input(text, input_path, example, input_format, strict, note, _warn)
    if screen is not None:  # --drug: only records that mention one of the drugs
        surface.screen_records(read, screen, _warn)
    surface.check_outputs(output, fmt, force, read)
    loaded = settings.load(surface.load)  # fail early (exit 2) on an unknown or missing model
    with Progress("extract", total=len(read.records), unit="records",
                  enabled=len(read.records) > batch_size) as bar:
        items, failed = surface.extract_batches(read, loaded, batch_size, min_trigger_prob, bar.advance)
    for exc in failed:  # the others are written; exit 1 (docs/pv.md)
        note(exc)
    if output is None or str(output) == "-":
        _print_output(items, output, surface.model_id(loaded))
    else:
        surface.write_output(items, output, fmt, force, _warn)
        _echo_counts(items, output)
    if skipped:
        what = "bad citations or failed records" if read.kind == "medline" else "bad lines or failed records"
        typer.echo(f"{len(skipped)} {what} skipped (see above); exit status 1", err=True)
    finish(exit_status(read.n_read, len(skipped)))


# --- train / gate (clinex.pv.train_cli) -------------------------------------------------
from clinex.pv.train_cli import (  # noqa: E402,F401  (light: typer only; private names kept importable here)
    _pv_check_params,
    _pv_parse_params,
    _pv_require_neural,
    _pv_score_dev,
    _pv_staging_dir,
    _pv_swap_in,
    _pv_train_into,
    gate_cmd,
    train_cmd,
)

app.command("train")(train_cmd)
app.command("gate")(gate_cmd)


# --- export-onnx (the torch-free default model; issue 12) ------------------------------
@app.command("export-onnx")
def export_onnx_cmd(
    model_dir: _Path = typer.Argument(..., help="A trained transformer model folder (kind transformer, variant joint)."),
    out: _Path = typer.Option(..., "--out", help="ONNX model folder to write (kind onnx; --model OUT runs it)."),
    int8: bool = typer.Option(False, "--int8", help="Dynamic int8 quantisation (smaller; check the dev figures)."),
    force: bool = typer.Option(False, "--force", help="Replace an existing model in --out."),
) -> None:
    """Export a transformer model to ONNX: run it with onnxruntime, without torch.

    Writes model.onnx (encoder and every tag layer in one graph), tokenizer.json,
    the sentence gate and model.json to OUT. Needs torch and onnx (clinex[train]).
    """
    from clinex.errors import InputError, ModelError

    try:
        from clinex.pv.models.transformer.export import export_onnx
    except ModuleNotFoundError as exc:
        raise ModelError(f"exporting needs {exc.name!r}; install it with: pip install 'clinex[train]'") from None
    if out.exists() and (not out.is_dir() or any(out.iterdir())) and not force:
        raise InputError("model folder exists and is not empty; pass --force to replace it", path=out)
    export_onnx(model_dir, out, quantize="int8" if int8 else None)
    typer.echo(f"exported {model_dir} to {out}", err=True)


# --- summarize (drug x reaction pairs of a batch run; issue 25 item 3) -----------------
@app.command("summarize")
def summarize_cmd(
    run: _Path = typer.Argument(..., help="The --output folder of a finished `clinex batch pv` run."),
    out: _Path = typer.Option(None, "--output", "-o", help="Folder for pairs.csv, pairs.parquet, pairs.html "
                              "(default RUN/summary)."),
    include_negated: bool = typer.Option(False, "--include-negated", help="Count negated events too."),
    include_speculated: bool = typer.Option(False, "--include-speculated", help="Count speculated events too."),
    force: bool = typer.Option(False, "--force", help="Replace the summary files in an existing --output folder."),
) -> None:
    """Drug x reaction pairs of a batch run: counts, years, evidence sentences (CSV, Parquet, HTML).

    Negated and speculated events are left out unless the options keep them; an
    unfinished run is refused (exit 2). Details: docs/pv.md, *Drug x reaction pairs*.
    """
    from clinex.pv.summary import SUMMARY_FILES, summarize_run

    s = summarize_run(run, out, include_negated=include_negated, include_speculated=include_speculated,
                      force=force, progress=True)
    for note in s.notes:
        typer.echo(note, err=True)
    left = [f"{n} {what} left out" for n, what, kept in ((s.n_events_negated, "negated", include_negated),
                                                          (s.n_events_speculated, "speculated", include_speculated))
            if not kept]
    typer.echo(f"{s.n_records} records, {s.n_events} events counted" + (f" ({', '.join(left)})" if left else "")
               + f", {s.n_pairs} drug x reaction pairs -> " + ", ".join(str(s.out_dir / f) for f in SUMMARY_FILES))


# --- e2b (E2B(R3) case reports from a batch run; issue 25 item 4) ----------------------
from clinex.pv.e2b_cli import e2b_cmd as _e2b_cmd  # noqa: E402  (light: typer only)

app.command("e2b")(_e2b_cmd)
