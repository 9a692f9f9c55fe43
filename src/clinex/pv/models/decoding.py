"""Decoding of the neural extractors' tag probabilities into events (no torch here).

:class:`TagDecodingMixin` holds everything between "tag probabilities per sub-word
token" and the final :class:`~clinex.pv.types.Event` lists: windows for long texts,
Viterbi (or argmax) tags, trigger fallback, the joint-variant assignment of spans
to triggers, the cue-lexicon attributes and the bare-event and fallback gates: step 1
of the pipeline's sentence steps (:mod:`clinex.pv.steps`), which runs the others.

Two model kinds use it and differ only in how they compute the probabilities:
:class:`~clinex.pv.models.transformer.TransformerExtractor` (torch) and
:class:`~clinex.pv.models.onnx.OnnxExtractor` (onnxruntime). Keeping one copy of
the decoding is what makes the two give the same events (``tests/pv/test_pv_onnx.py``).

A class using the mixin provides the parameters (``variant``, ``decoder``,
``trigger_fallback``, ``fallback_gate``, ``attributes``, ``join_adjacent``,
``event_threshold``, ``attribute_scope``, ``no_effect_min_prob``, optional
``attribute_lexicon_`` and ``gate_``), a ``name`` and the methods
``_check_fitted()``, ``_tokenize(texts)`` (``[{"input_ids", "offsets"}]`` with the
special tokens), ``_word_offsets(text)`` (offsets without special tokens),
``_max_tokens()`` and ``_predict(texts, toks, depth, probs)``, which computes the
probabilities batch by batch and hands each batch to :meth:`_decode_batch`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from clinex.errors import ModelError
from clinex.pv.attributes import cues_to_attributes
from clinex.pv.features import has_gazetteer_drug
from clinex.pv.models.tagging import EVENT_LAYERS, LAYERS, decode_tags, viterbi_tags
from clinex.pv.steps import SentencePredictions
from clinex.pv.types import Argument, Combination, Event
from clinex.text import Span

__all__ = ["TagDecodingMixin", "ATTRIBUTE_NAMES"]

#: Attribute names a cue lexicon can supply (the ``attributes`` parameter).
ATTRIBUTE_NAMES = ("Speculated", "Negated", "Severity")

#: Probabilities below this are clamped before the log of Viterbi decoding (avoids log 0).
_MIN_PROB = 1e-12

#: ``event_probs(rows, markers) -> {layer: array [len(rows), width, n_tags]}``: the event
#: layers' probabilities of the batch rows ``rows`` with trigger markers ``markers``.
EventProbs = Callable[[list[int], list[list[int]]], dict[str, Any]]


class TagDecodingMixin(SentencePredictions):
    """Shared prediction and decoding of the transformer and ONNX extractors (see the module notes).

    ``predict``, ``predict_detailed`` and ``predict_one`` come from
    :class:`clinex.pv.steps.SentencePredictions` (the pipeline's steps after the model).
    """

    # -- parameters shared by both kinds --------------------------------------------
    def _join_layers(self) -> frozenset[str]:
        """The tag layers decoded with ``join_adjacent`` (see that parameter).

        Raises
        ------
        ModelError
            If a name is not a tag layer.
        """
        if not self.join_adjacent:
            return frozenset()
        names = frozenset(n.strip() for n in str(self.join_adjacent).split(",") if n.strip())
        if not names <= set(LAYERS):
            raise ModelError(
                f"join_adjacent must be a comma-separated list of {', '.join(LAYERS)} or empty; "
                f"got '{self.join_adjacent}'"
            )
        return names

    def _lexicon_names(self) -> frozenset[str]:
        """The attribute names the cue lexicon supplies (see ``attributes``)."""
        if self.attributes == "model":
            return frozenset()
        if self.attributes == "lexicon":
            return frozenset(ATTRIBUTE_NAMES)
        names = frozenset(n.strip() for n in str(self.attributes).split(","))
        if not names or not names <= set(ATTRIBUTE_NAMES):
            raise ModelError(
                "attributes must be 'model', 'lexicon' or a comma-separated list of "
                f"{', '.join(ATTRIBUTE_NAMES)}; got '{self.attributes}'"
            )
        return names

    @staticmethod
    def _marker(offsets: Sequence[tuple[int, int]], trigger: Span) -> list[int]:
        """1 on the tokens overlapping ``trigger``, else 0 (one entry per token)."""
        return [1 if e > s and trigger.overlaps(s, e) else 0 for s, e in offsets]

    # -- prediction ------------------------------------------------------------------
    def predict_ungated(
        self, texts: Sequence[str], sentence_starts: Sequence[Sequence[int]] | None = None
    ) -> list[tuple[list[Event], float]]:
        """Events and the model's own event probability per text: the model and its decoding
        (step 1 of :mod:`clinex.pv.steps`), before the pipeline's other steps.

        The model's own event probability is the largest ``1 - P(O)`` of the trigger
        layer over the text's tokens (the largest over its windows for a long text;
        :mod:`clinex.pv.gate`); neither the gate, ``event_threshold``, the attribute
        scope nor the effect rule is applied.

        Parameters
        ----------
        texts : sequence of str
        sentence_starts : sequence of sequence of int, optional
            Per text, the offsets where its sentences start, used to cut a text longer
            than the window (:meth:`_pieces`); the pipeline passes ``[0]`` for each of
            its sentences (split once, never again). None: found with
            :func:`clinex.text.split_sentences` for a text that needs cutting.

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
        starts = sentence_starts if sentence_starts is not None else [None] * len(texts)
        pieces = [self._pieces(t, starts[i]) if i in long else [(0, t)] for i, t in enumerate(texts)]
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

    def _pieces(self, text: str, sentence_starts: Sequence[int] | None = None) -> list[tuple[int, str]]:
        """Cut a text longer than :meth:`_max_tokens` tokens into pieces that fit.

        A piece ends at a sentence start (``sentence_starts``; None: those of
        :func:`clinex.text.split_sentences`) when one falls inside the window, else at a word start, else after ``max_length - 2``
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
        offs = [(s, e) for s, e in self._word_offsets(text) if e > s]
        if len(offs) <= limit:
            return [(0, text)]
        if sentence_starts is None:
            from clinex.text import split_sentences

            sentence_starts = [sp.start for sp in split_sentences(text)]
        sentence_starts = set(sentence_starts)
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

    def _tags(
        self, prob: Any, rows: Sequence[int], toks: Sequence[dict[str, Any]]
    ) -> tuple[list[list[int]], list[list[float]]]:
        """Tags and their probabilities per row of ``prob`` (``[rows, width, n_tags]``).

        ``rows`` index ``toks``; with ``decoder="viterbi"`` the real (non-special)
        tokens of each row get :func:`~clinex.pv.models.tagging.viterbi_tags` over
        ``log(max(p, 1e-12))``, else each token its most probable tag.
        """
        import numpy as np

        prob = np.asarray(prob, dtype=np.float32)
        tg_l = prob.argmax(-1).tolist()
        sc_l = prob.max(-1).tolist()
        if self.decoder != "viterbi":
            return tg_l, sc_l
        n_labels = (prob.shape[-1] - 1) // 3
        logp = np.log(np.maximum(prob, np.float32(_MIN_PROB)))
        for r, i in enumerate(rows):
            valid = [t for t, (s, e) in enumerate(toks[i]["offsets"]) if e > s]
            path = viterbi_tags(logp[r, valid], n_labels)
            for t, tag in zip(valid, path):
                tg_l[r][t] = tag
                sc_l[r][t] = float(prob[r, t, tag])
        return tg_l, sc_l

    def _decode_batch(
        self,
        texts: Sequence[str],
        toks: Sequence[dict[str, Any]],
        idx: Sequence[int],
        p_trig: Any,
        event_probs: EventProbs,
        events: list[list[Event]],
        probs: list[float] | None = None,
    ) -> None:
        """Decode one batch: triggers, then the event layers, into ``events[i]`` for ``i`` in ``idx``.

        Parameters
        ----------
        texts, toks : sequence
            All texts of the call and their tokens (``idx`` indexes them).
        idx : sequence of int
            The batch's texts, in row order.
        p_trig : numpy.ndarray, shape (len(idx), width, n_tags("trigger"))
            Trigger-layer probabilities of the batch (``width`` = padded tokens).
        event_probs : callable
            See :data:`EventProbs`: the event layers' probabilities for given rows and
            trigger markers (``joint`` variant: markers all 0, one pair per row).
        events : list of list of Event
            Filled in place.
        probs : list of float, optional
            Receives each text's own event probability (largest ``1 - P(O)`` of the
            trigger layer, rounded to 4 places).
        """
        import numpy as np

        p_trig = np.asarray(p_trig, dtype=np.float32)
        width = p_trig.shape[1]
        join = self._join_layers()
        tg, sc = self._tags(p_trig, idx, toks)
        triggers = [
            decode_tags(texts[i], toks[i]["offsets"], tg[r], LAYERS["trigger"], sc[r], "trigger" in join)
            for r, i in enumerate(idx)
        ]
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
            pairs: list[tuple[int, Any]] = [(r, None) for r in range(len(idx))]
            markers = [[0] * width for _ in idx]
        else:
            pairs = [(r, t) for r, trig in enumerate(triggers) for t in trig]
            markers = [
                self._marker(toks[idx[r]]["offsets"], t[1]) + [0] * (width - len(toks[idx[r]]["offsets"]))
                for r, t in pairs
            ]
        if not pairs:
            return
        ev_probs = event_probs([r for r, _ in pairs], markers)
        ev_rows = [idx[r] for r, _ in pairs]
        ev_tags = {n: self._tags(ev_probs[n], ev_rows, toks) for n in EVENT_LAYERS}
        for p, (r, trig) in enumerate(pairs):
            i = idx[r]
            layer = {
                n: decode_tags(
                    texts[i], toks[i]["offsets"], ev_tags[n][0][p], LAYERS[n], ev_tags[n][1][p], n in join,
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

    # -- decoding rules --------------------------------------------------------------
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
        """One event from its trigger and the labelled spans of its event layers."""
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
            source=f"{self.name}:{self.variant}",
        )
