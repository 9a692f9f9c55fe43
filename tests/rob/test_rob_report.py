"""HTML report (highlighted evidence at the right offsets) and the traffic-light plot."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest

from clinex.errors import InputError
from clinex.rob import assess, plot_traffic_light, write_html
from clinex.rob.report import render_html
from clinex.rob.types import Evidence, SQAnswer
from clinex.text import Document, Span

P1 = "Methods. Patients were randomised using a computer-generated sequence.\n"
P2 = "Allocation was concealed with sealed opaque envelopes. <script>alert(1)</script> & done.\n"
TEXT = P1 + P2


def _doc() -> Document:
    return Document(
        id="trial<7>",
        text=TEXT,
        pages=(
            Span.from_offsets(TEXT, (0, len(P1)), label="1"),
            Span.from_offsets(TEXT, (len(P1), len(TEXT)), label="2"),
        ),
    )


def _span(phrase: str, sq: str) -> Span:
    s = TEXT.index(phrase)
    return Span.from_offsets(TEXT, (s, s + len(phrase)), label=sq)


class Model:
    name = "fixed"

    def predict(self, doc):
        seq = Evidence(span=_span("computer-generated sequence", "1.1"), score=0.9, source="r1")
        conc = Evidence(span=_span("Allocation was concealed", "1.2"), score=0.8, source="r2")
        # overlaps the 1.2 span: "concealed with sealed opaque envelopes"
        env = Evidence(span=_span("concealed with sealed opaque envelopes", "1.2"), score=0.7, source="r3")
        two = Evidence(
            span=Span.from_offsets(TEXT, [(TEXT.index("Patients"), TEXT.index("Patients") + 8),
                                          (TEXT.index("done"), TEXT.index("done") + 4)], label="2.1"),
            score=0.5, source="r4",
        )  # fmt: skip
        return {
            "1.1": SQAnswer(sq="1.1", response="Y", confidence=0.9, evidence=(seq,)),
            "1.2": SQAnswer(sq="1.2", response="PY", confidence=0.75, evidence=(conc, env)),
            "2.1": SQAnswer(sq="2.1", response="Y", confidence=0.5, evidence=(two,)),
        }


class Marks(HTMLParser):
    """Collect <mark> elements: attributes and inner text; and every tag/attribute seen."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.marks: list[dict] = []
        self.tags: list[tuple[str, dict]] = []
        self._open: dict | None = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.tags.append((tag, attrs))
        if tag == "mark":
            self._open = {**attrs, "text": ""}

    def handle_endtag(self, tag):
        if tag == "mark" and self._open is not None:
            self.marks.append(self._open)
            self._open = None

    def handle_data(self, data):
        if self._open is not None:
            self._open["text"] += data


def _parse(html: str) -> Marks:
    p = Marks()
    p.feed(html)
    return p


def test_html_highlights_evidence_at_its_offsets():
    doc = _doc()
    result = assess(doc, Model())
    parsed = _parse(render_html(result, doc))
    got = [(int(m["data-start"]), int(m["data-end"]), m["data-sq"], m["text"]) for m in parsed.marks]
    for start, end, _, text in got:
        assert TEXT[start:end] == text
    c = TEXT.index("Allocation")
    e = TEXT.index("concealed")
    p = TEXT.index("Patients")
    d = TEXT.index("done")
    s = TEXT.index("computer")
    assert got == [
        (p, p + 8, "2.1", "Patients"),
        (s, s + 27, "1.1", "computer-generated sequence"),
        (c, e, "1.2", "Allocation was "),
        (e, e + 9, "1.2", "concealed"),  # covered by both 1.2 spans
        (e + 9, e + 38, "1.2", " with sealed opaque envelopes"),
        (d, d + 4, "2.1", "done"),
    ]
    classes = [m["class"] for m in parsed.marks]
    assert classes[1] == "ev ev-Good" and classes[0] == "ev ev-Bad"  # 2.1 Y is Bad


def test_html_is_self_contained_escaped_and_lists_every_question(tmp_path):
    doc = _doc()
    result = assess(doc, Model())
    path = write_html(result, doc, tmp_path / "r.html")
    html = path.read_text(encoding="utf-8")
    parsed = _parse(html)
    tags = {t for t, _ in parsed.tags}
    assert "script" not in tags and "link" not in tags and "img" not in tags
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "trial&lt;7&gt;" in html
    for _, attrs in parsed.tags:
        assert not (attrs.get("src") or "").startswith(("http", "//"))
        assert not (attrs.get("href") or "").startswith(("http", "//"))
    rows = [a["id"] for t, a in parsed.tags if t == "tr" and a.get("id", "").startswith("sq-")]
    assert len(rows) == 22 and rows[0] == "sq-1.1" and rows[-1] == "sq-5.3"
    pages = [a["id"] for t, a in parsed.tags if t == "span" and a.get("class") == "page"]
    assert pages == ["page-1", "page-2"]
    # the evidence list links to anchors that exist, with page and offsets
    anchors = {a["id"] for t, a in parsed.tags if t == "a" and "id" in a}
    links = [a["href"][1:] for t, a in parsed.tags if t == "a" and a.get("href", "").startswith("#ev-")]
    assert links == ["ev-1", "ev-2", "ev-3", "ev-4"] and set(links) <= anchors
    c = TEXT.index("Allocation")
    assert f"p. 2, front, chars {c}&#8211;{c + 24}" in html  # no heading: all "front"
    assert "Answers decided outside Methods/Results: 3 of 3 answers taken from the text: " in html
    assert "0.75" in html and "Probably yes" in html
    with pytest.raises(InputError, match="does not belong"):
        write_html(result, doc.model_copy(update={"id": "other"}), tmp_path / "x.html")


def test_traffic_light_png_and_svg(tmp_path):
    import defusedxml.ElementTree as ET
    from PIL import Image

    doc = _doc()
    one = assess(doc, Model())
    many = [one.model_copy(update={"document_id": f"trial {i}"}) for i in range(4)]
    png1, svg1 = plot_traffic_light([one], tmp_path / "one.png", tmp_path / "one.svg", dpi=100)
    png4, svg4 = plot_traffic_light(many, tmp_path / "p" / "four.png", tmp_path / "p" / "four.svg", dpi=100)
    for png, svg in ((png1, svg1), (png4, svg4)):
        assert png.stat().st_size > 5000 and svg.stat().st_size > 5000
        with Image.open(png) as im:
            assert im.format == "PNG"
            assert im.size[0] >= 700
        root = ET.parse(svg).getroot()
        assert root.tag.endswith("svg")
    # one trial: D1 Low, D2 High (2.6 and 2.7 NI), D3..D5, overall High; one circle per
    # cell plus one legend marker per judgement
    fills = svg1.read_text(encoding="utf-8")
    risks = [d.risk for d in one.domains] + [one.overall]
    for risk, colour in (("Low", "#02c100"), ("Some concerns", "#e2df07"), ("High", "#bf0000")):
        assert fills.count(f"fill: {colour}") == risks.count(risk) + 1
    with Image.open(png1) as a, Image.open(png4) as b:
        assert b.size[1] > a.size[1]  # one row more per trial
        assert a.size[0] == 750  # 7.5 in at 100 dpi for short trial ids
    with pytest.raises(InputError, match="no assessments"):
        plot_traffic_light([], tmp_path / "x.png", tmp_path / "x.svg")


def test_html_says_when_the_overall_was_raised():
    doc = _doc()
    result = assess(doc, Model())
    assert result.overall_rule is None
    assert 'class="overall-rule"' not in render_html(result, doc)
    note = "raised to High: 2 domains with Some concerns (D1, D2), at least 2 asked for (<option>)"
    raised = result.model_copy(update={"overall": "High", "overall_rule": note})
    assert (
        '<p class="overall-rule">Overall: raised to High: 2 domains with Some concerns (D1, D2), '
        "at least 2 asked for (&lt;option&gt;)</p>"
    ) in render_html(raised, doc)


def test_traffic_light_stars_a_raised_overall_and_names_the_rule(tmp_path, monkeypatch):
    from matplotlib.figure import Figure
    from matplotlib.text import Text

    drawn: list[list[str]] = []
    real = Figure.savefig

    def spy(fig, *args, **kwargs):  # the texts of each figure as it is saved
        drawn.append([t.get_text() for t in fig.findobj(Text) if t.get_text()])
        return real(fig, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", spy)
    one = assess(_doc(), Model())
    raised = one.model_copy(update={"document_id": "raised trial", "overall_rule": "raised to High: ..."})
    plain = one.model_copy(update={"document_id": "plain trial"})
    plot_traffic_light([plain, raised], tmp_path / "p.png", dpi=60)
    (texts,) = drawn
    assert texts.count("*") == 1
    legend = next(t for t in texts if t.startswith("Domains:"))
    footnote = legend.split("\n* ", 1)[1]  # wrapped to the space left of the judgement legend
    assert max(map(len, footnote.split("\n"))) <= 65
    assert footnote.replace("\n", " ") == (
        "Overall raised to High by --multiple-some-concerns-high (RoB 2's optional rule): raised trial"
    )
    drawn.clear()
    plot_traffic_light([plain], tmp_path / "q.png", dpi=60)
    assert "*" not in drawn[0] and "raised" not in "".join(drawn[0])
