"""The rules evidence model: RoB 2 answers by expert reasoning, every answer with its rule.

:class:`RulesEvidenceModel` reads a report once — sentences with their sections, the
blinding statements and who they are about, the participant flow — and answers the
22 signalling questions in RoB 2 order with the named rules of
:mod:`~clinex.rob.evidence.reasoning.rules` (data: ``resources/rob/reasoning.yaml``).
A question whose condition ("If Y/PY to ...") is not met is NA. A question no rule
decides falls back on the cue lexicon (``cues.yaml``), each cue checked for negation
and hedging first (a negated cue is dropped, a hedged one is weakened to PY/PN); a
question without any evidence is NI.

Every answer's first evidence span is the sentence that decided it, with the source
``clinex.rob.rules.v1:<sq>/<rule>``; then the sentences the rule weighed without
deciding on them (:attr:`Decision.considered`, e.g. ``4.3/assessors_aware_considered``),
the rule's other deciding sentences, and cue matches for the same SQ that point the
same way, up to ``max_evidence`` in all. A cue match is never a statement about other
people (2.1 cites only statements about participants, 2.2 about carers and
deliverers, 4.3 about outcome assessors and, for self-reported outcomes,
participants); for these SQs a cue match from a sentence without any blinding statement
counts only if it has a blinding or awareness word, and never from a sentence about the
participant flow (losses to follow-up, withdrawals).
Only statements about this trial decide: a sentence of the Introduction, Discussion or
Conclusion decides nothing but a pointer to the trial's registration or protocol, and a
sentence about another study, another phase or the literature ("Steele and Irwin
excluded mosaic warts", "a recent open label study of 24 children", "previous trials")
decides nothing anywhere (:meth:`~clinex.rob.evidence.reasoning.facts.ReasoningData.decides`;
``reasoning.yaml``: ``pointer_only_sections``, ``pointer_patterns``, ``other_study``).
A sentence whose main clause is a recommendation or a counterfactual ("Future trials
should use central allocation and blinded outcome assessors.") casts no cue vote, and no
rule reads a pattern inside such a clause (:func:`~clinex.rob.evidence.reasoning.facts.hypothetical_spans`).

References
----------
Sterne JAC et al. RoB 2. BMJ 2019;366:l4898. Higgins JPT et al. RoB 2 full guidance
document, 22 Aug 2019. Dhrangadhariya A et al. RoBuster. Database 2023 (placards).
"""

from __future__ import annotations

import bisect
import re
from pathlib import Path

from clinex.errors import InputError, SchemaError
from clinex.rob.evidence.assertion import absence_cues, default_scope
from clinex.rob.evidence.cues import CueEvidenceModel
from clinex.rob.evidence.reading import load_reading_list, reading_evidence
from clinex.rob.evidence.reasoning.counts import PLANNING, consort_counts, find_counts, flow
from clinex.rob.evidence.reasoning.facts import (
    Sentence,
    blinding_statements,
    hypothetical_spans,
    load_reasoning_data,
)
from clinex.rob.evidence.reasoning.rules import Context, Decision, decide
from clinex.rob.evidence.response import SQ_IDS, answer_from_votes, judgement_of
from clinex.rob.evidence.segment import document_sections, document_segments
from clinex.rob.schema import fold_response
from clinex.rob.types import Evidence, SQAnswer
from clinex.text import Document, Span

__all__ = ["RulesEvidenceModel"]

#: SQs the rules answer alone: without a rule's decision they are NI (cue matches are
#: shown as evidence considered, with the NI answer, but do not vote).
CLOSED = frozenset({"1.1", "1.2", "1.3", "2.1", "2.2", "2.6", "3.1", "4.3", "5.1", "5.2", "5.3"})

_BLINDING_ACTOR = {"2.1": ("participants",), "2.2": ("deliverers",), "4.3": ("assessors", "participants")}


#: A word about blinding or awareness of the allocation. A cue vote for 2.1 / 2.2 / 4.3
#: from a sentence without a blinding statement must contain one: "12 participants in the
#: Drug X group and 31 in the placebo group were lost to follow-up" matches the placebo
#: cue but says nothing about who knew the allocation (RoB 2 guidance 2.1/2.2/4.3 asks
#: about awareness; clinex's own choice of words).
_BLINDING_WORD = re.compile(
    r"\b(blind\w*|mask\w*|unmask\w*|(un)?aware\w*|knew|know\w*|conceal\w*|guess\w*|identical\w*|"
    r"matching|indistinguishable|look-?alike|sham|placebo[- ]controlled|open[- ]label|double[- ]dummy)\b", re.I)


#: A word about deviating from, or keeping to, the allocated intervention, or a negation ("no
#: usual-care patient received the structured protocol"). A cue vote for 2.3 must come from a
#: sentence with one: "The usual care group continued with the care provided by their general
#: practitioner." describes the comparator, not a deviation (RoB 2 guidance 2.3 asks about
#: deviations arising from the trial context; QA report 04; clinex's own choice of words).
_DEVIATION_WORD = re.compile(
    r"\b(deviat\w*|cross(ed|es|ing)?[- ]?over\w*|switch\w*|contaminat\w*|adheren\w*|non-?adheren\w*|complian\w*|"
    r"non-?complian\w*|attendance|attended|retention|protocol|departures?|co-?interventions?|as (allocated|assigned|randomi[sz]ed)|"
    r"outside the (trial|study)|privately|other (group|arm|intervention|treatment)|instead|"
    r"no|not|none|never|nobody|neither|nor|without|cannot|could not)\b", re.I)


_SPACE = re.compile(r"\s+")
# A run-in label just before a segment (structured abstracts, CONSORT sub-headings).
_RUN_IN = re.compile(r"(?:^|[\n.])\s*([A-Z][A-Za-z /-]{2,40}):\s*$")
_BROKEN_HYPHEN = re.compile(r"(?<=\w)-\s+(?=\w)")
_LINE_HYPHEN = re.compile(r"\b([A-Za-z]+)-[ \t]*\n[ \t]*(?=[a-z])")
#: First parts of hyphenated compounds: "intention-\nto-treat" keeps its hyphen,
#: "as-\nsessors" becomes "assessors".
_COMPOUND_HEADS = frozenset({
    "intention", "intent", "double", "single", "triple", "open", "non", "self", "well", "follow",
    "per", "placebo", "computer", "web", "long", "short", "post", "pre", "co", "multi", "cross", "half",
    "low", "high", "all", "time", "dose", "end", "case", "sham", "age", "full", "part", "first", "second",
    "third", "one", "two", "three", "four", "six", "twelve", "day", "week", "month", "year", "lost",
    "drop", "to", "observer", "assessor", "investigator", "patient", "evaluator", "rater",
})


def _join_line_hyphen(m: re.Match[str]) -> str:
    head = m.group(1)
    return f"{head}-" if head.lower() in _COMPOUND_HEADS else head


def _flat(text: str) -> str:
    """A segment as the rules read it: a word broken across lines by a hyphen joined
    ("ran-\ndomised" → "randomised"; a compound's hyphen kept: "intention-\nto-treat"),
    other hyphen + whitespace runs closed ("intention- to- treat"), whitespace runs as one
    space."""
    text = _LINE_HYPHEN.sub(_join_line_hyphen, text)
    return _SPACE.sub(" ", _BROKEN_HYPHEN.sub("-", text)).strip()


def _covering(sentences: list[Sentence], spans: list[tuple[int, int]]) -> list[Sentence]:
    """The sentence holding the start of each span (diagram boxes may start mid-segment)."""
    starts = [s.start for s in sentences]
    out: list[Sentence] = []
    for a, _ in spans:
        k = bisect.bisect_right(starts, a) - 1
        if k >= 0 and a < sentences[k].end and sentences[k] not in out:
            out.append(sentences[k])
    return out


class RulesEvidenceModel:
    """RoB 2 answers from named rules over the report's facts (see the module docstring).

    Parameters
    ----------
    max_evidence : int, default 2
        Most evidence sentences per SQ (the deciding one first).
    max_chars : int, default 500
        Longest segment (see :func:`~clinex.rob.evidence.segment.segment_document`).
    reading : bool, default True
        Also cite, after each asked question's own evidence, the reading list's sentences
        (:mod:`clinex.rob.evidence.reading`, source ``clinex.rob.reading.v1:<sq>/<topic>``,
        score 0.3): what a reviewer reads beside the deciding statement. False: deciding
        evidence only.

    Raises
    ------
    SchemaError
        ``max_evidence`` < 1.

    Examples
    --------
    >>> from clinex.text import Document
    >>> text = "Outcome assessors were not blinded to group allocation."
    >>> ans = RulesEvidenceModel().predict(Document(id="t", text=text))
    >>> ans["4.3"].response, ans["4.3"].evidence[0].source
    ('Y', 'clinex.rob.rules.v1:4.3/assessors_aware')
    >>> ans["2.1"].response, ans["2.1"].evidence
    ('NI', ())
    """

    kind = "rules"

    def __init__(self, *, max_evidence: int = 2, max_chars: int = 500, reading: bool = True) -> None:
        if max_evidence < 1:
            raise SchemaError("max_evidence must be >= 1", field="max_evidence")
        self.max_evidence = max_evidence
        self.max_chars = max_chars
        self.reading = reading
        self.data_ = load_reasoning_data()
        self.cues_ = CueEvidenceModel(max_chars=max_chars)

    @property
    def name(self) -> str:
        """Versioned model name."""
        return self.data_.name

    # ------------------------------------------------------------------ reading

    def _sentences(self, document: Document) -> list[Sentence]:
        sections = document_sections(document)
        starts = [s.start for s in sections]
        out = []
        text = document.text
        for i, (start, end) in enumerate(document_segments(document, max_chars=self.max_chars)):
            k = bisect.bisect_right(starts, start) - 1
            label = sections[k].label if k >= 0 and start < sections[k].end + 1 else "front"
            flat = _flat(text[start:end])
            lead = _RUN_IN.search(text[max(0, start - 60):start])
            if lead:  # "Main outcome measure: Handgrip strength ...": the label is part of what is said
                flat = f"{_flat(lead.group(1))}: {flat}"
            out.append(Sentence(i, start, end, flat, label or "front"))
        return out

    def _cue_votes(self, sentences: list[Sentence]) -> dict[str, list[tuple[Sentence, str, float, str]]]:
        """Cue matches per SQ after assertion: (sentence, response, weight, rule id); the best
        cue of each SQ per sentence (:meth:`CueEvidenceModel.asserted_matches`)."""
        votes: dict[str, list[tuple[Sentence, str, float, str]]] = {sq: [] for sq in SQ_IDS}
        for s in sentences:
            if any(a == 0 for a, _ in hypothetical_spans(self.data_, s.text)):
                continue  # "Future trials should use ...": a recommendation, not this trial's method
            if absence_cues(s.text):
                continue  # "Blinding of outcome assessors was not reported": no information

            for sq, rule in self.cues_.asserted_matches(s.text, best_per_sq=True):
                votes[sq].append((s, rule.response, rule.weight, rule.id))
        return votes

    # ------------------------------------------------------------------ answering

    def _evidence(self, document: Document, s: Sentence, sq: str, score: float, source: str) -> Evidence:
        return Evidence(
            span=Span.from_offsets(document.text, (s.start, s.end), label=sq, score=score, source=source),
            page=document.page_of(s.start), score=score, source=source,
        )

    def predict(self, document: Document, *, conditional: bool = True) -> dict[str, SQAnswer]:
        """Answer all 22 SQs for one document.

        Parameters
        ----------
        document : Document
        conditional : bool, default True
            False: answer every SQ as if RoB 2 asked it (to inspect what the rules
            would say; :func:`clinex.rob.assess.assess` still marks not-asked ones NA).

        Returns
        -------
        dict of str to SQAnswer
            Keyed by SQ id in RoB 2 order; non-asked questions NA, questions without
            evidence NI.
        """
        sentences = self._sentences(document)
        own, late, late_only, pointers = self._own_and_late(sentences)
        ctx, ctx_late = self._contexts(document, sentences, own, late, pointers)
        votes = self._cue_votes(own)
        votes_late = self._cue_votes(late) if late_only else votes
        answers: dict[str, SQAnswer] = {}
        for sq in SQ_IDS:
            d = decide(ctx, sq, conditional=conditional)
            if d is None and late_only:
                d = decide(ctx_late, sq, conditional=conditional)
            ans = self._answer(document, ctx, sq, d, votes[sq] or votes_late[sq])
            ctx.answers[sq] = ans.response
            answers[sq] = ans
        if not self.reading:
            return answers
        return self._add_reading(document, sentences, answers, frozenset(s.index for s in own))

    def _own_and_late(
        self, sentences: list[Sentence]
    ) -> tuple[list[Sentence], list[Sentence], frozenset[str], frozenset[int]]:
        """Whose statement each sentence is (issue 22): ``own`` -- this trial's own Methods,
        Results, abstract; ``late`` -- also the Discussion / Conclusion, read last when nothing
        else decides; and the sections read only late.

        The Introduction, Discussion and Conclusion only point to registration or protocol; a
        section is read late only with a Methods or Results section found, and never one
        holding most of the report (a heading missed: an abstract's "Conclusion:" running to
        the end). Sentences about another study are in neither list; the indexes of all
        others come last (the sentences that may point to a registration or protocol).
        """
        data = self.data_
        other = {s.index for s in sentences if data.about_other_study(s)}
        late_only = frozenset(
            x for x in data.pointer_only_sections
            if any(s.section in ("methods", "results") for s in sentences)
            and 2 * sum(s.section == x for s in sentences) <= len(sentences))
        own = [s for s in sentences if s.index not in other and s.section not in late_only]
        late = [s for s in sentences if s.index not in other
                and (s.section not in late_only or s.section in data.last_resort_sections)]
        return own, late, late_only, frozenset(s.index for s in sentences if s.index not in other)

    def _contexts(self, document: Document, sentences: list[Sentence], own: list[Sentence],
                  late: list[Sentence], pointers: frozenset[int]) -> tuple[Context, Context]:
        """The rules' contexts over the ``own`` and the ``late`` sentences (sharing the
        participant flow and the answers given so far).

        Participant flow is reported in Results (CONSORT 2010 items 13, 16); numbers in the
        Methods are plans, eligibility and interim analyses (issue 22 item 4): Results first
        (RoBuster placard for 3.1), then the abstract and the rest.
        """
        data = self.data_
        scope = default_scope()
        flow_order = ([s for s in own if s.section == "results"]
                      + [s for s in own if s.section not in ("methods", "results")])
        counts = consort_counts(document.text) + [c for s in flow_order for c in find_counts(s.text, s.start)]
        fl = flow(counts)
        flow_sents = _covering(sentences, fl.evidence)
        analysis_sents = _covering(sentences, list(dict.fromkeys(fl.analysis_evidence)))
        ctx = Context(data, scope, sentences, blinding_statements(data, scope, own), fl,
                      flow_sents, analysis_sents, own=frozenset(s.index for s in own), pointers=pointers)
        ctx_late = Context(data, scope, sentences, blinding_statements(data, scope, late), fl, flow_sents,
                           analysis_sents, ctx.answers, own=frozenset(s.index for s in late), pointers=pointers)
        return ctx, ctx_late

    def _add_reading(self, document: Document, sentences: list[Sentence], answers: dict[str, SQAnswer],
                     own: frozenset[int]) -> dict[str, SQAnswer]:
        """Cite the reading list's sentences (:mod:`clinex.rob.evidence.reading`) after each
        asked question's own evidence: what a reviewer reads beside the deciding statement."""
        reading = load_reading_list()
        listed = reading_evidence(sentences, reading=reading, allowed=own)
        for sq, ans in answers.items():
            if ans.response == "NA" or sq not in listed:
                continue
            cited = {(e.span.start, e.span.end) for e in ans.evidence}
            extra = [self._evidence(document, s, sq, reading.score, f"{reading.name}:{sq}/{topic}")
                     for s, topic in listed[sq] if (s.start, s.end) not in cited][: reading.max_per_sq]
            if extra:
                answers[sq] = ans.model_copy(update={"evidence": (*ans.evidence, *extra)})
        return answers

    def _answer(self, document: Document, ctx: Context, sq: str, d: Decision | None,
                votes: list[tuple[Sentence, str, float, str]]) -> SQAnswer:
        """The answer to ``sq``: the rules' decision ``d`` with its sentences, then cue
        matches pointing the same way; without a decision, the cue matches' answer."""
        votes = self._usable_votes(ctx, sq, votes)
        if d is None:
            return self._answer_from_cues(document, sq, votes)
        if d.response == "NA":
            # not asked: the cue matches are kept for the reader, as assess() keeps evidence
            return SQAnswer(sq=sq, response="NA", confidence=1.0, evidence=tuple(
                self._cue_evidence(document, sq, v) for v in self._ranked(sq, votes)[: self.max_evidence]))
        source = f"{self.name}:{sq}/{d.rule}"
        cited = [(s, source, d.weight) for s in d.sentences[:1]]
        cited += [(s, f"{self.name}:{sq}/{rule}", min(d.weight, 0.5)) for s, rule in d.considered]
        cited += [(s, source, d.weight) for s in d.sentences[1:]]
        evidence = [self._evidence(document, s, sq, w, src) for s, src, w in cited[: self.max_evidence]]
        if d.response not in ("NA", "NI"):
            evidence += self._agreeing_cues(document, sq, d, votes, {s.index for s, _, _ in cited},
                                            self.max_evidence - len(evidence))
        response = d.response
        return SQAnswer(sq=sq, response=response,  # type: ignore[arg-type]
                        judgement=judgement_of(sq, response) if response not in ("NA", "NI") else None,  # type: ignore[arg-type]
                        confidence=d.weight, evidence=tuple(evidence))

    def _usable_votes(self, ctx: Context, sq: str,
                      votes: list[tuple[Sentence, str, float, str]]) -> list[tuple[Sentence, str, float, str]]:
        """The cue matches that may stand for ``sq``: a blinding SQ's only from statements
        about its actor (or about nobody, naming blinding) and never about losses; 2.3's
        only naming a deviation; domain 3's never a sample-size allowance ("allowing for
        10% drop-out" is no flow, issue 22)."""
        if sq in _BLINDING_ACTOR:
            actors = _BLINDING_ACTOR[sq]
            about = {b.sentence.index for b in ctx.blinding if b.actor in actors}
            anyone = {b.sentence.index for b in ctx.blinding}
            flow_words = ctx.data.patterns["participant_flow"]  # losses are never blinding evidence
            votes = [v for v in votes if not flow_words.search(v[0].text) and (
                v[0].index in about or (v[0].index not in anyone and _BLINDING_WORD.search(v[0].text)))]
        if sq == "2.3":
            votes = [v for v in votes if _DEVIATION_WORD.search(v[0].text)]
        if sq.startswith("3."):
            votes = [v for v in votes if not PLANNING.search(v[0].text)]
        return votes

    def _ranked(self, sq: str, votes: list[tuple[Sentence, str, float, str]]) -> list[tuple[Sentence, str, float, str]]:
        """Cue matches best first: section rank for ``sq``, then weight, then text order."""
        return sorted(votes, key=lambda v: (self.data_.rank(sq, v[0].section), -v[2], v[0].index))

    def _cue_evidence(self, document: Document, sq: str, vote: tuple[Sentence, str, float, str],
                      cap: float | None = None) -> Evidence:
        """The evidence of one cue match (score its weight, at most ``cap``)."""
        s, _, w, rid = vote
        return self._evidence(document, s, sq, w if cap is None else min(w, cap), f"{self.cues_.name}:{sq}/{rid}")

    def _answer_from_cues(self, document: Document, sq: str,
                          votes: list[tuple[Sentence, str, float, str]]) -> SQAnswer:
        """The answer when no rule decides: NI without cue matches; NI with the best match
        cited for a closed SQ; else the matches' vote."""
        if not votes:
            return SQAnswer(sq=sq, response="NI", confidence=0.5)
        if sq in CLOSED:
            best = min(votes, key=lambda v: (self.data_.rank(sq, v[0].section), -v[2], v[0].index))
            return SQAnswer(sq=sq, response="NI", confidence=0.5, evidence=(self._cue_evidence(document, sq, best, 0.5),))
        ranked = self._ranked(sq, votes)[: self.max_evidence]
        evidence = [self._cue_evidence(document, sq, v) for v in ranked]
        return answer_from_votes(sq, evidence, [(r, w) for _, r, w, _ in ranked])

    def _agreeing_cues(self, document: Document, sq: str, d: Decision,
                       votes: list[tuple[Sentence, str, float, str]], used: set[int], room: int) -> list[Evidence]:
        """Up to ``room`` cue matches in sentences not cited yet that point the way the
        decision does (score at most its weight)."""
        direction = fold_response(d.response)
        out: list[Evidence] = []
        for vote in self._ranked(sq, votes):
            if len(out) >= room:
                break
            s, r = vote[0], vote[1]
            if s.index in used or r == "NI" or fold_response(r) != direction:
                continue
            used.add(s.index)
            out.append(self._cue_evidence(document, sq, vote, d.weight))
        return out

    @classmethod
    def load(cls, path: str | Path) -> "RulesEvidenceModel":
        """Read settings written by :meth:`save` (``kind: rules``).

        Raises
        ------
        InputError
            The file does not exist.
        FormatError
            Not YAML or not a mapping.
        ModelError
            Another kind, another rules version, or a bad setting (the message names the field).
        """
        from clinex.errors import ModelError
        from clinex.io.textfile import parse_yaml, read_text

        p = Path(path)
        data = parse_yaml(read_text(p), path=p)
        if not isinstance(data, dict) or data.get("kind") != "rules":
            raise ModelError(f"model kind {data.get('kind') if isinstance(data, dict) else None!r} is not 'rules'",
                             path=p, field="kind")
        if data.get("name", load_reasoning_data().name) != load_reasoning_data().name:
            raise ModelError(f"rules {data.get('name')!r} are not the installed {load_reasoning_data().name!r}",
                             path=p, field="name")
        try:
            return cls(max_evidence=int(data.get("max_evidence", 2)), max_chars=int(data.get("max_chars", 500)),
                       reading=bool(data.get("reading", True)))
        except (TypeError, ValueError, SchemaError) as exc:
            raise ModelError(f"bad setting ({exc})", path=p) from exc

    def save(self, path: str | Path) -> Path:
        """Write the model's settings as YAML (``kind: rules``); the rules ship with clinex.

        Raises
        ------
        InputError
            ``path`` exists.
        """
        import yaml

        p = Path(path)
        if p.exists():
            raise InputError("file exists; refusing to overwrite", path=p)
        from clinex.io.atomic import write_atomic

        write_atomic(p, yaml.safe_dump({"kind": "rules", "name": self.name, "max_evidence": self.max_evidence,
                                        "max_chars": self.max_chars, "reading": self.reading}, sort_keys=False))
        return p
