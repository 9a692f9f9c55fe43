"""On-disk cache of LLM answers (SQLite).

An answer is stored under the SHA-256 of the canonical JSON of everything that
decides it: the server's model name, the messages, the sampling parameters and the
response schema (:func:`cache_key`). Only answers that parsed and validated are
stored, so a failed call (HTTP error, timeout, invalid JSON after the repairs) leaves
nothing behind and is asked again next time. The server URL is not part of the key:
the same model behind another URL gives the same answer at temperature 0 with a seed.

The file is ``$CLINEX_DATA/llm/cache.sqlite`` by default (:func:`default_cache_path`);
``--no-cache`` (or ``CLINEX_LLM_NO_CACHE=1``) neither reads nor writes it. A new
file is created with mode 0600 (owner only: the answers quote clinical text); SQLite
gives its journal the same mode.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from clinex.errors import InputError

__all__ = ["LLMCache", "cache_key", "default_cache_path"]


def default_cache_path() -> Path:
    """``$CLINEX_DATA/llm/cache.sqlite`` (``CLINEX_DATA`` defaults to ``~/.cache/clinex``)."""
    from clinex.datasets import data_home

    return data_home() / "llm" / "cache.sqlite"


def cache_key(model: str, messages: list[Mapping[str, Any]], params: Mapping[str, Any]) -> str:
    """SHA-256 (hex) of the canonical JSON of ``model``, ``messages`` and ``params``.

    Parameters
    ----------
    model : str
        The server's model name.
    messages : list of dict
        Chat messages (``role``, ``content``).
    params : dict
        Everything else sent that changes the answer (temperature, seed, max_tokens,
        response format with its schema).
    """
    blob = json.dumps({"model": model, "messages": list(messages), "params": dict(params)},
                      sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class LLMCache:
    """A SQLite table ``answers(key, model, content, created)``; safe to share between threads.

    Parameters
    ----------
    path : str or Path, optional
        The file; None = :func:`default_cache_path`. Its folder is created, and the
        file (when new) with mode 0600.

    Raises
    ------
    InputError
        The file cannot be opened as a SQLite database.
    """

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path is not None else default_cache_path()
        self._lock = threading.Lock()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            if not self.path.exists():
                os.close(os.open(self.path, os.O_CREAT | os.O_WRONLY, 0o600))
                os.chmod(self.path, 0o600)  # whatever the umask
            self._db = sqlite3.connect(str(self.path), check_same_thread=False, timeout=10.0)
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS answers (key TEXT PRIMARY KEY, model TEXT NOT NULL, "
                "content TEXT NOT NULL, created REAL NOT NULL)"
            )
            self._db.commit()
        except (OSError, sqlite3.DatabaseError) as exc:
            raise InputError(f"cannot use the LLM cache ({exc})", path=self.path) from None

    def get(self, key: str) -> str | None:
        """The stored answer text for ``key``, or None."""
        with self._lock:
            row = self._db.execute("SELECT content FROM answers WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def put(self, key: str, model: str, content: str) -> None:
        """Store a validated answer (replacing any under the same key)."""
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO answers VALUES (?, ?, ?, ?)", (key, model, content, time.time()))
            self._db.commit()

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM answers").fetchone()[0])

    def close(self) -> None:
        """Close the database."""
        with self._lock:
            self._db.close()
