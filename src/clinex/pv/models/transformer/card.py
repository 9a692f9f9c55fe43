"""The transformer extractor's report: dev scores and ``MODEL_CARD.md``."""

from __future__ import annotations

import json
import os
import platform
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from clinex.pv.models.tagging import MODEL_NAME
from clinex.pv.models.transformer.model import TransformerExtractor
from clinex.pv.models.transformer.train import quick_scores
from clinex.pv.types import Event, SentenceEvents

__all__ = ["evaluate_model", "write_model_card"]


def evaluate_model(
    model: TransformerExtractor,
    dev: Sequence[SentenceEvents],
    pred: Sequence[Sequence[Event]] | None = None,
) -> dict[str, Any]:
    """Dev scores with the project scorer (:mod:`clinex.pv.evaluate`) when installed.

    Parameters
    ----------
    model : TransformerExtractor
    dev : sequence of SentenceEvents
        Gold sentences.
    pred : sequence of list of Event, optional
        The model's predictions for ``dev`` when already computed (e.g. the best
        epoch's, kept by :meth:`TransformerExtractor.fit`); predicted here otherwise.

    Returns
    -------
    dict
        The flattened scorer output, or the :func:`quick_scores` fallback under
        ``"quick"`` when the scorer cannot be imported.
    """
    if pred is None:
        pred = model.predict([s.text for s in dev])
    result: dict[str, Any] = {"quick": quick_scores(dev, pred)}
    try:
        from clinex.pv.evaluate import flatten, score
    except ImportError:
        return result
    preds = [SentenceEvents(id=s.id, text=s.text, events=tuple(p)) for s, p in zip(dev, pred)]
    result["scorer"] = flatten(score(list(dev), preds))
    return result


def write_model_card(
    model: TransformerExtractor,
    out: Path,
    *,
    train: Sequence[SentenceEvents],
    dev: Sequence[SentenceEvents] | None,
    dev_scores: dict[str, Any],
    command: str | None = None,
) -> Path:
    """Write ``MODEL_CARD.md`` (data, command, hyper-parameters, dev scores, time)."""
    import torch

    out = Path(out)
    cmd = command or " ".join(os.path.basename(a) if i == 0 else a for i, a in enumerate(sys.argv))
    n_events = sum(len(s.events) for s in train)
    lines = [
        f"# {MODEL_NAME} ({model.variant})",
        "",
        "Trigger-conditioned transformer tagger for PHEE events; see clinex.pv.models.transformer.",
        "",
        "## Data",
        f"- train: {len(train)} sentences, {n_events} events",
        (
            f"- dev: {len(dev)} sentences, {sum(len(s.events) for s in dev)} events (early stopping and scores)"
            if dev
            else "- dev: none (no early stopping; the last epoch is kept, no dev scores)"
        ),
        "",
        "## Command",
        f"    {cmd}",
        "",
        "## Hyper-parameters",
        "```json",
        json.dumps(model.get_params(), indent=2),
        "```",
        "",
        "## Training",
        f"- time: {getattr(model, 'train_minutes_', float('nan')):.1f} min; "
        + (f"best epoch {getattr(model, 'best_epoch_', None)}" if dev else "no dev split: the last epoch is kept"),
        f"- hardware: {platform.machine()}, torch {torch.__version__}, "
        f"{'CUDA ' + torch.cuda.get_device_name(0) if torch.cuda.is_available() else f'CPU, {torch.get_num_threads()} threads'}",
        "",
        "| epoch | loss | dev trigger | dev main | dev sub | dev attr | minutes |"
        if dev
        else "| epoch | loss | minutes |",
        "| --- | --- | --- | --- | --- | --- | --- |" if dev else "| --- | --- | --- |",
    ]
    for rec in getattr(model, "history_", []):
        d = rec.get("dev", {})
        dev_cells = "".join(f" {d.get(k, float('nan')):.4f} |" for k in ("trigger", "main", "sub", "attr"))
        lines.append(
            f"| {rec['epoch']}{'' if rec.get('complete', True) else ' (partial)'} | {rec['loss']:.4f} |"
            + (dev_cells if dev else "")
            + f" {rec['minutes']:.1f} |"
        )
    if dev:
        lines += ["", "## Dev scores (best epoch)", "```json", json.dumps(dev_scores, indent=2), "```"]
    lines.append("")
    card = out / "MODEL_CARD.md"
    from clinex.io.atomic import write_atomic

    write_atomic(card, "\n".join(lines), force=True)
    return card
