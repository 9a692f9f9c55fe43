"""`clinex pv summarize`'s pairs.html in a real browser: headless Chromium (Debian's ``chromium``)
driven by Playwright, as ``tests/surfaces/test_web_browser.py`` does for the web app.

The page is opened from its file, as a reviewer opens it: sorted by a column, filtered by drug,
reaction and kind, a pair opened to its evidence sentences with the drug and the reaction
highlighted. It must load nothing, log no error (its own Content-Security-Policy included) and
run no script but its own. A screenshot goes to /tmp. Never skips: without Chromium or
Playwright it fails.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_pv_summary import build_run

from clinex.pv.summary import summarize_run

CHROMIUM = os.environ.get("CLINEX_CHROMIUM", "/usr/bin/chromium")
SHOT = Path("/tmp/clinex_pv_summary.png")


@pytest.fixture(scope="module")
def page_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    run = build_run(tmp_path_factory.mktemp("pv-summary-browser"))
    summarize_run(run)
    return (run / "summary" / "pairs.html").as_uri()


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    if not (Path(CHROMIUM).is_file() or shutil.which(CHROMIUM)):
        pytest.fail(f"Chromium not found at {CHROMIUM}: install Debian's 'chromium' package or set CLINEX_CHROMIUM")
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
def page(browser, page_url: str):  # noqa: ANN001, ANN201 - playwright types
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    pg = context.new_page()
    pg.set_default_timeout(30_000)
    pg.errors = []
    pg.requests = []
    pg.on("pageerror", lambda e: pg.errors.append(str(e)))
    pg.on("console", lambda m: pg.errors.append(m.text) if m.type == "error" else None)
    pg.on("request", lambda r: pg.requests.append(r.url))
    pg.goto(page_url)
    pg.wait_for_selector("body[data-ready=true]")
    yield pg
    context.close()


def _column(pg, key: str) -> list[str]:  # noqa: ANN001
    return [t.strip() for t in pg.locator(f"#pairs-body tr.pair td.col-{key}").all_inner_texts()]


def _drugs(pg) -> list[str]:  # noqa: ANN001
    return pg.locator("#pairs-body tr.pair button.pair").all_inner_texts()


def test_sort_filter_and_open_a_pair(page, page_url: str) -> None:  # noqa: ANN001
    pg = page
    assert pg.inner_text("#count") == "5 of 5 pairs"
    assert pg.get_attribute("th[data-key=ade_events]", "aria-sort") == "descending"
    assert _drugs(pg) == ["clozapine", "bupropion", "warfarin", "warfarin", "prednisone"]
    assert _column(pg, "ade_events") == ["4", "2", "1", "1", "0"]

    # sort: a text column ascending first, then descending; a count column descending first
    pg.click("th[data-key=drug] button")
    assert pg.get_attribute("th[data-key=drug]", "aria-sort") == "ascending"
    assert pg.get_attribute("th[data-key=ade_events]", "aria-sort") is None
    assert _drugs(pg) == ["bupropion", "clozapine", "prednisone", "warfarin", "warfarin"]
    pg.click("th[data-key=drug] button")
    assert _drugs(pg) == ["warfarin", "warfarin", "prednisone", "clozapine", "bupropion"]
    pg.click("th[data-key=pte_events] button")
    assert _drugs(pg)[0] == "prednisone"
    pg.click("th[data-key=ade_records] button")
    assert _column(pg, "ade_records") == ["3", "2", "1", "1", "0"]
    pg.click("th[data-key=ade_records] button")
    assert _column(pg, "ade_records") == ["0", "1", "1", "2", "3"]

    # filter by drug (any case, a part of the name), by reaction, by kind
    pg.fill("#f-drug", "WARF")
    assert pg.inner_text("#count") == "2 of 5 pairs"
    assert set(_drugs(pg)) == {"warfarin"}
    pg.fill("#f-reaction", "gastro")
    assert _column(pg, "reaction") == ["gastrointestinal hemorrhage\ngastrointestinal haemorrhage"]
    pg.fill("#f-drug", "")
    pg.fill("#f-reaction", "")
    pg.select_option("#f-kind", "pte")
    assert _drugs(pg) == ["prednisone"]
    pg.select_option("#f-kind", "challenge")
    assert _drugs(pg) == ["clozapine"]
    pg.select_option("#f-kind", "all")
    pg.fill("#f-drug", "bupropion")  # a form as written ("Bupropion") matches too
    assert _drugs(pg) == ["bupropion"]
    assert _column(pg, "reaction") == ["seizure\nSeizures; seizure"]

    # open a pair: its evidence sentences, drug and reaction marked
    pg.fill("#f-drug", "cloz")
    button = pg.locator("tr.pair[data-drug=clozapine] button.pair")
    assert button.get_attribute("aria-expanded") == "false"
    button.click()
    assert button.get_attribute("aria-expanded") == "true"
    items = pg.locator("tr.evidence li.example")
    assert items.count() == 3
    first = items.nth(0)
    assert first.locator("p.sentence").inner_text() == "The agranulocytosis resolved after clozapine was withdrawn."
    assert first.locator("mark.drug").all_inner_texts() == ["clozapine"]
    assert first.locator("mark.reaction").all_inner_texts() == ["agranulocytosis"]
    assert "dechallenge" in first.locator(".flag").all_inner_texts()
    second = items.nth(1)
    assert second.locator("mark.reaction").all_inner_texts() == ["Agranulocytosis"]
    link = second.locator("a.pmid")
    assert (link.inner_text(), link.get_attribute("href")) == ("PMID 30000001",
                                                               "https://pubmed.ncbi.nlm.nih.gov/30000001/")
    assert "(2015)" in second.locator(".ref").inner_text()
    assert "DrugBank DB00363" in pg.inner_text("tr.evidence .ids")
    # a second pair open at once; sorting keeps both open
    pg.fill("#f-drug", "")
    pg.click("tr.pair[data-reaction='gastrointestinal hemorrhage'] button.pair")
    wf = pg.locator("tr.pair[data-reaction='gastrointestinal hemorrhage'] + tr.evidence")
    assert wf.locator("mark.reaction").all_inner_texts() == ["gastrointestinal haemorrhage"]
    assert wf.locator("mark.drug").all_inner_texts() == ["warfarin"]
    pg.click("th[data-key=ade_events] button")
    assert pg.locator("tr.evidence").count() == 2
    pg.screenshot(path=str(SHOT), full_page=True)
    button.click()
    assert pg.locator("tr.evidence").count() == 1

    assert pg.errors == []
    assert set(pg.requests) == {page_url}  # nothing but the page itself was loaded


def test_the_page_runs_only_its_own_script(page) -> None:  # noqa: ANN001
    pg = page
    # a script put into the page (as a sentence holding markup would try) is refused by the page's CSP
    pg.evaluate("""() => { const s = document.createElement('script');
                           s.textContent = 'window.injected = 1;'; document.body.appendChild(s); }""")
    assert pg.evaluate("() => window.injected") is None
    assert any("Content Security Policy" in e for e in pg.errors)
