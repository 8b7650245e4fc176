"""Step-time breakdown per rank: the exclusive buckets of `step_breakdown` stacked, mean per step."""

from __future__ import annotations

import json

import altair as alt

from ...breakdown import CATEGORIES, LABELS
from .. import queries
from ..section import Section

# bucket column -> legend label, in stacking order (bottom first)
BUCKETS = {category: LABELS[category] for category in CATEGORIES}
COLORS = ["#4c78a8", "#e45756", "#f58518", "#72b7b2", "#54a24b", "#b279a2", "#9d755d", "#bab0ac"]
WIDTH = 900


def build(run) -> Section:
    section = Section(
        "breakdown",
        "Step-time breakdown per rank",
        intro="Where each rank's step time goes, mean per step: compute, communication "
        "not hidden under compute, input wait, the host blocked on the device, host work while the device waits, "
        "exposed transfer, compile, idle.",
    )
    frame, section.notes = queries.breakdown_by_rank(run)
    if frame.empty:
        section.empty = "No step events in this run, so there are no steps to break down."
        return section
    frame = frame.rename(columns=BUCKETS)
    frame["x0"], frame["x1"] = frame["rank_lo"] - 0.45, frame["rank_hi"] + 0.45
    labels = list(BUCKETS.values())
    lo, hi = float(frame["x0"].min()), float(frame["x1"].max())
    # bars span x0..x1 (a group of ranks), so the stack is computed explicitly, not by encoding
    section.chart = (
        alt.Chart(frame)
        .transform_fold(labels, as_=["bucket", "ms"])
        .transform_calculate(
            order=f"indexof({json.dumps(labels)}, datum.bucket)",
        )
        .transform_stack(
            stack="ms",
            groupby=["rank_lo"],
            as_=["y0", "y1"],
            sort=[alt.SortField("order")],
        )
        .mark_rect()
        .encode(
            x=alt.X(
                "x0:Q",
                title="rank",
                scale=alt.Scale(domain=[lo, hi], nice=False),
                axis=alt.Axis(format="d", tickMinStep=1),
            ),
            x2="x1:Q",
            y=alt.Y("y0:Q", title="time per step (ms)"),
            y2="y1:Q",
            color=alt.Color(
                "bucket:N", title=None, scale=alt.Scale(domain=labels, range=COLORS), legend=alt.Legend(orient="top")
            ),
            tooltip=[
                alt.Tooltip("rank_lo:Q", title="rank"),
                alt.Tooltip("rank_hi:Q", title="to rank"),
                alt.Tooltip("bucket:N"),
                alt.Tooltip("ms:Q", format=",.3f", title="ms per step"),
                alt.Tooltip("step:Q", format=",.3f", title="step ms (mean)"),
            ],
        )
        .properties(width=WIDTH, height=280)
    )
    return section
