"""Prediction of the transformer extractor: windows, batched tagging, decoding into events.

:class:`PredictionMixin` gives :class:`~clinex.pv.models.transformer.TransformerExtractor`
:meth:`~PredictionMixin.predict`, :meth:`~PredictionMixin.predict_detailed` and
:meth:`~PredictionMixin.predict_ungated`, and the decoding rules that turn tags into
:class:`~clinex.pv.types.Event` objects (trigger fallback, joint-variant assignment,
cue-lexicon attributes).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from clinex.errors import ModelError
from clinex.pv.attributes import cues_to_attributes
from clinex.pv.features import has_gazetteer_drug
from clinex.pv.models.transformer.tags import EVENT_LAYERS, LAYERS, MODEL_NAME, decode_tags, viterbi_tags
from clinex.pv.types import Argument, Combination, Event
from clinex.text import Span

__all__ = ["PredictionMixin"]


class PredictionMixin:
    """Prediction of :class:`~clinex.pv.models.transformer.TransformerExtractor`.

    Uses the fitted ``net_`` and ``tokenizer_`` and the estimator's parameters and
    input pipeline (``_tokenize``, ``_marker``, ``_collate``, ``_max_tokens``,
    ``_join_layers``, ``_lexicon_names``).
    """

    def _check_fitted(self) -> None:
        if not hasattr(self, "net_"):
            raise ModelError("TransformerExtractor is not fitted yet; call 'fit' or 'load' first")

    def predict(self, texts: list[str]) -> list[list[Event]]:
        """Extract events from each sentence (see :meth:`predict_detailed`).

        Returns
        -------
        list of list of Event
        """
        return [events for events, _ in self.predict_detailed(texts)]

    def predict_detailed(self, texts: list[str]) -> list[tuple[list[Event], float]]:
        """Extract events from each sentence, with the sentence's event probability.

        :meth:`predict_ungated`, then :func:`clinex.pv.postprocess.finish_model`
        (attribute scope, the sentence-level decision, the effect rule).

        Parameters
        ----------
        texts : list of str
            Sentences (PHEE contexts); each is processed on its own.

        Returns
        -------
        list of (list of Event, float)
            Per text, its events with offsets into that text, ``source`` set to the
            model name and variant, ``score`` to the trigger's mean token probability;
            and the text's event probability in [0, 1] (the gate's when the model has
            one, else the model's own: :mod:`clinex.pv.gate`).

        Raises
        ------
        ModelError
            If the model is not fitted.
        """
        from clinex.pv.postprocess import finish_model

        texts = list(texts)
        return finish_model(self, texts, self.predict_ungated(texts))

    def predict_ungated(self, texts: list[str]) -> list[tuple[list[Event], float]]:
        """Events and the model's own event probability per text, before the last steps.

        The model's own event probability is the largest ``1 - P(O)`` of the trigger
        layer over the text's tokens (the largest over its windows for a long text;
        :mod:`clinex.pv.gate`); neither the gate, ``event_threshold``, the attribute
        scope nor the effect rule is applied.

        Raises
        ------
        ModelError
            If the model is not fitted.
        """
        self._check_fitted()
        if not texts:
            return []
        texts = list(texts)
        toks = self._tokenize(texts)
        # a text that fills its window may have been truncated: cut it into windows
        long = {i for i, t in enumerate(toks) if len(t["input_ids"]) >= self._max_tokens()}
        if not long:
            probs: list[float] = [0.0] * len(texts)
            return list(zip(self._predict(texts, toks, 0, probs), probs))
        pieces = [self._pieces(t) if i in long else [(0, t)] for i, t in enumerate(texts)]
        from clinex.pv.offsets import shift_event

        flat = [(i, off, piece) for i, ps in enumerate(pieces) for off, piece in ps]
        piece_texts = [piece for _, _, piece in flat]
        cut = [k for k, (i, _, _) in enumerate(flat) if i in long]
        piece_toks = [toks[i] for i, _, _ in flat]  # texts that fit keep their tokens
        for k, tok in zip(cut, self._tokenize([piece_texts[k] for k in cut])):
            piece_toks[k] = tok
        piece_probs: list[float] = [0.0] * len(piece_texts)
        preds = self._predict(piece_texts, piece_toks, 0, piece_probs)
        out: list[list[Event]] = [[] for _ in texts]
        best = [0.0] * len(texts)
        for (i, off, _), events, p in zip(flat, preds, piece_probs):
            out[i].extend(shift_event(ev, off, texts[i]) for ev in events)
            best[i] = max(best[i], p)
        return list(zip(out, best))

    def _pieces(self, text: str) -> list[tuple[int, str]]:
        """Cut a text longer than :meth:`_max_tokens` tokens into pieces that fit.

        A piece ends at a sentence start (:func:`clinex.text.split_sentences`) when
        one falls inside the window, else at a word start, else after ``max_length - 2``
        tokens (room for the special tokens). Each piece is tagged on its own and its
        events are shifted back into ``text`` (so nothing past the encoder's window is
        silently lost; a sentence longer than the window is still cut).

        Returns
        -------
        list of (int, str)
            Character offset of each piece in ``text`` and its text; ``[(0, text)]``
            when the text fits.
        """
        limit = max(1, self._max_tokens() - 2)
        enc = self.tokenizer_(text, add_special_tokens=False, return_offsets_mapping=True, verbose=False)
        offs = [(s, e) for s, e in enc["offset_mapping"] if e > s]
        if len(offs) <= limit:
            return [(0, text)]
        from clinex.text import split_sentences

        sentence_starts = {sp.start for sp in split_sentences(text)}
        word_starts = {k for k, (s, _) in enumerate(offs) if s == 0 or text[s - 1].isspace()}
        pieces: list[tuple[int, str]] = []
        i = 0
        while i < len(offs):
            j = min(i + limit, len(offs))
            if j < len(offs):
                window = range(j, i, -1)
                j = next((k for k in window if offs[k][0] in sentence_starts), None) or next(
                    (k for k in window if k in word_starts), j
                )
            start = offs[i][0] if i else 0
            end = offs[j][0] if j < len(offs) else len(text)
            pieces.append((start, text[start:end]))
            i = j
        return pieces

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

        def tags(logits: Any, rows: list[int]) -> tuple[list[list[int]], list[list[float]]]:
            """Tags and their probabilities per row; ``rows`` index ``toks`` (valid tokens)."""
            prob = logits.float().softmax(-1)
            sc, tg = prob.max(-1)
            tg_l, sc_l = tg.cpu().tolist(), sc.cpu().tolist()
            if self.decoder != "viterbi":
                return tg_l, sc_l
            n_labels = (prob.shape[-1] - 1) // 3
            logp = prob.clamp_min(1e-12).log().cpu().numpy()
            pr = prob.cpu().numpy()
            for r, i in enumerate(rows):
                valid = [t for t, (s, e) in enumerate(toks[i]["offsets"]) if e > s]
                path = viterbi_tags(logp[r, valid], n_labels)
                for t, tag in zip(valid, path):
                    tg_l[r][t] = tag
                    sc_l[r][t] = float(pr[r, t, tag])
            return tg_l, sc_l

        with torch.inference_mode():
            for b in range(0, len(order), bs):
                idx = order[b : b + bs]
                batch = self._collate([toks[i] for i in idx], device)
                with torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=use_amp):
                    if depth:
                        h = self.net_.encode_top(batch["cache"], batch["attention_mask"], depth)
                    else:
                        h = self.net_.encode(batch["input_ids"], batch["attention_mask"])
                    trig_logits = self.net_.trigger_logits(h)
                    tg, sc = tags(trig_logits, idx)
                triggers = [
                    decode_tags(texts[i], toks[i]["offsets"], tg[r], LAYERS["trigger"], sc[r], "trigger" in self._join_layers())
                    for r, i in enumerate(idx)
                ]
                p_trig = trig_logits.float().softmax(-1).cpu().numpy()
                if probs is not None:
                    for r, i in enumerate(idx):
                        valid = [t for t, (s, e) in enumerate(toks[i]["offsets"]) if e > s]
                        p_event = float(1.0 - p_trig[r, valid, 0].min()) if valid else 0.0
                        probs[i] = round(min(1.0, max(0.0, p_event)), 4)
                forced: set[int] = set()
                if self.trigger_fallback is not None and not all(triggers):
                    for r, i in enumerate(idx):
                        if not triggers[r]:
                            triggers[r] = self._fallback_trigger(texts[i], toks[i]["offsets"], p_trig[r])
                            forced.add(i)
                if self.variant == "joint":
                    pairs = [(r, None) for r in range(len(idx))]
                    markers = [[0] * h.shape[1] for _ in idx]
                else:
                    pairs = [(r, t) for r, trig in enumerate(triggers) for t in trig]
                    markers = [
                        self._marker(toks[idx[r]]["offsets"], t[1]) + [0] * (h.shape[1] - len(toks[idx[r]]["offsets"]))
                        for r, t in pairs
                    ]
                if not pairs:
                    continue
                rows = torch.tensor([r for r, _ in pairs], dtype=torch.long, device=device)
                marker = torch.tensor(markers, device=device)
                with torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=use_amp):
                    if self.variant == "conditioned":
                        he = self.net_.encode(batch["input_ids"][rows], batch["attention_mask"][rows], marker)
                    else:
                        he = h[rows]
                    ev_logits = self.net_.event_logits(he, marker)
                    ev_rows = [idx[r] for r, _ in pairs]
                    ev_tags = {n: tags(ev_logits[n], ev_rows) for n in EVENT_LAYERS}
                for p, (r, trig) in enumerate(pairs):
                    i = idx[r]
                    layer = {
                        n: decode_tags(
                            texts[i], toks[i]["offsets"], ev_tags[n][0][p], LAYERS[n], ev_tags[n][1][p],
                            n in self._join_layers(),
                        )
                        for n in EVENT_LAYERS
                    }
                    if trig is not None:
                        events[i].append(self._event(trig[0], trig[1], trig[2], layer))
                    else:
                        events[i] = self._joint_events(triggers[r], layer)
                for i in set(idx):
                    if i in forced and not self._fallback_allowed(texts[i], events[i]):
                        events[i] = []
                    elif self._bare(texts[i], events[i]):
                        events[i] = []
        return self._lexicon_attributes(texts, events)

    def _lexicon_attributes(self, texts: list[str], events: list[list[Event]]) -> list[list[Event]]:
        """Take the attributes named by ``attributes`` from the cue lexicon, the rest from the tags."""
        lexicon = getattr(self, "attribute_lexicon_", None)
        names = self._lexicon_names()
        if not names or lexicon is None:
            return events
        out = []
        for text, evs in zip(texts, events):
            merged = []
            for ev, lex in zip(evs, lexicon.predict(text, evs)):
                attrs = [a for a in ev.attributes if a.name not in names]
                attrs += [a for a in lex.attributes if a.name in names]
                attrs.sort(key=lambda a: a.cue.start if a.cue is not None else -1)
                merged.append(ev.model_copy(update={"attributes": tuple(attrs)}))
            out.append(merged)
        return out

    def _bare(self, text: str, events: Sequence[Event]) -> bool:
        """True when every event has no argument besides its own trigger word and the
        sentence has no gazetteer drug: "Abstract", "Informed consent was obtained."
        (dropped unless ``fallback_gate="always"``; no dev event is lost)."""
        if self.fallback_gate == "always" or not events:
            return False
        for ev in events:
            if any(not a.span.overlaps(ev.trigger.start, ev.trigger.end) for a in ev.arguments):
                return False
        return not has_gazetteer_drug(text)

    def _fallback_allowed(self, text: str, events: Sequence[Event]) -> bool:
        """Whether events built on a forced trigger are kept (see ``fallback_gate``)."""
        if self.fallback_gate == "always":
            return True
        for ev in events:
            # evidence: a Treatment sub-argument or a combination drug other than the
            # forced trigger word itself ("Figure" in "Figure 1." was tagged both)
            drugs = [a.span for a in ev.sub_arguments.get("Treatment", ())]
            drugs += [d.span for c in ev.combinations for d in c.drugs]
            if any(not sp.overlaps(ev.trigger.start, ev.trigger.end) for sp in drugs):
                return True
            if self.fallback_gate == "evidence" and any(
                a.role in ("Treatment", "Effect") and not a.span.overlaps(ev.trigger.start, ev.trigger.end)
                for a in ev.arguments
            ):
                return True
        return has_gazetteer_drug(text)

    def _fallback_trigger(
        self, text: str, offsets: Sequence[tuple[int, int]], probs: Any
    ) -> list[tuple[str, Span, float]]:
        """The most trigger-like token when none was tagged (see ``trigger_fallback``)."""
        valid = [t for t, (s, e) in enumerate(offsets) if e > s]
        if not valid:
            return []
        not_o = 1.0 - probs[valid, 0]
        best = int(not_o.argmax())
        if float(not_o[best]) < float(self.trigger_fallback or 0.0):
            return []
        t = valid[best]
        n_labels = len(LAYERS["trigger"])
        k = max(range(n_labels), key=lambda j: probs[t, 1 + 3 * j] + probs[t, 2 + 3 * j])
        tags = [0] * len(offsets)
        tags[t] = 1 + 3 * k
        return [
            (label, span, float(not_o[best]))
            for label, span, _ in decode_tags(text, offsets, tags, LAYERS["trigger"])
        ]

    def _joint_events(
        self,
        triggers: list[tuple[str, Span, float]],
        layer: dict[str, list[tuple[str, Span, float]]],
    ) -> list[Event]:
        """Events of the joint variant: each span goes to the nearest trigger."""
        if not triggers:
            return []
        per: list[dict[str, list[tuple[str, Span, float]]]] = [
            {n: [] for n in EVENT_LAYERS} for _ in triggers
        ]
        for name in EVENT_LAYERS:
            for item in layer[name]:
                k = min(range(len(triggers)), key=lambda j: abs(triggers[j][1].start - item[1].start))
                per[k][name].append(item)
        return [self._event(et, ts, sc, lay) for (et, ts, sc), lay in zip(triggers, per)]

    def _event(
        self, etype: str, trigger: Span, score: float, layer: dict[str, list[tuple[str, Span, float]]]
    ) -> Event:
        args = tuple(Argument(role=lab, span=sp) for lab, sp, _ in layer["main"])
        subs: dict[str, list[Argument]] = {}
        for lab, sp, _ in layer["sub"]:
            main, role = lab.split(".", 1)
            subs.setdefault(main, []).append(Argument(role=role, span=sp))
        comb_trig = [sp for lab, sp, _ in layer["comb"] if lab == "Combination.Trigger"]
        comb_drugs = [Argument(role="Drug", span=sp) for lab, sp, _ in layer["comb"] if lab == "Combination.Drug"]
        combos: tuple[Combination, ...] = ()
        if comb_drugs:
            combos = (Combination(trigger=comb_trig[0] if comb_trig else None, drugs=tuple(comb_drugs)),)
        attrs = cues_to_attributes([(lab, sp) for lab, sp, _ in layer["attr"]])
        return Event(
            event_type=etype,
            trigger=trigger,
            arguments=args,
            sub_arguments={k: tuple(v) for k, v in subs.items()},
            combinations=combos,
            attributes=attrs,
            score=round(score, 4),
            source=f"{MODEL_NAME}:{self.variant}",
        )
