"""Straggler heatmap: rank x step, how far each rank's step time and compute time sit from that
step's median over ranks (red: slower than the median)."""

from __future__ import annotations

import altair as alt

from .. import queries
from ..section import Section

WIDTH = 900
METRICS = {"step_dev": "step time", "compute_dev": "compute time"}
# The colour scale spans at least +-10 %: run-to-run noise of a balanced job (a few percent)
# stays pale instead of being stretched to the full red of a real straggler.
MIN_COLOR_SPAN = 0.10
MAX_TICKS = 40  # up to this many ranks or steps, one tick per cell at its first rank or step


def _ticks(values) -> alt.Axis:
    """A discrete axis: ticks at the cells' own ranks or steps (no -1, no repeated labels)."""
    distinct = sorted({int(v) for v in values})
    if len(distinct) <= MAX_TICKS:
        return alt.Axis(format="d", values=distinct)
    return alt.Axis(format="d", tickMinStep=1)


def _heatmap(frame, column: str, label: str, height: int):
    lo, hi = float(frame["x0"].min()), float(frame["x1"].max())
    shown = frame[frame[column].notna()]
    span = max(MIN_COLOR_SPAN, float(shown[column].abs().max()))
    return (
        alt.Chart(shown)
        .mark_rect()
        .encode(
            x=alt.X("x0:Q", title="rank", scale=alt.Scale(domain=[lo, hi], nice=False), axis=_ticks(shown["rank_lo"])),
            x2="x1:Q",
            y=alt.Y("y0:Q", title="step", scale=alt.Scale(reverse=True, nice=False), axis=_ticks(shown["step_lo"])),
            y2="y1:Q",
            color=alt.Color(
                f"{column}:Q",
                title=f"{label} vs median",
                scale=alt.Scale(scheme="redblue", reverse=True, domain=[-span, span], clamp=True),
                legend=alt.Legend(format="+.0%"),
            ),
            tooltip=[
                alt.Tooltip("rank_lo:Q", title="rank"),
                alt.Tooltip("step_lo:Q", title="step"),
                alt.Tooltip(f"{column}:Q", format="+.1%", title=f"{label} vs median"),
            ],
        )
        .properties(width=WIDTH, height=height, title=f"{label}: deviation from the median of the rank's peers")
    )


def build(run) -> Section:
    section = Section(
        "stragglers",
        "Stragglers",
        intro="Each cell: a rank's step or compute time against the median of its peers (the "
        "ranks of its pipeline stage) in that steady-state step, as scale.straggler judges "
        "it (view rank_deviation). A rank red across steps in compute time is a straggler.",
    )
    frame, section.notes = queries.straggler_cells(run)
    if frame.empty:
        section.empty = "No step events in this run, so there are no per-step times to compare."
        return section
    # cells centred on their first rank and step, so axis ticks sit mid-cell
    frame["x0"], frame["x1"] = frame["rank_lo"] - 0.5, frame["rank_end"] - 0.5
    frame["y0"], frame["y1"] = frame["step_lo"] - 0.5, frame["step_end"] - 0.5
    steps = frame["step_lo"].nunique()
    height = min(300, max(60, 22 * steps))
    charts = [
        _heatmap(frame, column, label, height) for column, label in METRICS.items() if frame[column].notna().any()
    ]
    if len(charts) < len(METRICS):
        section.gaps.append("No compute time recorded: compute-time deviation not drawn.")
    section.chart = alt.vconcat(*charts).resolve_scale(color="independent")
    return section
