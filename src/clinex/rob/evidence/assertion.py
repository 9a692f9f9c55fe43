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

Absence of information is not negation. "No further details of how assignments were
concealed ... are available", "The report does not describe how allocation was
concealed", "Blinding of outcome assessors was not reported" say nothing about what the
trial did; RoB 2 answers such a question *No information*, and an N needs a statement
of what was done ("Allocation was not concealed: the list was posted on the ward
wall."). :data:`ABSENCE_BEFORE` (a cue before the target: "no details of", "does not
describe how", "it is unclear whether") and :data:`ABSENCE_AFTER` (after it: "was not
reported / described / stated / specified", "unclear") mark a target ``absent`` when the
cue stands outside the target, in the same clause (:data:`ABSENCE_CLAUSE_END` not between
them), at most :data:`ABSENCE_REACH` characters away. Higgins JPT et al., RoB 2 full
guidance document, 22 Aug 2019, section 1.3: "No information" where the report gives
too little to answer Y/PY or N/PN.

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

__all__ = ["Assertion", "AssertionScope", "default_scope", "ABSENCE_BEFORE", "ABSENCE_AFTER", "absence_cues"]

#: An absence-of-information cue before its target: "no (further) details of", "no
#: information on", "does not describe how", "it is unclear whether", "not reported whether".
ABSENCE_BEFORE = re.compile(
    r"\b(?:no|without)\s+(?:further\s+|more\s+|additional\s+|other\s+|specific\s+)?"
    r"(?:details?|information|description|descriptions|mention|explanation)\b"
    r"|\b(?:does|did|do)\s+not\s+(?:describe|report|state|mention|specify|say|explain|detail|indicate|clarify)\b"
    r"|\b(?:unclear|not\s+clear|unknown|not\s+known|not\s+stated|not\s+reported|not\s+described|not\s+specified)"
    r"\s+(?:whether|if|how|who|which|what|when)\b", re.I)
#: An absence-of-information cue after its target: "... was not reported / described /
#: stated / specified / mentioned", "... unclear", "... not given in the report".
ABSENCE_AFTER = re.compile(
    r"\b(?:not|never)\s+(?:been\s+)?(?:reported|described|stated|specified|mentioned|detailed|documented|"
    r"explained|given|provided|clear)\b"
    r"|\b(?:unclear|unreported|undescribed|unspecified)\b", re.I)
#: Where an absence cue's reach ends: a clause boundary between cue and target.
ABSENCE_CLAUSE_END = re.compile(
    r"[;:]|\.\s|\b(?:but|however|whereas|although|though|while|whilst)\b"
    r"|,?\s+and\s+(?=(?:the\s+)?[\w-]+\s+(?:[\w-]+\s+)?(?:was|were|is|are)\b)", re.I)
#: Most characters between an absence cue and its target.
ABSENCE_REACH = 100


def absence_cues(text: str) -> list[tuple[int, int, str]]:
    """Absence-of-information cues of one sentence: ``(start, end, direction)``, direction
    ``"before"`` (the cue precedes what it is about) or ``"after"``."""
    out = [(m.start(), m.end(), "before") for m in ABSENCE_BEFORE.finditer(text)]
    out += [(m.start(), m.end(), "after") for m in ABSENCE_AFTER.finditer(text)
            if not any(a <= m.start() < b for a, b, _ in out)]
    return sorted(out)


def _absent(text: str, start: int, end: int, cues: list[tuple[int, int, str]]) -> bool:
    """Whether an absence cue outside the target [start, end) reaches it (same clause)."""
    for a, b, direction in cues:
        if start <= a < end or start < b <= end:
            continue  # the cue is the target's own meaning ("other outcomes are not reported")
        if direction == "before" and b <= start and start - b <= ABSENCE_REACH:
            if not ABSENCE_CLAUSE_END.search(text, b, start):
                return True
        if direction == "after" and end <= a and a - end <= ABSENCE_REACH:
            if not ABSENCE_CLAUSE_END.search(text, end, a):
                return True
    return False

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
    absent : bool
        The sentence says the information is missing ("was not reported", "no details
        of"): neither affirmed nor negated, the answer is No information.
    """

    negated: bool = False
    hedged: bool = False
    cue: str | None = None
    cue_start: int | None = None
    absent: bool = False


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
            One per target, in order; ``absent`` set where an absence-of-information
            cue reaches the target (see the module docstring).
        """
        if not targets:
            return []
        cues = absence_cues(text)
        if cues:
            absent = [_absent(text, s, e, cues) for s, e in targets]
            if any(absent):
                from dataclasses import replace

                return [replace(a, absent=True) if x else a
                        for a, x in zip(self._check(text, targets, inner=inner), absent)]
        return self._check(text, targets, inner=inner)

    def _check(self, text: str, targets: Sequence[tuple[int, int]], *, inner: bool = True) -> list[Assertion]:
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
