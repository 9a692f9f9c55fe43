"""Writers for RoB 2 assessments: JSON and a self-contained HTML report.

The JSON file is :class:`~clinex.rob.types.TrialAssessment` as pydantic dumps it:
every signalling question with its response, judgement, confidence and evidence
spans (character offsets into the document text, half-open, the 1-based PDF page
and the report section holding the span). :func:`read_json` reads it back into the
same object, files written before ``Evidence.section`` existed included.

The HTML report is one file with no external assets (inline CSS, no scripts,
fonts or images): a summary of the domain and overall judgements (with the rule
that raised the overall judgement, ``overall_rule``, when one did, and how many
answers were decided outside the Methods and Results,
:func:`clinex.rob.assess.decided_outside`), a table per domain with each question's
wording, answer, judgement, confidence and evidence (page, section and offsets,
linked to the text), and the full document text with every
evidence span highlighted in a ``<mark>`` element whose ``data-start`` and
``data-end`` attributes give its character offsets.

References
----------
RoB 2 guidance (22 Aug 2019) for the domain and question wording; colours follow
the robvis conventions (McGuinness & Higgins, Res Synth Methods 2021;12:55-61).
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable
from pathlib import Path

from pydantic import ValidationError

from clinex.errors import FormatError, InputError
from clinex.io.textfile import require_file
from clinex.rob.assess import decided_outside, decided_sections

#: Provenance prefix of the reading list's citations (:mod:`clinex.rob.evidence.reading`).
READING_SOURCE = "clinex.rob.reading.v1"
from clinex.rob.schema import sq
from clinex.rob.types import Evidence, SQAnswer, TrialAssessment
from clinex.text import Document

__all__ = ["write_json", "read_json", "render_html", "write_html", "OutputNamer", "RISK_COLOURS"]

#: robvis "cochrane" palette for the three judgements.
RISK_COLOURS = {"Low": "#02C100", "Some concerns": "#E2DF07", "High": "#BF0000"}

_RESPONSE_WORDS = {
    "Y": "Yes",
    "PY": "Probably yes",
    "PN": "Probably no",
    "N": "No",
    "NI": "No information",
    "NA": "Not applicable",
}


def _write_text(path: Path, text: str) -> Path:
    """Write atomically (temporary file in the same folder, then rename)."""
    from clinex.io.atomic import write_atomic

    return write_atomic(path, text, force=True)


def write_json(assessment: TrialAssessment, path: str | Path) -> Path:
    """Write one assessment as indented JSON (UTF-8).

    Parameters
    ----------
    assessment : TrialAssessment
    path : str or Path
        Destination; parent folders are created.

    Returns
    -------
    Path
        ``path``.
    """
    return _write_text(Path(path), assessment.model_dump_json(indent=2) + "\n")


def read_json(path: str | Path) -> TrialAssessment:
    """Read an assessment written by :func:`write_json`.

    Raises
    ------
    InputError
        If the file does not exist.
    FormatError
        If it is not a valid assessment; the message names the first bad field.
    """
    p = require_file(path)
    try:
        return TrialAssessment.model_validate_json(p.read_text(encoding="utf-8"))
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(x) for x in err["loc"]) or None
        raise FormatError(f"not a RoB 2 assessment: {err['msg']}", path=p, field=where) from None


_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif;
margin:0 auto;max-width:1100px;padding:1rem 1.5rem;color:#222;line-height:1.4}
h1{font-size:1.5rem;margin-bottom:.2rem}h2{font-size:1.2rem;margin-top:2rem}
.meta{color:#555;font-size:.9rem}
table{border-collapse:collapse;width:100%;margin:.5rem 0}
th,td{border:1px solid #ccc;padding:.3rem .5rem;vertical-align:top;text-align:left;font-size:.9rem}
th{background:#f2f2f2}
.risk{display:inline-block;padding:.1rem .5rem;border-radius:.8rem;font-weight:600;white-space:nowrap}
.risk-Low{background:#02C100;color:#fff}.risk-Some{background:#E2DF07;color:#222}
.risk-High{background:#BF0000;color:#fff}
.cond{color:#666;font-style:italic}
.j-Good{color:#1a7f1a;font-weight:600}.j-Bad{color:#b00;font-weight:600}
ul.ev{margin:0;padding-left:1.1rem}ul.ev li{margin-bottom:.25rem}
.quote{color:#333}
.doc{white-space:pre-wrap;font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;
font-size:.85rem;border:1px solid #ddd;padding:1rem;background:#fcfcfc;overflow-wrap:anywhere}
mark{padding:0 1px;border-radius:2px;background:#ffe58a}
mark.ev-Good{background:#c6f0c2}mark.ev-Bad{background:#f7c2c2}mark.ev-mixed{background:#ffe58a}
.page{display:block;margin:.8rem 0 .3rem;color:#888;font-size:.75rem;border-top:1px dashed #bbb;
user-select:none}
"""


def _risk_badge(risk: str) -> str:
    cls = risk.split()[0]
    return f'<span class="risk risk-{cls}">{html.escape(risk)}</span>'


def _where(ev: Evidence) -> str:
    page = f"p. {ev.page}, " if ev.page is not None else ""
    section = f"{html.escape(ev.section)}, " if ev.section is not None else ""
    offs = "; ".join(f"{f.start}&#8211;{f.end}" for f in ev.span.fragments)
    return f"{page}{section}chars {offs}"


def _answer_row(ans: SQAnswer, first_anchor: int) -> str:
    q = sq(ans.sq)
    cond = (
        f'<div class="cond">{html.escape(q.condition.text())}:</div>' if q.condition else ""
    )
    judg = (
        f'<span class="j-{ans.judgement}">{ans.judgement}</span>' if ans.judgement else "&#8212;"
    )
    items, reading = [], []
    for anchor, ev in enumerate(ans.evidence, start=first_anchor):
        quote = ev.span.text
        if len(quote) > 300:
            quote = quote[:297] + "..."
        item = (
            f'<li><a href="#ev-{anchor}">{_where(ev)}</a> '
            f"(score {ev.score:.2f}, {html.escape(ev.source)}): "
            f'<span class="quote">&#8220;{html.escape(quote)}&#8221;</span></li>'
        )
        (reading if ev.source.startswith(READING_SOURCE) else items).append(item)
    evidence = f'<ul class="ev">{"".join(items)}</ul>' if items else "none"
    if reading:
        evidence += f'<div class="also-read">Also read:</div><ul class="ev reading">{"".join(reading)}</ul>'
    confidence = "&#8212;" if ans.response == "NA" else f"{ans.confidence:.2f}"
    return (
        f'<tr id="sq-{q.id}"><td>{q.id}</td><td>{cond}{html.escape(q.text)}</td>'
        f"<td><b>{ans.response}</b> ({_RESPONSE_WORDS[ans.response]})</td>"
        f"<td>{judg}</td><td>{confidence}</td><td>{evidence}</td></tr>"
    )


def _highlight(document: Document, evidences: list[tuple[int, SQAnswer, Evidence]]) -> str:
    """The document text as escaped HTML with evidence marks and page markers."""
    text = document.text
    pieces: list[tuple[int, int, int, SQAnswer]] = []  # start, end, anchor, answer
    for anchor, ans, ev in evidences:
        for f in ev.span.fragments:
            if f.end > f.start:
                pieces.append((f.start, f.end, anchor, ans))
    page_starts = {}
    for page in document.pages:
        if page.label is not None and 0 <= page.start <= len(text):
            page_starts.setdefault(page.start, page.label)
    bounds = sorted(
        {0, len(text)} | {p[0] for p in pieces} | {p[1] for p in pieces} | set(page_starts)
    )
    starts: dict[int, list[int]] = {}
    for anchor, _ans, ev in evidences:
        starts.setdefault(ev.span.start, []).append(anchor)
    out: list[str] = []
    for a, b in zip(bounds, bounds[1:] + [None]):
        if a in page_starts:
            label = html.escape(page_starts[a])
            out.append(f'<span class="page" id="page-{label}">page {label}</span>')
        for anchor in starts.get(a, ()):
            out.append(f'<a id="ev-{anchor}"></a>')
        if b is None or b <= a:
            continue
        seg = html.escape(text[a:b])
        covering = [p for p in pieces if p[0] <= a and b <= p[1]]
        if not covering:
            out.append(seg)
            continue
        sqs = sorted({p[3].sq for p in covering}, key=lambda s: tuple(map(int, s.split("."))))
        judgements = {p[3].judgement for p in covering}
        cls = f"ev-{judgements.pop()}" if len(judgements) == 1 else "ev-mixed"
        title = "; ".join(
            f"{p[3].sq} {p[3].response}" + (f" ({p[3].judgement})" if p[3].judgement else "")
            for p in covering
        )
        out.append(
            f'<mark class="ev {cls}" data-sq="{" ".join(sqs)}" data-start="{a}" '
            f'data-end="{b}" title="{html.escape(title)}">{seg}</mark>'
        )
    return "".join(out)


def render_html(assessment: TrialAssessment, document: Document) -> str:
    """The HTML report of one assessment as a string (see :func:`write_html`)."""
    esc = html.escape
    evidences: list[tuple[int, SQAnswer, Evidence]] = []
    first_anchor: dict[str, int] = {}
    for d in assessment.domains:
        for ans in d.answers:
            first_anchor[ans.sq] = len(evidences) + 1
            for ev in ans.evidence:
                evidences.append((len(evidences) + 1, ans, ev))
    head = (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>RoB 2 assessment: {esc(assessment.document_id)}</title>"
        f"<style>{_CSS}</style></head><body>"
    )
    meta = [f"model: {esc(assessment.model)}"]
    if assessment.source:
        meta.insert(0, f"source: {esc(assessment.source)}")
    if document.pages:
        meta.append(f"{len(document.pages)} pages")
    body = [
        f"<h1>Risk of bias (RoB 2): {esc(assessment.document_id)}</h1>",
        f'<p class="meta">{" &#183; ".join(meta)}</p>',
        "<p class=\"meta\">RoB 2 for individually-randomized parallel-group trials, effect of "
        "assignment to intervention (Sterne et al., BMJ 2019). Automatic assessment: check "
        "the evidence.</p>",
        '<h2 id="summary">Summary</h2><table><tr><th>Domain</th><th>Name</th>'
        "<th>Judgement</th></tr>",
    ]
    for d in assessment.domains:
        body.append(
            f'<tr><td><a href="#{d.domain}">{d.domain}</a></td><td>{esc(d.name)}</td>'
            f"<td>{_risk_badge(d.risk)}</td></tr>"
        )
    body.append(
        f"<tr><th>Overall</th><th></th><th>{_risk_badge(assessment.overall)}</th></tr></table>"
    )
    if assessment.overall_rule:
        body.append(f'<p class="overall-rule">Overall: {esc(assessment.overall_rule)}</p>')
    k, n = decided_outside(assessment)
    unknown = len(decided_sections(assessment)) - n  # a rob.json written before sections were kept
    note = f" (sections unknown for {unknown} answers)" if unknown else ""
    which = [f"{a.sq} ({a.evidence[0].section})" for d in assessment.domains for a in d.answers
             if a.response not in ("NA", "NI") and a.evidence and a.evidence[0].section is not None
             and a.evidence[0].section not in ("methods", "results")]
    listed = f": {esc(', '.join(which))}" if which else ""
    body.append(f'<p class="decided-outside">Answers decided outside Methods/Results: {k} of {n} answers '
                f"taken from the text{listed}{note}</p>")
    body.append('<p class="legend">Evidence: the first sentence listed decides the answer (its rule or cue '
                "is named); &#8220;Also read&#8221; lists the sentences a reviewer reads for the question "
                f"beside it ({READING_SOURCE}), which decide nothing. NA: RoB 2 does not ask the question "
                "on this path; its sentences are kept for the reader.</p>")
    for d in assessment.domains:
        body.append(
            f'<h2 id="{d.domain}">{d.domain}: {esc(d.name)} {_risk_badge(d.risk)}</h2>'
            "<table><tr><th>SQ</th><th>Question</th><th>Answer</th><th>Judgement</th>"
            "<th>Confidence</th><th>Evidence</th></tr>"
        )
        body.extend(_answer_row(a, first_anchor[a.sq]) for a in d.answers)
        body.append("</table>")
    body.append('<h2 id="text">Document text</h2>')
    body.append(f'<div class="doc">{_highlight(document, evidences)}</div>')
    return head + "\n".join(body) + "\n</body></html>\n"


def write_html(assessment: TrialAssessment, document: Document, path: str | Path) -> Path:
    """Write the self-contained HTML report of one assessment.

    Parameters
    ----------
    assessment : TrialAssessment
        The result of :func:`clinex.rob.assess` for ``document``.
    document : Document
        The assessed document (its text is shown with evidence highlighted).
    path : str or Path
        Destination ``.html`` file; parent folders are created.

    Returns
    -------
    Path
        ``path``.

    Raises
    ------
    InputError
        If ``assessment`` was not made for ``document`` (different ids).
    """
    if assessment.document_id != document.id:
        raise InputError(
            f"assessment of {assessment.document_id!r} does not belong to document "
            f"{document.id!r}",
            field="document",
        )
    return _write_text(Path(path), render_html(assessment, document))


class OutputNamer:
    """Choose output file names in a folder without ever overwriting an input.

    ``paths("trial", ".rob.json", ".rob.html")`` gives ``DIR/trial.rob.json`` and
    ``DIR/trial.rob.html``; if either would be one of the input files, or was
    already handed out in this batch (two inputs with the same name), a suffix
    ``-2``, ``-3`` ... is added to both.

    Parameters
    ----------
    output_dir : str or Path
        Not created here: the writers create it with the first file, so a batch
        that writes nothing leaves no empty folder behind.
    inputs : iterable of str or Path
        Files that must never be written.

    Raises
    ------
    InputError
        If ``output_dir`` exists and is not a folder.
    """

    def __init__(self, output_dir: str | Path, inputs: Iterable[str | Path] = ()) -> None:
        self.output_dir = Path(output_dir)
        if self.output_dir.exists() and not self.output_dir.is_dir():
            raise InputError("output path exists and is not a folder", path=self.output_dir)
        self._protected = {Path(p).resolve() for p in inputs}
        self._used: set[Path] = set()

    def paths(self, stem: str, *suffixes: str) -> list[Path]:
        """Free paths ``DIR/<stem>[-k]<suffix>`` for each suffix, sharing one ``k``."""
        safe = re.sub(r"[^\w.\-]+", "_", stem).strip("._") or "trial"
        k = 1
        while True:
            name = safe if k == 1 else f"{safe}-{k}"
            cands = [self.output_dir / f"{name}{suf}" for suf in suffixes]
            resolved = [c.resolve() for c in cands]
            if not any(r in self._protected or r in self._used for r in resolved):
                self._used.update(resolved)
                return cands
            k += 1

    def path(self, stem: str, suffix: str) -> Path:
        """One free path (see :meth:`paths`)."""
        return self.paths(stem, suffix)[0]
