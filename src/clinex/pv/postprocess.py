"""The last steps every PHEE model's prediction goes through, in one place.

A model kind produces, per sentence, its events and its own event probability
(``predict_ungated``). :func:`finish` then applies, for every kind alike:

1. **attribute scope** (:func:`clinex.pv.scope.apply_attribute_scope_batch`):
   Negated and Speculated are kept only where the cue governs the trigger or the
   Effect, rule cues are added, Severity comes from the Effect's own modifiers;
   every attribute names its source (``model`` or ``rule:<id>``);
2. **the sentence-level event decision** (:func:`clinex.pv.gate.apply_gate`): a
   sentence below the model's ``event_threshold`` keeps no event, except events
   whose Negated attribute the scope rules confirmed: PHEE annotates an explicitly
   absent effect ("did not develop neutropenia") as an event with ``Negated``
   (Sun et al., EMNLP 2022, appendix A), which is what a drug-safety reader needs
   to see, while the ADE corpus counts such sentences as holding no ADE.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from clinex.pv.types import Event

__all__ = ["finish", "is_negated"]


def is_negated(event: Event) -> bool:
    """True when ``event`` carries a Negated attribute with a cue."""
    return any(a.name == "Negated" and a.value is True and a.cue is not None for a in event.attributes)


def finish(
    texts: Sequence[str],
    raw: Sequence[tuple[list[Event], float | None]],
    *,
    gate: Any = None,
    threshold: float = 0.0,
    attribute_scope: bool = True,
) -> list[tuple[list[Event], float | None]]:
    """Attribute scope, then the sentence-level decision, for one batch of sentences.

    Parameters
    ----------
    texts : sequence of str
        The sentences (offsets of ``raw``'s events point into them).
    raw : sequence of (list of Event, float or None)
        The model's ungated events and own event probability per sentence.
    gate : SentenceGate or None
        The model's sentence gate; None lets the model's own probability decide.
    threshold : float, default 0.0
        The model's ``event_threshold`` (0 keeps every sentence's events).
    attribute_scope : bool, default True
        Apply :mod:`clinex.pv.scope` (False keeps the model's own attributes).

    Returns
    -------
    list of (list of Event, float or None)
        Final events and the deciding event probability per sentence.
    """
    from clinex.pv.gate import apply_gate

    texts = list(texts)
    events = [list(evs) for evs, _ in raw]
    if attribute_scope:
        from clinex.pv.scope import apply_attribute_scope_batch

        events = apply_attribute_scope_batch(texts, events)
    scoped = [(evs, p) for evs, (_, p) in zip(events, raw)]
    decided = apply_gate(gate, threshold, texts, scoped)
    out = []
    for (kept, p), (evs, _) in zip(decided, scoped):
        out.append((kept if kept else [e for e in evs if is_negated(e)], p))
    return out
