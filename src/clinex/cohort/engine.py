"""The screening engine: one interpreter for every criterion file.

For each patient the engine

1. runs the medspaCy pipeline (:mod:`clinex.cohort.nlp`) over each record, giving
   sentences, sections and concept targets with their ConText modifiers;
2. turns each target into a *mention* of every concept whose phrases include it,
   and keeps it when none of the concept's excluded modifiers, sections or
   context patterns apply and, for time-windowed concepts, when its event date
   (:func:`clinex.cohort.timeline.event_date`) lies within the window counted back
   from "now", the latest record date;
3. reads lab values (:mod:`clinex.cohort.labs`) for every lab spec;
4. evaluates each criterion's boolean rule over its concepts and labs, and
   returns a :class:`~clinex.cohort.types.Decision` with the evidence (record
   date, sentence offsets into ``Patient.text``, the rule that fired).

A patient without any record date has no "now": windowed concepts then count
only mentions in the last record (documented fallback). A patient with empty
text gets every criterion's default label and no evidence.

The records are cut into pieces for spaCy by :mod:`clinex.cohort.pieces`; what is
read on a mention's own sentence (clause, weekly amounts, dates taken from the
record) is in :mod:`clinex.cohort.mentions`.

References
----------
.. [1] Stubbs A, Filannino M, Soysal E, Henry S, Uzuner Ö. Cohort selection for
   clinical trials: n2c2 2018 shared task track 1. JAMIA 2019;26(11):1163-1171
   (criteria; most systems were rule-based with negation and time handling).
.. [2] Harkema H, et al. ConText. J Biomed Inform 2009;42(5):839-851.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from clinex.cohort.criteria import (
    AMOUNT_TERM,
    AllOf,
    AnyOf,
    AtLeast,
    ConceptSpec,
    Criterion,
    LabSpec,
    Not,
    Rule,
    load_criteria,
)
from clinex.cohort.labs import find_lab_values, lab_holds, uln_shown
from clinex.cohort.mentions import (
    Mention,
    _clause,
    _hits,
    _is_female,
    _weekly_amount,
    family_sentence,
    propagate_dates,
)
from clinex.cohort.pieces import first_words, mask_lines, record_pieces
from clinex.cohort.timeline import event_date, within_window
from clinex.cohort.types import Decision, Evidence, Patient
from clinex.errors import InputError, ModelError
from clinex.text import Fragment, Span

__all__ = ["Mention", "ScreeningEngine"]

_MAX_EVIDENCE = 8
_PER_CONCEPT = 3


def _value_sentence(text: str, rec_start: int, rec_end: int, start: int, end: int) -> tuple[int, int]:
    """The sentence of a lab value ``text[start:end]`` (name to value): its line cut by
    the cohort pipeline's sentence rules (:func:`clinex.cohort.nlp.note_sentences`), so
    that "HbA1c 8.2% today. He denies chest pain." cites only "HbA1c 8.2% today."; a
    value that runs over a sentence end keeps the sentences it covers. Only the
    :data:`~clinex.cohort.nlp.MAX_SENTENCE_CHARS` characters on either side of the value
    are looked at, so that a line of thousands of values costs linear time."""
    from clinex.cohort.nlp import MAX_SENTENCE_CHARS, note_sentences

    lo, hi = max(rec_start, start - MAX_SENTENCE_CHARS), min(rec_end, end + MAX_SENTENCE_CHARS)
    ls = text.rfind("\n", lo, start)  # a longer line is looked at near the value only
    ls = lo if ls < 0 else ls + 1
    le = text.find("\n", end, hi)
    le = hi if le < 0 else le
    sents = [(a, b) for a, b in note_sentences(text, ls, le) if a < max(end, start + 1) and start < b]
    if not sents:
        return ls, le
    return sents[0][0], max(sents[-1][1], end)


@dataclass
class _Compiled:
    """A criterion with its concepts' context patterns compiled (one alternation each, or None)."""

    crit: Criterion
    exclude: dict[str, re.Pattern[str] | None] = field(default_factory=dict)
    require: dict[str, re.Pattern[str] | None] = field(default_factory=dict)
    against: dict[str, re.Pattern[str] | None] = field(default_factory=dict)


def _alt(patterns: Sequence[str]) -> re.Pattern[str] | None:
    """One case-insensitive alternation of ``patterns``, or None when there are none."""
    if not patterns:
        return None
    return re.compile("|".join(f"(?:{p})" for p in patterns), re.I)


class ScreeningEngine:
    """Screen patients against declarative criteria.

    Parameters
    ----------
    criteria : str, Path, iterable of them, or list of Criterion, default "n2c2"
        Criterion set name(s), files or folders (see
        :func:`clinex.cohort.criteria.load_criteria`), or loaded criteria.
    batch_size : int, default 32
        Record pieces per ``nlp.pipe`` batch.
    max_chars : int, default 2_000_000
        Longest patient text screened (characters). n2c2 patients hold about
        5,000-30,000; a longer one (a 5 MB export) raises :class:`InputError`
        naming the patient, rather than running for minutes.

    Attributes
    ----------
    criteria_ : list of Criterion
        Set by :meth:`fit` (called lazily by :meth:`screen`).
    nlp_ : spacy.language.Language
        The cached medspaCy pipeline for these criteria's phrases.

    Examples
    --------
    >>> engine = ScreeningEngine("n2c2")          # doctest: +SKIP
    >>> engine.screen(patient)["HBA1C"].label     # doctest: +SKIP
    'met'
    """

    name = "clinex.cohort.rules.v1"
    """Versioned id of this model kind (:data:`clinex.cohort.models.REGISTRY` ``rules``)."""

    def __init__(
        self,
        criteria: str | Path | Iterable[str | Path] | Sequence[Criterion] = "n2c2",
        batch_size: int = 32,
        max_chars: int = 2_000_000,
    ) -> None:
        self.criteria = criteria
        self.batch_size = batch_size
        self.max_chars = max_chars

    # ------------------------------------------------------------------ setup
    def fit(self, patients: Iterable[Patient] | None = None) -> "ScreeningEngine":
        """Load and compile the criteria and build (or fetch) the pipeline.

        Nothing is learned from ``patients`` (rules only); the argument exists for
        the estimator interface.
        """
        from clinex.cohort.nlp import get_nlp

        crits = self.criteria
        if isinstance(crits, Sequence) and not isinstance(crits, str) and crits and all(isinstance(c, Criterion) for c in crits):
            loaded = list(crits)  # type: ignore[arg-type]
        else:
            loaded = load_criteria(crits)  # type: ignore[arg-type]
        self.criteria_ = loaded
        self.compiled_ = []
        self.phrase_index_: dict[str, list[tuple[int, str, str, bool]]] = {}
        for i, c in enumerate(loaded):
            comp = _Compiled(c)
            for name, spec in c.concepts.items():
                comp.exclude[name] = _alt(spec.exclude_context)
                comp.require[name] = _alt(spec.require_context)
                comp.against[name] = _alt(spec.against_context)
                for phrase, canon in spec.term_map().items():
                    self.phrase_index_.setdefault(phrase, []).append((i, name, canon, False))
                for phrase in spec.against_phrases:
                    self.phrase_index_.setdefault(phrase.lower(), []).append((i, name, phrase.lower(), True))
            self.compiled_.append(comp)
        self.nlp_ = get_nlp(self.phrase_index_)
        self.first_words_ = first_words(self.phrase_index_)
        return self

    def _check_fitted(self) -> None:
        if not hasattr(self, "criteria_"):
            raise ModelError("ScreeningEngine is not fitted yet; call 'fit' (or 'screen', which fits).")

    @property
    def criterion_names(self) -> list[str]:
        """Names of the loaded criteria, in order."""
        if not hasattr(self, "criteria_"):
            self.fit()
        return [c.name for c in self.criteria_]

    # ------------------------------------------------------------------ public
    def screen(self, patient: Patient) -> dict[str, Decision]:
        """Decide every criterion for one patient.

        Parameters
        ----------
        patient : Patient

        Returns
        -------
        dict of str to Decision
            Keyed by criterion name, in the criteria's order.
        """
        return next(iter(self.screen_many([patient])))[1]

    def screen_many(self, patients: Iterable[Patient]) -> Iterator[tuple[Patient, dict[str, Decision]]]:
        """Screen many patients, piping their records through spaCy in batches.

        Yields
        ------
        (Patient, dict of str to Decision)
            In input order.

        Raises
        ------
        InputError
            A patient's text is longer than ``max_chars``.
        """
        if not hasattr(self, "criteria_"):
            self.fit()
        buf: list[Patient] = []
        n_rec = 0
        for p in patients:
            self.check_size(p)
            buf.append(p)
            n_rec += max(1, len(p.records))
            if n_rec >= self.batch_size:
                yield from self._screen_batch(buf)
                buf, n_rec = [], 0
        if buf:
            yield from self._screen_batch(buf)

    def check_size(self, patient: Patient) -> None:
        """Raise :class:`InputError` when the patient's text is empty or exceeds ``max_chars``.

        An empty patient (no note text at all, e.g. one empty ``.txt`` note) would be
        "not met" on every criterion that needs evidence and "met" on those met by
        default (ENGLISH, MAKES-DECISIONS): confident decisions about nothing, so it is
        refused instead.
        """
        if not patient.text.strip():
            raise InputError(f"patient {patient.id!r} has no note text; nothing to screen", path=patient.source)
        if len(patient.text) > self.max_chars:
            raise InputError(
                f"patient {patient.id!r}: {len(patient.text):,} characters exceed the screening limit "
                f"of {self.max_chars:,} (ScreeningEngine(max_chars=...)); split the file by record",
                path=patient.source,
            )

    # ------------------------------------------------------------------ internals
    def _screen_batch(self, patients: list[Patient]) -> Iterator[tuple[Patient, dict[str, Decision]]]:
        recs = [record_pieces(p) for p in patients]
        jobs = [(pi, rec) for pi in range(len(patients)) for rec in recs[pi]]
        texts = (mask_lines(patients[pi].text[s:e], self.first_words_) for pi, (s, e, _d, _r) in jobs)
        mentions: list[list[Mention]] = [[] for _ in patients]
        female = [_is_female(p.text) for p in patients]
        for (pi, (s, _e, date, ri)), doc in zip(jobs, self.nlp_.pipe(texts, batch_size=self.batch_size)):
            p = patients[pi]
            last = ri == recs[pi][-1][3]
            mentions[pi].extend(self._doc_mentions(doc, s, ri, date, p.now, last, female[pi]))
        for pi, p in enumerate(patients):
            yield p, self._decide(p, mentions[pi], recs[pi])

    def _doc_mentions(self, doc, offset: int, ri: int, rdate, now, last: bool, female: bool = False) -> list[Mention]:  # type: ignore[no-untyped-def]
        from clinex.cohort.nlp import SPAN_GROUP

        out: list[Mention] = []
        spans = doc.spans[SPAN_GROUP] if SPAN_GROUP in doc.spans else []
        if not len(spans):
            return out
        import bisect

        sent_starts = [t.i for t in doc if t.is_sent_start]
        dtext = doc.text  # built from the tokens on every access: once per piece
        for span in spans:
            key = span.text.lower()
            entries = self.phrase_index_.get(key)
            if entries is None:
                entries = self.phrase_index_.get(" ".join(key.split()), [])
            if not entries:
                continue
            k = bisect.bisect_right(sent_starts, span.start) - 1
            s_tok = sent_starts[k]
            e_tok = sent_starts[k + 1] if k + 1 < len(sent_starts) else len(doc)
            s_start, s_end = doc[s_tok].idx, doc[e_tok - 1].idx + len(doc[e_tok - 1].text)
            stext = dtext[s_start:s_end]
            while stext and stext[-1].isspace():
                stext = stext[:-1]
            s_end = s_start + len(stext)
            mods = frozenset(m.category for m in span._.modifiers)
            if "FAMILY" not in mods and family_sentence(stext, span.start_char - s_start):
                mods = mods | {"FAMILY"}
            section = span._.section_category
            edate, how = event_date(stext, rdate if rdate is not None else (now if last else None), span.start_char - s_start)
            for ci, concept, canon, is_against in entries:
                comp = self.compiled_[ci]
                ag = comp.against[concept]
                if canon == AMOUNT_TERM:
                    q = comp.crit.concepts[concept].quantity
                    amount = _weekly_amount(stext, span.start_char - s_start, span.end_char - s_start, key, q)
                    if amount is None:
                        continue
                    limit = q.above_female if (female and q.above_female is not None) else q.above
                    is_against = amount <= limit
                    canon = f"{AMOUNT_TERM}={amount:g}/wk"
                out.append(
                    Mention(
                        criterion=comp.crit.name,
                        concept=concept,
                        term=canon,
                        record=ri,
                        record_date=rdate,
                        event_date=edate,
                        dated=how,
                        start=offset + span.start_char,
                        end=offset + span.end_char,
                        sent_start=offset + s_start,
                        sent_end=offset + s_end,
                        against=is_against
                        or bool(ag is not None and _hits(ag, _clause(stext, span.start_char - s_start, span.end_char - s_start))),
                        sentence=stext,
                        modifiers=mods,
                        section=section,
                    )
                )
        return out

    def _valid(self, comp: _Compiled, spec: ConceptSpec, m: Mention, text: str, now, n_records: int) -> bool:  # type: ignore[no-untyped-def]
        if m.section is not None and m.section in spec.exclude_sections:
            return False
        if m.against:
            return "FAMILY" not in m.modifiers or "FAMILY" not in spec.exclude_modifiers
        if m.modifiers.intersection(spec.exclude_modifiers):
            return False
        stext = _clause(text[m.sent_start : m.sent_end], m.start - m.sent_start, m.end - m.sent_start)
        ex = comp.exclude[m.concept]
        if ex is not None and _hits(ex, stext):
            return False
        req = comp.require[m.concept]
        if req is not None and not _hits(req, stext):
            return False
        if spec.window_days is not None:
            if now is None:
                return m.record == n_records - 1
            if not within_window(m.event_date, now, spec.window_days):
                return False
        return True

    def _concept(self, comp: _Compiled, name: str, spec: ConceptSpec, ms: list[Mention], p: Patient, n_records: int) -> tuple[bool, list[Mention]]:
        if spec.window_days is not None:
            ms = propagate_dates(spec, ms)
        valid = [m for m in ms if self._valid(comp, spec, m, p.text, p.now, n_records)]
        pos = [m for m in valid if not m.against]
        if spec.resolve == "latest":
            if not valid:
                return False, []
            latest = max(m.record for m in valid)
            in_latest = [m for m in valid if m.record == latest]
            strong = [m for m in in_latest if m.against and not m.term.startswith(AMOUNT_TERM)]
            if strong:  # sobriety, stopped, allergy: wins within the record
                return False, strong
            pos = [m for m in in_latest if not m.against]
            if not pos:  # only moderate amounts stated
                return False, in_latest
        terms = {m.term for m in pos}
        return len(terms) >= spec.distinct, pos

    def _lab(
        self, name: str, spec: LabSpec, p: Patient, crit: Criterion, recs: list[tuple[int, int, dt.date | None, int]]
    ) -> tuple[bool, list[Evidence], list[Evidence]]:
        """(holds, values meeting the threshold, values not meeting it) for one lab spec."""
        ev: list[Evidence] = []
        counter: list[Evidence] = []
        now = p.now
        for s, e, date, ri in recs:
            if spec.window_days is not None and not (within_window(date, now, spec.window_days) or (now is None and ri == recs[-1][3])):
                continue
            for v in find_lab_values(p.text, spec, s, e):
                ok = lab_holds(v, spec)
                ls, le = _value_sentence(p.text, s, e, v.name_start, v.end)
                uln = f" (ULN {uln_shown(v, spec)})" if (spec.above_reference and v.ref_high is not None) else ""
                (ev if ok else counter).append(
                    Evidence(
                        span=Span(fragments=(Fragment(start=ls, end=le, text=p.text[ls:le]),), label=crit.name, source=crit.rule_id),
                        record_date=date,
                        rule=f"{crit.name}.{name}:{'value' if ok else 'value-not-meeting'}={v.shown}{uln}",
                        value=round(v.value, 4),
                    )
                )
        return bool(ev), ev, counter[:_PER_CONCEPT]

    def _eval(self, rule: Rule, results: dict[str, tuple[bool, list[Evidence]]]) -> tuple[bool, list[Evidence]]:
        if isinstance(rule, str):
            return results[rule]
        if isinstance(rule, AnyOf):
            parts = [self._eval(r, results) for r in rule.any_of]
            return any(ok for ok, _ in parts), [e for ok, ev in parts if ok for e in ev]
        if isinstance(rule, AllOf):
            parts = [self._eval(r, results) for r in rule.all_of]
            return all(ok for ok, _ in parts), [e for ok, ev in parts if ok for e in ev]
        if isinstance(rule, AtLeast):
            parts = [self._eval(r, results) for r in rule.of]
            return sum(ok for ok, _ in parts) >= rule.at_least, [e for ok, ev in parts if ok for e in ev]
        if isinstance(rule, Not):
            ok, ev = self._eval(rule.not_, results)
            return not ok, ev
        raise TypeError(f"unknown rule type {type(rule).__name__}")  # pragma: no cover

    def _decide(self, p: Patient, mentions: list[Mention], recs: list[tuple[int, int, dt.date | None, int]]) -> dict[str, Decision]:
        by_key: dict[tuple[str, str], list[Mention]] = {}
        for m in mentions:
            by_key.setdefault((m.criterion, m.concept), []).append(m)
        n_records = recs[-1][3] + 1 if recs else 0
        out: dict[str, Decision] = {}
        for comp in self.compiled_:
            c = comp.crit
            counter: dict[str, list[Evidence]] = {}
            results: dict[str, tuple[bool, list[Evidence]]] = {}
            for name, spec in c.concepts.items():
                ok, ms = self._concept(comp, name, spec, by_key.get((c.name, name), []), p, n_records)
                one_per_sentence = list({m.sent_start: m for m in reversed(ms)}.values())[::-1]
                evs = [self._evidence(p, c, name, m) for m in one_per_sentence[:_PER_CONCEPT]]
                results[name] = (ok, evs if ok else [])
                counter[name] = [] if ok else evs
            for name, lspec in c.labs.items():
                ok, evs, counter[name] = self._lab(name, lspec, p, c, recs)
                results[name] = (ok, evs)
            holds, ev = self._eval(c.rule, results)
            label = c.when_true if holds else c.otherwise
            if not holds:  # counter-evidence: what decided against (stopped, out of range)
                ev = [e for name in (*c.concepts, *c.labs) for e in counter.get(name, [])]
            seen: set[tuple[int, int, str]] = set()
            uniq = []
            for e in ev:
                k = (e.span.start, e.span.end, e.rule)
                if k not in seen:
                    seen.add(k)
                    uniq.append(e)
            out[c.name] = Decision(
                criterion=c.name,
                label=label,
                score=self._score(label, holds, any(k[0] == c.name for k in by_key) or any(counter.values())),
                evidence=tuple(uniq[:_MAX_EVIDENCE]),
            )
        return out

    @staticmethod
    def _score(label: str, holds: bool, mentioned: bool) -> float:
        """Confidence of ``met`` in [0, 1], for ROC AUC.

        1.0 / 0.0 when the rule holds and decides met / not met; when it does not
        hold, concept mentions that were all filtered out (negated, outside the
        window, ...) or lab values off the threshold move the score 0.25 towards
        the other label: such patients rank between the clear cases.
        """
        if holds:
            return 1.0 if label == "met" else 0.0
        if label == "met":  # met by default
            return 0.75 if mentioned else 1.0
        return 0.25 if mentioned else 0.0

    @staticmethod
    def _evidence(p: Patient, c: Criterion, concept: str, m: Mention) -> Evidence:
        kind = "against" if m.against else "term"
        return Evidence(
            span=Span(
                fragments=(Fragment(start=m.sent_start, end=m.sent_end, text=p.text[m.sent_start : m.sent_end]),),
                label=c.name,
                source=c.rule_id,
            ),
            record_date=m.record_date,
            rule=f"{c.name}.{concept}:{kind}={m.term}@{m.start}-{m.end}",
        )
