"""Every public module's ``__all__`` names things that exist (STYLE: tested public API)."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import clinex

_SKIP = {"clinex.__main__"}


def _modules() -> list[str]:
    names = ["clinex"]
    for info in pkgutil.walk_packages(clinex.__path__, prefix="clinex."):
        if info.name not in _SKIP:
            names.append(info.name)
    return sorted(names)


@pytest.mark.parametrize("name", _modules())
def test_all_names_exist(name: str) -> None:
    module = importlib.import_module(name)
    exported = getattr(module, "__all__", None)
    if exported is None:
        pytest.skip(f"{name} has no __all__")
    missing = [n for n in exported if not hasattr(module, n)]
    assert missing == [], f"{name}.__all__ names missing objects: {missing}"
    assert len(set(exported)) == len(exported)


def test_top_level_api() -> None:
    import clinex.cohort
    import clinex.pv
    import clinex.rob

    assert callable(clinex.pv.extract)
    assert callable(clinex.cohort.screen)
    assert callable(clinex.rob.assess)
    assert clinex.__version__ == "0.1.0"
