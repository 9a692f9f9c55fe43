"""robvis outputs of ``clinex rob assess``: the CSV, weights files, the summary plot, --force."""

from __future__ import annotations

import pytest

from clinex.errors import FormatError, InputError
from clinex.rob.plot import plot_summary
from clinex.rob.robvis import (
    ROBVIS_HEADER,
    RobvisRow,
    read_robvis_csv,
    read_weights,
    robvis_rows,
    summary_percentages,
    write_robvis_csv,
)
from clinex.rob.schema import DOMAINS
from clinex.rob.types import DomainResult, TrialAssessment

L, S, H = "Low", "Some concerns", "High"

TRIAL_TXT = """A randomised controlled trial of drug X versus placebo

Methods
Participants were randomly assigned (1:1) using a computer-generated random sequence.
Allocation was concealed using sequentially numbered, sealed, opaque envelopes.
Outcome assessors were blinded. Analysis was by intention to treat.
"""


def _trial(doc_id: str, risks: tuple[str, ...], overall: str) -> TrialAssessment:
    return TrialAssessment(
        document_id=doc_id,
        domains=tuple(DomainResult(domain=d.id, name=d.name, risk=r) for d, r in zip(DOMAINS, risks)),
        overall=overall,
        model="hand-made",
    )


def _three() -> list[TrialAssessment]:
    return [
        _trial("smith2019", (L, L, S, H, L), H),
        _trial("jones, 2020", (L, S, L, L, L), S),  # a comma: the csv module quotes it
        _trial("lee2021", (H, L, L, L, S), H),
    ]


def test_csv_exact_content_and_round_trip(tmp_path):
    rows = robvis_rows(_three(), ["smith2019", "jones, 2020", "lee2021"], {"lee2021": 2.5})
    path = write_robvis_csv(rows, tmp_path / "sub" / "robvis.csv")
    assert path.read_bytes().decode("utf-8") == (
        "Study,D1,D2,D3,D4,D5,Overall,Weight\n"
        "smith2019,Low,Low,Some concerns,High,Low,High,1\n"
        '"jones, 2020",Low,Some concerns,Low,Low,Low,Some concerns,1\n'
        "lee2021,High,Low,Low,Low,Some concerns,High,2.5\n"
    )
    assert ",".join(ROBVIS_HEADER) == "Study,D1,D2,D3,D4,D5,Overall,Weight"
    assert read_robvis_csv(path) == rows
    assert rows[2] == RobvisRow(study="lee2021", domains=(H, L, L, L, S), overall=H, weight=2.5)


def test_rows_default_to_document_ids_and_reject_bad_input():
    rows = robvis_rows(_three()[:2])
    assert [r.study for r in rows] == ["smith2019", "jones, 2020"]
    assert [r.weight for r in rows] == [1.0, 1.0]
    with pytest.raises(InputError, match="1 labels for 2 assessments"):
        robvis_rows(_three()[:2], ["a"])
    partial = TrialAssessment(document_id="p", domains=_three()[0].domains[:3], overall=H, model="m")
    with pytest.raises(InputError, match="'p' has no judgement for D4, D5"):
        robvis_rows([partial])


def test_read_robvis_csv_names_line_and_column(tmp_path):
    p = tmp_path / "r.csv"
    p.write_text("Study,D1,D2,D3,D4,D5,Overall,Weight\na,Low,Low,Low,Low,Low,Low,1\n"
                 "b,Low,Moderate,Low,Low,Low,Low,1\n", encoding="utf-8")
    with pytest.raises(FormatError) as exc:
        read_robvis_csv(p)
    assert str(exc.value) == (
        f"[CLX002] {p}:3: field 'D2': 'Moderate' not in Low, Some concerns, High, No information (any case)"
    )
    p.write_text("Study,D1,D2\n", encoding="utf-8")
    with pytest.raises(FormatError, match=r"r\.csv:1: header 'Study,D1,D2', expected"):
        read_robvis_csv(p)
    # robvis' template without the Weight column: every study weighs 1
    p.write_text("Study,D1,D2,D3,D4,D5,Overall\na,Low,High,Low,Low,Low,High\n", encoding="utf-8")
    assert read_robvis_csv(p)[0].weight == 1.0


def test_weights_file(tmp_path):
    p = tmp_path / "weights.csv"
    # any case, extra columns ignored, a UTF-8 BOM (Excel) dropped, blank lines skipped
    p.write_text("\ufeffStudy,Note,Weight\nsmith2019,big,2\n\nlee2021,,0.5\n", encoding="utf-8")
    assert read_weights(p, {"smith2019", "lee2021", "jones"}) == {"smith2019": 2.0, "lee2021": 0.5}

    p.write_text("study,weight\nsmith2019,2\nlee2021,heavy\n", encoding="utf-8")
    with pytest.raises(FormatError) as exc:
        read_weights(p)
    assert str(exc.value) == f"[CLX002] {p}:3: field 'weight': 'heavy' is not a positive number"
    for bad in ("0", "-1", "nan", "inf", ""):
        p.write_text(f"study,weight\nsmith2019,{bad}\n", encoding="utf-8")
        with pytest.raises(FormatError, match=r"weights\.csv:2: field 'weight': .* is not a positive"):
            read_weights(p)

    p.write_text("study,weight\nsmith2019,2\nnobody,1\n", encoding="utf-8")
    with pytest.raises(InputError) as exc:
        read_weights(p, {"smith2019", "lee2021"})
    assert str(exc.value) == (f"[CLX001] {p}:3: field 'study': unknown study 'nobody'; "
                              "the studies of this run are: lee2021, smith2019")
    assert not isinstance(exc.value, FormatError)

    p.write_text("study,weight\na,1\na,2\n", encoding="utf-8")
    with pytest.raises(FormatError, match=r":3: field 'study': study 'a' listed twice \(first on line 2\)"):
        read_weights(p)
    p.write_text("name,weight\na,1\n", encoding="utf-8")
    with pytest.raises(FormatError, match=r":1: no column 'study'"):
        read_weights(p)
    with pytest.raises(InputError, match="no such file"):
        read_weights(tmp_path / "missing.csv")


def test_summary_percentages_by_hand():
    trials = _three()
    # weights 1, 1, 2 (total 4): each trial is 25 %, 25 %, 50 %
    got = summary_percentages(trials, [1, 1, 2])
    assert list(got) == ["D1", "D2", "D3", "D4", "D5", "Overall"]
    assert got["D1"] == {L: 50.0, S: 0.0, H: 50.0}  # L, L, H
    assert got["D2"] == {L: 75.0, S: 25.0, H: 0.0}  # L, S, L
    assert got["D3"] == {L: 75.0, S: 25.0, H: 0.0}  # S, L, L
    assert got["D4"] == {L: 75.0, S: 0.0, H: 25.0}  # H, L, L
    assert got["D5"] == {L: 50.0, S: 50.0, H: 0.0}  # L, L, S
    assert got["Overall"] == {L: 0.0, S: 25.0, H: 75.0}  # H, S, H
    # unweighted: thirds; the rows' own weights are used when none are given
    assert summary_percentages(trials)["Overall"] == pytest.approx({L: 0.0, S: 100 / 3, H: 200 / 3})
    rows = robvis_rows(trials, weights={"lee2021": 2})
    assert summary_percentages(rows) == got
    for shares in got.values():
        assert sum(shares.values()) == pytest.approx(100.0)
    with pytest.raises(InputError, match="2 weights for 3 trials"):
        summary_percentages(trials, [1, 1])
    with pytest.raises(InputError, match="positive"):
        summary_percentages(trials, [1, 0, 1])
    with pytest.raises(InputError, match="no trials"):
        summary_percentages([])


def test_summary_plot_png_and_svg(tmp_path):
    import defusedxml.ElementTree as ET
    from PIL import Image

    png, svg = plot_summary(_three(), [1, 1, 2], tmp_path / "p" / "summary.png", tmp_path / "p" / "summary.svg",
                            dpi=100)
    assert png.stat().st_size > 5000 and svg.stat().st_size > 5000
    with Image.open(png) as im:
        assert im.format == "PNG" and im.size == (800, 360)  # 8 x 3.6 in at 100 dpi
    assert ET.parse(svg).getroot().tag.endswith("svg")
    text = svg.read_text(encoding="utf-8")
    # 6 bars x 3 judgements (zero-width segments too) + 3 legend patches
    for colour in ("#02c100", "#e2df07", "#bf0000"):
        assert text.count(f"fill: {colour}") == 6 + 1
    png2, svg2 = plot_summary(robvis_rows(_three()), None, tmp_path / "s.png")
    assert svg2 is None
    with Image.open(png2) as im:
        assert im.size == (1200, 540)  # default 150 dpi
    with pytest.raises(InputError, match="no trials"):
        plot_summary([], None, tmp_path / "x.png")


def _stamp(folder):
    return {p.name: (p.stat().st_mtime_ns, p.read_bytes()) for p in sorted(folder.iterdir())}


def test_cli_writes_robvis_and_summary_and_never_overwrites_silently(cli, tmp_path, monkeypatch):
    monkeypatch.setenv("CLINEX_DATA", str(tmp_path / "no-models"))
    trial = tmp_path / "trial.txt"
    trial.write_text(TRIAL_TXT, encoding="utf-8")
    out = tmp_path / "out"
    first = cli("rob", "assess", str(trial), "-o", str(out), "--model", "cues")
    assert first.code == 0, first.stderr
    assert sorted(p.name for p in out.iterdir()) == [
        "robvis.csv", "summary.png", "summary.svg", "traffic_light.png", "traffic_light.svg",
        "trial.rob.html", "trial.rob.json",
    ]  # fmt: skip
    (row,) = read_robvis_csv(out / "robvis.csv")
    from clinex.rob import read_json

    result = read_json(out / "trial.rob.json")
    assert row == RobvisRow(study="trial", domains=tuple(d.risk for d in result.domains),
                            overall=result.overall, weight=1.0)
    assert (out / "summary.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert f"wrote {out / 'robvis.csv'}" in first.stdout

    before = _stamp(out)
    again = cli("rob", "assess", str(trial), "-o", str(out), "--model", "cues")
    assert again.code == 2
    assert "[CLX001]" in again.stderr and "output file exists" in again.stderr
    assert str(out / "robvis.csv") in again.stderr and "--force" in again.stderr
    assert _stamp(out) == before  # nothing touched

    # only a per-trial file left from before: still refused, naming that file
    for name in ("robvis.csv", "summary.png", "summary.svg", "traffic_light.png", "traffic_light.svg"):
        (out / name).unlink()
    only = cli("rob", "assess", str(trial), "-o", str(out), "--model", "cues", "--no-html")
    assert only.code == 2 and str(out / "trial.rob.json") in only.stderr
    assert not (out / "robvis.csv").exists()
    # --no-html --no-plot writes neither the HTML nor the plots, so only the JSON clashes
    (out / "trial.rob.json").unlink()
    ok = cli("rob", "assess", str(trial), "-o", str(out), "--model", "cues", "--no-html", "--no-plot")
    assert ok.code == 0, ok.stderr

    forced = cli("rob", "assess", str(trial), "-o", str(out), "--model", "cues", "--force")
    assert forced.code == 0, forced.stderr
    assert (out / "summary.png").exists() and (out / "trial.rob.html").exists()
    assert trial.read_text(encoding="utf-8") == TRIAL_TXT


def test_cli_weights_option(cli, tmp_path, monkeypatch):
    monkeypatch.setenv("CLINEX_DATA", str(tmp_path / "no-models"))
    trial = tmp_path / "trial.txt"
    trial.write_text(TRIAL_TXT, encoding="utf-8")
    other = tmp_path / "other.txt"
    other.write_text(TRIAL_TXT.replace("drug X", "drug Y"), encoding="utf-8")
    weights = tmp_path / "weights.csv"
    weights.write_text("study,weight\nother,3\n", encoding="utf-8")
    out = tmp_path / "out"
    res = cli("rob", "assess", str(trial), str(other), "-o", str(out), "--model", "cues",
              "--weights", str(weights), "--no-html")
    assert res.code == 0, res.stderr
    assert [(r.study, r.weight) for r in read_robvis_csv(out / "robvis.csv")] == [("trial", 1.0), ("other", 3.0)]

    weights.write_text("study,weight\ntrial,1\nnobody,2\n", encoding="utf-8")
    bad = cli("rob", "assess", str(trial), "-o", str(tmp_path / "o2"), "--model", "cues",
              "--weights", str(weights))
    assert bad.code == 2
    assert f"{weights}:3: field 'study': unknown study 'nobody'" in bad.stderr
    assert not (tmp_path / "o2").exists()  # refused before writing anything
    weights.write_text("study,weight\ntrial,-2\n", encoding="utf-8")
    bad = cli("rob", "assess", str(trial), "-o", str(tmp_path / "o2"), "--model", "cues",
              "--weights", str(weights))
    assert bad.code == 2 and f"{weights}:2: field 'weight': '-2' is not a positive number" in bad.stderr

    # an edited robvis.csv passed back as --weights is an input: never overwritten,
    # even with --force (the new table goes to robvis-2.csv)
    edited = out / "robvis.csv"
    edited.write_text(edited.read_text(encoding="utf-8").replace(",3\n", ",4\n"), encoding="utf-8")
    kept = edited.read_bytes()
    res = cli("rob", "assess", str(trial), str(other), "-o", str(out), "--model", "cues",
              "--weights", str(edited), "--no-html", "--force")
    assert res.code == 0, res.stderr
    assert edited.read_bytes() == kept
    assert [r.weight for r in read_robvis_csv(out / "robvis-2.csv")] == [1.0, 4.0]


# -- issue 21: hand-written robvis tables, No information, the overall recomputed, raised notes

RAISED_2 = (
    "raised to High: 2 domains with Some concerns (D4, D5), at least 2 asked for "
    "(--multiple-some-concerns-high 2; RoB 2: some concerns in multiple domains may lower confidence "
    "in the result substantially; Sterne et al., BMJ 2019, table 2)"
)

NI_NOTE = (
    "No information, read as Some concerns: RoB 2 judges a domain Low, Some concerns or High only; "
    "Low needs information that the trial was sound and High needs a reason to doubt it, so a domain "
    "that could not be judged is Some concerns (Sterne et al., BMJ 2019, table 2)"
)


def test_read_robvis_csv_any_case_and_robvis_spellings(tmp_path):
    p = tmp_path / "r.csv"
    p.write_text(
        "study,d1,d2,d3,d4,d5,overall,weight\n"
        "a,low,LOW,Low,  low ,Low,low,1\n"
        "b,some concerns,Some Concerns,SOME  CONCERNS,low,Low,some concerns,2\n"
        "c,HIGH,low,low,low,low,High,1\n",
        encoding="utf-8",
    )
    assert read_robvis_csv(p) == [
        RobvisRow(study="a", domains=(L, L, L, L, L), overall=L, weight=1.0),
        RobvisRow(study="b", domains=(S, S, S, L, L), overall=S, weight=2.0),
        RobvisRow(study="c", domains=(H, L, L, L, L), overall=H, weight=1.0),
    ]


def test_read_robvis_csv_no_information_counts_as_some_concerns_and_says_so(tmp_path):
    p = tmp_path / "r.csv"
    p.write_text(
        "Study,D1,D2,D3,D4,D5,Overall,Weight\n"
        "a,Low,Low,No information,Low,Low,Low,1\n"
        "b,NI,Low,unclear,Low,High,High,1\n",
        encoding="utf-8",
    )
    a, b = read_robvis_csv(p)
    assert a == RobvisRow(
        study="a", domains=(L, L, S, L, L), overall=S, weight=1.0,
        notes=(f"D3: {NI_NOTE}", "Overall: the file says 'Low'; the RoB 2 overall rule gives 'Some concerns' from D1-D5"),
    )
    assert b == RobvisRow(study="b", domains=(S, L, S, L, H), overall=H, weight=1.0,
                          notes=(f"D1: {NI_NOTE}", f"D3: {NI_NOTE}"))


def test_read_robvis_csv_recomputes_the_overall_and_names_the_disagreement(tmp_path):
    p = tmp_path / "r.csv"
    p.write_text(
        "Study,D1,D2,D3,D4,D5,Overall\n"
        "under,Low,Low,Low,High,Low,Low\n"
        "over,Low,Some concerns,Low,Low,Low,High\n"
        "ni,Low,Low,Low,Low,Low,No information\n"
        "same,Low,Some concerns,Low,Low,Some concerns,Some concerns\n",
        encoding="utf-8",
    )
    rows = read_robvis_csv(p)
    assert [(r.study, r.overall, r.overall_rule, r.notes) for r in rows] == [
        ("under", H, None, ("Overall: the file says 'Low'; the RoB 2 overall rule gives 'High' from D1-D5",)),
        ("over", S, None, ("Overall: the file says 'High'; the RoB 2 overall rule gives 'Some concerns' from D1-D5",)),
        ("ni", L, None, ("Overall: the file says 'No information'; the RoB 2 overall rule gives 'Low' from D1-D5",)),
        ("same", S, None, ()),
    ]
    # the reviewer's optional rule: two Some concerns raise the last row to High, with the note
    raised = read_robvis_csv(p, multiple_some_concerns_high=2)[3]
    assert (raised.overall, raised.notes) == (
        H, ("Overall: the file says 'Some concerns'; the RoB 2 overall rule gives 'High' from D1-D5",)
    )
    assert raised.overall_rule == RAISED_2.replace("(D4, D5)", "(D2, D5)")


def test_raised_overall_is_written_and_read_back_with_its_note(tmp_path):
    trial = _trial("t", (L, L, L, S, S), H).model_copy(update={"overall_rule": RAISED_2})
    rows = robvis_rows([trial])
    assert rows[0].overall_rule == RAISED_2
    path = write_robvis_csv(rows, tmp_path / "robvis.csv")
    # a plain robvis value: robvis reads the file as any other; the rule is in the other outputs
    assert path.read_text(encoding="utf-8") == (
        "Study,D1,D2,D3,D4,D5,Overall,Weight\n"
        "t,Low,Low,Low,Some concerns,Some concerns,High,1\n"
    )
    # read back: High over two Some concerns is kept as the reviewer's judgement RoB 2 allows
    (back,) = read_robvis_csv(path)
    assert (back.domains, back.overall, back.notes) == ((L, L, L, S, S), H, ())
    assert back.overall_rule == (
        "High as the file says: 2 domains with Some concerns (D4, D5); RoB 2 lets a reviewer judge "
        "the result High when some concerns in multiple domains lower confidence in it substantially "
        "(Sterne et al., BMJ 2019, table 2)"
    )
    # one Some concerns is not enough for that: the file's High is recomputed, with the note
    one = tmp_path / "one.csv"
    one.write_text("Study,D1,D2,D3,D4,D5,Overall\nu,Low,Low,Low,Low,Some concerns,High\n", encoding="utf-8")
    (u,) = read_robvis_csv(one)
    assert (u.overall, u.overall_rule, u.notes) == (
        S, None, ("Overall: the file says 'High'; the RoB 2 overall rule gives 'Some concerns' from D1-D5",)
    )


def test_cli_says_when_multiple_some_concerns_raised_the_overall(cli, tmp_path, monkeypatch):
    monkeypatch.setenv("CLINEX_DATA", str(tmp_path / "no-models"))
    trial = tmp_path / "trial.txt"
    trial.write_text(
        TRIAL_TXT.replace("Analysis was by intention to treat.\n", "Analysis was by intention to treat.\n\n"
                          "Results\nAll 120 randomised participants completed follow-up and were included "
                          "in the analysis; no outcome data were missing.\n"),
        encoding="utf-8",
    )
    out = tmp_path / "out"
    res = cli("rob", "assess", str(trial), "-o", str(out), "--model", "rules", "--no-plot",
              "--multiple-some-concerns-high", "2")
    assert res.code == 0, res.stderr
    # the CLI listing
    assert f"trial: Overall {RAISED_2}\n" in res.stdout
    # the JSON
    from clinex.rob import read_json

    result = read_json(out / "trial.rob.json")
    assert [d.risk for d in result.domains] == [L, L, L, S, S]
    assert (result.overall, result.overall_rule) == (H, RAISED_2)
    # the HTML report
    import html

    assert f'<p class="overall-rule">Overall: {html.escape(RAISED_2)}</p>' in (out / "trial.rob.html").read_text(
        encoding="utf-8"
    )
    # the robvis table
    assert (out / "robvis.csv").read_text(encoding="utf-8").splitlines()[1] == (
        "trial,Low,Low,Low,Some concerns,Some concerns,High,1"
    )
    # without the option nothing is raised and no output carries a note
    plain = cli("rob", "assess", str(trial), "-o", str(tmp_path / "plain"), "--model", "rules", "--no-plot")
    assert plain.code == 0, plain.stderr
    assert "raised to High" not in plain.stdout
    assert read_json(tmp_path / "plain" / "trial.rob.json").overall_rule is None
    assert (tmp_path / "plain" / "robvis.csv").read_text(encoding="utf-8").splitlines()[1] == (
        "trial,Low,Low,Low,Some concerns,Some concerns,Some concerns,1"
    )
