"""The screening API: ``screen(patient)`` and whole-folder runs with writers.

:func:`screen` decides the criteria for one patient; :func:`screen_paths` reads
n2c2 XML files, note folders or folders of them, screens every readable patient
(one bad patient is reported and skipped, the others are still screened) and
writes n2c2 XML (TAGS filled), JSON or CSV.

Output formats (chosen by ``--output``):

* a folder (existing, or a path without suffix) → one ``<id>.xml`` per patient,
  n2c2 format with the ``<TAGS>`` filled (the input files are never overwritten);
* ``*.json`` → one object ``{patient_id: {criterion: {label, score, evidence: [...]}}}``;
* ``*.jsonl`` → one line per patient;
* ``*.csv`` → one row per patient × criterion × evidence sentence, with columns
  ``patient, criterion, label, score`` followed by :data:`EVIDENCE_FIELDS`.

Any other suffix (``res.jsn``, ``x.txt``) is an error, so that a typo never
becomes a folder. Every evidence item is written by :func:`evidence_record`, the
one flat layout shared by these files, ``clinex batch cohort`` (``evidence_json``)
and the web API.

References
----------
.. [1] Stubbs A, Filannino M, Soysal E, Henry S, Uzuner Ö. Cohort selection for
   clinical trials: n2c2 2018 shared task track 1. JAMIA 2019;26(11):1163-1171.
"""

from __future__ import annotations

import csv
import io
import itertools
import json
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from clinex.cohort.types import Decision, Evidence, Patient
from clinex.errors import ClinexError, InputError

__all__ = [
    "EVIDENCE_FIELDS",
    "screen",
    "screen_paths",
    "evidence_record",
    "decision_record",
    "decisions_to_dict",
    "date_warning",
    "write_decisions",
]

#: Keys of :func:`evidence_record`, in order (also the CSV's evidence columns).
EVIDENCE_FIELDS = ("record_date", "start", "end", "rule", "source", "value", "sentence")

def screen(
    patient: Patient,
    criteria: str | Path | Sequence[str | Path] = "n2c2",
    *,
    model: str | Path | Any = "auto",
    **options: Any,
) -> dict[str, Decision]:
    """Decide each criterion for one patient.

    This is the one cohort pipeline: ``clinex cohort screen``, the web API and
    ``clinex batch cohort`` all call it (or :func:`screen_paths`, which uses the same
    model).

    Parameters
    ----------
    patient : Patient
        E.g. from :func:`clinex.cohort.formats.n2c2_xml.read_patient`.
    criteria : str, Path or list of them, default "n2c2"
        The packaged set name, or criterion files / folders of your own.
    model : str or CohortModel, default "auto"
        A name of :data:`clinex.cohort.models.REGISTRY` (``rules``) or ``auto``, resolved
        by the registry (:func:`clinex.cohort.models.get_model`), or a model object with
        ``screen(patient)``. Cohort models are not saved, so a path is an unknown name.
    **options
        Options of the model kind (see :func:`clinex.cohort.models.get_model`); none
        with a model object.

    Returns
    -------
    dict of str to Decision
        Criterion name → decision (label, score, evidence with record date,
        sentence offsets into ``patient.text`` and the rule that fired).

    Examples
    --------
    >>> from clinex.cohort import screen                       # doctest: +SKIP
    >>> from clinex.cohort.formats.n2c2_xml import read_patient            # doctest: +SKIP
    >>> screen(read_patient("001.xml"))["MI-6MOS"].label       # doctest: +SKIP
    'met'
    """
    from clinex.cohort.models import get_model

    if not isinstance(patient, Patient):
        raise InputError(f"screen() needs a Patient, not {type(patient).__name__}")
    return get_model(model, criteria, **options).screen(patient)


def evidence_record(e: Evidence) -> dict[str, Any]:
    """The flat, JSON-ready record of one evidence item (the one layout of every output).

    Parameters
    ----------
    e : Evidence

    Returns
    -------
    dict
        Keys :data:`EVIDENCE_FIELDS`: ``record_date`` (ISO date or None),
        ``start`` / ``end`` (characters into ``Patient.text``, half-open; for a
        discontinuous span, its first start and last end), ``rule`` (what fired),
        ``source`` (versioned criterion id, ``"CREATININE.v1"``), ``value`` (lab
        value in the criterion's unit, or None) and ``sentence`` (the evidence
        text, ``Patient.text[start:end]`` for a one-fragment span).

    Examples
    --------
    >>> evidence_record(decision.evidence[0])["sentence"]   # doctest: +SKIP
    'Principal diagnosis: NSTEMI.'
    """
    return {
        "record_date": e.record_date.isoformat() if e.record_date else None,
        "start": e.span.start,
        "end": e.span.end,
        "rule": e.rule,
        "source": e.span.source,
        "value": e.value,
        "sentence": e.span.text,
    }


def decision_record(d: Decision) -> dict[str, Any]:
    """``{"label", "score", "evidence": [evidence_record, ...]}`` for one decision."""
    return {"label": d.label, "score": d.score, "evidence": [evidence_record(e) for e in d.evidence]}


def decisions_to_dict(decisions: dict[str, Decision]) -> dict[str, dict]:
    """JSON-ready form: criterion → :func:`decision_record` (evidence as :func:`evidence_record`)."""
    return {name: decision_record(d) for name, d in decisions.items()}


def date_warning(patient: Patient) -> str | None:
    """One line naming the records whose date is missing or does not parse, or None.

    Such a record can never be "now" (GUIDELINE.md, "The reference point"): when it
    is the last one, "now" silently moves back to the latest valid date, so every
    time window shifts. Records are numbered from 1 in file order.

    Parameters
    ----------
    patient : Patient

    Returns
    -------
    str or None
        E.g. ``"warning: 001.xml: record 2 of 2: date '2071-02-30' does not parse;
        'now' is 2070-05-01 (record 1)"``; None when every record is dated.
    """
    from clinex.cohort.formats.records import _DATE_LINE

    bad = []
    for i, r in enumerate(patient.records, start=1):
        if r.date is not None:
            continue
        m = _DATE_LINE.search(patient.text, r.start, r.end)
        bad.append(f"record {i} of {len(patient.records)}: " + (f"date {m.group(1)!r} does not parse" if m else "no 'Record date:' line"))
    if not bad:
        return None
    now = patient.now
    if now is None:
        where = "no record is dated, so time windows use the last record only"
    else:
        k = max(i for i, r in enumerate(patient.records, start=1) if r.date == now)
        where = f"'now' is {now.isoformat()} (record {k})"
    name = patient.source or patient.id
    return f"warning: {name}: {'; '.join(bad)}; {where}"


def _kind(output: Path) -> str:
    """"json", "jsonl", "csv" or "xml" (a folder); any other suffix is an error, never a new folder."""
    suf = output.suffix.lower()
    if suf in (".json", ".jsonl", ".csv"):
        return suf[1:]
    if suf == ".xml":
        raise InputError("--output for XML is a folder (one <id>.xml per patient), not a .xml file", path=output)
    if output.exists() and not output.is_dir():
        raise InputError("output exists and is not a folder; use a .json, .jsonl or .csv file or a folder", path=output)
    if suf and not output.is_dir():
        raise InputError(f"unknown output type {output.suffix!r} (use a folder, .json, .jsonl or .csv)", path=output)
    return "xml"


def _refuse_existing(output: Path, kind: str) -> None:
    """Raise InputError when writing ``output`` would replace an earlier result."""
    if kind != "xml":
        if output.exists():
            raise InputError("output file exists; pass --force to replace it", path=output)
    elif output.is_dir() and any(output.glob("*.xml")):
        raise InputError("output folder already holds n2c2 XML files; pass --force to replace them", path=output)


def write_decisions(
    results: Iterable[tuple[Patient, dict[str, Decision]]], output: str | Path, *, force: bool = True
) -> int:
    """Write screening results; returns the number of patients written.

    Nothing is created when ``results`` is empty. A ``.json`` / ``.jsonl`` / ``.csv``
    file is written atomically (:func:`clinex.io.atomic.write_atomic`): a failure
    leaves no half-written file and an earlier file untouched.

    Parameters
    ----------
    results : iterable of (Patient, dict of str to Decision)
    output : str or Path
        A folder (one ``<id>.xml`` per patient), or a ``.json`` / ``.jsonl`` / ``.csv`` file.
    force : bool, default True
        Replace an existing output. With False an existing file, or a folder that
        already holds ``*.xml`` files, is refused before anything is written.

    Raises
    ------
    InputError
        Unsupported output, an existing output without ``force``, or writing would
        overwrite an input file.
    """
    from clinex.io.atomic import write_atomic

    output = Path(output)
    kind = _kind(output)
    if not force:
        _refuse_existing(output, kind)
    results = iter(results)
    first = next(results, None)
    if first is None:  # nothing to write: no empty folder or file is left behind
        return 0
    results = itertools.chain([first], results)
    n = 0
    if kind == "xml":
        from clinex.cohort.formats.n2c2_xml import write_patient

        try:
            output.mkdir(parents=True, exist_ok=True)
        except OSError as exc:  # read-only or full file system: [CLX001] naming the folder and the reason
            from clinex.io.atomic import write_error

            raise write_error(output, exc, folder=True) from None
        for p, dec in results:
            write_patient(p, output / f"{p.id}.xml", decisions=dec)
            n += 1
        return n

    def _json() -> Iterator[str]:
        nonlocal n
        data = {}
        for p, dec in results:
            data[p.id] = decisions_to_dict(dec)
            n += 1
        yield json.dumps(data, indent=1, ensure_ascii=False) + "\n"

    def _jsonl() -> Iterator[str]:
        nonlocal n
        for p, dec in results:
            n += 1
            yield json.dumps({"patient": p.id, "decisions": decisions_to_dict(dec)}, ensure_ascii=False) + "\n"

    def _csv() -> Iterator[str]:
        nonlocal n
        buf = io.StringIO()
        w = csv.writer(buf)
        w.writerow(["patient", "criterion", "label", "score", *EVIDENCE_FIELDS])
        for p, dec in results:
            n += 1
            for name, d in dec.items():
                if not d.evidence:
                    w.writerow([p.id, name, d.label, d.score, *([""] * len(EVIDENCE_FIELDS))])
                for e in d.evidence:
                    rec = evidence_record(e)
                    w.writerow([p.id, name, d.label, d.score, *("" if rec[k] is None else rec[k] for k in EVIDENCE_FIELDS)])
            yield buf.getvalue()
            buf.seek(0)
            buf.truncate()
        yield buf.getvalue()

    chunks = {"json": _json, "jsonl": _jsonl, "csv": _csv}[kind]()
    write_atomic(output, chunks, force=True, newline="" if kind == "csv" else "\n")
    return n


def screen_paths(
    paths: Sequence[str | Path],
    output: str | Path,
    criteria: str | Path | Sequence[str | Path] = "n2c2",
    *,
    errors: list[ClinexError] | None = None,
    on_patient: Callable[[Patient], None] | None = None,
    warnings: list[str] | None = None,
    model: str = "auto",
    options: dict[str, Any] | None = None,
    force: bool = False,
) -> int:
    """Screen every patient under ``paths`` and write the results to ``output``.

    Parameters
    ----------
    paths : list of str or Path
        n2c2 XML files, note folders, or folders of either.
    output : str or Path
        Folder (n2c2 XML), or a ``.json`` / ``.jsonl`` / ``.csv`` file.
    criteria : default "n2c2"
        As in :func:`screen`.
    errors : list, optional
        Receives one ClinexError per bad patient (each is also printed to stderr).
    on_patient : callable, optional
        Called after each patient is screened (progress bars).
    warnings : list, optional
        Receives the :func:`date_warning` line of each patient with a missing or
        unparsable record date (each is also printed to stderr); such a patient is
        still screened.
    model : str, default "auto"
        As in :func:`screen`.
    options : dict, optional
        Options of the model kind, as in :func:`screen`.
    force : bool, default False
        Replace an earlier output (a file, or ``*.xml`` files in the folder); without
        it such an output is refused before any patient is screened.

    Returns
    -------
    int
        Number of patients screened and written.

    Raises
    ------
    InputError
        Bad output path; an existing output without ``force``; an output that would
        overwrite an input file.
    """
    from clinex.cohort.formats.n2c2_xml import read_patients
    from clinex.cohort.models import get_model

    kind = _kind(Path(output))
    engine = get_model(model, criteria, **(options or {}))
    log: list[ClinexError] = [] if errors is None else errors
    inputs = {str(Path(p).resolve()) for p in paths}
    out_res = str(Path(output).resolve())
    if out_res in inputs:
        raise InputError("refusing to overwrite the input; choose another output", path=output)
    if not force:
        _refuse_existing(Path(output), kind)

    def _patients():
        for p in read_patients(list(paths), errors="ignore", error_log=log):
            try:
                engine.check_size(p)
            except ClinexError as exc:
                log.append(exc)
                continue
            msg = date_warning(p)
            if msg is not None:
                if warnings is not None:
                    warnings.append(msg)
                print(msg, file=sys.stderr)
            yield p

    def _results():
        seen = len(log)
        for p, dec in engine.screen_many(_patients()):
            log.extend(getattr(engine, "pop_failures", list)())  # patients a model skipped (llm)
            while seen < len(log):
                print(str(log[seen]), file=sys.stderr)
                seen += 1
            if on_patient is not None:
                on_patient(p)
            yield p, dec
        log.extend(getattr(engine, "pop_failures", list)())
        while seen < len(log):
            print(str(log[seen]), file=sys.stderr)
            seen += 1

    return write_decisions(_results(), output, force=True)
