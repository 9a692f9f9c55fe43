"""The web server under load and abuse: a real uvicorn process on 127.0.0.1, called with httpx
(raw sockets where a client must stop sending mid-body).

Covers issue 13's web part: task work off the event loop (health stays fast, a full queue is
503 with Retry-After), the body limit (413 from Content-Length and while streaming, without
the server buffering the body), any filename (no 500, temporary folders always removed) and
one error shape for every failure.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from live_server import serving

LIMIT = 1024 * 1024  # the servers here refuse bodies above 1 MB
MB = 1024 * 1024

TRIAL = (
    "Methods\n\nParticipants were randomly assigned using a computer-generated random sequence. "
    "Allocation was concealed using sequentially numbered, opaque, sealed envelopes. "
    "Outcome assessors were blinded to the allocated intervention.\n"
)
HEAVY_TRIAL = TRIAL * 600  # ~130 KB: about a second of RoB work on one core
NOTE = (
    "Record date: 2071-03-10\n\nHPI: 62 yo man with DM2 and HTN here for follow up. Denies chest pain. "
    "Had an NSTEMI 2 weeks ago. Takes aspirin 81 mg daily. HbA1c 7.2%. Creatinine 1.1 mg/dL.\n"
)
PATIENT = (
    '<?xml version="1.0" encoding="UTF-8" ?>\n<PatientMatching>\n<TEXT><![CDATA[\n'
    + NOTE * 200
    + "]]></TEXT>\n<TAGS>\n</TAGS>\n</PatientMatching>\n"
).encode()
PV_TEXT = "A 45-year-old man developed rash after amoxicillin. He recovered fully. " * 150


@dataclass
class Server:
    """One uvicorn process serving ``clinex.web.app:create_app``."""

    proc: subprocess.Popen[bytes]
    base: str
    port: int
    tmp: Path  # the server's TMPDIR: its temporary upload folders go here

    def rss(self) -> int:
        """Resident set size of the server process, in bytes."""
        status = Path(f"/proc/{self.proc.pid}/status").read_text()
        return int(re.search(r"VmRSS:\s+(\d+) kB", status).group(1)) * 1024

    def temp_entries(self) -> list[str]:
        return sorted(os.listdir(self.tmp))


def _start(tmp: Path, **settings: int) -> Iterator[Server]:
    tmp.mkdir()
    env = {f"CLINEX_WEB_{k.upper()}": str(v) for k, v in settings.items()}
    with serving(tmp, env=env) as served:
        server = Server(served.proc, served.url, served.port, tmp)
        # warm up: load the models once, so timings below measure requests, not loading
        with httpx.Client(base_url=served.url, timeout=120) as c:
            assert c.post("/api/pv/extract", json={"text": "Rash.", "model": "crf"}).status_code == 200
            assert c.post("/api/rob/assess", params={"filename": "t.txt", "model": "cues"},
                          content=TRIAL.encode()).status_code == 200
            assert c.post("/api/cohort/screen", params={"filename": "p.xml"},
                          content=PATIENT).status_code == 200
        yield server


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """workers 2, queue 32, 1 MB bodies; 32 task requests per client (every client here is 127.0.0.1)."""
    yield from _start(tmp_path_factory.mktemp("web") / "tmp", max_upload=LIMIT, workers=2, queue=32, per_client=32)


@pytest.fixture(scope="module")
def small_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """One worker and no queue: a second task request at once is refused."""
    yield from _start(tmp_path_factory.mktemp("web-small") / "tmp", max_upload=LIMIT, workers=1, queue=0)


def assert_error_shape(resp: Any, status: int | None = None) -> dict:
    """The one error shape, with no server path or traceback in it; returns ``error``.

    ``resp`` is a response (httpx's, or the test client's) or an already decoded body."""
    if not isinstance(resp, dict):
        if status is not None:
            assert resp.status_code == status, resp.text
        assert resp.headers["content-type"].startswith("application/json")
        text, body = resp.text, resp.json()
    else:
        text, body = repr(resp), resp
    assert list(body) == ["error"], body
    err = body["error"]
    assert list(err) == ["code", "message", "field"], err
    assert re.fullmatch(r"CLX\d{3}", err["code"]) and err["message"].startswith(f"[{err['code']}] ")
    assert err["field"] is None or isinstance(err["field"], str)
    for leak in ("Traceback", "clinex-web-", str(Path(__file__).parents[2]), "/tmp/", ".py\""):
        assert leak not in text, text
    return err


# ----------------------------------------------------------------------------- 1. off the event loop


def _heavy(base: str, i: int) -> tuple[int, float]:
    with httpx.Client(base_url=base, timeout=300) as c:
        if i % 3 == 0:
            r = c.post("/api/rob/assess", params={"filename": "t.txt", "model": "cues"},
                       content=HEAVY_TRIAL.encode())
        elif i % 3 == 1:
            r = c.post("/api/pv/extract", json={"text": PV_TEXT, "model": "crf"})
        else:
            r = c.post("/api/cohort/screen", params={"filename": f"{i:03d}.xml"}, content=PATIENT)
    return r.status_code, time.monotonic()


@pytest.mark.wallclock
def test_health_p99_under_200_ms_while_20_heavy_requests_run(server: Server) -> None:
    with ThreadPoolExecutor(20) as pool, httpx.Client(base_url=server.base, timeout=30) as c:
        futures = [pool.submit(_heavy, server.base, i) for i in range(20)]
        time.sleep(0.3)  # let them all arrive
        latencies = []
        for _ in range(50):
            start = time.perf_counter()
            resp = c.get("/api/health")
            latencies.append(time.perf_counter() - start)
            assert resp.status_code == 200
            time.sleep(0.02)
        measured_until = time.monotonic()
        results = [f.result() for f in futures]
    assert [status for status, _ in results] == [200] * 20  # none lost, none 503 (queue 32)
    assert max(done for _, done in results) > measured_until  # the load lasted the whole measurement
    latencies.sort()
    p99 = latencies[int(0.99 * len(latencies))]  # nearest rank: with 50 calls, the slowest
    print(f"/api/health under load: p50 {latencies[25] * 1000:.0f} ms, p99 {p99 * 1000:.0f} ms")
    # issue 13 target 200 ms (measured 64-127 ms on this machine); the test allows 400 ms so that a
    # busy CI machine does not fail it, while a blocked event loop (seconds) still does
    assert p99 <= 0.400, [round(x * 1000) for x in latencies]


def test_full_queue_is_503_with_retry_after_before_the_body_is_read(small_server: Server) -> None:
    s = small_server
    release = threading.Event()

    def slow_body() -> Iterator[bytes]:  # holds the only slot until released
        yield TRIAL.encode()
        release.wait(30)
        yield TRIAL.encode()

    def first() -> httpx.Response:
        return httpx.post(s.base + "/api/rob/assess", params={"filename": "t.txt", "model": "cues"},
                          content=slow_body(), timeout=60)

    with ThreadPoolExecutor(1) as pool, httpx.Client(base_url=s.base, timeout=60) as c:
        held = pool.submit(first)
        time.sleep(0.5)
        try:
            busy = c.post("/api/rob/assess", params={"filename": "t.txt"}, content=TRIAL.encode())
            err = assert_error_shape(busy, 503)
            assert err["code"] == "CLX000" and "busy" in err["message"]
            assert int(busy.headers["retry-after"]) >= 1
            assert_error_shape(c.post("/api/pv/extract", json={"text": "Rash."}), 503)
            assert_error_shape(c.post("/api/cohort/screen", params={"filename": "p.xml"}, content=PATIENT), 503)
            assert c.get("/api/health").status_code == 200  # not a task request: never refused
        finally:
            release.set()
        assert held.result().status_code == 200
        resp = c.post("/api/rob/assess", params={"filename": "t.txt"}, content=TRIAL.encode())
        assert resp.status_code == 200  # the slot is free again


# ----------------------------------------------------------------------------- 2. body limit


def _read_response(sock: socket.socket, timeout: float = 30) -> tuple[int, dict[str, str], bytes]:
    """Read one HTTP/1.1 response (with Content-Length) from ``sock``."""
    sock.settimeout(timeout)
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, f"connection closed before a response: {data!r}"
        data += chunk
    head, body = data.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {k.strip().lower(): v.strip() for k, v in (line.split(":", 1) for line in lines[1:])}
    while len(body) < int(headers["content-length"]):
        chunk = sock.recv(65536)
        assert chunk
        body += chunk
    return status, headers, body


def _request_head(s: Server, target: str, extra: str) -> bytes:
    return (f"POST {target} HTTP/1.1\r\nHost: 127.0.0.1:{s.port}\r\n"
            f"Content-Type: application/octet-stream\r\n{extra}\r\n").encode()


ENDPOINTS = ["/api/rob/assess?filename=big.pdf", "/api/cohort/screen?filename=big.xml", "/api/pv/extract",
             "/api/rob/report?filename=big.pdf", "/api/pv/upload?filename=big.txt", "/api/cohort/patient",
             "/api/rob/plot"]


@pytest.mark.parametrize("target", ENDPOINTS)
def test_declared_content_length_over_limit_is_413_without_reading(server: Server, target: str) -> None:
    before_rss, before_tmp = server.rss(), server.temp_entries()
    with socket.create_connection(("127.0.0.1", server.port)) as sock:
        sock.sendall(_request_head(server, target, f"Content-Length: {300 * MB}\r\n"))
        sock.sendall(b"x" * 4096)  # a first piece of the 300 MB, then nothing
        status, headers, body = _read_response(sock)
    assert status == 413 and headers["connection"] == "close"
    err = assert_error_shape(json.loads(body))
    assert err["field"] == "body" and "1 MB" in err["message"]
    assert server.rss() - before_rss < 20 * MB
    assert server.temp_entries() == before_tmp


@pytest.mark.parametrize("target", ENDPOINTS)
def test_chunked_body_over_limit_is_413_while_streaming(server: Server, target: str) -> None:
    before_rss, before_tmp = server.rss(), server.temp_entries()
    got: list[tuple[int, dict[str, str], bytes]] = []
    sent = 0
    with socket.create_connection(("127.0.0.1", server.port)) as sock:
        sock.sendall(_request_head(server, target, "Transfer-Encoding: chunked\r\n"))
        reader = threading.Thread(target=lambda: got.append(_read_response(sock)), daemon=True)
        reader.start()
        piece = b"%x\r\n%s\r\n" % (64 * 1024, b"y" * 64 * 1024)
        try:
            while not got and sent < 200 * MB:  # would be 200 MB if the server kept reading
                sock.sendall(piece)
                sent += 64 * 1024
        except OSError:  # the server closed the connection after its 413
            pass
        reader.join(timeout=30)
    assert got, "no response"
    status, headers, body = got[0]
    assert status == 413 and headers["connection"] == "close"
    assert assert_error_shape(json.loads(body))["field"] == "body"
    assert sent < 32 * MB  # refused soon after the 1 MB limit (the rest is socket buffers)
    assert server.rss() - before_rss < 20 * MB
    time.sleep(0.2)  # the handler's cleanup runs as the request ends
    assert server.temp_entries() == before_tmp


def test_chunked_body_under_limit_is_accepted(server: Server) -> None:
    def body() -> Iterator[bytes]:
        data = TRIAL.encode()
        for i in range(0, len(data), 50):
            yield data[i : i + 50]

    resp = httpx.post(server.base + "/api/rob/assess", params={"filename": "t.txt", "model": "cues"},
                      content=body(), timeout=60)
    assert resp.status_code == 200 and resp.json()["source"] == "t.txt"
    # and exactly at the limit by Content-Length: accepted (then refused as a bad file, not as too large)
    resp = httpx.post(server.base + "/api/rob/assess", params={"filename": "t.pdf"},
                      content=b"\0" * LIMIT, timeout=60)
    assert assert_error_shape(resp, 422)["code"] != "CLX000"


# ----------------------------------------------------------------------------- 3. any filename

NAMES = [
    "trial\x00.txt",
    "\x00",
    "x" * 300 + ".txt",
    "é" * 300 + ".txt",
    "../../../etc/passwd",
    "a/b\\c.txt",
    "dir/",
    "..",
    "",
    "-rf.txt",
    "con.txt",
    "tab\tnew\nline.txt",
]


@pytest.mark.parametrize("name", NAMES, ids=repr)
@pytest.mark.parametrize("endpoint,content", [
    ("/api/rob/assess", TRIAL.encode()),
    ("/api/rob/assess", b""),  # an error after the upload: the folder must go too
    ("/api/cohort/screen", PATIENT),
    ("/api/cohort/screen", b"<not xml"),
])
def test_any_filename_is_answered_and_leaves_no_temporary_files(
    server: Server, name: str, endpoint: str, content: bytes
) -> None:
    before = server.temp_entries()
    resp = httpx.post(server.base + endpoint, params={"filename": name, "model": "cues"} if "rob" in endpoint
                      else {"filename": name}, content=content, timeout=60)
    assert resp.status_code in {200, 422}, resp.text
    if resp.status_code == 422:
        err = assert_error_shape(resp)
        assert "\x00" not in err["message"]
    elif "rob" in endpoint:
        source = resp.json()["source"]
        assert "/" not in source and "\\" not in source and "\x00" not in source and len(source) <= 255
    assert server.temp_entries() == before


def test_non_utf8_and_raw_filenames(server: Server) -> None:
    before = server.temp_entries()
    for query in ("filename=%FF%FEtrial.txt", "filename=%C0%AF..%C0%AFx.txt", "filename=a%00%00.txt",
                  "filename=" + "%E9" * 300 + ".txt", "filename=a%2F..%2F..%2Fb.txt"):
        resp = httpx.post(f"{server.base}/api/rob/assess?model=cues&{query}", content=TRIAL.encode(), timeout=60)
        assert resp.status_code == 200, (query, resp.text)
        assert resp.json()["source"].endswith(".txt")
    assert server.temp_entries() == before


# ----------------------------------------------------------------------------- 4. one error shape


def test_every_failure_has_the_one_error_shape(server: Server) -> None:
    with httpx.Client(base_url=server.base, timeout=60) as c:
        assert assert_error_shape(c.get("/nosuch"), 404)["code"] == "CLX001"
        assert assert_error_shape(c.post("/api/health"), 405)["code"] == "CLX001"
        assert_error_shape(c.get("/api/pv/extract"), 405)
        err = assert_error_shape(c.post("/api/pv/extract", json={"model": "crf"}), 422)
        assert err["field"] == "text" and "Field required" in err["message"]
        err = assert_error_shape(c.post("/api/pv/extract", content=b"{not json",
                                        headers={"content-type": "application/json"}), 422)
        assert err["code"] == "CLX001"
        err = assert_error_shape(c.post("/api/pv/extract", json={"text": "x", "model": "/etc"}), 422)
        assert (err["code"], err["field"]) == ("CLX006", "model")
        err = assert_error_shape(c.post("/api/rob/assess", content=b"x"), 422)
        assert err["field"] == "filename"
        err = assert_error_shape(c.post("/api/rob/assess", params={"filename": "t.pdf"}, content=b"%PDF-1.4 junk"),
                                 422)
        assert "t.pdf" in err["message"]
        err = assert_error_shape(c.post("/api/rob/assess", params={"filename": "t.docx"}, content=b"x"), 422)
        assert "t.docx" in err["message"]
        err = assert_error_shape(c.post("/api/rob/assess", params={"filename": "t.pdf"},
                                        content=b"x" * (LIMIT + 1)), 413)
        assert err["field"] == "body"


def test_unexpected_error_is_500_in_the_one_shape(monkeypatch: pytest.MonkeyPatch) -> None:
    from fastapi.testclient import TestClient

    from clinex.web import app as web

    def boom(*_: object) -> dict:
        raise RuntimeError(f"secret detail at {Path(__file__)}")

    monkeypatch.setattr(web, "_rob_work", boom)
    client = TestClient(web.create_app(), raise_server_exceptions=False)
    resp = client.post("/api/rob/assess", params={"filename": "t.txt"}, content=TRIAL.encode())
    err = assert_error_shape(resp, 500)
    assert err["code"] == "CLX000" and "secret" not in err["message"] and "RuntimeError" in err["message"]


def test_settings_are_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    from clinex.errors import InputError
    from clinex.web.app import create_app

    with pytest.raises(InputError, match="at least 1"):
        create_app(workers=0)
    monkeypatch.setenv("CLINEX_WEB_QUEUE", "many")
    with pytest.raises(InputError, match="CLINEX_WEB_QUEUE"):
        create_app()
