"""Cohort criteria decided by a large language model (the ``llm`` cohort kind).

For n2c2 2018 Track 1 the best reported results come from GPT-4 prompted once per
criterion, with the criterion's definition, over all of a patient's notes (Wornow et
al., 2024). :class:`LLMCohortModel` does that against any OpenAI-compatible server
(:mod:`clinex.llm`):

* one prompt per criterion (``clinex/resources/llm/cohort.yaml``): the criterion's
  name and ``description`` from its YAML file (:func:`clinex.cohort.criteria.load_criteria`),
  the date of the latest note ("now", the reference of time windows) and the notes;
* the notes are all of the patient's records, in order; when they do not fit the
  model's context (:func:`clinex.rob.evidence.llm.part_budget`'s rule, here
  :func:`part_budget`) they are cut into parts of whole records (a record longer
  than a part is cut at line ends), one prompt per criterion and part;
* the answer follows :class:`CohortAnswer`: ``met`` / ``not met`` and the sentences
  that show it, each grounded in ``patient.text`` (:func:`clinex.llm.grounding.ground`,
  the part as window) and dated by the record it falls in; ungrounded ones are
  dropped and counted;
* with several parts a criterion is ``met`` when any part says so *with at least one
  grounded sentence* (clinex's own rule: the n2c2 criteria are about something
  documented somewhere in the record), with the evidence of those parts; ``score``
  is 1.0 for met, 0.0 for not met;
* **no grounded evidence, not met**: a "met" whose quotes are all ungrounded (or that
  quotes nothing) is decided ``not met`` with score :data:`DOWNGRADED_SCORE` -- a
  recruiter cannot check a patient against a sentence that is not in the notes
  (clinex's own rule, the conservative reading). Each downgrade is counted
  (:attr:`LLMCohortModel.downgraded_` and the ``LLM:`` line of the CLI).

Making the model without a server URL or model name configured raises
:class:`~clinex.errors.LLMError` ``[CLX009]`` at once (one error, not one per
patient); its versioned id (``name``) is ``clinex.cohort.llm.v1:<server model>``.

References
----------
Wornow M. et al. "Zero-shot clinical trial patient matching with LLMs", 2024
(criterion-by-criterion prompting over all notes).
Stubbs A. et al. "Cohort selection for clinical trials: n2c2 2018 shared task
track 1", JAMIA 2019 (criteria and their definitions).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from clinex.cohort.types import MET, NOT_MET, Decision, Evidence, Patient
from clinex.errors import ClinexError, InputError, LLMError
from clinex.text import Span

__all__ = ["LLMCohortModel", "CohortAnswer", "VERSION", "part_budget", "MAX_CHARS", "DOWNGRADED_SCORE",
           "make_llm_model"]

VERSION = "clinex.cohort.llm.v1"

CHARS_PER_TOKEN = 3
"""Characters per token when cutting notes to the context (own conservative choice;
see :data:`clinex.rob.evidence.llm.CHARS_PER_TOKEN`, which the task layer cannot import)."""

PROMPT_RESERVE = 400
"""Tokens kept for the instructions, criterion and definition around the notes."""

DOWNGRADED_SCORE = 0.25
"""Score of a "met" turned to not met for want of grounded evidence: below 0.5 (the
label is not met), above a plain not met (0.0), so that ranking metrics (AUC) keep the
model's lean (own choice)."""

MAX_CHARS = 2_000_000
"""Longest patient text screened (about 650 parts of an 8k-token context per
criterion): beyond it :meth:`LLMCohortModel.check_size` refuses the patient rather
than send thousands of requests (own choice)."""


class CohortAnswer(BaseModel):
    """The answer for one criterion over one part of the notes."""

    model_config = ConfigDict(extra="forbid")
    decision: Literal["met", "not met"]
    evidence: list[str] = Field(default_factory=list)


def part_budget(context_tokens: int, max_tokens: int) -> int:
    """Characters of notes per prompt: ``(context - answer - reserve) * 3``, at least 500."""
    return max(500, (context_tokens - max_tokens - PROMPT_RESERVE) * CHARS_PER_TOKEN)


class LLMCohortModel:
    """Cohort decisions from an OpenAI-compatible server (follows :class:`clinex.cohort.models.CohortModel`).

    Parameters
    ----------
    criteria : str, Path or list of them, default "n2c2"
        As :func:`clinex.cohort.criteria.load_criteria` takes them.
    options : dict, optional
        :class:`clinex.llm.config.LLMSettings` values (the command line and
        environment override them); ``prompt`` names a prompt file.

    Attributes
    ----------
    name : str
        ``clinex.cohort.llm.v1:<server model>``.
    downgraded_ : list of (str, str)
        ``(patient id, criterion)`` of each "met" decided not met for want of grounded evidence.

    Raises
    ------
    ModelError
        An option that is not an LLM setting.
    LLMError
        No server URL or model name configured (``[CLX009]``).
    """

    def __init__(self, criteria: Any = "n2c2", options: dict[str, Any] | None = None) -> None:
        from dataclasses import fields

        from clinex.cohort.criteria import load_criteria
        from clinex.errors import ModelError
        from clinex.llm.config import LLMSettings, resolve_settings
        from clinex.llm.grounding import GroundingStats
        from clinex.llm.prompts import load_prompt

        opts = dict(options or {})
        prompt = opts.pop("prompt", "cohort")
        known = {f.name for f in fields(LLMSettings)}
        bad = sorted(set(opts) - known)
        if bad:
            raise ModelError(f"the llm cohort model takes LLM settings only; unknown: {', '.join(bad)}")
        self.options = opts
        settings = resolve_settings(opts)  # no server configured: CLX009 now, not once per patient
        self.criteria = load_criteria(criteria)
        self.prompt = load_prompt(prompt)
        self.name = f"{VERSION}:{settings.model}"
        self.grounding_ = GroundingStats()
        self.downgraded_: list[tuple[str, str]] = []
        self._failures: list[ClinexError] = []

    def criterion_names(self) -> list[str]:
        """The criteria decided, in file order."""
        return [c.name for c in self.criteria]

    def client(self) -> Any:
        """The client for the settings in force now."""
        from clinex.llm.client import shared_client
        from clinex.llm.config import resolve_settings

        return shared_client(resolve_settings(self.options))

    def parts(self, patient: Patient, budget: int) -> list[tuple[int, int]]:
        """``(start, end)`` of the note parts sent per prompt: whole records packed up to ``budget`` characters."""
        text = patient.text
        spans = [(r.start, r.end) for r in patient.records if r.end > r.start] or [(0, len(text))]
        pieces: list[tuple[int, int]] = []
        for start, end in spans:
            while end - start > budget:
                nl = text.rfind("\n", start + 1, start + budget)
                stop = nl + 1 if nl > start else start + budget
                pieces.append((start, stop))
                start = stop
            pieces.append((start, end))
        parts: list[tuple[int, int]] = []
        for start, end in pieces:
            if parts and end - parts[-1][0] <= budget:
                parts[-1] = (parts[-1][0], end)
            else:
                parts.append((start, end))
        return parts

    def _date(self, patient: Patient, offset: int) -> Any:
        for r in patient.records:
            if r.start <= offset < r.end:
                return r.date
        return None

    def _ask(self, client: Any, patient: Patient, crit: Any, part: tuple[int, int], i: int, n: int) -> tuple[bool, list[Evidence]]:
        from clinex.llm.grounding import ground

        start, end = part
        where = f"part {i + 1} of {n}" if n > 1 else "all notes"
        now = patient.now.isoformat() if patient.now is not None else "unknown"
        messages = [
            {"role": "system", "content": self.prompt.render("system").strip()},
            {"role": "user", "content": self.prompt.render(
                "user", criterion=crit.name, description=crit.description or crit.name, now=now, part=where,
                notes=patient.text[start:end]).strip()},
        ]
        ans = client.complete_json(messages, CohortAnswer,
                                   document=f"patient {patient.id} (criterion {crit.name}, {where})",
                                   name="cohort_decision")
        evidence, seen = [], set()
        for quote in ans.evidence:
            g = ground(patient.text, quote, window=(start, end), hint=start)
            self.grounding_.add(g)
            client.count_grounding(g)
            if g is None or (g.start, g.end) in seen:
                continue
            seen.add((g.start, g.end))
            evidence.append(Evidence(span=Span.from_offsets(patient.text, (g.start, g.end), label=crit.name),
                                     record_date=self._date(patient, g.start),
                                     rule=f"{VERSION}:{crit.rule_id}"))
        return ans.decision == MET, evidence

    def screen(self, patient: Patient) -> dict[str, Decision]:
        """Criterion name -> decision, evidence offsets into ``patient.text``.

        Raises
        ------
        LLMError
            The server cannot be reached or gives no valid answer (names server,
            patient, criterion and part).
        InputError
            The patient is longer than :data:`MAX_CHARS`.
        """
        self.check_size(patient)
        client = self.client()
        s = client.settings
        parts = self.parts(patient, part_budget(s.context_tokens, s.max_tokens))
        jobs = [(c, k) for c in self.criteria for k in range(len(parts))]
        results = client.map(lambda job: self._ask(client, patient, job[0], parts[job[1]], job[1], len(parts)), jobs)
        out: dict[str, Decision] = {}
        for crit in self.criteria:
            got = [r for (c, _), r in zip(jobs, results) if c is crit]
            met = [ev for ok, ev in got if ok and ev]
            if met:
                out[crit.name] = Decision(criterion=crit.name, label=MET, score=1.0,
                                          evidence=tuple(e for evs in met for e in evs))
            elif any(ok for ok, _ in got):  # "met" without a grounded sentence: not met
                self.downgraded_.append((patient.id, crit.name))
                client.count_downgrade()
                out[crit.name] = Decision(criterion=crit.name, label=NOT_MET, score=DOWNGRADED_SCORE,
                                          evidence=tuple(e for _, evs in got for e in evs))
            else:
                out[crit.name] = Decision(criterion=crit.name, label=NOT_MET, score=0.0,
                                          evidence=tuple(e for _, evs in got for e in evs))
        return out

    def screen_many(self, patients: Iterable[Patient]) -> Iterator[tuple[Patient, dict[str, Decision]]]:
        """(patient, decisions) per patient, in order; a patient whose calls fail is skipped.

        Its :class:`~clinex.errors.LLMError` is kept for :meth:`pop_failures`
        (:func:`clinex.cohort.screen.screen_paths` reports it with the unreadable
        files), so one failed patient does not stop the others.
        """
        for p in patients:
            try:
                dec = self.screen(p)
            except LLMError as exc:
                self._failures.append(exc)
                continue
            yield p, dec

    def pop_failures(self) -> list[ClinexError]:
        """The errors of patients :meth:`screen_many` skipped since the last call."""
        out, self._failures = self._failures, []
        return out

    def check_size(self, patient: Patient) -> None:
        """Raise :class:`InputError` naming the patient when its text exceeds :data:`MAX_CHARS`."""
        if len(patient.text) > MAX_CHARS:
            raise InputError(f"patient {patient.id!r}: {len(patient.text):,} characters exceed the LLM screening "
                             f"limit of {MAX_CHARS:,}; split the file by record", path=patient.source)


def make_llm_model(criteria: str | Path | Sequence[str | Path] = "n2c2", **options: Any) -> LLMCohortModel:
    """Factory of the ``llm`` kind in :data:`clinex.cohort.models.REGISTRY`."""
    return LLMCohortModel(criteria, options)
