"""Drug x reaction pairs of a ``clinex batch pv`` run: counts, years and evidence (issue 25, item 3).

:func:`summarize_run` reads a finished run folder (``manifest.json`` with status ``done``,
``results.parquet``) and writes ``pairs.csv``, ``pairs.parquet`` and ``pairs.html``
(one self-contained page: :mod:`clinex.pv.summary_html`). The counting is done by DuckDB
over the events of the results' ``phee_json`` column (the drug and reaction names:
:mod:`clinex.pv.summary_names`):

* **Which events count.** ``Adverse_event`` (ADE) and ``Potential_therapeutic_event``
  (PTE). A negated event ("No hepatotoxicity was observed", :func:`clinex.pv.counts.is_negated_event`)
  and a speculated one ("may have caused", :func:`clinex.pv.counts.is_speculated_event`)
  are left out unless ``include_negated`` / ``include_speculated`` keep them (then the
  ``negated_events`` / ``speculated_events`` columns count them within the pair).
* **Which pairs an event states.** One per drug and Effect: its ``Treatment.Drug``
  sub-arguments and combination drugs, or, with neither, its Treatment arguments; a bare
  reference ("the drug", "this medication": :data:`REFERRING`) names no drug. An event
  without a drug or an Effect states no pair (counted in :attr:`PairSummary.n_events_without_pair`).
* **Drug names** (:func:`normalize_drug`): the drug gazetteer's canonical name in lower
  case when it knows the text as a whole, else the first specific drug it finds in it
  ("Tylenol" and "paracetamol" -> ``acetaminophen``, "intravenous clonidine" ->
  ``clonidine``; drug classes such as "antibiotics" are not drug names), else the text
  case-folded with its white space collapsed. The DrugBank and MeSH ids come with the name.
* **Reaction names** (:func:`reaction_base`, then :func:`reaction_forms` over the run):
  case-folded, white space collapsed, a leading article (*a*, *an*, *the*) and trailing
  ``.,;:`` removed, British spellings made American (:data:`SPELLING`: *haem* -> *hem*,
  *oedem* -> *edem*, *-aemia* / *-aemic* -> *-emia* / *-emic*, *oesophag* -> *esophag*,
  *-rrhoea* -> *-rrhea*, *anaesth* -> *anesth*, *-isation* -> *-ization*), and a plural last
  word made singular only when the singular phrase is also seen in the run ("seizures" ->
  "seizure" when some event names "seizure"; tried in the order *-ies* -> *-y*, *-es* ->
  *-*, *-s* -> *-*, never *-ss*). So "Seizures", "A seizure" and "seizure" count as one
  reaction, while "diabetes" stays as it is.
* **Counts** per pair, ADE and PTE apart (``ade_*``, ``pte_*``) and together: events
  (distinct events: an event naming the drug twice counts once), records (distinct
  ``(source, id)``) and PMIDs (distinct :func:`clinex.pv.run_folder.record_pmid`:
  ``meta_json.pmid`` of MEDLINE inputs, else a record id of 5 to 9 digits, the rule E2B
  uses; the same citation in a baseline and an update file counts once); ``dechallenge_events`` /
  ``rechallenge_events`` (events with the ``Dechallenge`` / ``Rechallenge`` attribute,
  :mod:`clinex.pv.challenge`); ``first_year`` / ``last_year`` (``meta_json.year``; empty
  for other inputs).
* **Evidence** (``examples_json``): up to :data:`EXAMPLES_PER_PAIR` events per pair, other
  records first (one sentence from each record before a second from any), then plain
  before speculated before negated, a dechallenge or rechallenge first (the strongest
  evidence of a cause), a citation with a PMID before a record without, ADE before PTE,
  then by file, id and offset. Each
  example holds the record ``id``, ``source``, ``pmid``, ``year``, ``event_type``, its flags,
  the ``sentence`` (the sentence of the event; the sentences from the drug's to the
  reaction's when they lie in different sentences), ``sentence_start`` (its offset in the
  record's text) and ``drug_offsets`` / ``reaction_offsets``: ``[start, end)`` fragments,
  offsets into the record's ``text`` (the ``text`` column of ``results.parquet``), so that
  ``sentence[s - sentence_start : e - sentence_start]`` is the span's text.

Rows are ordered by ADE events, ADE records, events (each descending), then drug and
reaction. A run that is not finished (its manifest's ``status`` is not ``done``), is not a
``clinex batch pv`` run, or whose ``results.parquet`` is missing or holds another number of
rows than its manifest says, is refused with an :class:`~clinex.errors.InputError` naming
the folder (``clinex pv summarize``: exit 2): a partial summary would undercount without
saying so.
"""

from __future__ import annotations

import bisect
import json
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clinex.errors import ClinexError, FormatError, InputError
from clinex.io.atomic import atomic_path, write_atomic
from clinex.pv.counts import is_negated_event, is_speculated_event
from clinex.pv.run_folder import check_pv_run, record_pmid
from clinex.pv.run_folder import sql_str as _sql_str
from clinex.pv.summary_names import (
    REFERRING,
    SPELLING,
    DrugName,
    _collapse,
    normalize_drug,
    reaction_base,
    reaction_forms,
)
from clinex.pv.types import Argument, Event
from clinex.text import Span, sentence_offsets

__all__ = [
    "EXAMPLES_PER_PAIR",
    "MAX_HTML_PAIRS",
    "PAIR_COLUMNS",
    "REFERRING",
    "SPELLING",
    "SUMMARY_FILES",
    "DrugName",
    "PairSummary",
    "check_run",
    "normalize_drug",
    "reaction_base",
    "reaction_forms",
    "summarize_run",
]

#: The files :func:`summarize_run` writes into its output folder.
SUMMARY_FILES: tuple[str, ...] = ("pairs.csv", "pairs.parquet", "pairs.html")

#: Evidence sentences kept per pair.
EXAMPLES_PER_PAIR = 3

#: Pairs shown in ``pairs.html`` at most (the first in the rows' order); the CSV and
#: Parquet files hold every pair, and the page says how many were left out.
MAX_HTML_PAIRS = 20_000

#: Surface forms kept per pair in ``drug_texts`` / ``reaction_texts`` (sorted, ``"; "``-joined).
MAX_FORMS = 10

#: The columns of ``pairs.csv`` / ``pairs.parquet`` and their DuckDB types, in order.
PAIR_COLUMNS: dict[str, str] = {
    "drug": "VARCHAR",
    "drug_texts": "VARCHAR",
    "drugbank_id": "VARCHAR",
    "mesh_tree": "VARCHAR",
    "reaction": "VARCHAR",
    "reaction_texts": "VARCHAR",
    "events": "BIGINT",
    "records": "BIGINT",
    "pmids": "BIGINT",
    "ade_events": "BIGINT",
    "ade_records": "BIGINT",
    "ade_pmids": "BIGINT",
    "pte_events": "BIGINT",
    "pte_records": "BIGINT",
    "pte_pmids": "BIGINT",
    "speculated_events": "BIGINT",
    "negated_events": "BIGINT",
    "dechallenge_events": "BIGINT",
    "rechallenge_events": "BIGINT",
    "first_year": "INTEGER",
    "last_year": "INTEGER",
    "examples_json": "VARCHAR",
}

_EVENT_TYPES = {"Adverse_event": "ade", "Potential_therapeutic_event": "pte"}
_NEEDED = ("id", "source", "text", "phee_json", "meta_json")
_ROWS_PER_FETCH = 1024


# --------------------------------------------------------------------------- the run folder


def check_run(run: str | Path) -> dict[str, Any]:
    """Check that ``run`` is a finished ``clinex batch pv`` folder; return its manifest.

    The check of :func:`clinex.pv.run_folder.check_pv_run` with the columns a summary
    reads (kept importable here for callers of earlier versions).

    Raises
    ------
    InputError
        See :func:`~clinex.pv.run_folder.check_pv_run`.
    FormatError
        ``results.parquet`` cannot be read or lacks a column (names the file).
    """
    return check_pv_run(run, "summarize", columns=_NEEDED)[0]


def _check_out(out: Path, force: bool) -> None:
    if out.exists() and not out.is_dir():
        raise InputError("exists and is not a folder; pass another --output", path=out)
    if out.is_dir() and any(out.iterdir()) and not force:
        raise InputError("output folder exists and is not empty; pass --force to replace its "
                         + ", ".join(SUMMARY_FILES), path=out)


# --------------------------------------------------------------------------- events -> rows


@dataclass
class PairSummary:
    """What :func:`summarize_run` did.

    Attributes
    ----------
    out_dir : Path
        The folder holding :data:`SUMMARY_FILES`.
    n_records : int
        Rows of ``results.parquet`` read.
    n_events : int
        ADE and PTE events counted (after the negated / speculated choice).
    n_events_negated, n_events_speculated : int
        Events left out as negated / as speculated (0 when kept).
    n_events_without_pair : int
        Counted events that name no drug or no reaction (in no pair).
    n_pairs : int
        Rows of ``pairs.csv``.
    n_batch_errors : int
        Items the batch run skipped (its ``errors.jsonl``): not in ``results.parquet``, so not counted.
    notes : list of str
        Warnings for the user (skipped batch items, pairs left out of the page).
    """

    out_dir: Path
    n_records: int = 0
    n_events: int = 0
    n_events_negated: int = 0
    n_events_speculated: int = 0
    n_events_without_pair: int = 0
    n_pairs: int = 0
    n_batch_errors: int = 0
    notes: list[str] = field(default_factory=list)


def _frags(span: Span) -> list[list[int]]:
    return [[f.start, f.end] for f in span.fragments]


def _drugs(event: Event) -> list[Argument]:
    drugs = [a for a in event.sub_arguments.get("Treatment", ()) if a.role == "Drug"]
    drugs += [d for c in event.combinations for d in c.drugs]
    if not drugs:
        drugs = list(event.main("Treatment"))
    return [a for a in drugs if a.span.text.strip() and not REFERRING.fullmatch(_collapse(a.span.text))]


def _attr(event: Event, name: str) -> bool:
    return any(a.name == name and a.value is True for a in event.attributes)


class _Reader:
    """Pass 1: the results' rows -> one JSON line per (event, drug, reaction), counting as it goes."""

    def __init__(self, summary: PairSummary, include_negated: bool, include_speculated: bool,
                 tick: Callable[[int], None]) -> None:
        self.summary = summary
        self.include_negated = include_negated
        self.include_speculated = include_speculated
        self.tick = tick
        self.reactions: set[str] = set()
        self.pos = 0

    def lines(self, rows: Iterator[tuple[Any, ...]], results: Path) -> Iterator[str]:
        from clinex.pv.formats.phee_json import parse_phee_dict

        for rid, source, text, phee, meta_json in rows:
            self.summary.n_records += 1
            self.tick(1)
            try:
                record = parse_phee_dict(json.loads(phee), path=results)
                meta = json.loads(meta_json) if meta_json else {}
            except (ClinexError, ValueError, TypeError) as exc:
                raise FormatError(f"record {rid!r} of {source}: its phee_json/meta_json cannot be read ({exc})",
                                  path=results) from None
            if record.text != text:
                raise FormatError(f"record {rid!r} of {source}: phee_json's context differs from the text column",
                                  path=results)
            yield from self._record(str(rid), str(source), text, record.events, meta if isinstance(meta, dict) else {})

    def _record(self, rid: str, source: str, text: str, events: tuple[Event, ...], meta: dict[str, Any]) -> Iterator[str]:
        pmid = record_pmid(rid, meta)
        year = meta.get("year")
        year = int(year) if isinstance(year, int | str) and str(year).isdigit() else None
        record_key = f"{source}\x1f{rid}"
        sentences: list[tuple[int, int]] | None = None
        for index, ev in enumerate(events):
            kind = _EVENT_TYPES.get(ev.event_type)
            if kind is None:
                continue
            negated, speculated = is_negated_event(ev), is_speculated_event(ev)
            if negated and not self.include_negated:
                self.summary.n_events_negated += 1
                continue
            if speculated and not self.include_speculated:
                self.summary.n_events_speculated += 1
                continue
            self.summary.n_events += 1
            drugs = _drugs(ev)
            effects = [a for a in ev.main("Effect") if reaction_base(a.span.text)]
            if not drugs or not effects:
                self.summary.n_events_without_pair += 1
                continue
            if sentences is None:
                sentences = sentence_offsets(text) or [(0, len(text))]
            seen: set[tuple[str, str]] = set()
            for drug in drugs:
                name = normalize_drug(drug.span.text)
                for effect in effects:
                    reaction = reaction_base(effect.span.text)
                    if (name.key, reaction) in seen:
                        continue
                    seen.add((name.key, reaction))
                    self.reactions.add(reaction)
                    start, end = _evidence(sentences, ev, drug, effect)
                    self.pos += 1
                    yield json.dumps({
                        "drug": name.key, "drug_text": " ".join(drug.span.text.split()),
                        "drugbank_id": name.drugbank_id, "mesh_tree": name.mesh_tree,
                        "reaction0": reaction, "reaction_text": " ".join(effect.span.text.split()),
                        "event_type": ev.event_type, "record_key": record_key, "event_key": f"{record_key}\x1f{index}",
                        "id": rid, "source": source, "pmid": None if pmid is None else str(pmid), "year": year,
                        "negated": negated, "speculated": speculated,
                        "dechallenge": _attr(ev, "Dechallenge"), "rechallenge": _attr(ev, "Rechallenge"),
                        "pos": self.pos, "trigger_start": ev.trigger.start,
                        "sentence": text[start:end], "sentence_start": start,
                        "drug_offsets": _frags(drug.span), "reaction_offsets": _frags(effect.span),
                    }, ensure_ascii=False) + "\n"


def _evidence(sentences: list[tuple[int, int]], ev: Event, drug: Argument, effect: Argument) -> tuple[int, int]:
    """``[start, end)`` of the sentences from the first to the last of the trigger, drug and reaction."""
    starts = [s for s, _ in sentences]
    points = [ev.trigger.start, ev.trigger.end - 1, drug.span.start, drug.span.end - 1,
              effect.span.start, effect.span.end - 1]
    lo = max(0, bisect.bisect_right(starts, min(points)) - 1)
    hi = max(0, bisect.bisect_right(starts, max(points)) - 1)
    return min(sentences[lo][0], min(points)), max(sentences[hi][1], max(points) + 1)


_EVENT_COLUMNS = {
    "drug": "VARCHAR", "drug_text": "VARCHAR", "drugbank_id": "VARCHAR", "mesh_tree": "VARCHAR",
    "reaction0": "VARCHAR", "reaction_text": "VARCHAR", "event_type": "VARCHAR", "record_key": "VARCHAR",
    "event_key": "VARCHAR", "id": "VARCHAR", "source": "VARCHAR", "pmid": "VARCHAR", "year": "INTEGER",
    "negated": "BOOLEAN", "speculated": "BOOLEAN", "dechallenge": "BOOLEAN", "rechallenge": "BOOLEAN",
    "pos": "BIGINT", "trigger_start": "BIGINT", "sentence": "VARCHAR", "sentence_start": "BIGINT",
    "drug_offsets": "BIGINT[][]", "reaction_offsets": "BIGINT[][]",
}

_ADE = "event_type = 'Adverse_event'"
_PTE = "event_type = 'Potential_therapeutic_event'"

_PAIRS_SQL = f"""
CREATE TABLE pairs AS
WITH e AS (
    SELECT ev.* EXCLUDE (reaction0), coalesce(m.form, ev.reaction0) AS reaction
    FROM ev LEFT JOIN rmap m ON m.name = ev.reaction0
),
u AS (  -- one row per event and pair (an event naming the drug twice counts once)
    SELECT * FROM e QUALIFY row_number() OVER (PARTITION BY drug, reaction, event_key ORDER BY pos) = 1
),
ranked AS (
    SELECT *, row_number() OVER (
        PARTITION BY drug, reaction
        ORDER BY in_record, negated, speculated, (dechallenge OR rechallenge) DESC, pmid IS NULL,
                 event_type, source, id, trigger_start, pos) AS rank
    FROM (SELECT *, row_number() OVER (
              PARTITION BY drug, reaction, record_key
              ORDER BY negated, speculated, (dechallenge OR rechallenge) DESC, event_type, trigger_start, pos)
              AS in_record FROM u)
),
ex AS (
    SELECT drug, reaction, to_json(list(struct_pack(
               id := id, source := source, pmid := pmid, year := year, event_type := event_type,
               negated := negated, speculated := speculated, dechallenge := dechallenge,
               rechallenge := rechallenge, sentence := sentence, sentence_start := sentence_start,
               drug_offsets := drug_offsets, reaction_offsets := reaction_offsets) ORDER BY rank)) AS examples_json
    FROM ranked WHERE rank <= {EXAMPLES_PER_PAIR} GROUP BY drug, reaction
),
agg AS (
    SELECT drug,
           array_to_string(list_sort(list(DISTINCT drug_text))[1:{MAX_FORMS}], '; ') AS drug_texts,
           min(drugbank_id) AS drugbank_id, min(mesh_tree) AS mesh_tree,
           reaction,
           array_to_string(list_sort(list(DISTINCT reaction_text))[1:{MAX_FORMS}], '; ') AS reaction_texts,
           count(*) AS events, count(DISTINCT record_key) AS records, count(DISTINCT pmid) AS pmids,
           count(*) FILTER (WHERE {_ADE}) AS ade_events,
           count(DISTINCT record_key) FILTER (WHERE {_ADE}) AS ade_records,
           count(DISTINCT pmid) FILTER (WHERE {_ADE}) AS ade_pmids,
           count(*) FILTER (WHERE {_PTE}) AS pte_events,
           count(DISTINCT record_key) FILTER (WHERE {_PTE}) AS pte_records,
           count(DISTINCT pmid) FILTER (WHERE {_PTE}) AS pte_pmids,
           count(*) FILTER (WHERE speculated) AS speculated_events,
           count(*) FILTER (WHERE negated) AS negated_events,
           count(*) FILTER (WHERE dechallenge) AS dechallenge_events,
           count(*) FILTER (WHERE rechallenge) AS rechallenge_events,
           min(year) AS first_year, max(year) AS last_year
    FROM u GROUP BY drug, reaction
)
SELECT {", ".join(f"CAST(agg.{c} AS {t}) AS {c}" if c != "examples_json"
                  else "CAST(ex.examples_json AS VARCHAR) AS examples_json"
                  for c, t in PAIR_COLUMNS.items())}
FROM agg JOIN ex USING (drug, reaction)
ORDER BY ade_events DESC, ade_records DESC, events DESC, drug, reaction
"""


# --------------------------------------------------------------------------- the verb


def summarize_run(
    run: str | Path,
    out: str | Path | None = None,
    *,
    include_negated: bool = False,
    include_speculated: bool = False,
    force: bool = False,
    max_html_pairs: int = MAX_HTML_PAIRS,
    progress: bool = False,
) -> PairSummary:
    """Write the drug x reaction pairs of a finished ``clinex batch pv`` run (module notes).

    Parameters
    ----------
    run : path
        The run's output folder (``manifest.json``, ``results.parquet``).
    out : path, optional
        Output folder; default ``RUN/summary``. Created when missing.
    include_negated, include_speculated : bool, default False
        Count negated / speculated events too (left out by default).
    force : bool, default False
        Write into an existing non-empty ``out`` (replacing :data:`SUMMARY_FILES`; other
        files are never touched). Without it such a folder is refused.
    max_html_pairs : int, default MAX_HTML_PAIRS
        Pairs shown in ``pairs.html`` (the first in the rows' order).
    progress : bool, default False
        Report records read on stderr (:class:`clinex.progress.Progress`).

    Returns
    -------
    PairSummary

    Raises
    ------
    InputError
        ``run`` is not a finished pv run (:func:`~clinex.pv.run_folder.check_pv_run`), ``out`` exists and is not
        empty without ``force`` or is a file, or a file cannot be written (``[CLX001] FILE:
        cannot write the output file (...)``).
    FormatError
        A row of ``results.parquet`` whose ``phee_json`` cannot be read (names the record).
    """
    import duckdb

    from clinex.progress import Progress
    from clinex.pv.summary_html import render_pairs_html

    run = Path(run)
    out = Path(out) if out is not None else run / "summary"
    if max_html_pairs < 0:
        raise InputError(f"max_html_pairs must be >= 0; got {max_html_pairs}", field="max_html_pairs")
    manifest, _ = check_pv_run(run, "summarize", columns=_NEEDED)
    _check_out(out, force)
    summary = PairSummary(out_dir=out)
    n_errors = manifest.get("n_errors")
    if isinstance(n_errors, int) and n_errors:
        summary.n_batch_errors = n_errors
        summary.notes.append(f"warning: {run}: the batch run skipped {n_errors} input item(s) (see "
                             f"{run / 'errors.jsonl'}); they are not in this summary")
    results = run / "results.parquet"
    with tempfile.TemporaryDirectory(prefix="clinex-summary-") as tmp:
        con = duckdb.connect(str(Path(tmp) / "work.duckdb"))
        try:
            total = int(manifest["n_rows"]) if isinstance(manifest.get("n_rows"), int) else None
            with Progress("summarize", total=total, unit="records", enabled=progress) as bar:
                reader = _Reader(summary, include_negated, include_speculated, bar.advance)
                cur = con.execute(f"SELECT {', '.join(_NEEDED)} FROM read_parquet({_sql_str(results)})")

                def rows() -> Iterator[tuple[Any, ...]]:
                    while batch := cur.fetchmany(_ROWS_PER_FETCH):
                        yield from batch

                events_file = write_atomic(Path(tmp) / "events.jsonl", reader.lines(rows(), results))
            forms = reaction_forms(reader.reactions)
            write_atomic(Path(tmp) / "forms.jsonl",
                         (json.dumps({"name": k, "form": v}, ensure_ascii=False) + "\n" for k, v in forms.items()))
            cols = "{" + ", ".join(f"'{k}': '{v}'" for k, v in _EVENT_COLUMNS.items()) + "}"
            con.execute(f"CREATE TABLE ev AS SELECT * FROM read_json({_sql_str(events_file)}, "
                        f"format = 'newline_delimited', columns = {cols})")
            con.execute(f"CREATE TABLE rmap AS SELECT * FROM read_json({_sql_str(Path(tmp) / 'forms.jsonl')}, "
                        "format = 'newline_delimited', columns = {'name': 'VARCHAR', 'form': 'VARCHAR'})")
            con.execute(_PAIRS_SQL)
            summary.n_pairs = int(con.execute("SELECT count(*) FROM pairs").fetchone()[0])
            out.mkdir(parents=True, exist_ok=True)
            for name, options in (("pairs.csv", "FORMAT CSV, HEADER true"), ("pairs.parquet", "FORMAT PARQUET")):
                with atomic_path(out / name, force=force) as tmp_file:
                    try:
                        con.execute(f"COPY pairs TO {_sql_str(tmp_file)} ({options})")
                    except duckdb.IOException as exc:
                        raise OSError(str(exc)) from None
            shown = con.execute(f"SELECT * FROM pairs LIMIT {int(max_html_pairs)}")
            names = [d[0] for d in shown.description]
            pairs = [dict(zip(names, r)) for r in shown.fetchall()]
        finally:
            con.close()
    if summary.n_pairs > len(pairs):
        summary.notes.append(f"warning: pairs.html shows the first {len(pairs)} of {summary.n_pairs} pairs "
                             "(by ADE events); pairs.csv and pairs.parquet hold them all")
    page = render_pairs_html(pairs, _page_meta(run, manifest, summary, include_negated, include_speculated))
    write_atomic(out / "pairs.html", page, force=force)
    return summary


def _page_meta(run: Path, manifest: dict[str, Any], summary: PairSummary, include_negated: bool,
               include_speculated: bool) -> dict[str, Any]:
    return {
        "run": run.name or str(run),
        "model": manifest.get("model"),
        "drugs": manifest.get("drugs"),
        "records": summary.n_records,
        "events": summary.n_events,
        "events_negated_excluded": summary.n_events_negated,
        "events_speculated_excluded": summary.n_events_speculated,
        "events_without_pair": summary.n_events_without_pair,
        "pairs": summary.n_pairs,
        "batch_errors": summary.n_batch_errors,
        "include_negated": include_negated,
        "include_speculated": include_speculated,
    }
