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
from clinex.pv.models import REGISTRY as _MODEL_REGISTRY  # noqa: E402  (light: no model library)
from clinex.pv.models import model_names as _model_names  # noqa: E402
from clinex.pv.pipeline import RECORDS_PER_CALL  # noqa: E402  (light: clinex.text only)

_MODEL_CHOICES = " | ".join(_model_names())  # help texts: the registry's names
_KIND_CHOICES = " | ".join(_MODEL_REGISTRY)
_TRAINABLE = " | ".join(k for k, v in _MODEL_REGISTRY.items() if v.trainable)


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
def _pv_records_from_text(text: str, name: str, path: str | None = None) -> tuple[list[tuple[str, str]], list[int]]:
    """Plain text -> records and their offsets in ``text``: :func:`clinex.pv.pipeline.text_records`
    (ids ``NAME_1``...)."""
    from clinex.pv.pipeline import text_records

    pieces = text_records(text, name, path)
    return [(rid, sent) for rid, sent, _ in pieces], [start for _, _, start in pieces]


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


def _gazetteer_keys(text: str) -> set[str]:
    """Canonical names (lower case) of the gazetteer drugs in ``text`` (any synonym)."""
    from clinex.pv.features import tokenize
    from clinex.pv.gazetteer import find_drugs

    words = [text[s:e] for s, e in tokenize(text)]
    return {str(rec["name"]).lower() for rec, _, _ in find_drugs(words) if rec.get("name")}


def _gazetteer_name_keys(name: str) -> set[str]:
    """Canonical names (lower case) of one ``--drug`` name: its own gazetteer entry (any case,
    words joined by one space), else the drugs its words name (a brand name and its dose form)."""
    from clinex.pv.gazetteer import drug_record

    own = {str(rec["name"]).lower() for rec in drug_record(" ".join(name.split()).lower()) if rec.get("name")}
    return own or _gazetteer_keys(name)


def drug_screen(values: list[str]):  # noqa: ANN201 - clinex.io.screen.TermScreen, imported lazily
    """The ``--drug NAME|FILE`` screen of ``clinex pv extract`` and ``clinex batch pv``.

    A record is kept when its text mentions one of the drugs: a whole-word, case-insensitive
    match of a name as given, or any name the drug gazetteer (:mod:`clinex.pv.gazetteer`)
    gives the same canonical drug ("paracetamol", "Tylenol" and "acetaminophen" are one).
    A value naming an existing file is read as one name a line (:func:`clinex.io.screen.read_terms`).

    Returns
    -------
    clinex.io.screen.TermScreen
        ``match(text)``; ``unknown`` lists the names the gazetteer does not know (matched as written).

    Raises
    ------
    InputError
        A names file with no name; EncodingError: a names file that is not UTF-8.
    """
    from clinex.io.screen import TermScreen, read_terms

    return TermScreen(read_terms(values), lookup=_gazetteer_keys, term_keys=_gazetteer_name_keys)


def _pv_medline_records(source, label: str, strict: bool, note) -> list[tuple[str, str]]:  # noqa: ANN001
    """(PMID, title + " " + abstract) of each citation of a PubMed/MEDLINE file (clinex.io.medline).

    Bad citations go to ``note`` (or raise with ``strict``). A file-level error (truncated gzip,
    not well formed, unsafe XML) is raised when no citation came before it or with ``strict``;
    otherwise it goes to ``note`` too and the citations before it are kept (exit 1).
    """
    from clinex.errors import ClinexError
    from clinex.io.limits import MAX_PV_TEXT_CHARS
    from clinex.io.medline import iter_medline

    records: list[tuple[str, str]] = []
    try:
        for c in iter_medline(source, path=label, errors="raise" if strict else "skip", on_error=note,
                              max_chars=MAX_PV_TEXT_CHARS):
            records.append((c.pmid, c.text))
    except ClinexError as exc:
        if strict or not records:
            raise
        note(exc)
    return records


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
    model: str = typer.Option("auto", "--model", help=f"{_MODEL_CHOICES} | a model folder."),
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
    never replaced without --force.
    Exit status: 0 ok; 1 when some JSON lines or citations were bad (reported on stderr,
    skipped, all others written); 2 on bad input (binary / non-UTF-8 file, no
    usable line, unknown option value, existing or unwritable output) or a model error.
    """
    import sys

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

    screen = drug_screen(drug) if drug else None  # a bad names file stops before any reading
    skipped: list[str] = []
    records: list[tuple[str, str]]
    offsets: list[int] | None = None  # plain text: where each sentence record starts
    in_file: _Path | None = None
    kind = "text"
    if example:
        from clinex.pv.examples import example as _example

        records = [_example(0)]
    elif text is not None and text != "-":
        records, offsets = _pv_records_from_text(text, "text")
    else:
        from clinex.io.medline import is_gzip, is_medline_file, looks_like_medline

        data: bytes | None = None
        if text == "-" or input_path == "-":
            data = sys.stdin.buffer.read() if hasattr(sys.stdin, "buffer") else sys.stdin.read().encode("utf-8")
            name, label = "stdin", "<stdin>"
        else:
            in_file = _Path(input_path)
            if in_file.is_dir():
                raise InputError("is a folder; give a file (plain text, JSON lines or PubMed/MEDLINE XML)", path=in_file)
            if not in_file.is_file():
                raise InputError("no such file", path=in_file)
            name, label = in_file.stem, str(in_file)
        kind = input_format
        if kind == "auto":
            from clinex.io.jsonl import is_jsonl

            if is_jsonl(in_file):
                kind = "jsonl"
            elif (is_medline_file(in_file) if data is None
                  else is_gzip(data[:2]) or looks_like_medline(data[:4096])):  # sniffed, not only named
                kind = "medline"
            else:
                if data is None:
                    data = in_file.read_bytes()
                kind = "jsonl" if is_jsonl(None, data) else "text"

        def note(exc: Exception) -> None:
            skipped.append(str(exc))
            typer.echo(f"skipped: {exc}", err=True)

        if kind == "medline":  # streamed from the file: a baseline file is never read whole
            import io

            records = _pv_medline_records(in_file if data is None else io.BytesIO(data), label, strict, note)
            if skipped and not records:
                raise InputError(f"no usable citation ({len(skipped)} bad citations)", path=label)
            if not records:
                typer.echo(f"warning: {label}: no citations (an empty <PubmedArticleSet>)", err=True)
        elif data is None:
            data = in_file.read_bytes()
        if kind == "jsonl":
            from clinex.pv.pipeline import jsonl_records

            # a record over MAX_PV_TEXT_CHARS is a bad line too (file:line, skipped)
            records = [
                (r.id, r.text)
                for r in jsonl_records(data, path=label, errors="raise" if strict else "skip", on_error=note)
            ]
            if skipped and not records:
                raise InputError(f"no usable line ({len(skipped)} bad lines)", path=label)
            if not records:
                typer.echo(f"warning: {label}: no records (empty JSON lines input)", err=True)
        elif kind == "text":
            from clinex.io.textfile import decode_text

            decoded = decode_text(data, path=label)
            records, offsets = _pv_records_from_text(decoded, name, label)
            if not decoded.strip():  # still one empty record (the one rule for blank text), but say so
                typer.echo(f"warning: {label}: no text ({len(data)} bytes); one record with no events", err=True)

    if screen is not None:  # --drug: only records that mention one of the drugs
        for unknown in screen.unknown:
            typer.echo(f"warning: --drug {unknown!r} is not in the drug gazetteer; matched as written only", err=True)
        keep = [k for k, (_, t) in enumerate(records) if screen.match(t)]
        n_all = len(records)
        records = [records[k] for k in keep]
        offsets = None if offsets is None else [offsets[k] for k in keep]
        typer.echo(f"--drug: {n_all - len(records)} of {n_all} records screened out "
                   f"(no mention of {', '.join(screen.terms[:5])}{', ...' if len(screen.terms) > 5 else ''})",
                   err=True)

    if output is not None and str(output) != "-" and in_file is not None:
        if output.exists() and output.resolve() == in_file.resolve():
            raise InputError("--output is the input file; refusing to overwrite it", path=output)
    if fmt == "phee" and output is not None and str(output) != "-" and output.exists() and not force:
        raise InputError("output file exists; pass --force to replace it", path=output)
    if fmt == "brat" and not force:
        for rid, _ in records:
            for suffix in (".txt", ".ann"):
                if (output / f"{rid}{suffix}").exists():
                    raise InputError("file exists; pass --force to replace it", path=output / f"{rid}{suffix}")

    from clinex.progress import Progress
    from clinex.pv.models import load_model, model_id
    from clinex.pv.pipeline import extract_records

    loaded = load_model(model)  # fail early (exit 2) on an unknown or missing model
    items = []
    failed: list[Exception] = []

    def record_failed(rid: str, exc: Exception) -> None:  # an LLM call that failed for one record
        failed.append(exc)

    with Progress("extract", total=len(records), unit="records", enabled=len(records) > batch_size) as bar:
        for b in range(0, len(records), batch_size):  # one batched model call per chunk
            part = records[b : b + batch_size]
            items += extract_records(part, model=loaded, min_trigger_prob=min_trigger_prob, on_error=record_failed,
                                     offsets=None if offsets is None else offsets[b : b + batch_size])
            bar.advance(len(part))
    if failed and len(failed) == sum(1 for _, t in records if t.strip()):
        raise failed[0]  # nothing extracted at all (server down, wrong model): exit 2, no output
    for exc in failed:  # the others are written; exit 1 (docs/pv.md)
        skipped.append(str(exc))
        typer.echo(f"skipped: {exc}", err=True)

    if output is None:
        typer.echo(f"model: {model_id(loaded)}")
        for item in items:
            _pv_echo_events(item)
            _pv_echo_pairs(item)
    elif fmt == "brat":
        from clinex.pv.formats.brat import write_brat

        try:
            output.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise InputError(f"cannot create the output folder ({exc.strerror})", path=output) from None
        for item in items:
            write_brat(item, output, overwrite=force,
                       on_warning=lambda msg: typer.echo(f"warning: {msg}", err=True))
    elif str(output) == "-":
        from clinex.pv.formats.phee_json import dumps_phee

        for item in items:
            typer.echo(dumps_phee(item))
    else:
        from clinex.pv.formats.phee_json import write_phee_json

        write_phee_json(items, output, overwrite=force)
    if output is not None and str(output) != "-":
        from clinex.pv.counts import event_counts

        # asserted events only; negated ones counted apart (clinex.pv.counts, as `clinex batch pv`)
        c = event_counts(ev for i in items for ev in i.events)
        typer.echo(f"{len(items)} records, {c['n_events']} events asserted ({c['n_adverse']} adverse, "
                   f"{c['n_therapeutic']} therapeutic), {c['n_events_negated']} negated -> {output}", err=True)
    if skipped:
        what = "bad citations or failed records" if kind == "medline" else "bad lines or failed records"
        typer.echo(f"{len(skipped)} {what} skipped (see above); exit status 1", err=True)
        sys.exit(1)  # not typer.Exit: the root app runs with standalone_mode=False


def _pv_parse_params(pairs: list[str] | None) -> dict:
    """``KEY=VALUE`` strings -> dict; values parsed as JSON when possible (``0.1``, ``true``).

    A value that is JSON but holds an integer past Python's 4,300-digit conversion limit,
    or nesting past the recursion limit, is an InputError naming ``--param KEY``
    (:func:`clinex.io.textfile.parse_json`); other text stays a string.
    """
    import json

    from clinex.errors import FormatError, InputError
    from clinex.io.textfile import parse_json

    out: dict = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise InputError(f"--param expects KEY=VALUE, got {pair!r}", field="--param")
        try:
            out[key] = json.loads(value)
        except json.JSONDecodeError:
            out[key] = value
        except (ValueError, RecursionError):
            try:
                parse_json(value)
            except FormatError as exc:
                inner = f"{exc.field}: " if exc.field not in (None, "$") else ""
                raise InputError(inner + exc.message, field=f"--param {key[:40]}") from None
            raise  # pragma: no cover (parse_json refuses what json.loads refused)
    return out


def _pv_require_neural() -> None:
    """Raise ModelError unless the neural extra (torch, transformers) can be imported."""
    from clinex.errors import ModelError

    try:
        import torch  # noqa: F401
        import transformers  # noqa: F401
    except ImportError as exc:
        missing = getattr(exc, "name", None) or "torch"
        raise ModelError(
            f"the transformer model needs {missing!r}, which is not installed; "
            "install the train extra: pip install 'clinex[train]'"
        ) from None


def _pv_check_params(kind: str, params: dict) -> None:
    """Raise InputError for a ``--param`` name that the model of ``kind`` does not take."""
    import importlib
    import inspect

    from clinex.errors import InputError
    from clinex.pv.models import REGISTRY

    entry = REGISTRY[kind]
    cls = getattr(importlib.import_module(entry.module), entry.model_class)
    valid = [n for n in inspect.signature(cls.__init__).parameters if n not in ("self", "name")]
    unknown = sorted(set(params) - set(valid))
    if unknown:
        raise InputError(
            f"unknown --param {', '.join(unknown)} for --model {kind}; valid names: {', '.join(valid)}",
            field="--param",
        )


def _pv_staging_dir(out: _Path) -> _Path | None:
    """A new empty sibling folder to train into when ``out`` holds a model to replace.

    Parameters
    ----------
    out : Path
        The ``--out`` folder (already checked: absent, empty, or holding a model.json).

    Returns
    -------
    Path or None
        ``None`` when ``out`` is absent or empty (train into it directly), else a
        hidden folder ``.OUT.XXXX.training`` beside it.
    """
    import tempfile

    if not out.is_dir() or not any(out.iterdir()):
        return None
    import os

    from clinex.io.modes import default_file_mode

    try:
        staging = _Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".training", dir=out.parent))
    except OSError as exc:  # a read-only or full file system: said before training, not after
        from clinex.io.atomic import write_error

        raise write_error(out.parent, exc, folder=True) from None
    mode = default_file_mode()
    os.chmod(staging, mode | ((mode & 0o444) >> 2))  # a folder's usual mode (0o755 under umask 022)
    return staging


def _pv_swap_in(staging: _Path, out: _Path) -> None:
    """Replace the model folder ``out`` (it holds a model.json) by ``staging`` whole.

    The old folder is renamed aside first and removed only once ``staging`` has
    taken its name, so no file of the old model (dev_scores.json, ...) survives and
    a failure before the swap leaves the old model untouched.
    """
    import shutil
    import tempfile

    if not (out / "model.json").is_file():  # the rule of --force: only a model folder is replaced
        from clinex.errors import InputError

        raise InputError("--out holds files but no model.json; refusing to replace it", path=out)
    aside = _Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".old", dir=out.parent))
    old = aside / out.name
    out.rename(old)
    staging.rename(out)
    shutil.rmtree(aside)


@app.command("train")
def train_cmd(
    train: _Path = typer.Option(..., "--train", help="Training sentences, PHEE JSON lines (train.json)."),
    dev: _Path = typer.Option(None, "--dev", help="Dev sentences, PHEE JSON lines; scored after training."),
    out: _Path = typer.Option(..., "--out", help="Model folder to write."),
    kind: str = typer.Option(
        "crf", "--model",
        help=f"{_TRAINABLE} (a transformer then runs without torch after `clinex pv export-onnx`).",
    ),
    encoder: str = typer.Option(None, "--encoder", help="Transformer only: 'minilm' or a local Hugging Face folder."),
    c1: float = typer.Option(None, "--c1", help="CRF only: L1 coefficient (default 0)."),
    c2: float = typer.Option(None, "--c2", help="CRF only: L2 coefficient (default 0.3)."),
    max_iterations: int = typer.Option(
        None, "--max-iterations", help="CRF only: L-BFGS iterations of each CRF but the joint one (default 150)."
    ),
    param: list[str] = typer.Option(None, "--param", help="Extra model parameter KEY=VALUE (repeatable)."),
    negatives: _Path = typer.Option(
        None, "--negatives",
        help="Sentences without an ADE (ADE corpus ADE-NEG.txt, or one sentence a line): train the "
        "sentence-level event gate (needs --dev).",
    ),
    target_recall: float = typer.Option(
        0.98, "--target-recall",
        help="With --negatives: share of the dev sentences with an event (and a predicted one) the gate must keep.",
    ),
    force: bool = typer.Option(False, "--force", help="Replace an existing model in --out."),
) -> None:
    """Train an event-extraction model on PHEE JSON lines and save it to OUT.

    With --negatives (sentences that hold no adverse drug effect), the model also
    learns the sentence-level decision "does this sentence hold any event?"
    (clinex.pv.gate): the negatives are split by PubMed id into train / dev / test
    parts (15 % dev, 20 % test never used), a gate is fitted and its
    event_threshold calibrated on --dev, and saved with the model.

    With --dev, the saved model is scored on the dev file (clinex.pv.evaluate) and
    the scores are written to OUT/dev_scores.json and printed. An existing,
    non-empty OUT is refused unless --force is given (and then only if it holds
    a model, i.e. a model.json); the model is then trained into a new folder
    beside OUT that replaces OUT whole once training (and dev scoring) is done,
    so no file of the old model is kept and a failed run leaves it untouched.
    """
    import time

    from clinex.errors import InputError
    from clinex.pv.formats.phee_json import read_phee_json
    from clinex.pv.models import REGISTRY

    if kind not in REGISTRY:
        raise InputError(f"unknown --model {kind!r}; use {' or '.join(REGISTRY)}", field="--model")
    if out.exists():
        if not out.is_dir():
            raise InputError("--out exists and is not a folder", path=out)
        if any(out.iterdir()):
            if not force:
                raise InputError("model folder exists and is not empty; pass --force to replace it", path=out)
            if not (out / "model.json").is_file():
                raise InputError("--out holds files but no model.json; refusing to replace it", path=out)
    if kind == "transformer":
        _pv_require_neural()
    params = _pv_parse_params(param)
    _pv_check_params(kind, params)
    if kind == "crf":
        if encoder is not None:
            raise InputError("--encoder applies to --model transformer only", field="--encoder")
        for key, value in (("c1", c1), ("c2", c2), ("max_iterations", max_iterations)):
            if value is not None:
                params[key] = value
    else:
        if any(v is not None for v in (c1, c2, max_iterations)):
            raise InputError("--c1/--c2/--max-iterations apply to --model crf only")
        if encoder is not None:
            if "encoder" in params:
                raise InputError("--param encoder conflicts with --encoder; give one")
            params["encoder"] = encoder
    if not 0.0 < target_recall <= 1.0:
        raise InputError(f"--target-recall must be in (0, 1]; got {target_recall}", field="--target-recall")
    if negatives is None and target_recall != 0.98:
        raise InputError("--target-recall applies to the sentence gate: give --negatives too", field="--target-recall")
    if negatives is not None:
        from clinex.io.ade_corpus import read_ade_negatives

        if dev is None:
            raise InputError("--negatives needs --dev (the gate is calibrated on it)", field="--negatives")
        params["negatives"] = read_ade_negatives(negatives)
        params["target_recall"] = target_recall
    train_items = read_phee_json(train)
    if not train_items:
        raise InputError("no training sentences in the file", path=train)
    dev_items = read_phee_json(dev) if dev is not None else None
    if dev is not None and not dev_items:
        raise InputError("no dev sentences in the file; leave --dev out to train without one", path=dev)
    from clinex.io.atomic import write_error

    staging = _pv_staging_dir(out)
    created = staging is None and not out.exists()
    if staging is None:
        try:  # a read-only or full file system is said before training, not after it
            out.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise write_error(out, exc, folder=True) from None
    typer.echo(f"training {kind} on {len(train_items)} sentences from {train}", err=True)
    started = time.time()
    try:
        try:
            model = _pv_train_into(kind, train_items, dev_items, staging or out, params)
            if dev_items is not None:
                _pv_score_dev(model, dev_items, staging or out)
        except OSError as exc:  # a model file the OS refused (full disk): CLX001 naming it, no traceback
            raise write_error(exc.filename or (staging or out), exc) from None
    except BaseException:
        import shutil

        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)
        elif created:  # this run made the folder: no half-saved model is left in it
            shutil.rmtree(out, ignore_errors=True)
        raise
    if staging is not None:
        _pv_swap_in(staging, out)
    if getattr(model, "calibration_", None):
        import json

        typer.echo(f"sentence gate: {json.dumps(model.calibration_)}")
    typer.echo(f"saved {kind} model to {out} ({(time.time() - started) / 60:.1f} min)", err=True)


@app.command("gate")
def gate_cmd(
    model: str = typer.Argument(..., help=f"{_KIND_CHOICES} | a model folder: the model to add a sentence gate to."),
    train: _Path = typer.Option(..., "--train", help="PHEE training sentences (JSON lines): the gate's text model."),
    dev: _Path = typer.Option(..., "--dev", help="PHEE dev sentences (JSON lines): the gate's calibration."),
    negatives: _Path = typer.Option(..., "--negatives", help="Sentences without an ADE (ADE-NEG.txt or one a line)."),
    out: _Path = typer.Option(..., "--out", help="Model folder to write (the model with its gate)."),
    target_recall: float = typer.Option(
        0.98, "--target-recall", help="Share of the dev sentences with an event (and a predicted one) to keep."
    ),
    force: bool = typer.Option(False, "--force", help="Replace an existing model in --out."),
) -> None:
    """Add a sentence-level event gate to a trained model, without retraining it.

    Fits clinex.pv.gate.SentenceGate on --train and the negatives' train part, its
    stack and event_threshold on --dev and the negatives' dev part (the test part,
    20 % of the PubMed ids, is never used), and writes the model with the gate to
    OUT. Prints the calibration figures.
    """
    import json
    import shutil

    from clinex.errors import InputError
    from clinex.io.ade_corpus import read_ade_negatives
    from clinex.pv.formats.phee_json import read_phee_json
    from clinex.pv.gate import add_gate
    from clinex.pv.models import load_model

    if not 0.0 < target_recall <= 1.0:
        raise InputError(f"--target-recall must be in (0, 1]; got {target_recall}", field="--target-recall")
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        if not force:
            raise InputError("model folder exists and is not empty; pass --force to replace it", path=out)
        if not (out / "model.json").is_file():
            raise InputError("--out holds files but no model.json; refusing to replace it", path=out)
    loaded = load_model(model)
    negs = read_ade_negatives(negatives)
    train_items, dev_items = read_phee_json(train), read_phee_json(dev)
    if not train_items or not dev_items:
        raise InputError("no sentences in the file", path=train if not train_items else dev)
    typer.echo(f"fitting a sentence gate for {model} on {len(negs)} negatives", err=True)
    report = add_gate(loaded, train_items, dev_items, negs, target_recall=target_recall)
    staging = _pv_staging_dir(out) or out
    try:
        loaded.save(staging)
    except BaseException:
        if staging != out:
            shutil.rmtree(staging, ignore_errors=True)
        raise
    finally:
        from clinex.pv.models import clear_cache

        clear_cache()  # the cached model now carries the new gate; reload from disk next time
    if staging != out:
        _pv_swap_in(staging, out)
    typer.echo(json.dumps(report))
    typer.echo(f"saved the model with its gate to {out}", err=True)


def _pv_train_into(kind: str, train_items: list, dev_items: list | None, folder: _Path, params: dict):  # noqa: ANN202
    """Train a model of ``kind`` into ``folder`` with progress on stderr; return it."""
    import sys

    from clinex.pv.models import train as train_model

    if kind == "crf":
        from clinex.progress import Progress

        with Progress("CRF training (L-BFGS)", unit="iterations") as bar:

            def on_iteration(layer: str, it: int, total: int) -> None:
                if bar.label != f"CRF layer {layer} (L-BFGS)":
                    bar.reset(f"CRF layer {layer} (L-BFGS)", total=total)
                bar.update(min(it, total))

            model = train_model(kind, train_items, dev_items, folder, on_iteration=on_iteration, **params)
    else:
        model = train_model(
            kind, train_items, dev_items, folder, command=" ".join(["clinex", *sys.argv[1:]]),
            log=lambda line: typer.echo(line, err=True), **params
        )
    return model


def _pv_score_dev(model, dev_items: list, folder: _Path) -> None:  # noqa: ANN001
    """Score ``model`` on the dev sentences; write ``folder/dev_scores.json``, print four F1s."""
    import json

    from clinex.pv.evaluate import flatten, score
    from clinex.pv.types import SentenceEvents

    preds = model.predict([s.text for s in dev_items])
    pred_items = [SentenceEvents(id=s.id, text=s.text, events=tuple(p)) for s, p in zip(dev_items, preds)]
    result = score(dev_items, pred_items)
    flat = flatten(result)
    from clinex.io.atomic import write_atomic

    write_atomic(folder / "dev_scores.json", json.dumps(result, indent=2) + "\n", force=True)
    for key in (
        "trigger.classification.f1",
        "event_classification.f1",
        "arguments.classification.main.em_f1",
        "arguments.classification.sub.em_f1",
    ):
        typer.echo(f"dev {key}: {flat[key]:.4f}")


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
