"""Benchmark (and optionally train) the neural PHEE extractor on the dev split.

Prints dev scores (the evaluator's JSON keys when ``clinex.pv.evaluate`` is present),
CPU throughput (sentences/s over the dev sentences), peak RSS (MiB) and the model's
training time; for an ONNX model also the whole-run CLI figures of the default
install (issue 12, below); the last line is one JSON object.

Usage::

    python bench/pv_neural.py --model auto                                # the default (ONNX) model
    python bench/pv_neural.py --model transformer                         # the shipped torch checkpoint
    python bench/pv_neural.py --model build/pv_transformer            # score a trained model
    python bench/pv_neural.py --train build/pv_transformer --variant pairwise,joint \\
        --freeze-layers 2 --max-minutes 30,15 --threads 2              # train, then score

With several variants (comma-separated) each is trained into ``TRAIN/<variant>`` with
its own wall-clock budget; they share the cached output of the frozen encoder blocks.

Data: ``--dev PATH`` and ``--train-data PATH`` (PHEE JSON lines files); each
defaults to ``dev.json`` / ``train.json`` in ``$CLINEX_PHEE``, else in
``../shared/data/phee/json`` beside this checkout. (``--dev`` is named as in
``bench/pv.py``; ``--train`` is the output folder of a training run.)

Figures (keys of the JSON object; with several variants, one object per variant
under ``variants``):

  scores               every dev score of clinex.pv.evaluate, flattened (the keys
                       of 'clinex pv evaluate --json'); the quick scores when the
                       scorer cannot be imported
  quick                the early-stopping scores on the same predictions:
                       trigger / main / sub classification EM F1 and attr (micro
                       EM F1 over attribute triples)
  dev_sentences        dev sentences scored (--limit cuts them)
  sentences_per_s      wall-clock throughput of model.predict over the timed dev
                       sentences, after a 16-sentence warm-up (sentences/s)
  timed_sentences      sentences in that timed pass (--speed-sentences cuts them)
  sentences_per_cpu_s  the same sentences per CPU second of this process (all
                       threads): what an otherwise idle core would give
  threads              torch threads, or onnxruntime intra-op threads (--threads,
                       passed to an ONNX model as CLINEX_THREADS)
  kind                 the model's kind (onnx | transformer)
  headline             Trig-C, event classification, main / sub EM F1 and the
                       attribute EM F1s, from 'scores'
  peak_rss_mib         peak resident memory of the process (MiB)
  train_minutes        the model's recorded training time (minutes)
  best_epoch           epoch whose weights were kept (None when not recorded)
  model_mib            size of the model folder on disk (MiB)
  cli.*                ONNX models only (--cli-runs 0 skips): 'clinex pv extract
                       --model M -i DEV -o out.json' timed as a subprocess on the
                       whole dev file (--limit: its first N sentences), start-up
                       included, --cli-runs times: extract_wall_s_min / _median,
                       sentences_per_s (median run) and _best, peak_rss_mb (the
                       child's own, os.wait4). The child runs as the default install
                       does: torch and transformers are made unimportable in it
                       (the 'train' extra absent), so nothing can load them.
  targets_met.*        issue 12: cli_sentences_per_s >= 200, cli_peak_rss_mb <= 500,
                       model_mb <= 50 (decimal MB of the model folder)
  negatives.*          on the held-out test part of the ADE-corpus negatives
                       (--negatives): negatives_ade_share (share given an
                       Adverse_event), negatives_asserted_ade_share (not negated),
                       and mix_ade_precision / recall / f1 of sentence-level ADE on
                       their mix with PHEE dev (bench/_negatives.py)

Errors (a bad option value: --decoder not viterbi/argmax, --limit, --train-limit,
--speed-sentences or --threads below 1, --cli-runs below 0; a missing model folder; a missing, malformed or
empty data file) print one ``[CLX...]`` line on stderr and exit with status 2,
before any model is loaded.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from pathlib import Path

import _negatives

TARGETS = {"cli_sentences_per_s": 200.0, "cli_peak_rss_mb": 500.0, "model_mb": 50.0}
"""Issue 12's targets for the default install (whole CLI run on 2 cores, memory, size)."""

_NO_TRAIN_EXTRA = (
    "import sys\n"
    "class _Absent:\n"
    "    def find_spec(self, name, path=None, target=None):\n"
    "        if name.split('.')[0] in ('torch', 'transformers'):\n"
    "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
    "        return None\n"
    "sys.meta_path.insert(0, _Absent())\n"
    "from clinex.cli import main\n"
    "main()\n"
)
"""The child of the CLI timing: ``clinex`` with torch and transformers unimportable."""


def _data_dir() -> Path:
    """``$CLINEX_PHEE``, else ``../shared/data/phee/json`` beside this checkout."""
    env = os.environ.get("CLINEX_PHEE")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[2] / "shared" / "data" / "phee" / "json"


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", help="trained model directory (or 'auto' for the shipped one)")
    ap.add_argument("--train", help="train into this directory first")
    ap.add_argument(
        "--dev", type=Path, default=None, help="PHEE dev JSON lines file (default: dev.json in $CLINEX_PHEE)"
    )
    ap.add_argument(
        "--train-data",
        type=Path,
        default=None,
        help="PHEE train JSON lines file, used with --train (default: train.json in $CLINEX_PHEE)",
    )
    ap.add_argument(
        "--negatives", type=Path, default=None,
        help="ADE-corpus negatives (default ../shared/data/ade_corpus/ADE-NEG.txt): with --train they are "
        "mixed into training and fit the sentence gate; their held-out test part is scored",
    )
    ap.add_argument("--encoder", default="minilm", help="encoder name for --train")
    ap.add_argument("--variant", default="pairwise", help="model variant(s) for --train (comma list)")
    ap.add_argument("--freeze-layers", type=int, default=2, help="frozen encoder blocks (--train)")
    ap.add_argument("--epochs", type=int, default=6, help="maximum epochs (--train)")
    ap.add_argument("--max-minutes", default="40", help="budget per variant (comma list)")
    ap.add_argument("--lr", type=float, default=2e-4, help="learning rate (--train)")
    ap.add_argument("--batch-size", type=int, default=16, help="sentences per batch (--train)")
    ap.add_argument("--threads", type=int, default=2, help="torch CPU threads")
    ap.add_argument("--limit", type=int, default=None, help="score only the first N dev sentences (N >= 1)")
    ap.add_argument(
        "--train-limit", type=int, default=None, help="train on the first N sentences (N >= 1; smoke runs)"
    )
    ap.add_argument("--trigger-fallback", type=float, default=None, help="see TransformerExtractor")
    ap.add_argument("--decoder", default=None, help="override the model's decoder (viterbi | argmax)")
    ap.add_argument(
        "--speed-sentences", type=int, default=None, help="time only the first N dev sentences (N >= 1)"
    )
    ap.add_argument(
        "--cli-runs", type=int, default=3, help="whole-run CLI timings of an ONNX model (0: skip; default 3)"
    )
    return ap


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; a :class:`~clinex.errors.ClinexError` prints one
    ``[CLX...]`` line on stderr and gives exit status 2 (as the ``clinex`` CLI)."""
    ap = _parser()
    args = ap.parse_args(argv)
    if not args.train and not args.model:
        ap.error("give --model DIR or --train DIR")
    from clinex.errors import ClinexError, report_to_stderr

    try:
        return _run(args, argv)
    except ClinexError as exc:
        sys.stdout.flush()
        report_to_stderr(exc)
        return 2


DECODERS = ("viterbi", "argmax")
"""Decoder names TransformerExtractor accepts (its ``decoder`` parameter)."""


def _check_options(args: argparse.Namespace) -> None:
    """Raise InputError ([CLX001]) for an option value the run cannot use.

    Parameters
    ----------
    args : argparse.Namespace
        Parsed options; ``--decoder`` must be one of :data:`DECODERS`, ``--limit``,
        ``--train-limit``, ``--speed-sentences`` and ``--threads`` at least 1 when given,
        ``--cli-runs`` at least 0.

    Raises
    ------
    InputError
        Naming the option and the value given.
    """
    from clinex.errors import InputError

    if args.decoder is not None and args.decoder not in DECODERS:
        raise InputError(f"--decoder must be {' or '.join(DECODERS)}; got {args.decoder!r}")
    for option in ("limit", "train_limit", "speed_sentences", "threads"):
        value = getattr(args, option)
        if value is not None and value < 1:
            raise InputError(f"--{option.replace('_', '-')} must be at least 1; got {value}")
    if args.cli_runs < 0:
        raise InputError(f"--cli-runs must be at least 0; got {args.cli_runs}")


def _read_sentences(path: Path, what: str) -> list:
    """PHEE JSON lines of ``path``; InputError naming the file when it holds none."""
    from clinex.errors import InputError
    from clinex.pv.formats.phee_json import read_phee_json

    items = read_phee_json(path)
    if not items:
        raise InputError(f"no {what} sentences in the file", path=path)
    return items


def _model_dir(model: str) -> Path:
    """The model folder: ``model`` itself, or a shipped one for ``auto`` (the ONNX
    default, ``pv_onnx``), ``onnx`` or ``transformer``."""
    shipped = {"auto": "pv_onnx", "onnx": "pv_onnx", "transformer": "pv_transformer"}
    if model in shipped:
        from importlib.resources import files

        return Path(str(files("clinex.resources") / "models" / shipped[model]))
    return Path(model)


def _kind(model_dir: Path) -> str:
    """``model.json``'s kind (``onnx``, ``transformer``, ...); ModelError when unreadable."""
    from clinex.errors import ModelError

    try:
        meta = json.loads((model_dir / "model.json").read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError, UnicodeDecodeError):
        raise ModelError("model.json is not a JSON object", path=model_dir / "model.json") from None
    kind = meta.get("kind") if isinstance(meta, dict) else None
    if kind not in ("onnx", "transformer"):
        raise ModelError(
            f"kind is {kind!r}; this benchmark scores 'onnx' and 'transformer' models (bench/pv.py: the CRF)",
            path=model_dir / "model.json", field="kind",
        )
    return kind


def _run(args: argparse.Namespace, argv: list[str] | None) -> int:
    from clinex.errors import InputError, ModelError
    from clinex.pv.formats.phee_json import read_phee_json

    _check_options(args)
    data = _data_dir()
    model_dir = None
    if not args.train:
        model_dir = _model_dir(args.model)
        if not (model_dir / "model.json").is_file():  # checked before the slow imports
            raise ModelError("no model.json in the model directory", path=model_dir)
    dev_path = args.dev or data / "dev.json"
    dev = read_phee_json(dev_path)
    train = _read_sentences(args.train_data or data / "train.json", "training") if args.train else None
    if not dev:  # after the train file, so that a missing one is named first
        raise InputError("no dev sentences in the file", path=dev_path)
    if args.limit:
        dev = dev[: args.limit]
    if model_dir is not None and _kind(model_dir) == "onnx":
        return _run_onnx(args, model_dir, dev, dev_path)

    import torch

    from clinex.pv.models.transformer import TransformerExtractor, train_transformer

    torch.set_num_threads(args.threads)
    results = []
    if train is not None:
        if args.train_limit:
            train = train[: args.train_limit]
        cmd = "python " + " ".join([sys.argv[0], *(argv if argv is not None else sys.argv[1:])])
        variants = args.variant.split(",")
        minutes = [float(m) for m in args.max_minutes.split(",")]
        minutes += [minutes[-1]] * (len(variants) - len(minutes))
        for variant, budget in zip(variants, minutes):
            out = Path(args.train) / variant if len(variants) > 1 else Path(args.train)
            from clinex.io.ade_corpus import read_ade_negatives

            neg_path = args.negatives or _negatives.default_negatives()
            model = train_transformer(
                train,
                dev,
                out,
                encoder=args.encoder,
                negatives=read_ade_negatives(neg_path) if neg_path.is_file() else (),
                command=cmd,
                log=lambda s: print(s, file=sys.stderr, flush=True),
                variant=variant,
                freeze_layers=args.freeze_layers,
                epochs=args.epochs,
                max_minutes=budget,
                lr=args.lr,
                batch_size=args.batch_size,
                threads=args.threads,
                **({} if args.trigger_fallback is None else {"trigger_fallback": args.trigger_fallback}),
            )
            results.append(_bench(model, out, dev, args))
            print(json.dumps(results[-1]), file=sys.stderr, flush=True)
    else:
        model = TransformerExtractor.load(model_dir)
        model.threads = args.threads
        model._torch_device()
        if args.decoder:
            model.decoder = args.decoder
        if args.trigger_fallback is not None:
            model.trigger_fallback = args.trigger_fallback
        results.append(_bench(model, model_dir, dev, args))
    result = results[0] if len(results) == 1 else {"variants": results}
    for r in results:
        print(r["variant"], {k: r[k] for k in ("sentences_per_s", "sentences_per_cpu_s", "peak_rss_mib", "train_minutes", "model_mib")})
        print("  dev", r["headline"])
    print(json.dumps(result))
    return 0


def _run_onnx(args: argparse.Namespace, model_dir: Path, dev: list, dev_path: Path) -> int:
    """Score and time an ONNX model without torch; add the whole-run CLI figures.

    The CLI runs come first, while this process is still small: on Linux a child's
    peak RSS (``os.wait4``) starts from its parent's resident size at the fork.
    """
    os.environ["CLINEX_THREADS"] = str(args.threads)
    cli = _cli_figures(args, model_dir, dev, dev_path)
    from clinex.pv.models import load_model

    model = load_model(str(model_dir))
    if args.decoder:
        model.decoder = args.decoder
    if args.trigger_fallback is not None:
        model.trigger_fallback = args.trigger_fallback
    result = _bench(model, model_dir, dev, args)
    result["train_minutes"] = (model.meta_.get("exported_from") or {}).get("train_minutes")
    result.update(cli)
    size_mb = sum(p.stat().st_size for p in model_dir.rglob("*") if p.is_file()) / 1e6
    result["model_mb"] = round(size_mb, 1)
    met = {"model_mb": size_mb <= TARGETS["model_mb"]}
    if "cli.sentences_per_s" in result:
        met["cli_sentences_per_s"] = result["cli.sentences_per_s"] >= TARGETS["cli_sentences_per_s"]
        met["cli_peak_rss_mb"] = result["cli.peak_rss_mb"] <= TARGETS["cli_peak_rss_mb"]
    result.update({f"targets_met.{k}": v for k, v in met.items()})
    print(result["variant"], {k: result[k] for k in ("sentences_per_s", "peak_rss_mib", "train_minutes", "model_mib")})
    print("  dev", result["headline"])
    print(json.dumps(result))
    return 0


def _cli_figures(args: argparse.Namespace, model_dir: Path, dev: list, dev_path: Path) -> dict:
    """``clinex pv extract`` on the dev file as a subprocess of the default install (``cli.*``)."""
    import tempfile

    import _cli

    if args.cli_runs == 0:
        return {}
    src = dev_path
    with tempfile.TemporaryDirectory(prefix="clinex-bench-dev-") as tmp:
        if args.limit:  # the same sentences as the in-process figures
            src = Path(tmp) / "dev.jsonl"
            src.write_text(
                "".join(json.dumps({"id": s.id, "text": s.text}) + "\n" for s in dev), encoding="utf-8"
            )
        saved = _cli.CLINEX
        _cli.CLINEX = [sys.executable, "-c", _NO_TRAIN_EXTRA]
        try:
            run = _cli.time_cli(
                lambda out: ["pv", "extract", "--model", str(model_dir), "-i", str(src), "-o", str(out / "out.json")],
                runs=args.cli_runs, env={"CLINEX_THREADS": str(args.threads)},
            )
        finally:
            _cli.CLINEX = saved
    n = len(dev)
    out = {
        "cli.runs": args.cli_runs,
        "cli.extract_wall_s_min": run["wall_s_min"],
        "cli.extract_wall_s_median": run["wall_s_median"],
        "cli.extract_wall_s": run["wall_s"],
        "cli.sentences_per_s": round(n / run["wall_s_median"], 1),
        "cli.sentences_per_s_best": round(n / run["wall_s_min"], 1),
        "cli.peak_rss_mb": run["peak_rss_mb"],
    }
    print(
        f"CLI (default install, subprocess, {n} sentences, start-up included): wall min {run['wall_s_min']:.2f} s / "
        f"median {run['wall_s_median']:.2f} s = {out['cli.sentences_per_s']:.1f} sentences/s (median), "
        f"peak RSS {run['peak_rss_mb']:.0f} MB"
    )
    return out


_HEADLINE = (
    "trigger.classification.f1", "event_classification.f1", "arguments.classification.main.em_f1",
    "arguments.classification.sub.em_f1", "attributes.Negated.em_f1", "attributes.Speculated.em_f1",
    "attributes.Severity.em_f1", "attributes.all.em_f1",
)
"""The dev figures issue 12 compares (Trig-C, main / sub EM F1, event gate and attributes)."""


def _bench(model, model_dir: Path, dev: list, args: argparse.Namespace) -> dict:
    """Throughput, peak RSS, size and dev scores of one model (torch or ONNX)."""
    from clinex.pv.evaluate import flatten, score
    from clinex.pv.types import SentenceEvents

    texts = [s.text for s in dev]
    timed = texts[: args.speed_sentences] if args.speed_sentences else texts
    model.predict(texts[:16])  # warm-up
    t0, c0 = time.perf_counter(), time.process_time()
    pred = model.predict(timed)
    seconds, cpu_seconds = time.perf_counter() - t0, time.process_time() - c0
    if len(timed) < len(texts):
        pred = getattr(model, "dev_predictions_", None) or model.predict(texts)
    kind = "onnx" if hasattr(model, "session_") else "transformer"
    if kind == "transformer":
        from clinex.pv.models.transformer import evaluate_model

        scores = evaluate_model(model, dev, pred)
        flat, quick = scores.get("scorer", {}), scores["quick"]
    else:
        flat = flatten(score(list(dev), [SentenceEvents(id=s.id, text=s.text, events=tuple(p)) for s, p in zip(dev, pred)]))
        quick = None
    from clinex.pv.pipeline import extract_records

    pred_items = extract_records([(s.id, s.text) for s in dev], model=model)
    negatives = _negatives.negatives_figures(model, dev, pred_items, args.negatives)
    size = sum(p.stat().st_size for p in model_dir.rglob("*") if p.is_file())
    return {
        "model": str(model_dir),
        "kind": kind,
        "variant": model.variant,
        "dev_sentences": len(dev),
        "scores": flat or quick,
        "quick": quick,
        "headline": {k: round(flat[k], 4) for k in _HEADLINE if k in flat},
        "sentences_per_s": round(len(timed) / seconds, 2),
        "timed_sentences": len(timed),
        # CPU time of this process (all threads): throughput per busy core, which is
        # what an otherwise idle core would give; wall-clock sentences/s above
        # depends on what else runs on the machine.
        "sentences_per_cpu_s": round(len(timed) / max(cpu_seconds, 1e-9), 2),
        "threads": args.threads,
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "train_minutes": getattr(model, "train_minutes_", None),
        "best_epoch": getattr(model, "best_epoch_", None),
        "model_mib": round(size / 2**20, 1),
        **negatives,
    }


if __name__ == "__main__":
    raise SystemExit(main())
