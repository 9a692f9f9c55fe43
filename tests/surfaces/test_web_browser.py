"""The page in a real browser: headless Chromium (Debian's ``chromium`` at /usr/bin/chromium)
driven by Playwright for Python against a real uvicorn server on 127.0.0.1.

Each view is used as a person would: paste or choose files, press the button, wait, then the
highlighted spans (exact text of the trigger and argument elements), the tables and the
downloads are checked against what the Python API gives for the same input. Screenshots go to
``tests/artifacts/`` (git-ignored).

These tests never skip: without Chromium or Playwright they fail, so that CI (``bash .ci/run``,
which installs the ``chromium`` package when it is missing) cannot pass without running them.
"""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import zipfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from live_server import live_server

CHROMIUM = os.environ.get("CLINEX_CHROMIUM", "/usr/bin/chromium")
ARTIFACTS = Path(__file__).parents[1] / "artifacts"
DATA = Path(__file__).parents[1] / "data"

PV_TEXT = "A 45-year-old man developed rash after amoxicillin 500 mg orally. He recovered."
TRIAL_TXT = (
    "Methods\n\nParticipants were randomly assigned using a computer-generated random sequence. "
    "Allocation was concealed using sequentially numbered, opaque, sealed envelopes.\n"
)
NOTES = {
    "2071-03-10_clinic.txt": "HPI: 62 yo man with DM2 and HTN. Had an NSTEMI 2 weeks ago. HbA1c 7.2%. "
                             "Takes aspirin 81 mg daily.\n",
    "2071-09-02_visit.txt": "Record date: 2071-09-02\n\nCreatinine 2.1 mg/dL. Denies chest pain.\n",
}


def _serve(tmp: Path, **env: str) -> Iterator[str]:
    with live_server(tmp, env=env) as base:
        yield base


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real uvicorn process serving ``clinex.web.app:create_app``; yields its base URL."""
    yield from _serve(tmp_path_factory.mktemp("web"))


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    """Headless Chromium; a missing browser or Playwright is a failure, never a skip."""
    if not (Path(CHROMIUM).is_file() or shutil.which(CHROMIUM)):
        pytest.fail(f"Chromium not found at {CHROMIUM}: install Debian's 'chromium' package "
                    "(the README's test command does) or set CLINEX_CHROMIUM")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail("Playwright for Python is missing: pip install -e '.[test]'")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
        try:
            yield b
        finally:
            b.close()


@pytest.fixture
def page(browser, server: str):  # noqa: ANN001, ANN201 - playwright types
    """A fresh page that records console errors and every URL it requests."""
    context = browser.new_context(viewport={"width": 1280, "height": 900}, accept_downloads=True)
    pg = context.new_page()
    pg.set_default_timeout(120_000)
    pg.errors = []
    pg.requests = []
    pg.on("pageerror", lambda e: pg.errors.append(str(e)))
    # console errors, except the browser's own line for an HTTP error status (the tests
    # provoke 422s on purpose; the page shows their message, checked where they happen)
    pg.on("console", lambda m: pg.errors.append(m.text)
          if m.type == "error" and not m.text.startswith("Failed to load resource") else None)
    pg.on("request", lambda r: pg.requests.append(r.url))
    yield pg
    context.close()


def _shot(pg, name: str) -> Path:  # noqa: ANN001
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    pg.screenshot(path=str(path), full_page=True)
    return path


def _local_only(pg, server: str) -> None:  # noqa: ANN001
    foreign = [u for u in pg.requests if not (u.startswith(server + "/") or u.startswith(("blob:", "data:", "about:")))]
    assert foreign == []


def _download(pg, button: str) -> tuple[str, bytes]:  # noqa: ANN001
    with pg.expect_download() as info:
        pg.click(button)
    d = info.value
    return d.suggested_filename, Path(d.path()).read_bytes()


def _texts(pg, selector: str) -> list[str]:  # noqa: ANN001
    return pg.locator(selector).all_text_contents()


# ----------------------------------------------------------------------------- pharmacovigilance


def test_pv_view_highlights_events_in_place(page, server: str) -> None:  # noqa: ANN001
    pg = page
    pg.goto(server + "/#pv")
    pg.click("#pv-upload")  # no file chosen: a message, not silence
    assert pg.inner_text("#pv-error") == "Choose a .txt or JSON-lines file first."
    pg.wait_for_function("() => document.querySelector('#pv-model').options.length > 1")
    pg.select_option("#pv-model", "crf")
    pg.fill("#pv-text", PV_TEXT)
    pg.click("#pv-run")
    pg.wait_for_selector("#pv-out:not([hidden])")
    assert pg.is_hidden("#pv-error")

    sentences = pg.locator(".sentence")
    assert sentences.count() == 2
    assert [(s.get_attribute("data-start"), s.get_attribute("data-end")) for s in sentences.all()] == [
        ("0", "65"), ("66", "79")]
    line = pg.locator(".sentence").nth(0).locator(".event-line")
    assert line.count() == 1
    # the sentence as it reads, with the event marked inside it
    assert line.inner_text().replace("\n", "") .startswith("E1 ADE")
    assert _texts(pg, ".event-line mark.trigger") == ["after"]
    assert _texts(pg, ".event-line mark.role-Subject") == ["A 45-year-old man"]
    assert _texts(pg, ".event-line mark.role-Effect") == ["rash"]
    assert _texts(pg, ".event-line mark.role-Treatment") == ["amoxicillin 500 mg orally"]
    # sub-arguments are inside their main argument
    assert _texts(pg, "mark.role-Subject > mark.sub") == ["45-year-old", "man"]
    assert _texts(pg, "mark.role-Treatment > mark.sub") == ["amoxicillin", "500 mg", "orally"]
    assert [m.get_attribute("data-role") for m in pg.locator("mark.role-Treatment > mark.sub").all()] == [
        "Treatment.Drug", "Treatment.Dosage", "Treatment.Route"]
    assert pg.locator(".sentence").nth(1).locator(".noevent").inner_text() == "He recovered."
    # the counts shown are of asserted events (clinex.pv.counts; none of these is negated)
    heads = [h.inner_text() for h in pg.locator(".sentence > .head").all()]
    assert heads[0].endswith(" · 1 adverse event") and heads[1].endswith(" · no events")
    assert pg.inner_text("#pv-meta").endswith(" · 1 record · 1 adverse event")

    # hover text and click details: role, event, probability, normalised drug
    drug = pg.locator("mark.sub-Drug")
    title = drug.get_attribute("title")
    assert "role: Treatment.Drug" in title and "event: E1 · Adverse event" in title
    assert "normalised drug: Amoxicillin (DrugBank DB01060) MeSH tree D03.633.100.300.750.750.050.050" in title
    drug.click()
    detail = pg.inner_text("#pv-detail")
    assert "Treatment.Drug" in detail and "Amoxicillin (DrugBank DB01060)" in detail and "39–50" in detail

    # the event table, from the same response as the highlights
    api = httpx.post(server + "/api/pv/extract", json={"text": PV_TEXT, "model": "crf"}, timeout=120).json()
    row = api["table"][0]
    cells = {c.get_attribute("data-col"): c.inner_text() for c in pg.locator("#pv-table tr").nth(1).locator("td").all()}
    assert (cells["event_type"], cells["trigger"], cells["subject"], cells["drug"], cells["dose"], cells["route"],
            cells["effect"], cells["normalised_drug"]) == (
        "Adverse event", "after", "A 45-year-old man; Age: 45-year-old; Gender: man", "amoxicillin", "500 mg",
        "orally", "rash", "Amoxicillin")
    assert cells["trigger_probability"] == f"{row['trigger_probability']:.2f}"
    shot = _shot(pg, "pv_paste")

    # downloads: CSV, PHEE JSON (sentence records, as `clinex pv extract -i text.txt`), brat zip
    name, data = _download(pg, "#pv-dl-csv")
    rows = list(csv.DictReader(io.StringIO(data.decode())))
    assert name == "text.events.csv" and len(rows) == 1
    assert (rows[0]["trigger"], rows[0]["drug"], rows[0]["normalised_drug"]) == ("after", "amoxicillin", "Amoxicillin")
    name, data = _download(pg, "#pv-dl-phee")
    lines = [json.loads(x) for x in data.decode().splitlines()]
    assert name == "text.phee.json" and [x["id"] for x in lines] == ["text_1", "text_2"]
    assert lines[0]["context"] == PV_TEXT[:65]
    trig = lines[0]["annotations"][0]["events"][0]["Trigger"]
    assert (trig["text"], trig["start"]) == ([["after"]], [[33]])
    name, data = _download(pg, "#pv-dl-brat")
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        assert name == "text.brat.zip" and sorted(z.namelist()) == ["text_1.ann", "text_1.txt", "text_2.ann", "text_2.txt"]
        assert "\tEffect 28 32\trash" in z.read("text_1.ann").decode()
    assert pg.errors == [] and shot.is_file()
    _local_only(pg, server)


def test_pv_view_jsonl_upload_and_errors(page, server: str, tmp_path: Path) -> None:  # noqa: ANN001
    pg = page
    src = tmp_path / "two.jsonl"
    src.write_text('{"id": "a", "text": "Rash after penicillin."}\n'
                   '{"id": "b", "context": "Nausea developed after metformin."}\n', "utf-8")
    pg.goto(server + "/#pv")
    pg.wait_for_function("() => document.querySelector('#pv-model').options.length > 1")
    pg.select_option("#pv-model", "crf")
    pg.set_input_files("#pv-file", str(src))
    pg.click("#pv-upload")
    pg.wait_for_selector("#pv-out:not([hidden])")
    assert [d.get_attribute("data-id") for d in pg.locator(".pvdoc").all()] == ["a", "b"]
    assert _texts(pg, ".pvdoc[data-id=a] mark.role-Effect") == ["Rash"]
    assert _texts(pg, ".pvdoc[data-id=a] mark.sub-Drug") == ["penicillin"]
    assert _texts(pg, ".pvdoc[data-id=b] mark.trigger") == ["developed after"]
    assert _texts(pg, "#pv-table td[data-col=record]") == ["a", "b"]
    _shot(pg, "pv_jsonl")
    # a broken file: the server's message is shown in the page
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a"}\n', "utf-8")
    pg.set_input_files("#pv-file", str(bad))
    pg.click("#pv-upload")
    pg.wait_for_selector("#pv-error:not([hidden])")
    assert pg.inner_text("#pv-error") == (
        "[CLX001] bad.jsonl: no usable line (1 bad lines; first: [CLX002] bad.jsonl:1: field 'text': missing field)")
    assert pg.is_hidden("#pv-out")
    _shot(pg, "pv_error")


EMOJI_TEXT = "Café 😀: he did not develop jaundice after methotrexate 15 mg weekly."


def test_pv_view_offsets_after_an_emoji(page, server: str) -> None:  # noqa: ANN001
    """The API's offsets count code points (Python str indices); the page's JavaScript
    strings count UTF-16 units, in which 😀 is two: every highlight after it must still
    cover exactly its text."""
    pg = page
    pg.goto(server + "/#pv")
    pg.wait_for_function("() => document.querySelector('#pv-model').options.length > 1")
    pg.select_option("#pv-model", "crf")
    pg.fill("#pv-text", EMOJI_TEXT)
    pg.click("#pv-run")
    pg.wait_for_selector("#pv-out:not([hidden])")
    api = httpx.post(server + "/api/pv/extract", json={"text": EMOJI_TEXT, "model": "crf"}, timeout=120).json()
    ev = api["record"]["annotations"][0]["events"][0]
    assert (ev["Trigger"]["start"], ev["Treatment"]["Drug"]["start"]) == ([[36]], [[42]])  # code points
    assert _texts(pg, ".event-line mark.trigger") == ["after"]
    # the CRF's Effect "he did not develop jaundice" loses its negation (pv.postprocess.trim_negation_cues)
    assert _texts(pg, ".event-line mark.role-Effect") == ["jaundice"]
    assert _texts(pg, ".event-line mark.role-Treatment") == ["methotrexate 15 mg weekly"]
    assert _texts(pg, "mark.role-Treatment > mark.sub") == ["methotrexate", "15 mg", "weekly"]
    assert _texts(pg, ".event-line mark.cue") == ["not"] and _texts(pg, "mark.role-Effect > mark.cue") == []
    # the whole sentence reads as pasted, the emoji included, outside every highlight
    line = pg.locator(".event-line").nth(0)
    assert line.inner_text().replace("\n", "") == "E1 ADE" + EMOJI_TEXT
    assert [m for m in _texts(pg, ".event-line mark") if "😀" in m] == []
    # hover text and side panel keep the API's code-point offsets; the drug is normalised
    drug = pg.locator("mark.sub-Drug")
    assert "offsets: 42–54" in drug.get_attribute("title")
    assert "normalised drug: Methotrexate (DrugBank DB00563)" in drug.get_attribute("title")
    drug.click()
    assert "42–54" in pg.inner_text("#pv-detail")
    _shot(pg, "pv_emoji")
    assert pg.errors == []


# ----------------------------------------------------------------------------- risk of bias


def _trial_pdf(path: Path) -> Path:
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfgen import canvas

    c = canvas.Canvas(str(path), pagesize=A4)
    for lines in (["Methods", "Participants were randomly assigned using a computer-generated random sequence.",
                   "Allocation was concealed using sequentially numbered, opaque, sealed envelopes."],
                  ["Results", "Outcome assessors were blinded to the allocated intervention."]):
        y = 800
        for line in lines:
            c.drawString(72, y, line)
            y -= 16
        c.showPage()
    c.save()
    return path


def test_rob_view_reports_plot_and_downloads(page, server: str, tmp_path: Path) -> None:  # noqa: ANN001
    from clinex.rob.assess import assess
    from clinex.rob.evidence import load_evidence_model
    from clinex.rob.report import render_html
    from clinex.web.tasks import rob_load as _rob_load

    pg = page
    pdf = _trial_pdf(tmp_path / "alpha.pdf")
    txt = tmp_path / "beta.txt"
    txt.write_text(TRIAL_TXT, "utf-8")
    fake = tmp_path / "fake.pdf"
    fake.write_bytes(b"this is not a PDF")
    pg.goto(server + "/#rob")
    pg.click("#rob-run")
    assert pg.inner_text("#rob-error") == "Choose one or more trial reports (PDF, text or JATS XML) first."
    pg.set_input_files("#rob-files", [str(pdf), str(txt), str(fake)])
    pg.click("#rob-run")
    pg.wait_for_function("() => document.querySelector('#rob-plot').naturalWidth > 0")

    # the bad file is named in the page, the two others are assessed
    assert pg.inner_text("#rob-error") == "fake.pdf: [CLX002] fake.pdf: not a PDF file (it does not start with %PDF)"
    expected = {}
    for path in (pdf, txt):
        doc = _rob_load(path, path.name)
        result = assess(doc, load_evidence_model("auto")).model_copy(update={"source": path.name})
        expected[path.name] = (result, render_html(result, doc))
    rows = pg.locator("#rob-summary tr[data-trial]")
    assert rows.count() == 2
    for row, (name, (result, _)) in zip(rows.all(), expected.items()):
        got = [c.inner_text() for c in row.locator("td[data-domain]").all()]
        assert got == [d.risk for d in result.domains] + [result.overall], name
    # the report is the CLI's HTML report (clinex.rob.report.render_html), byte for byte
    for i, name in enumerate(expected):
        srcdoc = pg.eval_on_selector(f"#rob-report-{i} iframe", "f => f.srcdoc")
        assert srcdoc == expected[name][1]
    frame = pg.frame_locator("#rob-report-0 iframe")
    assert frame.locator("h1").inner_text() == "Risk of bias (RoB 2): alpha"
    marks = frame.locator("mark.ev").all_text_contents()
    assert "Participants were randomly assigned using a computer-generated random sequence." in marks
    assert frame.locator(".page").all_text_contents() == ["page 1", "page 2"]
    assert "p. 1, methods, chars 9–88" in frame.locator("#sq-1\\.1").inner_text()
    size = pg.eval_on_selector("#rob-plot", "i => [i.naturalWidth, i.naturalHeight]")
    assert size[0] > 300 and size[1] > 150
    _shot(pg, "rob_two_trials")

    name, data = _download(pg, "#rob-dl-robvis")
    header, *lines = data.decode().splitlines()
    assert name == "robvis.csv" and header == "Study,D1,D2,D3,D4,D5,Overall,Weight"
    assert lines == [",".join(["alpha", *(d.risk for d in expected["alpha.pdf"][0].domains),
                               expected["alpha.pdf"][0].overall, "1"]),
                     ",".join(["beta", *(d.risk for d in expected["beta.txt"][0].domains),
                               expected["beta.txt"][0].overall, "1"])]
    name, data = _download(pg, "#rob-dl-json")  # the .rob.json files of `clinex rob assess`, zipped
    assert name == "rob-json.zip"
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        assert z.namelist() == ["alpha.rob.json", "beta.rob.json"]
        for member, trial in zip(z.namelist(), expected):
            assert z.read(member) == (expected[trial][0].model_dump_json(indent=2) + "\n").encode()
    assert pg.errors == []
    _local_only(pg, server)


# ----------------------------------------------------------------------------- cohort selection


def test_cohort_view_notes_table_and_downloads(page, server: str, tmp_path: Path) -> None:  # noqa: ANN001
    pg = page
    paths = []
    for name, text in NOTES.items():
        (tmp_path / name).write_text(text, "utf-8")
        paths.append(str(tmp_path / name))
    pg.goto(server + "/#cohort")
    pg.click("#cohort-run")
    assert pg.inner_text("#cohort-error") == (
        "Choose a patient first: one n2c2 XML file, or the .txt notes of one patient.")
    pg.set_input_files("#cohort-files", paths)
    pg.click("#cohort-run")
    pg.wait_for_selector("#cohort-out:not([hidden])")
    assert pg.is_hidden("#cohort-error")
    rows = pg.locator("#cohort-table tr[data-criterion]")
    assert rows.count() == 13
    labels = {r.get_attribute("data-criterion"): r.locator(".decision").inner_text() for r in rows.all()}
    assert sorted(k for k, v in labels.items() if v == "met") == [
        "ASP-FOR-MI", "CREATININE", "ENGLISH", "HBA1C", "MAKES-DECISIONS"]

    def evidence(criterion: str) -> list[tuple[str, str]]:
        items = pg.locator(f"#cohort-table tr[data-criterion={criterion}] ul.evidence li").all()
        return [(li.locator(".date").inner_text(), li.locator("mark").inner_text()) for li in items]

    assert evidence("CREATININE") == [("2071-09-02", "Creatinine 2.1 mg/dL. Denies chest pain.")]
    assert evidence("ASP-FOR-MI") == [("2071-03-10", "Takes aspirin 81 mg daily.")]
    # the deciding sentences are highlighted in the patient's text, under their record's date
    assert _texts(pg, "#cohort-text .recdate") == ["record 1 of 2 · 2071-03-10", "record 2 of 2 · 2071-09-02"]
    marked = {m.inner_text(): m.get_attribute("data-criteria") for m in pg.locator("#cohort-text mark.ev").all()}
    assert marked["Creatinine 2.1 mg/dL. Denies chest pain."] == "CREATININE"
    assert marked["Takes aspirin 81 mg daily."] == "ADVANCED-CAD ASP-FOR-MI"
    assert marked["HbA1c 7.2%."] == "HBA1C"  # a lab value's sentence (clinex.cohort.engine._value_sentence)
    _shot(pg, "cohort_notes")

    name, data = _download(pg, "#cohort-dl-csv")
    rows_csv = list(csv.DictReader(io.StringIO(data.decode())))
    assert name == "patient.cohort.csv"
    assert [(r["criterion"], r["label"], r["record_date"], r["sentence"]) for r in rows_csv
            if r["criterion"] == "CREATININE"] == [("CREATININE", "met", "2071-09-02",
                                                    "Creatinine 2.1 mg/dL. Denies chest pain.")]
    name, data = _download(pg, "#cohort-dl-xml")
    assert name == "patient.xml" and b'<CREATININE met="met" />' in data
    name, data = _download(pg, "#cohort-dl-json")
    assert json.loads(data)["patient"]["HBA1C"]["label"] == "met"
    assert pg.errors == []
    _local_only(pg, server)


EMOJI_NOTES = {
    "2071-03-10_clinic.txt": "HPI: 62 yo man with DM2 and HTN 😀. Had an NSTEMI 2 weeks ago. Mood 🙂.\n"
                             "Takes aspirin 81 mg daily.\n",
    "2071-09-02_visit.txt": "Record date: 2071-09-02\n\nFeels 👍 today.\nCreatinine 2.1 mg/dL.\n",
}


def test_cohort_view_offsets_after_an_emoji(page, server: str, tmp_path: Path) -> None:  # noqa: ANN001
    """Evidence offsets are code points; after an emoji the highlight in the patient's text
    must still be exactly the deciding sentence, under the right record."""
    pg = page
    paths = []
    for name, text in EMOJI_NOTES.items():
        (tmp_path / name).write_text(text, "utf-8")
        paths.append(str(tmp_path / name))
    pg.goto(server + "/#cohort")
    pg.set_input_files("#cohort-files", paths)
    pg.click("#cohort-run")
    pg.wait_for_selector("#cohort-out:not([hidden])")
    body = {"files": [{"name": k, "text": v} for k, v in EMOJI_NOTES.items()]}
    view = httpx.post(server + "/api/cohort/patient", json=body, timeout=120).json()
    evidence = {(e["start"], e["end"], e["sentence"]) for d in view["decisions"].values() for e in d["evidence"]}
    assert {e[2] for e in evidence} == {"Takes aspirin 81 mg daily.", "Creatinine 2.1 mg/dL."}
    assert all(view["text"][s:e] == t for s, e, t in evidence)
    marked = {m.inner_text(): m.get_attribute("data-criteria") for m in pg.locator("#cohort-text mark.ev").all()}
    assert marked == {"Takes aspirin 81 mg daily.": "ADVANCED-CAD ASP-FOR-MI", "Creatinine 2.1 mg/dL.": "CREATININE"}
    assert _texts(pg, "#cohort-text .recdate") == ["record 1 of 2 · 2071-03-10", "record 2 of 2 · 2071-09-02"]
    # the text around the marks is the patient's text, emoji included, nothing lost or doubled
    shown = pg.eval_on_selector("#cohort-text", "b => [...b.childNodes].filter(n => !n.classList || "
                                "!n.classList.contains('recdate')).map(n => n.textContent).join('')")
    assert shown == view["text"]
    # the link in the table scrolls to and focuses the same mark
    pg.click("#cohort-table tr[data-criterion=CREATININE] ul.evidence a")
    assert _texts(pg, "#cohort-text mark.focus") == ["Creatinine 2.1 mg/dL."]
    _shot(pg, "cohort_emoji")
    assert pg.errors == []


def test_cohort_view_xml_with_criterion_file(page, server: str, tmp_path: Path) -> None:  # noqa: ANN001
    pg = page
    crit = Path(__file__).parents[2] / "src" / "clinex" / "resources" / "criteria" / "n2c2" / "hba1c.yaml"
    pg.goto(server + "/#cohort")
    pg.set_input_files("#cohort-files", str(DATA / "cohort" / "t04_labs.xml"))
    pg.set_input_files("#cohort-criteria", str(crit))
    pg.click("#cohort-run")
    pg.wait_for_selector("#cohort-out:not([hidden])")
    assert [r.get_attribute("data-criterion") for r in pg.locator("#cohort-table tr[data-criterion]").all()] == ["HBA1C"]
    items = pg.locator("#cohort-table tr[data-criterion=HBA1C] ul.evidence li")
    assert [(li.locator(".date").inner_text(), li.locator("mark").inner_text()) for li in items.all()] == [
        ("2066-09-01", "DM2 - HbA1c 6.5% today, at goal.")]
    # a broken patient file: its message is shown, without server paths
    bad = tmp_path / "broken.xml"
    bad.write_text("<PatientMatching><TEXT>", "utf-8")
    pg.set_input_files("#cohort-files", str(bad))
    pg.click("#cohort-run")
    pg.wait_for_selector("#cohort-error:not([hidden])")
    msg = pg.inner_text("#cohort-error")
    assert msg.startswith("[CLX002] broken.xml:1: not well-formed XML") and "/tmp" not in msg
    assert pg.is_hidden("#cohort-out")  # the previous patient's result is not left under the message
    _shot(pg, "cohort_error")
    # two XML files: one patient is one XML file
    other = tmp_path / "t05.xml"
    other.write_bytes((DATA / "cohort" / "t04_labs.xml").read_bytes())
    pg.set_input_files("#cohort-files", [str(DATA / "cohort" / "t04_labs.xml"), str(other)])
    pg.click("#cohort-run")
    pg.wait_for_function("() => document.querySelector('#cohort-error').textContent.includes('t05.xml')")
    assert pg.inner_text("#cohort-error") == (
        "[CLX001] field 'files': 2 XML files given (t04_labs.xml, t05.xml): choose one n2c2 XML file (one patient)")


# ----------------------------------------------------------------------------- offline API docs


@pytest.mark.parametrize("path,ready", [
    ("/docs", "#swagger-ui .info .title"),
    ("/redoc", "h1"),
])
def test_api_docs_render_from_local_files_only(page, server: str, path: str, ready: str) -> None:  # noqa: ANN001
    pg = page
    pg.goto(server + path)
    pg.wait_for_selector(ready)
    assert pg.inner_text(ready).startswith("clinex")
    pg.wait_for_load_state("networkidle")
    _shot(pg, "docs" + path.replace("/", "_"))
    assert any(u.endswith("/openapi.json") for u in pg.requests)
    _local_only(pg, server)


def test_swagger_try_it_out_sends_a_file(page, server: str, tmp_path: Path) -> None:  # noqa: ANN001
    """/api/rob/assess reads its raw body: with the requestBody declared, Swagger UI's
    "Try it out" offers a file chooser and sends the file (the answer is the assessment)."""
    pg = page
    trial = tmp_path / "swagger.txt"
    trial.write_text(TRIAL_TXT, "utf-8")
    pg.goto(server + "/docs")
    op = pg.locator("#operations-default-rob_assess_api_rob_assess_post")
    op.locator(".opblock-summary").click()  # rendered once the schema is loaded; opens the operation
    op.locator(".try-out__btn").click()
    op.locator("input[placeholder=filename]").fill("swagger.txt")
    assert op.locator("input[type=file]").count() == 1
    op.locator("input[type=file]").set_input_files(str(trial))
    op.locator(".execute").click()
    status = op.locator(".live-responses-table .response .response-col_status").first
    status.wait_for()
    assert status.inner_text() == "200"
    body = op.locator(".live-responses-table .response-col_description pre").first.inner_text()
    assert '"source": "swagger.txt"' in body and '"document_id": "swagger"' in body
    _shot(pg, "docs_try_it_out")
    _local_only(pg, server)


def test_readme_test_command_installs_chromium_and_is_what_ci_runs() -> None:
    """README Quick start command 2 and .ci/run are one command, and it installs Chromium
    when missing, so that CI runs the browser tests above instead of failing them."""
    import re

    root = Path(__file__).parents[2]
    readme = (root / "README.md").read_text("utf-8")
    section = readme[readme.index("2. Install the test extras"):readme.index("`.ci/run` runs exactly command 2.")]
    (command,) = re.findall(r"```bash\n\s*(.+?)\n\s*```", section, re.S)
    ci = [ln for ln in (root / ".ci" / "run").read_text("utf-8").splitlines() if ln.startswith("python3 ")]
    assert ci == [command]
    assert "command -v chromium >/dev/null || (apt-get update -qq && apt-get install -y -qq chromium" in command
    assert command.endswith("&& pytest -q")


def test_upload_limit_is_shown_in_the_page(browser, tmp_path_factory: pytest.TempPathFactory) -> None:  # noqa: ANN001
    """A server started with CLINEX_WEB_MAX_UPLOAD=4096: a larger file is refused in the page
    with the limit named, and a larger pasted text gets the server's 413 message."""
    for base in _serve(tmp_path_factory.mktemp("web-small"), CLINEX_WEB_MAX_UPLOAD="4096"):
        context = browser.new_context()
        pg = context.new_page()
        pg.set_default_timeout(60_000)
        big = tmp_path_factory.mktemp("big") / "big.txt"
        big.write_text("Rash after penicillin. " * 500, "utf-8")  # 11,500 bytes
        pg.goto(base + "/#pv")
        pg.wait_for_function("() => document.querySelector('#pv-model').options.length > 1")
        pg.set_input_files("#pv-file", str(big))
        pg.click("#pv-upload")
        assert pg.inner_text("#pv-error") == (
            "big.txt is 11500 bytes, larger than this server's upload limit of 4096 bytes (CLINEX_WEB_MAX_UPLOAD).")
        pg.fill("#pv-text", "Rash after penicillin. " * 200)
        pg.click("#pv-run")
        pg.wait_for_function("() => document.querySelector('#pv-error').textContent.includes('larger than')")
        assert pg.inner_text("#pv-error") == "[CLX001] field 'body': request body larger than 4096 bytes"
        _shot(pg, "pv_upload_limit")
        # RoB: the file over the limit is an error row, the others are still assessed
        good = big.with_name("small.txt")
        good.write_text(TRIAL_TXT, "utf-8")
        pg.goto(base + "/#rob")
        pg.wait_for_function("() => document.querySelector('#rob-model').options.length > 1")
        pg.set_input_files("#rob-files", [str(big), str(good)])
        pg.click("#rob-run")
        pg.wait_for_function("() => document.querySelector('#rob-plot').naturalWidth > 0")
        limit = "the file is 11500 bytes, larger than this server's upload limit of 4096 bytes (CLINEX_WEB_MAX_UPLOAD)."
        assert pg.inner_text("#rob-error") == "big.txt: " + limit
        assert [r.locator("td").nth(1).inner_text() for r in pg.locator("#rob-summary tr[data-trial]").all()] == [
            "small.txt"]
        assert [[c.inner_text() for c in r.locator("td").all()] for r in pg.locator("#rob-summary tr.filefail").all()] == [
            ["—", "big.txt", limit]]
        assert pg.locator("#rob-reports iframe").count() == 1
        _shot(pg, "rob_upload_limit")
        context.close()
