"""``clinex pv train`` and ``clinex pv gate``: train a PHEE model, add a sentence gate.

Registered on the ``clinex pv`` app by :mod:`clinex.pv.cli`; typer only at import, the
training libraries inside the commands.
"""

from __future__ import annotations

from pathlib import Path as _Path

import typer

from clinex.pv.models import REGISTRY as _MODEL_REGISTRY  # light: no model library

_KIND_CHOICES = " | ".join(_MODEL_REGISTRY)
_TRAINABLE = " | ".join(k for k, v in _MODEL_REGISTRY.items() if v.trainable)


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
    _check_train_out(out, force)
    if kind == "transformer":
        _pv_require_neural()
    params = _train_params(kind, param, encoder, c1, c2, max_iterations)
    params.update(_gate_params(negatives, dev, target_recall))
    train_items = read_phee_json(train)
    if not train_items:
        raise InputError("no training sentences in the file", path=train)
    dev_items = read_phee_json(dev) if dev is not None else None
    if dev is not None and not dev_items:
        raise InputError("no dev sentences in the file; leave --dev out to train without one", path=dev)
    staging = _pv_staging_dir(out)
    created = staging is None and not out.exists()
    if staging is None:
        from clinex.io.atomic import write_error

        try:  # a read-only or full file system is said before training, not after it
            out.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise write_error(out, exc, folder=True) from None
    typer.echo(f"training {kind} on {len(train_items)} sentences from {train}", err=True)
    started = time.time()
    model = _train_and_score(kind, train_items, dev_items, out, staging, created, params)
    if staging is not None:
        _pv_swap_in(staging, out)
    if getattr(model, "calibration_", None):
        import json

        typer.echo(f"sentence gate: {json.dumps(model.calibration_)}")
    typer.echo(f"saved {kind} model to {out} ({(time.time() - started) / 60:.1f} min)", err=True)


def _check_train_out(out: _Path, force: bool) -> None:
    """Raise InputError unless ``--out`` is absent, empty, or (with ``force``) a model folder."""
    from clinex.errors import InputError

    if out.exists():
        if not out.is_dir():
            raise InputError("--out exists and is not a folder", path=out)
        if any(out.iterdir()):
            if not force:
                raise InputError("model folder exists and is not empty; pass --force to replace it", path=out)
            if not (out / "model.json").is_file():
                raise InputError("--out holds files but no model.json; refusing to replace it", path=out)


def _train_params(kind: str, param: list[str] | None, encoder: str | None, c1: float | None, c2: float | None,
                  max_iterations: int | None) -> dict:
    """The model parameters of ``--param`` and the kind's own options, checked against ``kind``."""
    from clinex.errors import InputError

    params = _pv_parse_params(param)
    _pv_check_params(kind, params)
    if kind == "crf":
        if encoder is not None:
            raise InputError("--encoder applies to --model transformer only", field="--encoder")
        for key, value in (("c1", c1), ("c2", c2), ("max_iterations", max_iterations)):
            if value is not None:
                params[key] = value
        return params
    if any(v is not None for v in (c1, c2, max_iterations)):
        raise InputError("--c1/--c2/--max-iterations apply to --model crf only")
    if encoder is not None:
        if "encoder" in params:
            raise InputError("--param encoder conflicts with --encoder; give one")
        params["encoder"] = encoder
    return params


def _gate_params(negatives: _Path | None, dev: _Path | None, target_recall: float) -> dict:
    """The sentence gate's parameters (``--negatives``, ``--target-recall``); none without negatives."""
    from clinex.errors import InputError

    if not 0.0 < target_recall <= 1.0:
        raise InputError(f"--target-recall must be in (0, 1]; got {target_recall}", field="--target-recall")
    if negatives is None and target_recall != 0.98:
        raise InputError("--target-recall applies to the sentence gate: give --negatives too", field="--target-recall")
    if negatives is None:
        return {}
    from clinex.io.ade_corpus import read_ade_negatives

    if dev is None:
        raise InputError("--negatives needs --dev (the gate is calibrated on it)", field="--negatives")
    return {"negatives": read_ade_negatives(negatives), "target_recall": target_recall}


def _train_and_score(kind: str, train_items: list, dev_items: list | None, out: _Path, staging: _Path | None,
                     created: bool, params: dict):  # noqa: ANN202 - the trained model
    """Train into ``staging`` (else ``out``) and score on dev; on any failure remove what this run made."""
    from clinex.io.atomic import write_error

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
    return model


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
