"""PubMed/MEDLINE XML through the whole PV pipeline, as a user runs it: speed, memory, cost at MEDLINE scale.

Usage::

    python bench/pv_medline.py [--n 2000] [--workers-list 1,2] [--data FOLDER] [--gzip]
                               [--partition-size N] [--model auto] [--price-per-core-hour 0.05]
                               [--out-dir FOLDER] [--keep] [--quick]

Issue 25, item 6. Three stages, each a ``clinex`` subprocess (start-up and model load
included, ``bench/_cli.py``'s command line):

1. **The input.** A MEDLINE XML file (``<PubmedArticleSet>`` of ``<PubmedArticle>``, with
   PubMed's 2025 ``<!DOCTYPE>`` line; ``--gzip`` writes ``.xml.gz`` as NLM ships the
   baseline) of ``--n`` citations (default 2,000) built from the real PubMed titles and
   abstracts of BC5CDR's training and development sets (1,000 abstracts; Li et al.,
   Database 2016, baw068; ``../shared/data/bc5cdr``, ``--data FOLDER``). Each citation
   holds what :mod:`clinex.io.medline` reads: ``MedlineCitation/PMID``,
   ``Article/ArticleTitle``, ``Article/Abstract/AbstractText`` (one unstructured section),
   ``Article/Journal/JournalIssue/PubDate/Year``, ``Article/PublicationTypeList`` and
   ``MeshHeadingList``. Not from the corpus, so stand-ins: the year (``1990 + PMID mod
   30``, not the real year), the publication type (``Journal Article``) and the MeSH
   headings (the abstract's BC5CDR chemical and disease mentions with their MeSH ids, not
   NLM's indexing). When ``--n`` exceeds 1,000 the abstracts are used again in the same
   order under new PMIDs (``PMID + k * 100,000,000`` for the k-th repeat); the output says
   how many citations are repeats. Real baseline citations also carry authors, journal
   details, dates and references (larger files to parse); the text the model reads is the
   same kind.
2. **Batch.** ``clinex batch pv FILE -o RUN --workers K`` for each K of
   ``--workers-list`` (default 1,2), each into a new folder. ``--workers 1`` runs in the
   ``clinex`` process itself; ``--workers K > 1`` in K Dask worker processes.
3. **Summary.** ``clinex pv summarize RUN`` (drug x reaction pairs: CSV, Parquet, HTML)
   when this clinex has that command; otherwise the stage is skipped and said so, and the
   whole-pipeline figures are the batch's.

Figures (per K):

* ``wall_s``: each stage's wall clock around its subprocess, and the pipeline's (batch +
  summary; building the XML is the bench's set-up, reported apart).
* ``abstracts_per_s``: ``n / wall`` of the pipeline and of the batch alone; and per
  worker (divided by K). Issue 25's target: the pipeline >= 10 abstracts/s per worker.
* ``speedup``: wall of the run with the fewest workers (K = 1 by default) / this run's
  wall, pipeline and batch. Target: two workers >= 1.7x one.
* ``peak_rss_mb_per_worker``: the largest resident set size any worker process reached,
  sampled with psutil (else ``/proc``) every ``--sample-s`` seconds (default 0.1; a peak
  shorter than that can be missed) over the batch's process tree. A worker is the
  ``clinex`` process for K = 1, else each Dask worker process (the processes started by
  multiprocessing's ``spawn_main``; the resource tracker is not one); the ``clinex``
  process itself, which lists the items and writes the results, is reported apart as
  ``peak_rss_mb_main``. Target: <= 600 MB per worker. ``worker_processes_seen`` counts
  the worker processes over the run and ``max_concurrent_workers`` the most alive in one
  sample: fewer than K means the K workers did not run at once.
* ``same_results``: the results of every K equal those of the first (ids, events).

One worker is meant to be one core: ``CLINEX_THREADS`` is set to 1 for the subprocesses
(unless already set; ``--workers 1`` would otherwise give the model every core), as are
``OMP_NUM_THREADS``, ``OPENBLAS_NUM_THREADS`` and ``MKL_NUM_THREADS``, as in the other
benches.

Projections (``projections``): core-seconds per abstract of the pipeline = (batch wall x
K + summary wall) / n, from the run with the most workers; core-hours = citations x that /
3600; cost = core-hours x ``--price-per-core-hour`` (default 0.05 USD: an assumption, not a
quoted price; pass your provider's). Citation counts assumed, approximate, from NLM's
MEDLINE/PubMed baseline statistics page
(https://www.nlm.nih.gov/bsd/licensee/baselinestats.html): the 2025 baseline holds about
38 million citations, of which about 26 million have an abstract; the daily update files
bring about 1.5 million citations a year. ``baseline_with_abstract`` costs the 26
million at this rate (title-only citations are far shorter, left out); ``baseline_all``
costs all 38 million at the same rate (an upper bound); ``updates_per_year`` the 1.5
million (an upper bound: some have no abstract). A linear projection: it assumes the
per-abstract cost does not change with the run's size and ignores I/O and scheduling of
many files.

``--quick`` is a smoke run: N = 100 and ``--partition-size 25`` (so that two workers
each get partitions). Figures from a machine busy with other work are noise. The last
printed line is one JSON object.
"""

from __future__ import annotations

import os

if __name__ == "__main__":  # before numpy loads; not when a test imports the builder
    for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "CLINEX_THREADS"):
        os.environ.setdefault(_var, "1")

import argparse
import gzip
import json
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, NamedTuple
from xml.sax.saxutils import escape, quoteattr

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "bc5cdr"
CLINEX = [sys.executable, "-m", "clinex.cli"]
"""``clinex`` in this interpreter (as ``bench/_cli.py``)."""

PMID_STRIDE = 100_000_000
"""A repeated abstract's PMID is ``PMID + k * PMID_STRIDE`` (real PMIDs are below 10**8)."""

DOCTYPE = ('<!DOCTYPE PubmedArticleSet PUBLIC "-//NLM//DTD PubMedArticle, 1st January 2025//EN" '
           '"https://dtd.nlm.nih.gov/ncbi/pubmed/out/pubmed_250101.dtd">')

STATS_SOURCE = "NLM, MEDLINE/PubMed baseline statistics, https://www.nlm.nih.gov/bsd/licensee/baselinestats.html"
CITATIONS = {
    "baseline_with_abstract": 26_000_000,
    "baseline_all": 38_000_000,
    "updates_per_year": 1_500_000,
}
"""Approximate citation counts (2025 baseline; update files per year), from :data:`STATS_SOURCE`."""

DEFAULT_PRICE = 0.05
"""USD per core-hour: an assumption for the projection, not a quoted price."""

TARGETS = {"pipeline_abstracts_per_s_per_worker": 10.0, "peak_rss_mb_per_worker": 600.0, "speedup_2_workers": 1.7}
"""Issue 25's targets."""


class Doc(NamedTuple):
    """One abstract to wrap: PMID, title, abstract, MeSH stand-ins ``(ui, name)``."""

    pmid: str
    title: str
    abstract: str
    mesh: tuple[tuple[str, str], ...] = ()


# --------------------------------------------------------------------------- the XML


def load_bc5cdr(data: Path) -> list[Doc]:
    """BC5CDR's training then development abstracts, each with its mentions' MeSH ids as stand-in headings."""
    sys.path.insert(0, str(ROOT / "bench"))
    from pv_abstracts import SPLITS, parse_pubtator

    docs: list[Doc] = []
    for name in ("train", "dev"):
        path = data / SPLITS[name]
        if not path.is_file():
            print(f"bench/pv_medline.py: no BC5CDR {name} file at {path}; pass --data FOLDER "
                  "(the folder of CDR_TrainingSet.PubTator.txt and CDR_DevelopmentSet.PubTator.txt)", file=sys.stderr)
            sys.exit(2)
        for a in parse_pubtator(path.read_text(encoding="utf-8")):
            mesh: dict[str, str] = {}
            for m in a.mentions:
                for ui in m.ids:
                    mesh.setdefault(ui, m.text)
            docs.append(Doc(a.pmid, a.title, a.abstract, tuple(mesh.items())))
    return docs


def plan(docs: Sequence[Doc], n: int) -> Iterator[Doc]:
    """``n`` citations: ``docs`` in order, then again under new PMIDs (``+ k * PMID_STRIDE``).

    >>> [d.pmid for d in plan([Doc("7", "T.", "A."), Doc("9", "U.", "B.")], 3)]
    ['7', '9', '100000007']
    """
    if not docs and n:
        raise ValueError("no abstracts to build citations from")
    for i in range(n):
        k, j = divmod(i, len(docs))
        d = docs[j]
        yield d._replace(pmid=str(int(d.pmid) + k * PMID_STRIDE)) if k else d


def citation_xml(doc: Doc, *, year: int | None = None, types: Sequence[str] = ("Journal Article",)) -> str:
    """One ``<PubmedArticle>`` element (text escaped; ``year`` default ``1990 + PMID mod 30``)."""
    y = 1990 + int(doc.pmid) % 30 if year is None else year
    pt = "".join(f"<PublicationType UI=\"D016428\">{escape(t)}</PublicationType>" for t in types)
    mesh = "".join(f"<MeshHeading><DescriptorName UI={quoteattr(ui)} MajorTopicYN=\"N\">{escape(name)}"
                   "</DescriptorName></MeshHeading>" for ui, name in doc.mesh)
    return (
        "<PubmedArticle>\n"
        f"<MedlineCitation Status=\"MEDLINE\" Owner=\"NLM\"><PMID Version=\"1\">{doc.pmid}</PMID>\n"
        "<Article PubModel=\"Print\"><Journal><Title>BC5CDR bench</Title><JournalIssue CitedMedium=\"Print\">"
        f"<PubDate><Year>{y}</Year></PubDate></JournalIssue></Journal>\n"
        f"<ArticleTitle>{escape(doc.title)}</ArticleTitle>\n"
        f"<Abstract><AbstractText>{escape(doc.abstract)}</AbstractText></Abstract>\n"
        f"<Language>eng</Language><PublicationTypeList>{pt}</PublicationTypeList></Article>\n"
        f"<MeshHeadingList>{mesh}</MeshHeadingList></MedlineCitation>\n"
        "</PubmedArticle>\n"
    )


def write_medline(docs: Iterable[Doc], path: Path, *, compress: bool = False) -> int:
    """Write ``docs`` as one PubMed/MEDLINE XML file (gzip when ``compress``); return the citation count."""
    opener: Any = gzip.open if compress else open
    n = 0
    with opener(path, "wt", encoding="utf-8") as fh:
        fh.write(f'<?xml version="1.0" encoding="utf-8"?>\n{DOCTYPE}\n<PubmedArticleSet>\n')
        for d in docs:
            fh.write(citation_xml(d))
            n += 1
        fh.write("</PubmedArticleSet>\n")
    return n


# --------------------------------------------------------------------------- projections


def project(citations: int, core_s_per_abstract: float, price_per_core_hour: float) -> dict[str, float]:
    """Core-hours and cost of ``citations`` at ``core_s_per_abstract`` core-seconds each.

    >>> project(36_000, 0.1, 0.05)
    {'citations': 36000, 'core_hours': 1.0, 'cost_usd': 0.05}
    """
    core_hours = citations * core_s_per_abstract / 3600
    return {"citations": citations, "core_hours": round(core_hours, 2), "cost_usd": round(core_hours * price_per_core_hour, 2)}


def core_s_per_abstract(n: int, batch_wall_s: float, workers: int, summarize_wall_s: float = 0.0) -> float:
    """Core-seconds per abstract of a run: ``(batch wall x workers + summary wall) / n``.

    >>> core_s_per_abstract(100, 5.0, 2, 1.0)
    0.11
    """
    return (batch_wall_s * workers + summarize_wall_s) / n


# --------------------------------------------------------------------------- memory sampling


def _proc_tree(pid: int) -> dict[int, tuple[int, str]]:
    """``{pid: (rss bytes, cmdline)}`` of ``pid`` and its descendants (psutil, else /proc)."""
    try:
        import psutil
    except ImportError:
        return _proc_tree_proc(pid)
    out: dict[int, tuple[int, str]] = {}
    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.Error:
        return out
    for p in procs:
        try:
            out[p.pid] = (p.memory_info().rss, " ".join(p.cmdline()))
        except psutil.Error:
            continue
    return out


def _proc_tree_proc(pid: int) -> dict[int, tuple[int, str]]:
    parent: dict[int, int] = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                stat = (d / "stat").read_text()
                parent[int(d.name)] = int(stat[stat.rindex(")") + 2 :].split()[1])
            except (OSError, ValueError):
                continue
    tree, todo = {pid}, [pid]
    while todo:
        p = todo.pop()
        kids = [c for c, pp in parent.items() if pp == p]
        tree.update(kids)
        todo += kids
    out: dict[int, tuple[int, str]] = {}
    for p in tree:
        try:
            rss = next(int(line.split()[1]) * 1024 for line in Path(f"/proc/{p}/status").read_text().splitlines()
                       if line.startswith("VmRSS:"))
            cmd = Path(f"/proc/{p}/cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace").strip()
            out[p] = (rss, cmd)
        except (OSError, StopIteration, ValueError):
            continue
    return out


class RssSampler(threading.Thread):
    """Samples a process tree's resident memory every ``interval`` s; keeps each pid's peak and cmdline."""

    def __init__(self, pid: int, interval: float) -> None:
        super().__init__(daemon=True)
        self.pid, self.interval = pid, interval
        self.peak: dict[int, int] = {}
        self.cmd: dict[int, str] = {}
        self.samples: list[frozenset[int]] = []
        self._stop_event = threading.Event()

    def run(self) -> None:
        while not self._stop_event.is_set():
            tree = _proc_tree(self.pid)
            for p, (rss, cmd) in tree.items():
                self.peak[p] = max(self.peak.get(p, 0), rss)
                self.cmd.setdefault(p, cmd)
            self.samples.append(frozenset(tree))
            self._stop_event.wait(self.interval)

    def stop(self) -> None:
        self._stop_event.set()
        self.join()

    def figures(self, workers: int) -> dict[str, Any]:
        """Peak RSS (MB) of the main process and of each worker process (see the module notes)."""
        mb = {p: v / 2**20 for p, v in self.peak.items()}
        main = mb.get(self.pid, 0.0)
        kids: list[int] = [self.pid]
        if workers <= 1:
            per = [main]
        else:
            kids = [p for p in mb if p != self.pid and "resource_tracker" not in self.cmd.get(p, "")]
            spawned = [p for p in kids if "spawn_main" in self.cmd.get(p, "") or "forkserver" in self.cmd.get(p, "")]
            kids = spawned or kids
            per = [mb[p] for p in kids]
        alive = max((len(s & set(kids)) for s in self.samples), default=0) if workers > 1 else 1
        return {"peak_rss_mb_per_worker": round(max(per), 1) if per else None,
                "peak_rss_mb_workers": sorted(round(v, 1) for v in per),
                "peak_rss_mb_main": round(main, 1), "worker_processes_seen": len(per),
                "max_concurrent_workers": alive}


# --------------------------------------------------------------------------- the runs


def run_clinex(args: Sequence[str], *, sample_s: float | None = None, workers: int = 1) -> dict[str, Any]:
    """Run ``clinex ARGS``; wall time, exit status, stderr tail and (with ``sample_s``) RSS figures."""
    t0 = time.perf_counter()
    proc = subprocess.Popen([*CLINEX, *map(str, args)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            env=dict(os.environ, CLINEX_PROGRESS="0"))
    sampler = RssSampler(proc.pid, sample_s) if sample_s else None
    if sampler:
        sampler.start()
    _, err = proc.communicate()
    wall = time.perf_counter() - t0
    out: dict[str, Any] = {"wall_s": wall, "rc": proc.returncode, "stderr": err.decode("utf-8", "replace")[-2000:]}
    if sampler:
        sampler.stop()
        out.update(sampler.figures(workers))
    return out


def has_summarize() -> bool:
    """True when this clinex has ``clinex pv summarize``."""
    res = subprocess.run([*CLINEX, "pv", "summarize", "--help"], capture_output=True, env=dict(os.environ, CLINEX_PROGRESS="0"))
    return res.returncode == 0


def results_digest(run: Path) -> tuple[int, str]:
    """Rows of ``RUN/results.parquet`` and an MD5 over their ids and events (order-free)."""
    import duckdb

    con = duckdb.connect()
    try:
        row = con.execute(
            "SELECT count(*), md5(string_agg(id || chr(31) || coalesce(phee_json, ''), chr(30) ORDER BY id)) "
            "FROM read_parquet(?)", [str(run / "results.parquet")]).fetchone()
    finally:
        con.close()
    return int(row[0]), str(row[1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=2000, help="citations in the MEDLINE file (default 2000)")
    ap.add_argument("--workers-list", default="1,2", help="comma-separated --workers values (default 1,2)")
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA, help="folder of the BC5CDR PubTator files")
    ap.add_argument("--gzip", action="store_true", help="write the MEDLINE file as .xml.gz (as NLM ships it)")
    ap.add_argument("--partition-size", type=int, default=None, help="passed to clinex batch (default: its own)")
    ap.add_argument("--model", default=None, help="passed to clinex batch --model (default: its own, auto)")
    ap.add_argument("--price-per-core-hour", type=float, default=DEFAULT_PRICE,
                    help=f"USD per core-hour for the projection (default {DEFAULT_PRICE}: an assumption)")
    ap.add_argument("--sample-s", type=float, default=0.1, help="RSS sampling interval in seconds (default 0.1)")
    ap.add_argument("--out-dir", type=Path, default=None, help="where to write the XML and runs (default: a temp folder)")
    ap.add_argument("--keep", action="store_true", help="keep the XML file and run folders")
    ap.add_argument("--quick", action="store_true", help="smoke run: --n 100 --partition-size 25")
    args = ap.parse_args()
    if args.quick:
        args.n = 100
        args.partition_size = args.partition_size or 25
    try:
        workers_list = [int(w) for w in args.workers_list.split(",") if w.strip()]
    except ValueError:
        ap.error(f"--workers-list must be comma-separated whole numbers, got {args.workers_list!r}")
    if args.n < 1 or not workers_list or min(workers_list) < 1:
        ap.error("--n and every --workers-list value must be >= 1")

    docs = load_bc5cdr(args.data)
    if args.out_dir is not None:
        args.out_dir.mkdir(parents=True, exist_ok=True)
        base = Path(tempfile.mkdtemp(prefix="pv_medline-", dir=args.out_dir))
    else:
        base = Path(tempfile.mkdtemp(prefix="clinex-bench-pv_medline-"))
    try:
        xml = base / ("medline.xml.gz" if args.gzip else "medline.xml")
        t0 = time.perf_counter()
        n = write_medline(plan(docs, args.n), xml, compress=args.gzip)
        build_s = time.perf_counter() - t0
        repeats = max(0, n - len(docs))
        print(f"MEDLINE file {xml.name}: {n} citations from {len(docs)} BC5CDR train+dev abstracts"
              + (f" ({repeats} are repeats under new PMIDs, +{PMID_STRIDE:,} per cycle)" if repeats else "")
              + f"; {xml.stat().st_size / 2**20:.1f} MB, built in {build_s:.1f} s")
        summarize = has_summarize()
        if not summarize:
            print("note: this clinex has no `clinex pv summarize`; the summary stage is skipped and the pipeline "
                  "figures are the batch's")

        runs: dict[int, dict[str, Any]] = {}
        digests: dict[int, tuple[int, str]] = {}
        for k in workers_list:
            out = base / f"run-w{k}"
            cmd = ["batch", "pv", str(xml), "-o", str(out), "--workers", str(k)]
            if args.partition_size:
                cmd += ["--partition-size", str(args.partition_size)]
            if args.model:
                cmd += ["--model", args.model]
            b = run_clinex(cmd, sample_s=args.sample_s, workers=k)
            if b["rc"] not in (0, 1):
                sys.exit(f"clinex {' '.join(cmd)} exited {b['rc']}: {b['stderr']}")
            manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
            digests[k] = results_digest(out)
            s_wall = 0.0
            s_note = "skipped: no `clinex pv summarize` in this clinex"
            if summarize:
                s = run_clinex(["pv", "summarize", str(out)])
                if s["rc"] != 0:
                    sys.exit(f"clinex pv summarize {out} exited {s['rc']}: {s['stderr']}")
                s_wall, s_note = s["wall_s"], "ran"
            pipe = b["wall_s"] + s_wall
            runs[k] = {
                "wall_s": {"batch": round(b["wall_s"], 2), "summarize": round(s_wall, 2) if summarize else None,
                           "pipeline": round(pipe, 2)},
                "abstracts_per_s": {"pipeline": round(n / pipe, 2), "batch": round(n / b["wall_s"], 2)},
                "abstracts_per_s_per_worker": {"pipeline": round(n / pipe / k, 2), "batch": round(n / b["wall_s"] / k, 2)},
                **{key: b[key] for key in ("peak_rss_mb_per_worker", "peak_rss_mb_workers", "peak_rss_mb_main",
                                           "worker_processes_seen", "max_concurrent_workers")},
                "core_s_per_abstract": round(core_s_per_abstract(n, b["wall_s"], k, s_wall), 5),
                "batch_rc": b["rc"], "n_rows": manifest.get("n_rows"), "n_errors": manifest.get("n_errors"),
                "model": manifest.get("model"), "summarize": s_note,
            }
            r = runs[k]
            print(f"workers {k}: batch {r['wall_s']['batch']:.1f} s ({r['abstracts_per_s']['batch']:.2f} abstracts/s), "
                  f"summarize {s_wall:.1f} s, pipeline {pipe:.1f} s ({r['abstracts_per_s']['pipeline']:.2f} abstracts/s, "
                  f"{r['abstracts_per_s_per_worker']['pipeline']:.2f} per worker); peak RSS per worker "
                  f"{r['peak_rss_mb_per_worker']} MB (main {r['peak_rss_mb_main']} MB; {r['worker_processes_seen']} worker "
                  f"process(es), at most {r['max_concurrent_workers']} at once); rows {r['n_rows']}, "
                  f"errors {r['n_errors']}, batch exit {b['rc']}")

        ref = min(workers_list)
        for k, r in runs.items():
            r["speedup"] = {key: round(runs[ref]["wall_s"][key] / r["wall_s"][key], 3) for key in ("pipeline", "batch")}
        first = digests[workers_list[0]]
        same = all(d == first for d in digests.values())
        top = max(workers_list)
        rate = runs[top]["core_s_per_abstract"]
        projections = {
            "core_s_per_abstract": rate, "based_on_workers": top,
            "price_per_core_hour_usd": args.price_per_core_hour, "price_is_assumption": True,
            "citation_counts_source": STATS_SOURCE + " (2025 baseline; approximate)",
            **{name: project(c, rate, args.price_per_core_hour) for name, c in CITATIONS.items()},
        }
        for k, r in runs.items():
            print(f"workers {k}: speed-up over {ref} worker(s): pipeline {r['speedup']['pipeline']:.2f}x, "
                  f"batch {r['speedup']['batch']:.2f}x")
        print(f"results equal across worker counts: {same}")
        print(f"projection at {rate:.4f} core-s per abstract (workers {top}, pipeline) and "
              f"{args.price_per_core_hour} USD per core-hour (assumed): "
              + "; ".join(f"{name} ({p['citations']:,} citations, approximate) {p['core_hours']:,.0f} core-hours, "
                          f"{p['cost_usd']:,.0f} USD" for name, p in
                          ((nm, projections[nm]) for nm in CITATIONS)))
        if args.keep:
            print(f"kept: {base}")
        summary = {
            "bench": "pv_medline", "n": n, "n_source_abstracts": len(docs), "n_repeats_new_pmids": repeats,
            "gzip": args.gzip, "xml_mb": round(xml.stat().st_size / 2**20, 2), "build_s": round(build_s, 2),
            "partition_size": args.partition_size, "clinex_threads": os.environ.get("CLINEX_THREADS"),
            "summarize": "ran" if summarize else "skipped (no `clinex pv summarize`)",
            "workers": {str(k): r for k, r in runs.items()}, "same_results": same,
            "projections": projections, "targets": TARGETS, "quick": args.quick,
        }
    finally:
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)
    sys.stdout.flush()
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
