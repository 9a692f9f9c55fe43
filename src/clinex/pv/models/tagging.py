"""Tag scheme of the neural extractors: layers, ``O``/``B``/``I``/``C`` coding, decoding.

Shared by the torch model (:mod:`clinex.pv.models.transformer`) and its ONNX export
(:mod:`clinex.pv.models.onnx`); it lives outside the transformer package so that the
ONNX model can import it without torch (issue 12).

Every tag layer (:data:`LAYERS`) has ``O`` plus, per label ``k``, ``B`` (begin, tag
``1+3k``), ``I`` (inside, ``2+3k``) and ``C`` (``3+3k``: first token of a further
fragment of the preceding span with the same label, for discontinuous spans).
:func:`encode_tags` turns labelled character spans into sub-word tags,
:func:`viterbi_tags` finds the best tag path under the scheme's constraints and
:func:`decode_tags` turns tags back into spans. No torch here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from clinex.pv.attributes import CUE_LABELS, event_cues
from clinex.pv.types import Event
from clinex.text import Span

__all__ = [
    "MODEL_NAME",
    "FORMAT_VERSION",
    "LAYERS",
    "EVENT_LAYERS",
    "IGNORE",
    "n_tags",
    "encode_tags",
    "decode_tags",
    "viterbi_tags",
    "event_layer_spans",
]

#: Versioned id of models built on this tag scheme (``Event.source``, ``model.json``).
MODEL_NAME = "clinex.pv.transformer.v2"
#: Version of the saved model folder (``model.json``, ``heads.safetensors``).
FORMAT_VERSION = 1

#: Tag layers and their labels (PHEE appendix A roles; sub-roles keyed by main role).
LAYERS: dict[str, tuple[str, ...]] = {
    "trigger": ("Adverse_event", "Potential_therapeutic_event"),
    "main": ("Subject", "Treatment", "Effect"),
    "sub": (
        "Subject.Age",
        "Subject.Gender",
        "Subject.Population",
        "Subject.Race",
        "Subject.Disorder",
        "Treatment.Drug",
        "Treatment.Dosage",
        "Treatment.Freq",
        "Treatment.Route",
        "Treatment.Time_elapsed",
        "Treatment.Duration",
        "Treatment.Disorder",
    ),
    "comb": ("Combination.Trigger", "Combination.Drug"),
    "attr": CUE_LABELS,
}
#: The layers tagged once per event (the trigger layer is tagged once per sentence).
EVENT_LAYERS = ("main", "sub", "comb", "attr")
#: Tag of tokens the loss ignores (special tokens, padding).
IGNORE = -100


def n_tags(layer: str) -> int:
    """Number of tags of ``layer``: ``O`` plus ``B``, ``I``, ``C`` per label."""
    return 1 + 3 * len(LAYERS[layer])


def encode_tags(
    offsets: Sequence[tuple[int, int]],
    spans: Sequence[tuple[str, Span]],
    labels: Sequence[str],
) -> list[int]:
    """Tag sub-word tokens with ``O`` / ``B`` / ``I`` / ``C`` for labelled spans.

    Parameters
    ----------
    offsets : sequence of (int, int)
        Character offsets of each token (special tokens have ``start == end``).
    spans : sequence of (str, Span)
        Labelled spans; a discontinuous span's later fragments start with ``C``.
        A span overlapping tokens already tagged is skipped (first come, by start).
    labels : sequence of str
        The layer's labels; label ``k`` has tags ``1+3k`` (B), ``2+3k`` (I), ``3+3k`` (C).

    Returns
    -------
    list of int
        One tag id per token; ``-100`` (ignored by the loss) on special tokens.
    """
    index = {lab: k for k, lab in enumerate(labels)}
    tags = [0 if e > s else IGNORE for s, e in offsets]
    for label, span in sorted(spans, key=lambda x: (x[1].start, -x[1].end)):
        k = index.get(label)
        if k is None:
            continue
        per_frag = [
            [t for t, (s, e) in enumerate(offsets) if e > s and s < f.end and f.start < e]
            for f in sorted(span.fragments, key=lambda f: f.start)
        ]
        if any(tags[t] != 0 for toks in per_frag for t in toks) or not any(per_frag):
            continue
        first = True
        for toks in per_frag:
            for n, t in enumerate(toks):
                if n:
                    tags[t] = 2 + 3 * k
                else:
                    tags[t] = (1 if first else 3) + 3 * k
            if toks:
                first = False
    return tags


def decode_tags(
    text: str,
    offsets: Sequence[tuple[int, int]],
    tags: Sequence[int],
    labels: Sequence[str],
    scores: Sequence[float] | None = None,
    join_adjacent: bool = False,
) -> list[tuple[str, Span, float]]:
    """Turn token tags back into labelled character spans.

    ``I`` after a token of another label starts a new span (lenient BIO repair);
    ``C`` adds a fragment to the last span with the same label. Fragment ends are
    widened to whole words (a sub-word tag never cuts a word); spans that become
    identical by this widening (two ``B`` pieces of one word) are kept once.

    Parameters
    ----------
    text : str
        The sentence.
    offsets : sequence of (int, int)
        Token character offsets (as given to :func:`encode_tags`).
    tags : sequence of int
        Tag ids, one per token.
    labels : sequence of str
        The layer's labels.
    scores : sequence of float, optional
        Per-token confidence; a span's score is the mean over its tokens.
    join_adjacent : bool, default False
        Read ``B-X`` right after a ``B/I/C-X`` token, with only whitespace between
        them, as ``I-X``: two spans of one label that touch become one. PHEE almost
        never has such pairs (15 among the train split's gold main and sub-arguments
        of one event, 5 in dev), while a tagger
        often restarts a span after a determiner or a modifier (``the | patient``,
        ``depot | neuroleptics``); see docs/pv.md ("Neural extractor") for the dev
        figures.

    Returns
    -------
    list of (str, Span, float)
        Label, span (fragments in text order) and score, in order of first token.
    """
    spans: list[list[Any]] = []  # [label, [[s, e], ...], [token scores]]
    current: list[Any] | None = None  # the open fragment [s, e] of spans[-1]
    current_label: str | None = None
    current_span: list[Any] = []
    for t, (s, e) in enumerate(offsets):
        tag = int(tags[t])
        if e <= s or tag <= 0:
            current = None
            continue
        k, kind = divmod(tag - 1, 3)
        label = labels[k]
        sc = float(scores[t]) if scores is not None else 1.0
        if kind == 0 and join_adjacent and current is not None and current_label == label:
            kind = 1 if not text[current[1] : s].strip() else 0
        if kind == 1 and current is not None and current_label == label:
            current[1] = e
            current_span[2].append(sc)
            continue
        target = None
        if kind == 2:
            target = next((sp for sp in reversed(spans) if sp[0] == label), None)
        if target is None:
            target = [label, [], []]
            spans.append(target)
        current = [s, e]
        target[1].append(current)
        target[2].append(sc)
        current_label, current_span = label, target
    out: list[tuple[str, Span, float]] = []
    seen: set[tuple[str, tuple[tuple[int, int], ...]]] = set()
    for label, frags, scs in spans:
        pairs = []
        for s, e in frags:
            while s > 0 and text[s - 1].isalnum() and text[s].isalnum():
                s -= 1
            while e < len(text) and text[e].isalnum() and text[e - 1].isalnum():
                e += 1
            pairs.append((s, e))
        merged: list[tuple[int, int]] = []
        for s, e in sorted(pairs):
            if merged and s <= merged[-1][1]:
                merged[-1] = (merged[-1][0], max(merged[-1][1], e))
            else:
                merged.append((s, e))
        if (label, tuple(merged)) in seen:  # word pieces of one word tagged B twice
            continue
        seen.add((label, tuple(merged)))
        out.append((label, Span.from_offsets(text, merged, label=label), sum(scs) / len(scs)))
    return out


def viterbi_tags(logp: Any, n_labels: int) -> list[int]:
    """Best tag sequence under the ``O``/``B``/``I``/``C`` constraints.

    ``I-k`` may only follow ``B-k``, ``I-k`` or ``C-k`` and cannot open a sequence;
    the best path maximises the sum of token log-probabilities (first-order
    constrained decoding, which keeps exact-match spans whole where an argmax per
    token can break them).

    Parameters
    ----------
    logp : numpy.ndarray, shape (n_tokens, 1 + 3 * n_labels)
        Log-probabilities of the tags of each (real, non-special) token.
    n_labels : int
        Labels of the layer.

    Returns
    -------
    list of int
        One tag id per token.
    """
    import numpy as np

    n_tok, n = logp.shape
    if n_tok == 0:
        return []
    # The per-token argmax maximises the unconstrained sum; when it already obeys the
    # constraints it is also the constrained best path, and the search is skipped.
    best = logp.argmax(1)
    is_inside = (best - 1) % 3 == 1
    prev = np.concatenate(([0], best[:-1]))
    if not np.any(is_inside & ((prev == 0) | ((prev - 1) // 3 != (best - 1) // 3))):
        return [int(t) for t in best]
    inside = np.zeros(n, dtype=bool)
    penalty = np.zeros((n, n))
    for k in range(n_labels):
        i_tag = 2 + 3 * k
        inside[i_tag] = True
        ok = np.zeros(n, dtype=bool)
        ok[[1 + 3 * k, 2 + 3 * k, 3 + 3 * k]] = True
        penalty[~ok, i_tag] = -1e9
    score = logp[0] + np.where(inside, -1e9, 0.0)
    back = np.zeros((n_tok, n), dtype=np.int64)
    for t in range(1, n_tok):
        cand = score[:, None] + penalty
        back[t] = cand.argmax(0)
        score = cand.max(0) + logp[t]
    path = [int(score.argmax())]
    for t in range(n_tok - 1, 0, -1):
        path.append(int(back[t, path[-1]]))
    return path[::-1]


def event_layer_spans(event: Event) -> dict[str, list[tuple[str, Span]]]:
    """The labelled spans of one event for each event layer (main/sub/comb/attr)."""
    out: dict[str, list[tuple[str, Span]]] = {name: [] for name in EVENT_LAYERS}
    out["main"] = [(a.role, a.span) for a in event.arguments]
    for main, args in event.sub_arguments.items():
        out["sub"].extend((f"{main}.{a.role}", a.span) for a in args)
    for comb in event.combinations:
        if comb.trigger is not None:
            out["comb"].append(("Combination.Trigger", comb.trigger))
        out["comb"].extend(("Combination.Drug", d.span) for d in comb.drugs)
    out["attr"] = event_cues(event)
    return out
