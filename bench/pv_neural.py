"""Benchmark (and optionally train) the transformer PHEE extractor on the dev split.

Prints dev scores (the evaluator's JSON keys when ``clinex.pv.evaluate`` is present),
CPU throughput (sentences/s over the dev sentences), peak RSS (MiB) and the model's
training time; the last line is one JSON object.

Usage::

    python bench/pv_neural.py --model build/pv_transformer            # score a trained model
    python bench/pv_neural.py --model auto                                # the shipped model
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
  threads              torch threads (--threads)
  peak_rss_mib         peak resident memory of the process (MiB)
  train_minutes        the model's recorded training time (minutes)
  best_epoch           epoch whose weights were kept (None when not recorded)
  model_mib            size of the model folder on disk (MiB)
  negatives.*          on the held-out test part of the ADE-corpus negatives
                       (--negatives): negatives_ade_share (share given an
                       Adverse_event), negatives_asserted_ade_share (not negated),
                       and mix_ade_precision / recall / f1 of sentence-level ADE on
                       their mix with PHEE dev (bench/_negatives.py)

Errors (a bad option value: --decoder not viterbi/argmax, --limit, --train-limit
or --speed-sentences below 1; a missing model folder; a missing, malformed or
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
        ``--train-limit``, ``--speed-sentences`` and ``--threads`` at least 1 when given.

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


def _read_sentences(path: Path, what: str) -> list:
    """PHEE JSON lines of ``path``; InputError naming the file when it holds none."""
    from clinex.errors import InputError
    from clinex.pv.formats.phee_json import read_phee_json

    items = read_phee_json(path)
    if not items:
        raise InputError(f"no {what} sentences in the file", path=path)
    return items


def _model_dir(model: str) -> Path:
    """The model folder: ``model`` itself, or the shipped one for ``auto``."""
    if model == "auto":
        from importlib.resources import files

        return Path(str(files("clinex.resources") / "models" / "pv_transformer"))
    return Path(model)


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
        print("  dev", r["quick"])
    print(json.dumps(result))
    return 0


def _bench(model, model_dir: Path, dev: list, args: argparse.Namespace) -> dict:
    """Throughput, peak RSS, size and dev scores of one model."""
    from clinex.pv.models.transformer import evaluate_model

    texts = [s.text for s in dev]
    timed = texts[: args.speed_sentences] if args.speed_sentences else texts
    model.predict(texts[:16])  # warm-up
    t0, c0 = time.perf_counter(), time.process_time()
    pred = model.predict(timed)
    seconds, cpu_seconds = time.perf_counter() - t0, time.process_time() - c0
    if len(timed) < len(texts):
        pred = getattr(model, "dev_predictions_", None)  # kept by fit (same weights)
    scores = evaluate_model(model, dev, pred)
    from clinex.pv.pipeline import extract_records

    pred_items = extract_records([(s.id, s.text) for s in dev], model=model)
    negatives = _negatives.negatives_figures(model, dev, pred_items, args.negatives)
    size = sum(p.stat().st_size for p in model_dir.rglob("*") if p.is_file())
    return {
        "model": str(model_dir),
        "variant": model.variant,
        "dev_sentences": len(dev),
        "scores": scores.get("scorer", scores["quick"]),
        "quick": scores["quick"],
        "sentences_per_s": round(len(timed) / seconds, 2),
        "timed_sentences": len(timed),
        # CPU time of this process (all threads): throughput per busy core, which is
        # what an otherwise idle core would give; wall-clock sentences/s above
        # depends on what else runs on the machine.
        "sentences_per_cpu_s": round(len(timed) / max(cpu_seconds, 1e-9), 2),
        "threads": args.threads,
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "train_minutes": model.train_minutes_,
        "best_epoch": getattr(model, "best_epoch_", None),
        "model_mib": round(size / 2**20, 1),
        **negatives,
    }


if __name__ == "__main__":
    raise SystemExit(main())
