"""Input pipeline: time the device waited for input per step (mean and worst rank), and the
input queue depth over time when the run has the `input.queue_depth` counter."""

from __future__ import annotations

import altair as alt

from .. import queries
from ..section import Section

WIDTH = 820


def _wait_chart(frame):
    return (
        alt.Chart(frame)
        .transform_fold(["mean_wait", "worst_rank_wait"], as_=["series", "ms"])
        .transform_calculate(
            label="datum.series == 'mean_wait' ? 'mean over ranks' : 'worst rank'",
        )
        .mark_line(point=True)
        .encode(
            x=alt.X("step:Q", title="step", axis=alt.Axis(format="d")),
            y=alt.Y("ms:Q", title="input wait per step (ms)"),
            color=alt.Color("label:N", title=None, legend=alt.Legend(orient="top")),
            tooltip=[
                "step:Q",
                "label:N",
                alt.Tooltip("ms:Q", format=",.3f"),
                alt.Tooltip("share:Q", format=".1%", title="share of step time"),
            ],
        )
        .properties(width=WIDTH, height=220, title="input wait per step")
    )


def _queue_chart(frame):
    return (
        alt.Chart(frame)
        .transform_fold(["mean_depth", "lowest_depth"], as_=["series", "depth"])
        .transform_calculate(
            label="datum.series == 'mean_depth' ? 'mean over ranks' : 'lowest rank'",
        )
        .mark_line(interpolate="step-after")
        .encode(
            x=alt.X("time_s:Q", title="time (s from the first sample)"),
            y=alt.Y("depth:Q", title="batches queued"),
            color=alt.Color("label:N", title=None, legend=alt.Legend(orient="top")),
            tooltip=[
                alt.Tooltip("time_s:Q", format=",.6f", title="s"),
                "label:N",
                alt.Tooltip("depth:Q", format=",.2f"),
            ],
        )
        .properties(width=WIDTH, height=180, title="input queue depth")
    )


def build(run) -> Section:
    section = Section(
        "input",
        "Input pipeline",
        intro="Time the device sat waiting for the next batch with nothing else running, "
        "per step; and how many batches were queued, when the run records it.",
    )
    present = queries.input_presence(run)
    charts = []
    if present["input_events"] and present["rank_steps"]:
        frame, notes = queries.input_wait_by_step(run)
        section.notes += notes
        charts.append(_wait_chart(frame))
    elif present["input_events"]:
        section.gaps.append("Input events but no steps: wait per step cannot be drawn.")
    elif present["queue_samples"]:
        section.gaps.append("No input events in this run: wait per step not drawn.")
    if present["queue_samples"]:
        frame, notes = queries.queue_depth(run)
        section.notes += notes
        charts.append(_queue_chart(frame))
    elif charts:
        section.gaps.append("No input.queue_depth counter in this run: queue depth not drawn.")
    if not charts:
        section.empty = "No input-pipeline events or queue-depth counters in this run."
        return section
    section.chart = charts[0] if len(charts) == 1 else alt.vconcat(*charts).resolve_scale(color="independent")
    return section
