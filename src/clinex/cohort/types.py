"""Types of the cohort-selection task (n2c2 2018 Track 1).

A :class:`Patient` is several dated :class:`Record` s in one text (the n2c2 file's
``<TEXT>``); offsets of records, sentences and evidence are characters into
``Patient.text``. Dates are de-identification-shifted (2060s–2090s): only the
differences between them mean anything, and "now" is the latest record's date
(GUIDELINE.md, "The reference point").
"""

from __future__ import annotations

import datetime as dt
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from clinex.text import Span

__all__ = ["Record", "Patient", "Evidence", "Decision", "MET", "NOT_MET", "Label"]

MET = "met"
NOT_MET = "not met"
Label = Literal["met", "not met"]


class Record(BaseModel):
    """One dated note of a patient.

    Attributes
    ----------
    date : datetime.date or None
        The ``Record date:`` of the note; None only when a reader's documented
        fallback could not find one.
    start, end : int
        Character offsets of the record inside ``Patient.text`` (half-open).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    date: dt.date | None
    start: int = Field(ge=0)
    end: int = Field(ge=0)


class Patient(BaseModel):
    """A patient: the whole longitudinal text, its records and (optionally) gold labels.

    Attributes
    ----------
    id : str
        Usually the file stem (``"001"``).
    text : str
        The full text; all offsets point into it.
    records : tuple of Record
        In the order they appear (chronological in n2c2 files).
    labels : dict[str, Label]
        Gold ``met`` / ``not met`` per criterion name (``"HBA1C"``); empty if unknown.
    source : str or None
        The file it was read from.
    """

    model_config = ConfigDict(extra="forbid")

    id: str
    text: str
    records: tuple[Record, ...] = ()
    labels: dict[str, Label] = Field(default_factory=dict)
    source: str | None = None

    @property
    def now(self) -> dt.date | None:
        """The latest record date: the reference point of every time window."""
        dates = [r.date for r in self.records if r.date is not None]
        return max(dates) if dates else None

    def record_text(self, record: Record) -> str:
        """The text of one record."""
        return self.text[record.start : record.end]


class Evidence(BaseModel):
    """A sentence that decided (or helped decide) a criterion.

    Attributes
    ----------
    span : Span
        The sentence (or line), offsets into ``Patient.text``.
    record_date : datetime.date or None
        Date of the record it is in.
    rule : str
        The rule or concept that fired (e.g. ``"HBA1C.value>6.5"``), for provenance.
    value : float or None
        A lab value in the criterion's unit, when the rule compared a number.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    span: Span
    record_date: dt.date | None = None
    rule: str
    value: float | None = None


class Decision(BaseModel):
    """The decision for one criterion for one patient.

    Attributes
    ----------
    criterion : str
        Criterion name (``"ADVANCED-CAD"``).
    label : Label
        ``"met"`` or ``"not met"``.
    score : float
        Confidence of ``met`` in [0, 1] (used for AUC); 1.0/0.0 for hard rules.
    evidence : tuple of Evidence
        The sentences that decide it; empty when nothing was found.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    criterion: str
    label: Label
    score: float = Field(ge=0.0, le=1.0)
    evidence: tuple[Evidence, ...] = ()
