"""What a RoB 2 rule returns and reads: :class:`Decision` (an answer to one signalling
question, the rule's name and the deciding sentences) and :class:`Context` (a report's
facts: sentences, findings, blinding statements, participant flow, answers so far).

The rules themselves are in the domain modules; :mod:`~clinex.rob.evidence.reasoning.rules`
lists them per SQ (:data:`~clinex.rob.evidence.reasoning.rules.RULES`) and re-exports
these names.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from clinex.rob.evidence.assertion import AssertionScope
from clinex.rob.evidence.reasoning.counts import Flow
from clinex.rob.evidence.reasoning.facts import BlindingStatement, Finding, ReasoningData, Sentence, find

__all__ = ["Context", "Decision"]


_YES = ("Y", "PY")
_NO = ("N", "PN")


@dataclass(frozen=True)
class Decision:
    """A rule's answer to one SQ.

    Attributes
    ----------
    response : str
        Y, PY, PN, N or NI.
    rule : str
        The rule's name (provenance ``<model>:<sq>/<rule>``).
    sentences : tuple of Sentence
        The deciding sentences (empty only for NA).
    weight : float
        Confidence in (0, 1].
    considered : tuple of (Sentence, str)
        Sentences a reviewer should see were weighed but did not decide (e.g. an
        explicit statement on outcome assessors when the participant is the assessor
        of a self-reported outcome), each with the rule name its evidence span carries;
        cited right after the first deciding sentence.
    """

    response: str
    rule: str
    sentences: tuple[Sentence, ...] = ()
    weight: float = 0.8
    considered: tuple[tuple[Sentence, str], ...] = ()


@dataclass
class Context:
    """What the rules of one document read.

    Attributes
    ----------
    data : ReasoningData
    scope : AssertionScope
    sentences : list of Sentence
        All of the report's; a pattern is read only in ``own`` (``pointers`` for the
        ``pointer_patterns`` of ``reasoning.yaml``).
    blinding : list of BlindingStatement
    flow : Flow
    flow_sentences : list of Sentence
        Sentences the outcome-data numbers came from.
    analysis_sentences : list of Sentence
        Sentences the analysed numbers came from.
    answers : dict of str to str
        Responses decided so far (RoB 2 order), for the conditional questions.
    own : frozenset of int or None
        Indices of the sentences that may decide (None: all): statements about this trial.
    pointers : frozenset of int or None
        Indices of the sentences a pointer to registration or protocol may come from.
    """

    data: ReasoningData
    scope: AssertionScope
    sentences: list[Sentence]
    blinding: list[BlindingStatement]
    flow: Flow
    flow_sentences: list[Sentence]
    analysis_sentences: list[Sentence] = field(default_factory=list)
    answers: dict[str, str] = field(default_factory=dict)
    own: frozenset[int] | None = None
    pointers: frozenset[int] | None = None
    _cache: dict[str, list[Finding]] = field(default_factory=dict)

    def find(self, name: str, sq: str | None = None) -> list[Finding]:
        """Findings of pattern ``name``, in the SQ's section reading order when given."""
        if name not in self._cache:
            allowed = self.pointers if name in self.data.pointer_patterns else self.own
            self._cache[name] = find(self.data, self.scope, name,
                                     [s for s in self.sentences if allowed is None or s.index in allowed])
        found = self._cache[name]
        if sq is None:
            return found
        return sorted(found, key=lambda f: (self.data.rank(sq, f.sentence.section), f.sentence.index))

    def first(self, name: str, sq: str, *, affirmed: bool | None = True) -> Finding | None:
        """The first finding in reading order; ``affirmed`` True/False filters on negation."""
        for f in self.find(name, sq):
            if affirmed is None or f.assertion.negated != affirmed:
                return f
        return None


def _d(response: str, rule: str, *found: Finding | Sentence | None, weight: float = 0.8,
       hedged: bool = False) -> Decision:
    """A decision citing the sentences of ``found`` (findings or sentences, None skipped,
    each once in order); ``hedged`` softens Y/N to PY/PN and the weight by 0.8."""
    sents = tuple(dict.fromkeys(x.sentence if isinstance(x, Finding) else x for x in found if x is not None))
    if hedged:
        response = {"Y": "PY", "N": "PN"}.get(response, response)
        weight *= 0.8
    return Decision(response, rule, sents, weight)


def _hedged(*found: Finding | None) -> bool:
    """True when any of the findings is hedged ("may have", "probably")."""
    return any(f is not None and f.assertion.hedged for f in found)
