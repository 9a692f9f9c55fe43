"""``clinex rob ...`` commands (typer sub-app mounted by :mod:`clinex.cli`).

Each command parses its options, calls the Python API and prints with rich; heavy
libraries are imported inside the commands so that ``clinex --help`` stays fast.
"""

from __future__ import annotations

import typer

from clinex.llm.options import llm_options  # light: typer only
from clinex.rob.surface import AUTO_KIND as _AUTO_KIND  # light: models import lazily
from clinex.rob.surface import model_names as _evidence_names

_EVIDENCE_CHOICES = ", ".join(_evidence_names())  # help texts: the registry's names

app = typer.Typer(no_args_is_help=True, pretty_exceptions_show_locals=False)

# Commands are added below, one function per verb.


@app.command("assess")
@llm_options
def assess_cmd(
    inputs: list[str] = typer.Argument(
        ..., help="Trial reports: .pdf, .txt, .xml (JATS/PMC), .html, or folders of them."
    ),
    output: str = typer.Option(..., "--output", "-o", help="Output folder (created with the first file written)."),
    model: str = typer.Option(
        None, "--model", "-m",
        help=f"Evidence model: {_EVIDENCE_CHOICES} (auto = {_AUTO_KIND}), or a model file (see 'clinex rob train'); "
        "default $CLINEX_ROB_MODEL, else auto.",
    ),
    multiple_some_concerns_high: int = typer.Option(
        None, "--multiple-some-concerns-high", min=2,
        help="Overall High when at least this many domains are Some concerns (RoB 2's optional judgement); "
        "every output then says which trials it raised and why.",
    ),
    html: bool = typer.Option(True, "--html/--no-html", help="Write the HTML report of each trial."),
    plot: bool = typer.Option(
        True, "--plot/--no-plot", help="Write the traffic-light and summary plots (PNG and SVG)."
    ),
    weights: str = typer.Option(
        None, "--weights",
        help="CSV with columns study,weight (study = output id; default weight 1) for robvis.csv and the summary plot.",
    ),
    force: bool = typer.Option(False, "--force", help="Replace output files of an earlier run in OUTPUT."),
) -> None:
    """Assess trial reports with RoB 2 and write JSON, HTML, a robvis table and plots into OUTPUT.

    Per trial: OUTPUT/<id>.rob.json (every signalling question: response, judgement,
    confidence, evidence spans with page and character offsets) and OUTPUT/<id>.rob.html
    (self-contained report with the evidence highlighted); for the whole batch:
    OUTPUT/robvis.csv (Study,D1..D5,Overall,Weight, robvis' RoB 2 template),
    OUTPUT/traffic_light.png and .svg, and OUTPUT/summary.png and .svg (weighted share
    of trials per judgement, per domain and overall). Input files, the --weights file
    included, are never overwritten (a clashing output name gets a -2, -3 ... suffix;
    the table, robvis.csv and the plots label each trial by its output id). A folder
    input stands for its .pdf, .txt, .xml, .html and .htm files (not sub-folders), in
    name order. OUTPUT is not created when nothing is written.

    No silent overwrite: when OUTPUT already holds a file this run would write, the
    command stops before assessing anything (exit 2, naming the first such file)
    unless --force is given, which replaces them. All inputs are read first so that
    the output names are known; then they are assessed.

    The model is --model, else the environment variable CLINEX_ROB_MODEL, else auto.

    Exit status: 0 all inputs assessed; 1 some inputs could not be read or assessed
    (each reported on stderr, all others written); 2 no input could be assessed, or a
    bad option / model / weights file, or outputs exist without --force (ClinexError).
    """
    from rich.console import Console

    from clinex.errors import InputError
    from clinex.rob import surface
    from clinex.rob.report import OutputNamer
    from clinex.rob.robvis import read_weights
    from clinex.surface import Settings, exit_status, finish

    err = Console(stderr=True, highlight=False)
    if weights is not None:
        read_weights(weights)  # format errors now; the study names once the inputs are read
    inputs, failed = surface.expand_inputs(
        inputs, lambda item, reason: err.print(f"skipped {item}: {reason}", markup=False, soft_wrap=True))
    run = _AssessRun(err, len(inputs) + failed, failed)  # files, plus folders without any report
    namer = OutputNamer(output, [*inputs, *([weights] if weights else [])])
    batch = _batch_paths(namer, plot)
    if not force:
        _refuse_existing([batch["robvis"], *batch.get("traffic_light", ()), *batch.get("summary", ())])
    evidence_model = Settings.resolve("rob", model=model).load(surface.load_model)
    done = run.assess_all(inputs, namer, evidence_model, weights, html=html, force=force,
                          multiple_some_concerns_high=multiple_some_concerns_high)
    if not done:
        raise InputError(f"none of the {run.total} input(s) could be assessed", field="inputs")
    batch_written = _write_batch(done, batch, plot, run.weight_of)
    _print_assessed(done, batch_written)
    if run.failed:
        err.print(f"{run.failed} of {run.total} input(s) skipped (see above)", markup=False, soft_wrap=True)
    finish(exit_status(len(done), run.failed))


def _batch_paths(namer, plot: bool) -> dict:  # noqa: ANN001 - OutputNamer
    """The batch files of a run: robvis.csv, and the plots' PNG and SVG with ``plot``."""
    batch = {"robvis": namer.path("robvis", ".csv")}
    if plot:
        batch["traffic_light"] = namer.paths("traffic_light", ".png", ".svg")
        batch["summary"] = namer.paths("summary", ".png", ".svg")
    return batch


class _AssessRun:
    """The trials of one ``clinex rob assess``: read them all, then assess them, skipping bad ones.

    Attributes
    ----------
    total : int
        Inputs (files, plus folders without any report).
    failed : int
        Inputs skipped so far (each reported on stderr).
    weight_of : dict
        The ``--weights`` of the trials read (by output label).
    """

    def __init__(self, err, total: int, failed: int) -> None:  # noqa: ANN001 - rich Console
        self.err, self.total, self.failed, self.weight_of = err, total, failed, {}

    def skipped(self, path, exc: Exception) -> None:  # noqa: ANN001
        """Report one input skipped (a reader or model bug as such, never a traceback)."""
        from clinex.errors import ClinexError

        self.failed += 1
        reason = str(exc) if isinstance(exc, ClinexError) else (
            f"unexpected {type(exc).__name__} (please report)")  # a reader or model bug
        self.err.print(f"skipped {path}: {reason}", markup=False, soft_wrap=True)

    def read_all(self, inputs: list[str], namer, progress) -> list:  # noqa: ANN001
        """(path, document, json path, html path, label) of every input that can be read."""
        from clinex.rob import surface

        loaded = []
        for path in inputs:
            try:
                document = surface.load_trial(path)
            except Exception as exc:  # a reader bug must not stop the batch either
                self.skipped(path, exc)
            else:
                json_path, html_path = namer.paths(document.id, ".rob.json", ".rob.html")
                label = json_path.name[: -len(".rob.json")]  # trial, trial-2, ...
                loaded.append((path, document, json_path, html_path, label))
            progress.advance()
        return loaded

    def assess_all(self, inputs: list[str], namer, evidence_model, weights: str | None, *, html: bool,  # noqa: ANN001
                   force: bool, multiple_some_concerns_high: int | None) -> list:
        """Read every input, then assess and write each trial: ``[(result, written, label)]``.

        Raises
        ------
        InputError
            No input could be read; an output exists without ``force``; an output the OS
            refuses to write (not this trial's fault: the run stops).
        """
        from clinex.errors import InputError
        from clinex.progress import Progress
        from clinex.rob import surface
        from clinex.rob.report import write_html, write_json
        from clinex.rob.robvis import read_weights

        done = []
        with Progress("reading", total=len(inputs), unit="reports", enabled=len(inputs) >= 2) as progress:
            loaded = self.read_all(inputs, namer, progress)
            if not loaded:
                raise InputError(f"none of the {self.total} input(s) could be assessed", field="inputs")
            if not force:
                _refuse_existing(p for _, _, j, h, _ in loaded for p in ([j, h] if html else [j]))
            self.weight_of = read_weights(weights, {lab for *_, lab in loaded}) if weights else {}
            progress.reset("assessing", total=len(loaded))
            for path, document, json_path, html_path, label in loaded:
                try:
                    result = surface.assess(document, evidence_model,
                                            multiple_some_concerns_high=multiple_some_concerns_high)
                    written = [write_json(result, json_path)]
                    if html:
                        written.append(write_html(result, document, html_path))
                except Exception as exc:
                    if isinstance(exc, InputError) and exc.path in (str(json_path), str(html_path)):
                        # an output the OS refuses to write (full disk, read-only folder) stops the run with
                        # [CLX001] naming the file and the reason: it is not this trial's fault; files
                        # already written are whole (clinex.io.atomic), a half-written one is never left
                        raise
                    self.skipped(path, exc)
                else:
                    done.append((result, written, label))
                progress.advance()
        return done


def _write_batch(done: list, batch: dict, plot: bool, weight_of: dict) -> list:
    """Write the plots (with ``plot``) and robvis.csv of the assessed trials; the paths written."""
    from clinex.rob.plot import plot_summary, plot_traffic_light
    from clinex.rob.robvis import robvis_rows, write_robvis_csv

    rows = robvis_rows([r for r, _, _ in done], [lab for _, _, lab in done], weight_of)
    batch_written = []
    if plot:
        batch_written += plot_traffic_light([r for r, _, _ in done], *batch["traffic_light"],
                                            labels=[lab for _, _, lab in done])
        batch_written += plot_summary(rows, None, *batch["summary"])
    batch_written.append(write_robvis_csv(rows, batch["robvis"]))
    return batch_written


def _print_assessed(done: list, batch_written: list) -> None:
    """The judgement table, any --multiple-some-concerns-high change, and the files written (stdout)."""
    from rich.console import Console
    from rich.table import Table

    from clinex.rob.assess import decided_outside

    table = Table(title=f"RoB 2 ({done[0][0].model})",
                  caption="Outside M/R: k/n answers decided outside Methods/Results")
    for col in ("Trial", "D1", "D2", "D3", "D4", "D5", "Overall", "Outside M/R"):
        table.add_column(col)
    for result, _, label in done:
        k, n = decided_outside(result)
        table.add_row(label, *(d.risk for d in result.domains), result.overall, f"{k}/{n}")
    out = Console(width=120, highlight=False)
    out.print(table)
    for result, _, label in done:  # a judgement --multiple-some-concerns-high changed is never silent
        if result.overall_rule:
            out.print(f"{label}: Overall {result.overall_rule}", markup=False, soft_wrap=True)
    for _, written, _ in done:
        for p in written:
            out.print(f"wrote {p}", markup=False, soft_wrap=True)
    for p in batch_written:
        out.print(f"wrote {p}", markup=False, soft_wrap=True)


def _refuse_existing(paths) -> None:
    """Raise InputError naming the first of ``paths`` that exists (``assess`` without --force)."""
    from clinex.errors import InputError

    for p in paths:
        if p.exists() or p.is_symlink():
            raise InputError("output file exists; pass --force to replace the outputs of an "
                             "earlier run, or choose another --output folder", path=p)


def _judgement_table(rows, measures: tuple[str, ...]):
    """Judgement agreement rows (scope, n, then ``measures`` to 3 decimals, '-' if undefined)."""
    from rich.table import Table

    names = {"observed": "Observed", "pabak": "PABAK", "kappa": "Kappa"}
    table = Table(title="Judgements (levels k = 3; responses k = 5)")
    for col in ("Scope", "n", *(names[m] for m in measures)):
        table.add_column(col, justify="left" if col == "Scope" else "right", no_wrap=True)
    for r in rows:
        values = (getattr(r, m) for m in measures)
        table.add_row(r.scope, str(r.n), *("-" if v is None else f"{v:.3f}" for v in values))
    return table


def _f1_tables(title: str, domains, sqs, overall_label: str, overall: float) -> list:
    """Two tables that fit 80 columns unwrapped: F1 per domain, then per SQ by domain."""
    from rich import box
    from rich.table import Table
    from rich.text import Text

    t = Table(box=box.SIMPLE_HEAD)
    t.add_column("Domain", no_wrap=True)
    t.add_column("F1", justify="right", no_wrap=True)
    for d in domains:
        t.add_row(f"{d.domain} {d.name}", f"{d.f1:.2f}")
    t.add_row(overall_label, f"{overall:.2f}")
    q = Table(box=box.SIMPLE_HEAD)
    q.add_column("", no_wrap=True)
    q.add_column("F1 (%) per signalling question", no_wrap=True)
    for d in domains:
        q.add_row(d.domain, "  ".join(f"{s.sq} {s.f1:.2f}" if s.used else f"{s.sq} -"
                                      for s in sqs if s.domain == d.domain))
    return [Text(title, overflow="fold"), t, q]


def _print_agreement(result, title: str, overall_label: str, measures: tuple[str, ...]):
    """Print the F1 tables and the judgement table of an IAA or LODO result on stdout.

    ``result`` has ``domains``, ``sqs``, ``overall_f1`` and ``judgements`` (``IAAReport``
    or ``LODOResult``); returns the 80-column console for any further lines.
    """
    from rich.console import Console

    out = Console(width=80, highlight=False)
    for t in _f1_tables(title, result.domains, result.sqs, overall_label, result.overall_f1):
        out.print(t)
    out.print(_judgement_table(result.judgements, measures))
    return out


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

    from clinex.rob.iaa import compare

    report = compare(dir_a, dir_b, texts=texts, align=align)
    err = Console(stderr=True)
    for w in report.warnings:
        err.print(f"warning: {w}", markup=False, highlight=False, soft_wrap=True)
    if as_json:
        typer.echo(report.model_dump_json())
        return
    _print_agreement(report, f"Token-level pairwise F1 (%), {report.documents} documents, {report.tokens} tokens",
                     "Overall (SQs used)", ("observed", "pabak", "kappa"))


@app.command("train")
def train_cmd(
    corpus: str = typer.Argument(..., help="Annotated corpus: a tagtog export folder (plain.html/, ann.json/)."),
    annotator: list[str] = typer.Option(
        ["roger-annotation"], "--annotator", "-a",
        help="Annotator whose spans to learn from; repeat to pool several, 'all' for every member.",
    ),
    out: str = typer.Option(None, "--out", "-o", help="Model file to write (default: $CLINEX_DATA/models/rob-sentence.joblib, which --model auto/sentence then use)."),
    force: bool = typer.Option(False, "--force", help="Replace an existing model file."),
    c: float = typer.Option(1.0, "--C", help="Inverse L2 regularisation of the logistic regressions."),
    threshold: float = typer.Option(0.3, help="Evidence probability threshold per SQ."),
    cue_prior: float = typer.Option(1.0, help="Cue matches score at least cue_prior x cue weight (0: classifier only)."),
    max_evidence: int = typer.Option(3, help="Most evidence sentences kept per SQ."),
    cues: bool = typer.Option(True, "--cues/--no-cues", help="Use the cue lexicon's matches as features and responses."),
) -> None:
    """Train the sentence evidence model (TF-IDF + logistic regression per SQ) on CORPUS.

    Only the sentence model is trained; the cue model is a lexicon. Load only model
    files you made or trust (they are joblib pickles).
    """
    from pathlib import Path

    from rich.console import Console

    from clinex.errors import InputError
    from clinex.rob.evidence import default_model_path
    from clinex.rob.train import load_training_corpus, train_sentence_model

    err = Console(stderr=True)
    target = Path(out) if out else default_model_path()
    if target.exists() and not force:
        raise InputError("model file exists; pass --force to replace it", path=target)
    problems: list[str] = []
    with err.status("reading the corpus"):
        data = load_training_corpus(corpus, annotator, warnings=problems)
    for w in problems:
        err.print(f"warning: {w}", markup=False, highlight=False)
    params = {"C": c, "threshold": threshold, "max_evidence": max_evidence, "use_cues": cues,
              "cue_prior": cue_prior}
    with err.status(f"training on {len(data)} documents"):
        model = train_sentence_model(corpus, annotator, params=params, corpus=data)
    model.save(target, force=True)  # atomic: an earlier model stays until the new one is whole
    pos = ", ".join(f"{q} {n}" for q, n in model.n_positive_.items() if n)
    typer.echo(f"trained {model.name} on {len(data)} documents, {model.n_segments_} segments "
               f"(positive segments per SQ: {pos}); wrote {target}")


@app.command("evaluate")
def evaluate_cmd(
    corpus: str = typer.Argument(..., help="Annotated corpus: a tagtog export folder."),
    model: str = typer.Option("sentence", "--model", "-m", help="sentence (retrained per fold), rules or cues."),
    gold: str = typer.Option("roger-annotation", "--gold", help="Gold annotator (member name)."),
    annotator: list[str] = typer.Option(
        ["roger-annotation"], "--annotator", "-a",
        help="Training annotator(s) of the sentence model; repeat to pool, 'all' for every member.",
    ),
    doc: list[str] = typer.Option(None, "--doc", help="Evaluate only this document id (repeatable)."),
    lexicon: str = typer.Option(None, "--lexicon", help="Cue lexicon file for --model cues (default: the packaged one)."),
    as_json: bool = typer.Option(False, "--json", help="Print the result as one JSON object."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="List every corpus warning (default: one summary line)."),
) -> None:
    """Leave-one-document-out evaluation of an evidence model against a gold annotator.

    Each document is predicted by a model trained on the other documents (the cue
    model needs no training) and scored as `clinex rob iaa` scores an annotator:
    token-level pairwise F1 per SQ and domain on the pages the gold annotator
    annotated, and observed agreement / PABAK / kappa of the domain judgements.
    """
    import re

    from rich.console import Console

    from clinex.progress import Progress
    from clinex.rob.lodo import leave_one_document_out

    err = Console(stderr=True)
    with Progress(f"LODO {model}", unit="documents") as bar:

        def step(msg: str) -> None:  # "[3/10] doc: 1.20 s"
            m = re.match(r"\[(\d+)/(\d+)\]", msg)
            if m:
                bar.update(int(m.group(1)), int(m.group(2)))

        params = {"lexicon": lexicon} if lexicon and model == "cues" else None
        result = leave_one_document_out(corpus, model=model, gold=gold,
                                        train_annotators=annotator, documents=doc or None,
                                        params=params, progress=step)
    if verbose:
        for w in result.warnings:
            err.print(f"warning: {w}", markup=False, highlight=False, soft_wrap=True)
    elif result.warnings:
        err.print(f"warning: {len(result.warnings)} problem(s) reading the corpus (tagtog offsets "
                  "realigned or clamped); --verbose lists them", markup=False, highlight=False,
                  soft_wrap=True)
    if as_json:
        typer.echo(result.model_dump_json())
        return
    out = _print_agreement(result, f"LODO {result.model_name} vs {result.gold}: token F1 (%), "
                                   f"{result.documents} documents", "Mean over SQs used", ("observed", "pabak"))
    out.print(f"{result.seconds_per_trial:.3f} s per trial to predict "
              f"({result.seconds_per_page:.4f} s per page); {result.train_seconds:.1f} s training per fold")


@app.command("agreement")
def agreement_cmd(
    gold: str = typer.Argument(..., help="Expert answers: a tagtog annotator folder or a folder of *.key.yaml."),
    pred: str = typer.Argument(None, help="Folder of *.rob.json (clinex rob assess output); omit to run --model."),
    model: str = typer.Option(
        None, "--model", "-m",
        help="Run this evidence model over the gold's reports instead of reading PRED (default when PRED is absent: "
        "$CLINEX_ROB_MODEL, else auto).",
    ),
    texts: str = typer.Option(
        None, "--texts",
        help="tagtog GOLD: the export's plain.html/pool folder; answer keys: the folder of the reports "
             "(<id>.txt/.xml/.nxml/.pdf) for keys without a .txt beside them.",
    ),
    threshold: float = typer.Option(
        None, "--threshold", min=0.0, max=100.0,
        help="Evidence match: rapidfuzz partial_ratio >= this (default 80).",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the report as one JSON object."),
) -> None:
    """Observed agreement of automated answers with an expert (RoBuster's PO_response, PO_extraction).

    Per signalling question, per domain (pooled) and overall: n and PO_response,
    exact (Y/PY/PN/N/NI/NA) and folded (PY -> Y, PN -> N); n and PO_extraction (a
    predicted evidence text fuzzy-matches a gold one: partial_ratio of the
    normalised texts >= 80); and the domain / overall judgement agreement where the
    gold has levels; last, how many of the answers taken from the text rest on evidence
    outside the Methods and Results. Bad key files are reported on stderr and skipped.

    Exit status: 0 every gold document was counted (predictions without a key are listed
    on stderr and ignored); 1 some were skipped (each reported on stderr, the others
    counted); 2 nothing could be counted or a bad option.
    """
    from rich.console import Console

    from clinex.errors import InputError
    from clinex.rob.answer_agreement import COUNTED_AS_WRITTEN, IGNORED_PREDICTION
    from clinex.surface import exit_status, finish

    if pred is not None and model is not None:
        raise InputError("give either PRED (a folder of *.rob.json) or --model, not both", field="model")
    err = Console(stderr=True)
    report = _agreement_report(gold, pred, model, texts, threshold, err)
    # report.warnings holds `problems` and its own lines: each printed once, here
    for w in report.warnings:
        err.print(f"warning: {w}", markup=False, highlight=False, soft_wrap=True)
    # exit 1 only when gold documents were skipped; a prediction without a key is only listed
    skipped = [w for w in report.warnings if not w.endswith((IGNORED_PREDICTION, COUNTED_AS_WRITTEN))]
    if as_json:
        typer.echo(report.model_dump_json())
    else:
        _print_answer_agreement(report)
    finish(exit_status(report.documents, len(skipped)))  # some key files or documents skipped: 1, as `assess`


def _agreement_report(gold: str, pred: str | None, model: str | None, texts: str | None,
                      threshold: float | None, err):  # noqa: ANN001, ANN202 - rich Console; AgreementReport
    """The agreement of PRED's (or the model's) answers with the gold; warnings so far printed on an error."""
    from clinex.errors import ClinexError
    from clinex.rob import surface
    from clinex.rob.answer_agreement import (
        THRESHOLD,
        answer_agreement,
        assess_gold,
        load_gold,
        load_predictions,
    )
    from clinex.surface import Settings

    problems: list[str] = []
    try:
        gold_docs = load_gold(gold, texts=texts, warnings=problems)
        if pred is not None:
            predictions = load_predictions(pred, warnings=problems)
            pred_name = pred
        else:
            settings = Settings.resolve("rob", model=model)
            name = settings.model
            evidence_model = settings.load(surface.load_model)
            with err.status(f"assessing {len(gold_docs)} documents with {name}"):
                predictions = assess_gold(gold_docs, evidence_model, warnings=problems)
            pred_name = f"model:{name}"
        return answer_agreement(gold_docs, predictions, threshold=THRESHOLD if threshold is None else threshold,
                                gold_name=gold, predictions_name=pred_name, warnings=problems)
    except ClinexError:
        # what was skipped before the error (bad key files, reports missing beside keys)
        for w in problems:
            err.print(f"warning: {w}", markup=False, highlight=False, soft_wrap=True)
        raise


def _print_answer_agreement(report) -> None:  # noqa: ANN001 - AgreementReport
    """The agreement tables: per domain, per signalling question, and the answers decided outside M/R."""
    from rich import box
    from rich.console import Console
    from rich.table import Table

    def po(v: float | None) -> str:
        return "-" if v is None else f"{v:.3f}"

    out = Console(width=110, highlight=False)
    plural = "" if report.documents == 1 else "s"
    out.print(f"Agreement of {report.predictions} with {report.gold}: {report.documents} document{plural}, "
              f"evidence match partial_ratio >= {report.threshold:g}", markup=False, soft_wrap=True)
    cols = ("n", "exact", "folded", "n ev", "PO ev")
    t = Table(box=box.SIMPLE_HEAD, title="Per domain (pooled over its SQs): PO_response exact / folded, PO_extraction, judgement PO")
    t.add_column("Domain", no_wrap=True)
    for c in (*cols, "n judg", "PO judg"):
        t.add_column(c, justify="right", no_wrap=True)
    for d in report.domains:
        t.add_row(f"{d.domain} {d.name}", str(d.n_response), po(d.po_response_exact),
                  po(d.po_response_folded), str(d.n_extraction), po(d.po_extraction),
                  str(d.n_judgement), po(d.po_judgement))
    o = report.overall
    t.add_row("Overall", str(o.n_response), po(o.po_response_exact), po(o.po_response_folded),
              str(o.n_extraction), po(o.po_extraction), str(o.n_judgement), po(o.po_judgement))
    out.print(t)
    q = Table(box=box.SIMPLE_HEAD, title="Per signalling question: PO_response exact / folded, PO_extraction")
    q.add_column("SQ", no_wrap=True)
    for c in cols:
        q.add_column(c, justify="right", no_wrap=True)
    for s in report.sqs:
        q.add_row(s.sq, str(s.n_response), po(s.po_response_exact), po(s.po_response_folded),
                  str(s.n_extraction), po(s.po_extraction))
    out.print(q)
    unknown = f" (sections unknown for {report.decided_unknown} answers)" if report.decided_unknown else ""
    share = report.share_decided_outside
    out.print(f"answers decided outside Methods/Results: {report.decided_outside} of "
              f"{report.decided_total} ({'-' if share is None else f'{share:.2f}'}){unknown}",
              markup=False, soft_wrap=True)
