"""The default PHEE model: two linear-chain CRFs (python-crfsuite) over word tokens.

Labels are those of :mod:`clinex.pv.decode`: the combined ``MAIN|SUB`` label of
each token (trigger type or main role, and sub-argument role:
``Treatment|Treatment.Drug``) and the attribute cue label. In the default ``split``
layout one CRF tags the main slot, one the sub slot and one the cues; their labels
are joined and :func:`clinex.pv.decode.decode` turns them into events. Features are
in :mod:`clinex.pv.features`.

A saved model is a folder::

    model.json       {"kind": "crf", "version": 1, "params": {...}, "labels": {...}, ...}
    main.crfsuite    CRFsuite model of the main slot   (layout "split")
    sub.crfsuite     CRFsuite model of the sub slot    (layout "split")
    args.crfsuite    CRFsuite model of MAIN|SUB labels (layout "joint")
    attr.crfsuite    CRFsuite model of the attribute cues

References
----------
Lafferty, McCallum & Pereira (2001), "Conditional random fields", ICML.
Okazaki (2007), CRFsuite: L-BFGS training with elastic-net (``c1`` L1, ``c2`` L2)
regularisation.
Sun et al. (2022), "PHEE", EMNLP, section 4.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Sequence
from numbers import Integral, Real
from pathlib import Path
from typing import Any

from clinex.errors import ModelError
from clinex.pv.decode import OUTSIDE, SEP, TRIGGER_TYPES, decode, encode, label_runs
from clinex.pv.features import EXTRAS, drug_flags, extra_features, sentence_features, tokenize
from clinex.pv.models.crf_persist import _LAYOUTS, FORMAT_VERSION, CRFPersistence
from clinex.pv.steps import SentencePredictions
from clinex.pv.types import Event, SentenceEvents

__all__ = ["CRFModel", "train_crf", "FORMAT_VERSION"]

_FIRST = {"joint": "args", "split": "main", "hybrid": "args", "full": "args"}


class CRFModel(SentencePredictions, CRFPersistence):
    """PHEE event extractor made of two CRF taggers.

    Parameters
    ----------
    c1 : float, default 0.0
        L1 regularisation coefficient (CRFsuite ``c1``); larger gives a sparser,
        smaller model.
    c2 : float, default 0.3
        L2 regularisation coefficient (CRFsuite ``c2``). Chosen on the PHEE dev
        split: pure L2 (c1 = 0, c2 = 0.3) beat c1 = c2 = 0.05 by 0.05 Trig-C F1 and
        0.04 main-argument EM F1; c2 = 0.1 and 1.0 were worse.
    max_iterations : int, default 150
        L-BFGS iterations of each CRF but the joint one.
    joint_iterations : int, default 100
        L-BFGS iterations of the joint ``args`` CRF. On the dev split, 100 gave a
        better Trig-C F1 than 150, while the main-slot CRF gained 0.012
        main-argument EM F1 from 150 iterations over 100.
    min_freq : int, default 1
        Features seen fewer times than this in training are dropped (CRFsuite
        ``feature.minfreq``).
    trigger_fallback : float, default 0.0
        When a sentence gets no trigger, the token with the highest marginal
        probability of a trigger label becomes a one-token trigger if that
        probability is at least this value (every PHEE sentence holds at least one
        event); 1.0 switches the fallback off. On the dev split, 0.0 raised
        main-argument EM F1 from 0.47 (off) to 0.54, as arguments without a
        trigger are otherwise dropped. The forced trigger's ``score`` is its
        trigger marginal (usually well below the scores of Viterbi triggers).
    fallback_gate : {"evidence", "always"}, default "evidence"
        When a forced trigger (see ``trigger_fallback``) is kept. ``"evidence"``:
        only if the sentence also has a predicted ``Treatment`` or ``Effect``
        main argument or a token of the drug-name gazetteer, so that text with no
        drug event ("The weather was nice today.", "Table 1.", a heading) gets
        no event. ``"always"``: every sentence gets at least one event, as every
        PHEE sentence holds one. Decoding-only. On the PHEE dev split (961
        sentences) with the shipped CRF, ``"evidence"`` leaves 4 sentences
        without an event: Trig-C F1 0.6619 vs 0.6616, main-argument EM F1 0.5727
        (both), sub-argument EM F1 0.6584 vs 0.6588; see the model card.
    extra_trigger_min : float, default 0.8
        When a sentence gets several trigger runs, the most confident one is kept
        and the others are dropped if their mean marginal probability is below
        this value (their arguments go to the nearest remaining trigger); 0
        keeps all. 96.5 % of PHEE training sentences hold one event. On the dev
        split with the shipped CRF, thresholds 0.5-0.9 all raised Trig-C F1 from
        0.655 to 0.658-0.662 (0.8: 0.662) and left argument scores within
        +-0.001. Decoding-only: it can be changed on a trained model.
    other_type_trigger_min : float, default 0.5
        An extra trigger run of the *other* event type than the most confident
        run (e.g. a Potential_therapeutic_event beside an Adverse_event) is kept
        if its mean marginal is at least this value, even below
        ``extra_trigger_min``, so that "Amiodarone caused hypothyroidism, and
        levothyroxine improved her symptoms." gives both events; above 1 switches
        this off. Decoding-only. On the dev split with the shipped CRF: Trig-C F1
        0.6619 -> 0.6626, main-argument EM F1 0.5727 -> 0.5731, sub-argument EM
        F1 0.6584 -> 0.6576 (thresholds 0 and 0.3: 0.6626 / 0.6620 Trig-C, 0.5723
        main).
    layout : {"full", "hybrid", "split", "joint"}, default "full"
        ``"joint"``: one CRF over the combined ``MAIN|SUB`` labels (44-47 in the
        training split) and one for the cues. ``"split"``: three CRFs, for the main
        slot (trigger type or main role), the sub-argument slot and the cues.
        ``"hybrid"``: the joint CRF gives the main slot (triggers and main
        arguments), a separate CRF the sub slot, one the cues. ``"full"``: as
        hybrid, but main arguments come from the split main-slot CRF and only the
        triggers from the joint CRF. On the PHEE dev split (c2 = 0.3) the joint CRF
        found triggers best (Trig-C F1 0.655 vs 0.630 split), the main-slot CRF main
        arguments (EM F1 0.571 vs 0.560) and the sub-slot CRF sub-arguments
        (0.654-0.658 vs 0.633).
    main_extras : sequence of str, default ()
        Optional feature groups of the first CRF (``args`` or ``main``), see
        :func:`clinex.pv.features.sentence_features`.
    extras : sequence of str, default ("window3", "drugdist")
        Optional feature groups of the other CRFs.
    event_threshold : float, default 0.0
        The sentence-level event decision (:mod:`clinex.pv.gate`): a sentence whose
        event probability is below this value gets no event. The event probability
        is the model's :class:`~clinex.pv.gate.SentenceGate` when it has one (trained
        with ``negatives``, see :func:`train_crf`), else the largest, over the
        tokens, of the summed marginals of the first CRF's trigger labels. 0 switches
        the decision off (every PHEE sentence holds an event). Saved with the model;
        :func:`train_crf` calibrates it (:func:`clinex.pv.gate.fit_gate`).
    attribute_scope : bool, default True
        Decide Negated / Speculated by cue scope and Severity from the Effect's
        modifiers (:mod:`clinex.pv.scope`, the pipeline's scope step: :mod:`clinex.pv.steps`);
        False keeps the attribute CRF's cues as they are.
    no_effect_min_prob : float, default 0.0
        An Adverse_event without an Effect argument is kept only if its trigger
        probability reaches this value (:func:`clinex.pv.effect_rules.keep_event`);
        0 keeps them all. The shipped model uses 0.05 (chosen on PHEE dev: with the gate, Trig-C 0.6568 -> 0.6581, ADE sentence recall 0.953 -> 0.952, held-out negatives given an ADE 35.9 % -> 33.7 %; the CRF often misses the Effect of a true ADE, so higher values cost recall).
    name : str, default "crf"
        Name recorded as the events' ``source`` (with the format version).

    Attributes
    ----------
    model_dir_ : Path
        Folder holding the fitted CRFsuite files (a temporary folder after
        :meth:`fit`, the loaded folder after :meth:`load`).
    labels_ : dict[str, list of str]
        Labels of each layer.
    n_train_ : int
        Number of training sentences.
    """

    _parameter_constraints: dict[str, tuple[type, ...]] = {
        "c1": (Real,),
        "c2": (Real,),
        "max_iterations": (Integral,),
        "joint_iterations": (Integral,),
        "min_freq": (Integral,),
        "trigger_fallback": (Real,),
        "extra_trigger_min": (Real,),
        "other_type_trigger_min": (Real,),
        "event_threshold": (Real,),
        "no_effect_min_prob": (Real,),
    }
    _fallback_gates = ("evidence", "always")
    _layouts = tuple(_LAYOUTS)

    def __init__(
        self,
        c1: float = 0.0,
        c2: float = 0.3,
        max_iterations: int = 150,
        joint_iterations: int = 100,
        min_freq: int = 1,
        trigger_fallback: float = 0.0,
        extra_trigger_min: float = 0.8,
        other_type_trigger_min: float = 0.5,
        fallback_gate: str = "evidence",
        layout: str = "full",
        main_extras: Sequence[str] = (),
        extras: Sequence[str] = ("window3", "drugdist"),
        event_threshold: float = 0.0,
        attribute_scope: bool = True,
        no_effect_min_prob: float = 0.0,
        name: str = "crf",
    ) -> None:
        self.c1 = c1
        self.c2 = c2
        self.max_iterations = max_iterations
        self.joint_iterations = joint_iterations
        self.min_freq = min_freq
        self.trigger_fallback = trigger_fallback
        self.extra_trigger_min = extra_trigger_min
        self.other_type_trigger_min = other_type_trigger_min
        self.fallback_gate = fallback_gate
        self.layout = layout
        self.main_extras = main_extras
        self.extras = extras
        self.event_threshold = event_threshold
        self.attribute_scope = attribute_scope
        self.no_effect_min_prob = no_effect_min_prob
        self.name = name

    # -- parameters -------------------------------------------------------------
    def get_params(self) -> dict[str, Any]:
        """The constructor parameters as a dict."""
        return {
            "c1": self.c1,
            "c2": self.c2,
            "max_iterations": self.max_iterations,
            "joint_iterations": self.joint_iterations,
            "min_freq": self.min_freq,
            "trigger_fallback": self.trigger_fallback,
            "extra_trigger_min": self.extra_trigger_min,
            "other_type_trigger_min": self.other_type_trigger_min,
            "fallback_gate": self.fallback_gate,
            "layout": self.layout,
            "main_extras": list(self.main_extras),
            "extras": list(self.extras),
            "event_threshold": self.event_threshold,
            "attribute_scope": self.attribute_scope,
            "no_effect_min_prob": self.no_effect_min_prob,
        }

    @property
    def layers(self) -> tuple[str, ...]:
        """Names of the CRFs of this layout (one ``<layer>.crfsuite`` file each)."""
        return _LAYOUTS[self.layout]

    def _validate_params(self) -> None:
        for key, types in self._parameter_constraints.items():
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, types) or value < 0:
                raise ModelError(
                    f"the '{key}' parameter of CRFModel must be a non-negative number; got {value!r}"
                )
        unknown = (set(self.extras) | set(self.main_extras)) - set(EXTRAS)
        if unknown:
            raise ModelError(f"unknown feature groups {sorted(unknown)}; known: {', '.join(EXTRAS)}")
        if self.fallback_gate not in self._fallback_gates:
            raise ModelError(
                f"fallback_gate must be one of {', '.join(self._fallback_gates)}; got {self.fallback_gate!r}"
            )
        if not isinstance(self.attribute_scope, bool):
            raise ModelError(f"attribute_scope must be true or false; got {self.attribute_scope!r}")
        if self.layout not in _LAYOUTS:
            raise ModelError(f"layout must be one of {', '.join(_LAYOUTS)}; got {self.layout!r}")
        if self.max_iterations < 1 or self.joint_iterations < 1:
            raise ModelError(
                f"max_iterations and joint_iterations must be >= 1; got {self.max_iterations}, "
                f"{self.joint_iterations}"
            )

    def _check_fitted(self) -> None:
        if not hasattr(self, "model_dir_"):
            raise ModelError("this CRFModel is not fitted yet; call fit() or CRFModel.load()")

    # -- training ---------------------------------------------------------------
    def fit(
        self,
        items: Sequence[SentenceEvents],
        *,
        on_iteration: Callable[[str, int, int], None] | None = None,
    ) -> "CRFModel":
        """Train the CRFs on gold sentences.

        Parameters
        ----------
        items : sequence of SentenceEvents
            Training sentences with gold events (PHEE train split: 2,898).
        on_iteration : callable, optional
            Called as ``on_iteration(layer, iteration, max_iterations)`` after each
            L-BFGS iteration (for a progress bar).

        Returns
        -------
        CRFModel
            ``self``, fitted.

        Raises
        ------
        ModelError
            If a parameter is out of range or ``items`` is empty.
        """
        import pycrfsuite

        self._validate_params()
        if not items:
            raise ModelError("no training sentences")
        work = Path(tempfile.mkdtemp(prefix="clinex-crf-"))
        labels: dict[str, list[str]] = {}
        data = []
        for item in items:
            toks = tokenize(item.text)
            if not toks:
                continue
            labs = encode(item, toks)
            parts = [lab.partition(SEP) for lab in labs["args"]]
            labs["main"] = [m or OUTSIDE for m, _, _ in parts]
            labs["sub"] = [sub or OUTSIDE for _, _, sub in parts]
            data.append((self._features(item.text, toks), labs))
        for layer in self.layers:
            max_iter = int(self.joint_iterations if layer == "args" else self.max_iterations)
            callback = on_iteration

            class _Trainer(pycrfsuite.Trainer):  # type: ignore[misc, name-defined]
                def on_iteration(
                    self,
                    log: str,
                    info: dict[str, Any],
                    _callback: Any = callback,
                    _layer: str = layer,
                    _max_iter: int = max_iter,
                ) -> None:
                    if _callback is not None:
                        _callback(_layer, int(info.get("num", 0)), _max_iter)

            trainer = _Trainer(algorithm="lbfgs", verbose=False)
            trainer.set_params(
                {
                    "c1": float(self.c1),
                    "c2": float(self.c2),
                    "max_iterations": max_iter,
                    "feature.minfreq": float(self.min_freq),
                    "feature.possible_transitions": True,
                }
            )
            seen: set[str] = set()
            first = layer == _FIRST[self.layout]
            for feats, labs in data:
                trainer.append(feats[0] if first else feats[1], labs[layer])
                seen.update(labs[layer])
            trainer.train(str(work / f"{layer}.crfsuite"))
            labels[layer] = sorted(seen)
        self.model_dir_ = work
        self.labels_ = labels
        self.n_train_ = len(data)
        self._taggers: dict[str, Any] = {}
        return self

    # -- prediction -------------------------------------------------------------
    def _tagger(self, layer: str) -> Any:
        import pycrfsuite

        if layer not in self._taggers:
            tagger = pycrfsuite.Tagger()
            tagger.open(str(self.model_dir_ / f"{layer}.crfsuite"))
            self._taggers[layer] = tagger
        return self._taggers[layer]

    @property
    def source(self) -> str:
        """Provenance string recorded on predicted events: ``name`` and format version."""
        return f"clinex.pv.{self.name}.v{FORMAT_VERSION}"

    def predict_labels(
        self, text: str
    ) -> tuple[list[tuple[int, int]], dict[str, list[str]], list[float], float]:
        """Token offsets, the labels of both layers, trigger confidences, event probability.

        Returns
        -------
        tokens : list of (int, int)
        labels : dict
            ``{"args": [...], "attr": [...]}`` (before the sentence-level decision).
        trigger_scores : list of float
            Per token, the marginal probability of its ``args`` label.
        event_probability : float
            In [0, 1]: the largest, over the tokens, of the summed marginals of the
            trigger labels (:mod:`clinex.pv.gate`); 0.0 for text without tokens.
        """
        self._check_fitted()
        toks = tokenize(text)
        if not toks:
            return [], {"args": [], "attr": []}, [], 0.0
        import pycrfsuite

        drugs = drug_flags([text[s:e] for s, e in toks])
        main_list, feats_list = self._features(text, toks, drugs)
        # one ItemSequence per feature set, shared by the taggers that use it
        main_feats = pycrfsuite.ItemSequence(main_list)
        feats = main_feats if feats_list is main_list else pycrfsuite.ItemSequence(feats_list)
        out: dict[str, list[str]] = {}
        first = _FIRST[self.layout]
        tagger = self._tagger(first)
        args = tagger.tag(main_feats)
        scores = [tagger.marginal(lab, i) for i, lab in enumerate(args)]
        p_event = self._event_probability(tagger, len(toks), self.labels_[first])
        forced = -1
        if self.trigger_fallback < 1.0 and not any(
            lab.split(SEP, 1)[0] in TRIGGER_TYPES for lab in args
        ):
            args, forced, p_forced = self._fallback(tagger, args, self.labels_[first])
            if forced >= 0:
                scores[forced] = p_forced
        if self.layout in ("split", "hybrid", "full"):
            sub = self._tagger("sub").tag(feats)
            main = [lab.partition(SEP)[0] or OUTSIDE for lab in args]
            if self.layout == "full":
                roles = self._tagger("main").tag(feats)
                main = [
                    m if m in TRIGGER_TYPES else (r if r not in TRIGGER_TYPES else OUTSIDE)
                    for m, r in zip(main, roles)
                ]
            args = [OUTSIDE if m == OUTSIDE and b == OUTSIDE else f"{m}{SEP}{b}" for m, b in zip(main, sub)]
        if forced >= 0 and self.fallback_gate == "evidence" and not self._has_evidence(args, drugs):
            args = list(args)
            sub_slot = args[forced].partition(SEP)[2] or OUTSIDE
            args[forced] = OUTSIDE if sub_slot == OUTSIDE else f"{OUTSIDE}{SEP}{sub_slot}"
        if self.extra_trigger_min > 0.0:
            args = self._drop_weak_triggers(list(args), scores)
        out["args"] = list(args)
        out["attr"] = list(self._tagger("attr").tag(feats))
        return toks, out, scores, p_event

    @staticmethod
    def _event_probability(tagger: Any, n_tokens: int, labels: Sequence[str]) -> float:
        """Largest per-token sum of trigger-label marginals (the sentence's event probability)."""
        trig = [lab for lab in labels if lab.split(SEP, 1)[0] in TRIGGER_TYPES]
        if not trig:
            return 0.0
        best = max(sum(tagger.marginal(lab, i) for lab in trig) for i in range(n_tokens))
        return min(1.0, max(0.0, float(best)))

    @staticmethod
    def _has_evidence(args: Sequence[str], drugs: Sequence[str]) -> bool:
        """True if a token is labelled Treatment / Effect or is a gazetteer drug (``fallback_gate``)."""
        return any(flag for flag in drugs) or any(
            lab.partition(SEP)[0] in ("Treatment", "Effect") for lab in args
        )

    def _features(
        self, text: str, toks: Sequence[tuple[int, int]], drugs: Sequence[str] | None = None
    ) -> tuple[list[list[str]], list[list[str]]]:
        """Features for the first CRF and for the others (the same list when the groups agree)."""
        if drugs is None:
            drugs = drug_flags([text[s:e] for s, e in toks])
        main = sentence_features(text, toks, drugs, extras=self.main_extras)
        if set(self.main_extras) == set(self.extras):
            return main, main
        if set(self.main_extras) <= set(self.extras):  # add the missing groups only
            more = [g for g in self.extras if g not in self.main_extras]
            return main, [a + b for a, b in zip(main, extra_features(text, toks, drugs, more))]
        return main, sentence_features(text, toks, drugs, extras=self.extras)

    def _drop_weak_triggers(self, args: list[str], scores: Sequence[float]) -> list[str]:
        """Keep the most confident trigger run; drop others below ``extra_trigger_min``.

        A run of the other event type than the best run is kept from
        ``other_type_trigger_min`` on.
        """
        runs = [r for r in label_runs([lab.partition(SEP)[0] for lab in args]) if r[0] in TRIGGER_TYPES]
        if len(runs) < 2:
            return args
        conf = [sum(scores[a:b]) / (b - a) for _, a, b in runs]
        best = max(range(len(runs)), key=lambda k: conf[k])
        for k, (etype, a, b) in enumerate(runs):
            floor = self.extra_trigger_min
            if etype != runs[best][0]:
                floor = min(floor, self.other_type_trigger_min)
            if k != best and conf[k] < floor:
                for i in range(a, b):
                    sub = args[i].partition(SEP)[2] or OUTSIDE
                    args[i] = OUTSIDE if sub == OUTSIDE else f"{OUTSIDE}{SEP}{sub}"
        return args

    def _fallback(self, tagger: Any, args: list[str], labels: Sequence[str]) -> tuple[list[str], int, float]:
        """Force the most probable trigger token when the Viterbi path has none.

        Returns the labels, the forced token's index (-1 when none was forced) and
        its trigger marginal.
        """
        trig_labels = [lab for lab in labels if lab.split(SEP, 1)[0] in TRIGGER_TYPES]
        best = (0.0, -1, "")
        for i in range(len(args)):
            for lab in trig_labels:
                p = tagger.marginal(lab, i)
                if p > best[0]:
                    best = (p, i, lab)
        if best[1] < 0 or best[0] < self.trigger_fallback:
            return args, -1, 0.0
        args = list(args)
        args[best[1]] = best[2]
        return args, best[1], best[0]

    def predict_one_detailed(self, text: str) -> tuple[list[Event], float]:
        """Events of one sentence and the CRF's own event probability, before attribute
        scope and the sentence-level decision (the pipeline's steps, :mod:`clinex.pv.steps`)."""
        toks, labels, scores, p_event = self.predict_labels(text)
        if not toks:
            return [], 0.0
        events = decode(
            text, toks, labels["args"], labels["attr"], trigger_scores=scores, source=self.source
        )
        return events, round(p_event, 4)

    def predict_ungated(
        self, texts: Sequence[str], sentence_starts: Sequence[Sequence[int]] | None = None
    ) -> list[tuple[list[Event], float]]:
        """Events and the CRF's own event probability per text: the model and its decoding
        (step 1 of :mod:`clinex.pv.steps`), before the pipeline's other steps.

        ``sentence_starts`` is accepted as every model accepts it (see
        :class:`clinex.pv.steps.SentenceModel`); the CRF reads a text whole, with no window.

        Raises
        ------
        ModelError
            If the model is not fitted.
        """
        self._check_fitted()
        return [self.predict_one_detailed(t) for t in texts]


def train_crf(
    train: Sequence[SentenceEvents],
    dev: Sequence[SentenceEvents] | None,
    out: str | Path,
    *,
    negatives: Sequence[Any] = (),
    target_recall: float = 0.98,
    on_iteration: Callable[[str, int, int], None] | None = None,
    **params: Any,
) -> CRFModel:
    """Train a :class:`CRFModel` and save it to folder ``out``.

    Parameters
    ----------
    train : sequence of SentenceEvents
        Training sentences.
    dev : sequence of SentenceEvents or None
        Not used for fitting the CRFs (CRFsuite has no early stopping here); with
        ``negatives``, the sentence gate's stack and ``event_threshold`` are fitted
        on it and the negatives' ``dev`` part (:func:`clinex.pv.gate.fit_gate`).
    out : str or Path
        Output folder (created).
    negatives : sequence of NegativeSentence, default ()
        Sentences without an ADE (:func:`clinex.io.ade_corpus.read_ade_negatives`).
        They train the sentence gate only: mixing them into the trigger CRF's
        training lowered PHEE dev Trig-C F1 from 0.663 to 0.629 (docs/pv.md).
    target_recall : float, default 0.98
        See :func:`clinex.pv.gate.fit_gate`.
    on_iteration : callable, optional
        Progress callback, see :meth:`CRFModel.fit`.
    **params
        :class:`CRFModel` parameters (``c1``, ``c2``, ``max_iterations``, ...).

    Returns
    -------
    CRFModel
        The fitted model, loaded back from ``out``.
    """
    model = CRFModel(**params).fit(train, on_iteration=on_iteration)
    if negatives:
        from clinex.pv.gate import add_gate

        add_gate(model, train, dev, negatives, target_recall=target_recall)
    tmp = model.model_dir_
    model.save(out)
    shutil.rmtree(tmp, ignore_errors=True)
    return CRFModel.load(out)
