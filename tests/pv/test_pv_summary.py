"""`clinex pv summarize RUN` (issue 25, item 3): drug x reaction pairs of a real `clinex batch pv`
run over six JSON-lines records (a bad line among them) and two MEDLINE citations, with exact
counts; the normal forms of drugs and reactions; the page's safety; incomplete runs and
existing outputs refused."""

from __future__ import annotations

import csv
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from clinex.errors import InputError
from clinex.pv.run_folder import check_pv_run
from clinex.pv.summary import (
    PAIR_COLUMNS,
    SUMMARY_FILES,
    check_run,
    normalize_drug,
    reaction_base,
    reaction_forms,
    summarize_run,
)
from clinex.pv.summary_html import render_pairs_html

RECORDS = [
    {"id": "r1", "text": "A 54-year-old woman developed agranulocytosis while taking clozapine."},
    {"id": "r2", "text": "The agranulocytosis resolved after clozapine was withdrawn."},  # dechallenge
    {"id": "r3", "text": "Seizures developed after an overdose of bupropion."},
    {"id": "r4", "text": "A seizure occurred in a patient taking Bupropion."},  # same pair: case, plural
    {"id": "r5", "text": "No hepatotoxicity was observed in patients treated with isoniazid."},  # negated
    {"id": "r6", "text": "Amiodarone may have caused the pulmonary fibrosis in this patient."},  # speculated
]


def _citation(pmid: int, year: int, title: str, abstract: str) -> str:
    return (f'<PubmedArticle>\n<MedlineCitation Status="MEDLINE" Owner="NLM">\n<PMID Version="1">{pmid}</PMID>\n'
            '<Article PubModel="Print"><Journal><JournalIssue CitedMedium="Print">\n'
            f"<PubDate><Year>{year}</Year></PubDate></JournalIssue><Title>J Test</Title></Journal>\n"
            f"<ArticleTitle>{title}</ArticleTitle>\n<Abstract><AbstractText>{abstract}</AbstractText></Abstract>\n"
            "</Article>\n</MedlineCitation>\n</PubmedArticle>\n")


MEDLINE = ('<?xml version="1.0" encoding="UTF-8"?>\n<PubmedArticleSet>\n'
           + _citation(30000001, 2015, "Agranulocytosis during clozapine treatment.",
                       "A 23-year-old man developed agranulocytosis after ten weeks of clozapine therapy.")
           + _citation(30000002, 2021, "Haemorrhage on warfarin.",
                       "A 70-year-old woman developed a gastrointestinal haemorrhage while taking warfarin. "
                       "Treatment with prednisone led to complete remission of the nephrotic syndrome.")
           + "</PubmedArticleSet>\n")


def build_run(folder: Path) -> Path:
    """Write the inputs into ``folder`` and run the real ``clinex batch pv`` on them; return the run folder."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps(r) for r in RECORDS]
    lines.insert(3, '{"id": "bad", "text": ')  # one malformed line: skipped by the batch, warned by summarize
    (folder / "reports.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (folder / "pubmed.xml").write_text(MEDLINE, encoding="utf-8")
    run = folder / "run"
    proc = subprocess.run([sys.executable, "-m", "clinex.cli", "batch", "pv", str(folder / "reports.jsonl"),
                           str(folder / "pubmed.xml"), "--output", str(run)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 1, proc.stderr  # the bad line was skipped
    assert "8 items, 8 rows, 1 errors" in proc.stdout + proc.stderr
    return run


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_run(tmp_path_factory.mktemp("pv-summary"))


def _csv(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


COUNTS = ["events", "records", "pmids", "ade_events", "ade_records", "ade_pmids", "pte_events", "pte_records",
          "pte_pmids", "speculated_events", "negated_events", "dechallenge_events", "rechallenge_events",
          "first_year", "last_year"]

# drug, reaction -> the COUNTS columns
EXPECTED = {
    # r1, r2 and the citation's title and abstract: 4 events in 3 records, 1 PMID; r2 a dechallenge
    ("clozapine", "agranulocytosis"): "4 3 1 4 3 1 0 0 0 0 0 1 0 2015 2015",
    # "Seizures" (r3) and "seizure" (r4), "bupropion" and "Bupropion": one pair
    ("bupropion", "seizure"): "2 2 0 2 2 0 0 0 0 0 0 0 0 - -",
    ("warfarin", "gastrointestinal hemorrhage"): "1 1 1 1 1 1 0 0 0 0 0 0 0 2021 2021",
    ("warfarin", "hemorrhage"): "1 1 1 1 1 1 0 0 0 0 0 0 0 2021 2021",
    ("prednisone", "nephrotic syndrome"): "1 1 1 0 0 0 1 1 1 0 0 0 0 2021 2021",
}


def _table(rows: list[dict[str, str]]) -> dict[tuple[str, str], str]:
    return {(r["drug"], r["reaction"]): " ".join(r[c] or "-" for c in COUNTS) for r in rows}


def test_pairs_have_exact_counts(run: Path, cli) -> None:  # noqa: ANN001
    res = cli("pv", "summarize", run)
    assert res.code == 0, res.stderr
    out = run / "summary"
    assert sorted(p.name for p in out.iterdir()) == sorted(SUMMARY_FILES)
    assert res.stdout.strip() == (
        "8 records, 9 events counted (1 negated left out, 1 speculated left out), 5 drug x reaction pairs -> "
        + ", ".join(str(out / f) for f in SUMMARY_FILES))
    assert f"warning: {run}: the batch run skipped 1 input item(s)" in res.stderr
    rows = _csv(out / "pairs.csv")
    assert list(rows[0]) == list(PAIR_COLUMNS)
    assert _table(rows) == EXPECTED
    # rows by ADE events, ADE records, events (descending), then drug and reaction
    assert [(r["drug"], r["reaction"]) for r in rows] == list(EXPECTED)
    by = {(r["drug"], r["reaction"]): r for r in rows}
    clz = by["clozapine", "agranulocytosis"]
    assert (clz["drug_texts"], clz["reaction_texts"], clz["drugbank_id"], clz["mesh_tree"]) == (
        "clozapine", "Agranulocytosis; agranulocytosis", "DB00363", "D03.633.300.240.220")
    bup = by["bupropion", "seizure"]
    assert (bup["drug_texts"], bup["reaction_texts"]) == ("Bupropion; bupropion", "Seizures; seizure")
    # negated (isoniazid) and speculated (amiodarone) events are no pairs by default
    assert not {d for d, _ in by} & {"isoniazid", "amiodarone"}


def test_examples_point_into_the_records_text(run: Path) -> None:
    out = run / "summary-ex"
    summarize_run(run, out)
    texts = {r["id"]: r["text"] for r in RECORDS}
    texts |= {"30000001": "Agranulocytosis during clozapine treatment. A 23-year-old man developed agranulocytosis "
                          "after ten weeks of clozapine therapy.",
              "30000002": "Haemorrhage on warfarin. A 70-year-old woman developed a gastrointestinal haemorrhage "
                          "while taking warfarin. Treatment with prednisone led to complete remission of the "
                          "nephrotic syndrome."}
    rows = {(r["drug"], r["reaction"]): json.loads(r["examples_json"]) for r in _csv(out / "pairs.csv")}
    for (drug, reaction), examples in rows.items():
        assert 1 <= len(examples) <= 3
        for ex in examples:
            text, start = texts[ex["id"]], ex["sentence_start"]
            assert text[start : start + len(ex["sentence"])] == ex["sentence"]
            (ds, de), = ex["drug_offsets"]
            (rs, re_), = ex["reaction_offsets"]
            assert ex["sentence"][ds - start : de - start] == text[ds:de]
            assert ex["sentence"][rs - start : re_ - start] == text[rs:re_]
            assert normalize_drug(text[ds:de]).key == drug
            assert reaction_base(text[rs:re_]) in (reaction, reaction + "s")  # "Seizures" counts as "seizure"
    clz = rows["clozapine", "agranulocytosis"]
    # one sentence of each record: the dechallenge first, then the citation (it has a PMID), then r1;
    # the citation's title before its abstract
    assert [(ex["id"], ex["pmid"], ex["year"], ex["dechallenge"], ex["sentence_start"]) for ex in clz] == [
        ("r2", None, None, True, 0), ("30000001", "30000001", 2015, False, 0), ("r1", None, None, False, 0)]
    assert clz[0]["sentence"] == "The agranulocytosis resolved after clozapine was withdrawn."
    assert (clz[0]["drug_offsets"], clz[0]["reaction_offsets"]) == ([[35, 44]], [[4, 19]])
    wf = rows["warfarin", "gastrointestinal hemorrhage"][0]
    assert wf["sentence"] == "A 70-year-old woman developed a gastrointestinal haemorrhage while taking warfarin."
    assert wf["sentence_start"] == 25
    assert [[s - 25, e - 25] for s, e in wf["reaction_offsets"]] == [[32, 60]]


def test_options_keep_negated_and_speculated_events(run: Path, cli) -> None:  # noqa: ANN001
    res = cli("pv", "summarize", run, "-o", run / "all", "--include-negated", "--include-speculated")
    assert res.code == 0, res.stderr
    assert "11 events counted, 7 drug x reaction pairs" in res.stdout
    table = _table(_csv(run / "all" / "pairs.csv"))
    assert table == EXPECTED | {
        ("amiodarone", "pulmonary fibrosis"): "1 1 0 1 1 0 0 0 0 1 0 0 0 - -",
        ("isoniazid", "hepatotoxicity"): "1 1 0 1 1 0 0 0 0 0 1 0 0 - -",
    }
    res = cli("pv", "summarize", run, "-o", run / "neg", "--include-negated")
    assert "10 events counted (1 speculated left out), 6 drug x reaction pairs" in res.stdout
    ex = json.loads(next(r for r in _csv(run / "neg" / "pairs.csv") if r["drug"] == "isoniazid")["examples_json"])
    assert ex[0]["negated"] is True


def test_parquet_holds_the_csv_rows(run: Path) -> None:
    import duckdb

    out = run / "summary-pq"
    summarize_run(run, out)
    con = duckdb.connect()
    try:
        desc = con.execute(f"DESCRIBE SELECT * FROM read_parquet('{out / 'pairs.parquet'}')").fetchall()
        rows = con.execute(f"SELECT * FROM read_parquet('{out / 'pairs.parquet'}')").fetchall()
    finally:
        con.close()
    assert [(d[0], d[1]) for d in desc] == list(PAIR_COLUMNS.items())
    csv_rows = _csv(out / "pairs.csv")
    assert [[("" if v is None else str(v)) for v in r] for r in rows] == [list(r.values()) for r in csv_rows]


def test_existing_output_is_refused_without_force(run: Path, cli) -> None:  # noqa: ANN001
    out = run / "summary-force"
    out.mkdir()
    (out / "notes.txt").write_text("mine\n", encoding="utf-8")
    res = cli("pv", "summarize", run, "-o", out)
    assert res.code == 2
    assert res.stderr.strip() == (f"[CLX001] {out}: output folder exists and is not empty; pass --force to "
                                  "replace its pairs.csv, pairs.parquet, pairs.html")
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]
    assert cli("pv", "summarize", run, "-o", out, "--force").code == 0
    assert cli("pv", "summarize", run, "-o", out, "--force").code == 0  # replaces its own files
    assert sorted(p.name for p in out.iterdir()) == sorted(["notes.txt", *SUMMARY_FILES])
    assert (out / "notes.txt").read_text(encoding="utf-8") == "mine\n"
    (run / "a-file").write_text("x", encoding="utf-8")
    res = cli("pv", "summarize", run, "-o", run / "a-file", "--force")
    assert (res.code, res.stderr.strip()) == (2, f"[CLX001] {run / 'a-file'}: exists and is not a folder; "
                                                 "pass another --output")


def test_an_incomplete_run_is_refused(run: Path, tmp_path: Path, cli) -> None:  # noqa: ANN001
    part = tmp_path / "part"
    shutil.copytree(run, part, ignore=shutil.ignore_patterns("summary*", "all", "neg", "a-file"))
    manifest = json.loads((part / "manifest.json").read_text(encoding="utf-8"))
    # what a killed run leaves: the manifest written first ("running"), some parts, no results
    (part / "manifest.json").write_text(json.dumps(manifest | {"status": "running"}), encoding="utf-8")
    (part / "results.parquet").unlink()
    res = cli("pv", "summarize", part)
    assert res.code == 2
    assert res.stderr.strip() == (
        f"[CLX001] {part}: the batch run is incomplete (manifest status 'running'; 1 of 1 part file(s) on disk); "
        f"run the same `clinex batch pv ... --output {part}` command again to finish it, then `clinex pv summarize`")
    assert not (part / "summary").exists()
    # done, but results.parquet holds other rows than the manifest says
    (part / "manifest.json").write_text(json.dumps(manifest | {"n_rows": 9}), encoding="utf-8")
    shutil.copy(run / "results.parquet", part / "results.parquet")
    res = cli("pv", "summarize", part)
    assert (res.code, res.stderr.strip()) == (2, f"[CLX001] {part / 'results.parquet'}: holds 8 rows, the manifest "
                                                 "says 9: the run is incomplete or was changed; run the same "
                                                 "`clinex batch pv` command again")
    (part / "manifest.json").write_text(json.dumps(manifest | {"task": "rob"}), encoding="utf-8")
    assert ("a `clinex batch rob` run, not `clinex batch pv`; `clinex pv summarize` reads the --output folder of a "
            "`clinex batch pv` run") in cli("pv", "summarize", part).stderr
    (part / "manifest.json").unlink()
    res = cli("pv", "summarize", part)
    assert (res.code, res.stderr.strip()) == (2, f"[CLX001] {part}: not a `clinex batch pv` output folder (no "
                                                 "manifest.json); `clinex pv summarize` reads the --output folder "
                                                 "of a `clinex batch pv` run")
    with pytest.raises(InputError, match="missing: no such folder; `clinex pv summarize` reads the --output folder"):
        check_run(tmp_path / "missing")
    (tmp_path / "m.json").write_text("{}", encoding="utf-8")
    with pytest.raises(InputError, match="m.json: not a folder; `clinex pv e2b` reads the --output folder"):
        check_pv_run(tmp_path / "m.json", "e2b")


# ----------------------------------------------------------------------------- normal forms


def test_reaction_normal_form() -> None:
    assert [reaction_base(t) for t in ("  The   Haemorrhage.", "Peripheral oedema", "Anaemia", "ischaemic stroke",
                                       "Diarrhoea", "oesophagitis", "A seizure", "hospitalisation",
                                       "an  Anaphylactic   reaction;")] == [
        "hemorrhage", "peripheral edema", "anemia", "ischemic stroke", "diarrhea", "esophagitis", "seizure",
        "hospitalization", "anaphylactic reaction"]
    forms = reaction_forms(["seizures", "seizure", "rashes", "rash", "tremors", "arrhythmias", "arrhythmia",
                            "diabetes", "abscess", "skin lesions", "skin lesion", "lesions"])
    # only where the singular is seen; never "-ss"; the last word only
    assert forms == {"seizures": "seizure", "rashes": "rash", "arrhythmias": "arrhythmia",
                     "skin lesions": "skin lesion"}


def test_drug_normal_form() -> None:
    assert normalize_drug("Tylenol").key == normalize_drug("paracetamol").key == "acetaminophen"
    # the drug's own MeSH tree number, not the gazetteer's mesh_id (a class: D018756 Antipsychotic Agents)
    assert normalize_drug("CLOZAPINE") == ("clozapine", "DB00363", "D03.633.300.240.220")
    assert normalize_drug("intravenous clonidine").key == "clonidine"
    assert normalize_drug("antibiotics").key == "antibiotics"  # a class, not a drug name
    assert normalize_drug("  Study  Drug X ") == ("study drug x", None, None)


# ----------------------------------------------------------------------------- the page


def test_the_page_is_self_contained_and_its_data_inert(run: Path) -> None:
    page = (run / "summary" / "pairs.html").read_text(encoding="utf-8")
    assert not re.search(r"\s(?:src|href)\s*=", page)  # nothing loaded (PubMed links are made by the script)
    assert not re.search(r"<[^>]+\son[a-z]+\s*=", page)  # no inline event handler
    assert "<link" not in page and "@import" not in page and "url(" not in page
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page).group(1)
    assert csp.startswith("default-src 'none'; script-src 'sha256-")
    import base64
    import hashlib

    for tag in ("script", "style"):
        body = re.search(rf"<{tag}>(.*?)</{tag}>", page, re.S).group(1)
        digest = base64.b64encode(hashlib.sha256(body.encode()).digest()).decode()
        assert f"'sha256-{digest}'" in csp
    # a record text that tries to end the data block stays data
    evil = {c: 0 for c in PAIR_COLUMNS} | {
        "drug": "x</script><script>alert(1)</script>", "reaction": "<b>&amp;</b>", "drug_texts": "", "reaction_texts": "",
        "examples_json": json.dumps([{"id": "1", "sentence": "</script><img src=x onerror=alert(1)>",
                                      "sentence_start": 0, "drug_offsets": [], "reaction_offsets": []}])}
    html_text = render_pairs_html([evil], {"run": "<run>", "pairs": 1})
    assert html_text.count("</script>") == 2 and "<img" not in html_text and "<b>" not in html_text
    assert "<title>clinex: drug \u00d7 reaction pairs of &lt;run&gt;</title>" in html_text


def test_a_record_named_by_its_pmid_counts_as_a_pmid(tmp_path: Path, cli) -> None:  # noqa: ANN001
    """Fresh-user QA: a JSON-lines record whose id is a PMID was a PMID in `clinex pv e2b`
    but not in the summary's counts; both use clinex.pv.run_folder.record_pmid now."""
    src = tmp_path / "abstracts.jsonl"
    src.write_text(json.dumps({"id": "6794356", "text": "Carbamazepine-induced hepatitis was diagnosed."}) + "\n"
                   + json.dumps({"id": "doc-2", "text": "Carbamazepine-induced hepatitis occurred again."}) + "\n",
                   encoding="utf-8")
    assert cli("batch", "pv", src, "--output", tmp_path / "run").code == 0
    assert cli("pv", "summarize", tmp_path / "run").code == 0
    [row] = _csv(tmp_path / "run" / "summary" / "pairs.csv")
    assert (row["drug"], row["reaction"], row["records"], row["pmids"]) == ("carbamazepine", "hepatitis", "2", "1")
