"""The assess pipeline: model answers -> checked answers -> RoB 2 judgements; JSON; CLI."""

from __future__ import annotations

import json

import pytest

from clinex.errors import FormatError, InputError, ModelError, OffsetError, SchemaError
from clinex.rob import assess, assess_path, read_json, write_json
from clinex.rob.report import OutputNamer
from clinex.rob.types import Evidence, SQAnswer, TrialAssessment
from clinex.text import Document, Span

PAGE1 = "Methods. Participants were randomised with a computer-generated sequence.\n"
PAGE2 = "Allocation was concealed. Analysis was by intention to treat.\n"
TEXT = PAGE1 + PAGE2

TRIAL_TXT = """A randomised controlled trial of drug X versus placebo

Methods
Participants were randomly assigned (1:1) using a computer-generated random sequence.
Allocation was concealed using sequentially numbered, sealed, opaque envelopes.
Participants and investigators were blinded; the placebo was identical in appearance.
Outcome assessors were blinded. Analysis was by intention to treat.

Results
Baseline characteristics were similar between groups.
"""


def _doc() -> Document:
    return Document(
        id="t1",
        text=TEXT,
        pages=(
            Span.from_offsets(TEXT, (0, len(PAGE1)), label="1"),
            Span.from_offsets(TEXT, (len(PAGE1), len(TEXT)), label="2"),
        ),
        meta={"source": "t1.pdf"},
    )


def _ev(doc: Document, phrase: str, sq: str, score: float = 0.9) -> Evidence:
    start = doc.text.index(phrase)
    return Evidence(
        span=Span.from_offsets(doc.text, (start, start + len(phrase)), label=sq),
        score=score,
        source="test.rule",
    )


class FakeModel:
    """Deterministic model: a fixed answer set with evidence at known offsets."""

    name = "fake"
    version = "1.0"

    def __init__(self, answers=None):
        self.answers = answers

    def predict(self, doc):
        if self.answers is not None:
            return self.answers
        return {
            "1.1": SQAnswer(
                sq="1.1", response="Y", confidence=0.9,
                evidence=(_ev(doc, "computer-generated sequence", "1.1"),),
            ),
            "1.2": SQAnswer(
                sq="1.2", response="PY", confidence=0.8,
                evidence=(_ev(doc, "Allocation was concealed", "1.2"),),
            ),
            "1.3": SQAnswer(sq="1.3", response="N", confidence=0.6),
            "2.1": SQAnswer(sq="2.1", response="N", confidence=0.7),
            "2.2": SQAnswer(sq="2.2", response="PN", confidence=0.7),
            # 2.3 is answered but not asked (2.1 and 2.2 are N/PN): becomes NA
            "2.3": SQAnswer(sq="2.3", response="Y", judgement="Bad", confidence=0.4),
            "2.6": SQAnswer(
                sq="2.6", response="Y", confidence=0.95,
                evidence=(_ev(doc, "intention to treat", "2.6"),),
            ),
            "3.1": SQAnswer(sq="3.1", response="N", confidence=0.5),
            "3.2": SQAnswer(sq="3.2", response="N", confidence=0.5),
            "3.3": SQAnswer(sq="3.3", response="Y", confidence=0.5),
            "3.4": SQAnswer(sq="3.4", response="PN", confidence=0.5),
            "4.1": SQAnswer(sq="4.1", response="N", confidence=0.5),
            "4.2": SQAnswer(sq="4.2", response="N", confidence=0.5),
            "4.3": SQAnswer(sq="4.3", response="N", confidence=0.5),
            "5.1": SQAnswer(sq="5.1", response="Y", confidence=0.5),
            "5.2": SQAnswer(sq="5.2", response="N", confidence=0.5),
            "5.3": SQAnswer(sq="5.3", response="N", confidence=0.5),
        }


def _answers(result: TrialAssessment) -> dict[str, SQAnswer]:
    return {a.sq: a for d in result.domains for a in d.answers}


def test_assess_judgements_pages_and_not_asked_questions():
    result = assess(_doc(), FakeModel())
    assert [(d.domain, d.risk) for d in result.domains] == [
        ("D1", "Low"), ("D2", "Low"), ("D3", "Some concerns"), ("D4", "Low"), ("D5", "Low"),
    ]  # fmt: skip
    assert result.overall == "Some concerns"
    assert result.model == "fake 1.0"
    assert result.source == "t1.pdf" and result.document_id == "t1"
    assert [d.name for d in result.domains][0] == "Bias arising from the randomization process"
    ans = _answers(result)
    assert list(ans) == [
        "1.1", "1.2", "1.3", "2.1", "2.2", "2.3", "2.4", "2.5", "2.6", "2.7",
        "3.1", "3.2", "3.3", "3.4", "4.1", "4.2", "4.3", "4.4", "4.5", "5.1", "5.2", "5.3",
    ]  # fmt: skip
    # evidence keeps its offsets and gets the page of its start
    ev = ans["1.2"].evidence[0]
    assert (ev.span.start, ev.span.end) == (len(PAGE1), len(PAGE1) + 24)
    assert TEXT[ev.span.start : ev.span.end] == "Allocation was concealed"
    assert ev.page == 2 and ans["1.1"].evidence[0].page == 1
    # judgements derived where the model gave none
    assert ans["1.1"].judgement == "Good" and ans["3.1"].judgement == "Bad"
    # questions RoB 2 does not ask become NA without judgement
    assert ans["2.3"].response == "NA" and ans["2.3"].judgement is None
    # questions the model left out: NI with confidence 0 (or NA if not asked)
    assert ans["2.7"].response == "NA" and ans["2.7"].confidence == 0.0
    assert ans["4.4"].response == "NA"


def test_asked_question_answered_na_is_stored_as_ni():
    answers = FakeModel().predict(_doc())
    answers["1.3"] = SQAnswer(sq="1.3", response="NA", confidence=0.2)
    answers["3.2"] = SQAnswer(sq="3.2", response="NA", confidence=0.2)  # asked: 3.1 is N
    ans = _answers(assess(_doc(), FakeModel(answers)))
    assert ans["1.3"].response == "NI" and ans["3.2"].response == "NI"
    assert ans["1.3"].confidence == 0.2


def test_missing_answers_are_no_information():
    result = assess(_doc(), FakeModel(answers={}))
    ans = _answers(result)
    assert ans["1.1"].response == "NI" and ans["1.1"].confidence == 0.0
    # all NI: D1 Some concerns (1.2 NI, 1.3 NI), D2 High (2.6 NI -> 2.7 NI),
    # D3 High (3.2 NI read as N, 3.3 NI, 3.4 NI), D4 High (4.2 NI branch down to 4.5 NI),
    # D5 Some concerns (5.2/5.3 NI)
    assert [d.risk for d in result.domains] == [
        "Some concerns", "High", "High", "High", "Some concerns",
    ]  # fmt: skip
    assert result.overall == "High"


def test_optional_multiple_some_concerns_rule():
    answers = FakeModel().predict(_doc())
    answers["5.1"] = SQAnswer(sq="5.1", response="NI", confidence=0.3)  # D5 Some concerns
    plain = assess(_doc(), FakeModel(answers))
    assert plain.overall == "Some concerns"
    strict = assess(_doc(), FakeModel(answers), multiple_some_concerns_high=2)
    assert strict.overall == "High"


def test_bad_model_output_is_reported():
    doc = _doc()
    with pytest.raises(ModelError, match="expected a dict"):
        assess(doc, FakeModel(answers=[1, 2]))
    with pytest.raises(ModelError, match="SQ 1.1"):
        assess(doc, FakeModel(answers={"1.1": "Y"}))
    with pytest.raises(SchemaError, match="'9.9'"):
        assess(doc, FakeModel(answers={"9.9": SQAnswer(sq="9.9", response="Y", confidence=1)}))
    with pytest.raises(SchemaError, match="filed under key 1.2"):
        assess(doc, FakeModel(answers={"1.2": SQAnswer(sq="1.1", response="Y", confidence=1)}))
    wrong = Evidence(
        span=Span(fragments=({"start": 0, "end": 7, "text": "nothing"},)), score=0.5, source="x"
    )
    with pytest.raises(OffsetError, match="SQ 1.1"):
        assess(doc, FakeModel({"1.1": SQAnswer(sq="1.1", response="Y", confidence=1, evidence=(wrong,))}))


def test_json_round_trip(tmp_path):
    result = assess(_doc(), FakeModel())
    path = write_json(result, tmp_path / "sub" / "t1.rob.json")
    back = read_json(path)
    assert back == result
    data = json.loads(path.read_text(encoding="utf-8"))
    d1 = data["domains"][0]
    assert d1["risk"] == "Low" and d1["answers"][1]["sq"] == "1.2"
    ev = d1["answers"][1]["evidence"][0]
    assert ev["page"] == 2
    assert ev["span"]["fragments"][0] == {
        "start": len(PAGE1), "end": len(PAGE1) + 24, "text": "Allocation was concealed",
    }  # fmt: skip
    assert d1["answers"][1]["confidence"] == 0.8
    bad = tmp_path / "bad.json"
    bad.write_text('{"document_id": "x", "overall": "Medium", "model": "m"}', encoding="utf-8")
    with pytest.raises(FormatError, match="overall"):
        read_json(bad)


def test_default_model_and_assess_path(tmp_path, monkeypatch):
    monkeypatch.setenv("CLINEX_DATA", str(tmp_path / "no-models"))  # "auto" -> packaged cues
    trial = tmp_path / "trial.txt"
    trial.write_text(TRIAL_TXT, encoding="utf-8")
    result = assess_path(trial)
    assert result.source == str(trial) and result.document_id == "trial"
    assert result.model  # the packaged model's name
    assert len(_answers(result)) == 22
    for a in _answers(result).values():
        for ev in a.evidence:
            assert TRIAL_TXT[ev.span.start : ev.span.end] == ev.span.fragments[0].text


def test_output_namer_never_hands_out_an_input(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    clash = out / "a.rob.html"
    clash.write_text("<p>user file</p>", encoding="utf-8")
    namer = OutputNamer(out, [clash])
    assert namer.paths("a", ".rob.json", ".rob.html") == [out / "a-2.rob.json", out / "a-2.rob.html"]
    assert namer.paths("a", ".rob.json", ".rob.html") == [out / "a-3.rob.json", out / "a-3.rob.html"]
    assert namer.path("we ird/../id", ".png") == out / "we_ird_.._id.png"
    (tmp_path / "file").write_text("x", encoding="utf-8")
    with pytest.raises(InputError, match="not a folder"):
        OutputNamer(tmp_path / "file")


def test_cli_assess_writes_all_outputs_and_skips_bad_files(cli, tmp_path, monkeypatch):
    monkeypatch.setenv("CLINEX_DATA", str(tmp_path / "no-models"))
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    good = tmp_path / "a" / "trial.txt"
    good.write_text(TRIAL_TXT, encoding="utf-8")
    twin = tmp_path / "b" / "trial.txt"  # same name: outputs must not collide
    twin.write_text(TRIAL_TXT.replace("drug X", "drug Y"), encoding="utf-8")
    bad = tmp_path / "broken.pdf"
    bad.write_bytes(b"not a pdf at all")
    out = tmp_path / "out"

    res = cli("rob", "assess", str(good), str(bad), str(twin), "--output", str(out), "--model", "cues")
    assert res.code == 1, res.stderr
    assert "broken.pdf" in res.stderr and "CLX002" in res.stderr
    assert "1 of 3 input(s) skipped" in res.stderr
    names = sorted(p.name for p in out.iterdir())
    assert names == [
        "robvis.csv", "summary.png", "summary.svg", "traffic_light.png", "traffic_light.svg",
        "trial-2.rob.html", "trial-2.rob.json", "trial.rob.html", "trial.rob.json",
    ]  # fmt: skip
    result = read_json(out / "trial.rob.json")
    assert result.source == str(good)
    assert len(_answers(result)) == 22
    assert "Overall" in res.stdout and "trial" in res.stdout
    assert good.read_text(encoding="utf-8") == TRIAL_TXT  # inputs untouched
    assert (out / "trial.rob.html").read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert (out / "traffic_light.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    ok = cli("rob", "assess", str(good), "-o", str(tmp_path / "out2"), "--model", "cues", "--no-plot", "--no-html")
    assert ok.code == 0, ok.stderr
    assert sorted(p.name for p in (tmp_path / "out2").iterdir()) == ["robvis.csv", "trial.rob.json"]

    none = cli("rob", "assess", str(bad), str(tmp_path / "missing.txt"), "-o", str(tmp_path / "out3"))
    assert none.code == 2
    assert "none of the 2 input(s) could be assessed" in none.stderr
    assert "missing.txt" in none.stderr


def test_public_api_exports():
    import clinex.rob

    assert clinex.rob.__all__ == [
        "assess", "assess_path", "write_json", "read_json", "write_html", "plot_traffic_light",
        "Evidence", "SQAnswer", "DomainResult", "TrialAssessment",
    ]  # fmt: skip
    for name in clinex.rob.__all__:
        assert getattr(clinex.rob, name) is not None
    assert callable(clinex.rob.assess)


def test_cli_unknown_model_is_exit_2(cli, tmp_path):
    trial = tmp_path / "trial.txt"
    trial.write_text(TRIAL_TXT, encoding="utf-8")
    res = cli("rob", "assess", str(trial), "-o", str(tmp_path / "out"), "--model", "no-such-model")
    assert res.code == 2
    assert "CLX006" in res.stderr and "no-such-model" in res.stderr
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def _make_pdf(path, pages: int) -> None:
    """A ``pages``-page report: filler prose, with the cue lines of TRIAL_TXT spread out."""
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.styles import getSampleStyleSheet
    from reportlab.platypus import PageBreak, Paragraph, SimpleDocTemplate

    styles = getSampleStyleSheet()
    cues = [line for line in TRIAL_TXT.splitlines() if len(line) > 40]
    filler = (
        "The study took place in {n} centres and recruited adults from outpatient clinics. "
        "Visits were scheduled every four weeks and laboratory values were recorded. "
    )
    story = []
    for page in range(pages):
        story.append(Paragraph(f"Section {page + 1}", styles["Heading2"]))
        for i in range(9):
            story.append(Paragraph(filler.format(n=page + i) * 2, styles["BodyText"]))
            if i == 5 and page % 3 == 1 and page // 3 < len(cues):
                story.append(Paragraph(cues[page // 3], styles["BodyText"]))
        if page < pages - 1:
            story.append(PageBreak())
    SimpleDocTemplate(str(path), pagesize=A4).build(story)


def test_twenty_page_pdf_within_the_time_budget(tmp_path, monkeypatch):
    """Issue 5 target: a 20-page trial in <= 10 s on one core (CPU time of read + assess + write)."""
    import time

    from clinex.rob import write_html
    from clinex.rob.assess import default_model
    from clinex.rob.formats.load import load_document

    monkeypatch.setenv("CLINEX_DATA", str(tmp_path / "no-models"))
    pdf = tmp_path / "trial20.pdf"
    _make_pdf(pdf, 20)
    t0 = time.process_time()
    doc = load_document(pdf)
    result = assess(doc, default_model("cues"))
    write_json(result, tmp_path / "t.rob.json")
    html = write_html(result, doc, tmp_path / "t.rob.html").read_text(encoding="utf-8")
    cpu = time.process_time() - t0
    assert cpu < 10.0
    assert len(doc.pages) == 20
    pages = {ev.page for a in _answers(result).values() for ev in a.evidence}
    assert pages and pages <= set(range(1, 21)) and len(pages) > 1
    assert html.count('class="page"') == 20


def test_cli_assess_labels_rows_by_output_id_and_reads_folders(cli, tmp_path, monkeypatch):
    # QA defects 1 and 10f: same-stem inputs were both labelled "trial" in the table
    # and the plot; a folder input was "not a file".
    import clinex.rob.plot as plot_mod

    monkeypatch.setenv("CLINEX_DATA", str(tmp_path / "no-models"))
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "trial.txt").write_text(TRIAL_TXT, encoding="utf-8")
    (folder / "a.txt").write_text(TRIAL_TXT.replace("drug X", "drug Z"), encoding="utf-8")
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "trial.txt").write_text(TRIAL_TXT.replace("drug X", "drug Y"), encoding="utf-8")
    (folder / "notes.md").write_text("not a report", encoding="utf-8")
    (folder / "sub").mkdir()
    seen = {}
    real = plot_mod.plot_traffic_light

    def spy(assessments, png, svg=None, **kw):
        seen["labels"] = kw.get("labels")
        return real(assessments, png, svg, **kw)

    monkeypatch.setattr(plot_mod, "plot_traffic_light", spy)
    out = tmp_path / "out"
    res = cli("rob", "assess", str(folder), str(tmp_path / "b" / "trial.txt"), "-o", str(out),
              "--model", "cues", "--no-html")
    assert res.code == 0, res.stderr
    assert sorted(p.name for p in out.glob("*.rob.json")) == ["a.rob.json", "trial-2.rob.json",
                                                              "trial.rob.json"]
    assert read_json(out / "trial-2.rob.json").source == str(tmp_path / "b" / "trial.txt")
    assert seen["labels"] == ["a", "trial", "trial-2"]  # folder files sorted, then the file
    rows = [line.split("│")[1].strip() for line in res.stdout.splitlines() if line.count("│") > 2]
    assert rows == ["a", "trial", "trial-2"]

    empty = tmp_path / "empty"
    empty.mkdir()
    res = cli("rob", "assess", str(empty), "-o", str(tmp_path / "out4"))
    assert res.code == 2 and "folder without" in res.stderr


def test_cli_assess_all_bad_creates_no_output_folder(cli, tmp_path):
    # QA defect 10a: an empty output folder was left behind.
    bad = tmp_path / "broken.pdf"
    bad.write_bytes(b"not a pdf at all")
    res = cli("rob", "assess", str(bad), "-o", str(tmp_path / "never" / "out"))
    assert res.code == 2
    assert not (tmp_path / "never").exists()


def test_plot_traffic_light_rejects_label_count_mismatch(tmp_path):
    from clinex.errors import InputError as IE
    from clinex.rob.plot import plot_traffic_light

    class Silent:
        def predict(self, doc):
            return {}

    result = assess(Document(id="t1", text="A randomised trial."), Silent())
    with pytest.raises(IE, match="1 labels for 2 assessments"):
        plot_traffic_light([result, result], tmp_path / "p.png", labels=["a"])


def test_cli_empty_folder_is_a_coded_skip(cli, tmp_path):
    empty = tmp_path / "adir"
    empty.mkdir()
    (empty / "notes.md").write_text("not a report", encoding="utf-8")
    res = cli("rob", "assess", str(empty), "--output", str(tmp_path / "robx"))
    assert res.code == 2
    assert res.stderr.splitlines() == [
        f"skipped {empty}: [CLX001] {empty}: folder without .pdf/.txt/.xml/.html/.htm files",
        "[CLX001] field 'inputs': none of the 1 input(s) could be assessed",
    ]
    assert not (tmp_path / "robx").exists()
