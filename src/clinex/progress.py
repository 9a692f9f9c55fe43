"""Progress on stderr for every long-running verb, on a terminal or not.

On a terminal a rich progress bar is drawn (and removed when done). When stderr is
not a terminal (a log file, a pipe, a CI job, ``nohup``), rich would draw nothing, so
:class:`Progress` prints one plain line every few seconds instead::

    extract: 512/961 sentences (53%), 210.4 sentences/s, 2.4 s

and a last line at the end when at least one line was printed (a run shorter than
the interval prints nothing, so short commands keep a clean stderr).

The interval is ``every_s`` (default 5 s, or ``$CLINEX_PROGRESS_EVERY`` seconds);
``$CLINEX_PROGRESS=0`` turns progress off everywhere.
"""

from __future__ import annotations

import os
import sys
import time
from types import TracebackType
from typing import IO, Any

__all__ = ["Progress"]

_DEFAULT_EVERY_S = 5.0


class Progress:
    """A counter of done items that reports to stderr.

    Parameters
    ----------
    label : str
        What is being done (``"extract"``), the start of every line.
    total : int or None
        Items in all, if known (``None`` prints counts and rate only).
    unit : str, default "items"
        Plural name of the items (``"sentences"``, ``"patients"``).
    stream : file, optional
        Where to report (default ``sys.stderr`` at the time of the call).
    every_s : float, optional
        Seconds between plain lines when ``stream`` is not a terminal (default
        ``$CLINEX_PROGRESS_EVERY``, else 5).
    enabled : bool, default True
        False reports nothing (``--quiet``); ``$CLINEX_PROGRESS=0`` does the same.
    clock : callable, optional
        Monotonic clock in seconds (tests pass a fake one).

    Examples
    --------
    >>> with Progress("extract", total=3, unit="sentences", enabled=False) as bar:
    ...     bar.advance(3)
    >>> bar.done
    3
    """

    def __init__(
        self,
        label: str,
        total: int | None = None,
        *,
        unit: str = "items",
        stream: IO[str] | None = None,
        every_s: float | None = None,
        enabled: bool = True,
        clock: Any = time.monotonic,
    ) -> None:
        self.label = label
        self.total = total
        self.unit = unit
        self.stream = stream if stream is not None else sys.stderr
        if every_s is None:
            try:
                every_s = float(os.environ.get("CLINEX_PROGRESS_EVERY", _DEFAULT_EVERY_S))
            except ValueError:
                every_s = _DEFAULT_EVERY_S
        self.every_s = max(0.0, every_s)
        self.enabled = enabled and os.environ.get("CLINEX_PROGRESS", "1") != "0"
        self.clock = clock
        self.done = 0
        self.lines = 0
        self._bar: Any = None
        self._task: Any = None
        self._start = self._last = 0.0

    # ------------------------------------------------------------------ lifecycle
    def __enter__(self) -> "Progress":
        self._start = self._last = self.clock()
        if self.enabled and _is_terminal(self.stream):
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
            from rich.progress import Progress as RichProgress

            self._bar = RichProgress(
                TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                console=Console(file=self.stream), transient=True,
            )
            self._bar.__enter__()
            self._task = self._bar.add_task(self.label, total=self.total)
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._bar is not None:
            self._bar.__exit__(exc_type, exc, tb)
            self._bar = None
        elif self.enabled and self.lines and exc_type is None:
            self._print(self.clock())

    # ------------------------------------------------------------------ counting
    def advance(self, n: int = 1) -> None:
        """Count ``n`` more items done; print a line if the interval has passed."""
        self.done += n
        if self._bar is not None:
            self._bar.update(self._task, completed=self.done)
            return
        if not self.enabled:
            return
        now = self.clock()
        if now - self._last >= self.every_s:
            self._print(now)

    def update(self, done: int, total: int | None = None) -> None:
        """Set the count (and total) directly, e.g. from a callback ``(done, total)``."""
        if total is not None:
            self.total = total
            if self._bar is not None:
                self._bar.update(self._task, total=total)
        self.advance(done - self.done)

    def describe(self, label: str) -> None:
        """Change the label (a new phase: ``"reading"`` -> ``"assessing"``)."""
        self.label = label
        if self._bar is not None:
            self._bar.update(self._task, description=label)

    def reset(self, label: str, total: int | None = None) -> None:
        """Start a new phase: count from 0 under ``label`` (rate and time restart too)."""
        self.done = 0
        self.total = total
        self._start = self._last = self.clock()
        self.describe(label)
        if self._bar is not None:
            self._bar.reset(self._task, total=total)

    def line(self, now: float | None = None) -> str:
        """The plain progress line for the current count."""
        now = self.clock() if now is None else now
        elapsed = max(now - self._start, 1e-9)
        count = f"{self.done}/{self.total}" if self.total is not None else f"{self.done}"
        pct = f" ({100 * self.done / self.total:.0f}%)" if self.total else ""
        return f"{self.label}: {count} {self.unit}{pct}, {self.done / elapsed:.1f} {self.unit}/s, {elapsed:.1f} s"

    def _print(self, now: float) -> None:
        print(self.line(now), file=self.stream, flush=True)
        self.lines += 1
        self._last = now


def _is_terminal(stream: IO[str]) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False
