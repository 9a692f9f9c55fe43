"""The medspaCy pipeline of the screening engine, built once per set of criteria.

The pipeline is ``spacy.blank("en")`` followed by

1. ``clinex_sentences`` — sentence boundaries from the package's one sentence
   splitter (:func:`clinex.text.sentence_offsets` under
   :data:`clinex.text.CLINICAL_NOTE_RULES`): a line break starts a new sentence
   unless the next line continues the previous one (it starts in lower case, or
   it is indented, and is not a list item); ``.``, ``?`` and ``!`` followed by one
   space and a capital or digit also split. The component only copies the
   splitter's character offsets onto the tokens (``is_sent_start``).
2. ``medspacy_target_matcher`` — one literal (case-insensitive) rule per phrase of
   every criterion concept, written to the span group ``clinex_targets`` (spans may
   overlap: "aspirin" is a concept of two criteria).
3. ``medspacy_sectionizer`` — medspaCy's default section headers (``Family
   History:`` → ``family_history``), so that family-history mentions can be voided.
4. ``medspacy_context`` — medspaCy's default ConText rules plus clinex's own
   (``resources/context/clinex_context_rules.json``: family members, other persons,
   plans and recommendations, extra negations, ``;`` as a terminator, words that end
   a negation's scope such as "on" in "no bleeding on aspirin", and one override:
   ``": no"`` is bidirectional), giving each target its modifiers
   (NEGATED_EXISTENCE, FAMILY, HISTORICAL, HYPOTHETICAL, POSSIBLE_EXISTENCE, PLANNED,
   OTHER_PERSON). Scopes end at sentence boundaries.

No PyRuSH (its sentence splitter is ~5x slower on these notes and prints debugging
output); no statistical model (none is needed, and none may be downloaded).

References
----------
.. [1] Eyre H, Chapman AB, Peterson KS, et al. Launching into clinical space with
   medspaCy: a new clinical text processing toolkit in Python. AMIA Annu Symp Proc
   2021:438-447 (sectionizer, target matcher, ConText).
.. [2] Harkema H, Dowling JN, Thornblade T, Chapman WW. ConText: an algorithm for
   determining negation, experiencer, and temporal status from clinical reports.
   J Biomed Inform 2009;42(5):839-851.
"""

from __future__ import annotations

import bisect
import json
import re
import threading
from collections.abc import Iterable
from importlib import resources
from typing import TYPE_CHECKING

from clinex.context_rules import build_context_rules, sentinel_rule
from clinex.text import CLINICAL_NOTE_RULES, sentence_offsets

if TYPE_CHECKING:  # pragma: no cover
    from spacy.language import Language

__all__ = ["SPAN_GROUP", "MAX_SENTENCE_CHARS", "build_nlp", "get_nlp", "context_rules_path", "note_sentences"]

#: Name of the span group that holds the concept targets.
SPAN_GROUP = "clinex_targets"

_CACHE: dict[tuple[tuple[str, str], ...], "Language"] = {}
_LOCK = threading.Lock()


#: Longest sentence the cohort pipeline keeps whole (characters). A longer one (a
#: copied-forward medication line repeated thousands of times, each copy a lower-case
#: "continuation" of the one before) is cut at line breaks, or at a space for a longer
#: line, so that per-mention work (ConText scopes, dates, clauses) stays bounded and
#: screening time grows linearly with the note. No sentence of the synthetic dev set or
#: of ``tests/data/cohort`` comes near it (the longest holds 304 characters).
MAX_SENTENCE_CHARS = 1_000

#: A "Finding: value" list line ("Diabetes: Yes", "fever:none", "- Chest pain: denies"):
#: a label of letters (up to 40 characters) and a colon that is not part of a time or URL.
_LIST_LINE = re.compile(r"[ \t]*(?:[-*•][ \t]*)?[A-Za-z][A-Za-z0-9 /&()'+.,-]{0,40}?[ \t]*:(?![/\d])")

#: A list line's value that is a bare answer ("none", "no", "yes", "neg", "denies", ...).
_ANSWER = re.compile(
    r"[ \t]*(?:none|no|yes|y|n|neg|negative|pos|positive|denies|denied|absent|present|normal|nl|wnl|n/a|unremarkable)"
    r"[ \t.,;]*(?:\r?\n|$)",
    re.I,
)
#: A line that ends a sentence with end punctuation (trailing spaces allowed).
_ENDED = re.compile(r"[.!?][ \t]*$")


def note_sentences(text: str, start: int = 0, end: int | None = None) -> list[tuple[int, int]]:
    """Sentence offsets of a clinical note as the cohort pipeline uses them.

    :func:`clinex.text.sentence_offsets` under :data:`clinex.text.CLINICAL_NOTE_RULES`,
    with two further cuts:

    * a line break before a "Finding: value" list line ends the sentence when the line
      before is one too, or ends in ``.``/``!``/``?``, or when the value is a bare
      answer ("none", "no", "yes", "negative", ...), so that a negation or other
      ConText cue on one line of a list never reaches the line before or after it
      ("Diabetes: Yes" / "fever:none": the lower-case second line would otherwise
      continue the first, and its "none" negate "Diabetes");
    * a sentence longer than :data:`MAX_SENTENCE_CHARS` is cut at its last line break
      before the limit (a single longer line at its last space before it, else at the
      limit).

    Parameters
    ----------
    text : str
        The text; offsets are into it.
    start, end : int
        Character range to split (half-open; ``end=None`` is the end of the text).

    Returns
    -------
    list of (int, int)
        Half-open offsets, in order, without surrounding whitespace.

    References
    ----------
    .. [1] Harkema H, et al. ConText. J Biomed Inform 2009;42(5):839-851: a trigger's
       scope ends at the end of its sentence.
    """
    return refine_sentences(text, sentence_offsets(text, start, end, **CLINICAL_NOTE_RULES))


def refine_sentences(text: str, offsets: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """The list-line and length cuts of :func:`note_sentences`, applied to ``offsets``
    (sentences of ``text`` from :func:`clinex.text.sentence_offsets`)."""
    out: list[tuple[int, int]] = []
    for s, e in offsets:
        if text.find("\n", s, e) < 0 and e - s <= MAX_SENTENCE_CHARS:
            out.append((s, e))
            continue
        for a, b in _list_cuts(text, s, e):
            _cap(text, a, b, out)
    return out


def _list_cuts(text: str, s: int, e: int) -> list[tuple[int, int]]:
    """``text[s:e]`` cut at each line break before a "Finding: value" line that follows
    another one, or a line ending in ``.``/``!``/``?``, or whose value is a bare answer
    ("fever:none", "MI: no"): such a line is a list item, not a continuation."""
    parts: list[tuple[int, int]] = []
    cur = s
    prev_list = bool(_LIST_LINE.match(text, s, e))
    nl = text.find("\n", s, e)
    while nl >= 0:
        nxt = nl + 1
        lm = _LIST_LINE.match(text, nxt, e)
        is_list = lm is not None
        if is_list and (prev_list or _ENDED.search(text, max(cur, nl - 4), nl) or _ANSWER.match(text, lm.end(), e)):
            parts.append((cur, nl))
            cur = nxt
        prev_list = is_list
        nl = text.find("\n", nxt, e)
    parts.append((cur, e))
    return [(a, b) for a, b in (_strip(text, a, b) for a, b in parts) if b > a]


def _strip(text: str, a: int, b: int) -> tuple[int, int]:
    while a < b and text[a].isspace():
        a += 1
    while b > a and text[b - 1].isspace():
        b -= 1
    return a, b


def _cap(text: str, s: int, e: int, out: list[tuple[int, int]]) -> None:
    """Append ``text[s:e]`` cut into pieces of at most :data:`MAX_SENTENCE_CHARS`."""
    while e - s > MAX_SENTENCE_CHARS:
        limit = s + MAX_SENTENCE_CHARS
        cut = text.rfind("\n", s + 1, limit)
        if cut < 0:
            cut = text.rfind(" ", s + MAX_SENTENCE_CHARS // 2, limit)
        if cut < 0:
            cut = limit
        a, b = _strip(text, s, cut)
        if b > a:
            out.append((a, b))
        s, _ = _strip(text, cut, e)
    if e > s:
        out.append((s, e))


def context_rules_path() -> str:
    """Path of clinex's additional ConText rules (medspaCy JSON format)."""
    return str(resources.files("clinex.resources") / "context" / "clinex_context_rules.json")


def _register_sentences() -> None:
    from spacy.language import Language

    if "clinex_sentences" in Language.factories:
        return

    @Language.component("clinex_sentences")
    def clinex_sentences(doc):  # type: ignore[no-untyped-def]
        """Set ``is_sent_start`` from :func:`note_sentences` (clinical-note rules, list lines, length cap).

        The token at which a sentence of the splitter starts (or, were a start ever
        inside a token, the token holding it) starts a sentence; every other token
        does not, so whitespace between sentences stays with the sentence before.
        """
        idx = [tok.idx for tok in doc]
        offsets = refine_sentences(doc.text, sentence_offsets(doc.text, **CLINICAL_NOTE_RULES))
        first = {bisect.bisect_right(idx, s) - 1 for s, _ in offsets}
        for tok in doc:
            tok.is_sent_start = tok.i == 0 or tok.i in first
        return doc


def _context_rules(default_path: str) -> list:
    """medspaCy's default ConText rules with clinex's overrides, plus clinex's own rules.

    ``overrides`` (by literal) change a default rule's fields (``": no"`` becomes
    bidirectional: "eye exam: no retinopathy"); ``terminated_by`` ends a category's
    scope at another category ("No bleeding on aspirin": negation stops at "on").
    (medspaCy's ``terminating_types`` option is not used: in medspaCy 1.3.1 it only
    reaches the first rule.) Building is shared with the PHEE scope layer
    (:func:`clinex.context_rules.build_context_rules`).
    """
    with open(default_path, encoding="utf-8") as fh:
        defaults = json.load(fh)["context_rules"]
    with open(context_rules_path(), encoding="utf-8") as fh:
        ours = json.load(fh)
    overrides = {o["literal"]: o for o in ours.get("overrides", [])}
    merged = []
    for r in [*defaults, *ours["context_rules"]]:
        o = overrides.get(r["literal"])
        if o is not None and r in defaults:
            r = {**r, **{k: v for k, v in o.items() if k != "literal"}}
        merged.append(r)
    return build_context_rules(merged, terminated_by=ours.get("terminated_by", {}))


def build_nlp(phrases: Iterable[str]) -> "Language":
    """Build a fresh pipeline whose target matcher knows ``phrases``.

    Parameters
    ----------
    phrases : iterable of str
        Literal phrases (matched case-insensitively on token boundaries). Each is
        added with the label ``"TARGET"``; the engine maps a match back to its
        criteria and concepts by its lower-cased text.

    Returns
    -------
    spacy.language.Language
    """
    from clinex.context_rules import import_medspacy

    import_medspacy()  # first: registers the factories, imports spaCy without probes
    import spacy
    from medspacy.section_detection import SectionRule
    from medspacy.target_matcher import TargetRule

    _register_sentences()
    nlp = spacy.blank("en")
    # A dash bullet ("-NSTEMI 2 weeks ago", "-no MI") is its own token, so the concept
    # and the cue after it are found (spaCy's English prefixes leave "-no" whole).
    prefixes = [r"-(?=[A-Za-z])", *nlp.Defaults.prefixes]
    nlp.tokenizer.prefix_search = spacy.util.compile_prefix_regex(prefixes).search
    nlp.add_pipe("clinex_sentences")
    matcher = nlp.add_pipe(
        "medspacy_target_matcher", config={"result_type": "group", "span_group_name": SPAN_GROUP, "prune": False}
    )
    rules = [TargetRule(p, "TARGET") for p in sorted(set(phrases))]
    # One token pattern that never matches: keeps spaCy's token Matcher non-empty, which
    # otherwise warns (W036) on every document when all rules are literal phrases.
    rules.append(TargetRule("clinex-sentinel", "SENTINEL", pattern=[{"ORTH": "\x00clinex-sentinel\x00"}]))
    matcher.add(rules)
    sectionizer = nlp.add_pipe("medspacy_sectionizer", config={"input_span_type": "group", "span_group_name": SPAN_GROUP})
    # Same for the sectionizer, whose default rules are all literal.
    sectionizer.add([SectionRule("clinex-sentinel", "clinex_sentinel", pattern=[{"ORTH": "\x00clinex-sentinel\x00"}])])
    context = nlp.add_pipe(
        "medspacy_context",
        config={"rules": None, "input_span_type": "group", "span_group_name": SPAN_GROUP},
    )
    context.add(_context_rules(context.DEFAULT_RULES_FILEPATH))
    # All rules are literal after expand_literals: keep the token Matcher non-empty (W036).
    context.add([sentinel_rule()])
    return nlp


def get_nlp(phrases: Iterable[str]) -> "Language":
    """The cached pipeline for this set of phrases (built on first use).

    Parameters
    ----------
    phrases : iterable of str
        As in :func:`build_nlp`.

    Returns
    -------
    spacy.language.Language
        The same object for the same phrase set, for the life of the process.
    """
    key = tuple(sorted((p, "TARGET") for p in set(phrases)))
    with _LOCK:
        nlp = _CACHE.get(key)
        if nlp is None:
            nlp = _CACHE[key] = build_nlp(p for p, _ in key)
    return nlp
