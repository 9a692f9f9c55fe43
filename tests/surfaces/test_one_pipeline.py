"""One pipeline per task: the Python API, the CLI, the web API and ``clinex batch`` give
the same results for the same input, with offsets into the text the user gave.

PV has two input units (``clinex.pv.pipeline``): a JSON-lines **record** goes to the
model whole (never split), **plain text** is split into sentences by
``clinex.text.split_sentences``. Each unit is fed through all four surfaces.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from live_server import live_server
from typer.testing import CliRunner

import clinex.cli as root
from clinex.batch import read_results, run_batch
from clinex.pv.formats.phee_json import parse_phee_dict, read_phee_json
from clinex.pv.pipeline import extract, extract_records, sentence_pieces, shift_event

TEXTS = {
    "two": "A 54-year-old man treated with amiodarone developed thyrotoxicosis. Rash occurred after penicillin.",
    "blank": "",
    "spaces": "  \n ",
    "linebreak": "Nausea developed after metformin.\nIt resolved on stopping.",
}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real uvicorn process serving ``clinex.web.app:create_app``; yields its base URL."""
    with live_server(tmp_path_factory.mktemp("web")) as base:
        yield base


def _offsets(span: Any) -> tuple[tuple[int, int], ...]:
    return tuple((f.start, f.end) for f in span.fragments)


def _norm(item: Any) -> tuple[str, str, tuple]:
    """(id, text, events as (type, trigger offsets, sorted (role, offsets))) of a SentenceEvents."""
    for ev in item.events:  # every span points into the record's own text
        for span in (ev.trigger, *(a.span for a in ev.arguments)):
            for f in span.fragments:
                assert item.text[f.start : f.end] == f.text
    events = tuple(
        (ev.event_type, _offsets(ev.trigger), tuple(sorted((a.role, _offsets(a.span)) for a in ev.arguments)))
        for ev in item.events
    )
    return item.id, item.text, events


def _write_jsonl(path: Path) -> Path:
    path.write_text("".join(json.dumps({"id": k, "text": t}) + "\n" for k, t in TEXTS.items()), "utf-8")
    return path


# ------------------------------------------------------------------------------ PV


def test_pv_record_unit_is_identical_on_all_four_surfaces(tmp_path: Path, server: str) -> None:
    src = _write_jsonl(tmp_path / "in.jsonl")
    records = list(TEXTS.items())

    api = [_norm(i) for i in extract_records(records, model="crf")]

    out = tmp_path / "out.json"
    res = CliRunner().invoke(root.app, ["pv", "extract", "-i", str(src), "-o", str(out), "--model", "crf"])
    assert res.exit_code == 0, res.output
    cli = [_norm(i) for i in read_phee_json(out)]

    web = []
    with httpx.Client(base_url=server, timeout=120) as c:
        for rid, text in records:
            r = c.post("/api/pv/extract", json={"text": text, "model": "crf", "unit": "record"})
            assert r.status_code == 200, r.text
            item = parse_phee_dict(r.json()["record"])
            web.append(_norm(item.model_copy(update={"id": rid})))

    summary = run_batch("pv", [src], tmp_path / "batch", model="crf")
    assert not summary.errors
    rows = read_results(tmp_path / "batch", "SELECT id, phee_json FROM results")
    by_id = {rid: _norm(parse_phee_dict(json.loads(js))) for rid, js in rows}
    batch = [by_id[rid] for rid in TEXTS if rid in by_id]

    assert len(api) == len(cli) == len(web) == len(rows) == len(TEXTS)  # blank texts give a record
    assert cli == api
    assert web == api
    assert batch == api
    assert any(events for _, _, events in api)  # the comparison is not vacuous


def _whole(rid: str, text: str, items: list[Any]) -> tuple[str, str, tuple]:
    """Per-sentence records of plain ``text`` (CLI/batch on a .txt) -> events with offsets into ``text``."""
    from clinex.pv.types import SentenceEvents

    pieces = sentence_pieces(text)
    assert [i.text for i in items] == [p for _, _, p in pieces]
    events = [shift_event(ev, start, text) for (start, _, _), it in zip(pieces, items) for ev in it.events]
    return _norm(SentenceEvents(id=rid, text=text, events=tuple(events)))


def test_pv_plain_text_unit_is_identical_on_all_four_surfaces(tmp_path: Path, server: str) -> None:
    from clinex.pv.types import SentenceEvents

    for rid, text in TEXTS.items():
        api = _norm(SentenceEvents(id=rid, text=text, events=tuple(extract(text, model="crf"))))

        src = tmp_path / f"{rid}.txt"
        src.write_text(text, "utf-8")
        out = tmp_path / f"{rid}.out.json"
        res = CliRunner().invoke(root.app, ["pv", "extract", "-i", str(src), "-o", str(out), "--model", "crf"])
        assert res.exit_code == 0, res.output
        cli_items = read_phee_json(out)
        assert [i.id for i in cli_items] == [f"{rid}_{k}" for k in range(1, len(cli_items) + 1)]
        cli = _whole(rid, text, cli_items)

        r = httpx.post(server + "/api/pv/extract", json={"text": text, "model": "crf"}, timeout=120)
        assert r.status_code == 200, r.text
        web = _norm(parse_phee_dict(r.json()["record"]).model_copy(update={"id": rid}))

        summary = run_batch("pv", [src], tmp_path / f"batch_{rid}", model="crf")
        assert not summary.errors
        rows = read_results(tmp_path / f"batch_{rid}", "SELECT id, phee_json FROM results ORDER BY id")
        batch_items = [parse_phee_dict(json.loads(js)) for _, js in rows]
        assert [i.id for i in batch_items] == [i.id for i in cli_items]  # blank text: one empty record
        batch = _whole(rid, text, batch_items)

        assert cli == api, rid
        assert web == api, rid
        assert batch == api, rid
