"""Prediction of the transformer extractor: batched tagging with torch.

:class:`PredictionMixin` gives :class:`~clinex.pv.models.transformer.TransformerExtractor`
its torch forward passes; windows, decoding into :class:`~clinex.pv.types.Event`
objects (trigger fallback, joint-variant assignment, cue-lexicon attributes) and
:meth:`predict_ungated` come from :class:`clinex.pv.models.decoding.TagDecodingMixin`, the
code the ONNX export (:mod:`clinex.pv.models.onnx`) shares; :meth:`predict` /
:meth:`predict_detailed` add the pipeline's later steps
(:class:`clinex.pv.steps.SentencePredictions`).
"""

from __future__ import annotations

from typing import Any

from clinex.errors import ModelError
from clinex.pv.models.decoding import TagDecodingMixin
from clinex.pv.models.tagging import EVENT_LAYERS
from clinex.pv.types import Event

__all__ = ["PredictionMixin"]


class PredictionMixin(TagDecodingMixin):
    """Prediction of :class:`~clinex.pv.models.transformer.TransformerExtractor`.

    Uses the fitted ``net_`` and ``tokenizer_`` and the estimator's parameters and
    input pipeline (``_tokenize``, ``_collate``, ``_max_tokens``).
    """

    def _check_fitted(self) -> None:
        if not hasattr(self, "net_"):
            raise ModelError("TransformerExtractor is not fitted yet; call 'fit' or 'load' first")

    def _word_offsets(self, text: str) -> list[tuple[int, int]]:
        """Character offsets of the sub-word tokens of ``text``, without special tokens."""
        enc = self.tokenizer_(text, add_special_tokens=False, return_offsets_mapping=True, verbose=False)
        return [tuple(o) for o in enc["offset_mapping"]]

    def _predict(
        self, texts: list[str], toks: list[dict[str, Any]], depth: int, probs: list[float] | None = None
    ) -> list[list[Event]]:
        """Predict from tokenized texts; with ``depth`` > 0 from their cached hidden states.

        ``probs``, when given (one slot per text), receives each text's own event
        probability (the largest ``1 - P(O)`` of the trigger layer).
        """
        import torch

        device = next(self.net_.parameters()).device
        use_amp = device.type == "cuda"
        order = sorted(range(len(toks)), key=lambda i: len(toks[i]["input_ids"]))
        events: list[list[Event]] = [[] for _ in texts]
        bs = int(self.predict_batch_size)
        self.net_.eval()

        def softmax(logits: Any) -> Any:
            return logits.float().softmax(-1).cpu().numpy()

        with torch.inference_mode():
            for b in range(0, len(order), bs):
                idx = order[b : b + bs]
                batch = self._collate([toks[i] for i in idx], device)
                with torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=use_amp):
                    if depth:
                        h = self.net_.encode_top(batch["cache"], batch["attention_mask"], depth)
                    else:
                        h = self.net_.encode(batch["input_ids"], batch["attention_mask"])
                    p_trig = softmax(self.net_.trigger_logits(h))

                def event_probs(
                    rows: list[int], markers: list[list[int]], batch: dict[str, Any] = batch, h: Any = h
                ) -> dict[str, Any]:
                    rows_t = torch.tensor(rows, dtype=torch.long, device=device)
                    marker = torch.tensor(markers, device=device)
                    with torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=use_amp):
                        if self.variant == "conditioned":
                            he = self.net_.encode(batch["input_ids"][rows_t], batch["attention_mask"][rows_t], marker)
                        else:
                            he = h[rows_t]
                        ev_logits = self.net_.event_logits(he, marker)
                        return {n: softmax(ev_logits[n]) for n in EVENT_LAYERS}

                self._decode_batch(texts, toks, idx, p_trig, event_probs, events, probs)
        return self._lexicon_attributes(texts, events)
