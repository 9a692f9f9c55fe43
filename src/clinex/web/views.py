"""What the web page shows, built from the task pipelines' results (no task logic here).

Each function takes what a task's one pipeline returned (:mod:`clinex.pv.pipeline`,
:func:`clinex.rob.assess`, :func:`clinex.cohort.screen`) and lays it out for the page
and the downloads: every offset is a character offset into the text the user gave
(half-open, in Unicode code points: Python ``str`` indices), never into a sentence.

- PV: :func:`pv_document` (the record, its sentences with the indices of their events,
  the event counts (asserted events; negated ones apart: :mod:`clinex.pv.counts`), the
  event table of :data:`PV_TABLE_COLUMNS`, normalised drug names) and :func:`pv_csv`
  (that table as CSV).
- RoB: :func:`rob_labels` (row labels of the traffic-light plot and robvis CSV).
- Cohort: :func:`cohort_view` (the patient's records with their dates, the decisions).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Any

__all__ = ["PV_TABLE_COLUMNS", "pv_document", "pv_csv", "normalised_drug", "rob_labels", "cohort_view"]

#: Columns of the PV event table (page and CSV download), one row per event.
#: ``record`` is the id of the event's sentence record, the id the PHEE JSON download
#: gives it (``text_1``, ``text_2``... for split text; a JSON-lines record's own id), and
#: ``sentence_start`` / ``sentence_end`` that sentence's offsets into the whole text
#: (code points, half-open; the page's sentence boxes). ``event`` numbers the events
#: of the whole text (``E1``, ``E2``... on the page). ``subject`` holds the Subject main argument and, after "; ", its sub-arguments
#: (``Age: 45-year-old``); ``drug`` / ``dose`` / ``route`` are the Treatment's
#: ``Drug`` / ``Dosage`` / ``Route`` sub-arguments, and the Combination drugs;
#: ``normalised_drug`` the gazetteer names of the drugs (see :func:`normalised_drug`).
PV_TABLE_COLUMNS = (
    "record", "sentence_start", "sentence_end", "event", "event_type", "trigger", "trigger_probability", "subject", "treatment",
    "drug", "dose", "route", "effect", "negated", "speculated", "severity", "dechallenge", "rechallenge",
    "normalised_drug",
)

_JOIN = " | "  # between several arguments of one role in one table cell


@lru_cache(maxsize=4096)
def normalised_drug(text: str) -> dict[str, str] | None:
    """The gazetteer entry of a drug mention, or None when the gazetteer does not know it.

    Uses ``drug-named-entity-recognition`` (Fast Data Science: DrugBank, MeSH and NHS
    names, exact case-insensitive match of one- and two-token names), the same
    gazetteer as the PV models' drug features (:func:`clinex.pv.features.drug_flags`),
    on the tokens of :func:`clinex.pv.features.tokenize` (:func:`clinex.pv.surface.drug_entries`). Only the first drug found is
    returned (a Drug argument names one drug).

    Parameters
    ----------
    text : str
        The text of one Drug argument (``"amoxicillin"``, ``"Tylenol"``).

    Returns
    -------
    dict or None
        ``{"name", "drugbank_id", "mesh_tree"}`` (``""`` where the gazetteer has none;
        ``mesh_tree`` is the drug's own first MeSH tree number: the gazetteer's
        ``mesh_id`` is a pharmacological-action class shared by many drugs, so it is not shown),
        e.g. ``{"name": "Warfarin", "drugbank_id": "DB00682", "mesh_tree": "D03.383.663.283.446.520.914"}``
        for ``"Tylenol"``.
    """
    from clinex.pv.surface import drug_entries

    for data in drug_entries(text):
        name = data.get("name")
        if name:
            return {"name": str(name), "drugbank_id": str(data.get("drugbank_id") or ""),
                    "mesh_tree": str((data.get("mesh_tree") or [""])[0])}
    return None


def _texts(args: Iterable[Any]) -> str:
    return _JOIN.join(a.span.text for a in args)


def _offsets(span: Any) -> tuple[tuple[int, int], ...]:
    return tuple((f.start, f.end) for f in span.fragments)


def _drug_args(ev: Any) -> list[Any]:
    """The Treatment's Drug sub-arguments, then the Combination drugs at other offsets."""
    drugs = [a for a in ev.sub_arguments.get("Treatment", ()) if a.role == "Drug"]
    seen = {_offsets(d.span) for d in drugs}
    for c in ev.combinations:
        for d in c.drugs:
            if _offsets(d.span) not in seen:
                seen.add(_offsets(d.span))
                drugs.append(d)
    return drugs


def _attribute(ev: Any, name: str) -> str:
    att = ev.attribute(name)
    if att is None:
        return ""
    return "yes" if att.value is True else str(att.value)


def _event_row(record_id: str, span: tuple[int, int], k: int, ev: Any) -> dict[str, Any]:
    subs = ev.sub_arguments
    subject = _texts(ev.main("Subject"))
    details = "; ".join(f"{a.role}: {a.span.text}" for a in subs.get("Subject", ()))
    subject = "; ".join(x for x in (subject, details) if x)
    drugs = _drug_args(ev)
    names = []
    for d in drugs:
        n = normalised_drug(d.span.text)
        if n is not None and n["name"] not in names:
            names.append(n["name"])
    treat = [a for a in subs.get("Treatment", ())]
    return {
        "record": record_id,
        "sentence_start": span[0],
        "sentence_end": span[1],
        "event": k,
        "event_type": ev.event_type,
        "trigger": ev.trigger.text,
        "trigger_probability": ev.score,
        "subject": subject,
        "treatment": _texts(ev.main("Treatment")),
        "drug": _JOIN.join(d.span.text for d in drugs),
        "dose": _texts(a for a in treat if a.role == "Dosage"),
        "route": _texts(a for a in treat if a.role == "Route"),
        "effect": _texts(ev.main("Effect")),
        "negated": _attribute(ev, "Negated"),
        "speculated": _attribute(ev, "Speculated"),
        "severity": _attribute(ev, "Severity"),
        "dechallenge": _attribute(ev, "Dechallenge"),  # resolved after withdrawal (clinex.pv.challenge)
        "rechallenge": _attribute(ev, "Rechallenge"),  # recurred on re-exposure
        "normalised_drug": _JOIN.join(names),
    }


def pv_document(whole: Any, sentences: Sequence[tuple[int, int, Any]]) -> dict[str, Any]:
    """The page's view of one PV input (pasted text, a .txt file or one JSON-lines record).

    Parameters
    ----------
    whole : SentenceEvents
        The record of the whole input, offsets into its text
        (:func:`clinex.pv.pipeline.extract_text_sentences`).
    sentences : sequence of (int, int, SentenceEvents)
        ``(start, end, sentence record)`` of each sentence in ``whole.text``, in order,
        as the same function returns them; the whole record's events are theirs, in
        the same order.

    Returns
    -------
    dict
        ``record`` (PHEE JSON of ``whole``: offsets into the text), ``sentences``
        (``{"id", "start", "end", "event_probability", "events", "counts"}``: offsets
        into the text, ``events`` the indices of the sentence's events in
        ``record.annotations[0].events`` (every event, negated ones too), ``counts``
        the sentence's :func:`clinex.pv.counts.event_counts`), ``counts`` (the same for
        the whole record: ``n_events``, ``n_adverse``, ``n_therapeutic`` count asserted
        events only, ``n_*_negated`` the negated ones), ``table`` (one row per event, keys
        :data:`PV_TABLE_COLUMNS`), ``drugs`` (``{"start", "end", "text", "name",
        "drugbank_id", "mesh_tree"}`` for each Drug argument the gazetteer knows,
        offsets into the text), ``pairs`` (the record's drug -> reaction pairs,
        :func:`clinex.pv.pairs.record_pairs`, as JSON).
    """
    from clinex.pv.surface import event_counts, record_pairs, to_phee_dict

    out_sentences = []
    owners: list[tuple[str, tuple[int, int]]] = []  # per event of ``whole``: its sentence's id and offsets
    k = 0
    for start, end, item in sentences:
        n = len(item.events)
        out_sentences.append({"id": item.id, "start": start, "end": end,
                              "event_probability": item.event_probability, "events": list(range(k, k + n)),
                              "counts": event_counts(item.events)})
        owners += [(item.id, (start, end))] * n
        k += n
    if k != len(whole.events):  # the pipeline's contract; a mismatch is a bug, not bad input
        raise RuntimeError(f"{len(whole.events)} events in the record, {k} in its sentences")
    drugs: dict[tuple[int, int], dict[str, Any]] = {}
    for ev in whole.events:
        for d in _drug_args(ev):
            n = normalised_drug(d.span.text)
            if n is not None:
                drugs.setdefault((d.span.start, d.span.end), {"start": d.span.start, "end": d.span.end,
                                                              "text": d.span.text, **n})
    return {
        "id": whole.id,
        "record": to_phee_dict(whole),
        "sentences": out_sentences,
        "counts": event_counts(whole.events),
        "table": [_event_row(rid, span, i + 1, ev) for i, ((rid, span), ev) in enumerate(zip(owners, whole.events))],
        "drugs": sorted(drugs.values(), key=lambda d: (d["start"], d["end"])),
        "pairs": [p.model_dump(mode="json") for p in record_pairs(whole)],
    }


def pv_csv(rows: Iterable[dict[str, Any]]) -> str:
    """The event table as CSV (header :data:`PV_TABLE_COLUMNS`, ``\\n`` line ends, UTF-8 text).

    A missing value (no trigger probability) is an empty cell.
    """
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(PV_TABLE_COLUMNS)
    for r in rows:
        w.writerow(["" if r[c] is None else r[c] for c in PV_TABLE_COLUMNS])
    return buf.getvalue()


def rob_labels(assessments: Sequence[Any]) -> list[str]:
    """Row labels of the traffic-light plot and robvis CSV: document ids, repeated ones
    numbered ``trial``, ``trial-2``, ... (the names ``clinex rob assess`` gives its outputs,
    :class:`clinex.rob.report.OutputNamer`)."""
    seen: dict[str, int] = {}
    labels = []
    used: set[str] = set()
    for a in assessments:
        base = a.document_id
        n = seen.get(base, 0) + 1
        label = base if n == 1 else f"{base}-{n}"
        while label in used:
            n += 1
            label = f"{base}-{n}"
        seen[base] = n
        used.add(label)
        labels.append(label)
    return labels


def cohort_view(patient: Any, decisions: dict[str, Any], model: str, warning: str | None) -> dict[str, Any]:
    """The page's view of one screened patient.

    Parameters
    ----------
    patient : Patient
    decisions : dict of str to Decision
        :func:`clinex.cohort.screen`'s result for ``patient``.
    model : str
        The cohort model's versioned id.
    warning : str or None
        :func:`clinex.cohort.screen.date_warning` of the patient.

    Returns
    -------
    dict
        ``patient`` (id), ``source``, ``model``, ``now`` (ISO date of the latest record
        or None), ``warning``, ``text`` (the whole patient text), ``records``
        (``{"start", "end", "date"}``, offsets into ``text``) and ``decisions``
        (:func:`clinex.cohort.screen.decisions_to_dict`: evidence offsets into ``text``).
    """
    from clinex.cohort.surface import decisions_to_dict

    return {
        "patient": patient.id,
        "source": patient.source,
        "model": model,
        "now": patient.now.isoformat() if patient.now else None,
        "warning": warning,
        "text": patient.text,
        "records": [{"start": r.start, "end": r.end, "date": r.date.isoformat() if r.date else None}
                    for r in patient.records],
        "decisions": decisions_to_dict(decisions),
    }
