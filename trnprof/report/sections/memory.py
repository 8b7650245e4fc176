"""Device-memory residency over time of the rank with the highest peak, stacked by category,
with the rank's HBM capacity drawn."""

from __future__ import annotations

import altair as alt
import pandas as pd

from .. import queries
from ..section import Section

WIDTH = 820


def build(run) -> Section:
    section = Section("memory", "Device memory over time")
    top = queries.memory_rank(run)
    if top is None:
        section.empty = "No device-memory counters (hbm.*) in this run."
        return section
    frame, section.notes = queries.memory_series(run, top["rank"])
    capacity = top["capacity_gib"]
    section.intro = (
        f"Rank {top['rank']}, the highest peak: {top['peak_gib']:,.2f} GiB"
        + (f" of {capacity:,.2f} GiB HBM capacity." if capacity else " (capacity unknown).")
        + " Resident bytes by category, stacked."
    )
    area = (
        alt.Chart(frame)
        .mark_area(interpolate="step-after", opacity=0.85)
        .encode(
            x=alt.X("time_s:Q", title="time (s from the first sample)"),
            y=alt.Y("gib:Q", stack="zero", title="resident (GiB)"),
            color=alt.Color("category:N", legend=alt.Legend(orient="top", title=None)),
            tooltip=[
                alt.Tooltip("time_s:Q", format=",.6f", title="s"),
                "category:N",
                alt.Tooltip("gib:Q", format=",.3f", title="GiB"),
            ],
        )
    )
    layers = [area]
    if capacity:
        line = alt.Chart(pd.DataFrame({"gib": [capacity], "label": [f"HBM capacity {capacity:,.2f} GiB"]}))
        layers += [
            line.mark_rule(color="#d62728", strokeDash=[6, 4]).encode(y="gib:Q"),
            line.mark_text(align="left", dx=4, dy=-6, color="#d62728").encode(
                y="gib:Q", x=alt.value(0), text="label:N"
            ),
        ]
    section.chart = alt.layer(*layers).properties(width=WIDTH, height=300)
    return section
