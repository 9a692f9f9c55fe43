"""Load test of the web API: many concurrent clients against each JSON endpoint on loopback.

Starts ``clinex serve`` on 127.0.0.1 (default settings, or ``CLINEX_WEB_*`` from the
environment), warms each endpoint up once, then for each endpoint in turn runs ``--clients``
concurrent clients (httpx, asyncio), each sending one request after another for ``--seconds``
seconds. Each client connects from its own loopback address (127.0.1.N), as separate machines
would: the server admits at most ``CLINEX_WEB_PER_CLIENT`` (16) task requests from one address. Reported per endpoint: requests/s, p50/p99 latency, error
count (any status other than 200, or a transport error), and for the server process its peak
RSS (``VmHWM``) and RSS growth over the run (RSS after the last endpoint against RSS after the
warm-up, in percent). The last line printed is one JSON object with all figures.

Inputs are small, fixed and made here: one PV sentence (issue 14's target: 0 errors and p99
<= 2 s with 50 clients), a two-sentence trial report as text, a one-record n2c2 XML patient.
The ``mix`` endpoint (issue 21's target: 0 server crashes with 50 clients for 60 s) has the
clients upload, in turn, a 2.5 KB two-column PDF trial report (reportlab, one of 8 fonts per
client), the text report and the XML patient. ``crashes`` counts the server exiting under
load; the run then stops, prints the figures so far and exits 1.

Usage::

    python bench/web_load.py                     # 50 clients, 60 s per endpoint
    python bench/web_load.py --seconds 20 --endpoints pv
    python bench/web_load.py --seconds 60 --endpoints mix   # PDF, text and XML uploads at once
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


FONTS = ["Helvetica", "Times-Roman", "Courier", "Helvetica-Bold", "Times-Italic", "Courier-Bold",
         "Helvetica-Oblique", "Times-Bold"]


def _trial_pdf(font: str) -> bytes:
    """A two-page, two-column trial report of about 2.5 KB in ``font`` (reportlab)."""
    import io

    from reportlab.lib.pagesizes import A4
    from reportlab.pdfgen import canvas

    width, height = A4
    buf = io.BytesIO()
    c = canvas.Canvas(buf, pagesize=A4)
    for page in range(2):
        c.setFont(font, 9)
        for col, x in enumerate((50, width / 2 + 10)):
            lines = ["Methods", "Participants were randomly assigned using a", "computer-generated random "
                     "sequence. Allocation was", "concealed using sequentially numbered, opaque,",
                     "sealed envelopes."] if (page, col) == (0, 0) else []
            lines += [f"Of {100 + i} patients at site {page}.{col}, {90 + i} were followed up." for i in range(6)]
            y = height - 72
            for line in lines:
                c.drawString(x, y, line)
                y -= 12
        c.showPage()
    c.save()
    return buf.getvalue()


def _endpoints(pv_model: str, mix: bool = False) -> dict[str, dict]:
    specs = {
        "pv": {"url": "/api/pv/extract", "json": {"text": PV_SENTENCE, "model": pv_model}},
        "rob": {"url": "/api/rob/assess", "params": {"filename": "trial.txt"}, "content": TRIAL.encode()},
        "cohort": {"url": "/api/cohort/screen", "params": {"filename": "p.xml"}, "content": PATIENT},
    }
    if not mix:  # the PDFs need reportlab (a test dependency)
        specs["mix"] = {}
        return specs
    pdfs = [{"url": "/api/rob/assess", "params": {"filename": "trial.pdf"}, "content": _trial_pdf(f),
             "headers": {"content-type": "application/pdf"}} for f in FONTS]
    # client i sends mix[i % len(mix)]: PDFs in 8 fonts, the text report, the XML patient
    specs["mix"] = {"mix": [*pdfs[:4], specs["rob"], specs["cohort"], *pdfs[4:], specs["rob"], specs["cohort"]]}
    return specs


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
                             content=spec.get("content"), headers=spec.get("headers"))
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
    specs = spec.get("mix", [spec])
    # one connection per client, each from its own loopback address (the per-client cap counts addresses)
    conns = [httpx.AsyncClient(base_url=base, timeout=120,
                               transport=httpx.AsyncHTTPTransport(local_address=f"127.0.1.{i % 250 + 1}"))
             for i in range(clients)]
    try:
        start = time.monotonic()
        until = start + seconds
        await asyncio.gather(*(_client(c, specs[i % len(specs)], until, lat, errors) for i, c in enumerate(conns)))
        wall = time.monotonic() - start
    finally:
        for c in conns:
            await c.aclose()
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
    ap.add_argument("--endpoints", default="pv,rob,cohort", help="comma-separated: pv, rob, cohort, mix")
    ap.add_argument("--pv-model", default="auto", help="model of the PV requests (default auto)")
    args = ap.parse_args()
    names = [n.strip() for n in args.endpoints.split(",") if n.strip()]
    specs = _endpoints(args.pv_model, mix="mix" in names)
    unknown = [n for n in names if n not in specs]
    if unknown:
        ap.error(f"unknown endpoint(s) {', '.join(unknown)}; use pv, rob, cohort, mix")

    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    tmp = tempfile.mkdtemp(prefix="clinex-bench-")
    command = [sys.executable, "-c", "from clinex.cli import main; main()", "serve", "--host", "127.0.0.1",
               "--port", str(port), "--log-level", "warning"]
    proc = subprocess.Popen(command, env=dict(os.environ, TMPDIR=tmp))
    crashes = 0
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
                for s in specs[n].get("mix", [specs[n]]):
                    for _ in range(3):
                        r = c.post(s["url"], params=s.get("params"), json=s.get("json"), content=s.get("content"),
                                   headers=s.get("headers"))
                        if r.status_code != 200:
                            sys.exit(f"warm-up of {n} failed: HTTP {r.status_code} {r.text[:300]}")
        rss_start = _status_kb(proc.pid, "VmRSS")
        sampler = _RssSampler(proc.pid)
        sampler.start()
        results = {}
        for n in names:
            res = asyncio.run(_load(base, specs[n], args.clients, args.seconds))
            if proc.poll() is not None:  # the server died under this load
                crashes += 1
                res["server_exit_status"] = proc.returncode
                print(f"{n}: the server exited with status {proc.returncode}", flush=True)
            results[n] = res
            url = specs[n].get("url", "PDF+text+XML")
            print(f"{n:7s} {url:20s} {res['requests_per_s']:8.1f} req/s  p50 {res['p50_s']} s  "
                  f"p99 {res['p99_s']} s  errors {res['errors']} {res['error_kinds'] or ''}", flush=True)
            if proc.poll() is not None:
                break
        if proc.poll() is not None:
            print(json.dumps({"clients": args.clients, "seconds": args.seconds, "crashes": crashes,
                              "endpoints": results}))
            sys.exit(1)
        rss_end = _status_kb(proc.pid, "VmRSS")
        sampler.stop.set()
        peak = max(_status_kb(proc.pid, "VmHWM"), sampler.peak)
        growth = 100.0 * (rss_end - rss_start) / rss_start
        print(f"server RSS: after warm-up {rss_start / 1024:.0f} MB, end {rss_end / 1024:.0f} MB, "
              f"peak {peak / 1024:.0f} MB, growth {growth:+.1f}%")
        summary = {"clients": args.clients, "seconds": args.seconds, "pv_model": args.pv_model,
                   "cpus": os.cpu_count(), "crashes": crashes, "endpoints": results,
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
