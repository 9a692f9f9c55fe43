"""A real ``clinex`` web server for tests: ``clinex serve`` in a child process on a free loopback port.

The one way the test suite starts a server (tests/test_one_pipeline*.py, test_web_browser.py,
test_web_reliability.py); ``bench/web_load.py`` has its own, since bench scripts do not
import the tests.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass(frozen=True)
class Served:
    """A running server: its process, base URL and port."""

    proc: subprocess.Popen
    url: str
    port: int


@contextmanager
def serving(tmp: Path, *, env: dict[str, str] | None = None, timeout_s: float = 60.0) -> Iterator[Served]:
    """Run ``clinex serve --host 127.0.0.1 --port PORT`` (uvicorn with the app's own HTTP
    protocol and settings, as a user starts it) until the block ends.

    Parameters
    ----------
    tmp : Path
        The server's ``TMPDIR``.
    env : dict, optional
        Extra environment variables (``CLINEX_WEB_MAX_UPLOAD``, ``CLINEX_WEB_HEADER_TIMEOUT`` ...).
    timeout_s : float, default 60
        How long to wait for ``/api/health`` to answer 200.

    Raises
    ------
    RuntimeError
        If the server exits or has not answered within ``timeout_s`` seconds.
    """
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-c", "from clinex.cli import main; main()", "serve",
         "--host", "127.0.0.1", "--port", str(port), "--log-level", "warning"],
        env=dict(os.environ, TMPDIR=str(tmp), **(env or {})),
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                if httpx.get(base + "/api/health", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"server did not start (exit status {proc.poll()})")
            time.sleep(0.1)
        yield Served(proc, base, port)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@contextmanager
def live_server(tmp: Path, *, env: dict[str, str] | None = None, timeout_s: float = 60.0) -> Iterator[str]:
    """:func:`serving`, yielding only the base URL (``http://127.0.0.1:PORT``)."""
    with serving(tmp, env=env, timeout_s=timeout_s) as served:
        yield served.url
