"""Timeline of one representative step (the one nearest the median step time) on a few ranks,
the slowest among them, one row per rank and lane; the ops taking the most time listed under it."""

from __future__ import annotations

import altair as alt

from ... import schema
from .. import limits, queries, templates
from ..section import Section

WIDTH = 900
ROW_PX = 16


# one colour per event kind, the same in every report
KIND_COLORS = dict(
    zip(
        schema.EVENT_KINDS,
        ["#4c78a8", "#f58518", "#e45756", "#72b7b2", "#54a24b", "#eeca3b", "#b279a2", "#ff9da6", "#9d755d", "#bab0ac"],
    )
)


def _table(frame) -> str:
    """Time per op name over the drawn ranks, the most first."""
    frame = frame[frame["kind"] != "step"]
    if frame.empty:
        return ""
    ops = frame.groupby(["kind", "name"], as_index=False).agg(
        count=("dur", "size"), total=("dur", "sum"), longest=("dur", "max"), ranks=("rank", "nunique")
    )
    ops = ops.nlargest(limits.OPS_LISTED, "total")
    return templates.render("ops.html.j2", ops=list(ops.itertuples()))


def _steps_span_ms(run, step: int, ranks: list[int]) -> float:
    """From the earliest start of `step` on `ranks` to its latest end, ms."""
    in_list = ", ".join(str(int(r)) for r in ranks)
    frame = run.sql(
        f"SELECT (MAX(end_ts) - MIN(ts)) / 1e6 AS span FROM steps WHERE step = {int(step)} AND rank IN ({in_list})"
    )
    return float(frame["span"].iloc[0])


def build(run) -> Section:
    section = Section("timeline", "Timeline of a representative step")
    step = queries.representative_step(run)
    if step is None:
        section.empty = "No step events in this run, so there is no step to draw."
        return section
    ranks = queries.timeline_ranks(run, step["step"])
    frame, section.notes = queries.timeline_events(run, step["step"], [r for r, _ in ranks])
    # a single rank has no role among others ("slowest" of one says nothing)
    roles = {r: f"rank {r}" if len(ranks) == 1 else f"rank {r} ({role})" for r, role in ranks}
    section.intro = (
        f"Step {step['step']} ({step['dur_ms']:,.3f} ms; median step {step['median_ms']:,.3f} ms) on "
        + ", ".join(roles[r] for r, _ in ranks)
        + "; time from the earliest of their step starts. Hover an event for its name."
    )
    frame["row"] = [f"{roles[r]} · {lane}" for r, lane in zip(frame["rank"], frame["lane"])]
    # the axis spans the drawn steps: events reaching outside them (a whole-trace annotation, the
    # profiler's own span) are cut at the step's edges, their tooltips keep their real times
    span = _steps_span_ms(run, step["step"], [r for r, _ in ranks])
    frame["x0"], frame["x1"] = frame["start"].clip(lower=0.0, upper=span), frame["end"].clip(lower=0.0, upper=span)
    order = {r: i for i, (r, _) in enumerate(ranks)}
    lanes = frame[["rank", "lane", "row"]].drop_duplicates()
    rows = [r.row for r in sorted(lanes.itertuples(), key=lambda r: (order[r.rank], r.lane))]
    # rows are ordered by a number in the data: names never go into the spec's sort (Vega-Lite
    # compiles an explicit sort list into an expression, which a U+2028 in a name breaks)
    frame["row_order"] = frame["row"].map({row: i for i, row in enumerate(rows)})
    kinds = [k for k in schema.EVENT_KINDS if k in set(frame["kind"])]
    section.chart = (
        alt.Chart(frame)
        .mark_bar(opacity=0.85)
        .encode(
            x=alt.X("x0:Q", title="time in step (ms)", scale=alt.Scale(domain=[0.0, span], nice=False)),
            x2="x1:Q",
            y=alt.Y(
                "row:N", title=None, sort=alt.EncodingSortField("row_order", op="min"), axis=alt.Axis(labelLimit=320)
            ),
            color=alt.Color(
                "kind:N",
                scale=alt.Scale(domain=kinds, range=[KIND_COLORS.get(k, "#888") for k in kinds]),
                legend=alt.Legend(orient="top", title=None),
            ),
            tooltip=[
                "name:N",
                "kind:N",
                "lane:N",
                "phase:N",
                "rank:Q",
                alt.Tooltip("start:Q", format=",.3f", title="start ms"),
                alt.Tooltip("dur:Q", format=",.3f", title="duration ms"),
            ],
        )
        .properties(width=WIDTH, height=max(60, ROW_PX * len(rows)))
    )
    section.html = _table(frame)
    return section
