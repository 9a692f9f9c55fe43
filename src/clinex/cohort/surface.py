"""The cohort surface adapter: patient inputs -> patients -> decisions -> rows and files.

What ``clinex cohort screen``, ``clinex batch cohort`` and the web app share of the cohort
task (the surfaces reach the task through this module only; import contract ``surfaces``
in ``pyproject.toml``):

- batch (:data:`SURFACE`, looked up by :func:`clinex.surface.get_surface`): :func:`expand`
  (an input path as patient items), :func:`process` (one row per patient and criterion of
  :data:`COLUMNS`), :func:`resolve_model`, :func:`resolve_criteria`;
- the command line: :func:`count_patients`, :func:`screen_paths`;
- every surface: :func:`check_model_name` (registry names only, for a web client),
  :func:`read_patient`, :func:`screen` and :func:`model_version`;
- the web page and its downloads: :func:`read_notes`, :func:`decisions_to_dict`,
  :func:`date_warning`, :func:`write_decisions`.

The model of a run is :class:`clinex.surface.Settings` ``.model``: ``--model``, else
``$CLINEX_COHORT_MODEL``, else ``auto``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from clinex.cohort.models import model_names
from clinex.errors import ClinexError, InputError
from clinex.surface import Item, ItemError, TaskSurface, cached_model

__all__ = [
    "COLUMNS", "SURFACE", "model_names", "check_model_name", "model_version", "read_patient", "screen", "expand",
    "process", "resolve_model", "resolve_criteria", "count_patients", "screen_paths", "read_notes",
    "decisions_to_dict", "date_warning", "write_decisions",
]

COLUMNS: dict[str, str] = {
    "patient": "VARCHAR", "source": "VARCHAR", "criterion": "VARCHAR", "label": "VARCHAR", "score": "DOUBLE",
    "evidence_json": "VARCHAR",
}
"""The result columns of ``clinex batch cohort`` and their DuckDB types, in order."""


def check_model_name(name: str) -> None:
    """Only the registry's cohort model names (:data:`clinex.cohort.models.REGISTRY`).

    Raises
    ------
    ModelError
        ``name`` is not a registry name (the message lists them).
    """
    from clinex.cohort.models import REGISTRY

    REGISTRY.check_name(name, field="model")


def model_version(name: str) -> str:
    """The versioned id of the registry kind ``name`` stands for (``auto``: its kind).

    Raises
    ------
    ModelError
        Unknown name.
    """
    from clinex.cohort.models import REGISTRY
    from clinex.cohort.models import check_model_name as kind_of

    return REGISTRY[kind_of(name)].version


def read_patient(path: str | Path) -> Any:
    """One patient of an n2c2 XML file, or of a folder of dated ``.txt`` notes."""
    from clinex.cohort.formats.n2c2_xml import read_patient as read_xml
    from clinex.cohort.formats.notes_folder import read_notes_folder

    return read_notes_folder(path) if Path(path).is_dir() else read_xml(path)


def screen(patient: Any, criteria: Any = "n2c2", model: str = "auto", **options: Any) -> Any:
    """Decisions of one patient (:func:`clinex.cohort.screen`)."""
    from clinex.cohort import screen as screen_patient

    return screen_patient(patient, criteria, model=model, **options)


def resolve_criteria(values: Sequence[str]) -> list[str]:
    """Criterion set names and/or files or folders (files made absolute), validated now.

    Returns
    -------
    list of str
        ``[]`` for the default (``["n2c2"]``): the same run as without criteria.

    Raises
    ------
    SchemaError
        A criterion file does not validate (:func:`clinex.cohort.criteria.load_criterion`).
    """
    from clinex.cohort.criteria import load_criteria

    crits = [str(Path(c).resolve()) if Path(c).exists() else str(c) for c in values]
    load_criteria(crits)  # a bad criterion file stops the run before any item
    return [] if crits == ["n2c2"] else crits


def resolve_model(spec: str, criteria: Sequence[str] = ()) -> tuple[str, dict[str, str]]:
    """Build the cohort model ``spec`` names for ``criteria``; return its kind and the manifest record.

    The record is the built model's own id (an LLM kind adds the server's model name),
    else the kind's version.

    Raises
    ------
    ModelError, LLMError
        Unknown name; an LLM kind without a configured server.
    """
    from clinex.cohort.models import REGISTRY, get_model
    from clinex.cohort.models import check_model_name as kind_of

    kind = kind_of(spec)
    built = get_model(kind, list(criteria) or "n2c2")  # a model that cannot be built stops the run before any item
    return kind, {"model": str(getattr(built, "name", REGISTRY[kind].version))}


def expand(path: Path) -> Iterator[Item | ItemError]:
    """The patients under one input, as ``clinex cohort screen`` finds them: XML files,
    a note folder, or a folder of both; an empty folder is an error item."""
    from clinex.cohort.formats.n2c2_xml import _expand

    found = _expand(path)
    if not found:
        yield ItemError(str(path), str(InputError("no *.xml files or note folders", path=path)))
    for _kind, p in found:
        yield Item(p.stem if p.is_file() else p.name, str(p))


def process(
    items: Sequence[Item], criteria: Sequence[str] = ("n2c2",), model: str = "auto"
) -> tuple[list[dict[str, Any]], list[ItemError]]:
    """One row per patient and criterion; ``evidence_json`` holds a list of
    :func:`clinex.cohort.screen.evidence_record` (the layout of ``clinex cohort screen``)."""
    from clinex.cohort.models import get_model
    from clinex.cohort.screen import evidence_record

    # the model of clinex.cohort.screen, built once per worker (an LLM kind keeps one client)
    cohort_model = cached_model(f"cohort:{model}:{'|'.join(criteria)}", lambda: get_model(model, list(criteria)))
    rows, errors = [], []
    for it in items:
        try:
            patient = read_patient(it.payload)
            decisions = cohort_model.screen(patient)
        except ClinexError as exc:
            errors.append(ItemError(it.payload, str(exc)))
            continue
        for name, dec in decisions.items():
            rows.append(
                {
                    "patient": patient.id,
                    "source": it.payload,
                    "criterion": name,
                    "label": dec.label,
                    "score": float(dec.score),
                    "evidence_json": json.dumps([evidence_record(e) for e in dec.evidence], ensure_ascii=False),
                }
            )
    return rows, errors


SURFACE = TaskSurface("cohort", COLUMNS, expand, process, resolve_model=resolve_model,
                      batch_options=("criteria",), criteria=resolve_criteria)
"""The cohort task in ``clinex batch`` (:func:`clinex.surface.get_surface`)."""


# --------------------------------------------------------------------------- clinex cohort screen


def count_patients(paths: Sequence[str]) -> int:
    """Patients the inputs stand for, for the progress bar (a folder: its XML files and note
    folders, at least 1).

    Raises
    ------
    InputError
        An input that does not exist.
    """
    for p in paths:
        if not Path(p).exists():
            raise InputError("no such file or folder", path=p)
    total = 0
    for p in paths:
        q = Path(p)
        total += (len(list(q.glob("*.xml"))) + sum(1 for d in q.iterdir() if d.is_dir()) or 1) if q.is_dir() else 1
    return total


def screen_paths(*args: Any, **kwargs: Any) -> int:
    """Screen patient files and folders and write the decisions (:func:`clinex.cohort.screen.screen_paths`)."""
    from clinex.cohort.screen import screen_paths as run

    return run(*args, **kwargs)


# --------------------------------------------------------------------------- the web page and its downloads


def read_notes(folder: str | Path, patient_id: str | None = None) -> Any:
    """One patient of a folder of dated ``.txt`` notes
    (:func:`clinex.cohort.formats.notes_folder.read_notes_folder`)."""
    from clinex.cohort.formats.notes_folder import read_notes_folder

    return read_notes_folder(folder, patient_id=patient_id)


def decisions_to_dict(decisions: Any) -> dict[str, Any]:
    """Decisions as JSON (:func:`clinex.cohort.screen.decisions_to_dict`)."""
    from clinex.cohort.screen import decisions_to_dict as as_dict

    return as_dict(decisions)


def date_warning(patient: Any) -> str | None:
    """The warning about a patient's record dates, or None (:func:`clinex.cohort.screen.date_warning`)."""
    from clinex.cohort.screen import date_warning as warning

    return warning(patient)


def write_decisions(results: Sequence[Any], out: Path) -> Any:
    """Write decisions as ``clinex cohort screen -o`` does (:func:`clinex.cohort.screen.write_decisions`)."""
    from clinex.cohort.screen import write_decisions as write

    return write(results, out)
