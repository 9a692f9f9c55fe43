"""Training entry point of the transformer extractor: fit, gate, save, score, card."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from clinex.pv.models.transformer.card import evaluate_model, write_model_card
from clinex.pv.models.transformer.model import TransformerExtractor
from clinex.pv.types import SentenceEvents

__all__ = ["train_transformer"]


def train_transformer(
    train: list[SentenceEvents],
    dev: list[SentenceEvents],
    out: Path,
    *,
    encoder: str = "minilm",
    negatives: Sequence[Any] = (),
    target_recall: float = 0.98,
    command: str | None = None,
    log: Callable[[str], None] | None = None,
    **params: Any,
) -> TransformerExtractor:
    """Train a :class:`TransformerExtractor`, save it to ``out`` with a model card.

    Parameters
    ----------
    train, dev : list of SentenceEvents
        Gold training sentences and dev sentences (early stopping and reported scores).
    out : Path
        Model directory to write (``model.json``, ``encoder/``, ``heads.safetensors``,
        ``MODEL_CARD.md``); the best checkpoint so far is written after every
        improving epoch, so an interrupted run still leaves a usable model.
    encoder : str, default "minilm"
        ``"minilm"`` or a local Hugging Face directory.
    negatives : sequence of NegativeSentence, default ()
        Sentences without an ADE (:func:`clinex.io.ade_corpus.read_ade_negatives`),
        split by :func:`clinex.pv.gate.split_negatives`: the ``train`` part is mixed
        into training (see :meth:`TransformerExtractor.fit`), then a sentence gate
        is fitted and its ``event_threshold`` calibrated with the ``dev`` part and
        ``dev`` (:func:`clinex.pv.gate.add_gate`); the ``test`` part is not used.
    target_recall : float, default 0.98
        See :func:`clinex.pv.gate.fit_gate`.
    command : str, optional
        The command line to record in the model card (default: ``sys.argv``).
    log : callable, optional
        Progress lines sink.
    **params
        Any :class:`TransformerExtractor` parameter (``variant``, ``epochs``,
        ``max_minutes``, ``lr``, ...).

    Returns
    -------
    TransformerExtractor
        The fitted model (best dev epoch).

    Raises
    ------
    ModelError
        On bad parameters or a missing encoder.
    """
    model = TransformerExtractor(encoder, **params)
    out = Path(out)
    from clinex.pv.gate import add_gate, negatives_as_sentences, split_negatives

    mixed = negatives_as_sentences(split_negatives(negatives)["train"]) if negatives else []
    model.fit(train, dev, negatives=mixed, out=out, log=log)
    pred = getattr(model, "dev_predictions_", None)
    if negatives:
        add_gate(model, train, dev, negatives, target_recall=target_recall)
        pred = model.predict([s.text for s in dev])
    model.save(out)
    dev_scores: dict[str, Any] = {}
    if dev:
        dev_scores = evaluate_model(model, dev, pred)
    write_model_card(model, out, train=train, dev=dev, dev_scores=dev_scores, command=command)
    return model
