"""File-system faults in batch runs and every writing verb (issue 21).

A full disk (ENOSPC) or a read-only output (EROFS) is a ``[CLX001]`` naming the path and
the operating system's reason, exit status 2, and no temporary or half-written file; a
batch run stopped that way resumes to the rows of a clean run. A torn or empty part file
is run again; a torn or empty ``manifest.json`` is rebuilt when its part files are this
run's, otherwise named with what to do (``--force``).

Faults are injected in-process at the OS-call boundary (``os.open`` creating a file,
``os.mkdir``, ``os.fsync`` of one temporary file) since the tests run as root (chmod does
not stop root). Where the machine allows a private mount namespace (``unshare -m``), the
last tests also run ``clinex`` on a real, tiny tmpfs: a real full disk, and the same
mount remounted read-only, with Dask worker processes.
"""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from clinex.batch import RESUME_HINT, read_results, run_batch
from clinex.errors import InputError

COHORT = Path(__file__).parents[1] / "data" / "cohort"
TRIAL = (
    "Methods\n\nParticipants were randomly assigned using a computer-generated random sequence. "
    "Allocation was concealed using sequentially numbered, opaque, sealed envelopes.\n"
)
ENOSPC = "No space left on device"
EROFS = "Read-only file system"


def _records(tmp_path: Path, n: int = 3) -> Path:
    src = tmp_path / "in.jsonl"
    src.write_text("".join(f'{{"id": "r{i}", "text": "Rash developed after amoxicillin dose {i}."}}\n'
                           for i in range(n)), encoding="utf-8")
    return src


def _fd_path(fd: int) -> str:
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return ""


def _disk_full_at(monkeypatch: pytest.MonkeyPatch, name_part: str) -> None:
    """``os.fsync`` of a temporary file whose name holds ``name_part`` fails with ENOSPC
    (a file system with delayed allocation reports a full disk there)."""
    real = os.fsync

    def fsync(fd: int) -> None:
        if name_part in Path(_fd_path(fd)).name:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)


def _read_only(monkeypatch: pytest.MonkeyPatch, root: Path) -> None:
    """Creating a file or folder at or below ``root`` fails with EROFS (a read-only mount)."""
    real_open, real_mkdir = os.open, os.mkdir
    top = str(root)

    def below(p) -> bool:
        s = os.fspath(p)
        return s == top or s.startswith(top + os.sep)

    def ro_open(path, flags, *args, **kwargs):
        if flags & os.O_CREAT and below(path):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), os.fspath(path))
        return real_open(path, flags, *args, **kwargs)

    def ro_mkdir(path, *args, **kwargs):
        if below(path):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), os.fspath(path))
        return real_mkdir(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", ro_open)
    monkeypatch.setattr(os, "mkdir", ro_mkdir)


def _leftovers(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.name.endswith(".tmp"))


def _rows(out: Path) -> list[tuple]:
    return read_results(out, "SELECT * FROM results ORDER BY id")


# --------------------------------------------------------------------------- batch


def test_batch_full_disk_stops_with_clx001_and_resumes_to_the_clean_rows(
    cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = _records(tmp_path)
    clean = tmp_path / "clean"
    run_batch("pv", [src], clean, partition_size=1, model="crf")
    out = tmp_path / "run"
    _disk_full_at(monkeypatch, ".part-00001.parquet.")
    res = cli("batch", "pv", src, "-o", out, "--partition-size", "1", "--model", "crf")
    assert res.code == 2
    assert res.stderr.splitlines()[-1] == (
        f"[CLX001] {out / 'parts' / 'part-00001.parquet'}: cannot write the output file ({ENOSPC}){RESUME_HINT}")
    assert "Traceback" not in res.stderr and _leftovers(out) == []
    # part 0 is whole; part 1 has only its sidecar (written first); the manifest says running
    assert sorted(p.name for p in (out / "parts").iterdir()) == [
        "part-00000.errors.json", "part-00000.parquet", "part-00001.errors.json"]
    assert json.loads((out / "manifest.json").read_text("utf-8"))["status"] == "running"
    monkeypatch.undo()  # the disk has room again
    res = cli("batch", "pv", src, "-o", out, "--partition-size", "1", "--model", "crf")
    assert res.code == 0, res.stderr
    assert "3 items, 3 rows, 0 errors, 3 parts (1 resumed)" in res.stdout
    assert _rows(out) == _rows(clean)
    assert (out / "errors.jsonl").read_bytes() == b"" and _leftovers(out) == []


def test_batch_full_disk_at_the_merge_keeps_every_part(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src = _records(tmp_path)
    out = tmp_path / "run"
    _disk_full_at(monkeypatch, ".results.parquet.")
    with pytest.raises(InputError) as err:
        run_batch("pv", [src], out, partition_size=2, model="crf")
    assert str(err.value) == (
        f"[CLX001] {out / 'results.parquet'}: cannot write the output file ({ENOSPC}){RESUME_HINT}")
    assert not (out / "results.parquet").exists() and _leftovers(out) == []
    monkeypatch.undo()
    again = run_batch("pv", [src], out, partition_size=2, model="crf")
    assert (again.n_parts, again.n_parts_skipped, again.n_rows) == (2, 2, 3)


def test_batch_full_disk_with_two_workers_keeps_the_other_parts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With several workers the refused write comes back from its worker as one clean
    CLX001 (no worker traceback in the message) after the wave; the wave's other parts stay."""
    src = _records(tmp_path, 4)
    out = tmp_path / "run"
    _disk_full_at(monkeypatch, ".part-00000.parquet.")
    with pytest.raises(InputError) as err:
        run_batch("pv", [src], out, partition_size=1, workers=2, scheduler="threads", model="crf")
    assert str(err.value) == (
        f"[CLX001] {out / 'parts' / 'part-00000.parquet'}: cannot write the output file ({ENOSPC}){RESUME_HINT}")
    assert (out / "parts" / "part-00001.parquet").is_file() and not (out / "parts" / "part-00002.parquet").exists()
    monkeypatch.undo()
    again = run_batch("pv", [src], out, partition_size=1, workers=2, scheduler="threads", model="crf")
    assert (again.n_parts_skipped, again.n_rows) == (1, 4) and _leftovers(out) == []


def test_a_run_stopped_before_its_first_part_starts_afresh(tmp_path: Path) -> None:
    src = _records(tmp_path, 1)
    out = tmp_path / "run"
    (out / "parts").mkdir(parents=True)  # what an older clinex left when the manifest write failed
    summary = run_batch("pv", [src], out, model="crf")
    assert (summary.notes, summary.n_rows) == ([], 1)


def test_batch_read_only_output(cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src = _records(tmp_path, 1)
    mount = tmp_path / "ro"
    _read_only(monkeypatch, mount)
    res = cli("batch", "pv", src, "-o", mount / "run", "--model", "crf")
    assert res.code == 2
    assert res.stderr.splitlines()[-1] == (
        f"[CLX001] {mount / 'run' / 'manifest.json'}: cannot write the output file ({EROFS})")
    assert not mount.exists()


def test_torn_and_empty_part_files_are_run_again(tmp_path: Path) -> None:
    src = _records(tmp_path, 5)
    out = tmp_path / "run"
    first = run_batch("pv", [src], out, partition_size=2, model="crf")  # parts of 2, 2 and 1 rows
    rows = _rows(out)
    parts = out / "parts"
    whole = (parts / "part-00000.parquet").read_bytes()
    (parts / "part-00000.parquet").write_bytes(whole[: len(whole) // 2])  # torn: no footer
    (parts / "part-00001.parquet").write_bytes(b"")  # empty
    shutil.copyfile(parts / "part-00002.parquet", parts / "part-00001.parquet")  # whole, but 1 row, not 2
    (parts / "part-00002.errors.json").write_text('{"fing', encoding="utf-8")  # torn sidecar
    again = run_batch("pv", [src], out, partition_size=2, model="crf")
    assert (first.n_rows, again.n_parts, again.n_parts_skipped, again.n_rows) == (5, 3, 0, 5)
    assert _rows(out) == rows
    # a whole run is then resumed whole
    assert run_batch("pv", [src], out, partition_size=2, model="crf").n_parts_skipped == 3


def test_a_part_file_swapped_in_with_the_same_row_count_is_run_again(tmp_path: Path) -> None:
    # fresh-user QA: part 1 copied over part 2 (same row count, other items) was resumed as
    # done, giving 2 rows twice and losing 2 others
    src = _records(tmp_path, 4)
    out = tmp_path / "run"
    run_batch("pv", [src], out, partition_size=2, model="crf")  # parts of 2 and 2 rows
    rows = _rows(out)
    parts = out / "parts"
    shutil.copyfile(parts / "part-00000.parquet", parts / "part-00001.parquet")
    (out / "results.parquet").unlink()
    again = run_batch("pv", [src], out, partition_size=2, model="crf")
    assert (again.n_parts, again.n_parts_skipped, again.n_rows) == (2, 1, 4)
    assert _rows(out) == rows
    assert len(set(rows)) == 4


def test_a_part_copied_with_its_sidecar_over_another_partition_is_run_again(tmp_path: Path) -> None:
    # fresh-user QA round 2: part 0 and its sidecar copied over part 1's were resumed as done
    # ("2 parts (2 resumed)", exit 0) with part 0's rows twice and part 1's lost
    src = _records(tmp_path, 4)
    out = tmp_path / "run"
    run_batch("pv", [src], out, partition_size=2, model="crf")
    rows = _rows(out)
    parts = out / "parts"
    shutil.copyfile(parts / "part-00000.parquet", parts / "part-00001.parquet")
    shutil.copyfile(parts / "part-00000.errors.json", parts / "part-00001.errors.json")
    (out / "results.parquet").unlink()
    again = run_batch("pv", [src], out, partition_size=2, model="crf")
    assert (again.n_parts, again.n_parts_skipped, again.n_rows) == (2, 1, 4)
    assert _rows(out) == rows and len(set(rows)) == 4


def test_an_empty_or_torn_manifest_is_rebuilt_from_this_runs_parts(tmp_path: Path) -> None:
    src = _records(tmp_path)
    out = tmp_path / "run"
    run_batch("pv", [src], out, partition_size=1, model="crf")
    rows = _rows(out)
    manifest = json.loads((out / "manifest.json").read_text("utf-8"))
    for torn, why in ((b"", "is empty (0 bytes)"), (b'{"task": "pv", "fingerpr', "is torn (not a clinex manifest)")):
        (out / "manifest.json").write_bytes(torn)
        (out / ".manifest.json.abcd1234.tmp").write_bytes(b"{")  # a kill -9 during a write
        (out / "parts" / ".part-00000.parquet.abcd1234.tmp").write_bytes(b"PAR1")
        again = run_batch("pv", [src], out, partition_size=1, model="crf")
        assert again.notes == [f"{out / 'manifest.json'}: {why}; rebuilt from the 3 part file(s) of this run on disk"]
        assert (again.n_parts_skipped, again.n_rows) == (3, 3)
        assert json.loads((out / "manifest.json").read_text("utf-8")) == manifest
        assert _rows(out) == rows and _leftovers(out) == []


def test_a_torn_manifest_whose_parts_are_not_this_runs_needs_force(cli, tmp_path: Path) -> None:
    src = _records(tmp_path)
    out = tmp_path / "run"
    run_batch("pv", [src], out, partition_size=1, model="crf")
    rows = _rows(out)
    (out / "manifest.json").write_bytes(b"")
    side = out / "parts" / "part-00001.errors.json"
    side.write_text("[]", encoding="utf-8")  # an older clinex's sidecar: no fingerprint
    (out / "notes.txt").write_text("mine", encoding="utf-8")  # a file the user put there
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    res = cli("batch", "pv", src, "-o", out, "--partition-size", "1", "--model", "crf")
    assert res.code == 2
    assert res.stderr.splitlines()[-1] == (
        f"[CLX001] {out / 'manifest.json'}: the batch run's manifest is empty (0 bytes), and the part files in "
        f"{out / 'parts'} cannot be matched to this command's inputs; start again with --force (removes that "
        "run's files), or pass another --output")
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before  # nothing touched
    res = cli("batch", "pv", src, "-o", out, "--partition-size", "1", "--model", "crf", "--force")
    assert res.code == 0, res.stderr
    assert "--force: the earlier run's files in this folder were removed; starting again" in res.stderr
    assert "3 items, 3 rows, 0 errors, 3 parts (0 resumed)" in res.stdout
    assert _rows(out) == rows and (out / "notes.txt").read_text("utf-8") == "mine"


def test_a_torn_manifest_is_not_rebuilt_for_another_model(tmp_path: Path) -> None:
    """The parts' stamp holds the model too: the same inputs with the CRF named as a folder
    (another model record) cannot adopt parts made with the registry's crf."""
    import clinex

    src = _records(tmp_path, 1)
    out = tmp_path / "run"
    run_batch("pv", [src], out, model="crf")
    (out / "manifest.json").write_bytes(b"")
    folder = Path(clinex.__file__).parent / "resources" / "models" / "pv_crf"
    with pytest.raises(InputError, match=r"manifest\.json: the batch run's manifest is empty \(0 bytes\), and the "
                                         r"part files in .* cannot be matched"):
        run_batch("pv", [src], out, model=str(folder))
    assert run_batch("pv", [src], out, model="crf").n_parts_skipped == 1


# --------------------------------------------------------------------------- the writing verbs


def test_cohort_screen_into_a_read_only_folder(cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mount = tmp_path / "ro"
    _read_only(monkeypatch, mount)
    res = cli("cohort", "screen", COHORT / "t04_labs.xml", "-o", mount / "screened", "-q")
    assert res.code == 2
    assert res.stderr.splitlines()[-1] == f"[CLX001] {mount / 'screened'}: cannot create the output folder ({EROFS})"
    assert "Traceback" not in res.stderr and not mount.exists()


def test_cohort_screen_folder_and_csv_on_a_full_disk(cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _disk_full_at(monkeypatch, ".t04_labs.xml.")
    res = cli("cohort", "screen", COHORT / "t04_labs.xml", "-o", tmp_path / "xml", "-q")
    assert res.code == 2
    assert res.stderr.splitlines()[-1] == f"[CLX001] {tmp_path / 'xml' / 't04_labs.xml'}: cannot write the output file ({ENOSPC})"
    assert list((tmp_path / "xml").iterdir()) == []
    monkeypatch.undo()
    _disk_full_at(monkeypatch, ".s.csv.")
    res = cli("cohort", "screen", COHORT / "t04_labs.xml", "-o", tmp_path / "s.csv", "-q")
    assert (res.code, res.stderr.splitlines()[-1]) == (
        2, f"[CLX001] {tmp_path / 's.csv'}: cannot write the output file ({ENOSPC})")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["xml"]


def test_rob_assess_on_a_full_disk_stops_and_leaves_whole_files(
    cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "trial.txt").write_text(TRIAL, encoding="utf-8")
    out = tmp_path / "out"
    _disk_full_at(monkeypatch, ".trial.rob.html.")
    res = cli("rob", "assess", tmp_path / "trial.txt", "-o", out, "--no-plot")
    assert res.code == 2
    assert res.stderr.splitlines()[-1] == f"[CLX001] {out / 'trial.rob.html'}: cannot write the output file ({ENOSPC})"
    assert "skipped" not in res.stderr  # the disk, not the trial: the run stops
    assert sorted(p.name for p in out.iterdir()) == ["trial.rob.json"]
    json.loads((out / "trial.rob.json").read_text("utf-8"))  # whole
    monkeypatch.undo()
    _disk_full_at(monkeypatch, ".summary.svg.")
    res = cli("rob", "assess", tmp_path / "trial.txt", "-o", out, "--force")
    assert (res.code, res.stderr.splitlines()[-1]) == (
        2, f"[CLX001] {out / 'summary.svg'}: cannot write the output file ({ENOSPC})")
    assert "summary.svg" not in [p.name for p in out.iterdir()] and _leftovers(out) == []


def test_pv_extract_output_on_a_full_disk_and_read_only(cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src = _records(tmp_path, 2)
    dest = tmp_path / "ex.jsonl"
    dest.write_text("earlier\n", encoding="utf-8")
    _disk_full_at(monkeypatch, ".ex.jsonl.")
    res = cli("pv", "extract", src, "--model", "crf", "--output", dest, "--force")
    assert (res.code, res.stderr.splitlines()[-1]) == (2, f"[CLX001] {dest}: cannot write the output file ({ENOSPC})")
    assert dest.read_text("utf-8") == "earlier\n" and _leftovers(tmp_path) == []
    monkeypatch.undo()
    _read_only(monkeypatch, tmp_path / "ro")
    res = cli("pv", "extract", src, "--model", "crf", "--format", "brat", "--output", tmp_path / "ro")
    assert (res.code, res.stderr.splitlines()[-1]) == (
        2, f"[CLX001] {tmp_path / 'ro'}: cannot create the output folder ({EROFS})")


def test_pv_train_read_only_before_training_and_full_disk_at_save(
    cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shared_data: Path
) -> None:
    train = tmp_path / "train.json"
    lines = (shared_data / "phee" / "json" / "train.json").read_text(encoding="utf-8").splitlines(keepends=True)
    train.write_text("".join(lines[:8]), encoding="utf-8")
    args = ("pv", "train", "--train", train, "--model", "crf", "--max-iterations", "5")
    _read_only(monkeypatch, tmp_path / "ro")
    res = cli(*args, "--out", tmp_path / "ro" / "model")
    assert (res.code, res.stderr.splitlines()[-1]) == (
        2, f"[CLX001] {tmp_path / 'ro' / 'model'}: cannot create the output folder ({EROFS})")
    assert "training crf" not in res.stderr  # said before the training, not after it
    monkeypatch.undo()
    _disk_full_at(monkeypatch, ".model.json.")
    res = cli(*args, "--out", tmp_path / "model")
    assert (res.code, res.stderr.splitlines()[-1]) == (
        2, f"[CLX001] {tmp_path / 'model' / 'model.json'}: cannot write the output file ({ENOSPC})")
    assert not (tmp_path / "model").exists()  # the folder this run made is gone: no half-saved model


# --------------------------------------------------------------------------- real faults


def _can_mount() -> bool:
    if sys.platform != "linux" or shutil.which("unshare") is None:
        return False
    probe = subprocess.run(["unshare", "-m", "sh", "-c", "mount -t tmpfs -o size=4k tmpfs /mnt"],
                           capture_output=True)
    return probe.returncode == 0


REAL_SCENARIO = r"""
import json, subprocess, sys
from clinex.batch import read_results, run_batch
from clinex.errors import InputError

mnt, src, clean, workers = sys.argv[1:5]
def sh(*args):
    subprocess.run(["mount", *args, mnt], check=True)
def attempt(out):
    try:
        run_batch("pv", [src], out, partition_size=4, workers=int(workers), model="crf")
        return "ok"
    except InputError as exc:
        return str(exc)
rows = lambda d: read_results(d, "SELECT * FROM results ORDER BY id")
sh("-t", "tmpfs", "-o", "size=16k", "tmpfs")
report = {"full": attempt(mnt + "/run")}
report["tmp"] = sorted(str(p) for p in __import__("pathlib").Path(mnt).rglob("*.tmp"))
sh("-o", "remount,size=1m")
report["resumed"] = attempt(mnt + "/run")
report["same"] = rows(mnt + "/run") == rows(clean)
sh("-o", "remount,ro")
report["read_only"] = attempt(mnt + "/other")
print(json.dumps(report))
"""


@pytest.mark.skipif(not _can_mount(), reason="no private mount namespace here (unshare -m, mount tmpfs)")
@pytest.mark.parametrize("workers", [1, pytest.param(2, marks=pytest.mark.load)])
def test_real_full_disk_and_read_only_mount(tmp_path: Path, workers: int) -> None:
    """A 16 KiB tmpfs fills up during a batch run; with room again the run resumes to the
    rows of a clean run; remounted read-only, a new run says so. With 2 workers (Dask
    processes, which see the same mount) it takes about 50 s on 2 busy cores (1 worker:
    about 20 s), so that variant runs with the ``load`` tests."""
    src = tmp_path / "in.jsonl"
    src.write_text("".join(f'{{"id": "r{i:02d}", "text": "Rash developed after amoxicillin dose {i}."}}\n'
                           for i in range(12)), encoding="utf-8")
    clean = tmp_path / "clean"
    run_batch("pv", [src], clean, partition_size=4, model="crf")
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    res = subprocess.run(["unshare", "-m", sys.executable, "-c", REAL_SCENARIO, str(mnt), str(src), str(clean),
                          str(workers)],
                         capture_output=True, text=True, env={**os.environ, "CLINEX_PROGRESS": "0"}, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    report = json.loads(res.stdout.splitlines()[-1])
    part = mnt / "run" / "parts"
    # the disk fills at a part file or its sidecar (which one depends on how wide the rows are)
    assert report["full"].startswith(f"[CLX001] {part}/part-0000"), report
    assert re.fullmatch(r"part-0000\d\.(parquet|errors\.json)", report["full"].split("/")[-1].split(":")[0]), report
    assert report["full"].endswith(f": cannot write the output file ({ENOSPC}){RESUME_HINT}")
    assert (report["tmp"], report["resumed"], report["same"]) == ([], "ok", True)
    assert report["read_only"] == f"[CLX001] {mnt / 'other' / 'manifest.json'}: cannot write the output file ({EROFS})"
