"""PubMed/MEDLINE XML in (issue 25): the streamed reader, `clinex pv extract` and `clinex batch pv`
on baseline-style files, `--drug` screening, and bad input (truncated gzip, XML bomb, non-UTF-8
bytes, a PMID twice, a citation without a PMID or abstract)."""

from __future__ import annotations

import gzip
import io
import json
import tracemalloc
from pathlib import Path

import pytest

from clinex.batch import read_results, run_batch
from clinex.errors import EncodingError, FormatError
from clinex.io import limits
from clinex.io.medline import is_medline_file, iter_medline, looks_like_medline

HEAD = (
    b'<?xml version="1.0" encoding="UTF-8"?>\n'
    b'<!DOCTYPE PubmedArticleSet PUBLIC "-//NLM//DTD PubMedArticle, 1st January 2025//EN" '
    b'"https://dtd.nlm.nih.gov/ncbi/pubmed/out/pubmed_250101.dtd">\n'
    b"<PubmedArticleSet>\n"
)
TAIL = b"</PubmedArticleSet>\n"


def article(pmid: str | None, title: str, abstract: str | list[tuple[str | None, str]] | None = None, *,
            year: str = "<Year>2001</Year>", types: tuple[str, ...] = ("Journal Article",),
            mesh: tuple[str, ...] = (), raw_title: bytes | None = None) -> bytes:
    """One <PubmedArticle> as in NLM's baseline files (each on its own lines)."""
    if isinstance(abstract, str):
        abstract = [(None, abstract)]
    sections = "".join(f'<AbstractText Label="{lab}">{t}</AbstractText>' if lab else f"<AbstractText>{t}</AbstractText>"
                       for lab, t in abstract or ())
    parts = [
        "<PubmedArticle>",
        '<MedlineCitation Status="MEDLINE" Owner="NLM">',
        f'<PMID Version="1">{pmid}</PMID>' if pmid is not None else "",
        '<Article PubModel="Print"><Journal><JournalIssue CitedMedium="Print">',
        f"<PubDate>{year}</PubDate></JournalIssue><Title>J Test</Title></Journal>",
        "<ArticleTitle>@TITLE@</ArticleTitle>",
        f"<Abstract>{sections}</Abstract>" if abstract else "",
        "<PublicationTypeList>"
        + "".join(f'<PublicationType UI="D0">{t}</PublicationType>' for t in types)
        + "</PublicationTypeList>",
        "</Article>",
        "<MeshHeadingList>"
        + "".join(f'<MeshHeading><DescriptorName UI="D1" MajorTopicYN="N">{m}</DescriptorName></MeshHeading>'
                  for m in mesh)
        + "</MeshHeadingList>",
        "</MedlineCitation>",
        '<PubmedData><ArticleIdList><ArticleId IdType="pubmed">0</ArticleId></ArticleIdList></PubmedData>',
        "</PubmedArticle>",
    ]
    xml = "\n".join(p for p in parts if p).encode() + b"\n"
    return xml.replace(b"@TITLE@", raw_title if raw_title is not None else title.encode())


CASE = article(
    "11", "Hepatotoxicity after <i>isoniazid</i>.",
    [("BACKGROUND", "Drug injury is common."), ("CASE", "A 54-year-old man, treated with amiodarone, "
                                                        "developed thyrotoxicosis.")],
    types=("Case Reports", "Journal Article"), mesh=("Isoniazid", "Thyrotoxicosis"),
)
TITLE_ONLY = article("12", "Tylenol overdose and liver failure.", None, year="<MedlineDate>1998 Dec-1999 Jan</MedlineDate>")
PLAIN = article("13", "Metoprolol in tremor.", "Metoprolol improved the tremor.")


def _write(path: Path, *articles: bytes, gz: bool = False) -> Path:
    data = HEAD + b"".join(articles) + TAIL
    path.write_bytes(gzip.compress(data, mtime=0) if gz else data)
    return path


def _starts(data: bytes) -> list[int]:
    """1-based lines of the <PubmedArticle> start tags."""
    return [i + 1 for i, ln in enumerate(data.split(b"\n")) if ln == b"<PubmedArticle>"]


def _read(data: bytes, name: str = "x.xml", **kw) -> tuple[list, list[str]]:
    errors: list[str] = []
    got = list(iter_medline(io.BytesIO(data), path=name, on_error=lambda e: errors.append(str(e)), **kw))
    return got, errors


# ------------------------------------------------------------------------------ the reader


def test_citation_fields_and_offsets(tmp_path: Path) -> None:
    (c, t, p), errors = _read(HEAD + CASE + TITLE_ONLY + PLAIN + TAIL)
    assert errors == []
    assert c.pmid == "11" and c.line == 4
    # record text = title + " " + abstract; structured sections keep their label
    assert c.text == ("Hepatotoxicity after isoniazid. BACKGROUND: Drug injury is common. CASE: A 54-year-old man, "
                      "treated with amiodarone, developed thyrotoxicosis.")
    assert c.title == c.text[: c.title_end] == "Hepatotoxicity after isoniazid."
    assert c.abstract_start == c.title_end + 1 and c.abstract == c.text[c.abstract_start :]
    assert [(lab, c.text[s:e]) for lab, s, e in c.sections] == [
        ("BACKGROUND", "BACKGROUND: Drug injury is common."),
        ("CASE", "CASE: A 54-year-old man, treated with amiodarone, developed thyrotoxicosis.")]
    assert (c.year, c.publication_types, c.mesh_headings) == (2001, ("Case Reports", "Journal Article"),
                                                              ("Isoniazid", "Thyrotoxicosis"))
    assert c.meta() == {"pmid": "11", "year": 2001, "publication_types": ["Case Reports", "Journal Article"],
                        "mesh_headings": ["Isoniazid", "Thyrotoxicosis"], "title_end": 31, "abstract_start": 32,
                        "sections": [["BACKGROUND", 32, 66], ["CASE", 67, 142]]}
    # a citation without an abstract is still a record: its text is the title
    assert (t.pmid, t.text, t.has_abstract, t.abstract, t.sections) == (
        "12", "Tylenol overdose and liver failure.", False, "", ())
    assert t.year == 1998  # MedlineDate "1998 Dec-1999 Jan"
    assert (p.text, p.sections) == ("Metoprolol in tremor. Metoprolol improved the tremor.", ((None, 22, 53),))


def test_gzip_is_told_by_its_bytes_not_its_name(tmp_path: Path) -> None:
    plain = _write(tmp_path / "a.xml", CASE, PLAIN)
    packed = _write(tmp_path / "baseline.dat", CASE, PLAIN, gz=True)  # gzip data under any name
    assert [c.text for c in iter_medline(packed)] == [c.text for c in iter_medline(plain)]
    txt = tmp_path / "export.txt"
    txt.write_bytes(plain.read_bytes())  # PubMed's export saved as .txt: told by its root element
    assert is_medline_file(packed) and is_medline_file(txt) and is_medline_file(plain)
    other = tmp_path / "notes.txt"
    other.write_text("Rash after amoxicillin.")
    assert not is_medline_file(other)
    assert looks_like_medline(b"\xef\xbb\xbf<!-- c -->\n<PubmedArticleSet>") and not looks_like_medline(b"<document>")


def test_memory_is_bounded_by_a_citation_not_the_file() -> None:
    one = article("{n}", "Rash after amoxicillin.", "A boy had a rash. " * 500)  # 9.6 KB
    data = HEAD + b"".join(one.replace(b"{n}", str(n).encode()) for n in range(1, 1001)) + TAIL
    assert len(data) > 9_000_000
    stream = io.BytesIO(gzip.compress(data, compresslevel=1))
    tracemalloc.start()
    try:
        n = sum(1 for _ in iter_medline(stream, path="big.xml.gz"))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert n == 1000
    # 64 KiB chunks, one citation and the PMIDs seen (about 1.2 MB measured), not 9.6 MB of XML
    assert peak < 2_500_000


def test_bad_citations_are_reported_and_skipped(tmp_path: Path) -> None:
    data = (HEAD + CASE                                    # line 4
            + article("11", "Again.", "Dup.")              # a PMID seen twice
            + article(None, "No PMID.", "Text.")           # no PMID
            + article("14", "Bad", raw_title=b"Caf\xe9 au lait spots.")  # a Latin-1 byte
            + article("15", "")                            # neither title nor abstract
            + PLAIN + TAIL)
    lines = _starts(data)
    got, errors = _read(data, "cit.xml")
    assert [c.pmid for c in got] == ["11", "13"]
    assert errors == [
        f"[CLX002] cit.xml:{lines[1]}: PMID 11 seen twice (first at line 4); the second citation skipped",
        f"[CLX002] cit.xml:{lines[2]}: citation without a PMID (MedlineCitation/PMID); skipped",
        f"[CLX003] cit.xml:{lines[3]}: PMID 14: bytes that are not UTF-8 in this citation; skipped",
        f"[CLX002] cit.xml:{lines[4]}: PMID 15: no title and no abstract; skipped",
    ]
    with pytest.raises(FormatError, match=r"PMID 11 seen twice"):
        list(iter_medline(io.BytesIO(data), path="cit.xml", errors="raise"))
    got, errors = _read(HEAD + PLAIN + TAIL, "cit.xml", max_chars=20)
    assert got == [] and errors == [
        "[CLX002] cit.xml:4: field 'text': PMID 13: 53 characters of title and abstract, more than 20; skipped"]


def test_truncated_gzip_keeps_the_citations_before_the_cut(tmp_path: Path) -> None:
    one = article("{n}", "Rash after amoxicillin.", "A boy had a rash. " * 40)
    data = HEAD + b"".join(one.replace(b"{n}", str(n).encode()) for n in range(1, 201)) + TAIL
    packed = gzip.compress(data, mtime=0)
    cut = tmp_path / "pubmed25n0001.xml.gz"
    cut.write_bytes(packed[: len(packed) // 2])
    got: list = []
    with pytest.raises(FormatError) as err:
        for c in iter_medline(cut):
            got.append(c.pmid)
    assert 0 < len(got) < 200 and got == [str(n) for n in range(1, len(got) + 1)]
    assert str(err.value) == (f"[CLX002] {cut}: gzip data ends early (a truncated file?); "
                              f"{len(got)} citation(s) before it were read")
    # a plain file cut short: not well formed, with the line
    with pytest.raises(FormatError) as err:
        list(iter_medline(io.BytesIO(HEAD + CASE), path="cut.xml"))
    end = (HEAD + CASE).count(b"\n") + 1
    assert str(err.value) == (f"[CLX002] cut.xml:{end}: XML is not well formed (no element found: line {end}, "
                              "column 0); 1 citation(s) before it were read")


def test_file_level_refusals_name_the_file(tmp_path: Path) -> None:
    # "billion laughs": each entity ten of the one before
    levels = b"".join(b'<!ENTITY l%d "%s">\n' % (k, b"".join(b"&l%d;" % (k - 1) for _ in range(10))) for k in range(1, 10))
    bomb = (b'<?xml version="1.0"?>\n<!DOCTYPE PubmedArticleSet [\n<!ENTITY l0 "lol">\n' + levels
            + b"]>\n<PubmedArticleSet>&l9;</PubmedArticleSet>\n")
    cases = [
        (bomb, "bomb.xml", FormatError, "[CLX002] bomb.xml:3: refused unsafe XML (EntitiesForbidden: entity "
         "declarations and external references are not read); no citation was read"),
        ("<PubmedArticleSet/>".encode("utf-16"), "u16.xml", EncodingError,
         "[CLX003] u16.xml:1: UTF-16 or UTF-32 text (or a binary file); PubMed/MEDLINE XML is read as UTF-8"),
        (b'<?xml version="1.0" encoding="ISO-8859-1"?>\n<PubmedArticleSet/>', "l1.xml", EncodingError,
         "[CLX003] l1.xml:1: XML declares encoding 'ISO-8859-1'; PubMed/MEDLINE XML is read as UTF-8"),
        (b"<document><text>x</text></document>", "other.xml", FormatError,
         "[CLX002] other.xml:1: root element <document>, expected <PubmedArticleSet> (PubMed/MEDLINE XML)"),
        (b"", "empty.xml", FormatError, "[CLX002] empty.xml: empty file, expected PubMed/MEDLINE XML"),
        (b"\x1f\x8bnot gzip at all", "bad.xml.gz", FormatError,
         "[CLX002] bad.xml.gz: not valid gzip data (Unknown compression method); no citation was read"),
    ]
    for data, name, kind, message in cases:
        with pytest.raises(kind) as err:
            list(iter_medline(io.BytesIO(data), path=name))
        assert str(err.value) == message


def test_a_citation_larger_than_the_limit_stops_the_file(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(limits, "MAX_MEDLINE_CITATION_BYTES", 100_000)
    huge = article("2", "Long.", "word " * 40_000)  # 200 KB
    got = []
    with pytest.raises(FormatError) as err:
        for c in iter_medline(io.BytesIO(HEAD + PLAIN + huge + TAIL), path="huge.xml"):
            got.append(c.pmid)
    assert got == ["13"]
    line = _starts(HEAD + PLAIN + huge)[1]
    assert str(err.value) == ("[CLX002] huge.xml: more than MAX_MEDLINE_CITATION_BYTES = 100,000 bytes without a "
                              f"whole citation (clinex.io.limits), from line {line}; 1 citation(s) before it were read")


# ------------------------------------------------------------------------------ clinex pv extract


def test_pv_extract_reads_medline_gz(cli, tmp_path: Path) -> None:
    src = _write(tmp_path / "pubmed25n0001.xml.gz", CASE, TITLE_ONLY, gz=True)
    res = cli("pv", "extract", "-i", src, "--model", "crf", "-o", tmp_path / "out.json")
    assert res.code == 0, res.stderr
    recs = [json.loads(ln) for ln in (tmp_path / "out.json").read_text().splitlines()]
    assert [r["id"] for r in recs] == ["11", "12"]  # the PMIDs
    text = recs[0]["context"]
    assert text.startswith("Hepatotoxicity after isoniazid. BACKGROUND: ")
    for ev in recs[0]["annotations"][0]["events"]:  # offsets into title + " " + abstract
        trig = ev["Trigger"]
        assert text[trig["start"][0][0]:].startswith(trig["text"][0][0])
    assert any(ev["Treatment"]["Drug"]["text"] == [["amiodarone"]] for ev in recs[0]["annotations"][0]["events"])


def test_pv_extract_bad_citations_exit_1_and_bomb_exit_2(cli, tmp_path: Path) -> None:
    src = _write(tmp_path / "cit.xml", CASE, article(None, "No PMID.", "Text."), article("11", "Twice."))
    lines = _starts(src.read_bytes())
    res = cli("pv", "extract", "-i", src, "--model", "crf", "-o", tmp_path / "out.json")
    assert res.code == 1
    assert res.stderr.splitlines() == [
        f"skipped: [CLX002] {src}:{lines[1]}: citation without a PMID (MedlineCitation/PMID); skipped",
        f"skipped: [CLX002] {src}:{lines[2]}: PMID 11 seen twice (first at line 4); the second citation skipped",
        f"1 records, 2 events asserted (2 adverse, 0 therapeutic), 0 negated -> {tmp_path / 'out.json'}",
        "2 bad citations or failed records skipped (see above); exit status 1",
    ]
    bomb = tmp_path / "bomb.xml"
    bomb.write_bytes(b'<?xml version="1.0"?>\n<!DOCTYPE PubmedArticleSet [\n<!ENTITY a "aaaa">\n'
                     b'<!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;">\n]>\n<PubmedArticleSet>&b;</PubmedArticleSet>\n')
    res = cli("pv", "extract", "-i", bomb, "--model", "crf", "-o", tmp_path / "bomb.json")
    assert res.code == 2 and res.stderr == (
        f"[CLX002] {bomb}:3: refused unsafe XML (EntitiesForbidden: entity declarations and external references "
        "are not read); no citation was read\n")
    assert not (tmp_path / "bomb.json").exists()


def test_pv_extract_drug_screen_uses_gazetteer_synonyms(cli, tmp_path: Path) -> None:
    src = _write(tmp_path / "cit.xml", CASE, TITLE_ONLY, PLAIN)
    names = tmp_path / "drugs.txt"
    names.write_text("# our products\nparacetamol\n\nnotadrugname\n", encoding="utf-8")
    res = cli("pv", "extract", "-i", src, "--model", "crf", "--drug", names, "--drug", "ISONIAZID",
              "-o", tmp_path / "out.json")
    assert res.code == 0, res.stderr
    # "Tylenol" is paracetamol's synonym in the gazetteer; "isoniazid" matches in any case
    assert [json.loads(ln)["id"] for ln in (tmp_path / "out.json").read_text().splitlines()] == ["11", "12"]
    assert res.stderr.splitlines()[:2] == [
        "warning: --drug 'notadrugname' is not in the drug gazetteer; matched as written only",
        "--drug: 1 of 3 records screened out (no mention of paracetamol, notadrugname, ISONIAZID)",
    ]


# ------------------------------------------------------------------------------ clinex batch pv


def test_batch_pv_medline_rows_keep_pmid_and_metadata(tmp_path: Path) -> None:
    folder = tmp_path / "baseline"
    folder.mkdir()
    _write(folder / "pubmed25n0001.xml.gz", CASE, TITLE_ONLY, gz=True)
    _write(folder / "pubmed25n0002.xml", PLAIN, article(None, "No PMID.", "Text."))
    summary = run_batch("pv", [folder], tmp_path / "out", model="crf", drugs=["metoprolol", "acetaminophen"])
    assert summary.n_items == 2 and summary.n_screened_out == 1 and summary.n_rows == 2
    second = folder / "pubmed25n0002.xml"
    line = _starts(second.read_bytes())[1]
    assert [(e.id, e.message) for e in summary.errors] == [
        (f"{second}:{line}", f"[CLX002] {second}:{line}: citation without a PMID (MedlineCitation/PMID); skipped")]
    rows = read_results(tmp_path / "out", "SELECT id, source, text, meta_json FROM results ORDER BY id")
    assert [(r[0], Path(r[1]).name) for r in rows] == [("12", "pubmed25n0001.xml.gz"), ("13", "pubmed25n0002.xml")]
    meta = json.loads(rows[0][3])
    assert (meta["pmid"], meta["year"], meta["publication_types"]) == ("12", 1998, ["Journal Article"])
    assert rows[0][2] == "Tylenol overdose and liver failure."
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert (manifest["drugs"], manifest["n_screened_out"]) == (["metoprolol", "acetaminophen"], 1)
    # a JSON-lines record has no citation metadata
    jl = tmp_path / "r.jsonl"
    jl.write_text('{"id": "x", "text": "Rash after amoxicillin."}\n', encoding="utf-8")
    run_batch("pv", [jl], tmp_path / "out2", model="crf")
    assert read_results(tmp_path / "out2", "SELECT id, meta_json FROM results") == [("x", None)]


def test_batch_pv_truncated_file_is_one_error_after_its_citations(cli, tmp_path: Path) -> None:
    one = article("{n}", "Rash after amoxicillin.", "A boy had a rash. " * 40)
    data = HEAD + b"".join(one.replace(b"{n}", str(n).encode()) for n in range(1, 201)) + TAIL
    packed = gzip.compress(data, mtime=0)
    cut = tmp_path / "cut.xml.gz"
    cut.write_bytes(packed[: len(packed) // 2])
    n_before = sum(1 for _ in _iter_until_error(cut))
    res = cli("batch", "pv", cut, "--model", "crf", "-o", tmp_path / "out", "--partition-size", "64")
    assert res.code == 1
    assert res.stderr.splitlines()[-1] == (
        f"skipped {cut}: [CLX002] {cut}: gzip data ends early (a truncated file?); "
        f"{n_before} citation(s) before it were read")
    assert read_results(tmp_path / "out", "SELECT count(*) FROM results") == [(n_before,)]


def _iter_until_error(path: Path):
    try:
        yield from iter_medline(path)
    except FormatError:
        return
