"""Shared fixtures: corpus locations and an in-process CLI runner."""

from __future__ import annotations

import io
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"


@dataclass
class CliResult:
    """What one CLI call did: exit status and captured streams."""

    code: int
    stdout: str
    stderr: str


@pytest.fixture
def shared_data() -> Path:
    """../shared/data, or skip when this checkout has none beside it."""
    if not SHARED_DATA.is_dir():
        pytest.skip("../shared/data is not beside this checkout")
    return SHARED_DATA


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]):
    """Run ``clinex ARGS...`` in-process through the real entry point.

    Returns a function ``run(*args, stdin=None) -> CliResult``; the exit status is
    the one ``clinex.cli.main`` gives the shell (0 ok, 2 ClinexError, ...).
    """
    from clinex.cli import main

    def run(*args: str, stdin: str | None = None) -> CliResult:
        monkeypatch.setattr(sys, "argv", ["clinex", *map(str, args)])
        if stdin is not None:
            monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
        code = 0
        try:
            main()
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        out = capsys.readouterr()
        return CliResult(code, out.out, out.err)

    return run
