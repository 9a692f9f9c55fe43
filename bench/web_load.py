"""Load test of the web API: many concurrent clients against each JSON endpoint on loopback.

Starts ``clinex.web.app:create_app`` in a uvicorn process on 127.0.0.1 (default settings, or
``CLINEX_WEB_*`` from the environment), warms each endpoint up once, then for each endpoint
in turn runs ``--clients`` concurrent clients (httpx, asyncio), each sending one request after
another for ``--seconds`` seconds. Reported per endpoint: requests/s, p50/p99 latency, error
count (any status other than 200, or a transport error), and for the server process its peak
RSS (``VmHWM``) and RSS growth over the run (RSS after the last endpoint against RSS after the
warm-up, in percent). The last line printed is one JSON object with all figures.

Inputs are small, fixed and made here: one PV sentence (issue 14's target: 0 errors and p99
<= 2 s with 50 clients), a two-sentence trial report as text, a one-record n2c2 XML patient.

Usage::

    python bench/web_load.py                     # 50 clients, 60 s per endpoint
    python bench/web_load.py --seconds 20 --endpoints pv
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

PV_SENTENCE = "A 45-year-old man developed rash after amoxicillin 500 mg orally."
TRIAL = (
    "Methods\n\nParticipants were randomly assigned using a computer-generated random sequence. "
    "Allocation was concealed using sequentially numbered, opaque, sealed envelopes.\n"
)
PATIENT = (
    b'<?xml version="1.0" encoding="UTF-8" ?>\n<PatientMatching>\n<TEXT><![CDATA[\n'
    b"Record date: 2071-03-10\n\nHPI: 62 yo man with DM2 and HTN. Had an NSTEMI 2 weeks ago. "
    b"Takes aspirin 81 mg daily. HbA1c 7.2%. Creatinine 1.1 mg/dL.\n"
    b"]]></TEXT>\n<TAGS>\n</TAGS>\n</PatientMatching>\n"
)


def _endpoints(pv_model: str) -> dict[str, dict]:
    return {
        "pv": {"url": "/api/pv/extract", "json": {"text": PV_SENTENCE, "model": pv_model}},
        "rob": {"url": "/api/rob/assess", "params": {"filename": "trial.txt"}, "content": TRIAL.encode()},
        "cohort": {"url": "/api/cohort/screen", "params": {"filename": "p.xml"}, "content": PATIENT},
    }


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _status_kb(pid: int, key: str) -> int:
    text = Path(f"/proc/{pid}/status").read_text()
    return int(re.search(rf"{key}:\s+(\d+) kB", text).group(1))


class _RssSampler(threading.Thread):
    """Samples the server's RSS every 0.2 s (the peak also comes from ``VmHWM``)."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid = pid
        self.peak = 0
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                self.peak = max(self.peak, _status_kb(self.pid, "VmRSS"))
            except (OSError, AttributeError):
                return
            self.stop.wait(0.2)


async def _client(c: httpx.AsyncClient, spec: dict, until: float, lat: list[float], errors: list[str]) -> None:
    while time.monotonic() < until:
        start = time.perf_counter()
        try:
            r = await c.post(spec["url"], params=spec.get("params"), json=spec.get("json"),
                             content=spec.get("content"))
            ok = r.status_code == 200
            if not ok:
                errors.append(str(r.status_code))
        except httpx.HTTPError as exc:
            errors.append(type(exc).__name__)
            ok = False
        if ok:
            lat.append(time.perf_counter() - start)


async def _load(base: str, spec: dict, clients: int, seconds: float) -> dict:
    lat: list[float] = []
    errors: list[str] = []
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(base_url=base, timeout=120, limits=limits) as c:
        start = time.monotonic()
        until = start + seconds
        await asyncio.gather(*(_client(c, spec, until, lat, errors) for _ in range(clients)))
        wall = time.monotonic() - start
    lat.sort()

    def q(p: float) -> float | None:  # nearest-rank quantile
        return round(lat[min(len(lat) - 1, int(p * len(lat)))], 4) if lat else None

    kinds: dict[str, int] = {}
    for e in errors:
        kinds[e] = kinds.get(e, 0) + 1
    return {"requests": len(lat) + len(errors), "ok": len(lat), "errors": len(errors), "error_kinds": kinds,
            "requests_per_s": round((len(lat) + len(errors)) / wall, 2), "p50_s": q(0.50), "p99_s": q(0.99),
            "max_s": round(lat[-1], 4) if lat else None}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=60.0, help="load time per endpoint (default 60)")
    ap.add_argument("--clients", type=int, default=50, help="concurrent clients (default 50)")
    ap.add_argument("--endpoints", default="pv,rob,cohort", help="comma-separated: pv, rob, cohort")
    ap.add_argument("--pv-model", default="auto", help="model of the PV requests (default auto)")
    args = ap.parse_args()
    specs = _endpoints(args.pv_model)
    names = [n.strip() for n in args.endpoints.split(",") if n.strip()]
    unknown = [n for n in names if n not in specs]
    if unknown:
        ap.error(f"unknown endpoint(s) {', '.join(unknown)}; use pv, rob, cohort")

    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    tmp = tempfile.mkdtemp(prefix="clinex-bench-")
    proc = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "--factory", "clinex.web.app:create_app", "--host", "127.0.0.1",
         "--port", str(port), "--log-level", "warning", "--no-access-log"],
        env=dict(os.environ, TMPDIR=tmp),
    )
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(base + "/api/health", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                sys.exit(f"server did not start (exit status {proc.poll()})")
            time.sleep(0.2)
        with httpx.Client(base_url=base, timeout=300) as c:  # warm-up: load each model once
            for n in names:
                s = specs[n]
                for _ in range(3):
                    r = c.post(s["url"], params=s.get("params"), json=s.get("json"), content=s.get("content"))
                    if r.status_code != 200:
                        sys.exit(f"warm-up of {n} failed: HTTP {r.status_code} {r.text[:300]}")
        rss_start = _status_kb(proc.pid, "VmRSS")
        sampler = _RssSampler(proc.pid)
        sampler.start()
        results = {}
        for n in names:
            res = asyncio.run(_load(base, specs[n], args.clients, args.seconds))
            results[n] = res
            print(f"{n:7s} {specs[n]['url']:20s} {res['requests_per_s']:8.1f} req/s  p50 {res['p50_s']} s  "
                  f"p99 {res['p99_s']} s  errors {res['errors']} {res['error_kinds'] or ''}", flush=True)
        rss_end = _status_kb(proc.pid, "VmRSS")
        sampler.stop.set()
        peak = max(_status_kb(proc.pid, "VmHWM"), sampler.peak)
        growth = 100.0 * (rss_end - rss_start) / rss_start
        print(f"server RSS: after warm-up {rss_start / 1024:.0f} MB, end {rss_end / 1024:.0f} MB, "
              f"peak {peak / 1024:.0f} MB, growth {growth:+.1f}%")
        summary = {"clients": args.clients, "seconds": args.seconds, "pv_model": args.pv_model,
                   "cpus": os.cpu_count(), "endpoints": results,
                   "rss_after_warmup_mb": round(rss_start / 1024, 1), "rss_end_mb": round(rss_end / 1024, 1),
                   "peak_rss_mb": round(peak / 1024, 1), "rss_growth_pct": round(growth, 2)}
        print(json.dumps(summary))
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


if __name__ == "__main__":
    main()
