"""The import layers of docs/ARCHITECTURE.md, enforced.

``lint-imports`` reads the contracts in ``pyproject.toml`` ([tool.importlinter]): ``clinex.io``
imports no task, the layers (cli > web, batch > pv | rob | cohort > io, metrics > text > errors)
hold, and no package has an import cycle. The grimp check below states "no cycles" once more at
module level, where a cycle through a package's own ``__init__`` would also show.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[1]


def _lint_imports() -> list[str]:
    exe = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or shutil.which("lint-imports")
    assert exe, "lint-imports not found: pip install -e '.[test]' (import-linter)"
    return [exe]


def test_import_contracts_hold() -> None:
    # from the repo root, so that lint-imports reads pyproject.toml; --no-cache writes nothing
    proc = subprocess.run(
        [*_lint_imports(), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 broken" in proc.stdout
    # the surface layer's contract is among them (clinex.web, clinex.batch and clinex.cli reach a
    # task only through clinex.<task>.surface, issue 24)
    assert "surfaces reach a task only through clinex.<task>.surface" in " ".join(proc.stdout.split())


def test_batch_and_cli_import_no_task_internals() -> None:
    """The surfaces contract, stated on the import graph: clinex.batch imports no task module
    (it looks a surface up by name), clinex.cli only ``clinex.<task>.surface``."""
    graph = grimp.build_graph("clinex", cache_dir=None)
    tasks = ("clinex.pv", "clinex.rob", "clinex.cohort")
    seen = {}
    for source in ("clinex.batch", "clinex.cli", "clinex.surface"):
        for module in {source} | set(graph.find_descendants(source)):
            for target in graph.find_modules_directly_imported_by(module):
                if target.startswith(tuple(t + "." for t in tasks)) or target in tasks:
                    seen.setdefault(source, set()).add(target)
    assert seen == {"clinex.cli": {"clinex.pv.surface"}}


def test_web_imports_only_the_task_surfaces() -> None:
    """The web app (every module of clinex.web) reaches the tasks only through their surface
    adapters, ``clinex.<task>.surface`` (issue 24: no task internals, no "until the web is
    ported" exceptions left in the import contract)."""
    graph = grimp.build_graph("clinex", cache_dir=None)
    tasks = ("clinex.pv", "clinex.rob", "clinex.cohort")
    seen: set[str] = set()
    for module in {"clinex.web"} | set(graph.find_descendants("clinex.web")):
        for target in graph.find_modules_directly_imported_by(module):
            if target in tasks or target.startswith(tuple(t + "." for t in tasks)):
                seen.add(target)
    assert seen == {"clinex.pv.surface", "clinex.rob.surface", "clinex.cohort.surface"}
    pyproject = (ROOT / "pyproject.toml").read_text("utf-8")
    assert "until the web is ported" not in pyproject


def test_no_module_level_import_cycles() -> None:
    graph = grimp.build_graph("clinex", cache_dir=None)
    # Tarjan's strongly connected components over module -> module imports
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(root: str) -> None:  # iterative, so deep chains never hit the recursion limit
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, children = work[-1]
            for w in children:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph.find_modules_directly_imported_by(w)))))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        cycles.append(sorted(comp))

    for module in sorted(graph.modules):
        if module not in index:
            visit(module)
    assert not cycles, f"import cycles: {cycles}"
