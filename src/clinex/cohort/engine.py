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

References
----------
.. [1] Stubbs A, Filannino M, Soysal E, Henry S, Uzuner Ö. Cohort selection for
   clinical trials: n2c2 2018 shared task track 1. JAMIA 2019;26(11):1163-1171
   (criteria; most systems were rule-based with negation and time handling).
.. [2] Harkema H, et al. ConText. J Biomed Inform 2009;42(5):839-851.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
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
    QuantitySpec,
    Rule,
    load_criteria,
)
from clinex.cohort.labs import find_lab_values, lab_holds, uln_shown
from clinex.cohort.timeline import event_date, within_window
from clinex.cohort.types import Decision, Evidence, Patient
from clinex.errors import InputError, ModelError
from clinex.text import Fragment, Span

__all__ = ["Mention", "ScreeningEngine"]

_MAX_EVIDENCE = 8
_PER_CONCEPT = 3
_PAREN = re.compile(r"\([^()]*\)")
_VOIDING = ("NEGATED_EXISTENCE", "FAMILY", "HYPOTHETICAL", "PLANNED", "POSSIBLE_EXISTENCE", "OTHER_PERSON")
#: Words that make an undated mention refer back to an already reported event.
_HISTORY_WORDS = re.compile(r"\b(?:s/p|status post|history of|h/o|hx of|prior|previous|recent|remote|(?<!-)old|since (?:her|his)|after (?:her|his))\b", re.I)
#: Longest piece without a blank line given to spaCy (characters). medspaCy's ConText
#: pairs every target with every modifier of a document, so a piece's cost grows with its
#: square: a pasted flowsheet or a copied-forward list is cut at a line break (one that
#: starts a new sentence when there is one; on one long line, at a space) after this
#: many characters. Twice :data:`clinex.cohort.nlp.MAX_SENTENCE_CHARS`.
_CHUNK = 2_000
_PIECE = 800
_WORD = re.compile(r"[a-z0-9]+")
#: A line that continues the previous sentence: indented prose or lower-case start, not a list item.
_CONT = re.compile(r"(?:[ \t]+(?![-*•]|\d{1,2}[.)])\S|[a-z])")


#: Characters before a mention searched for a history word ("s/p recent MI", "history of
#: DKA"): the words must qualify the mention itself, not a heading elsewhere in its
#: sentence ("Meds (copied from prior): ... fish oil" is today's medication list; QA stop 18).
_HISTORY_WINDOW = 40


def _refers_back(m: "Mention") -> bool:
    """Whether a history word stands just before mention ``m`` in its sentence, with no
    colon between (a colon ends a heading: "Meds (unchanged from prior): aspirin")."""
    lo = max(0, m.start - m.sent_start - _HISTORY_WINDOW)
    before = m.sentence[lo : m.start - m.sent_start]
    before = before.rsplit(":", 1)[-1]
    return bool(_HISTORY_WORDS.search(before + " " + m.sentence[m.start - m.sent_start : m.end - m.sent_start]))


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


@lru_cache(maxsize=8192)
def _hits(rx: re.Pattern[str], clause: str) -> bool:
    """``rx.search(clause)``, cached: every mention of a long list sentence has the same
    clause, which is then searched once."""
    return rx.search(clause) is not None


def _line_cut(text: str, lo: int, hi: int) -> int:
    """The last line break in ``text[lo:hi]`` after which a new sentence starts (the next
    line is not a lower-case or indented continuation), else the last line break in the
    second half of the range, else -1. Looks at no more than 64 line breaks."""
    fallback = text.rfind("\n", lo + (hi - lo) // 2, hi)
    cut = fallback
    for _ in range(64):
        if cut < 0 or not _CONT.match(text, cut + 1):
            break
        cut = text.rfind("\n", lo + (hi - lo) // 2, cut)
    if cut >= 0:
        return cut
    return fallback if fallback >= 0 else text.rfind("\n", lo, hi)


def _clause(sentence: str, start: int, end: int) -> str:
    """The part of a sentence that context patterns may look at for one mention.

    The ``;``-separated part holding the mention, with parenthesised asides that
    neither hold it nor follow it within 12 characters blanked out: in "aspirin 81 mg daily, atorvastatin (stopped
    simvastatin)" the "stopped" is not about aspirin, nor is "ruled out" in
    "NSTEMI 3 weeks ago; PE ruled out". Offsets are characters into ``sentence``.
    """
    left = sentence.rfind(";", 0, start) + 1
    right = sentence.find(";", end)
    right = len(sentence) if right < 0 else right
    part = sentence[left:right]
    if "(" in part:
        s0, e0 = start - left, end - left

        def blank(mt: re.Match[str]) -> str:
            holds = mt.start() <= s0 and e0 <= mt.end()
            follows = 0 <= mt.start() - e0 <= 12  # "MI (motivational interviewing)", "HCP: son (not activated)"
            return mt.group() if holds or follows else " " * len(mt.group())

        part = _PAREN.sub(blank, part)
    return part


_FEMALE = re.compile(r"\b(?:she|her|hers|woman|female|mrs|ms)\b", re.I)
_MALE = re.compile(r"\b(?:he|his|him|man|male|mr)\b", re.I)
_COUNT_WORDS = {"a": 1.0, "an": 1.0, "one": 1.0, "two": 2.0, "three": 3.0, "four": 4.0, "five": 5.0, "six": 6.0, "couple": 2.0, "few": 3.0}
_COUNT = re.compile(
    r"(?:(?P<n>\d+(?:\.\d+)?)(?:\s*(?:-|to)\s*\d+(?:\.\d+)?)?|(?P<w>an?|one|two|three|four|five|six|couple|few))"
    r"(?:\s+of)?(?:\s+[a-z]+)?\s*$",
    re.I,
)


def _is_female(text: str) -> bool:
    """Whether the notes refer to the patient as a woman (more she/her/Mrs than he/his/Mr)."""
    return len(_FEMALE.findall(text)) > len(_MALE.findall(text))


def _weekly_amount(sentence: str, start: int, end: int, unit: str, q: "QuantitySpec") -> float | None:
    """Units per week stated around a unit phrase, or None when count or period is missing.

    ``start``/``end`` are the unit's offsets in ``sentence`` (characters); the count
    is read in the 40 characters before it and the period in the 40 after it, both
    within its ``;``-separated clause. The first ``per_week`` pattern (in file order)
    that matches gives the period.
    """
    left = sentence.rfind(";", 0, start) + 1
    before = sentence[left:start][-40:]
    m = _COUNT.search(before)
    if m is None:
        return None
    n = float(m.group("n")) if m.group("n") else _COUNT_WORDS[m.group("w").lower()]
    right = sentence.find(";", end)
    after = sentence[end : len(sentence) if right < 0 else right][:40].lower()
    for rx, per_week in q.per_week.items():
        if re.search(rx, after, re.I):
            return n * q.units.get(unit, q.units.get(unit.lower(), 1.0)) * per_week
    return None


@dataclass(frozen=True)
class Mention:
    """A concept mention in one sentence (internal; offsets into ``Patient.text``)."""

    criterion: str
    concept: str
    term: str
    record: int
    record_date: dt.date | None
    event_date: dt.date | None
    dated: str
    start: int
    end: int
    sent_start: int
    sent_end: int
    against: bool
    sentence: str
    modifiers: frozenset[str]
    section: str | None


@dataclass
class _Compiled:
    crit: Criterion
    exclude: dict[str, re.Pattern[str] | None] = field(default_factory=dict)
    require: dict[str, re.Pattern[str] | None] = field(default_factory=dict)
    against: dict[str, re.Pattern[str] | None] = field(default_factory=dict)


def _alt(patterns: Sequence[str]) -> re.Pattern[str] | None:
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
        self.first_words_ = {max(_WORD.findall(k) or [k], key=len) for k in self.phrase_index_}
        return self

    _HEADER = re.compile(r"[ \t]*[A-Za-z][A-Za-z0-9 /&()'-]{0,48}:")

    def _mask(self, text: str) -> str:
        """Blank out lines far from any concept phrase (offsets are kept).

        Only lines holding a phrase, their neighbours (wrapped sentences) and
        section-header lines go through spaCy; every other character except line
        breaks becomes a space. This is a speed-up only: a blanked line cannot
        hold a target, and ConText scopes end at sentence boundaries.
        """
        lines = text.split("\n")
        first = self.first_words_
        hit = [bool(first.intersection(_WORD.findall(ln.lower()))) for ln in lines]
        cont = [bool(_CONT.match(ln)) for ln in lines]
        keep = list(hit)
        # wrapped sentences, in two linear passes: the continuation lines below a hit
        # line, and the lines above a hit line that it (through continuations) continues
        below = False
        for i, h in enumerate(hit):
            below = h or (below and cont[i])
            keep[i] = keep[i] or below
        reach = False  # lines i..(a hit line) are all continuations
        for i in range(len(lines) - 1, 0, -1):
            reach = cont[i] and (hit[i] or reach)
            if reach:
                keep[i - 1] = True
        out = []
        for ln, k in zip(lines, keep):
            if k or self._HEADER.match(ln) or len(ln.strip()) <= 40:  # headers, with or without a colon
                out.append(ln)
            else:
                out.append(" " * len(ln))
        return "\n".join(out)

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
    def _records(self, p: Patient) -> list[tuple[int, int, dt.date | None, int]]:
        """(start, end, date, record index) of each piece of text that goes through spaCy.

        Records are cut at blank lines into pieces of about ``_PIECE`` characters
        (clinical notes separate sections by blank lines, so a piece starts at a
        section header), and a piece without blank lines is cut at a line break
        after ``_CHUNK`` characters (a pasted flowsheet). Pieces keep their record's
        date and index; the cut only bounds spaCy's work (ConText scopes end at
        sentences anyway). A patient without records but with text is one undated
        record.
        """
        recs = [(r.start, r.end, r.date) for r in p.records] if p.records else ([(0, len(p.text), None)] if p.text.strip() else [])
        out: list[tuple[int, int, dt.date | None, int]] = []
        text = p.text
        for ri, (s, e, d) in enumerate(recs):
            while e - s > _PIECE:
                cut = text.find("\n\n", s + _PIECE, min(e, s + _CHUNK + 2))
                if cut < 0 or cut - s > _CHUNK:
                    cut = _line_cut(text, s, s + _CHUNK) if e - s > _CHUNK else -1
                    if cut < 0:
                        if e - s <= _CHUNK:
                            break
                        sp = text.rfind(" ", s + _CHUNK // 2, s + _CHUNK)  # one long line: between words
                        cut = sp if sp > s else s + _CHUNK
                cut = cut + 1 if text[cut : cut + 1] == "\n" else cut
                if cut <= s or cut >= e:
                    break
                out.append((s, cut, d, ri))
                s = cut
            if e > s:
                out.append((s, e, d, ri))
        return out

    def _screen_batch(self, patients: list[Patient]) -> Iterator[tuple[Patient, dict[str, Decision]]]:
        recs = [self._records(p) for p in patients]
        jobs = [(pi, rec) for pi in range(len(patients)) for rec in recs[pi]]
        texts = (self._mask(patients[pi].text[s:e]) for pi, (s, e, _d, _r) in jobs)
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
            ms = self._propagate_dates(spec, ms)
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

    @staticmethod
    def _inherit_history_dates(ms: list[Mention]) -> list[Mention]:
        """An undated, history-worded mention ("s/p recent MI") in record r refers to the
        event an earlier record reported: it takes the event date of the latest earlier
        record with an affirmed mention of the same concept.

        References: GUIDELINE.md, "The reference point" (an event reported in an earlier
        record outside the window does not count, even if the text calls it recent).
        """
        affirmed: dict[int, dt.date] = {}
        for m in ms:
            if m.event_date is not None and not m.against and not m.modifiers.intersection(_VOIDING):
                if m.record not in affirmed or m.event_date > affirmed[m.record]:
                    affirmed[m.record] = m.event_date
        if not affirmed:
            return ms
        out = []
        for m in ms:
            if m.dated == "record" and _refers_back(m):
                earlier = [r for r in affirmed if r < m.record]
                if earlier:
                    m = dataclasses.replace(m, event_date=affirmed[max(earlier)], dated="inherited")
            out.append(m)
        return out

    @staticmethod
    def _propagate_dates(spec: ConceptSpec, ms: list[Mention]) -> list[Mention]:
        """Undated mentions take the latest relative-time event date of the same concept in their record.

        "10 weeks after her STEMI ... CAD s/p recent STEMI": both sentences report
        one event, dated by the first.
        """
        ms = ScreeningEngine._inherit_history_dates(ms)
        explicit: dict[int, dt.date] = {}
        for m in ms:
            if m.dated == "relative" and m.event_date is not None and not m.modifiers.intersection(("NEGATED_EXISTENCE", "FAMILY", "HYPOTHETICAL")):
                if m.record not in explicit or m.event_date > explicit[m.record]:
                    explicit[m.record] = m.event_date
        if not explicit:
            return ms
        return [
            dataclasses.replace(m, event_date=explicit[m.record]) if (m.dated == "record" and m.record in explicit) else m
            for m in ms
        ]

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
