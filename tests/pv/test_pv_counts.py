"""Event counts mean what they say (issue 23, item 6): asserted events, negated ones apart.

``clinex batch pv`` columns, the ``clinex pv extract`` summary line and the web view all
count with :func:`clinex.pv.counts.event_counts`; ``WHERE n_adverse > 0`` never selects
"No hepatotoxicity was observed."
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clinex.batch import TASKS, read_results, run_batch
from clinex.pv.counts import COUNT_COLUMNS, event_counts, is_asserted
from clinex.pv.types import Attribute, Event
from clinex.text import Span

TEXT = "Rash may follow the drug."


def _event(etype: str, *flags: str, cue: bool = True) -> Event:
    trig = Span.from_offsets(TEXT, (5, 8))
    at = Span.from_offsets(TEXT, (5, 8)) if cue else None
    attrs = tuple(Attribute(name=f, value=True, cue=at) for f in flags)
    return Event(event_type=etype, trigger=trig, attributes=attrs)


ADE, PTE = "Adverse_event", "Potential_therapeutic_event"


def test_counts_by_hand() -> None:
    events = [
        _event(ADE),                             # asserted
        _event(ADE, "Speculated"),               # asserted, speculated
        _event(ADE, "Negated"),                  # negated
        _event(ADE, "Negated", "Speculated"),    # negated (a hedged negation is still negated)
        _event(ADE, "Negated", cue=False),       # negated without a cue (an LLM answer, a gold file)
        _event(PTE),                             # asserted
        _event(PTE, "Negated"),                  # negated
        _event(PTE, "Speculated"),               # asserted, speculated
        _event(ADE, "Dechallenge"),              # asserted, resolved after withdrawal
        _event(ADE, "Negated", "Rechallenge"),   # negated: no rechallenge counted
        _event(ADE, "Rechallenge"),              # asserted, recurred on re-exposure
    ]
    assert event_counts(events) == {
        "n_events": 6, "n_events_negated": 5,
        "n_adverse": 4, "n_adverse_negated": 4, "n_adverse_speculated": 1,
        "n_therapeutic": 2, "n_therapeutic_negated": 1, "n_therapeutic_speculated": 1,
        "n_dechallenge": 1, "n_rechallenge": 1,
    }
    assert list(event_counts([])) == list(COUNT_COLUMNS) and set(event_counts([]).values()) == {0}
    # a Severity attribute or a Negated attribute with another value is not a negation
    sev = Event(event_type=ADE, trigger=Span.from_offsets(TEXT, (5, 8)),
                attributes=(Attribute(name="Severity", value="High"), Attribute(name="Negated", value="False")))
    assert is_asserted(sev) and event_counts([sev])["n_adverse"] == 1


def test_batch_columns_are_the_count_columns_in_order() -> None:
    cols = list(TASKS["pv"].columns)
    assert cols[cols.index("text") + 1 : cols.index("model")] == list(COUNT_COLUMNS)


RECORDS = [
    ("neg", "No hepatotoxicity was observed."),
    ("ade", "Hepatotoxicity developed after isoniazid therapy."),
    ("spec", "Isoniazid may have caused the hepatotoxicity."),
    ("pte", "Metoprolol improved the tremor."),
    ("dech", "The agranulocytosis resolved after clozapine was withdrawn."),
]


@pytest.fixture(scope="module")
def batch_out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("counts")
    src = folder / "in.jsonl"
    src.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in RECORDS), encoding="utf-8")
    summary = run_batch("pv", [src], folder / "out")  # the default model, as a user runs it
    assert summary.n_rows == 5 and not summary.errors
    return folder / "out"


def test_where_n_adverse_selects_only_asserted_adverse_events(batch_out: Path) -> None:
    # the user's query: records that report an adverse event
    query = "SELECT id FROM results WHERE {} ORDER BY id"
    assert read_results(batch_out, query.format("n_adverse > 0")) == [("ade",), ("dech",), ("spec",)]
    # stated without a hedge
    assert read_results(batch_out, query.format("n_adverse - n_adverse_speculated > 0")) == [("ade",), ("dech",)]
    assert read_results(batch_out, query.format("n_dechallenge > 0")) == [("dech",)]
    # the negated sentence is counted, in its own column
    assert read_results(batch_out, query.format("n_adverse_negated > 0")) == [("neg",)]
    cols = ", ".join(COUNT_COLUMNS)
    rows = {r[0]: r[1:] for r in read_results(batch_out, f"SELECT id, {cols} FROM results")}
    #                n_events, _neg, n_adverse, _neg, _spec, n_therapeutic, _neg, _spec, n_dechallenge, n_rechallenge
    assert rows == {
        "neg": (0, 1, 0, 1, 0, 0, 0, 0, 0, 0),
        "ade": (1, 0, 1, 0, 0, 0, 0, 0, 0, 0),
        "spec": (1, 0, 1, 0, 1, 0, 0, 0, 0, 0),
        "pte": (1, 0, 0, 0, 0, 1, 0, 0, 0, 0),
        "dech": (1, 0, 1, 0, 0, 0, 0, 0, 1, 0),
    }
    # every event of the record is in one of the two: asserted + negated = the PHEE JSON's events
    got = read_results(batch_out, "SELECT id, n_events, n_events_negated, phee_json FROM results")
    for rid, n, n_neg, doc in got:
        assert n + n_neg == len(json.loads(doc)["annotations"][0]["events"]), rid


def test_extract_summary_line_counts_asserted_events(cli, tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in RECORDS), encoding="utf-8")
    out = tmp_path / "out.json"
    res = cli("pv", "extract", "--input", src, "--output", out)
    assert res.code == 0, res.stderr
    assert f"5 records, 4 events asserted (3 adverse, 1 therapeutic), 1 negated -> {out}\n" in res.stderr


def test_web_view_counts_asserted_events() -> None:
    from fastapi.testclient import TestClient

    from clinex.web.app import create_app

    text = "No hepatotoxicity was observed. Hepatotoxicity developed after isoniazid therapy."
    with TestClient(create_app()) as client:
        resp = client.post("/api/pv/extract", json={"text": text})
    assert resp.status_code == 200, resp.text
    body = resp.json()
    zero = dict.fromkeys(COUNT_COLUMNS, 0)
    negated = {"n_events_negated": 1, "n_adverse_negated": 1}
    assert body["counts"] == {**zero, "n_events": 1, "n_adverse": 1, **negated}
    assert [s["counts"] for s in body["sentences"]] == [
        {**zero, **negated}, {**zero, "n_events": 1, "n_adverse": 1}]
    # the events themselves are all still there, the negated one included
    assert [s["events"] for s in body["sentences"]] == [[0], [1]]


def test_batch_rows_carry_the_records_pairs(batch_out: Path) -> None:
    """Issue 23 item 1: each batch row holds the record's drug -> reaction pairs."""
    got = dict(read_results(batch_out, "SELECT id, pairs_json FROM results"))
    dech = json.loads(got["dech"])
    assert [(p["drug"], p["reaction"], p["event_type"], p["dechallenge"], p["negated"]) for p in dech] == [
        ("clozapine", "agranulocytosis", "Adverse_event", True, False)]
    assert [(p["drug"], p["reaction"], p["negated"]) for p in json.loads(got["neg"])] == []
