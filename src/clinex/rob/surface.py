"""The RoB surface adapter: trial reports -> documents -> assessments -> rows and files.

What ``clinex rob assess``, ``clinex batch rob`` and the web app share of the RoB task (the
surfaces reach the task through this module only; import contract ``surfaces`` in
``pyproject.toml``):

- batch (:data:`SURFACE`, looked up by :func:`clinex.surface.get_surface`): :func:`expand`
  (an input path as trial items), :func:`process` (one row per trial and signalling
  question of :data:`COLUMNS`), :func:`resolve_model`;
- the command line: :func:`expand_inputs` (folders as their report files);
- every surface: :func:`check_model_name` (registry names only, for a web client),
  :func:`load_model`, :func:`load_trial` and :func:`assess`;
- the web page and its downloads: :func:`assessments_from_json`, :func:`render_html`,
  :func:`write_json`, :func:`plot_traffic_light`, :func:`write_robvis`.

The model of a run is :class:`clinex.surface.Settings` ``.model``: ``--model``, else
``$CLINEX_ROB_MODEL``, else ``auto``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from clinex.errors import ClinexError, InputError, SchemaError
from clinex.rob.evidence import AUTO_KIND, model_names
from clinex.surface import Item, ItemError, TaskSurface, cached_model, folder_files

__all__ = [
    "COLUMNS", "SUFFIXES", "SURFACE", "AUTO_KIND", "model_names", "check_model_name", "load_model", "load_trial",
    "assess", "expand", "process", "resolve_model", "expand_inputs", "assessments_from_json", "render_html",
    "write_json", "plot_traffic_light", "write_robvis",
]

SUFFIXES = (".pdf", ".txt", ".xml", ".html", ".htm")
"""The files a folder input stands for (``.htm`` as ``clinex rob assess`` reads it)."""

COLUMNS: dict[str, str] = {
    "document": "VARCHAR", "source": "VARCHAR", "domain": "VARCHAR", "domain_risk": "VARCHAR", "overall": "VARCHAR",
    "sq": "VARCHAR", "response": "VARCHAR", "judgement": "VARCHAR", "confidence": "DOUBLE",
    "evidence_json": "VARCHAR",
}
"""The result columns of ``clinex batch rob`` and their DuckDB types, in order."""


def check_model_name(name: str) -> None:
    """Only the registry's evidence model names (:data:`clinex.rob.evidence.REGISTRY`).

    Raises
    ------
    ModelError
        ``name`` is not a registry name (the message lists them).
    """
    from clinex.rob.evidence import REGISTRY

    REGISTRY.check_name(name, field="model")


def load_model(spec: str) -> Any:
    """The evidence model ``spec`` names, or a model file (:func:`clinex.rob.evidence.load_evidence_model`).

    Raises
    ------
    ModelError
        Unknown name, missing trained model, or a file that is not a model.
    """
    from clinex.rob.evidence import load_evidence_model

    return load_evidence_model(spec)


def load_trial(path: str | Path) -> Any:
    """A trial report as a document (:func:`clinex.rob.assess.load_trial`)."""
    from clinex.rob.assess import load_trial as load

    return load(path)


def assess(document: Any, model: Any, **options: Any) -> Any:
    """The RoB 2 assessment of one document (:func:`clinex.rob.assess.assess`)."""
    from clinex.rob.assess import assess as run

    return run(document, model, **options)


def resolve_model(spec: str, criteria: Sequence[str] = ()) -> tuple[str, dict[str, str]]:
    """Load the evidence model ``spec`` names; return what workers load (``auto`` resolved,
    a file made absolute) and the manifest record.

    Raises
    ------
    ModelError
        Unknown name, missing trained model, or a file that is not a model.
    """
    from clinex.rob.evidence import AUTO, REGISTRY

    loaded = load_model(spec)
    if spec == AUTO:
        spec = AUTO_KIND
    if spec in REGISTRY:
        return spec, {"model": loaded.name}
    folder = str(Path(spec).resolve())
    return folder, {"model": loaded.name, "model_folder": folder}


def expand(path: Path) -> Iterator[Item | ItemError]:
    """One item per trial file; a folder gives its report files (none: one error item)."""
    for p in folder_files(path, SUFFIXES):
        yield p if isinstance(p, ItemError) else Item(p.name, str(p))


def _rows(document: str, source: str, result: Any) -> list[dict[str, Any]]:
    """One row of :data:`COLUMNS` per signalling question of an assessment."""
    return [
        {
            "document": document,
            "source": source,
            "domain": dom.domain,
            "domain_risk": dom.risk,
            "overall": result.overall,
            "sq": ans.sq,
            "response": ans.response,
            "judgement": ans.judgement,
            "confidence": float(ans.confidence),
            "evidence_json": json.dumps([e.model_dump(mode="json") for e in ans.evidence], ensure_ascii=False),
        }
        for dom in result.domains
        for ans in dom.answers
    ]


def process(items: Sequence[Item], model: str = "auto") -> tuple[list[dict[str, Any]], list[ItemError]]:
    """One row per trial and signalling question; a report that cannot be read or assessed is an error item."""
    from clinex.rob.assess import assess_path

    evidence_model = cached_model(f"rob:{model}", lambda: load_model(model))
    rows, errors = [], []
    for it in items:
        try:
            result = assess_path(it.payload, evidence_model)
        except ClinexError as exc:
            errors.append(ItemError(it.payload, str(exc)))
            continue
        rows.extend(_rows(it.id, it.payload, result))
    return rows, errors


SURFACE = TaskSurface("rob", COLUMNS, expand, process, resolve_model=resolve_model)
"""The RoB task in ``clinex batch`` (:func:`clinex.surface.get_surface`)."""


def expand_inputs(inputs: Sequence[str], skipped: Callable[[str, str], None]) -> tuple[list[str], int]:
    """Replace each folder by its report files (sorted by name); count the folders without any.

    Each such folder is told to ``skipped(folder, reason)`` (reason
    ``[CLX001] FOLDER: folder without ... files``).
    """
    files: list[str] = []
    failed = 0
    for item in inputs:
        if not Path(item).is_dir():
            files.append(item)
            continue
        for p in folder_files(Path(item), SUFFIXES, label=item):
            if isinstance(p, ItemError):
                failed += 1
                skipped(item, p.message)
            else:
                files.append(str(p))
    return files, failed


# --------------------------------------------------------------------------- the web page and its downloads


def assessments_from_json(raw: list[dict[str, Any]]) -> list[Any]:
    """Assessments as ``/api/rob/assess`` returns them, validated as
    :class:`clinex.rob.types.TrialAssessment`.

    Raises
    ------
    InputError
        No assessment (``field`` ``assessments``).
    SchemaError
        One that does not validate: its number, the field and the problem.
    """
    from pydantic import ValidationError

    from clinex.rob.types import TrialAssessment

    if not raw:
        raise InputError("no assessments", field="assessments")
    out = []
    for k, a in enumerate(raw):
        try:
            out.append(TrialAssessment.model_validate(a))
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first.get("loc", ()))
            raise SchemaError(f"assessment {k + 1}: {where}: {first.get('msg', 'invalid')}",
                              field="assessments") from None
    return out


def render_html(result: Any, document: Any) -> str:
    """The HTML report ``clinex rob assess`` writes (:func:`clinex.rob.report.render_html`)."""
    from clinex.rob.report import render_html as render

    return render(result, document)


def write_json(result: Any, path: Path) -> Path:
    """Write the ``.rob.json`` file ``clinex rob assess`` writes (:func:`clinex.rob.report.write_json`)."""
    from clinex.rob.report import write_json as write

    return write(result, path)


def plot_traffic_light(results: Sequence[Any], path: Path, **options: Any) -> Any:
    """The traffic-light plot of ``results`` (:func:`clinex.rob.plot.plot_traffic_light`)."""
    from clinex.rob.plot import plot_traffic_light as plot

    return plot(results, path, **options)


def write_robvis(results: Sequence[Any], labels: Sequence[str], path: Path) -> Path:
    """The robvis CSV of ``results`` (:func:`clinex.rob.robvis.robvis_rows`,
    :func:`clinex.rob.robvis.write_robvis_csv`)."""
    from clinex.rob.robvis import robvis_rows, write_robvis_csv

    return write_robvis_csv(robvis_rows(results, labels), path)
