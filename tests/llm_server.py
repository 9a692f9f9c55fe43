"""A scripted OpenAI-compatible chat-completions server for the LLM tests and bench.

Run as a process: ``python tests/llm_server.py [--port 0]`` prints ``PORT <n>`` on its
first line of stdout and serves on 127.0.0.1 until killed. Standard library only.

Endpoints
---------
``POST /v1/chat/completions``
    Answers from the script: the first rule whose ``match`` string occurs in the
    last user message that is not a repair request (and, when given, whose ``match_all`` strings all occur in it)
    answers. A rule holds ``responses``, a list used in turn (the n-th request
    the rule answers gets item n, the last item repeating). A response is
    ``{"content": str}`` (a 200 answer; ``"finish_reason"`` optional, default ``"stop"``),
    ``{"status": int, "error": str}`` (an error body in OpenAI form; ``{key}`` and
    ``{authorization}`` in ``error`` are replaced by the bearer key and the whole
    ``Authorization`` header the request carried, as servers that echo them do)
    and/or ``{"delay": seconds}`` (sleeps first: a hang). Hostile replies:
    ``{"raw": value}`` (a 200 whose whole body is ``value`` as JSON: any shape),
    ``{"raw_text": str}`` (a 200 whose body is that text), ``{"drip": seconds, "content": ...}``
    (headers at once, then the body one byte every ``seconds``: a server that drips),
    ``{"big": n}`` (a 200 chat-completions body of ``n`` bytes, chunked, written 1 MiB at
    a time without a Content-Length; the bytes the client took are in ``/stats``
    ``big_sent``), and ``"usage"`` beside ``"content"`` replaces the reply's usage.
    A rule's ``refuse`` maps a form of the request's ``response_format``
    (``json_schema``, ``json_object_schema`` for ``{"type": "json_object", "schema": ...}``,
    ``json_object``, ``none``) to an error response given instead (the turn is not used),
    as servers that support only some forms do.
    A request for a model not in the script's ``models`` gets a 404
    ``model '<name>' not found``. No rule matching gives a 500.
    ``usage``: prompt tokens = whitespace-separated words of all messages,
    completion tokens = words of the answer (deterministic, for exact tests).
``GET /v1/models``
    The script's models.
``GET /stats``
    ``{"requests": n, "by_rule": {rule name: n}, "auth": [Authorization headers seen],
    "last_bodies": [...the last 50 request bodies], "inflight": requests being answered now, "max_inflight": most at once,
    "formats": [the response_format form of each request], "big_sent": bytes of ``big`` bodies written}``.
``POST /script``
    Replace the script (JSON body ``{"models": [...], "rules": [...]}``) and reset the stats.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_LOCK = threading.Lock()
STATE: dict[str, Any] = {"script": {"models": ["scripted"], "rules": []}, "requests": 0, "by_rule": {},
                         "auth": [], "last_bodies": [], "turns": {}, "inflight": 0, "max_inflight": 0,
                         "formats": [], "big_sent": 0}


def _reset(script: dict[str, Any]) -> None:
    with _LOCK:
        STATE.update(script=script, requests=0, by_rule={}, auth=[], last_bodies=[], turns={}, max_inflight=0,
                     formats=[], big_sent=0)


def _form(body: dict[str, Any]) -> str:
    """The form of a request's ``response_format`` (see the module docstring)."""
    rf = body.get("response_format")
    if not isinstance(rf, dict):
        return "none"
    if rf.get("type") == "json_object":
        return "json_object_schema" if "schema" in rf else "json_object"
    return str(rf.get("type"))


def _words(text: str) -> int:
    return len(text.split())


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt: str, *args: Any) -> None:  # quiet
        return

    def _send(self, status: int, body: Any) -> None:
        data = json.dumps(body).encode("utf-8")
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _body(self) -> Any:
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n) if n else b""
        return json.loads(raw.decode("utf-8")) if raw else {}

    def do_GET(self) -> None:  # noqa: N802
        if self.path == "/stats":
            with _LOCK:
                self._send(200, {k: STATE[k] for k in ("requests", "by_rule", "auth", "last_bodies", "inflight",
                                                             "max_inflight", "formats", "big_sent")})
        elif self.path == "/v1/models":
            self._send(200, {"object": "list", "data": [{"id": m, "object": "model"}
                                                        for m in STATE["script"].get("models", [])]})
        else:
            self._send(404, {"error": {"message": "not found"}})

    def do_POST(self) -> None:  # noqa: N802
        body = self._body()
        if self.path == "/script":
            _reset(body)
            self._send(200, {"ok": True})
            return
        if self.path != "/v1/chat/completions":
            self._send(404, {"error": {"message": f"no route {self.path}"}})
            return
        with _LOCK:
            STATE["inflight"] += 1
            STATE["max_inflight"] = max(STATE["max_inflight"], STATE["inflight"])
        try:
            self._complete(body)
        finally:
            with _LOCK:
                STATE["inflight"] -= 1

    def _complete(self, body: dict[str, Any]) -> None:
        script = STATE["script"]
        messages = body.get("messages") or []
        asked = next((m.get("content", "") for m in reversed(messages) if m.get("role") == "user"
                      and not str(m.get("content", "")).startswith("That answer cannot be used")), "")
        with _LOCK:
            STATE["requests"] += 1
            STATE["auth"].append(self.headers.get("Authorization"))
            STATE["last_bodies"] = [*STATE["last_bodies"][-49:], body]
            STATE["formats"].append(_form(body))
        if body.get("model") not in script.get("models", []):
            self._send(404, {"error": {"message": f"model '{body.get('model')}' not found", "type": "not_found"}})
            return
        rule = None
        # a repair turn is answered by the rule of the question it repairs
        probe = asked
        for r in script.get("rules", []):
            if r.get("match", "") in probe and all(s in probe for s in r.get("match_all", [])):
                rule = r
                break
        if rule is None:
            self._send(500, {"error": {"message": "no scripted rule matches"}})
            return
        name = rule.get("name", rule.get("match", ""))
        refused = (rule.get("refuse") or {}).get(_form(body))
        if refused:
            self._send(int(refused.get("status", 400)), {"error": {"message": str(refused.get("error", ""))}})
            return
        with _LOCK:
            turn = STATE["turns"].get(name, 0)
            STATE["turns"][name] = turn + 1
            STATE["by_rule"][name] = STATE["by_rule"].get(name, 0) + 1
        responses = rule["responses"]
        resp = responses[min(turn, len(responses) - 1)]
        if resp.get("delay"):
            time.sleep(float(resp["delay"]))
        if "status" in resp and resp["status"] != 200:
            auth = self.headers.get("Authorization") or ""
            error = str(resp.get("error", "scripted error"))
            error = error.replace("{authorization}", auth).replace("{key}", auth.removeprefix("Bearer "))
            self._send(int(resp["status"]), {"error": {"message": error}})
            return
        if "raw" in resp:
            self._send(200, resp["raw"])
            return
        if "raw_text" in resp:
            self._send_bytes(200, str(resp["raw_text"]).encode("utf-8"))
            return
        if "big" in resp:
            self._send_big(int(resp["big"]))
            return
        content = resp["content"] if isinstance(resp["content"], str) else json.dumps(resp["content"])
        prompt_tokens = sum(_words(str(m.get("content", ""))) for m in messages)
        reply = {
            "id": f"cmpl-{STATE['requests']}", "object": "chat.completion", "model": body.get("model"),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                         "finish_reason": resp.get("finish_reason", "stop")}],
            "usage": resp.get("usage", {"prompt_tokens": prompt_tokens, "completion_tokens": _words(content),
                                        "total_tokens": prompt_tokens + _words(content)}),
        }
        if resp.get("drip"):
            self._send_drip(json.dumps(reply).encode("utf-8"), float(resp["drip"]))
            return
        self._send(200, reply)

    def _send_bytes(self, status: int, data: bytes) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _send_drip(self, data: bytes, every: float) -> None:
        """Headers at once, then one byte every ``every`` seconds (until done or the client leaves)."""
        try:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.flush()
            for i in range(len(data)):
                self.wfile.write(data[i : i + 1])
                self.wfile.flush()
                time.sleep(every)
        except (BrokenPipeError, ConnectionResetError, OSError):
            self.close_connection = True

    def _send_big(self, n: int) -> None:
        """A chat-completions body of ``n`` bytes, chunked, 1 MiB a write; counts what was written."""
        head = b'{"choices": [{"message": {"role": "assistant", "content": "'
        tail = b'"}, "finish_reason": "stop"}]}'
        filler = n - len(head) - len(tail)
        block = b"x" * (1 << 20)
        try:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            parts = [head]
            while filler > 0:
                parts.append(block[: min(filler, len(block))])
                filler -= len(parts[-1])
            parts.append(tail)
            for part in parts:
                self.wfile.write(f"{len(part):x}\r\n".encode() + part + b"\r\n")
                with _LOCK:
                    STATE["big_sent"] += len(part)
            self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError, OSError):
            self.close_connection = True


class ScriptedServer:
    """Start this file as a separate process on a free port of 127.0.0.1 (tests and bench).

    Attributes
    ----------
    url : str
        The OpenAI-compatible root, ``http://127.0.0.1:<port>/v1``.
    """

    def __init__(self) -> None:
        import subprocess
        from pathlib import Path

        self.proc = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--port", "0"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        )
        line = self.proc.stdout.readline() if self.proc.stdout else ""
        if not line.startswith("PORT "):
            self.proc.kill()
            raise RuntimeError("the scripted LLM server did not start")
        self.port = int(line.split()[1])
        self.root = f"http://127.0.0.1:{self.port}"
        self.url = self.root + "/v1"

    def _call(self, path: str, body: Any = None) -> Any:
        import urllib.request

        data = None if body is None else json.dumps(body).encode("utf-8")
        req = urllib.request.Request(self.root + path, data=data, method="POST" if data is not None else "GET",
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=5) as resp:
            return json.loads(resp.read().decode("utf-8"))

    def script(self, rules: list[dict[str, Any]], models: tuple[str, ...] = ("scripted",)) -> None:
        """Replace the script and reset the counters."""
        self._call("/script", {"models": list(models), "rules": rules})

    def stats(self) -> dict[str, Any]:
        """``/stats``: requests seen, per rule, Authorization headers, last bodies."""
        return self._call("/stats")

    def close(self) -> None:
        """Stop the process."""
        self.proc.kill()
        self.proc.wait(timeout=5)
        if self.proc.stdout:
            self.proc.stdout.close()

    def __enter__(self) -> "ScriptedServer":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--script", help="JSON script file to start with")
    args = ap.parse_args(argv)
    if args.script:
        with open(args.script, encoding="utf-8") as fh:
            _reset(json.load(fh))
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.daemon_threads = True
    print(f"PORT {server.server_address[1]}", flush=True)
    sys.stdout.flush()
    server.serve_forever()


if __name__ == "__main__":
    main()
