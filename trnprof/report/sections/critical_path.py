"""Critical path per step: what the chain of work that set each step's length is made of, by
category (session table critical_path_steps, docs/critical-path.md)."""

from __future__ import annotations

import altair as alt
import pandas as pd

from ...critical_path import compute
from ...critical_path.compute import RunTooLarge, StepTooLarge
from ..section import Section

WIDTH = 900
CATEGORIES = ("compute", "communication", "late_rank", "host", "input", "sync", "transfer", "compile")
MAX_STEPS = 400  # bars drawn; longer runs show their first steps (a note says so)


def _bound_line(frame: pd.DataFrame) -> str:
    counts = frame["bound_by"].value_counts()
    parts = [f"{name} in {n} of {len(frame)} steps" for name, n in counts.items()]
    return "Bound by " + ", ".join(parts) + "."


def build(run) -> Section:
    section = Section(
        "critical_path",
        "Critical path",
        intro="Each bar: one step's critical path (the work and waits, across ranks, that set its "
        "length), by category. late_rank is time the path waited for a rank that started "
        "the step late; host includes the untraced time between recorded work.",
    )
    if run.engine != "duckdb":  # the graph is built from DuckDB's session (docs/critical-path.md)
        section.empty = f"The critical path is computed on the DuckDB engine only; this report ran on {run.engine}."
        return section
    try:
        compute.check_within_a_minute(run)  # from the stored counts, before any scan of the events
        frame = run.sql("SELECT * FROM critical_path_steps ORDER BY step")
    except RunTooLarge as too_large:
        section.empty = f'Not drawn: {too_large}; `trnprof query RUN "SELECT * FROM critical_path_steps"` computes it.'
        return section
    except StepTooLarge as too_large:
        section.empty = f"Not drawn: {too_large}."
        return section
    if frame.empty:
        section.empty = "No step events with recorded work in this run, so there is no step to walk."
        return section
    section.intro += " " + _bound_line(frame)
    if len(frame) > MAX_STEPS:
        section.notes.append(f"First {MAX_STEPS} of {len(frame)} steps drawn.")
        frame = frame.head(MAX_STEPS)
    long = frame.melt(
        id_vars=["step", "rank", "bound_by"], value_vars=list(CATEGORIES), var_name="category", value_name="ns"
    )
    long = long[long["ns"] > 0].assign(ms=lambda d: d["ns"] / 1e6)
    section.chart = (
        alt.Chart(long)
        .mark_bar()
        .encode(
            x=alt.X("step:O", title="step"),
            y=alt.Y("ms:Q", title="ms on the critical path", stack="zero"),
            color=alt.Color("category:N", scale=alt.Scale(domain=list(CATEGORIES)), title="category"),
            tooltip=[
                alt.Tooltip("step:O"),
                alt.Tooltip("rank:Q", title="ends on rank"),
                alt.Tooltip("category:N"),
                alt.Tooltip("ms:Q", format=".3f", title="ms"),
                alt.Tooltip("bound_by:N", title="bound by"),
            ],
        )
        .properties(width=WIDTH, height=240)
    )
    return section
