"""The web app's task work, run in its worker threads: each function reaches its task
through the task's surface adapter (:mod:`clinex.pv.surface`, :mod:`clinex.rob.surface`,
:mod:`clinex.cohort.surface`) and lays the result out with :mod:`clinex.web.views`.

- PV: :func:`pv_work` (pasted text), :func:`pv_upload_work` (a ``.txt`` or JSON-lines file);
  with a format, :func:`pv_export` (PHEE JSON lines, a zip of brat pairs, the event table).
- Cohort: :func:`cohort_work` (one n2c2 XML upload), :func:`cohort_patient_work` (an n2c2
  XML file or dated notes, with optional criterion files; the view or a download).
- RoB: :func:`rob_work`, :func:`rob_report_work` (one uploaded trial), :func:`rob_plot_work`,
  :func:`rob_json_work`, :func:`rob_robvis_work` (downloads of posted assessments).

The model names were checked (:func:`clinex.<task>.surface.check_model_name`) and chosen
(:class:`clinex.surface.Settings`) by :mod:`clinex.web.app` before the work starts.
"""

from __future__ import annotations

import shutil
import tempfile
import threading
import zipfile
from pathlib import Path
from typing import Any

from clinex.cohort import surface as cohort
from clinex.errors import InputError
from clinex.pv import surface as pv
from clinex.rob import surface as rob
from clinex.web.guard import File
from clinex.web.uploads import disk_name, sniff
from clinex.web.views import cohort_view, pv_csv, pv_document, rob_labels

__all__ = [
    "pv_work", "pv_upload_work", "pv_export", "cohort_work", "cohort_patient_work", "rob_load", "rob_work",
    "rob_report_work", "rob_plot_work", "rob_json_work", "rob_robvis_work",
]

_PV_LOCK = threading.Lock()  # one loaded model per kind, shared: the CRF tagger and the
# fast tokenizers are not thread-safe, so pv work runs one request at a time
_PLOT_LOCK = threading.Lock()  # matplotlib's rc settings are process-wide


# ----------------------------------------------------------------------------- PV


def _pv_records(records: list[tuple[str, str]], model_name: str) -> tuple[str, list[Any]]:
    """(model id, records) of JSON-lines records, each passed to the model whole."""
    with _PV_LOCK:
        model = pv.load(model_name)
        items = pv.extract(records, model)
    return pv.model_id(model), items


def _pv_text(text: str, model_name: str, unit: str, name: str) -> tuple[str, Any, list[Any]]:
    """(model id, whole record, [(start, end, sentence record)]) of plain text."""
    with _PV_LOCK:
        model = pv.load(model_name)
        whole, sentences = pv.extract_text(text, model, name=name, split=unit == "text")
    return pv.model_id(model), whole, sentences


def pv_export(fmt: str, name: str, items: list[Any], rows: list[dict[str, Any]]) -> File:
    """The download of PV results: PHEE JSON lines, a zip of brat pairs, or the event table."""
    if fmt == "csv":
        return File(pv_csv(rows).encode("utf-8"), "text/csv; charset=utf-8", f"{name}.events.csv")
    if fmt == "phee":
        return File(pv.phee_json_bytes(items), "application/json", f"{name}.phee.json")
    return File(pv.brat_zip(items), "application/zip", f"{name}.brat.zip")


def pv_work(text: str, model_name: str, unit: str = "text", fmt: str | None = None) -> Any:
    """Pasted text: the page's view (:func:`clinex.web.views.pv_document`) or a download."""
    mid, whole, sentences = _pv_text(text, model_name, unit, "text")
    doc = pv_document(whole, sentences)
    if fmt is not None:
        return pv_export(fmt, "text", [item for _, _, item in sentences], doc["table"])
    return {"model": mid, **doc}


def _jsonl_records(data: bytes, display: str, skipped: list[str]) -> list[tuple[str, str]]:
    """The records of an uploaded JSON-lines file; as ``clinex pv extract``, a bad line (a
    text over MAX_PV_TEXT_CHARS too) goes to ``skipped`` and the others go on.

    Raises
    ------
    InputError
        No usable line, or no line at all.
    """
    records = [(r.id, r.text) for r in pv.jsonl_records(data, path=display, errors="skip",
                                                     on_error=lambda exc: skipped.append(str(exc)))]
    if skipped and not records:
        raise InputError(f"no usable line ({len(skipped)} bad lines; first: {skipped[0]})", path=display)
    if not records:
        raise InputError("no records (empty JSON lines file)", path=display)
    return records


def pv_upload_work(path: Path, display: str, model_name: str, fmt: str | None) -> Any:
    """An uploaded ``.txt`` (split into sentences) or JSON-lines file (one result per record)."""
    from clinex.io.jsonl import is_jsonl
    from clinex.io.textfile import decode_text

    data = path.read_bytes()
    stem = Path(display).stem or "text"
    skipped: list[str] = []
    if is_jsonl(display, data):
        mid, items = _pv_records(_jsonl_records(data, display, skipped), model_name)
        docs = [pv_document(item, [(0, len(item.text), item)]) for item in items]
        sentence_items = items
    else:
        mid, whole, sentences = _pv_text(decode_text(data, path=display), model_name, "text", stem)
        docs = [pv_document(whole, sentences)]
        sentence_items = [item for _, _, item in sentences]
    if fmt is not None:
        return pv_export(fmt, stem, sentence_items, [row for d in docs for row in d["table"]])
    return {"model": mid, "documents": docs, "skipped": skipped}


# ----------------------------------------------------------------------------- cohort


def _read_patient(path: Path, display: str) -> Any:
    """The patient of an n2c2 XML file, ``source`` the uploaded name."""
    return cohort.read_patient(path).model_copy(update={"source": display})


def cohort_work(path: Path, display: str, model: str) -> dict[str, Any]:
    """Decisions for one uploaded n2c2 XML patient file."""
    return cohort.decisions_to_dict(cohort.screen(_read_patient(path, display), model=model))


_CRITERIA_DIR: list[Path] = []  # one folder per server process for uploaded criterion files
_CRITERIA_LOCK = threading.Lock()


def _criteria_paths(criteria: list[tuple[str, str]]) -> list[Path]:
    """Uploaded criterion files, stored once per distinct content.

    The screening engine is cached by criterion file path and modification time
    (:func:`clinex.cohort.screen.get_engine`), so the same criteria uploaded again reuse
    one engine instead of building (and keeping) a new one per request: each file goes to
    ``<process folder>/<sha256 of name and text>/<name>`` and is never rewritten. The
    folder is removed when the process exits.
    """
    import atexit
    import hashlib

    with _CRITERIA_LOCK:
        if not _CRITERIA_DIR:
            folder = Path(tempfile.mkdtemp(prefix="clinex-web-criteria-"))
            atexit.register(shutil.rmtree, folder, True)
            _CRITERIA_DIR.append(folder)
        paths = []
        for name, text in criteria:
            digest = hashlib.sha256(f"{name}\0{text}".encode("utf-8", "surrogatepass")).hexdigest()[:32]
            p = _CRITERIA_DIR[0] / digest / disk_name(name)
            if not p.exists():
                p.parent.mkdir(exist_ok=True)
                tmp = p.with_name(p.name + ".part")
                tmp.write_text(text, encoding="utf-8")
                tmp.replace(p)
            paths.append(p)
        return paths


def criteria_folders() -> list[Path]:
    """The folder of uploaded criterion files (empty before the first upload): error
    messages must not name it (:func:`clinex.web.uploads.scrub`)."""
    return list(_CRITERIA_DIR)


def _check_patient_files(files: list[tuple[str, str]]) -> list[str]:
    """The names of the XML files among ``files``, after checking that they are one n2c2
    XML file or ``.txt`` notes only.

    Raises
    ------
    InputError
        Several XML files, XML and notes mixed, or a file that is neither (``field`` ``files``).
    """
    xml = [n for n, _ in files if n.lower().endswith(".xml")]
    if len(xml) > 1:
        raise InputError(f"{len(xml)} XML files given ({', '.join(xml[:3])}{', ...' if len(xml) > 3 else ''}): "
                         "choose one n2c2 XML file (one patient)", field="files")
    if xml and len(files) > 1:
        raise InputError("give one n2c2 XML file, or the .txt notes of one patient, not both", field="files")
    if not xml:
        bad = [n for n, _ in files if not n.lower().endswith(".txt")]
        if bad:
            raise InputError(f"{bad[0]}: expected an n2c2 .xml file or dated .txt notes", field="files")
    return xml


def _posted_patient(folder: Path, files: list[tuple[str, str]]) -> Any:
    """The patient of the posted files: one n2c2 XML file (sniffed), or dated notes read as
    a notes folder (one note: its stem is the patient id)."""
    if _check_patient_files(files):
        path = folder / disk_name(files[0][0])
        path.write_text(files[0][1], encoding="utf-8")
        sniff(path, files[0][0])
        return _read_patient(path, files[0][0])
    notes = folder / "patient"
    notes.mkdir()
    for name, text in files:
        target = notes / disk_name(name)
        if target.exists():
            raise InputError(f"two notes named {name!r}", field="files")
        target.write_text(text, encoding="utf-8")
    pid = Path(files[0][0]).stem if len(files) == 1 else "patient"
    return cohort.read_notes(notes, patient_id=pid).model_copy(update={"source": ", ".join(n for n, _ in files)})


def _decisions_file(folder: Path, patient: Any, decisions: Any, fmt: str) -> File:
    """The file ``clinex cohort screen`` writes for one patient: n2c2 XML, JSON or CSV."""
    suffix = {"json": ".json", "csv": ".csv", "xml": ""}[fmt]
    out = folder / ("out" + suffix)
    cohort.write_decisions([(patient, decisions)], out)
    if fmt == "xml":
        return File((out / f"{patient.id}.xml").read_bytes(), "application/xml", f"{patient.id}.xml")
    media = "application/json" if fmt == "json" else "text/csv; charset=utf-8"
    return File(out.read_bytes(), media, f"{patient.id}.cohort{suffix}")


def cohort_patient_work(folder: Path, files: list[tuple[str, str]], criteria: list[tuple[str, str]],
                        model: str, fmt: str | None) -> Any:
    """One patient from an n2c2 XML file or dated notes, screened by :func:`clinex.cohort.screen`."""
    patient = _posted_patient(folder, files)
    crit: Any = _criteria_paths(criteria) if criteria else "n2c2"
    decisions = cohort.screen(patient, crit, model=model)
    if fmt is not None:
        return _decisions_file(folder, patient, decisions, fmt)
    return cohort_view(patient, decisions, cohort.model_version(model), cohort.date_warning(patient))


# ----------------------------------------------------------------------------- RoB


def rob_load(path: Path, display: str) -> Any:
    """The trial document of an upload, ``meta.source`` the uploaded name."""
    doc = rob.load_trial(path)
    return doc.model_copy(update={"meta": {**doc.meta, "source": display}})


def rob_work(path: Path, model: str, display: str) -> dict[str, Any]:
    """The RoB 2 assessment of one uploaded trial (``source`` the uploaded name)."""
    result = rob.assess(rob_load(path, display), rob.load_model(model))
    return result.model_copy(update={"source": display}).model_dump(mode="json")


def rob_report_work(path: Path, model: str, display: str) -> dict[str, Any]:
    """The assessment and the CLI's HTML report of it (:func:`clinex.rob.report.render_html`)."""
    document = rob_load(path, display)
    result = rob.assess(document, rob.load_model(model)).model_copy(update={"source": display})
    return {"assessment": result.model_dump(mode="json"), "html": rob.render_html(result, document)}


def rob_plot_work(raw: list[dict[str, Any]]) -> File:
    """The traffic-light plot (PNG) of posted assessments."""
    items = rob.assessments_from_json(raw)
    folder = Path(tempfile.mkdtemp(prefix="clinex-web-"))
    try:
        with _PLOT_LOCK:
            png, _ = rob.plot_traffic_light(items, folder / "traffic_light.png", labels=rob_labels(items), dpi=100)
        return File(png.read_bytes(), "image/png", "traffic_light.png")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def rob_json_work(raw: list[dict[str, Any]]) -> File:
    """The ``<label>.rob.json`` files ``clinex rob assess`` writes (:func:`clinex.rob.report.write_json`):
    the file itself for one trial, a zip of them for several."""
    items = rob.assessments_from_json(raw)
    labels = rob_labels(items)
    folder = Path(tempfile.mkdtemp(prefix="clinex-web-"))
    try:
        paths = [rob.write_json(a, folder / "json" / f"{disk_name(label)}.rob.json") for a, label in zip(items, labels)]
        if len(paths) == 1:
            return File(paths[0].read_bytes(), "application/json", paths[0].name)
        out = folder / "rob.zip"
        with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
            for p in paths:
                z.write(p, p.name)
        return File(out.read_bytes(), "application/zip", "rob-json.zip")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def rob_robvis_work(raw: list[dict[str, Any]]) -> File:
    """The robvis CSV of posted assessments."""
    items = rob.assessments_from_json(raw)
    folder = Path(tempfile.mkdtemp(prefix="clinex-web-"))
    try:
        out = rob.write_robvis(items, rob_labels(items), folder / "robvis.csv")
        return File(out.read_bytes(), "text/csv; charset=utf-8", "robvis.csv")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
