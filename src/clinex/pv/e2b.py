"""ICH E2B(R3) individual case safety reports (ICSRs) from a ``clinex batch pv`` run.

One ICSR per literature case: a record of the run (a MEDLINE citation, whose id is its
PMID, or a JSON-lines record) with at least one *asserted* ``Adverse_event``
(:func:`clinex.pv.counts.is_asserted`: not negated; a speculated event counts) that names
a drug and a reaction. The reports are written in the HL7 v3 message structure of
E2B(R3): ``PORR_IN049016UV`` messages inside the batch wrapper ``MCCI_IN200100UV01``,
modelled on the FDA's example instances (``FAERS2022Scenario*.xml``), element numbers as
comments beside the elements, as there.

What is filled, and how, is data: ``resources/pv/e2b/elements.json`` lists every element
clinex fills (number, name, maximum length and data type as the FDA's
``icsr_data_elements.csv`` gives them) and the required elements it leaves to the sender
(MedDRA coding above all: MedDRA needs a licence). ``docs/pv.md`` (*E2B(R3) export*)
lists both. ``tests/pv/test_pv_e2b.py`` checks every element written against the CSV's
XPaths, lengths, data types and allowed values, and against the FDA's rejection rules.

The output is a draft for the sender's safety database or gateway, not a finished
submission: E.i.2.1a/b (MedDRA version and code) have no allowed nullFlavor, so a report
can be sent only once its reactions are coded.

The work is in three modules: :mod:`clinex.pv.e2b_case` (the element list, the case
models, :func:`case_from_record`), :mod:`clinex.pv.e2b_xml` (the settings and the XML,
:func:`build_batch`) and this one (reading a run, writing the files); every name stays
importable from here.

References
----------
ICH E2B(R3) Implementation Guide, Electronic Transmission of Individual Case Safety
Reports, v5.02 (2016). FDA, *Specifications for Preparing and Submitting Electronic
ICSRs and ICSR Attachments* and its example instances (2022-2024).
"""

from __future__ import annotations

import csv
import io
import json
import re
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clinex.errors import ClinexError, InputError
from clinex.pv.e2b_case import (  # noqa: F401  (re-exported: the case models and readers)
    Case,
    Drug,
    ElementRule,
    Patient,
    Reaction,
    age_group_of,
    age_of,
    case_from_record,
    element_rules,
    sex_of,
)
from clinex.pv.e2b_xml import (  # noqa: F401  (re-exported: the constants and code systems, OID_*)
    BATCH_RECEIVER,
    DEFAULT_SENDER_ORG,
    ICSRS_PER_FILE,
    MESSAGE_RECEIVER,
    OID_AGE_GROUP,
    OID_ASSIGNED_ROLE,
    OID_BATCH_NUMBER,
    OID_BATCH_RECEIVER,
    OID_BATCH_SENDER,
    OID_CHARACTERISTIC,
    OID_COUNTRY,
    OID_DOCUMENT,
    OID_DRUG_ROLE,
    OID_FIRST_SENDER,
    OID_MEDDRA,
    OID_MESSAGE_ID,
    OID_MESSAGE_RECEIVER,
    OID_MESSAGE_SENDER,
    OID_MESSAGE_TYPE,
    OID_OBSERVATION,
    OID_ORGANIZER,
    OID_OUTCOME,
    OID_QUALIFICATION,
    OID_RELATED_INVESTIGATION,
    OID_REPORT_TYPE,
    OID_ROUTE,
    OID_SENDER_TYPE,
    OID_SEX,
    OID_STUDY_TYPE,
    OID_WORLDWIDE_ID,
    E2BSettings,
    build_batch,
    slug,
)
from clinex.pv.run_folder import check_pv_run, sql_str

__all__ = [
    "BATCH_RECEIVER",
    "MESSAGE_RECEIVER",
    "ICSRS_PER_FILE",
    "Case",
    "Drug",
    "E2BSettings",
    "E2BSummary",
    "Patient",
    "Reaction",
    "age_group_of",
    "age_of",
    "build_batch",
    "case_from_record",
    "element_rules",
    "iter_run_cases",
    "sex_of",
    "write_e2b",
]


# --- reading a batch run ------------------------------------------------------------------------
_NEEDED_COLUMNS = ("id", "text", "n_adverse", "phee_json")


def iter_run_cases(run: str | Path, *, on_warning: Callable[[str], None] | None = None,
                   counts: dict[str, int] | None = None) -> Iterator[Case]:
    """The literature cases of a finished ``clinex batch pv`` run, in the order of its results.

    Parameters
    ----------
    run : path
        The run's output folder.
    on_warning : callable, optional
        Called with a message for a row whose ``phee_json`` cannot be read (the row is
        skipped); default: printed to stderr.
    counts : dict, optional
        Filled with ``records`` (rows with an asserted adverse event), ``cases``,
        ``no_case`` (rows whose asserted adverse events name no drug or no reaction) and
        ``animals`` (MEDLINE citations indexed with the MeSH heading *Animals* but not
        *Humans*: animal studies, not individual cases; no ICSR).

    Yields
    ------
    Case

    Raises
    ------
    InputError
        ``run`` is missing, not a ``clinex batch pv`` folder, or an incomplete run (the
        message names the folder and says how to finish it:
        :func:`clinex.pv.run_folder.check_pv_run`).
    FormatError
        ``results.parquet`` cannot be read or lacks the pv columns.
    """
    import duckdb

    from clinex.pv.formats.phee_json import parse_phee_dict

    run = Path(run)
    manifest, columns = check_pv_run(run, "e2b", columns=_NEEDED_COLUMNS)
    warn = on_warning or (lambda m: print(m, file=sys.stderr))
    if isinstance(manifest.get("n_errors"), int) and manifest["n_errors"] > 0:
        warn(f"warning: {run}: the batch run skipped {manifest['n_errors']} input item(s) (see "
             f"{run / 'errors.jsonl'}); they have no ICSR")
    counts = counts if counts is not None else {}
    for key in ("records", "cases", "no_case", "animals"):
        counts.setdefault(key, 0)
    results = run / "results.parquet"
    con = duckdb.connect()
    try:
        source = "source" if "source" in columns else "''"
        meta = "meta_json" if "meta_json" in columns else "NULL"
        cur = con.execute(f"SELECT id, {source}, phee_json, {meta} FROM read_parquet({sql_str(results)}) "
                          "WHERE n_adverse > 0")
        while rows := cur.fetchmany(1000):
            for rid, src, phee, meta_json in rows:
                counts["records"] += 1
                try:
                    item = parse_phee_dict(json.loads(phee))
                    meta_obj = json.loads(meta_json) if meta_json else None
                except (ValueError, ClinexError) as exc:
                    warn(f"warning: {results}: record {rid!r}: its phee_json cannot be read ({exc}); skipped")
                    counts["no_case"] += 1
                    continue
                meta_obj = meta_obj if isinstance(meta_obj, dict) else None
                if _animals_only(meta_obj):
                    counts["animals"] += 1
                    continue
                case = case_from_record(item, source=src or "", meta=meta_obj)
                if case is None:
                    counts["no_case"] += 1
                    continue
                counts["cases"] += 1
                yield case
    finally:
        con.close()


def _animals_only(meta: dict[str, Any] | None) -> bool:
    """A MEDLINE citation indexed *Animals* without *Humans* (MeSH's check tags): no human case."""
    headings = {str(h).casefold() for h in (meta or {}).get("mesh_headings") or ()}
    return "animals" in headings and "humans" not in headings


# --- writing ------------------------------------------------------------------------------------
@dataclass
class E2BSummary:
    """What :func:`write_e2b` did."""

    out: Path
    records: int = 0
    icsrs: int = 0
    no_case: int = 0
    animals: int = 0
    files: list[Path] = field(default_factory=list)


_CASE_COLUMNS = ("file", "c_1_1", "record_id", "source", "pmid", "report_type", "age", "sex", "drugs",
                 "substances", "reactions", "seriousness_stated")


def _prepare_out(out: Path, force: bool) -> None:
    if out.exists() and not out.is_dir():
        raise InputError("exists and is a file; give a folder for the E2B files", path=out)
    if out.exists() and not force:
        raise InputError("already exists; refusing to overwrite it (use --force to replace the E2B files in it)",
                         path=out)
    if out.exists():  # --force: only what an earlier export wrote goes
        for old in [*out.glob("icsr-*.xml"), out / "cases.csv"]:
            try:
                if old.is_file():
                    old.unlink()
            except OSError as exc:
                raise InputError(f"cannot remove an earlier export's file ({exc.strerror})", path=old) from None


def write_e2b(run: str | Path, out: str | Path, *, settings: E2BSettings | None = None, force: bool = False,
              on_warning: Callable[[str], None] | None = None) -> E2BSummary:
    """Write the ICSRs of a ``clinex batch pv`` run as E2B(R3) batch files.

    Parameters
    ----------
    run : path
        The finished run's folder.
    out : path
        The folder to write: ``icsr-00001.xml`` ... (``settings.per_file`` ICSRs each) and
        ``cases.csv`` (one row per ICSR: its file, C.1.1, record, PMID, patient, drugs,
        reactions). It must not exist unless ``force``.
    settings : E2BSettings, optional
        Sender and dates; default :class:`E2BSettings` ``()`` (a placeholder sender).
    force : bool, default False
        Replace the ``icsr-*.xml`` and ``cases.csv`` of an existing ``out`` (other files
        are kept).
    on_warning : callable, optional
        Called with each warning (default: stderr).

    Returns
    -------
    E2BSummary

    Raises
    ------
    InputError
        A bad ``run`` (see :func:`iter_run_cases`), an existing ``out`` without ``force``,
        a bad setting (names the option), or a file that cannot be written.

    Examples
    --------
    >>> write_e2b("runs/medline", "runs/medline-e2b",
    ...           settings=E2BSettings(sender_org="Acme Pharma", sender_country="DE"))  # doctest: +SKIP
    """
    from clinex.io.atomic import write_atomic

    run, out = Path(run), Path(out)
    s = (settings or E2BSettings()).checked()
    assert s.created is not None
    check_pv_run(run, "e2b", columns=_NEEDED_COLUMNS)  # before anything is written
    _prepare_out(out, force)
    summary = E2BSummary(out=out)
    counts: dict[str, int] = {}
    used: set[str] = set()
    table = io.StringIO()
    writer = csv.writer(table, lineterminator="\n")
    writer.writerow(_CASE_COLUMNS)
    pending: list[tuple[Case, str]] = []
    stamp = f"{s.created:%Y%m%d%H%M%S}"
    company = slug(s.sender_org)

    def flush() -> None:
        if not pending:
            return
        number = len(summary.files) + 1
        path = out / f"icsr-{number:05d}.xml"
        write_atomic(path, build_batch(pending, s, f"{slug(str(s.sender_id))[:40]}-{stamp}-{number:05d}"),
                     force=True)
        summary.files.append(path)
        pending.clear()

    for case in iter_run_cases(run, on_warning=on_warning, counts=counts):
        number = f"PMID{case.pmid}" if case.pmid else re.sub(r"[^A-Za-z0-9_.]", "_", case.record_id)[:50] or "RECORD"
        case_id = f"{s.sender_country}-{company}-{number}"
        k = 1
        while case_id in used:
            k += 1
            case_id = f"{s.sender_country}-{company}-{number}.{k}"
        used.add(case_id)
        p = case.patient
        writer.writerow((
            f"icsr-{len(summary.files) + 1:05d}.xml", case_id, case.record_id, case.source, case.pmid or "",
            "2" if case.study_type else "1", f"{p.age[0]} {p.age[1]}" if p.age else "",
            {"1": "male", "2": "female"}.get(p.sex or "", ""), " | ".join(d.text for d in case.drugs),
            " | ".join("; ".join(d.substances) for d in case.drugs), " | ".join(r.text for r in case.reactions),
            " | ".join(x for r in case.reactions for x in (("fatal",) if r.fatal else ()) + (
                ("life-threatening",) if r.life_threatening else ()))))
        pending.append((case, case_id))
        summary.icsrs += 1
        if len(pending) >= s.per_file:
            flush()
    flush()
    summary.records, summary.no_case, summary.animals = (counts.get("records", 0), counts.get("no_case", 0),
                                                          counts.get("animals", 0))
    write_atomic(out / "cases.csv", table.getvalue(), force=True)
    return summary
