"""robvis-style plots of RoB 2 assessments (matplotlib, Agg backend).

:func:`plot_traffic_light`: one row per trial, one column per domain D1..D5 plus
Overall; each cell is a coloured circle with a symbol: green ``+`` Low, yellow ``!``
Some concerns, red ``-`` High. A legend under the grid spells out the domain names and judgements.

:func:`plot_summary`: the weighted summary bar chart, one horizontal bar per domain
(D1..D5 with their short names) and one for the overall judgement, each split into
the weighted percentage of trials judged Low / Some concerns / High
(:func:`clinex.rob.robvis.summary_percentages`).

Each figure is drawn on a :class:`matplotlib.figure.Figure` with the Agg canvas,
so no GUI backend and no global pyplot state are involved.

References
----------
McGuinness LA, Higgins JPT. Risk-of-bias VISualization (robvis): an R package and
Shiny web app for visualizing risk-of-bias assessments. Res Synth Methods
2021;12:55-61 (layout and "cochrane" colour palette of the traffic-light and
summary plots).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from clinex.errors import InputError
from clinex.io.atomic import atomic_path
from clinex.rob.robvis import RISKS, RobvisRow, summary_percentages
from clinex.rob.schema import DOMAINS
from clinex.rob.types import TrialAssessment

__all__ = ["plot_traffic_light", "plot_summary", "SYMBOLS"]

#: Symbol drawn in each judgement's circle.
SYMBOLS = {"Low": "+", "Some concerns": "!", "High": "-"}
_COLOURS = {"Low": "#02C100", "Some concerns": "#E2DF07", "High": "#BF0000"}
_DRAWN = {"Low": "+", "Some concerns": "!", "High": "\u2212"}  # a minus sign reads better than "-"
_MAX_LABEL = 40


def _label(text: str) -> str:
    """Shorten long ids in the middle, keeping both ends (ids often differ at the end)."""
    if len(text) <= _MAX_LABEL:
        return text
    head = (_MAX_LABEL - 1) // 3
    return text[:head] + "\u2026" + text[-(_MAX_LABEL - 1 - head) :]


def plot_traffic_light(
    assessments: Sequence[TrialAssessment],
    path_png: str | Path,
    path_svg: str | Path | None = None,
    *,
    dpi: int = 150,
    title: str = "Risk of bias (RoB 2)",
    labels: Sequence[str] | None = None,
) -> tuple[Path, Path | None]:
    """Draw the traffic-light plot of one or many trials and save it as PNG and SVG.

    Parameters
    ----------
    assessments : sequence of TrialAssessment
        One row each, in the given order; at least one.
    path_png : str or Path
        PNG destination (raster, ``dpi`` dots per inch); parent folders are created.
    path_svg : str or Path or None, optional
        SVG destination (vector); None to skip.
    dpi : int, default 150
        Resolution of the PNG.
    title : str, default "Risk of bias (RoB 2)"
    labels : sequence of str, optional
        Row labels, one per assessment (e.g. the output file ids ``trial``,
        ``trial-2`` when two inputs share a document id); default the document ids.

    Returns
    -------
    (Path, Path or None)
        The PNG and SVG paths written.

    Raises
    ------
    InputError
        If ``assessments`` is empty, or a file cannot be written (the operating
        system's reason; :func:`clinex.io.atomic.atomic_path`).

    References
    ----------
    McGuinness & Higgins, Res Synth Methods 2021 (robvis traffic-light layout).
    """
    if not assessments:
        raise InputError("no assessments to plot", field="assessments")
    names = [a.document_id for a in assessments] if labels is None else [str(x) for x in labels]
    if len(names) != len(assessments):
        raise InputError(f"{len(names)} labels for {len(assessments)} assessments", field="labels")
    import matplotlib
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    columns = [d.id for d in DOMAINS] + ["Overall"]
    n = len(assessments)
    label_w = min(max(len(_label(x)) for x in names), _MAX_LABEL) * 0.09
    width = max(7.5, 1.2 + label_w + 0.75 * len(columns) + 0.5)
    height = 1.0 + 0.55 * n + 1.3

    with matplotlib.rc_context({"svg.hashsalt": "clinex-rob", "svg.fonttype": "path"}):
        fig = Figure(figsize=(width, height), dpi=dpi, layout="constrained")
        FigureCanvasAgg(fig)
        grid_ax, legend_ax = fig.subplots(
            2, 1, height_ratios=[0.55 * n + 0.8, 1.3], gridspec_kw={"hspace": 0.02}
        )
        _traffic_grid(grid_ax, assessments, names, columns, title)
        _traffic_legend(legend_ax, assessments, names, width)
        return _save(fig, path_png, path_svg, dpi)


def _traffic_grid(ax: Any, assessments: Sequence[TrialAssessment], names: list[str],
                  columns: list[str], title: str) -> None:
    """The traffic-light grid: one row per trial (alternately shaded), one column per
    domain and the overall judgement (after a rule); "?" where a judgement is missing."""
    n = len(assessments)
    ax.set_xlim(-0.6, len(columns) - 0.4)
    ax.set_ylim(n - 0.4, -0.8)
    ax.set_aspect("equal")
    for spine in ax.spines.values():
        spine.set_visible(False)
    ax.tick_params(length=0)
    ax.set_xticks(range(len(columns)), columns, fontweight="bold")
    ax.xaxis.set_ticks_position("top")
    ax.set_yticks(range(n), [_label(x) for x in names])
    ax.set_title(title, fontweight="bold", pad=12)
    for row, a in enumerate(assessments):
        risks = {d.domain: d.risk for d in a.domains}
        ax.axhspan(row - 0.5, row + 0.5, color="#f4f4f4" if row % 2 == 0 else "#ffffff", zorder=0)
        for col, key in enumerate(columns):
            risk = a.overall if key == "Overall" else risks.get(key)
            if risk is None:
                ax.text(col, row, "?", ha="center", va="center", color="#888", fontsize=12)
                continue
            _traffic_light(ax, col, row, risk, starred=key == "Overall" and bool(a.overall_rule))
    ax.axvline(len(columns) - 1.5, color="#999999", linewidth=0.8, zorder=1)


def _traffic_light(ax: Any, col: int, row: int, risk: str, *, starred: bool) -> None:
    """One judgement's light: a coloured circle with its symbol; ``starred``: an overall
    judgement an optional rule raised (the rule is named in the footnote)."""
    from matplotlib.patches import Circle

    ax.add_patch(
        Circle(
            (col, row),
            0.36,
            facecolor=_COLOURS[risk],
            edgecolor="#333333",
            linewidth=0.6,
            zorder=2,
        )
    )
    ax.text(
        col,
        row,
        _DRAWN[risk],
        ha="center",
        va="center_baseline",
        fontsize=13,
        fontweight="bold",
        color="black",
        zorder=3,
    )
    if starred:
        # an overall judgement an optional rule raised: starred, the rule in the footnote
        ax.text(col + 0.38, row - 0.3, "*", ha="left", va="center", fontsize=12,
                fontweight="bold", color="black", zorder=3)


def _traffic_legend(legend_ax: Any, assessments: Sequence[TrialAssessment], names: list[str], width: float) -> None:
    """The legend under the grid: the domains' names, the footnote on trials whose overall
    judgement an optional rule raised, and the judgement symbols."""
    from matplotlib.lines import Line2D

    legend_ax.axis("off")
    lines = [f"{d.id}: {d.name}" for d in DOMAINS]
    raised = [name for name, a in zip(names, assessments) if a.overall_rule]
    if raised:
        import textwrap

        lines += textwrap.wrap(
            "* Overall raised to High by --multiple-some-concerns-high (RoB 2's optional rule): "
            + ", ".join(_label(x) for x in raised),
            width=int(0.62 * width * 14),  # characters of 8-point text left of the legend
        )
    legend_ax.text(
        0.0,
        1.0,
        "Domains:\n" + "\n".join(lines),
        transform=legend_ax.transAxes,
        ha="left",
        va="top",
        fontsize=8,
    )
    handles = [
        Line2D(
            [],
            [],
            marker="o",
            linestyle="",
            markersize=11,
            markerfacecolor=_COLOURS[r],
            markeredgecolor="#333333",
            label=f"{_DRAWN[r]}  {r}",
        )
        for r in ("High", "Some concerns", "Low")
    ]
    legend_ax.legend(
        handles=handles,
        title="Judgement",
        loc="upper left",
        bbox_to_anchor=(0.62, 1.05),
        frameon=False,
        fontsize=8,
        title_fontsize=9,
    )


def _save(fig: Any, path_png: str | Path, path_svg: str | Path | None, dpi: int) -> tuple[Path, Path | None]:
    """Write the figure as PNG (``dpi``) and, when ``path_svg`` is given, SVG, each
    atomically (a full disk leaves no half-written plot); without dates or software
    names, so that the files are reproducible. Called inside the plot's ``rc_context``.

    Raises
    ------
    InputError
        A file cannot be written (:func:`clinex.io.atomic.atomic_path`).
    """
    png = Path(path_png)
    with atomic_path(png, force=True) as tmp:  # a full disk leaves no half-written plot
        fig.savefig(tmp, format="png", dpi=dpi, metadata={"Software": None})
    svg: Path | None = None
    if path_svg is not None:
        svg = Path(path_svg)
        with atomic_path(svg, force=True) as tmp:
            fig.savefig(tmp, format="svg", metadata={"Date": None})
    return png, svg


#: Text colour on each judgement's bar segment (white on red reads better than black).
_INK = {"Low": "black", "Some concerns": "black", "High": "white"}


def plot_summary(
    assessments_or_rows: Sequence[TrialAssessment | RobvisRow],
    weights: Sequence[float] | None,
    path_png: str | Path,
    path_svg: str | Path | None = None,
    *,
    dpi: int = 150,
    title: str = "Risk of bias (RoB 2): summary",
) -> tuple[Path, Path | None]:
    """Draw the robvis summary bar chart and save it as PNG and SVG.

    One horizontal bar per domain (top to bottom D1..D5, labelled with their
    short names) and one for the overall judgement (bold, under a rule); each bar
    is split, left to right, into the weighted percentage of trials judged Low,
    Some concerns and High (robvis "cochrane" colours), with the percentage
    printed in segments of at least 6 %. The x axis runs from 0 to 100 %.

    Parameters
    ----------
    assessments_or_rows : sequence of TrialAssessment or RobvisRow
        At least one trial.
    weights : sequence of float or None
        One positive weight per trial; None for each row's ``weight`` (1 for a
        TrialAssessment). See :func:`clinex.rob.robvis.summary_percentages`.
    path_png : str or Path
        PNG destination (8 x 3.6 in at ``dpi``); parent folders are created.
    path_svg : str or Path or None, optional
        SVG destination (vector); None to skip.
    dpi : int, default 150
        Resolution of the PNG.
    title : str, default "Risk of bias (RoB 2): summary"

    Returns
    -------
    (Path, Path or None)
        The PNG and SVG paths written.

    Raises
    ------
    InputError
        No trials, or bad weights (see ``summary_percentages``), or a file cannot be
        written (the operating system's reason).

    References
    ----------
    McGuinness & Higgins, Res Synth Methods 2021 (robvis summary plot).
    """
    shares = summary_percentages(assessments_or_rows, weights)
    n = len(assessments_or_rows)
    if weights is None:
        weights = [r.weight if isinstance(r, RobvisRow) else 1.0 for r in assessments_or_rows]
    weighted = len(set(weights)) > 1
    import matplotlib
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import PercentFormatter

    keys = [d.id for d in DOMAINS] + ["Overall"]
    labels = [f"{d.id}  {d.short_name}" for d in DOMAINS] + ["Overall risk of bias"]
    with matplotlib.rc_context({"svg.hashsalt": "clinex-rob", "svg.fonttype": "path"}):
        fig = Figure(figsize=(8.0, 3.6), dpi=dpi, layout="constrained")
        FigureCanvasAgg(fig)
        ax = fig.subplots()
        ys = list(range(len(keys)))
        for risk in RISKS:
            left = [sum(shares[k][r] for r in RISKS[: RISKS.index(risk)]) for k in keys]
            widths = [shares[k][risk] for k in keys]
            ax.barh(ys, widths, left=left, height=0.7, color=_COLOURS[risk], edgecolor="#333333",
                    linewidth=0.6, label=risk, zorder=2)
            for y, x0, w in zip(ys, left, widths):
                if w >= 6.0:
                    ax.text(x0 + w / 2, y, f"{w:.0f}%", ha="center", va="center_baseline",
                            fontsize=9, color=_INK[risk], zorder=3)
        ax.set_xlim(0, 100)
        ax.set_ylim(len(keys) - 0.4, -0.6)
        ax.set_xticks(range(0, 101, 25))
        ax.xaxis.set_major_formatter(PercentFormatter(decimals=0))
        ax.set_yticks(ys, labels, fontsize=9)
        ax.get_yticklabels()[-1].set_fontweight("bold")
        ax.axhline(len(keys) - 1.5, color="#999999", linewidth=0.8)
        ax.grid(axis="x", color="#dddddd", linewidth=0.6, zorder=0)
        ax.tick_params(axis="y", length=0)
        for side in ("top", "right", "left"):
            ax.spines[side].set_visible(False)
        trials = f"{n} trial" + ("" if n == 1 else "s")
        ax.set_xlabel(f"Weighted share of trials ({trials})" if weighted
                      else f"Share of trials ({trials})", fontsize=9)
        ax.set_title(title, fontweight="bold")
        fig.legend(loc="outside lower center", ncol=3, frameon=False, fontsize=9)
        return _save(fig, path_png, path_svg, dpi)
