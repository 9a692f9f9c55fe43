"""The compiled attribute scope pipeline of :mod:`clinex.pv.scope`: one per rule set, cached.

A :class:`_Pipeline` holds a blank spaCy English tokenizer (bounded:
:class:`clinex.context_rules.BoundedTokenizer`), medspaCy's ConText component with the
rule set's rules, and the compiled severity words and links. Building one takes about
1 s (spaCy, medspaCy); :func:`_pipeline` builds each rule set's once per process (the
last four kept) and :func:`warm_up` builds the shipped set's now, in the calling thread.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

from clinex.context_rules import BoundedTokenizer, build_context_rules, sentinel_rule
from clinex.pv.scope_rules import AttributeRules, load_attribute_rules

if TYPE_CHECKING:  # pragma: no cover
    from spacy.language import Language

__all__ = ["SPAN_GROUP", "warm_up"]

#: Span group that holds the ConText targets (triggers and Effects).
SPAN_GROUP = "clinex_pv_targets"


_CACHE_SIZE = 4
_CACHE: OrderedDict[str, "_Pipeline"] = OrderedDict()
_LOCK = threading.Lock()
_DEFAULT: list[AttributeRules] = []


class _Pipeline:
    """A tokenizer, a ConText component and the compiled severity rules of one rule set."""

    def __init__(self, rules: AttributeRules) -> None:
        from clinex.context_rules import import_medspacy

        import_medspacy()  # first: registers the factories, imports spaCy without probes
        import spacy

        self.rules = rules
        #: ids of hedges that are pseudo-negations too (ScopeRule.blocks_negation)
        self.blocks_negation = frozenset(r.id for r in rules.context_rules if r.blocks_negation)
        self.nlp: Language = spacy.blank("en")
        # spaCy's own tokens for ordinary text, linear time on long runs of brackets
        self.nlp.tokenizer = BoundedTokenizer(self.nlp.tokenizer)
        self.context = self.nlp.add_pipe(
            "medspacy_context",
            config={"rules": None, "input_span_type": "group", "span_group_name": SPAN_GROUP},
        )
        dicts = []
        for r in rules.context_rules:
            d: dict[str, Any] = {
                "id": r.id,
                "literal": r.literal,
                "category": r.category,
                "direction": r.direction,
                "cue_tokens": list(r.cue_tokens) if r.cue_tokens else None,
            }
            if r.pattern is not None:
                d["pattern"] = r.pattern
            if r.max_scope is not None:
                d["max_scope"] = r.max_scope
            elif r.direction == "TERMINATE":
                # medspaCy 1.3.1 tests scopes with ``tuple_overlaps``, which is False when
                # one scope contains the other: a terminator's sentence-wide scope never
                # "overlaps" the shorter scope of a cue with ``max_scope``, so the cue's
                # scope would run past it. A one-token window around the terminator
                # starts inside the cue's scope and is seen.
                d["max_scope"] = 1
            dicts.append(d)
        built = build_context_rules(dicts, terminated_by=rules.terminated_by, extra_keys=("id", "cue_tokens"))
        self.context.add([*built, sentinel_rule()])
        self.severity = [
            (r, re.compile(r"(?<!\w)" + re.escape(r.literal).replace(r"\ ", r"[\s-]+") + r"(?![\w-])", re.I))
            for r in rules.severity_rules
        ]
        self.links = [(link, re.compile(link.between, re.I)) for link in rules.severity_links]


_BUILD_LOCK = threading.Lock()


def _pipeline(rules: AttributeRules) -> _Pipeline:
    key = rules.fingerprint()
    with _LOCK:
        pipe = _CACHE.get(key)
        if pipe is not None:
            _CACHE.move_to_end(key)
            return pipe
    # one build at a time: a caller that arrives while the same pipeline is being built
    # (by another thread) waits for it instead of building a second one
    with _BUILD_LOCK:
        with _LOCK:
            pipe = _CACHE.get(key)
        if pipe is None:
            pipe = _Pipeline(rules)
        with _LOCK:
            _CACHE[key] = pipe
            _CACHE.move_to_end(key)
            while len(_CACHE) > _CACHE_SIZE:
                _CACHE.popitem(last=False)
    return pipe


def warm_up() -> None:
    """Build the shipped rule set's pipeline now, in the calling thread (spaCy, medspaCy,
    ConText; about 1 s once per process) instead of on the first sentence; see
    :func:`clinex.pv.steps.prepare`."""
    _pipeline(_default_rules())


def _default_rules() -> AttributeRules:
    with _LOCK:
        if not _DEFAULT:
            _DEFAULT.append(load_attribute_rules())
        return _DEFAULT[0]
