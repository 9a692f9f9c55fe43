"""Attribute scope for PHEE events: cues decide attributes only where they govern the event.

A model's learned attribute layer tags cue words (``may``, ``not``, ``severe``) for
each event, but does not check that the cue is about *this* event: "She had no fever
but developed a rash" does not negate the rash. :func:`apply_attribute_scope` takes
one sentence with the events a model predicted and decides their attributes again:

1. **Negated / Speculated** by where the cue stands. medspaCy's ConText [2]_ runs on
   a blank spaCy English tokenizer with the events' triggers and Effect arguments as
   targets (span group ``clinex_pv_targets``). Its rules come from
   ``resources/pv/attribute_rules.json``: negation cues (``NEGATED_EXISTENCE``) and
   hedges (``POSSIBLE_EXISTENCE``) with a direction (FORWARD / BACKWARD /
   BIDIRECTIONAL) and a ``max_scope`` in tokens, pseudo-cues (``not only``,
   ``no other``: PSEUDO, they block the shorter cue inside them) and terminators
   (``but``, ``however``, ``although``, ``which``: TERMINATE, they end every scope).
   A cue *governs* an event when its scope reaches the event's trigger or its Effect
   and the cue does not lie inside the target itself.

   * a cue of the model is kept when it governs the event: its scope is that of the
     rule matching the same words; a model cue whose rule's scope does not reach the
     event, or that no rule matches, is kept when no terminator stands between it
     and the trigger or Effect (same clause); a model cue covered by a pseudo-cue is
     dropped;
   * when the event is the only one predicted for the sentence, a model cue of an
     attribute named in the rules' ``model_trust`` (shipped: Speculated) is kept
     even when no scope reaches the event (it has no other event to be about), after
     the better-placed cues and unless a pseudo-cue covers it or it lies inside the
     Effect after its start;
   * a rule cue governing the event is added when the event has no kept cue of that
     attribute (the nearest governing cue, one per attribute, as PHEE annotates);
   * the cue span is the word PHEE annotates (rule field ``cue``): "did not develop"
     → ``not``, "No hepatotoxicity" → ``No``.

2. **Severity** from the Effect's own modifiers: a severity word (rule list
   ``severity_rules``, with the value PHEE train gives it most often) counts when one
   of the ``severity_links`` matches: inside an Effect span (position ``inside``,
   over the text from the Effect's start to the word), or over the text between it
   and the Effect ("severe hepatotoxicity", "a fatal case of TEN",
   "fatal gemcitabine-induced pulmonary toxicity", "Serotonin syndrome is a
   potentially lethal ..."). A severity cue of the model is kept only under the same
   test.

Every attribute returned carries ``source`` (``"model"`` or ``"rule:<rule id>"``) and
its cue span (offsets into the sentence). Other attribute names pass through.

The ConText pipeline is built once per rule set (a bounded cache), and only
sentences with events are tokenized, by a tokenizer whose time is linear in the
sentence's length (:class:`clinex.context_rules.BoundedTokenizer`: 10,000 nested
bracket pairs took spaCy's own tokenizer minutes).

References
----------
.. [1] Chapman WW, Bridewell W, Hanbury P, Cooper GF, Buchanan BG. A simple algorithm
   for identifying negated findings and diseases in discharge summaries. J Biomed
   Inform 2001;34(5):301-310 (NegEx: negation triggers, pseudo-negations,
   termination terms, a window of tokens).
.. [2] Harkema H, Dowling JN, Thornblade T, Chapman WW. ConText: an algorithm for
   determining negation, experiencer, and temporal status from clinical reports.
   J Biomed Inform 2009;42(5):839-851.
.. [3] Eyre H, Chapman AB, Peterson KS, et al. Launching into clinical space with
   medspaCy: a new clinical text processing toolkit in Python. AMIA Annu Symp Proc
   2021:438-447 (``medspacy.context.ConText``, its default rules).
.. [4] Sun Z, Li J, Pergola G, et al. PHEE: A Dataset for Pharmacovigilance Event
   Extraction from Text. EMNLP 2022, appendix A (attribute cues and their scope).
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections import OrderedDict
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from clinex.context_rules import BoundedTokenizer, build_context_rules, sentinel_rule
from clinex.errors import FormatError, InputError
from clinex.pv.types import Attribute, Event
from clinex.text import Span

if TYPE_CHECKING:  # pragma: no cover
    from spacy.language import Language
    from spacy.tokens import Doc

__all__ = [
    "SPAN_GROUP",
    "ScopeRule",
    "SeverityRule",
    "SeverityLink",
    "ModelTrust",
    "AttributeRules",
    "default_rules_path",
    "load_attribute_rules",
    "apply_attribute_scope",
    "apply_attribute_scope_batch",
]

#: Span group that holds the ConText targets (triggers and Effects).
SPAN_GROUP = "clinex_pv_targets"

_DIRECTIONS = ("FORWARD", "BACKWARD", "BIDIRECTIONAL", "TERMINATE", "PSEUDO")
_FROZEN = ConfigDict(frozen=True, extra="forbid")
_SCOPED = ("Negated", "Speculated")


class ScopeRule(BaseModel):
    """One ConText rule of the scope layer (a cue, a pseudo-cue or a terminator).

    Attributes
    ----------
    id : str
        Stable rule id (``neg.not``); attributes it decides get ``source="rule:<id>"``.
    literal : str
        The phrase (matched case-insensitively on token boundaries).
    pattern : list of dict or None
        A spaCy token pattern used instead of ``literal``.
    category : str
        A cue category named in :attr:`AttributeRules.categories`
        (``NEGATED_EXISTENCE``, ``POSSIBLE_EXISTENCE``), or any other name for
        pseudo-cues and terminators.
    direction : {"FORWARD", "BACKWARD", "BIDIRECTIONAL", "TERMINATE", "PSEUDO"}
    max_scope : int or None
        Scope length in tokens on each side it looks (None: the whole sentence).
    cue_tokens : (int, int) or None
        The tokens of the match that PHEE annotates as the cue, as a slice of the
        match (``(0, 1)``: ``"not"`` in ``"not been"``); None: the whole match.
    provenance : str
        Where the rule comes from (NegEx, medspaCy's default rules, PHEE train counts).
    blocks_negation : bool, default False
        A hedge whose phrase holds a negation word ("does not rule out", "cannot be
        excluded"): besides its own attribute, it is a pseudo-negation for the model's
        Negated cues inside it (NegEx, Chapman et al. 2001: such phrases never negate).
    """

    model_config = _FROZEN

    id: str = Field(min_length=1)
    literal: str = Field(min_length=1)
    pattern: list[dict[str, Any]] | None = None
    category: str = Field(min_length=1)
    direction: str
    max_scope: int | None = Field(default=None, gt=0)
    cue_tokens: tuple[int, int] | None = None
    provenance: str = Field(min_length=1)
    blocks_negation: bool = False

    @field_validator("cue_tokens")
    @classmethod
    def _cue_tokens(cls, v: tuple[int, int] | None) -> tuple[int, int] | None:
        if v is not None and not 0 <= v[0] < v[1]:
            raise ValueError(f"{list(v)} is not a slice [start, end) with 0 <= start < end")
        return v

    @field_validator("direction")
    @classmethod
    def _direction(cls, v: str) -> str:
        if v.upper() not in _DIRECTIONS:
            raise ValueError(f"{v!r} not in {', '.join(_DIRECTIONS)}")
        return v.upper()


class SeverityRule(BaseModel):
    """A severity word with the value it gives.

    Attributes
    ----------
    id : str
        Stable rule id (``sev.severe``).
    literal : str
        The word or phrase (case-insensitive, on word boundaries; a space also
        matches a hyphen: ``"life threatening"``).
    value : {"High", "Medium", "Low"}
        The value (the most frequent one in PHEE train for this word).
    provenance : str
    """

    model_config = _FROZEN

    id: str = Field(min_length=1)
    literal: str = Field(min_length=1)
    value: Literal["High", "Medium", "Low"]
    provenance: str = Field(min_length=1)


class SeverityLink(BaseModel):
    """How a severity word outside the Effect may still modify it.

    Attributes
    ----------
    id : str
    position : {"before", "after", "inside"}
        ``before``: the word precedes the Effect and ``between`` must match the text
        from the word's end to the Effect's start; ``after``: the word follows and
        ``between`` must match the text from the Effect's end to the word's start;
        ``inside``: the word lies inside the Effect span and ``between`` must match
        the text from the Effect's start to the word's start.
    between : str
        A regular expression, matched in full (case-insensitive).
    provenance : str
    """

    model_config = _FROZEN

    id: str = Field(min_length=1)
    position: Literal["before", "after", "inside"]
    between: str
    provenance: str = Field(min_length=1)

    @field_validator("between")
    @classmethod
    def _regex(cls, v: str) -> str:
        try:
            re.compile(v)
        except re.error as exc:
            raise ValueError(f"not a regular expression ({exc})") from None
        return v


class ModelTrust(BaseModel):
    """When a model's cue is kept although no rule scope reaches the event.

    Attributes
    ----------
    id : str
    attribute : {"Negated", "Speculated", "Severity"}
    when : {"sole_event"}
        ``sole_event``: the event is the only one predicted for the sentence, so the
        model's cue has no other event to be about.
    provenance : str
    """

    model_config = _FROZEN

    id: str = Field(min_length=1)
    attribute: Literal["Negated", "Speculated", "Severity"]
    when: Literal["sole_event"]
    provenance: str = Field(min_length=1)


class AttributeRules(BaseModel):
    """A validated attribute rule set (see :func:`load_attribute_rules`).

    Attributes
    ----------
    id : str
        Versioned name of the rule set (``pv.attribute_scope.v1``).
    categories : dict of str to {"Negated", "Speculated"}
        ConText category → PHEE attribute.
    terminated_by : dict of str to list of str
        Category → categories that end its scope (besides TERMINATE rules).
    context_rules : tuple of ScopeRule
    severity_rules : tuple of SeverityRule
    severity_links : tuple of SeverityLink
    model_trust : tuple of ModelTrust
        Attributes whose model cues are kept beyond the rule scopes, and when.
    source : str or None
        The file the rules were read from.
    """

    model_config = _FROZEN

    id: str = Field(min_length=1)
    categories: dict[str, Literal["Negated", "Speculated"]]
    terminated_by: dict[str, list[str]] = Field(default_factory=dict)
    context_rules: tuple[ScopeRule, ...]
    severity_rules: tuple[SeverityRule, ...] = ()
    severity_links: tuple[SeverityLink, ...] = ()
    model_trust: tuple[ModelTrust, ...] = ()
    source: str | None = None

    def fingerprint(self) -> str:
        """A digest of the rules (the pipeline cache key)."""
        dump = json.dumps(self.model_dump(exclude={"source"}), sort_keys=True)
        return hashlib.sha256(dump.encode("utf-8")).hexdigest()


def default_rules_path() -> str:
    """Path of the shipped rule file ``resources/pv/attribute_rules.json``."""
    return str(resources.files("clinex.resources") / "pv" / "attribute_rules.json")


def load_attribute_rules(path: str | Path | None = None) -> AttributeRules:
    """Read and validate an attribute rule file.

    Parameters
    ----------
    path : str or Path, optional
        A JSON file in the format of ``resources/pv/attribute_rules.json``; default
        the shipped file.

    Returns
    -------
    AttributeRules

    Raises
    ------
    InputError
        The file is missing (or a folder).
    EncodingError
        The file is not UTF-8 text (names the line).
    FormatError
        Not valid JSON, or a record that does not validate; the message names the
        file, the record (``context_rules[12]``) and the field, e.g.
        ``field 'direction': 'FOWARD' not in FORWARD, BACKWARD, ...``; also a rule id
        used twice, or a cue category missing from ``categories``.
    """
    from clinex.io.textfile import read_text

    p = Path(path) if path is not None else Path(default_rules_path())
    if not p.is_file():
        raise InputError("attribute rule file not found", path=p)
    try:  # the shared reader: binary and non-UTF-8 files named with the line
        data = json.loads(read_text(p))
    except json.JSONDecodeError as exc:
        raise FormatError(f"not valid JSON ({exc})", path=p) from None
    if not isinstance(data, dict):
        raise FormatError("expected a JSON object", path=p)
    data = {k: v for k, v in data.items() if not k.startswith("_")}
    try:
        rules = AttributeRules.model_validate({**data, "source": str(p)})
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = list(err["loc"])
        where = loc[0] if loc else "?"
        if len(loc) > 1 and isinstance(loc[1], int):
            where = f"{loc[0]}[{loc[1]}]"
            loc = loc[2:]
        else:
            loc = loc[1:]
        field = ".".join(str(x) for x in loc) or str(where)
        raise FormatError(f"{where}: field '{field}': {err['msg']}", path=p, field=field) from None
    ids: set[str] = set()
    for kind in ("context_rules", "severity_rules", "severity_links", "model_trust"):
        for i, r in enumerate(getattr(rules, kind)):
            if r.id in ids:
                raise FormatError(f"{kind}[{i}]: rule id {r.id!r} used twice", path=p, field="id")
            ids.add(r.id)
    for i, r in enumerate(rules.context_rules):
        if r.direction in ("FORWARD", "BACKWARD", "BIDIRECTIONAL") and r.category not in rules.categories:
            raise FormatError(
                f"context_rules[{i}]: field 'category': {r.category!r} not in {', '.join(rules.categories)}",
                path=p,
                field="category",
            )
    return rules


# ---------------------------------------------------------------------------- pipeline

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
    # (by :func:`warm_up`'s thread) waits for it instead of building a second one
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
    """Build the shipped rule set's pipeline now (spaCy, medspaCy, ConText; about 1 s
    once per process) instead of on the first sentence; see
    :func:`clinex.pv.postprocess.warm_up`."""
    _pipeline(_default_rules())


def _default_rules() -> AttributeRules:
    with _LOCK:
        if not _DEFAULT:
            _DEFAULT.append(load_attribute_rules())
        return _DEFAULT[0]


# ---------------------------------------------------------------------------- scope


class _Mod:
    """A matched ConText modifier, in characters and tokens."""

    __slots__ = ("rule_id", "category", "direction", "tok", "char", "cue", "targets")

    def __init__(self, rule_id: str, category: str, direction: str, tok: tuple[int, int],
                 char: tuple[int, int], cue: tuple[int, int]) -> None:
        self.rule_id = rule_id
        self.category = category
        self.direction = direction
        self.tok = tok
        self.char = char
        self.cue = cue
        self.targets: set[tuple[int, int]] = set()


def _cue_offsets(doc: Doc, start: int, end: int, cue_tokens: list[int] | None) -> tuple[int, int]:
    """Character offsets of the cue tokens ``[start, end)`` (a slice of the match)."""
    if cue_tokens:
        start, end = start + cue_tokens[0], min(start + cue_tokens[1], end)
    return doc[start].idx, doc[end - 1].idx + len(doc[end - 1].text)


def _token_range(doc: Doc, start: int, end: int) -> tuple[int, int] | None:
    span = doc.char_span(start, end, alignment_mode="expand")
    if span is None or len(span) == 0:
        return None
    return span.start, span.end


def _targets(doc: Doc, event: Event) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """Token ranges of the trigger fragments and of the Effect fragments."""
    trig = [r for f in event.trigger.fragments if (r := _token_range(doc, f.start, f.end))]
    eff = [
        r
        for a in event.main("Effect")
        for f in a.span.fragments
        if (r := _token_range(doc, f.start, f.end))
    ]
    return trig, eff


def _one_sentence(doc: Doc) -> None:
    """Mark ``doc`` as one sentence (its first token starts it, no other does).

    In one array: setting ``Token.is_sent_start`` token by token checks the whole
    Doc for a parse each time (``Doc.has_annotation``), quadratic in the tokens
    (8 s for 20,000 tokens).
    """
    import numpy as np
    from spacy.attrs import SENT_START

    if len(doc) == 0:
        return
    starts = np.full((len(doc), 1), -1, dtype=np.int64)
    starts[0, 0] = 1
    doc.from_array([SENT_START], starts.astype(np.uint64))


def _run_context(pipe: _Pipeline, doc: Doc, events: Sequence[Event]) -> tuple[list[_Mod], list[tuple[list, list]]]:
    from spacy.tokens import Span as SpacySpan

    _one_sentence(doc)
    per_event = [_targets(doc, ev) for ev in events]
    spans = []
    seen: set[tuple[int, int]] = set()
    for trig, eff in per_event:
        for r in (*trig, *eff):
            if r not in seen:
                seen.add(r)
                spans.append(SpacySpan(doc, r[0], r[1], label="TARGET"))
    doc.spans[SPAN_GROUP] = spans
    pipe.context(doc)
    graph = doc._.context_graph
    mods: dict[int, _Mod] = {}
    for m in graph.modifiers:
        meta = m.rule.metadata or {}
        if m.category == "CLINEX_SENTINEL":
            continue
        s, e = m.modifier_span
        cs, ce = doc[s].idx, doc[e - 1].idx + len(doc[e - 1].text)
        mods[id(m)] = _Mod(meta.get("id", m.rule.literal), m.category.upper(), m.direction.upper(),
                           (s, e), (cs, ce), _cue_offsets(doc, s, e, meta.get("cue_tokens")))
    for target, m in graph.edges:
        mod = mods.get(id(m))
        if mod is None:
            continue
        # medspaCy 1.3.1 lets a cue modify a target that contains it (its overlap test
        # misses containment); a cue inside a target after its first token is about a
        # part of it ("synovitis, and possible vasculitis"), not about the event.
        if target.start < mod.tok[0] and mod.tok[1] <= target.end and not _negated_verb_phrase(doc, target, mod):
            continue
        mod.targets.add((target.start, target.end))
    return list(mods.values()), per_event


#: Auxiliaries that may stand before a negation cue at the start of an Effect span that
#: is a whole negated verb phrase ("did not develop any rash", "has never had seizures").
_AUXILIARIES = frozenset(
    "did does do had has have was were is are been be could would can will may might should".split()
)


def _negated_verb_phrase(doc: Doc, target: Any, mod: "_Mod") -> bool:
    """True when a negation cue inside an Effect span negates the whole span: only
    auxiliaries stand before it ("did not develop any rash" tagged as the Effect).

    A model may tag the negated verb phrase itself as the Effect; the cue is then not
    "about a part of" the Effect (the containment rule in :func:`_run_context`) but
    about all of it, as PHEE's annotation of "did not develop" events is (Sun et al.,
    EMNLP 2022, appendix A: the cue is Negated, the Effect is what did not occur).
    """
    if mod.category != "NEGATED_EXISTENCE":
        return False
    lead = doc[target.start : mod.tok[0]]
    return len(lead) > 0 and all(t.lower_ in _AUXILIARIES for t in lead)


def _heads_effect(doc: Doc, mod: "_Mod", effects: list[tuple[int, int]]) -> bool:
    """True for a negation cue that opens an Effect span, after auxiliaries at most
    ("without fetal bradycardia", "did not develop any rash" tagged as the Effect):
    ConText never lets a cue modify a target that contains it, but such an Effect is
    the absent finding itself (QA stop 18)."""
    if mod.category != "NEGATED_EXISTENCE":
        return False
    for start, end in effects:
        if start <= mod.tok[0] and mod.tok[1] <= end:
            lead = doc[start : mod.tok[0]]
            if all(t.lower_ in _AUXILIARIES for t in lead):
                return True
    return False


def _distance(a: tuple[int, int], b: tuple[int, int]) -> int:
    if a[1] <= b[0]:
        return b[0] - a[1]
    if b[1] <= a[0]:
        return a[0] - b[1]
    return 0


def _same_clause(cue: tuple[int, int], targets: list[tuple[int, int]], terminators: list[tuple[int, int]]) -> bool:
    """True if some target has no terminator between it and the cue."""
    for t in targets:
        lo, hi = (cue[1], t[0]) if cue[1] <= t[0] else (t[1], cue[0])
        if not any(lo <= s and e <= hi for s, e in terminators):
            return True
    return False


def _severity_links(pipe: _Pipeline, text: str, cue: tuple[int, int], effects: list[tuple[int, int]]) -> bool:
    for es, ee in effects:
        for link, rx in pipe.links:
            if link.position == "inside" and es <= cue[0] and cue[1] <= ee and rx.fullmatch(text[es:cue[0]]):
                return True
            if link.position == "before" and cue[1] <= es and rx.fullmatch(text[cue[1]:es]):
                return True
            if link.position == "after" and ee <= cue[0] and rx.fullmatch(text[ee:cue[0]]):
                return True
    return False


def _model_rank(
    pipe: _Pipeline,
    doc: Doc,
    att: Attribute,
    targets: set[tuple[int, int]],
    anchor: tuple[int, int],
    eff_chars: list[tuple[int, int]],
    cues: list[_Mod],
    pseudo: list[_Mod],
    terminators: list[tuple[int, int]],
    sole: bool = False,
) -> tuple[int, int] | None:
    """None if a model cue does not govern the event, else its rank (lower is better).

    Negated/Speculated: dropped inside a pseudo-cue or inside an Effect after its
    start; rank 0 when a rule matching the
    same words governs the trigger or Effect, rank 1 when no terminator stands
    between it and them (same clause); then by token distance to the trigger.
    Severity: kept when it modifies the Effect (:func:`_severity_links`).
    ``sole`` (the sentence's only event, and the attribute in the rules'
    ``model_trust``): a Negated/Speculated cue that passes the pseudo-cue and
    inside-Effect tests but no scope test still counts, at rank 2.
    """
    if att.cue is None:
        return None
    cs, ce = att.cue.start, att.cue.end
    tok = _token_range(doc, cs, ce)
    dist = _distance(tok, anchor) if tok is not None else len(doc)
    if att.name == "Severity":
        return (0, dist) if _severity_links(pipe, doc.text, (cs, ce), eff_chars) else None
    if any(p.char[0] <= cs and ce <= p.char[1] for p in pseudo):
        return None
    # A cue inside an Effect, after its first word, hedges or negates a part of it
    # ("synovitis, and possible vasculitis"): 3 of 410 Negated/Speculated cues in
    # PHEE train stand there.
    if any(s < cs and ce <= e for s, e in eff_chars):
        return None
    categories = pipe.rules.categories
    same = [m for m in cues if categories[m.category] == att.name and m.char[0] < ce and cs < m.char[1]]
    if same and any(m.targets & targets for m in same):
        return (0, dist)
    if tok is not None and _same_clause(tok, sorted(targets), terminators):
        return (1, dist)
    return (2, dist) if sole else None


def _decide(pipe: _Pipeline, text: str, events: Sequence[Event], doc: Doc | None) -> list[Event]:
    rules = pipe.rules
    if doc is None:
        # the tokenizer itself: ``make_doc`` refuses texts over 1,000,000 characters
        doc = pipe.nlp.tokenizer(text)
    mods, per_event = _run_context(pipe, doc, events)
    terminators = [m.tok for m in mods if m.direction == "TERMINATE"]
    pseudo = [m for m in mods if m.direction == "PSEUDO"]
    # a hedge that holds a negation word ("does not rule out", "cannot be excluded") is a
    # pseudo-negation too: the model's Negated cue inside it is not a negated event
    pseudo += [m for m in mods if m.rule_id in pipe.blocks_negation]
    cues = [m for m in mods if m.category in rules.categories and m.direction not in ("TERMINATE", "PSEUDO")]
    sev_hits = [(r, (m.start(), m.end())) for r, rx in pipe.severity for m in rx.finditer(text)]
    sole_trust = {t.attribute for t in rules.model_trust if t.when == "sole_event"}

    out: list[Event] = []
    for ev, (trig, eff) in zip(events, per_event):
        targets = set(trig) | set(eff)
        anchor = trig[0] if trig else (eff[0] if eff else (0, 0))
        eff_chars = [(f.start, f.end) for a in ev.main("Effect") for f in a.span.fragments]
        kept: list[Attribute] = []
        ranked: dict[str, tuple[tuple[int, int], Attribute]] = {}
        for att in ev.attributes:
            if att.source is None:
                att = att.model_copy(update={"source": "model"})
            if att.cue is None or att.name not in (*_SCOPED, "Severity"):
                kept.append(att)
                continue
            # the sentence's only event: the model's cue has no other event to be about
            sole = len(events) == 1 and att.name in sole_trust
            rank = _model_rank(pipe, doc, att, targets, anchor, eff_chars, cues, pseudo, terminators, sole)
            # PHEE gives an event one cue per attribute (3 of 370 Speculated events in
            # train have two): keep the best-placed model cue of each attribute.
            if rank is not None and (att.name not in ranked or rank < ranked[att.name][0]):
                ranked[att.name] = (rank, att)
        kept.extend(_rule_value(att, sev_hits) for _, att in ranked.values())
        names = {a.name for a in kept}
        added: list[Attribute] = []
        for name in _SCOPED:
            if name in names:
                continue
            # ConText never lets a cue modify a target it overlaps; a cue that is the
            # trigger itself ("... was suspected as the cause of ...") is the event's
            # cue (12 of 410 Negated/Speculated cues in PHEE train).
            governing = [
                m
                for m in cues
                if rules.categories[m.category] == name
                and (m.targets & targets or any(m.tok[0] < t[1] and t[0] < m.tok[1] for t in trig)
                     or _heads_effect(doc, m, eff))
            ]
            if governing:
                m = min(governing, key=lambda m: (_distance(m.tok, anchor), m.tok[0]))
                added.append(
                    Attribute(name=name, value=True, cue=Span.from_offsets(text, m.cue), source=f"rule:{m.rule_id}")
                )
        if "Severity" not in names and eff_chars:
            hits = [(r, c) for r, c in sev_hits if _severity_links(pipe, text, c, eff_chars)]
            if hits:
                first = min(s for s, _ in eff_chars)
                r, c = min(hits, key=lambda h: (abs(h[1][0] - first), h[1][0]))
                added.append(Attribute(name="Severity", value=r.value, cue=Span.from_offsets(text, c), source=f"rule:{r.id}"))
        attrs = tuple(kept + added)
        out.append(ev if attrs == ev.attributes else ev.model_copy(update={"attributes": attrs}))
    return out


def _rule_value(att: Attribute, sev_hits: list) -> Attribute:
    """A model Severity cue that is a known severity word and whose value contradicts
    that word's (High for a Low word, or Low for a High word; ``severity_rules``: the
    value PHEE train gives it most often) takes the word's value, so that "mild" is never
    High; Medium, which PHEE gives to many words ("severe": 80 High, 28 Medium in
    train), stays as the model says. The value then comes from the rule, and so does
    ``source``."""
    if att.name != "Severity" or att.cue is None:
        return att
    span = (att.cue.start, att.cue.end)
    for rule, hit in sev_hits:
        if hit == span and {rule.value, att.value} == {"High", "Low"}:
            return att.model_copy(update={"value": rule.value, "source": f"rule:{rule.id}"})
    return att


def apply_attribute_scope(
    text: str, events: Sequence[Event], *, rules: AttributeRules | None = None
) -> list[Event]:
    """Decide the Negated, Speculated and Severity attributes of one sentence's events.

    Parameters
    ----------
    text : str
        The sentence; every span of ``events`` points into it.
    events : sequence of Event
        The events predicted for ``text``. Their attributes, if any, come from a
        model's learned layer (``source`` None is read as ``"model"``).
    rules : AttributeRules, optional
        Default: the shipped rules (``resources/pv/attribute_rules.json``).

    Returns
    -------
    list of Event
        The events in the same order, each with attributes decided as the module
        notes say: a model cue of Negated/Speculated is kept only if its scope
        governs the trigger or Effect (or, for an attribute in the rules'
        ``model_trust``, the event is the sentence's only one), a governing rule cue is added when none is
        kept; Severity only from a word that modifies the Effect. Every attribute
        has ``source`` (``"model"`` or ``"rule:<id>"``) and a cue span into ``text``.

    Raises
    ------
    OffsetError
        A span of ``events`` that falls outside ``text``.
    InputError, FormatError
        When the shipped rule file cannot be read (first call only).

    References
    ----------
    NegEx (Chapman et al. 2001), ConText (Harkema et al. 2009) and medspaCy
    (Eyre et al. 2021) for the cue/scope model; PHEE (Sun et al. 2022) for the cue
    words and the cue spans; each rule's ``provenance`` field names its source.

    Examples
    --------
    >>> from clinex.pv.types import Argument
    >>> t = "The patient did not develop neutropenia while on clozapine."
    >>> ev = Event(event_type="Adverse_event", trigger=Span.from_offsets(t, (20, 27)),
    ...     arguments=(Argument(role="Effect", span=Span.from_offsets(t, (28, 39))),))
    >>> [(a.name, a.cue.text, a.source) for a in apply_attribute_scope(t, [ev])[0].attributes]
    [('Negated', 'not', 'rule:neg.not')]
    """
    if not events:
        return []
    _check_offsets(text, events)
    pipe = _pipeline(rules if rules is not None else _default_rules())
    return _decide(pipe, text, events, None)


def apply_attribute_scope_batch(
    texts: Sequence[str],
    events_per_text: Sequence[Sequence[Event]],
    *,
    rules: AttributeRules | None = None,
    batch_size: int = 256,
) -> list[list[Event]]:
    """:func:`apply_attribute_scope` over many sentences (one tokenizer pass).

    Parameters
    ----------
    texts : sequence of str
        Sentences.
    events_per_text : sequence of sequence of Event
        The events of each sentence, same length as ``texts``.
    rules : AttributeRules, optional
        As in :func:`apply_attribute_scope`.
    batch_size : int, default 256
        Passed to the tokenizer's ``pipe``.

    Returns
    -------
    list of list of Event
        One list per sentence; sentences without events are not tokenized.

    Raises
    ------
    InputError
        ``texts`` and ``events_per_text`` differ in length.
    OffsetError
        A span that falls outside its sentence.
    """
    if len(texts) != len(events_per_text):
        raise InputError(
            f"{len(texts)} texts but {len(events_per_text)} event lists", field="events_per_text"
        )
    out: list[list[Event]] = [[] for _ in texts]
    todo = [i for i, evs in enumerate(events_per_text) if evs]
    if not todo:
        return out
    for i in todo:
        _check_offsets(texts[i], events_per_text[i])
    pipe = _pipeline(rules if rules is not None else _default_rules())
    docs = pipe.nlp.tokenizer.pipe((texts[i] for i in todo), batch_size=batch_size)
    for i, doc in zip(todo, docs):
        out[i] = _decide(pipe, texts[i], events_per_text[i], doc)
    return out


def _check_offsets(text: str, events: Sequence[Event]) -> None:
    from clinex.text import check_span

    for ev in events:
        check_span(ev.trigger, text)
        for a in ev.arguments:
            check_span(a.span, text)
        for att in ev.attributes:
            if att.cue is not None:
                check_span(att.cue, text)
