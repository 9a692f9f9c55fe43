// clinex page: plain JavaScript, no libraries, nothing fetched from another host.
// Every offset the API returns is a character offset into the text the user gave, counted in
// Unicode code points (Python str indices); JavaScript strings index UTF-16 code units, so
// offsets are converted (utf16At) wherever they cut or measure a text, once per text.
"use strict";

const $ = id => document.getElementById(id);

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") e.className = v;
    else if (k === "text") e.textContent = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children) if (c !== null && c !== undefined) e.append(c);
  return e;
}

const plural = (n, word) => n + " " + word + (n === 1 ? "" : "s");
// The event counts the API gives (clinex.pv.counts): adverse and therapeutic count asserted
// events only (a speculated one is asserted, and said so); negated events are counted apart.
function countsText(c) {
  const part = (n, spec, word) => plural(n, word) + (spec ? " (" + spec + " speculated)" : "");
  const out = [];
  if (c.n_adverse) out.push(part(c.n_adverse, c.n_adverse_speculated, "adverse event"));
  if (c.n_therapeutic) out.push(part(c.n_therapeutic, c.n_therapeutic_speculated, "therapeutic event"));
  if (c.n_events_negated) out.push(c.n_events_negated + " negated");
  return out.length ? out.join(" · ") : "no events";
}
const addCounts = cs => cs.reduce((sum, c) => {
  for (const k of Object.keys(c)) sum[k] = (sum[k] || 0) + c[k];
  return sum;
}, {});
const fmtP = x => (typeof x === "number") ? x.toFixed(2) : "–";

// ------------------------------------------------------------------ errors, status, requests

function showError(view, message) {
  const box = $(view + "-error");
  if (!message) { box.hidden = true; box.textContent = ""; return; }
  box.textContent = message;
  box.hidden = false;
}

function setBusy(view, text) {
  $(view + "-status").textContent = text || "";
  document.querySelectorAll("#view-" + view + " button").forEach(b => { b.disabled = !!text; });
}

async function errorText(resp) {
  try {
    const body = await resp.json();
    if (body && body.error) return body.error.message;
  } catch (_) { /* not JSON */ }
  return "request failed (HTTP " + resp.status + ")";
}

async function call(url, options) {
  let resp;
  try {
    resp = await fetch(url, options);
  } catch (exc) {
    throw new Error("the server cannot be reached (" + exc.message + ")");
  }
  if (!resp.ok) throw new Error(await errorText(resp));
  return resp;
}

const jsonPost = body => ({method: "POST", headers: {"Content-Type": "application/json"}, body: JSON.stringify(body)});

async function download(view, url, options) {
  showError(view, "");
  setBusy(view, "preparing the download…");
  try {
    const resp = await call(url, options);
    const disp = resp.headers.get("Content-Disposition") || "";
    const m = /filename="([^"]+)"/.exec(disp);
    const blob = await resp.blob();
    const a = el("a", {href: URL.createObjectURL(blob), download: m ? m[1] : "download"});
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(a.href), 10000);
  } catch (exc) {
    showError(view, exc.message);
  } finally {
    setBusy(view, "");
  }
}

// ------------------------------------------------------------------ tabs and models

function showView(name) {
  if (!["pv", "rob", "cohort"].includes(name)) name = "pv";
  for (const v of ["pv", "rob", "cohort"]) {
    $("view-" + v).hidden = v !== name;
    $("tab-" + v).classList.toggle("active", v === name);
  }
}
document.querySelectorAll("nav .tab").forEach(b => b.addEventListener("click", () => {
  history.replaceState(null, "", "#" + b.dataset.view);
  showView(b.dataset.view);
}));
window.addEventListener("hashchange", () => showView(location.hash.slice(1)));
showView(location.hash.slice(1));

let maxUpload = null;  // bytes; from /api/limits

function mb(n) { return n >= 1048576 ? (n / 1048576).toFixed(1) + " MB" : n + " bytes"; }

// files larger than the server accepts are refused here, with the limit named (the server's
// 413 comes before it reads the body, which a browser may report as a broken connection)
function sizeProblem(f) {  // "is N bytes, larger than ..." for one file over the limit, else null
  if (maxUpload === null || f.size <= maxUpload) return null;
  return "is " + mb(f.size) + ", larger than this server's upload limit of " + mb(maxUpload) + " (CLINEX_WEB_MAX_UPLOAD).";
}

function tooLarge(files) {
  if (maxUpload === null) return null;
  const total = files.reduce((n, f) => n + f.size, 0);
  const big = files.find(f => f.size > maxUpload);
  if (big) return big.name + " " + sizeProblem(big);
  if (files.length > 1 && total > maxUpload) return "these files are " + mb(total) + " together, larger than this " +
    "server's upload limit of " + mb(maxUpload) + " (CLINEX_WEB_MAX_UPLOAD).";
  return null;
}

(async () => {
  try {
    maxUpload = (await (await call("/api/limits")).json()).max_upload;
    const names = await (await call("/api/models")).json();
    for (const task of ["pv", "rob", "cohort"]) {
      const sel = $(task + "-model");
      sel.innerHTML = "";
      for (const n of names[task]) sel.append(el("option", {value: n, selected: n === "auto", text: n}));
    }
  } catch (exc) { showError("pv", exc.message); }
})();

// ------------------------------------------------------------------ offsets

// code-point offset -> UTF-16 index into `text`: a character outside the Basic Multilingual
// Plane (an emoji) is one code point but two UTF-16 units. One table per text; a text without
// surrogates needs none. An offset past the end maps to the end.
function utf16At(text) {
  if (!/[\uD800-\uDFFF]/.test(text)) return k => Math.max(0, Math.min(k, text.length));
  const at = new Uint32Array(text.length + 1);  // at[k]: UTF-16 index of code point k
  let n = 0, u = 0;
  for (const ch of text) { at[n++] = u; u += ch.length; }  // for..of walks code points
  at[n] = u;
  return k => at[Math.max(0, Math.min(k, n))];
}

const codePoints = t => Array.from(t).length;  // a string's length in code points

// ------------------------------------------------------------------ nested highlighting

// spans: [{start, end, prio, make: () => element}] in the text's offsets; an element is
// built for each, nested by containment (prio breaks ties: outer first); a span crossing
// its parent's end is cut there and continued after it.
function nest(text, from, to, spans) {
  const frag = document.createDocumentFragment();
  const order = (a, b) => a.start - b.start || b.end - a.end || a.prio - b.prio;
  let todo = spans.filter(s => s.end > from && s.start < to)
    .map(s => ({...s, start: Math.max(s.start, from), end: Math.min(s.end, to)})).sort(order);
  let pos = from;
  while (todo.length) {
    let s = todo.shift();
    if (s.end <= pos) continue;
    if (s.start < pos) s = {...s, start: pos};
    if (s.start > pos) frag.append(text.slice(pos, s.start));
    const inner = [], rest = [];
    for (const t of todo) {
      if (t.start >= s.end) rest.push(t);
      else if (t.end <= s.end) inner.push(t);
      else { inner.push({...t, end: s.end}); rest.push({...t, start: s.end}); }
    }
    const node = s.make();
    node.append(nest(text, s.start, s.end, inner));
    frag.append(node);
    pos = s.end;
    todo = rest.sort(order);
  }
  if (pos < to) frag.append(text.slice(pos, to));
  return frag;
}

// ------------------------------------------------------------------ pharmacovigilance

const MAIN_ROLES = ["Subject", "Treatment", "Effect"];
const ATTRIBUTES = ["Negated", "Speculated", "Severity"];
const NODE_KEYS = new Set(["text", "start", "entity_id", "value", "source", "Combination"]);
let pvLast = null;  // what to send again for a download

function fragments(node) {  // [[start, end, text], ...] per argument of a PHEE node (code points)
  return node.text.map((texts, i) => texts.map((t, k) => [node.start[i][k], node.start[i][k] + codePoints(t), t]));
}

function attributeSummary(ev) {
  return ATTRIBUTES.filter(a => ev[a]).map(a => {
    const node = ev[a];
    const value = node.value === true ? "yes" : String(node.value);
    const cue = node.text.map(f => f.join(" ")).join(" | ");
    const src = node.source ? " [" + node.source.join(", ") + "]" : "";
    return a + ": " + value + (cue ? " (cue “" + cue + "”)" : "") + src;
  });
}

function showDetail(info, node) {
  document.querySelectorAll("#pv-docs .selected").forEach(x => x.classList.remove("selected"));
  node.classList.add("selected");
  const dl = el("dl");
  for (const [k, v] of info) dl.append(el("dt", {text: k}), el("dd", {text: v}));
  $("pv-detail").replaceChildren(dl);
}

// spans of one event for nest(): start/end in UTF-16 units (u: utf16At of the text); the
// hover text and the side panel show the API's code-point offsets
function eventSpans(doc, ev, k, sentence, u) {
  const drugs = new Map(doc.drugs.map(d => [d.start + ":" + d.end, d]));
  const attrs = attributeSummary(ev);
  const base = [
    ["event", "E" + (k + 1) + " · " + ev.event_type.replace(/_/g, " ")],
    ["trigger probability", fmtP(ev.trigger_probability)],
    ["sentence event probability", fmtP(sentence.event_probability)],
    ["attributes", attrs.length ? attrs.join("; ") : "none"],
  ];
  const spans = [];
  const drawn = new Set();  // a Combination drug that is also the Treatment's Drug is drawn once
  const add = (node, prio, cls, role, label) => {
    for (const frags of fragments(node)) {
      const key = role.endsWith("Drug") ? frags.map(f => f[0] + "-" + f[1]).join(",") : null;
      if (key !== null) { if (drawn.has(key)) continue; drawn.add(key); }
      const whole = frags.map(f => f[2]).join(" ");
      const first = frags[0], last = frags[frags.length - 1];
      const drug = role.endsWith("Drug") ? drugs.get(first[0] + ":" + last[1]) : null;
      const info = [["role", role], ["text", whole], ...base];
      if (role.endsWith("Drug")) {
        info.push(["normalised drug", drug ? drug.name + (drug.drugbank_id ? " (DrugBank " + drug.drugbank_id + ")" : "") +
          (drug.mesh_tree ? " MeSH tree " + drug.mesh_tree : "") : "not in the drug gazetteer"]);
      }
      info.push(["offsets", frags.map(f => f[0] + "–" + f[1]).join(", ")]);
      const title = info.map(([a, b]) => a + ": " + b).join("\n");
      for (const [s, e] of frags) {
        spans.push({start: u(s), end: u(e), prio, make: () => {
          const m = el("mark", {class: cls, "data-role": role, "data-label": label, title, tabindex: 0});
          m.addEventListener("click", ev2 => { ev2.stopPropagation(); showDetail(info, m); });
          m.addEventListener("keydown", ev2 => { if (ev2.key === "Enter") showDetail(info, m); });
          return m;
        }});
      }
    }
  };
  add(ev.Trigger, 3, "trigger", "Trigger", null);
  for (const role of MAIN_ROLES) {
    const node = ev[role];
    if (!node) continue;
    add(node, 1, "arg role-" + role, role, null);
    for (const [key, sub] of Object.entries(node)) {
      if (NODE_KEYS.has(key) || !sub || !Array.isArray(sub.text)) continue;
      add(sub, 2, "sub sub-" + key, role + "." + key, key);
    }
    for (const combo of (node.Combination || [])) {
      if (combo.Trigger) add(combo.Trigger, 3, "sub sub-Combination", "Combination trigger", "Combination");
      if (combo.Drug) add(combo.Drug, 2, "sub sub-Drug", "Combination.Drug", "Drug");
    }
  }
  for (const a of ATTRIBUTES) if (ev[a]) add(ev[a], 2, "cue cue-" + a, a + " cue", a);
  return spans;
}

function renderPVDoc(doc, many) {
  const text = doc.record.context;
  const events = doc.record.annotations[0].events;
  const u = utf16At(text);
  const box = el("div", {class: "pvdoc", "data-id": doc.id});
  if (many) box.append(el("h3", {text: "record " + doc.id}));
  for (const s of doc.sentences) {
    const div = el("div", {class: "sentence", "data-start": s.start, "data-end": s.end});
    div.append(el("div", {class: "head", text: "characters " + s.start + "–" + s.end +
      " · event probability " + fmtP(s.event_probability) + " · " + countsText(s.counts)}));
    if (!s.events.length) {
      div.append(el("div", {class: "event-line noevent"}, text.slice(u(s.start), u(s.end))));
    }
    for (const k of s.events) {
      const ev = events[k];
      const line = el("div", {class: "event-line", "data-event": "E" + (k + 1)});
      line.append(el("span", {class: "evlabel " + ev.event_type, text: "E" + (k + 1) + " " +
        (ev.event_type === "Adverse_event" ? "ADE" : "PTE")}));
      line.append(nest(text, u(s.start), u(s.end), eventSpans(doc, ev, k, s, u)));
      div.append(line);
    }
    box.append(div);
  }
  if (doc.pairs && doc.pairs.length) {
    // the record's case-level drug -> reaction pairs (clinex.pv.pairs.record_pairs)
    const list = el("ul", {class: "pairs"});
    for (const p of doc.pairs) {
      const flags = ["negated", "speculated", "dechallenge", "rechallenge", "across_sentences"].filter((f) => p[f]);
      list.append(el("li", {text: (p.event_type === "Adverse_event" ? "ADE " : "PTE ") + p.drug + " → " + p.reaction +
        (flags.length ? " (" + flags.join(", ").replace("across_sentences", "drug from another sentence") + ")" : "")}));
    }
    box.append(el("div", {class: "head", text: "drug → reaction pairs of the record"}), list);
  }
  return box;
}

const PV_COLUMNS = [["record", "Record"], ["event", "#"], ["event_type", "Type"], ["trigger", "Trigger"],
  ["trigger_probability", "p"], ["subject", "Subject"], ["drug", "Drug"], ["dose", "Dose"], ["route", "Route"],
  ["effect", "Effect"], ["negated", "Negated"], ["speculated", "Speculated"], ["severity", "Severity"],
  ["dechallenge", "Dechallenge"], ["rechallenge", "Rechallenge"], ["normalised_drug", "Normalised drug"]];

function renderPVTable(rows) {
  const t = $("pv-table");
  t.replaceChildren(el("tr", {}, ...PV_COLUMNS.map(([, h]) => el("th", {text: h}))));
  if (!rows.length) t.append(el("tr", {}, el("td", {colspan: PV_COLUMNS.length, text: "no events found"})));
  for (const r of rows) {
    t.append(el("tr", {}, ...PV_COLUMNS.map(([k]) => el("td", {"data-col": k,
      text: k === "trigger_probability" ? fmtP(r[k]) : k === "event_type" ? r[k].replace(/_/g, " ") : String(r[k] ?? "")}))));
  }
}

function showPV(model, docs, source) {
  $("pv-meta").textContent = source + " · model " + model + " · " + docs.length + " record" + (docs.length === 1 ? "" : "s") +
    " · " + countsText(addCounts(docs.map(d => d.counts)));
  $("pv-docs").replaceChildren(...docs.map(d => renderPVDoc(d, docs.length > 1)));
  $("pv-detail").textContent = "Click a highlighted span.";
  renderPVTable(docs.flatMap(d => d.table));
  $("pv-out").hidden = false;
}

async function runPV(request) {
  showError("pv", "");
  setBusy("pv", "extracting…");
  try {
    const resp = await call(request.url, request.options);
    const body = await resp.json();
    showPV(body.model, body.documents || [body], request.source);
    pvLast = request;
  } catch (exc) {
    showError("pv", exc.message);
    $("pv-out").hidden = true;  // no stale result under the message
    pvLast = null;
  } finally {
    setBusy("pv", "");
  }
}

$("pv-run").addEventListener("click", () => {
  const body = {text: $("pv-text").value, model: $("pv-model").value};
  runPV({url: "/api/pv/extract", source: "pasted text", options: jsonPost(body), download: fmt => ["/api/pv/extract?format=" + fmt, jsonPost(body)]});
});
$("pv-upload").addEventListener("click", () => {
  const f = $("pv-file").files[0];
  if (!f) { showError("pv", "Choose a .txt or JSON-lines file first."); return; }
  if (tooLarge([f])) { showError("pv", tooLarge([f])); return; }
  const url = "/api/pv/upload?filename=" + encodeURIComponent(f.name) + "&model=" + encodeURIComponent($("pv-model").value);
  runPV({url, source: "file " + f.name, options: {method: "POST", body: f}, download: fmt => [url + "&format=" + fmt, {method: "POST", body: f}]});
});
for (const fmt of ["phee", "brat", "csv"]) {
  $("pv-dl-" + fmt).addEventListener("click", () => {
    if (!pvLast) { showError("pv", "Extract events first."); return; }
    download("pv", ...pvLast.download(fmt));
  });
}

// ------------------------------------------------------------------ risk of bias

let robDone = [];  // [{name, assessment, html}]
const DOMAINS = ["D1", "D2", "D3", "D4", "D5"];
const badge = risk => el("span", {class: "risk risk-" + risk.split(" ")[0], text: risk});

function renderRoB(failed) {
  const t = $("rob-summary");
  t.replaceChildren(el("tr", {}, el("th", {text: "Trial"}), el("th", {text: "File"}), ...DOMAINS.map(d => el("th", {text: d})),
    el("th", {text: "Overall"}), el("th", {text: "Report"})));
  robDone.forEach((r, i) => {
    const risks = Object.fromEntries(r.assessment.domains.map(d => [d.domain, d.risk]));
    t.append(el("tr", {"data-trial": r.assessment.document_id}, el("td", {text: r.assessment.document_id}),
      el("td", {text: r.name}), ...DOMAINS.map(d => el("td", {"data-domain": d}, badge(risks[d] || "–"))),
      el("td", {"data-domain": "Overall"}, badge(r.assessment.overall)),
      el("td", {}, el("a", {href: "#rob-report-" + i, text: "report"}))));
  });
  for (const [name, message] of failed) {
    t.append(el("tr", {class: "filefail"}, el("td", {text: "—"}), el("td", {text: name}),
      el("td", {colspan: DOMAINS.length + 2, text: message})));
  }
  $("rob-reports").replaceChildren(...robDone.map((r, i) => {
    const frame = el("iframe", {class: "report", sandbox: "allow-same-origin", title: "RoB 2 report of " + r.name});
    frame.srcdoc = r.html;
    return el("div", {class: "rob-report", id: "rob-report-" + i}, el("h3", {text: r.name}), frame);
  }));
  $("rob-out").hidden = false;
}

$("rob-run").addEventListener("click", async () => {
  showError("rob", "");
  const files = [...$("rob-files").files];
  if (!files.length) { showError("rob", "Choose one or more trial reports (PDF, text or JATS XML) first."); return; }
  const model = $("rob-model").value;
  robDone = [];
  const failed = [];  // [name, message]: refused here (too large) or by the server
  try {
    for (const [i, f] of files.entries()) {
      // a file over the upload limit is not sent (the server would refuse it before reading
      // it, which a browser may report as a broken connection); the others still are
      const big = sizeProblem(f);
      if (big) { failed.push([f.name, "the file " + big]); continue; }
      setBusy("rob", "assessing " + (i + 1) + " of " + files.length + ": " + f.name + "…");
      try {
        const resp = await call("/api/rob/report?filename=" + encodeURIComponent(f.name) + "&model=" +
          encodeURIComponent(model), {method: "POST", body: f});
        const body = await resp.json();
        robDone.push({name: f.name, assessment: body.assessment, html: body.html});
      } catch (exc) {
        failed.push([f.name, exc.message]);
      }
    }
    if (failed.length) showError("rob", failed.map(([n, m]) => n + ": " + m).join("\n"));
    if (!robDone.length) { $("rob-out").hidden = true; return; }
    renderRoB(failed);
    setBusy("rob", "drawing the traffic-light plot…");
    const img = await (await call("/api/rob/plot", jsonPost({assessments: robDone.map(r => r.assessment)}))).blob();
    const old = $("rob-plot").src;
    $("rob-plot").src = URL.createObjectURL(img);
    if (old.startsWith("blob:")) URL.revokeObjectURL(old);
  } catch (exc) {
    showError("rob", exc.message);
  } finally {
    setBusy("rob", "");
  }
});
$("rob-dl-robvis").addEventListener("click", () =>
  download("rob", "/api/rob/robvis", jsonPost({assessments: robDone.map(r => r.assessment)})));
$("rob-dl-json").addEventListener("click", () =>
  download("rob", "/api/rob/json", jsonPost({assessments: robDone.map(r => r.assessment)})));

// ------------------------------------------------------------------ cohort selection

let cohortLast = null;

// the patient's text with its record headers and the deciding sentences marked; the API's
// code-point offsets of records and evidence are turned into UTF-16 indices first
function renderPatientText(view, evidenceCP) {
  const text = view.text;
  const u = utf16At(text);
  const records = view.records.map(r => ({...r, start: u(r.start), end: u(r.end)}));
  const evidence = evidenceCP.map(e => ({...e, start: u(e.start), end: u(e.end)}));
  const box = $("cohort-text");
  box.replaceChildren();
  const bounds = new Set([0, text.length]);
  records.forEach(r => { bounds.add(r.start); bounds.add(r.end); });
  evidence.forEach(e => { bounds.add(e.start); bounds.add(e.end); });
  const cuts = [...bounds].filter(b => b >= 0 && b <= text.length).sort((a, b) => a - b);
  const recordAt = new Map(records.map((r, i) => [r.start, [i, r]]));
  const anchorsAt = new Map();
  evidence.forEach(e => { if (!anchorsAt.has(e.start)) anchorsAt.set(e.start, []); anchorsAt.get(e.start).push(e.anchor); });
  for (let i = 0; i < cuts.length - 1; i++) {
    const a = cuts[i], b = cuts[i + 1];
    if (recordAt.has(a)) {
      const [k, r] = recordAt.get(a);
      box.append(el("span", {class: "recdate record", id: "cohort-record-" + k,
        text: "record " + (k + 1) + " of " + records.length + " · " + (r.date || "no date")}));
    }
    for (const id of (anchorsAt.get(a) || [])) box.append(el("span", {id}));
    const seg = text.slice(a, b);
    const covering = evidence.filter(e => e.start <= a && b <= e.end);
    if (!covering.length) { box.append(seg); continue; }
    const names = [...new Set(covering.map(e => e.criterion))];
    box.append(el("mark", {class: "ev", "data-criteria": names.join(" "),
      title: covering.map(e => e.criterion + " (" + e.label + "): " + e.rule).join("\n"), text: seg}));
  }
}

function renderCohort(view) {
  const d = view.decisions;
  $("cohort-meta").textContent = "patient " + view.patient + " · " + (view.source || "") + " · " + view.records.length +
    " records · 'now' = " + (view.now || "no dated record") + " · model " + view.model;
  $("cohort-warning").hidden = !view.warning;
  $("cohort-warning").textContent = view.warning || "";
  const evidence = [];
  const t = $("cohort-table");
  t.replaceChildren(el("tr", {}, el("th", {text: "Criterion"}), el("th", {text: "Decision"}), el("th", {text: "Score"}),
    el("th", {text: "Deciding sentences (record date)"})));
  for (const [name, dec] of Object.entries(d)) {
    const ul = el("ul", {class: "evidence"});
    dec.evidence.forEach((e, k) => {
      const anchor = "cohort-ev-" + name + "-" + k;
      evidence.push({...e, criterion: name, label: dec.label, anchor});
      const link = el("a", {href: "#" + anchor, title: e.rule, onclick: ev => {
        ev.preventDefault();
        const target = $(anchor);
        if (target) {
          target.scrollIntoView({block: "center"});
          document.querySelectorAll("#cohort-text mark.focus").forEach(x => x.classList.remove("focus"));
          const m = target.nextElementSibling;
          if (m && m.tagName === "MARK") m.classList.add("focus");
        }
      }}, el("mark", {class: "ev", text: e.sentence}));
      ul.append(el("li", {}, el("span", {class: "date", text: e.record_date || "no date"}), " ", link,
        e.value !== null && e.value !== undefined ? el("span", {class: "tag", text: "value " + e.value}) : null));
    });
    if (!dec.evidence.length) ul.append(el("li", {class: "hint", text: "no deciding sentence"}));
    t.append(el("tr", {"data-criterion": name}, el("td", {text: name}),
      el("td", {}, el("span", {class: "decision " + (dec.label === "met" ? "met" : "notmet"), text: dec.label})),
      el("td", {text: fmtP(dec.score)}), el("td", {}, ul)));
  }
  renderPatientText(view, evidence);
  $("cohort-out").hidden = false;
}

$("cohort-run").addEventListener("click", async () => {
  showError("cohort", "");
  const files = [...$("cohort-files").files];
  if (!files.length) { showError("cohort", "Choose a patient first: one n2c2 XML file, or the .txt notes of one patient."); return; }
  const big = tooLarge([...files, ...$("cohort-criteria").files]);
  if (big) { showError("cohort", big); return; }
  setBusy("cohort", "screening…");
  try {
    const read = async list => Promise.all(list.map(async f => ({name: f.name, text: await f.text()})));
    const body = {files: await read(files), criteria: await read([...$("cohort-criteria").files]), model: $("cohort-model").value};
    const view = await (await call("/api/cohort/patient", jsonPost(body))).json();
    cohortLast = body;
    renderCohort(view);
  } catch (exc) {
    showError("cohort", exc.message);
    $("cohort-out").hidden = true;  // no stale result under the message
    cohortLast = null;
  } finally {
    setBusy("cohort", "");
  }
});
for (const fmt of ["xml", "json", "csv"]) {
  $("cohort-dl-" + fmt).addEventListener("click", () => {
    if (!cohortLast) { showError("cohort", "Screen a patient first."); return; }
    download("cohort", "/api/cohort/patient?format=" + fmt, jsonPost(cohortLast));
  });
}
