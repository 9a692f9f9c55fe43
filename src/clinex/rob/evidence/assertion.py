"""Assertion scope of risk-of-bias cues: is a statement negated or hedged?

"Outcome assessors were **not** blinded", "**No** participant crossed over",
"Blinding of the surgeons was **not possible**" and "participants **may** have been
aware" say the opposite of, or less than, the cue words they hold. medspaCy's
ConText [2]_ decides it: a blank spaCy English tokenizer, the cue and concept
matches of one sentence as targets, and the rules of
``clinex/resources/rob/assertion_rules.json`` (negations, hedges, pseudo-cues and
terminators with a direction and a scope in tokens). A modifier that starts the target
itself ("non-blinded", "no drop-outs" written into a cue) is part of the target's
meaning and is ignored; one further inside counts only for the patterns that ask for it
(``inner=True``: "allocation was not concealed").

Sentences without any modifier word skip the tokenizer (most sentences of a trial
report), so a 20-page report takes milliseconds here.

References
----------
.. [1] Chapman WW, Bridewell W, Hanbury P, Cooper GF, Buchanan BG. A simple algorithm
   for identifying negated findings and diseases in discharge summaries. J Biomed
   Inform 2001;34(5):301-310 (NegEx).
.. [2] Harkema H, Dowling JN, Thornblade T, Chapman WW. ConText: an algorithm for
   determining negation, experiencer, and temporal status from clinical reports.
   J Biomed Inform 2009;42(5):839-851.
.. [3] Eyre H, Chapman AB, Peterson KS, et al. Launching into clinical space with
   medspaCy. AMIA Annu Symp Proc 2021:438-447.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

from clinex.context_rules import build_context_rules, sentinel_rule

__all__ = ["Assertion", "AssertionScope", "default_scope"]

_GROUP = "clinex_rob_targets"


@dataclass(frozen=True)
class Assertion:
    """How one target (a cue or concept match) is asserted in its sentence.

    Attributes
    ----------
    negated : bool
        A negation cue's scope reaches the target.
    hedged : bool
        A hedge cue's scope reaches the target.
    cue : str or None
        The rule id of the deciding negation (else hedge) cue, for provenance.
    cue_start : int or None
        Character offset of that cue in the sentence.
    """

    negated: bool = False
    hedged: bool = False
    cue: str | None = None
    cue_start: int | None = None


AFFIRMED = Assertion()


class AssertionScope:
    """ConText over RoB sentences (see the module docstring).

    Parameters
    ----------
    rules : dict, optional
        A rule file's content (default: the packaged ``assertion_rules.json``).

    Raises
    ------
    ValueError
        From medspaCy, for a malformed rule.
    """

    def __init__(self, rules: dict[str, Any] | None = None) -> None:
        from clinex.context_rules import import_medspacy

        import_medspacy()  # first: registers the factories, imports spaCy without probes
        import spacy

        if rules is None:
            rules = json.loads(
                resources.files("clinex.resources").joinpath("rob", "assertion_rules.json").read_text("utf-8")
            )
        self.id = str(rules.get("id", "rob.assertion"))
        self.nlp = spacy.blank("en")
        self.context = self.nlp.add_pipe(
            "medspacy_context",
            config={"rules": None, "input_span_type": "group", "span_group_name": _GROUP},
        )
        dicts = []
        words: set[str] = set()
        for r in rules["context_rules"]:
            d = dict(r)
            if d.get("direction") == "TERMINATE" and "max_scope" not in d:
                # medspaCy 1.3.1 compares scopes with an overlap test that misses
                # containment: a one-token terminator scope is seen inside a cue's scope.
                d["max_scope"] = 1
            dicts.append(d)
            if d.get("category") != "TERMINATE":
                for tok in d.get("pattern") or [{"LOWER": d["literal"].split()[0]}]:
                    low = tok.get("LOWER")
                    if isinstance(low, dict):
                        words.update(low.get("IN", []))
                    elif isinstance(low, str):
                        words.add(low)
                    break
        self.context.add([*build_context_rules(dicts, extra_keys=("id",)), sentinel_rule()])
        self._any = re.compile(r"(?<![\w])(?:" + "|".join(sorted(map(re.escape, words), key=len, reverse=True))
                               + r")(?![\w])", re.I)

    def check(self, text: str, targets: Sequence[tuple[int, int]], *, inner: bool = True) -> list[Assertion]:
        """Assert each target of one sentence.

        Parameters
        ----------
        text : str
            The sentence.
        targets : sequence of (int, int)
            Character offsets into ``text`` (half-open) of the cue or concept matches.
        inner : bool, default True
            Whether a cue inside a target (not its first token) counts; False: only cues
            outside the targets count.

        Returns
        -------
        list of Assertion
            One per target, in order.
        """
        if not targets:
            return []
        if not self._any.search(text):
            return [AFFIRMED] * len(targets)
        from spacy.tokens import Span as SpacySpan

        doc = self.nlp.make_doc(text)
        for i, tok in enumerate(doc):
            tok.is_sent_start = i == 0
        token_ranges: list[tuple[int, int] | None] = []
        spans = []
        seen: set[tuple[int, int]] = set()
        for s, e in targets:
            sp = doc.char_span(s, e, alignment_mode="expand")
            if sp is None or len(sp) == 0:
                token_ranges.append(None)
                continue
            token_ranges.append((sp.start, sp.end))
            if (sp.start, sp.end) not in seen:
                seen.add((sp.start, sp.end))
                spans.append(SpacySpan(doc, sp.start, sp.end, label="TARGET"))
        doc.spans[_GROUP] = spans
        self.context(doc)
        found: dict[tuple[int, int], dict[str, str]] = {}
        for target, mod in doc._.context_graph.edges:
            cat = mod.category.upper()
            if cat not in ("NEGATED_EXISTENCE", "POSSIBLE_EXISTENCE"):
                continue
            ms, me = mod.modifier_span
            inside = target.start <= ms < target.end
            if inside and (ms == target.start or not inner):
                # a cue that starts the target is part of its meaning ("non-blinded",
                # "no drop-outs"); one deep inside a long match is about something else
                # ("after learning that they had not been allocated")
                continue
            rule_id = (mod.rule.metadata or {}).get("id", mod.rule.literal)
            found.setdefault((target.start, target.end), {}).setdefault(cat, (rule_id, doc[ms].idx))
        out = []
        for r in token_ranges:
            cats = found.get(r, {}) if r else {}
            neg = cats.get("NEGATED_EXISTENCE")
            hedge = cats.get("POSSIBLE_EXISTENCE")
            first = neg or hedge
            out.append(Assertion(negated=neg is not None, hedged=hedge is not None,
                                 cue=f"{self.id}:{first[0]}" if first else None,
                                 cue_start=first[1] if first else None)
                       if cats else AFFIRMED)
        return out


_LOCK = threading.Lock()
_DEFAULT: list[AssertionScope] = []


def default_scope() -> AssertionScope:
    """The packaged rules' :class:`AssertionScope`, built once per process."""
    with _LOCK:
        if not _DEFAULT:
            _DEFAULT.append(AssertionScope())
        return _DEFAULT[0]
