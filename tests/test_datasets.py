"""clinex.datasets: pinned corpora, checksum verification, the data CLI (no network)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from clinex import datasets
from clinex.datasets import CORPORA, Corpus, RemoteFile, corpus_dir, data_home, download, is_downloaded
from clinex.errors import DataError

COMMIT = "0123456789abcdef0123456789abcdef01234567"
BODY = b'{"id": "1", "context": "Rash after aspirin."}\n'


@pytest.fixture
def tiny(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Corpus]:
    """A one-file corpus served from a file:// mirror, and CLINEX_DATA in tmp."""
    mirror = tmp_path / "mirror"
    (mirror / COMMIT / "data").mkdir(parents=True)
    (mirror / COMMIT / "data" / "train.json").write_bytes(BODY)
    corpus = Corpus(
        name="tiny",
        description="test corpus",
        base_url=mirror.as_uri(),
        commit=COMMIT,
        files=(RemoteFile("data/train.json", "json/train.json", hashlib.sha256(BODY).hexdigest(), len(BODY)),),
        licence="MIT",
        citation="none",
    )
    monkeypatch.setitem(CORPORA, "tiny", corpus)
    monkeypatch.setenv("CLINEX_DATA", str(tmp_path / "home"))
    return mirror, corpus


def test_phee_is_pinned_to_a_full_commit() -> None:
    phee = CORPORA["phee"]
    assert phee.commit == "41489b08675d0b63a1eb7cd4f2d1946952833eb1"
    assert [f.local for f in phee.files] == ["json/train.json", "json/dev.json", "LICENSE"]
    assert all(len(f.sha256) == 64 for f in phee.files)
    assert phee.url(phee.files[1]) == (
        "https://raw.githubusercontent.com/ZhaoyueSun/PHEE/41489b08675d0b63a1eb7cd4f2d1946952833eb1/data/json/dev.json"
    )


def test_phee_checksums_match_the_shared_copy(shared_data: Path) -> None:
    for f in CORPORA["phee"].files:
        p = shared_data / "phee" / f.local
        assert p.stat().st_size == f.size
        assert datasets.sha256_file(p) == f.sha256


def test_data_home_default_and_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("CLINEX_DATA", raising=False)
    assert data_home() == Path.home() / ".cache" / "clinex"
    monkeypatch.setenv("CLINEX_DATA", str(tmp_path))
    assert corpus_dir("phee") == tmp_path / "phee"


def test_download_file_url_verifies_and_keeps(tiny: tuple[Path, Corpus], tmp_path: Path) -> None:
    folder = download("tiny")
    assert folder == tmp_path / "home" / "tiny"
    assert (folder / "json" / "train.json").read_bytes() == BODY
    assert '"commit": "' + COMMIT in (folder / "MANIFEST.json").read_text()
    assert is_downloaded("tiny", verify=True)
    calls: list[str] = []
    download("tiny", fetch=lambda url, dest, cb: calls.append(url))  # present and valid: no fetch
    assert calls == []


def test_checksum_mismatch_raises_and_leaves_nothing(tiny: tuple[Path, Corpus], tmp_path: Path) -> None:
    mirror, _ = tiny
    (mirror / COMMIT / "data" / "train.json").write_bytes(BODY.replace(b"Rash", b"Rush"))
    with pytest.raises(DataError, match="checksum mismatch") as info:
        download("tiny")
    assert info.value.code == "CLX008"
    assert hashlib.sha256(BODY).hexdigest() in str(info.value)
    assert not (tmp_path / "home").exists()  # no file, no .part, no empty folder left behind
    assert not is_downloaded("tiny")


def test_second_file_mismatch_leaves_first_file_out(
    tiny: tuple[Path, Corpus], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mirror, corpus = tiny
    dev = b'{"id": "2", "context": "Fever after vaccine."}\n'
    (mirror / COMMIT / "data" / "dev.json").write_bytes(dev.replace(b"Fever", b"Fewer"))  # corrupt
    two = Corpus(
        name="tiny",
        description="test corpus",
        base_url=corpus.base_url,
        commit=COMMIT,
        files=(*corpus.files, RemoteFile("data/dev.json", "json/dev.json", hashlib.sha256(dev).hexdigest(), len(dev))),
        licence="MIT",
        citation="none",
    )
    monkeypatch.setitem(CORPORA, "tiny", two)
    with pytest.raises(DataError, match="checksum mismatch"):
        download("tiny")
    assert not (tmp_path / "home").exists()  # the verified train.json was not moved into place
    # an earlier good download is untouched by a later failed one
    (tmp_path / "home").mkdir()
    (mirror / COMMIT / "data" / "dev.json").write_bytes(dev)
    download("tiny")
    (mirror / COMMIT / "data" / "dev.json").write_bytes(b"broken")
    with pytest.raises(DataError, match="checksum mismatch"):
        download("tiny", force=True)
    assert (tmp_path / "home" / "tiny" / "json" / "dev.json").read_bytes() == dev
    assert sorted(p.name for p in (tmp_path / "home").iterdir()) == ["tiny"]  # no staging folder left
    # a failed fetch leaves no empty folders either
    monkeypatch.setenv("CLINEX_DATA", str(tmp_path / "other"))
    with pytest.raises(DataError, match="could not fetch"):
        download("tiny", base_url="file:///nonexistent/mirror")
    assert not (tmp_path / "other").exists()


def test_monkeypatched_fetch_and_failures(tiny: tuple[Path, Corpus]) -> None:
    def good(url: str, dest: Path, cb) -> None:  # noqa: ANN001
        assert url.endswith(f"/{COMMIT}/data/train.json")
        dest.write_bytes(BODY)

    assert (download("tiny", force=True, fetch=good) / "json" / "train.json").read_bytes() == BODY
    with pytest.raises(DataError, match="could not fetch"):
        download("tiny", force=True, base_url="file:///nonexistent/mirror")
    with pytest.raises(DataError, match="unknown corpus 'nope'; available: .*phee"):
        download("nope")


def test_cli_list_and_download(tiny: tuple[Path, Corpus], cli) -> None:  # noqa: ANN001
    mirror, _ = tiny
    res = cli("data", "list")
    assert res.code == 0 and "tiny" in res.stdout and "not downloaded" in res.stdout
    res = cli("data", "download", "tiny")
    assert res.code == 0, res.stderr
    assert "1 files verified (SHA-256)" in res.stdout
    assert "downloaded" in cli("data", "list").stdout
    res = cli("data", "download", "nope")
    assert res.code == 2 and "[CLX008]" in res.stderr


def test_download_cli_reports_progress_when_stderr_is_no_terminal(
    tiny: tuple[Path, Corpus], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``clinex data download`` reports through clinex.progress: a plain line on a pipe."""
    from typer.testing import CliRunner

    from clinex.cli import app

    monkeypatch.setenv("CLINEX_PROGRESS_EVERY", "0")
    result = CliRunner().invoke(app, ["data", "download", "tiny"])
    assert result.exit_code == 0, result.output
    assert f"tiny: 1 files verified (SHA-256) in {data_home() / 'tiny'}" in result.stdout
    assert f"download tiny (json/train.json): {len(BODY)}/{len(BODY)} bytes (100%)" in result.stderr
