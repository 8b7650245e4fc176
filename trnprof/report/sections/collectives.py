"""Collectives: achieved bus bandwidth against message size, one point per collective instance,
with the peak bus bandwidth the rules judge each replica group against (view
`collective_peaks`, as collectives.low_bus_bandwidth uses it) drawn as reference lines."""

from __future__ import annotations

import altair as alt

from .. import queries
from ..section import Section

WIDTH = 820


def build(run) -> Section:
    section = Section(
        "collectives",
        "Collectives: bus bandwidth against message size",
        intro="Achieved bus bandwidth (nccl-tests convention) of each collective instance, "
        "matched across ranks; dashed lines are the peak bus bandwidth the rules judge its "
        "replica group against, from the links the group crosses.",
    )
    counts = queries.collective_counts(run)
    if counts["instances"] == 0:
        section.empty = "No collective or point-to-point events in this run."
        return section
    if counts["with_busbw"] == 0:
        section.empty = (
            f"{counts['instances']:,} collective instances, but none with both a byte count "
            "and a duration, so no bandwidth can be drawn."
        )
        return section
    frame, section.notes = queries.collective_points(run, counts["with_busbw"])
    peaks = queries.collective_reference_peaks(run)
    if peaks.empty:
        instance = queries.instance_type(run)
        section.gaps.append(
            f"No peak bus bandwidth known for the collective groups (instance type "
            f"{instance or '(unknown)'}): none drawn."
        )
    peaks["label"] = [_peak_label(row) for row in peaks.itertuples(index=False)]
    points = (
        alt.Chart(frame)
        .mark_circle(size=36, opacity=0.7)
        .encode(
            x=alt.X(
                "bytes:Q",
                title="message size per rank (bytes)",
                scale=alt.Scale(type="log"),
                axis=alt.Axis(format="~s"),
            ),
            y=alt.Y("busbw_gbs:Q", title="bus bandwidth (GB/s)", scale=alt.Scale(type="log")),
            color=alt.Color("coll_op:N", title="collective", legend=alt.Legend(orient="top")),
            tooltip=[
                "name:N",
                "coll_op:N",
                "coll_group:N",
                "group_size:Q",
                "step:Q",
                alt.Tooltip("bytes:Q", format=",d"),
                alt.Tooltip("busbw_gbs:Q", format=",.2f", title="busbw GB/s"),
                alt.Tooltip("transfer_ms:Q", format=",.3f", title="transfer ms"),
                alt.Tooltip("skew_ms:Q", format=",.3f", title="arrival skew ms"),
            ],
        )
    )
    layers = [points]
    if not peaks.empty:
        rule = alt.Chart(peaks).encode(y="gbs:Q")
        layers += [
            rule.mark_rule(strokeDash=[6, 4], color="#555"),
            rule.mark_text(align="left", dx=4, dy=-6, color="#333").encode(x=alt.value(0), text=alt.Text("label:N")),
        ]
    section.chart = alt.layer(*layers).properties(width=WIDTH, height=340)
    return section


def _peak_label(row) -> str:
    """`peak 12.5 GB/s: 2 groups across 2 nodes (dp0, dp1)`."""
    span = "inside a node" if row.nodes <= 1 else f"across {row.nodes} nodes"
    groups = "1 group" if row.n_groups == 1 else f"{row.n_groups} groups"
    names = row.coll_groups if len(row.coll_groups) <= 40 else row.coll_groups[:39] + "\u2026"
    return f"peak {row.gbs:,.1f} GB/s: {groups} {span} ({names})"
