"""``pairs.html``: the drug x reaction pairs of :func:`clinex.pv.summary.summarize_run` as one page.

One self-contained file: the data, the CSS and the script are inline, nothing is loaded
from anywhere (fonts, scripts and images included), and the page carries its own
Content-Security-Policy (``default-src 'none'``; the one script and the one style sheet
allowed by their SHA-256 hashes), so it opens from a file, an e-mail attachment or an
intranet share alike and runs no other code. There is no inline event handler: the
script attaches its listeners. The pairs are data (``<script type="application/json">``,
with ``<``, ``>`` and ``&`` escaped), and every text the page shows is set with
``textContent``, never parsed as HTML.

What the page does:

* a table of the pairs, sortable by any column (click a column heading; again for the
  other direction) and filtered by drug, by reaction (substring of the normalised name or
  of a form as written, any case) and by kind (pairs with an ADE, with a PTE, with a
  dechallenge or rechallenge); :data:`PAGE_ROWS` rows at a time, "Show more" for the next;
* each pair's button opens its evidence: up to three sentences with the drug and the
  reaction highlighted (``<mark class="drug">`` / ``<mark class="reaction">``), each with its
  PMID (a link to PubMed), year, record id and input file, and the DrugBank / MeSH ids.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
from collections.abc import Sequence
from typing import Any

__all__ = ["PAGE_ROWS", "render_pairs_html"]

#: Rows the page shows before "Show more".
PAGE_ROWS = 250

_CSS = """
:root { --drug: #d9f2d9; --drug-line: #2e7d32; --reaction: #fde0dc; --reaction-line: #c62828;
        --line: #d0d4da; --muted: #5f6b7a; --head: #f3f5f8; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 0; color: #1d2530; }
header { padding: 16px 24px 8px; border-bottom: 1px solid var(--line); }
h1 { font-size: 20px; margin: 0 0 4px; }
.meta { color: var(--muted); margin: 0; }
.legend { margin: 6px 0 0; color: var(--muted); }
main { padding: 12px 24px 32px; }
.controls { display: flex; flex-wrap: wrap; gap: 12px; align-items: end; margin-bottom: 10px; }
.controls label { display: flex; flex-direction: column; font-size: 12px; color: var(--muted); gap: 2px; }
.controls input, .controls select { font: inherit; padding: 4px 6px; border: 1px solid var(--line); border-radius: 4px; min-width: 200px; }
#count { margin: 0 0 6px; color: var(--muted); }
table { border-collapse: collapse; width: 100%; }
th, td { border-bottom: 1px solid var(--line); padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: var(--head); position: sticky; top: 0; z-index: 1; vertical-align: bottom; }
td.col-drug, td.col-reaction { min-width: 11em; }
th button { font: inherit; font-weight: 600; background: none; border: 0; padding: 0; cursor: pointer; color: inherit; }
th[aria-sort="ascending"] button::after { content: " \\25B2"; font-size: 10px; }
th[aria-sort="descending"] button::after { content: " \\25BC"; font-size: 10px; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
td.zero { color: #a0a8b3; }
button.pair { font: inherit; background: none; border: 0; padding: 0; cursor: pointer; text-align: left; color: #0b5cad; }
button.pair::before { content: "\\25B8 "; color: var(--muted); }
button.pair[aria-expanded="true"]::before { content: "\\25BE "; }
.forms { display: block; color: var(--muted); font-size: 12px; }
tr.evidence > td { background: #fafbfc; padding: 8px 16px 12px 28px; }
.ids { color: var(--muted); font-size: 12px; margin: 0 0 6px; }
ol.examples { margin: 0; padding-left: 20px; }
ol.examples li { margin: 0 0 8px; }
.ref { color: var(--muted); font-size: 12px; }
.flag { display: inline-block; font-size: 11px; padding: 0 5px; border-radius: 8px; background: #e8eaf6; color: #283593; margin-left: 4px; }
.sentence { margin: 2px 0 0; }
mark { padding: 0 1px; border-radius: 2px; color: inherit; }
mark.drug { background: var(--drug); border-bottom: 2px solid var(--drug-line); }
mark.reaction { background: var(--reaction); border-bottom: 2px solid var(--reaction-line); }
mark.drug.reaction { background: linear-gradient(var(--drug), var(--reaction)); }
#more { margin-top: 10px; font: inherit; padding: 4px 12px; }
.note { color: #8a4b00; }
"""

_JS = """
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("pairs-data").textContent);
  var pairs = data.pairs, columns = data.columns, PAGE = data.page_rows;
  var state = { key: "ade_events", dir: "descending", drug: "", reaction: "", kind: "all", limit: PAGE };
  var open = new Set();
  var tbody = document.getElementById("pairs-body");
  var head = document.getElementById("pairs-head");

  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) { node.className = cls; }
    if (text !== undefined && text !== null) { node.textContent = String(text); }
    return node;
  }

  function lower(s) { return (s || "").toLowerCase(); }

  function matches(p) {
    if (state.drug && lower(p.drug + " " + p.drug_texts).indexOf(state.drug) < 0) { return false; }
    if (state.reaction && lower(p.reaction + " " + p.reaction_texts).indexOf(state.reaction) < 0) { return false; }
    if (state.kind === "ade") { return p.ade_events > 0; }
    if (state.kind === "pte") { return p.pte_events > 0; }
    if (state.kind === "challenge") { return p.dechallenge_events + p.rechallenge_events > 0; }
    return true;
  }

  function compare(a, b) {
    var x = pairs[a][state.key], y = pairs[b][state.key];
    if (x === null || x === undefined) { return (y === null || y === undefined) ? a - b : 1; }
    if (y === null || y === undefined) { return -1; }
    var c = typeof x === "number" ? x - y : String(x).localeCompare(String(y));
    if (state.dir === "descending") { c = -c; }
    return c || a - b;
  }

  function highlighted(ex) {
    // the sentence cut at every span boundary; each piece marked with the spans it lies in
    var base = ex.sentence_start, text = ex.sentence, cuts = [0, text.length], spans = [];
    [["drug", ex.drug_offsets], ["reaction", ex.reaction_offsets]].forEach(function (kv) {
      (kv[1] || []).forEach(function (f) {
        var s = Math.max(0, f[0] - base), e = Math.min(text.length, f[1] - base);
        if (e > s) { spans.push([kv[0], s, e]); cuts.push(s, e); }
      });
    });
    cuts = Array.from(new Set(cuts)).sort(function (a, b) { return a - b; });
    var p = el("p", "sentence");
    for (var i = 0; i + 1 < cuts.length; i++) {
      var s = cuts[i], e = cuts[i + 1], kinds = [];
      spans.forEach(function (sp) { if (sp[1] <= s && e <= sp[2] && kinds.indexOf(sp[0]) < 0) { kinds.push(sp[0]); } });
      var piece = text.slice(s, e);
      if (kinds.length) {
        var m = el("mark", kinds.sort().join(" "), piece);
        m.title = kinds.join(" + ");
        p.appendChild(m);
      } else {
        p.appendChild(document.createTextNode(piece));
      }
    }
    return p;
  }

  function evidence(p) {
    var td = el("td");
    td.colSpan = columns.length;
    var ids = [];
    if (p.drugbank_id) { ids.push("DrugBank " + p.drugbank_id); }
    if (p.mesh_tree) { ids.push("MeSH tree " + p.mesh_tree); }
    td.appendChild(el("p", "ids", p.drug + (ids.length ? " (" + ids.join(", ") + ")" : "") + " \\u00d7 " + p.reaction
      + " \\u2014 as written: " + p.drug_texts + " / " + p.reaction_texts));
    var ol = el("ol", "examples");
    (p.examples || []).forEach(function (ex) {
      var li = el("li", "example");
      var ref = el("div", "ref");
      if (ex.pmid) {
        var a = el("a", "pmid", "PMID " + ex.pmid);
        a.href = "https://pubmed.ncbi.nlm.nih.gov/" + encodeURIComponent(ex.pmid) + "/";
        a.rel = "noopener noreferrer";
        a.target = "_blank";
        ref.appendChild(a);
        ref.appendChild(document.createTextNode(ex.year ? " (" + ex.year + ") \\u00b7 " : " \\u00b7 "));
      }
      var file = String(ex.source || "").split(/[\\\\/]/).pop();
      var rec = el("span", "record", "record " + ex.id + (file ? " in " + file : ""));
      rec.title = ex.source || "";
      ref.appendChild(rec);
      ref.appendChild(el("span", "flag", ex.event_type === "Adverse_event" ? "ADE" : "PTE"));
      ["dechallenge", "rechallenge", "speculated", "negated"].forEach(function (f) {
        if (ex[f]) { ref.appendChild(el("span", "flag", f)); }
      });
      li.appendChild(ref);
      li.appendChild(highlighted(ex));
      ol.appendChild(li);
    });
    td.appendChild(ol);
    var tr = el("tr", "evidence");
    tr.appendChild(td);
    return tr;
  }

  function row(i) {
    var p = pairs[i], tr = el("tr", "pair");
    tr.dataset.drug = p.drug;
    tr.dataset.reaction = p.reaction;
    columns.forEach(function (c) {
      var v = p[c.key], td;
      if (c.key === "drug") {
        td = el("td", "col-drug");
        var b = el("button", "pair", p.drug);
        b.type = "button";
        b.dataset.index = String(i);
        b.setAttribute("aria-expanded", open.has(i) ? "true" : "false");
        b.title = "Show the evidence sentences";
        td.appendChild(b);
        if (lower(p.drug_texts) !== lower(p.drug)) { td.appendChild(el("span", "forms", p.drug_texts)); }
      } else if (c.key === "reaction") {
        td = el("td", "col-reaction", p.reaction);
        if (lower(p.reaction_texts) !== lower(p.reaction)) { td.appendChild(el("span", "forms", p.reaction_texts)); }
      } else {
        td = el("td", "num col-" + c.key + (v === 0 ? " zero" : ""), v === null || v === undefined ? "\\u2013" : v);
      }
      tr.appendChild(td);
    });
    return tr;
  }

  function render() {
    var shown = [];
    for (var i = 0; i < pairs.length; i++) { if (matches(pairs[i])) { shown.push(i); } }
    shown.sort(compare);
    tbody.textContent = "";
    shown.slice(0, state.limit).forEach(function (i) {
      tbody.appendChild(row(i));
      if (open.has(i)) { tbody.appendChild(evidence(pairs[i])); }
    });
    document.getElementById("count").textContent = shown.length + " of " + pairs.length + " pairs"
      + (shown.length > state.limit ? " (first " + state.limit + " shown)" : "");
    document.getElementById("more").hidden = shown.length <= state.limit;
    head.querySelectorAll("th").forEach(function (th) {
      if (th.dataset.key === state.key) { th.setAttribute("aria-sort", state.dir); } else { th.removeAttribute("aria-sort"); }
    });
  }

  columns.forEach(function (c) {
    var th = el("th", c.numeric ? "num" : "");
    th.dataset.key = c.key;
    th.scope = "col";
    var b = el("button", "sort", c.label);
    b.type = "button";
    b.title = c.help;
    th.appendChild(b);
    head.appendChild(th);
  });
  head.addEventListener("click", function (e) {
    var th = e.target.closest("th");
    if (!th) { return; }
    var col = columns.filter(function (c) { return c.key === th.dataset.key; })[0];
    if (state.key === col.key) {
      state.dir = state.dir === "descending" ? "ascending" : "descending";
    } else {
      state.key = col.key;
      state.dir = col.numeric ? "descending" : "ascending";
    }
    render();
  });
  tbody.addEventListener("click", function (e) {
    var b = e.target.closest("button.pair");
    if (!b) { return; }
    var i = Number(b.dataset.index);
    if (open.has(i)) { open.delete(i); } else { open.add(i); }
    render();
  });
  document.getElementById("f-drug").addEventListener("input", function (e) {
    state.drug = lower(e.target.value.trim()); state.limit = PAGE; render();
  });
  document.getElementById("f-reaction").addEventListener("input", function (e) {
    state.reaction = lower(e.target.value.trim()); state.limit = PAGE; render();
  });
  document.getElementById("f-kind").addEventListener("change", function (e) {
    state.kind = e.target.value; state.limit = PAGE; render();
  });
  document.getElementById("more").addEventListener("click", function () { state.limit += PAGE; render(); });
  render();
  document.body.dataset.ready = "true";
}());
"""

# key, label, help, numeric; the optional ones only when their events are counted
_COLUMNS: tuple[tuple[str, str, str, bool], ...] = (
    ("drug", "Drug", "normalised drug name (the gazetteer's canonical name when known)", False),
    ("reaction", "Reaction", "normalised reaction (case, articles, spelling, plural)", False),
    ("ade_events", "ADE events", "adverse-event events stating the pair", True),
    ("ade_records", "ADE records", "distinct records with such an event", True),
    ("ade_pmids", "ADE PMIDs", "distinct PMIDs with such an event (MEDLINE input)", True),
    ("pte_events", "PTE events", "potential-therapeutic events stating the pair", True),
    ("pte_records", "PTE records", "distinct records with such an event", True),
    ("records", "Records", "distinct records, ADE and PTE together", True),
    ("pmids", "PMIDs", "distinct PMIDs, ADE and PTE together", True),
    ("dechallenge_events", "Dechallenge", "events with a positive dechallenge", True),
    ("rechallenge_events", "Rechallenge", "events with a positive rechallenge", True),
    ("speculated_events", "Speculated", "speculated events among those counted", True),
    ("negated_events", "Negated", "negated events among those counted", True),
    ("first_year", "First year", "first publication year", True),
    ("last_year", "Last year", "last publication year", True),
)


def _sha256(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode() + "'"


def _json_for_script(obj: Any) -> str:
    """JSON that cannot end the ``<script>`` element it sits in."""
    return (json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
            .replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def render_pairs_html(pairs: Sequence[dict[str, Any]], meta: dict[str, Any]) -> str:
    """The page for ``pairs`` (rows of ``pairs.parquet``, ``examples_json`` as JSON text).

    Parameters
    ----------
    pairs : sequence of dict
        One dict per pair with the :data:`clinex.pv.summary.PAIR_COLUMNS` keys.
    meta : dict
        What the header says: ``run``, ``model``, ``records``, ``events``,
        ``events_negated_excluded``, ``events_speculated_excluded``, ``events_without_pair``,
        ``pairs``, ``batch_errors``, ``include_negated``, ``include_speculated``, ``drugs``.

    Returns
    -------
    str
        The whole HTML document.
    """
    columns = [
        {"key": k, "label": label, "help": help_, "numeric": numeric}
        for k, label, help_, numeric in _COLUMNS
        if (k != "speculated_events" or meta.get("include_speculated"))
        and (k != "negated_events" or meta.get("include_negated"))
    ]
    rows = []
    for p in pairs:
        row = {k: v for k, v in p.items() if k != "examples_json"}
        row["examples"] = json.loads(p["examples_json"]) if p.get("examples_json") else []
        rows.append(row)
    payload = _json_for_script({"columns": columns, "pairs": rows, "page_rows": PAGE_ROWS})
    csp = (f"default-src 'none'; script-src {_sha256(_JS)}; style-src {_sha256(_CSS)}; "
           "img-src data:; base-uri 'none'; form-action 'none'")
    esc = html.escape
    left_out = []
    if not meta.get("include_negated"):
        left_out.append(f"{meta.get('events_negated_excluded', 0)} negated")
    if not meta.get("include_speculated"):
        left_out.append(f"{meta.get('events_speculated_excluded', 0)} speculated")
    facts = [
        f"run {meta.get('run')}",
        f"model {meta.get('model')}",
        f"{meta.get('records', 0)} records",
        f"{meta.get('events', 0)} events counted"
        + (f" ({' and '.join(left_out)} left out)" if left_out else " (negated and speculated included)"),
        f"{meta.get('events_without_pair', 0)} events without a drug or a reaction",
        f"{meta.get('pairs', 0)} pairs",
    ]
    if meta.get("drugs"):
        facts.append("screened for " + ", ".join(str(d) for d in meta["drugs"]))
    notes = []
    if meta.get("batch_errors"):
        notes.append(f"The batch run skipped {meta['batch_errors']} input item(s) (its errors.jsonl); "
                     "they are not counted.")
    if meta.get("pairs", 0) > len(pairs):
        notes.append(f"This page shows the first {len(pairs)} of {meta['pairs']} pairs (by ADE events); "
                     "pairs.csv and pairs.parquet hold them all.")
    facts_html = esc(" \u00b7 ".join(facts))
    title = esc(str(meta.get("run")))
    note_html = "".join(f'<p class="meta note">{esc(n)}</p>' for n in notes)
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{esc(csp, quote=False)}">
<meta name="referrer" content="no-referrer">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>clinex: drug \u00d7 reaction pairs of {title}</title>
<style>{_CSS}</style>
</head>
<body>
<header>
<h1>Drug \u00d7 reaction pairs</h1>
<p class="meta" id="facts">{facts_html}</p>
{note_html}<p class="legend"><mark class="drug">drug</mark> <mark class="reaction">reaction</mark>
 \u2014 click a column heading to sort, a drug to open the pair's evidence sentences.</p>
</header>
<main>
<div class="controls">
<label>Drug <input id="f-drug" type="search" placeholder="e.g. clozapine" autocomplete="off"></label>
<label>Reaction <input id="f-reaction" type="search" placeholder="e.g. agranulocytosis" autocomplete="off"></label>
<label>Pairs <select id="f-kind">
<option value="all">all</option>
<option value="ade">with an adverse event (ADE)</option>
<option value="pte">with a therapeutic event (PTE)</option>
<option value="challenge">with a dechallenge or rechallenge</option>
</select></label>
</div>
<p id="count"></p>
<table id="pairs">
<thead><tr id="pairs-head"></tr></thead>
<tbody id="pairs-body"></tbody>
</table>
<button type="button" id="more" hidden>Show more</button>
</main>
<script type="application/json" id="pairs-data">{payload}</script>
<script>{_JS}</script>
</body>
</html>
"""
