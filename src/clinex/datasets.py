"""Named corpora: where they live and ``clinex data download NAME``.

Corpora are stored under ``$CLINEX_DATA`` (default ``~/.cache/clinex``), one folder
per corpus. A download fetches each file from a URL pinned to one commit of the
corpus' public repository, checks its size and SHA-256 checksum before anything is
written to the corpus folder (a mismatch raises :class:`~clinex.errors.DataError`
and leaves nothing behind), and records the commit in ``MANIFEST.json``. Nothing
else in clinex touches the network; models and tests never download.

Corpora
-------
``phee``
    PHEE (Sun et al., EMNLP 2022): ``json/train.json`` (2,898 sentences) and
    ``json/dev.json`` (961 sentences) in PHEE JSON lines, plus the MIT ``LICENSE``,
    from github.com/ZhaoyueSun/PHEE at commit
    ``41489b08675d0b63a1eb7cd4f2d1946952833eb1``. The test split is not fetched:
    its checksum could not be pinned without reading it, and model development
    here uses train and dev only.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import typer

from clinex.errors import DataError

__all__ = [
    "RemoteFile",
    "Corpus",
    "CORPORA",
    "data_home",
    "corpus_dir",
    "sha256_file",
    "is_downloaded",
    "download",
    "app",
]

ENV_VAR = "CLINEX_DATA"

Fetch = Callable[[str, Path, Callable[[int, int | None], None] | None], None]


@dataclass(frozen=True)
class RemoteFile:
    """One file of a corpus.

    Attributes
    ----------
    remote : str
        Path inside the source repository at the pinned commit.
    local : str
        Path inside the corpus folder.
    sha256 : str
        Expected SHA-256 of the file's bytes (hex).
    size : int
        Expected size in bytes.
    """

    remote: str
    local: str
    sha256: str
    size: int


@dataclass(frozen=True)
class Corpus:
    """A downloadable corpus pinned to one commit.

    Attributes
    ----------
    name : str
        Name used on the command line.
    description : str
        One line for ``clinex data list``.
    base_url : str
        URL prefix; a file's URL is ``{base_url}/{commit}/{remote}``.
    commit : str
        Full 40-hex commit of the source repository.
    files : tuple of RemoteFile
    licence : str
    citation : str
    """

    name: str
    description: str
    base_url: str
    commit: str
    files: tuple[RemoteFile, ...]
    licence: str
    citation: str

    def url(self, f: RemoteFile, base_url: str | None = None) -> str:
        """The URL of file ``f`` (``base_url`` overrides the corpus' own, e.g. a mirror)."""
        return f"{(base_url or self.base_url).rstrip('/')}/{self.commit}/{f.remote}"


CORPORA: dict[str, Corpus] = {
    "phee": Corpus(
        name="phee",
        description="PHEE pharmacovigilance events: train (2,898) and dev (961) sentences, JSON lines",
        base_url="https://raw.githubusercontent.com/ZhaoyueSun/PHEE",
        commit="41489b08675d0b63a1eb7cd4f2d1946952833eb1",
        files=(
            RemoteFile(
                "data/json/train.json",
                "json/train.json",
                "a2d6cbdae3d95cb3a7e13439164c002041061f6f9823608af483c82d17a31f2b",
                2386113,
            ),
            RemoteFile(
                "data/json/dev.json",
                "json/dev.json",
                "e1e24c0dfbe6f624e590a26d294f3082d0142ffc28b9da56761f1dd45e96aa53",
                808437,
            ),
            RemoteFile(
                "LICENSE",
                "LICENSE",
                "0496a9a5addf622bb0b909f116a5279554f4982c4ff2f3c04cc2dfb5b7e28302",
                1068,
            ),
        ),
        licence="MIT",
        citation=(
            "Sun Z. et al. PHEE: A Dataset for Pharmacovigilance Event Extraction from Text. "
            "EMNLP 2022."
        ),
    ),
}
"""The corpora ``clinex data download`` knows, by name."""


def data_home() -> Path:
    """``$CLINEX_DATA`` if set, else ``~/.cache/clinex`` (not created here)."""
    env = os.environ.get(ENV_VAR)
    return Path(env).expanduser() if env else Path.home() / ".cache" / "clinex"


def _corpus(name: str) -> Corpus:
    if name not in CORPORA:
        raise DataError(f"unknown corpus {name!r}; available: {', '.join(sorted(CORPORA))}")
    return CORPORA[name]


def corpus_dir(name: str) -> Path:
    """Folder of corpus ``name`` under :func:`data_home` (may not exist yet).

    Raises
    ------
    DataError
        If ``name`` is not a known corpus (the message lists the known ones).
    """
    return data_home() / _corpus(name).name


def sha256_file(path: str | Path, chunk: int = 1 << 20) -> str:
    """Hex SHA-256 of a file's bytes (FIPS 180-4), read in ``chunk``-byte blocks."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(chunk), b""):
            h.update(block)
    return h.hexdigest()


def is_downloaded(name: str, *, verify: bool = False) -> bool:
    """True if every file of corpus ``name`` is present (and, with ``verify``, matches its checksum)."""
    corpus = _corpus(name)
    folder = corpus_dir(name)
    for f in corpus.files:
        p = folder / f.local
        if not p.is_file() or p.stat().st_size != f.size:
            return False
        if verify and sha256_file(p) != f.sha256:
            return False
    return True


def _urllib_fetch(url: str, dest: Path, progress: Callable[[int, int | None], None] | None) -> None:
    """Fetch ``url`` (http, https or file) into ``dest``, reporting bytes read."""
    try:
        with urllib.request.urlopen(url, timeout=60) as resp, open(dest, "wb") as out:  # noqa: S310
            total = resp.headers.get("Content-Length")
            size = int(total) if total and total.isdigit() else None
            done = 0
            while True:
                block = resp.read(1 << 16)
                if not block:
                    break
                out.write(block)
                done += len(block)
                if progress is not None:
                    progress(done, size)
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        raise DataError(f"could not fetch {url}: {reason}") from None


def download(
    name: str,
    *,
    force: bool = False,
    base_url: str | None = None,
    fetch: Fetch | None = None,
    progress: Callable[[str, int, int | None], None] | None = None,
) -> Path:
    """Download corpus ``name`` into ``$CLINEX_DATA/<name>`` and verify it.

    Files already present with the right size and checksum are kept unless
    ``force``. All other files are fetched into a temporary folder beside the
    corpus folder and checked (size, SHA-256); only when every file verifies are
    they moved into place. On any failure the temporary folder (and any folder
    this call created) is removed, so nothing is left behind and files already
    in place are untouched.

    Parameters
    ----------
    name : str
        A key of :data:`CORPORA` (``"phee"``).
    force : bool, default False
        Fetch every file again.
    base_url : str, optional
        URL prefix replacing the corpus' own (a mirror, or ``file://`` for tests);
        files are looked up at ``{base_url}/{commit}/{remote path}``.
    fetch : callable, optional
        ``fetch(url, dest_path, progress)``; default uses :mod:`urllib.request`.
    progress : callable, optional
        ``progress(local_path, bytes_done, bytes_total_or_None)``.

    Returns
    -------
    Path
        The corpus folder.

    Raises
    ------
    DataError
        Unknown corpus, a failed fetch, or a size / checksum mismatch (the message
        names the file, the expected and the actual SHA-256); nothing is left behind.

    References
    ----------
    NIST FIPS 180-4, Secure Hash Standard (SHA-256).
    """
    import shutil

    corpus = _corpus(name)
    folder = corpus_dir(name)
    fetcher = fetch or _urllib_fetch
    home = folder.parent
    made = [p for p in (home, *home.parents) if not p.exists()]
    try:
        home.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{corpus.name}.", suffix=".download", dir=home))
    except OSError as exc:
        raise DataError(f"cannot create the data folder ({exc.strerror or exc})", path=home) from None
    fetched: list[RemoteFile] = []
    try:
        for f in corpus.files:
            dest = folder / f.local
            if not force and dest.is_file() and dest.stat().st_size == f.size and sha256_file(dest) == f.sha256:
                continue
            tmp = staging / f.local
            tmp.parent.mkdir(parents=True, exist_ok=True)
            cb = (lambda done, total, _l=f.local: progress(_l, done, total)) if progress else None
            fetcher(corpus.url(f, base_url), tmp, cb)
            size = tmp.stat().st_size if tmp.is_file() else 0
            digest = sha256_file(tmp) if tmp.is_file() else hashlib.sha256(b"").hexdigest()
            if size != f.size or digest != f.sha256:
                raise DataError(
                    f"checksum mismatch: expected SHA-256 {f.sha256} ({f.size} bytes), "
                    f"got {digest} ({size} bytes)",
                    path=dest,
                )
            fetched.append(f)
        # every file verified: move them into place
        for f in fetched:
            dest = folder / f.local
            dest.parent.mkdir(parents=True, exist_ok=True)
            os.replace(staging / f.local, dest)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        for p in made:  # folders this call created, deepest first, if still empty
            try:
                p.rmdir()
            except OSError:
                break
        raise
    shutil.rmtree(staging, ignore_errors=True)
    manifest = {
        "name": corpus.name,
        "source": corpus.base_url if base_url is None else base_url,
        "commit": corpus.commit,
        "licence": corpus.licence,
        "citation": corpus.citation,
        "files": {f.local: {"sha256": f.sha256, "size": f.size, "remote": f.remote} for f in corpus.files},
    }
    from clinex.io.atomic import write_atomic

    write_atomic(folder / "MANIFEST.json", json.dumps(manifest, indent=2) + "\n", force=True)
    return folder


# ----------------------------------------------------------------------------- CLI
app = typer.Typer(no_args_is_help=True, pretty_exceptions_show_locals=False)


@app.command("list")
def list_cmd() -> None:
    """List the named corpora, their pinned source and whether they are downloaded."""
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"Corpora (data home: {data_home()})")
    for col in ("name", "status", "commit", "files", "description"):
        table.add_column(col)
    for corpus in CORPORA.values():
        status = "downloaded" if is_downloaded(corpus.name) else "not downloaded"
        table.add_row(
            corpus.name,
            status,
            corpus.commit[:12],
            ", ".join(f.local for f in corpus.files),
            corpus.description,
        )
    Console().print(table)


@app.command("download")
def download_cmd(
    name: str = typer.Argument(..., help=f"Corpus name: {', '.join(sorted(CORPORA))}."),
    force: bool = typer.Option(False, "--force", help="Fetch every file again."),
    base_url: str = typer.Option(
        None, "--base-url", help="Mirror URL prefix (files at BASE/COMMIT/PATH); file:// works."
    ),
) -> None:
    """Download a corpus into $CLINEX_DATA (default ~/.cache/clinex), checking SHA-256."""
    from clinex.progress import Progress

    corpus = _corpus(name)
    sizes = {f.local: f.size or 0 for f in corpus.files}
    done: dict[str, int] = {}
    total = sum(sizes.values()) or None
    with Progress(f"download {corpus.name}", total=total, unit="bytes") as bar:

        def on_progress(local: str, n: int, size: int | None) -> None:
            done[local] = n
            bar.describe(f"download {corpus.name} ({local})")
            bar.update(sum(done.values()), total)

        folder = download(name, force=force, base_url=base_url, progress=on_progress)
    typer.echo(f"{corpus.name}: {len(corpus.files)} files verified (SHA-256) in {folder}")
    typer.echo(f"source: {base_url or corpus.base_url} @ {corpus.commit} ({corpus.licence})")
