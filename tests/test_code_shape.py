"""The code's shape stays within issue 24's targets, measured the same way every time.

* **Modules**: at most :data:`MAX_BIG_MODULES` modules of ``clinex`` over
  :data:`MODULE_LINES` lines (physical lines of the file).
* **Functions**: at most :data:`MAX_LONG_FUNCTIONS` functions or methods with more than
  :data:`FUNCTION_LOC` lines of code (lines that are neither blank nor a comment, the
  docstring left out; nested functions count in their own right and inside their parent).
* **Branching**: no function with a cyclomatic complexity over :data:`MAX_COMPLEXITY`, as
  radon counts it (McCabe's count of decision points + 1, each ``and`` / ``or`` a decision
  too; T. J. McCabe, "A Complexity Measure", IEEE TSE 2(4), 1976; radon's
  ``cc_visit``).

Each failure lists the offenders, so the one who adds a long function sees where.
"""

from __future__ import annotations

import ast
from pathlib import Path

from radon.complexity import cc_visit

import clinex

PKG = Path(clinex.__file__).resolve().parent

#: Issue 24's targets.
MODULE_LINES = 600
MAX_BIG_MODULES = 3
FUNCTION_LOC = 80
MAX_LONG_FUNCTIONS = 5
MAX_COMPLEXITY = 30


def _modules() -> list[Path]:
    return sorted(PKG.rglob("*.py"))


def _loc(lines: list[str], node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Lines of code of ``node``: not blank, not only a comment, not its docstring."""
    body = lines[node.lineno - 1 : node.end_lineno]
    skip = 0
    first = node.body[0] if node.body else None
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        skip = first.end_lineno - first.lineno + 1
    return sum(1 for line in body if line.strip() and not line.strip().startswith("#")) - skip


def long_functions(path: Path, limit: int = FUNCTION_LOC) -> list[str]:
    """``module:line name (N lines)`` of every function in ``path`` with more than ``limit``
    lines of code."""
    src = path.read_text(encoding="utf-8")
    lines = src.splitlines()
    out = []
    for node in ast.walk(ast.parse(src)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            n = _loc(lines, node)
            if n > limit:
                out.append(f"{path.relative_to(PKG)}:{node.lineno} {node.name} ({n} lines)")
    return out


def complex_functions(path: Path, limit: int = MAX_COMPLEXITY) -> list[str]:
    """``module:line name (count)`` of every function or method in ``path`` whose radon
    cyclomatic complexity is over ``limit``."""
    found = set()
    for block in cc_visit(path.read_text(encoding="utf-8")):
        # a class block lists its methods (radon also returns them on their own)
        for b in getattr(block, "methods", [block]):
            if b.complexity > limit:
                found.add((b.lineno, f"{path.relative_to(PKG)}:{b.lineno} {b.fullname} ({b.complexity})"))
    return [text for _, text in sorted(found)]


def test_few_big_modules() -> None:
    big = []
    for p in _modules():
        n = len(p.read_text(encoding="utf-8").splitlines())
        if n > MODULE_LINES:
            big.append(f"{p.relative_to(PKG)} ({n} lines)")
    assert len(big) <= MAX_BIG_MODULES, f"{len(big)} modules over {MODULE_LINES} lines:\n" + "\n".join(big)


def test_few_long_functions() -> None:
    found = [f for p in _modules() for f in long_functions(p)]
    assert len(found) <= MAX_LONG_FUNCTIONS, (
        f"{len(found)} functions over {FUNCTION_LOC} lines of code:\n" + "\n".join(found)
    )


def test_no_branchy_function() -> None:
    found = [f for p in _modules() for f in complex_functions(p)]
    assert found == [], f"functions with a complexity over {MAX_COMPLEXITY}:\n" + "\n".join(found)


def test_the_measures_see_what_they_should(tmp_path: Path) -> None:
    """A function with 31 ``if``s counts 32; one of 81 statements counts 81 lines, its
    docstring and comments left out."""
    ifs = "\n".join(f"    if x == {i}:\n        return {i}" for i in range(31))
    stmts = "\n".join(f"    y{i} = {i}  # c" for i in range(81))
    (tmp_path / "m.py").write_text(
        f'def branchy(x):\n{ifs}\n\n\ndef long():\n    """Doc.\n\n    More.\n    """\n    # a comment\n\n{stmts}\n',
        encoding="utf-8",
    )
    global PKG
    saved, PKG = PKG, tmp_path
    try:
        assert complex_functions(tmp_path / "m.py") == ["m.py:1 branchy (32)"]
        assert long_functions(tmp_path / "m.py") == [f"m.py:{31 * 2 + 4} long (81 lines)"]
    finally:
        PKG = saved
