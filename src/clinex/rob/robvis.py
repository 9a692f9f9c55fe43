"""robvis data: one row per trial, the robvis CSV, weights files and summary shares.

robvis (McGuinness & Higgins 2021) reads a RoB 2 table with the columns
``Study,D1,D2,D3,D4,D5,Overall,Weight`` and the judgements spelled ``Low``,
``Some concerns`` and ``High`` (its ROB2 template). :func:`write_robvis_csv`
writes that table (UTF-8, comma separated, ``\\n`` line ends, quoting only where
the csv module needs it) and :func:`read_robvis_csv` reads it back, and reads the
tables reviewers write by hand: judgements in any case, ``No information``, and an
Overall column that is checked against the RoB 2 overall rule.

An overall judgement that ``--multiple-some-concerns-high`` raised to High is
written as plain ``High``, so that robvis reads the file as it reads any other; the
rule that raised it is in the JSON (``overall_rule``), the HTML report, the CLI
listing and the traffic-light plot's footnote. Read back, a ``High`` over domains
that are only Some concerns (two or more) is kept as the reviewer's judgement, with
the note :data:`REVIEWER_RAISED_NOTE`: RoB 2 lets a reviewer judge such a trial High.

A *weights file* (:func:`read_weights`) is a CSV with a header row holding the
columns ``study`` and ``weight`` (any case; other columns are ignored, so an edited
``robvis.csv`` can be passed back); each weight is a positive number, a study not
listed weighs 1.

:func:`summary_percentages` gives the numbers behind the robvis summary bar chart
(:func:`clinex.rob.plot.plot_summary`): per domain and overall, the weighted share
of trials judged Low / Some concerns / High, in percent.

References
----------
Sterne JAC et al. RoB 2: a revised tool for assessing risk of bias in randomised
trials. BMJ 2019;366:l4898.
McGuinness LA, Higgins JPT. Risk-of-bias VISualization (robvis). Res Synth Methods
2021;12:55-61.
"""

from __future__ import annotations

import csv
import io
import math
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from clinex.errors import FormatError, InputError
from clinex.io.textfile import read_text
from clinex.rob.report import _write_text
from clinex.rob.schema import DOMAINS
from clinex.rob.types import RiskLevel, TrialAssessment

__all__ = [
    "ROBVIS_HEADER",
    "RISKS",
    "RobvisRow",
    "robvis_rows",
    "write_robvis_csv",
    "read_robvis_csv",
    "NO_INFORMATION_NOTE",
    "REVIEWER_RAISED_NOTE",
    "read_weights",
    "summary_percentages",
]

#: Header of the robvis RoB 2 table, exactly as written.
ROBVIS_HEADER: tuple[str, ...] = ("Study", *(d.id for d in DOMAINS), "Overall", "Weight")

#: The judgements in robvis' order (best first).
RISKS: tuple[str, ...] = ("Low", "Some concerns", "High")

_DOMAIN_IDS = tuple(d.id for d in DOMAINS)


class RobvisRow(BaseModel):
    """One trial of the robvis table.

    Attributes
    ----------
    study : str
        The trial's label (the output id, as the traffic-light plot uses).
    domains : tuple of RiskLevel
        Judgements of D1..D5, in order (five).
    overall : RiskLevel
    weight : float, default 1.0
        Positive; robvis weights the summary plot by it.
    overall_rule : str or None
        The rule that raised ``overall`` beyond the plain RoB 2 rule
        (:attr:`clinex.rob.types.TrialAssessment.overall_rule`); written after the
        Overall judgement in parentheses.
    notes : tuple of str
        What :func:`read_robvis_csv` decided for this row and why: a domain read
        from ``No information``, an Overall in the file that the RoB 2 rule does not
        give. Not written to the CSV.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    study: str
    domains: tuple[RiskLevel, RiskLevel, RiskLevel, RiskLevel, RiskLevel]
    overall: RiskLevel
    weight: float = Field(default=1.0, gt=0.0, allow_inf_nan=False)
    overall_rule: str | None = None
    notes: tuple[str, ...] = ()


def robvis_rows(
    assessments: Sequence[TrialAssessment],
    labels: Sequence[str] | None = None,
    weights: Mapping[str, float] | None = None,
) -> list[RobvisRow]:
    """One :class:`RobvisRow` per assessment, in order.

    Parameters
    ----------
    assessments : sequence of TrialAssessment
    labels : sequence of str, optional
        Study labels, one per assessment; default the document ids.
    weights : mapping of str to float, optional
        Weight by label (e.g. from :func:`read_weights`); labels not in it weigh 1.

    Raises
    ------
    InputError
        If the number of labels differs from the number of assessments, or an
        assessment lacks one of the domains D1..D5 (field ``domains``).
    """
    names = [a.document_id for a in assessments] if labels is None else [str(x) for x in labels]
    if len(names) != len(assessments):
        raise InputError(f"{len(names)} labels for {len(assessments)} assessments", field="labels")
    weights = weights or {}
    rows = []
    for name, a in zip(names, assessments):
        risks = {d.domain: d.risk for d in a.domains}
        missing = [d for d in _DOMAIN_IDS if d not in risks]
        if missing:
            raise InputError(f"study {name!r} has no judgement for {', '.join(missing)}",
                             field="domains")
        rows.append(RobvisRow(study=name, domains=tuple(risks[d] for d in _DOMAIN_IDS),
                              overall=a.overall, weight=weights.get(name, 1.0),
                              overall_rule=a.overall_rule))
    return rows


def _number(w: float) -> str:
    """``1`` for whole numbers, else the shortest text that reads back as ``w``."""
    return str(int(w)) if float(w).is_integer() else repr(float(w))


def write_robvis_csv(rows: Iterable[RobvisRow], path: str | Path) -> Path:
    """Write the robvis RoB 2 table (header :data:`ROBVIS_HEADER`, one row per trial).

    Parameters
    ----------
    rows : iterable of RobvisRow
        In the order to write (see :func:`robvis_rows`).
    path : str or Path
        Destination ``.csv``; parent folders are created; written atomically.

    Returns
    -------
    Path
        ``path``.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> row = RobvisRow(study="trial", domains=("Low",) * 4 + ("High",), overall="High")
    >>> p = write_robvis_csv([row], pathlib.Path(tempfile.mkdtemp()) / "robvis.csv")
    >>> print(p.read_text(encoding="utf-8"), end="")
    Study,D1,D2,D3,D4,D5,Overall,Weight
    trial,Low,Low,Low,Low,High,High,1
    """
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(ROBVIS_HEADER)
    for r in rows:
        writer.writerow([r.study, *r.domains, r.overall, _number(r.weight)])
    return _write_text(Path(path), buf.getvalue())


def _records(path: Path) -> Iterable[tuple[int, list[str]]]:
    """(1-based line, fields) of each non-blank CSV record of a UTF-8 file."""
    reader = csv.reader(io.StringIO(read_text(path), newline=""))
    try:
        for fields in reader:
            if any(f.strip() for f in fields):
                yield reader.line_num, fields
    except csv.Error as exc:
        raise FormatError(f"not valid CSV: {exc}", path=path, line=reader.line_num) from None


def _positive(text: str, path: Path, line: int, field: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise FormatError(f"{text.strip()!r} is not a positive number", path=path, line=line,
                          field=field)
    return value


#: Judgements as robvis' ROB2 template spells them (``get_judgements`` in robvis'
#: ``R/helpers.R``), compared case-insensitively with runs of spaces as one, and the
#: RoB 1 / "Generic" spelling ``Unclear``; ``None`` stands for No information.
_JUDGEMENTS: dict[str, RiskLevel | None] = {
    "low": "Low",
    "some concerns": "Some concerns",
    "high": "High",
    "no information": None,
    "ni": None,
    "unclear": None,
}
_SPELLINGS = "Low, Some concerns, High, No information (any case)"
#: What a domain judged "No information" counts as, and why.
NO_INFORMATION_NOTE = (
    "No information, read as Some concerns: RoB 2 judges a domain Low, Some concerns or High "
    "only; Low needs information that the trial was sound and High needs a reason to doubt it, "
    "so a domain that could not be judged is Some concerns (Sterne et al., BMJ 2019, table 2)"
)
_NOTE = re.compile(r"\s*\((.*)\)\s*$", re.S)
_RAISED_AT = re.compile(r"^raised to High: .*at least (\d+) asked for")

#: The note of a row whose file says High where D1-D5 hold no High but two or more
#: Some concerns: RoB 2 (Sterne et al., BMJ 2019, table 2) lets the reviewer judge
#: such a trial High, so the file's judgement is kept.
REVIEWER_RAISED_NOTE = (
    "High as the file says: {k} domains with Some concerns ({ids}); RoB 2 lets a reviewer judge "
    "the result High when some concerns in multiple domains lower confidence in it substantially "
    "(Sterne et al., BMJ 2019, table 2)"
)


def _judgement(text: str, path: Path, line: int, field: str) -> tuple[RiskLevel | None, str | None]:
    """(judgement or None for No information, the note in parentheses after it or None)."""
    note = _NOTE.search(text)
    word = text[: note.start()] if note else text
    key = " ".join(word.split()).casefold()
    if key not in _JUDGEMENTS:
        raise FormatError(f"{word.strip()!r} not in {_SPELLINGS}", path=path, line=line, field=field)
    return _JUDGEMENTS[key], (note.group(1).strip() or None) if note else None


def read_robvis_csv(path: str | Path, *, multiple_some_concerns_high: int | None = None) -> list[RobvisRow]:
    """Read a robvis RoB 2 table (one written by :func:`write_robvis_csv`, or by hand).

    The header must be :data:`ROBVIS_HEADER` (any case; the ``Weight`` column may be
    left out: every study then weighs 1). Judgements are read in any case, with the
    spellings of robvis' ROB2 template: ``Low``, ``Some concerns``, ``High``, ``No
    information`` (also ``NI`` and ``Unclear``); text in parentheses after a
    judgement is a note (``High (raised to High: ...)``, as written for
    ``--multiple-some-concerns-high``).

    Each row is decided as a reviewer would:

    * a domain judged **No information** counts as **Some concerns**
      (:data:`NO_INFORMATION_NOTE`: RoB 2 has no such domain judgement), and the
      row's ``notes`` say so;
    * the **overall judgement is recomputed** from D1-D5 with the RoB 2 rule
      (:func:`clinex.rob.algorithm.overall_judgement`: any High → High, all Low →
      Low, else Some concerns; High when at least ``multiple_some_concerns_high``
      domains are Some concerns, or the threshold a ``raised to High`` note in the
      file names). A file's ``High`` over two or more Some concerns and no High is
      kept, as the reviewer's judgement RoB 2 allows (``overall_rule`` is then
      :data:`REVIEWER_RAISED_NOTE`). Where the file's Overall differs otherwise,
      ``notes`` name both.

    Parameters
    ----------
    path : str or Path
    multiple_some_concerns_high : int or None, default None
        As in :func:`clinex.rob.algorithm.overall_judgement` (>= 2), for every row.

    Returns
    -------
    list of RobvisRow
        In file order; ``overall`` is the recomputed judgement, ``overall_rule`` set
        where the threshold raised it, ``notes`` what else was decided.

    Raises
    ------
    InputError
        If the file does not exist.
    FormatError
        Wrong header, wrong number of fields, a judgement not among the spellings
        above, or a weight that is not a positive number; the message names the
        file, line and column.

    References
    ----------
    Sterne JAC et al., BMJ 2019;366:l4898, table 2 (overall judgement); robvis
    (McGuinness & Higgins 2021), ``R/helpers.R`` ``get_judgements`` and
    ``clean_data`` (judgement spellings, read case-insensitively).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "r.csv"
    >>> _ = p.write_text("Study,D1,D2,D3,D4,D5,Overall\\nt,low,LOW,some concerns,Low,low,Low\\n")
    >>> row = read_robvis_csv(p)[0]
    >>> row.overall, row.notes
    ('Some concerns', ("Overall: the file says 'Low'; the RoB 2 overall rule gives 'Some concerns' from D1-D5",))
    """
    from clinex.rob.algorithm import overall_judgement

    p = Path(path)
    records = iter(_records(p))
    first = next(records, None)
    if first is None:
        raise FormatError("empty file, expected the header " + ",".join(ROBVIS_HEADER), path=p)
    line, header = first
    header = [h.strip() for h in header]
    folded = [h.casefold() for h in header]
    if folded not in ([h.casefold() for h in ROBVIS_HEADER], [h.casefold() for h in ROBVIS_HEADER[:-1]]):
        raise FormatError(f"header {','.join(header)!r}, expected {','.join(ROBVIS_HEADER)!r}",
                          path=p, line=line)
    header = list(ROBVIS_HEADER[: len(header)])
    rows = []
    for line, fields in records:
        if len(fields) != len(header):
            raise FormatError(f"{len(fields)} fields, expected {len(header)}", path=p, line=line)
        values = dict(zip(header, (f.strip() for f in fields)))
        notes: list[str] = []
        domains: list[RiskLevel] = []
        for col in _DOMAIN_IDS:
            risk, _ = _judgement(values[col], p, line, col)
            if risk is None:
                notes.append(f"{col}: {NO_INFORMATION_NOTE}")
                risk = "Some concerns"
            domains.append(risk)
        file_overall, file_note = _judgement(values["Overall"], p, line, "Overall")
        raised = _RAISED_AT.match(file_note or "")
        threshold = multiple_some_concerns_high or (int(raised.group(1)) if raised else None)
        overall, rule = overall_judgement(dict(zip(_DOMAIN_IDS, domains)), multiple_some_concerns_high=threshold)
        concerns = [d for d, r in zip(_DOMAIN_IDS, domains) if r == "Some concerns"]
        if file_overall == "High" and overall == "Some concerns" and len(concerns) >= 2:
            overall = "High"
            rule = REVIEWER_RAISED_NOTE.format(k=len(concerns), ids=", ".join(concerns))
        if file_overall != overall:
            said = "No information" if file_overall is None else file_overall
            notes.append(f"Overall: the file says {said!r}; the RoB 2 overall rule gives {overall!r} from D1-D5")
        weight = _positive(values["Weight"], p, line, "Weight") if "Weight" in values else 1.0
        rows.append(RobvisRow(study=values["Study"], domains=tuple(domains), overall=overall, weight=weight,
                              overall_rule=rule, notes=tuple(notes)))
    return rows


def read_weights(path: str | Path, studies: Collection[str] | None = None) -> dict[str, float]:
    """Read a weights file: study label -> weight.

    Parameters
    ----------
    path : str or Path
        CSV with a header row holding ``study`` and ``weight`` (any case, other
        columns ignored); one row per study.
    studies : collection of str, optional
        The labels of the run; a row naming any other study is an error.

    Returns
    -------
    dict of str to float
        Weights of the listed studies, in file order (unlisted studies weigh 1).

    Raises
    ------
    InputError
        If the file does not exist, or (field ``study``) a study is not in
        ``studies``; the message lists the known studies.
    FormatError
        No ``study`` / ``weight`` column, a study listed twice or empty, or
        (field ``weight``) a weight that is not a positive number; the message
        names the file and line.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "w.csv"
    >>> _ = p.write_text("study,weight\\ntrial,2.5\\n", encoding="utf-8")
    >>> read_weights(p, studies={"trial", "trial-2"})
    {'trial': 2.5}
    """
    p = Path(path)
    records = iter(_records(p))
    first = next(records, None)
    if first is None:
        raise FormatError("empty file, expected a header with the columns study,weight", path=p)
    line, header = first
    lower = [h.strip().lower() for h in header]
    for col in ("study", "weight"):
        if col not in lower:
            raise FormatError(f"no column {col!r} in the header (expected study,weight)",
                              path=p, line=line)
    i_study, i_weight = lower.index("study"), lower.index("weight")
    out: dict[str, float] = {}
    seen: dict[str, int] = {}
    for line, fields in records:
        if len(fields) <= max(i_study, i_weight):
            raise FormatError(f"{len(fields)} fields, expected at least {max(i_study, i_weight) + 1}",
                              path=p, line=line)
        study = fields[i_study].strip()
        if not study:
            raise FormatError("empty study", path=p, line=line, field="study")
        if study in seen:
            raise FormatError(f"study {study!r} listed twice (first on line {seen[study]})",
                              path=p, line=line, field="study")
        if studies is not None and study not in studies:
            known = sorted(studies)
            shown = ", ".join(known[:10]) + (f", ... ({len(known)} in all)" if len(known) > 10 else "")
            raise InputError(f"unknown study {study!r}; the studies of this run are: {shown}",
                             path=p, line=line, field="study")
        seen[study] = line
        out[study] = _positive(fields[i_weight], p, line, "weight")
    return out


def summary_percentages(
    rows: Sequence[RobvisRow | TrialAssessment],
    weights: Sequence[float] | None = None,
) -> dict[str, dict[str, float]]:
    """Weighted share of trials per judgement, for each domain and overall.

    Parameters
    ----------
    rows : sequence of RobvisRow or TrialAssessment
        At least one.
    weights : sequence of float, optional
        One positive weight per row; default each row's ``weight`` (1 for a
        TrialAssessment).

    Returns
    -------
    dict
        ``{"D1": {"Low": %, "Some concerns": %, "High": %}, ..., "D5": ..., "Overall": ...}``;
        each inner dict has all three judgements (0.0 when none) and sums to 100.

    Raises
    ------
    InputError
        No rows, a weights count that differs from the rows, a weight that is not
        positive, or a trial without one of the domains.

    Examples
    --------
    >>> low = RobvisRow(study="a", domains=("Low",) * 5, overall="Low")
    >>> high = RobvisRow(study="b", domains=("High",) * 5, overall="High", weight=3)
    >>> summary_percentages([low, high])["Overall"]
    {'Low': 25.0, 'Some concerns': 0.0, 'High': 75.0}
    """
    if not rows:
        raise InputError("no trials to summarise", field="rows")
    data = [r if isinstance(r, RobvisRow) else robvis_rows([r])[0] for r in rows]
    w = [r.weight for r in data] if weights is None else [float(x) for x in weights]
    if len(w) != len(data):
        raise InputError(f"{len(w)} weights for {len(data)} trials", field="weights")
    if not all(math.isfinite(x) and x > 0 for x in w):
        raise InputError("weights must be positive numbers", field="weights")
    total = math.fsum(w)
    out: dict[str, dict[str, float]] = {}
    for i, key in enumerate((*_DOMAIN_IDS, "Overall")):
        judged = [r.overall if key == "Overall" else r.domains[i] for r in data]
        out[key] = {risk: 100.0 * math.fsum(x for x, j in zip(w, judged) if j == risk) / total
                    for risk in RISKS}
    return out
