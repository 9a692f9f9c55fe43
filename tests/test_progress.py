"""Progress when stderr is not a terminal: a plain line every few seconds (clinex.progress)."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

from clinex.progress import Progress


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def test_plain_lines_every_interval_with_count_percent_and_rate() -> None:
    out, clock = io.StringIO(), Clock()
    with Progress("extract", total=10, unit="records", stream=out, every_s=5, clock=clock) as bar:
        clock.t += 1
        bar.advance(2)  # 1 s in: below the interval, nothing printed
        assert out.getvalue() == ""
        clock.t += 4
        bar.advance(3)  # 5 s in
        clock.t += 2
        bar.advance(1)  # 2 s after the last line: nothing
        clock.t += 3
        bar.advance(4)  # 10 s in
    assert out.getvalue().splitlines() == [
        "extract: 5/10 records (50%), 1.0 records/s, 5.0 s",
        "extract: 10/10 records (100%), 1.0 records/s, 10.0 s",
        "extract: 10/10 records (100%), 1.0 records/s, 10.0 s",  # the closing line
    ]


def test_short_run_prints_nothing_and_unknown_total_prints_count_only() -> None:
    out, clock = io.StringIO(), Clock()
    with Progress("screen", total=3, unit="patients", stream=out, every_s=5, clock=clock) as bar:
        bar.advance(3)
    assert out.getvalue() == ""
    with Progress("batch pv", unit="partitions", stream=out, every_s=0, clock=clock) as bar:
        clock.t += 2
        bar.update(1, None)
    assert out.getvalue().splitlines() == [
        "batch pv: 1 partitions, 0.5 partitions/s, 2.0 s",
        "batch pv: 1 partitions, 0.5 partitions/s, 2.0 s",
    ]


def test_reset_starts_a_new_phase_and_disabled_prints_nothing(monkeypatch) -> None:
    out, clock = io.StringIO(), Clock()
    with Progress("reading", total=4, unit="reports", stream=out, every_s=0, clock=clock) as bar:
        clock.t += 1
        bar.advance(4)
        bar.reset("assessing", total=2)
        clock.t += 4
        bar.advance(1)
    assert out.getvalue().splitlines() == [
        "reading: 4/4 reports (100%), 4.0 reports/s, 1.0 s",
        "assessing: 1/2 reports (50%), 0.2 reports/s, 4.0 s",
        "assessing: 1/2 reports (50%), 0.2 reports/s, 4.0 s",
    ]
    quiet = io.StringIO()
    with Progress("x", total=1, stream=quiet, every_s=0, enabled=False, clock=clock) as bar:
        bar.advance()
    monkeypatch.setenv("CLINEX_PROGRESS", "0")
    with Progress("x", total=1, stream=quiet, every_s=0, clock=clock) as bar:
        bar.advance()
    assert quiet.getvalue() == ""


def test_cli_extract_reports_progress_lines_on_a_pipe(tmp_path: Path) -> None:
    """The user's path: ``clinex pv extract -i FILE -o OUT`` with stderr a pipe."""
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"id": f"r{i}", "text": "Rash after penicillin."}) + "\n" for i in range(5)))
    env = dict(os.environ, CLINEX_PROGRESS_EVERY="0")
    res = subprocess.run(
        [sys.executable, "-m", "clinex.cli", "pv", "extract", "-i", str(src), "-o", str(tmp_path / "o.json"),
         "--model", "crf", "--batch-size", "2"],
        capture_output=True, text=True, env=env, timeout=120,
    )
    assert res.returncode == 0, res.stderr
    lines = [ln.split(",")[0] for ln in res.stderr.splitlines() if ln.startswith("extract:")]
    assert lines == [
        "extract: 2/5 records (40%)", "extract: 4/5 records (80%)", "extract: 5/5 records (100%)",
        "extract: 5/5 records (100%)",
    ]
    assert len((tmp_path / "o.json").read_text().splitlines()) == 5

