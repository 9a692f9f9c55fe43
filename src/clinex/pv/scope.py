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

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from clinex.errors import InputError
from clinex.pv.scope_pipeline import SPAN_GROUP, _default_rules, _Pipeline, _pipeline, warm_up  # noqa: F401 (warm_up: old path)
from clinex.pv.scope_rules import (
    AttributeRules,
    ModelTrust,
    ScopeRule,
    SeverityLink,
    SeverityRule,
    default_rules_path,
    load_attribute_rules,
)
from clinex.pv.types import Attribute, Event
from clinex.text import Span

if TYPE_CHECKING:  # pragma: no cover
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


_SCOPED = ("Negated", "Speculated")


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


class _Sentence:
    """What the decisions of one sentence share: its ConText modifiers by kind, severity
    word hits and the rules' ``model_trust`` attributes."""

    __slots__ = ("pipe", "doc", "text", "cues", "pseudo", "terminators", "sev_hits", "sole_trust", "n_events")

    def __init__(self, pipe: _Pipeline, doc: Doc, text: str, mods: Sequence[_Mod], n_events: int) -> None:
        rules = pipe.rules
        self.pipe, self.doc, self.text, self.n_events = pipe, doc, text, n_events
        self.terminators = [m.tok for m in mods if m.direction == "TERMINATE"]
        # a hedge that holds a negation word ("does not rule out", "cannot be excluded") is a
        # pseudo-negation too: the model's Negated cue inside it is not a negated event
        self.pseudo = [m for m in mods if m.direction == "PSEUDO"]
        self.pseudo += [m for m in mods if m.rule_id in pipe.blocks_negation]
        self.cues = [m for m in mods if m.category in rules.categories and m.direction not in ("TERMINATE", "PSEUDO")]
        self.sev_hits = [(r, (m.start(), m.end())) for r, rx in pipe.severity for m in rx.finditer(text)]
        self.sole_trust = {t.attribute for t in rules.model_trust if t.when == "sole_event"}


def _decide(pipe: _Pipeline, text: str, events: Sequence[Event], doc: Doc | None) -> list[Event]:
    """Each event's attributes decided again (module notes): its model cues that govern it,
    then rule cues for the scoped attributes and Severity it still lacks."""
    if doc is None:
        # the tokenizer itself: ``make_doc`` refuses texts over 1,000,000 characters
        doc = pipe.nlp.tokenizer(text)
    mods, per_event = _run_context(pipe, doc, events)
    sent = _Sentence(pipe, doc, text, mods, len(events))
    out: list[Event] = []
    for ev, (trig, eff) in zip(events, per_event):
        targets = set(trig) | set(eff)
        anchor = trig[0] if trig else (eff[0] if eff else (0, 0))
        eff_chars = [(f.start, f.end) for a in ev.main("Effect") for f in a.span.fragments]
        kept = _model_attributes(sent, ev, targets, anchor, eff_chars)
        names = {a.name for a in kept}
        added = _rule_attributes(sent, names, trig, eff, targets, anchor)
        if "Severity" not in names and eff_chars:
            added += _rule_severity(sent, eff_chars)
        attrs = tuple(kept + added)
        out.append(ev if attrs == ev.attributes else ev.model_copy(update={"attributes": attrs}))
    return out


def _model_attributes(
    sent: _Sentence, ev: Event, targets: set[tuple[int, int]], anchor: tuple[int, int],
    eff_chars: list[tuple[int, int]],
) -> list[Attribute]:
    """The event's own attributes that are kept: those without a cue or not decided by
    scope as they are, and of each scoped attribute and Severity the best-placed model cue
    that governs the event (:func:`_model_rank`), every one naming its ``source``."""
    kept: list[Attribute] = []
    ranked: dict[str, tuple[tuple[int, int], Attribute]] = {}
    for att in ev.attributes:
        if att.source is None:
            att = att.model_copy(update={"source": "model"})
        if att.cue is None or att.name not in (*_SCOPED, "Severity"):
            kept.append(att)
            continue
        # the sentence's only event: the model's cue has no other event to be about
        sole = sent.n_events == 1 and att.name in sent.sole_trust
        rank = _model_rank(sent.pipe, sent.doc, att, targets, anchor, eff_chars, sent.cues, sent.pseudo,
                           sent.terminators, sole)
        # PHEE gives an event one cue per attribute (3 of 370 Speculated events in
        # train have two): keep the best-placed model cue of each attribute.
        if rank is not None and (att.name not in ranked or rank < ranked[att.name][0]):
            ranked[att.name] = (rank, att)
    kept.extend(_rule_value(att, sent.sev_hits) for _, att in ranked.values())
    return kept


def _rule_attributes(
    sent: _Sentence, names: set[str], trig: list[tuple[int, int]], eff: list[tuple[int, int]],
    targets: set[tuple[int, int]], anchor: tuple[int, int],
) -> list[Attribute]:
    """A rule cue for each scoped attribute the event does not have yet (``names``): the
    governing cue nearest the trigger, if any."""
    added: list[Attribute] = []
    for name in _SCOPED:
        if name in names:
            continue
        # ConText never lets a cue modify a target it overlaps; a cue that is the
        # trigger itself ("... was suspected as the cause of ...") is the event's
        # cue (12 of 410 Negated/Speculated cues in PHEE train).
        governing = [
            m
            for m in sent.cues
            if sent.pipe.rules.categories[m.category] == name
            and (m.targets & targets or any(m.tok[0] < t[1] and t[0] < m.tok[1] for t in trig)
                 or _heads_effect(sent.doc, m, eff))
        ]
        if governing:
            m = min(governing, key=lambda m: (_distance(m.tok, anchor), m.tok[0]))
            added.append(
                Attribute(name=name, value=True, cue=Span.from_offsets(sent.text, m.cue), source=f"rule:{m.rule_id}")
            )
    return added


def _rule_severity(sent: _Sentence, eff_chars: list[tuple[int, int]]) -> list[Attribute]:
    """The Severity of the severity word that modifies the Effect nearest its start, if any."""
    hits = [(r, c) for r, c in sent.sev_hits if _severity_links(sent.pipe, sent.text, c, eff_chars)]
    if not hits:
        return []
    first = min(s for s, _ in eff_chars)
    r, c = min(hits, key=lambda h: (abs(h[1][0] - first), h[1][0]))
    return [Attribute(name="Severity", value=r.value, cue=Span.from_offsets(sent.text, c), source=f"rule:{r.id}")]


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
