"""robvis data: one row per trial, the robvis CSV, weights files and summary shares.

robvis (McGuinness & Higgins 2021) reads a RoB 2 table with the columns
``Study,D1,D2,D3,D4,D5,Overall,Weight`` and the judgements spelled ``Low``,
``Some concerns`` and ``High`` (its ROB2 template). :func:`write_robvis_csv`
writes that table (UTF-8, comma separated, ``\\n`` line ends, quoting only where
the csv module needs it) and :func:`read_robvis_csv` reads it back.

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
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    study: str
    domains: tuple[RiskLevel, RiskLevel, RiskLevel, RiskLevel, RiskLevel]
    overall: RiskLevel
    weight: float = Field(default=1.0, gt=0.0, allow_inf_nan=False)


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
                              overall=a.overall, weight=weights.get(name, 1.0)))
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


def read_robvis_csv(path: str | Path) -> list[RobvisRow]:
    """Read a table written by :func:`write_robvis_csv`.

    The header must be :data:`ROBVIS_HEADER` (the ``Weight`` column may be left
    out: every study then weighs 1).

    Raises
    ------
    InputError
        If the file does not exist.
    FormatError
        Wrong header, wrong number of fields, a judgement other than ``Low``,
        ``Some concerns``, ``High``, or a weight that is not a positive number; the
        message names the file, line and column.
    """
    p = Path(path)
    records = iter(_records(p))
    first = next(records, None)
    if first is None:
        raise FormatError("empty file, expected the header " + ",".join(ROBVIS_HEADER), path=p)
    line, header = first
    header = [h.strip() for h in header]
    if header not in (list(ROBVIS_HEADER), list(ROBVIS_HEADER[:-1])):
        raise FormatError(f"header {','.join(header)!r}, expected {','.join(ROBVIS_HEADER)!r}",
                          path=p, line=line)
    rows = []
    for line, fields in records:
        if len(fields) != len(header):
            raise FormatError(f"{len(fields)} fields, expected {len(header)}", path=p, line=line)
        values = dict(zip(header, (f.strip() for f in fields)))
        for col in header[1:7]:
            if values[col] not in RISKS:
                raise FormatError(f"{values[col]!r} not in {', '.join(RISKS)}", path=p, line=line,
                                  field=col)
        weight = _positive(values["Weight"], p, line, "Weight") if "Weight" in values else 1.0
        rows.append(RobvisRow(study=values["Study"], domains=tuple(values[d] for d in _DOMAIN_IDS),
                              overall=values["Overall"], weight=weight))
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
