"""Event attributes (Speculated, Negated, Severity) as labelled cue spans.

PHEE marks three event attributes with the cue words that signal them (Sun et al.,
EMNLP 2022, appendix A and C): ``Speculated`` (``may``, ``possible``; 633 in the
corpus), ``Negated`` (``no``, ``not``; 412) and ``Severity`` with a value
``High`` / ``Medium`` / ``Low`` (``severe``, ``mild``; 76 in appendix C's count).
Human agreement on attributes was only 46.41 exact-match F1 (appendix C), so they
are the hardest layer of the scheme.

A detector treats attribute detection as cue tagging conditioned on the event: the
cue label says both the attribute and its value (``Severity.High``). This module
turns an event's attributes into such labelled cues and back; the neural extractor
(:mod:`clinex.pv.models.transformer`) tags them in its event pass, and
:class:`CueLexiconDetector` is a light learned lexicon for models that have no
attribute layer (it needs no encoder).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence

from clinex.errors import ModelError
from clinex.pv.types import Attribute, Event, SentenceEvents
from clinex.text import Span

__all__ = [
    "CUE_LABELS",
    "SEVERITY_VALUES",
    "event_cues",
    "cues_to_attributes",
    "CueLexiconDetector",
]

#: Severity values found in PHEE (``Medium`` occurs in the data besides High/Low).
SEVERITY_VALUES: tuple[str, ...] = ("High", "Medium", "Low")

#: Cue labels: one per boolean attribute, one per severity value.
CUE_LABELS: tuple[str, ...] = ("Speculated", "Negated") + tuple(
    f"Severity.{v}" for v in SEVERITY_VALUES
)


def event_cues(event: Event) -> list[tuple[str, Span]]:
    """The attribute cues of ``event`` as ``(cue label, span)`` pairs.

    Parameters
    ----------
    event : Event
        An event whose attributes carry cue spans.

    Returns
    -------
    list of (str, Span)
        Labels from :data:`CUE_LABELS`; attributes without a cue, with a false value,
        or with an unknown severity value are left out.
    """
    out: list[tuple[str, Span]] = []
    for att in event.attributes:
        if att.cue is None:
            continue
        if att.name in ("Speculated", "Negated"):
            if att.value is True or str(att.value).lower() == "true":
                out.append((att.name, att.cue))
        elif att.name == "Severity" and str(att.value) in SEVERITY_VALUES:
            out.append((f"Severity.{att.value}", att.cue))
    return out


def cues_to_attributes(cues: Iterable[tuple[str, Span]]) -> tuple[Attribute, ...]:
    """Turn labelled cue spans back into :class:`Attribute` objects.

    Parameters
    ----------
    cues : iterable of (str, Span)
        Labels from :data:`CUE_LABELS` with their cue spans, in text order.

    Returns
    -------
    tuple of Attribute
        One attribute per cue, ``value=True`` for Speculated/Negated and the
        severity value (``"High"`` ...) for Severity.

    Raises
    ------
    ModelError
        If a label is not in :data:`CUE_LABELS`.
    """
    out = []
    for label, span in cues:
        if label in ("Speculated", "Negated"):
            out.append(Attribute(name=label, value=True, cue=span))
        elif label.startswith("Severity.") and label.split(".", 1)[1] in SEVERITY_VALUES:
            out.append(Attribute(name="Severity", value=label.split(".", 1)[1], cue=span))
        else:
            raise ModelError(f"unknown attribute cue label '{label}'; known: {', '.join(CUE_LABELS)}")
    return tuple(out)


_WORD = re.compile(r"[A-Za-z][A-Za-z'-]*")


class CueLexiconDetector:
    """Attribute detection from a cue lexicon learned on training sentences.

    ``fit`` counts, for every lower-cased cue word sequence seen in the gold, how
    often it was a cue of each label and how often it occurred in a training
    sentence at all; a cue is kept when that precision reaches ``min_precision``
    and it was seen ``min_count`` times. ``predict`` attaches the kept cues found in a
    sentence to each of its events (the nearest event when a sentence has several).

    Parameters
    ----------
    min_precision : float, default 0.2
        Lowest training precision (fraction of occurrences that were cues) to keep a
        cue. Chosen on the PHEE dev split (attribute EM F1 with gold events: 0.515 at
        0.2, 0.509 at 0.3, 0.336 at 0.5, 0.448 at 0.1 with ``min_count=1``).
    min_count : int, default 2
        Fewest gold occurrences to keep a cue.

    Attributes
    ----------
    lexicon_ : dict[str, str]
        Lower-cased cue text -> cue label (from :data:`CUE_LABELS`).

    References
    ----------
    Sun et al., PHEE, EMNLP 2022, appendix A (attribute definitions) and C (counts).
    """

    def __init__(self, min_precision: float = 0.2, min_count: int = 2) -> None:
        self.min_precision = min_precision
        self.min_count = min_count

    def fit(self, sentences: Sequence[SentenceEvents]) -> "CueLexiconDetector":
        """Learn the cue lexicon from gold sentences.

        Raises
        ------
        ModelError
            If ``min_precision`` is outside [0, 1] or ``min_count`` < 1.
        """
        if not 0.0 <= self.min_precision <= 1.0:
            raise ModelError(f"min_precision must be in [0, 1]; got {self.min_precision}")
        if self.min_count < 1:
            raise ModelError(f"min_count must be >= 1; got {self.min_count}")
        as_cue: Counter[tuple[str, str]] = Counter()
        for sent in sentences:
            for ev in sent.events:
                for label, span in event_cues(ev):
                    as_cue[(span.text.lower(), label)] += 1
        seen: Counter[str] = Counter()
        cue_texts = {c for c, _ in as_cue}
        for sent in sentences:
            low = sent.text.lower()
            for cue in cue_texts:
                seen[cue] += len(_find(low, cue))
        best: dict[str, tuple[int, str]] = {}
        for (cue, label), n in as_cue.items():
            if n > best.get(cue, (0, ""))[0]:
                best[cue] = (n, label)
        self.lexicon_ = {
            cue: label
            for cue, (n, label) in best.items()
            if n >= self.min_count and n / max(seen[cue], n) >= self.min_precision
        }
        return self

    def predict(self, text: str, events: Sequence[Event]) -> list[Event]:
        """Return ``events`` with the attributes whose cues occur in ``text``.

        Parameters
        ----------
        text : str
            The sentence the events come from.
        events : sequence of Event
            Events without (or with) attributes; existing attributes are replaced.

        Raises
        ------
        ModelError
            If the detector is not fitted.
        """
        if not hasattr(self, "lexicon_"):
            raise ModelError("CueLexiconDetector is not fitted yet; call 'fit' first")
        if not events:
            return []
        low = text.lower()
        found: list[list[tuple[str, Span]]] = [[] for _ in events]
        for cue, label in self.lexicon_.items():
            for start in _find(low, cue):
                span = Span.from_offsets(text, (start, start + len(cue)))
                k = min(range(len(events)), key=lambda i: abs(events[i].trigger.start - start))
                found[k].append((label, span))
        return [
            ev.model_copy(update={"attributes": cues_to_attributes(sorted(f, key=lambda c: c[1].start))})
            for ev, f in zip(events, found)
        ]


def _find(low_text: str, cue: str) -> list[int]:
    """Start offsets of whole-word occurrences of ``cue`` in ``low_text``."""
    pat = re.compile(r"(?<![A-Za-z0-9])" + re.escape(cue) + r"(?![A-Za-z0-9])")
    return [m.start() for m in pat.finditer(low_text)]
