"""Shared ConText rule building: medspaCy rule dicts → ``ConTextRule`` objects.

Used by the cohort pipeline (:mod:`clinex.cohort.nlp`) and by the PHEE attribute
scope layer (:mod:`clinex.pv.scope`); neither task imports the other, both import
this module.

* :func:`expand_literals` turns a token pattern that only tests ``LOWER`` into the
  equivalent literal phrases (spaCy's PhraseMatcher is several times faster than the
  token Matcher);
* :func:`build_context_rules` builds the rules, adds the ``terminated_by`` links
  (category → categories that end its scope) and keeps clinex's own keys (rule id,
  provenance ...) in ``ConTextRule.metadata``;
* :func:`sentinel_rule` is a token-pattern rule that never matches: it keeps spaCy's
  token Matcher non-empty when all rules are literal, which otherwise warns (W036)
  on every document;
* :func:`import_medspacy` imports medspaCy (registering its spaCy factories) without
  the optional libraries its import chain pulls in and clinex never uses through it;
* :class:`BoundedTokenizer` wraps a spaCy tokenizer so that its time stays linear in
  the text's length (spaCy's suffix search is quadratic in a long run of
  punctuation such as 10,000 nested brackets).

References
----------
.. [1] Harkema H, Dowling JN, Thornblade T, Chapman WW. ConText: an algorithm for
   determining negation, experiencer, and temporal status from clinical reports.
   J Biomed Inform 2009;42(5):839-851.
.. [2] Eyre H, Chapman AB, Peterson KS, et al. Launching into clinical space with
   medspaCy: a new clinical text processing toolkit in Python. AMIA Annu Symp Proc
   2021:438-447 (the ``ConTextRule`` dict format).
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import itertools
import re
import sys
import threading
from collections.abc import Iterable, Mapping
from types import ModuleType
from typing import Any

__all__ = [
    "MEDSPACY_RULE_KEYS",
    "MAX_AFFIX_RUN",
    "BoundedTokenizer",
    "expand_literals",
    "build_context_rules",
    "sentinel_rule",
    "import_medspacy",
]

#: Optional libraries that ``import medspacy`` loads only to probe for them: thinc
#: (under spaCy) imports torch when installed, and QuickUMLS (imported by
#: ``medspacy.util``) imports NLTK, which imports scikit-learn and scipy.stats when
#: installed. clinex uses none of them through medspaCy (no QuickUMLS, no thinc
#: models), and on a laptop they cost about 3-4 s of every CLI start-up.
_PROBED_ONLY = ("torch", "sklearn", "scipy.stats")
#: Libraries imported unconditionally by a module clinex never calls: QuickUMLS'
#: ``core`` imports NLTK unconditionally (about 0.4 s) for its stop words, used only when a
#: QuickUMLS matcher is built. While medspaCy is first imported, an empty module
#: stands in for each of them.
_STUBBED = ("nltk",)
_IMPORT_LOCK = threading.Lock()


class _ThreadHider(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """While installed, makes one thread's imports of :data:`_PROBED_ONLY` fail and
    gives that thread an empty module for :data:`_STUBBED`; other threads import as usual.

    Thread-confined, so a worker thread (the web app's) that imports medspaCy never hides
    scikit-learn or torch from the main thread.
    """

    def __init__(self) -> None:
        self.owner = threading.get_ident()

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if threading.get_ident() != self.owner:
            return None
        if any(name == p or name.startswith(p + ".") for p in _PROBED_ONLY):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        if name in _STUBBED:
            return importlib.machinery.ModuleSpec(name, self)
        return None

    def create_module(self, spec: Any) -> None:
        return None  # the default (empty) module

    def exec_module(self, module: ModuleType) -> None:
        return None


def import_medspacy() -> ModuleType:
    """Import medspaCy (its spaCy factories are then registered) and return it.

    While medspaCy is first imported, the libraries in :data:`_PROBED_ONLY` that are
    not imported yet are hidden from the importing thread, so the probes of thinc and
    NLTK take the "not installed" path; other threads, and every later import, see them
    as usual, so ``import torch`` / ``import sklearn`` (the neural PHEE model, the RoB
    sentence model) works. Only those probing modules (thinc's torch support, NLTK's
    scikit-learn wrappers) see the libraries as missing, and clinex uses neither.
    The libraries in :data:`_STUBBED` get an empty module for the same time, removed
    from ``sys.modules`` afterwards (QuickUMLS keeps its reference, and clinex never
    builds a QuickUMLS matcher).

    Returns
    -------
    module
        ``medspacy``.
    """
    if "medspacy" in sys.modules:
        import medspacy

        return medspacy
    with _IMPORT_LOCK:
        hider = _ThreadHider()
        sys.meta_path.insert(0, hider)
        try:
            import medspacy
        finally:
            sys.meta_path.remove(hider)
            for name in _STUBBED:
                module = sys.modules.get(name)
                if module is not None and getattr(module.__spec__, "loader", None) is hider:
                    del sys.modules[name]
    return medspacy


#: Keys that medspaCy's ``ConTextRule.from_dict`` accepts (medspaCy 1.3).
MEDSPACY_RULE_KEYS: frozenset[str] = frozenset(
    {
        "literal",
        "direction",
        "pattern",
        "category",
        "metadata",
        "allowed_types",
        "excluded_types",
        "max_targets",
        "max_scope",
        "terminated_by",
    }
)


def expand_literals(rule: Mapping[str, Any], limit: int = 300) -> list[dict[str, Any]]:
    """Expand a token-pattern rule into literal rules when that is exact.

    Parameters
    ----------
    rule : mapping
        A medspaCy rule dict (``literal``, ``category``, optional ``pattern`` ...).
    limit : int, default 300
        Largest number of phrases a pattern may expand to.

    Returns
    -------
    list of dict
        A pattern whose tokens only test ``LOWER`` (a string or ``{"IN": [...]}``),
        optionally with ``"OP": "?"``, matches exactly the phrases of the cartesian
        product of its alternatives: one literal rule per phrase (``pattern`` None).
        Other rules, and products above ``limit`` phrases, come back unchanged (as
        a one-item list).

    Examples
    --------
    >>> [r["literal"] for r in expand_literals({"literal": "x", "category": "NEG",
    ...     "pattern": [{"LOWER": {"IN": ["no", "without"]}}, {"LOWER": "sign", "OP": "?"}]})]
    ['no', 'no sign', 'without', 'without sign']
    """
    pattern = rule.get("pattern")
    if not isinstance(pattern, list):
        return [dict(rule)]
    slots: list[list[str]] = []
    for tok in pattern:
        keys = set(tok) - {"OP"}
        if keys != {"LOWER"} or tok.get("OP") not in (None, "?"):
            return [dict(rule)]
        val = tok["LOWER"]
        if isinstance(val, str):
            alts = [val]
        elif isinstance(val, dict) and set(val) == {"IN"}:
            alts = list(val["IN"])
        else:
            return [dict(rule)]
        if tok.get("OP") == "?":
            alts = [*alts, ""]
        slots.append(alts)
    n = 1
    for alts in slots:
        n *= len(alts)
    if n > limit:
        return [dict(rule)]
    phrases = {" ".join(w for w in combo if w) for combo in itertools.product(*slots)}
    base = {k: v for k, v in rule.items() if k not in ("literal", "pattern")}
    return [{**base, "literal": p, "pattern": None} for p in sorted(phrases) if p]


def build_context_rules(
    rule_dicts: Iterable[Mapping[str, Any]],
    *,
    terminated_by: Mapping[str, Iterable[str]] | None = None,
    extra_keys: Iterable[str] = (),
) -> list[Any]:
    """Build medspaCy ``ConTextRule`` objects from rule dicts.

    Parameters
    ----------
    rule_dicts : iterable of mapping
        medspaCy rule dicts; pattern rules are expanded with :func:`expand_literals`.
    terminated_by : mapping of str to iterable of str, optional
        Category (upper case) → categories whose modifiers end its scope, added to
        every rule of that category (medspaCy's ``terminating_types`` option only
        reaches the first rule in medspaCy 1.3.1, so the links are set per rule).
    extra_keys : iterable of str
        clinex keys allowed besides :data:`MEDSPACY_RULE_KEYS` (``id``,
        ``provenance`` ...): they are moved into the rule's ``metadata``.

    Returns
    -------
    list of medspacy.context.ConTextRule

    Raises
    ------
    ValueError
        From medspaCy, for an unknown key or a bad direction.
    """
    import_medspacy()  # first: without the probes of torch / scikit-learn (see import_medspacy)
    from medspacy.context import ConTextRule

    extra = frozenset(extra_keys)
    links = {k.upper(): [v.upper() for v in vs] for k, vs in (terminated_by or {}).items()}
    rules = []
    for r in rule_dicts:
        meta = dict(r.get("metadata") or {})
        meta.update({k: v for k, v in r.items() if k in extra})
        base = {k: v for k, v in r.items() if k not in extra}
        if meta:
            base["metadata"] = meta
        for variant in expand_literals(base):
            rule = ConTextRule.from_dict(variant)
            for other in links.get(rule.category.upper(), []):
                rule.terminated_by.add(other)
            rules.append(rule)
    return rules


def sentinel_rule() -> Any:
    """A ConText rule that never matches (keeps the token Matcher non-empty, W036)."""
    import_medspacy()  # first: without the probes of torch / scikit-learn (see import_medspacy)
    from medspacy.context import ConTextRule

    return ConTextRule(
        "clinex-sentinel", "CLINEX_SENTINEL", pattern=[{"ORTH": "\x00clinex-sentinel\x00"}], direction="PSEUDO"
    )


#: Longest run of non-space characters that :class:`BoundedTokenizer` hands to spaCy's
#: tokenizer whole. The longest in PHEE train and dev is 39 characters
#: ("glipizide-trimethoprim/sulfamethoxazole"); drug names, doses and DOIs stay well
#: under 100. A run of 100 closing brackets costs spaCy about 0.2 ms.
MAX_AFFIX_RUN = 100

_LONG_RUN = re.compile(r"\S{%d,}" % (MAX_AFFIX_RUN + 1))
_RUN_PIECES = re.compile(r"\w+|\W")


class BoundedTokenizer:
    """A spaCy tokenizer whose time is linear in the length of the text.

    spaCy's tokenizer strips prefixes and suffixes from each run of non-space
    characters one at a time, and each suffix search scans the rest of the run, so a
    run of *n* closing brackets or full stops costs O(n²): 2,000 nested bracket pairs
    take 1.3 s, 8,000 take 18 s (spaCy 3.7.5; ``Tokenizer.find_suffix``). This wrapper
    gives spaCy's own tokens for every run up to :data:`MAX_AFFIX_RUN` characters (so
    every ordinary text is tokenized exactly as before) and cuts a longer run itself,
    in one pass, into runs of word characters and single other characters
    (``"((aspirin))"`` → ``( ( aspirin ) )``, as spaCy's affix rules would; a
    1,000,000-character word stays one token).

    Parameters
    ----------
    tokenizer : spacy.tokenizer.Tokenizer
        The tokenizer to wrap (``nlp.tokenizer``); ``nlp.tokenizer = BoundedTokenizer(nlp.tokenizer)``.
    max_run : int, default MAX_AFFIX_RUN
        Runs longer than this are cut by the wrapper.

    Notes
    -----
    The Doc's text is always the input text (spaCy's ``Doc(words, spaces)``); one
    space after a long run is that run's last token's whitespace, as spaCy gives it.
    """

    def __init__(self, tokenizer: Any, max_run: int = MAX_AFFIX_RUN) -> None:
        self.tokenizer = tokenizer
        self.max_run = max_run
        self._long = _LONG_RUN if max_run == MAX_AFFIX_RUN else re.compile(r"\S{%d,}" % (max_run + 1))

    @property
    def vocab(self) -> Any:
        """The wrapped tokenizer's vocabulary."""
        return self.tokenizer.vocab

    def __call__(self, text: str) -> Any:
        """Tokenize ``text`` (a spaCy ``Doc`` whose ``text`` is ``text``)."""
        runs = list(self._long.finditer(text))
        if not runs:
            return self.tokenizer(text)
        from spacy.tokens import Doc

        words: list[str] = []
        spaces: list[bool] = []
        pos = 0
        for run in runs:
            self._add(text[pos : run.start()], words, spaces)
            for piece in _RUN_PIECES.finditer(run.group()):
                words.append(piece.group())
                spaces.append(False)
            pos = run.end()
            if text.startswith(" ", pos):
                spaces[-1] = True
                pos += 1
        self._add(text[pos:], words, spaces)
        return Doc(self.tokenizer.vocab, words=words, spaces=spaces)

    def _add(self, part: str, words: list[str], spaces: list[bool]) -> None:
        if part:
            for tok in self.tokenizer(part):
                words.append(tok.text)
                spaces.append(bool(tok.whitespace_))

    def pipe(self, texts: Iterable[str], batch_size: int = 1000) -> Iterable[Any]:
        """Tokenize each text (as ``Tokenizer.pipe``, which also takes one text at a time)."""
        for text in texts:
            yield self(text)
