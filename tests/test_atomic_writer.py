"""The one atomic writer (clinex.io.atomic): faults at the OS-call boundary, and a guard
that every write of an output, a batch file or a model.json goes through it (issue 21).

Faults are injected where the operating system answers (``os.open`` of the temporary
file, ``os.fsync``, ``os.replace``), with the ``errno`` a full disk (ENOSPC) or a
read-only mount (EROFS) gives; ``tests/surfaces/test_fs_faults.py`` also runs real ones on a
tiny tmpfs where the machine allows mounting.
"""

from __future__ import annotations

import ast
import errno
import os
from pathlib import Path

import pytest

import clinex
from clinex.errors import InputError
from clinex.io.atomic import TEMP_PATTERN, atomic_path, remove_temporaries, write_atomic, write_error

PKG = Path(clinex.__file__).resolve().parent


def _fail(monkeypatch: pytest.MonkeyPatch, name: str, code: int) -> None:
    """Make ``os.<name>`` fail with ``code`` (the real call's signature is kept)."""

    def fake(*args, **kwargs):
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(os, name, fake)


def test_write_then_replace_keeps_mode_and_leaves_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "sub" / "out.json"
    assert write_atomic(target, ['{"a": 1}\n', '{"b": 2}\n']) == target
    assert target.read_text(encoding="utf-8") == '{"a": 1}\n{"b": 2}\n'
    assert os.stat(target).st_mode & 0o777 == 0o666 & ~_umask()
    assert sorted(p.name for p in target.parent.iterdir()) == ["out.json"]
    with pytest.raises(InputError) as err:
        write_atomic(target, "new")
    assert str(err.value) == (f"[CLX001] {target}: file exists; refusing to overwrite it "
                              "(use --force to replace it)")
    write_atomic(target, b"\x00\x01", force=True)
    assert target.read_bytes() == b"\x00\x01"


def _umask() -> int:
    m = os.umask(0)
    os.umask(m)
    return m


@pytest.mark.parametrize(
    ("call", "code", "reason"),
    [
        ("fsync", errno.ENOSPC, "No space left on device"),  # delayed allocation: the disk fills at fsync
        ("replace", errno.EROFS, "Read-only file system"),
        ("replace", errno.EACCES, "Permission denied"),
    ],
)
def test_a_refused_write_keeps_the_old_file_and_leaves_no_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, call: str, code: int, reason: str
) -> None:
    target = tmp_path / "results.csv"
    target.write_text("old\n", encoding="utf-8")
    _fail(monkeypatch, call, code)
    with pytest.raises(InputError) as err:
        write_atomic(target, "new\n", force=True)
    assert str(err.value) == f"[CLX001] {target}: cannot write the output file ({reason})"
    monkeypatch.undo()
    assert target.read_text(encoding="utf-8") == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["results.csv"]


def test_a_read_only_folder_fails_when_the_temporary_is_created(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_open = os.open

    def ro_open(path, flags, *args, **kwargs):
        if flags & os.O_CREAT:
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", ro_open)
    with pytest.raises(InputError) as err:
        write_atomic(tmp_path / "a.jsonl", "x\n")
    assert str(err.value) == f"[CLX001] {tmp_path / 'a.jsonl'}: cannot write the output file (Read-only file system)"
    assert list(tmp_path.iterdir()) == []


def test_atomic_path_for_a_library_that_writes_by_name(tmp_path: Path) -> None:
    target = tmp_path / "plot.png"
    with atomic_path(target) as tmp:
        assert tmp.parent == tmp_path and TEMP_PATTERN.match(tmp.name).group("name") == "plot.png"
        tmp.write_bytes(b"PNG")
        assert not target.exists()  # nothing at the target until the block is done
    assert target.read_bytes() == b"PNG" and sorted(tmp_path.iterdir()) == [target]
    # a library error (not an OSError) propagates unchanged and leaves nothing
    with pytest.raises(ZeroDivisionError):
        with atomic_path(tmp_path / "b.png") as tmp:
            tmp.write_bytes(b"half")
            1 / 0
    # an OSError inside the block (a library that hit the full disk) becomes the CLX001
    with pytest.raises(InputError, match=r"b\.png: cannot write the output file \(No space left on device\)$"):
        with atomic_path(tmp_path / "b.png"):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    assert sorted(tmp_path.iterdir()) == [target]


def test_a_generator_that_raises_leaves_nothing(tmp_path: Path) -> None:
    def rows():
        yield "a\n"
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        write_atomic(tmp_path / "x.txt", rows())
    assert list(tmp_path.iterdir()) == []


def test_write_error_and_remove_temporaries(tmp_path: Path) -> None:
    assert str(write_error("out", OSError(errno.ENOSPC, "No space left on device"))) == (
        "[CLX001] out: cannot write the output file (No space left on device)")
    assert str(write_error("d", OSError(errno.EROFS, "Read-only file system"), folder=True)) == (
        "[CLX001] d: cannot create the output folder (Read-only file system)")
    for name in (".manifest.json.abcd_123.tmp", ".part-00001.parquet.zzzzzzzz.tmp", "keep.tmp", ".x.short.tmp"):
        (tmp_path / name).write_text("")
    assert remove_temporaries(tmp_path, ["manifest.json"]) == [tmp_path / ".manifest.json.abcd_123.tmp"]
    assert remove_temporaries(tmp_path) == [tmp_path / ".part-00001.parquet.zzzzzzzz.tmp"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [".x.short.tmp", "keep.tmp"]
    assert remove_temporaries(tmp_path / "missing") == []


# --------------------------------------------------------------------------- guard

#: Library calls that write a file by name; allowed inside ``with atomic_path(...) as tmp``
#: when they write to ``tmp``.
LIBRARY_WRITERS = {"savefig", "dump", "save_file", "save_pretrained", "to_disk", "copyfile", "copy2",
                   "copytree", "move", "savez", "savez_compressed"}

#: Writes that do not go through clinex.io.atomic, each with the reason it may not.
#: Keys: (module under clinex/, enclosing function, call).
ALLOWED = {
    # model folders: `clinex pv train|gate` build them in a staging folder and swap it in whole
    # (pv/train_cli.py _pv_staging_dir/_pv_swap_in); model.json, written last and atomically, marks a
    # folder as a model, so a folder torn while its weights were written is never loaded
    ("pv/models/crf_persist.py", "save", "shutil.copyfile"): "model weights, staged folder",
    ("pv/models/onnx/model.py", "save", "shutil.copyfile"): "model weights, staged folder",
    ("pv/models/transformer/export.py", "_store_half", "onnx.save"): "model weights, staged folder",
    ("pv/models/transformer/export.py", "export_onnx", "shutil.copyfile"): "model weights, staged folder",
    ("pv/models/transformer/export.py", "_store_graph", "shutil.copyfile"): "model weights, staged folder",
    ("pv/models/transformer/persist.py", "save", "enc.save_pretrained"): "model weights, staged folder",
    ("pv/models/transformer/persist.py", "save", "self.tokenizer_.save_pretrained"): "tokenizer, staged folder",
    ("pv/models/transformer/persist.py", "save", "save_file"): "model weights, staged folder",
    ("pv/gate.py", "save", "np.savez_compressed"): "gate weights inside a staged model folder",
    # the staging swap itself: folders renamed, not files written
    ("pv/train_cli.py", "_pv_swap_in", "out.rename"): "model folder swap",
    ("pv/train_cli.py", "_pv_swap_in", "staging.rename"): "model folder swap",
    # downloads go to a staging folder, are SHA-256 checked, then moved in (datasets.download)
    ("datasets.py", "_urllib_fetch", "open('wb')"): "download into a staging folder",
    ("datasets.py", "download", "os.replace"): "verified download moved into place",
    # the web app's uploads: request-scoped temporary files in a private temporary folder,
    # removed with the request; no user-visible output
    ("web/uploads.py", "upload", "open('wb')"): "upload spooled to a temporary folder",
    ("web/tasks.py", "_criteria_paths", "write_text"): "uploaded criteria in a temporary folder",
    ("web/tasks.py", "_posted_patient", "write_text"): "uploaded notes in a temporary folder",
}


def _name(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_name(node.value)}.{node.attr}"
    return "?"


def _mode(call: ast.Call) -> str | None:
    for kw in call.keywords:
        if kw.arg == "mode" and isinstance(kw.value, ast.Constant):
            return kw.value.value
    f = call.func
    idx = 1 if isinstance(f, ast.Name) or (isinstance(f, ast.Attribute) and f.attr == "fdopen") else 0
    if len(call.args) > idx and isinstance(call.args[idx], ast.Constant) and isinstance(call.args[idx].value, str):
        return call.args[idx].value
    return None


def file_writes(source: str) -> list[tuple[int, str, str]]:
    """``(line, enclosing function, call)`` of every file write in ``source`` that does not
    go through clinex.io.atomic: ``write_text``/``write_bytes``, ``os.replace``/``os.rename``/
    ``Path.rename``, ``open``/``Path.open``/``os.fdopen`` with a w/a/x/+ mode, a library
    writer (:data:`LIBRARY_WRITERS`, ``onnx.save``) not aimed at an ``atomic_path`` temporary,
    and SQL ``COPY ... TO`` outside an ``atomic_path`` block."""
    hits: list[tuple[int, str, str]] = []

    def visit(node: ast.AST, func: str, tmps: frozenset[str]) -> None:
        for child in ast.iter_child_nodes(node):
            f2, t2 = func, tmps
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                f2 = child.name
            if isinstance(child, ast.With):
                for item in child.items:
                    ce = item.context_expr
                    if (isinstance(ce, ast.Call) and _name(ce.func).split(".")[-1] == "atomic_path"
                            and isinstance(item.optional_vars, ast.Name)):
                        t2 = t2 | {item.optional_vars.id}
            if isinstance(child, ast.Call):
                full = _name(child.func)
                last = full.split(".")[-1]
                kind = None
                if last in ("write_text", "write_bytes"):
                    kind = last
                elif full in ("os.replace", "os.rename") or last == "rename":
                    kind = full
                elif last in ("open", "fdopen"):
                    m = _mode(child)
                    if isinstance(m, str) and any(c in m for c in "wax+"):
                        kind = f"open({m!r})"
                elif last in LIBRARY_WRITERS or full == "onnx.save":
                    if not full.startswith(("json.", "yaml.", "copy.")):
                        target = child.args[1] if last == "dump" and len(child.args) > 1 else (
                            child.args[0] if child.args else None)
                        if not (isinstance(target, ast.Name) and target.id in t2):
                            kind = full
                if kind:
                    hits.append((child.lineno, func, kind))
            if isinstance(child, (ast.Constant, ast.JoinedStr)):
                text = child.value if isinstance(child, ast.Constant) else "".join(
                    v.value for v in child.values if isinstance(v, ast.Constant))
                if isinstance(text, str) and "COPY " in text and " TO '" in text and not tmps:
                    hits.append((child.lineno, func, "SQL COPY TO"))
                continue  # an f-string's parts are not checked twice
            visit(child, f2, t2)

    visit(ast.parse(source), "<module>", frozenset())
    return hits


def test_every_file_write_goes_through_the_atomic_writer() -> None:
    found, seen = [], set()
    for path in sorted(PKG.rglob("*.py")):
        rel = str(path.relative_to(PKG))
        if rel == "io/atomic.py":
            continue
        for line, func, kind in file_writes(path.read_text(encoding="utf-8")):
            if (rel, func, kind) in ALLOWED:
                seen.add((rel, func, kind))
            else:
                found.append(f"{rel}:{line}: {func}: {kind}")
    assert not found, ("write these through clinex.io.atomic (write_atomic / atomic_path), or add them "
                       "to ALLOWED with the reason:\n" + "\n".join(found))
    assert not set(ALLOWED) - seen, f"stale ALLOWED entries: {sorted(set(ALLOWED) - seen)}"


def test_the_guard_catches_the_writes_this_change_removed() -> None:
    removed = '''
def save(out, meta):
    (out / "model.json").write_text(json.dumps(meta), encoding="utf-8")
def run(manifest_path, tmp, err_path, out):
    manifest_path.write_text("{}", encoding="utf-8")
    os.replace(tmp, err_path)
    with (out / "errors.jsonl").open("w", encoding="utf-8") as fh:
        pass
    con.execute(f"COPY t TO '{tmp}' (FORMAT PARQUET)")
def plot(fig, png):
    fig.savefig(png, format="png")
def dump(state, p):
    joblib.dump(state, p)
'''
    assert [(f, k) for _, f, k in file_writes(removed)] == [
        ("save", "write_text"), ("run", "write_text"), ("run", "os.replace"), ("run", "open('w')"),
        ("run", "SQL COPY TO"), ("plot", "fig.savefig"), ("dump", "joblib.dump")]
    kept = '''
def plot(fig, png):
    with atomic_path(png, force=True) as tmp:
        fig.savefig(tmp, format="png")
        con.execute(f"COPY t TO '{tmp}' (FORMAT PARQUET)")
    with open(png, "rb") as fh:
        json.dump(fh, x)
'''
    assert file_writes(kept) == []
