"""The surface layer's shared pieces (clinex.surface): settings, exit status, the surface registry.

Every task resolves its model the same way (option, then ``CLINEX_<TASK>_MODEL``, then
``auto``) on every surface; one exit status for partial failure; batch finds a task's
adapter by name.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from clinex.errors import SchemaError
from clinex.surface import (
    SURFACES,
    Settings,
    TaskSurface,
    exit_status,
    finish,
    get_surface,
    model_env,
    option_owner,
    takes_option,
)

TASKS = ("pv", "cohort", "rob")


@pytest.mark.parametrize("task", TASKS)
def test_settings_option_beats_env_beats_default(task: str) -> None:
    env = {model_env(task): "from-env"}
    assert Settings.resolve(task, model="from-option", environ=env) == Settings(task, "from-option", "option")
    assert Settings.resolve(task, model=None, environ=env) == Settings(task, "from-env", "env")
    assert Settings.resolve(task, model="", environ=env) == Settings(task, "from-env", "env")  # empty: not given
    assert Settings.resolve(task, environ={}) == Settings(task, "auto", "default")
    # another task's variable is not this task's
    other = next(t for t in TASKS if t != task)
    assert Settings.resolve(task, environ={model_env(other): "x"}).model == "auto"


def test_settings_read_the_process_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLINEX_PV_MODEL", "crf")
    monkeypatch.delenv("CLINEX_ROB_MODEL", raising=False)
    assert Settings.resolve("pv").model == "crf"
    assert Settings.resolve("rob").model == "auto"
    assert Settings.resolve("pv", model=Path("folder")).model == "folder"
    assert model_env("cohort") == "CLINEX_COHORT_MODEL"


@pytest.mark.parametrize(
    ("done", "skipped", "status"),
    [(5, 0, 0), (0, 0, 0), (5, 1, 1), (1, 9, 1), (0, 1, 2), (0, 7, 2)],
)
def test_exit_status(done: int, skipped: int, status: int) -> None:
    assert exit_status(done, skipped) == status


def test_finish_returns_on_zero_and_exits_otherwise() -> None:
    assert finish(0) is None
    for status in (1, 2):
        with pytest.raises(SystemExit) as exc:
            finish(status)
        assert exc.value.code == status


@pytest.mark.parametrize("task", TASKS)
def test_registry_gives_each_tasks_surface(task: str) -> None:
    surface = get_surface(task)
    assert isinstance(surface, TaskSurface)
    assert surface.name == task
    assert SURFACES[task] == f"clinex.{task}.surface"
    assert list(surface.columns)[1] == "source"  # every task's rows name their input
    assert callable(surface.expand) and callable(surface.process) and callable(surface.resolve_model)


def test_registry_refuses_an_unknown_task_listing_the_valid_ones() -> None:
    with pytest.raises(SchemaError) as err:
        get_surface("ner")
    assert str(err.value) == "[CLX005] unknown task 'ner'; valid: pv, cohort, rob"


def test_batch_options_belong_to_one_task() -> None:
    assert option_owner("criteria") == "cohort"
    assert option_owner("drugs") == "pv"
    assert takes_option("pv", "batch_size") and not takes_option("rob", "batch_size")
    assert not takes_option("nope", "drugs")


def test_batch_tasks_are_the_surfaces() -> None:
    from clinex.batch import TASKS as BATCH_TASKS

    assert list(BATCH_TASKS) == list(SURFACES)
    assert "pv" in BATCH_TASKS and "nope" not in BATCH_TASKS
    assert BATCH_TASKS["rob"] is get_surface("rob")
    with pytest.raises(KeyError):
        BATCH_TASKS["nope"]


def _clinex(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``clinex ARGS`` in a fresh process, with ``env`` added to (or, for None, removed from) the environment."""
    full = {k: v for k, v in os.environ.items() if k != "CLINEX_PV_MODEL"}
    full.update(env)
    full["CLINEX_PROGRESS"] = "0"
    return subprocess.run([sys.executable, "-m", "clinex.cli", *args], capture_output=True, text=True,
                          env=full, timeout=300)


def test_pv_extract_honours_clinex_pv_model() -> None:
    text = "Rash after amoxicillin."
    by_env = _clinex("pv", "extract", text, env={"CLINEX_PV_MODEL": "crf"})
    by_option = _clinex("pv", "extract", text, "--model", "crf", env={})
    assert (by_env.returncode, by_env.stderr) == (0, "")
    assert by_env.stdout.splitlines()[0] == "model: clinex.pv.crf.v1"
    assert by_env.stdout == by_option.stdout
    # the option beats the variable
    both = _clinex("pv", "extract", text, "--model", "crf", env={"CLINEX_PV_MODEL": "no-such-model"})
    assert (both.returncode, both.stdout) == (0, by_option.stdout)
    # a bad variable is the same error as the same bad option, naming the variable
    bad_env = _clinex("pv", "extract", text, env={"CLINEX_PV_MODEL": "no-such-model"})
    bad_option = _clinex("pv", "extract", text, "--model", "no-such-model", env={})
    assert (bad_env.returncode, bad_env.stdout) == (2, "")
    assert bad_env.stderr == bad_option.stderr.rstrip("\n") + " (the model named by $CLINEX_PV_MODEL)\n"
    assert bad_env.stderr.startswith("[CLX006] ")
    # an empty variable is no setting (``export CLINEX_PV_MODEL=`` clears it): auto
    empty = _clinex("pv", "extract", text, env={"CLINEX_PV_MODEL": ""})
    assert (empty.returncode, empty.stdout) == (0, _clinex("pv", "extract", text, env={}).stdout)
