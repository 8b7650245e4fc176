"""Critical path per step: what the chain of work that set each step's length is made of, by
category (session table critical_path_steps, docs/critical-path.md)."""

from __future__ import annotations

import altair as alt
import pandas as pd

from ...critical_path import compute
from ...critical_path.compute import StepTooLarge
from ...critical_path.events import WORK_KINDS
from ..section import Section

WIDTH = 900
CATEGORIES = ("compute", "communication", "late_rank", "host", "input", "sync", "transfer", "compile")
MAX_STEPS = 400  # bars drawn; longer runs show their first steps (a note says so)
# The report computes the critical path of runs of at most this many work events in their steps:
# it takes about 3 CPU us an event (docs/critical-path.md, Performance), so about a minute here,
# which is the report's whole budget past it; `trnprof query` computes a bigger run's path
DRAWN_EVENTS = 25_000_000


def _bound_line(frame: pd.DataFrame) -> str:
    counts = frame["bound_by"].value_counts()
    parts = [f"{name} in {n} of {len(frame)} steps" for name, n in counts.items()]
    return "Bound by " + ", ".join(parts) + "."


def _refuse_large_steps(run) -> str | None:
    """StepTooLarge when a step has more work events than one graph holds, from the stored counts
    per rank, step and kind (view event_stats) and with the computation's own message: a run whose
    steps are too large is refused without the scan of its events the computation starts with
    (about 2 CPU seconds at 44M events). Why the section is not drawn when the run's steps hold
    more than DRAWN_EVENTS work events in all, else None."""
    kinds = ", ".join(f"'{kind}'" for kind in WORK_KINDS)
    counts = run.sql(
        f"SELECT step, SUM(n) AS n FROM event_stats WHERE kind IN ({kinds}) "
        "AND step IN (SELECT step FROM steps) GROUP BY step ORDER BY step"
    )
    compute.check_step_sizes(counts)
    total = int(counts["n"].sum()) if len(counts) else 0
    if total > DRAWN_EVENTS:
        return (
            f"Not drawn: the run's steps hold {total:,} work events, over the {DRAWN_EVENTS:,} the report "
            'computes a critical path for within its time; `trnprof query RUN "SELECT * FROM '
            'critical_path_steps"` computes it (docs/critical-path.md, Performance).'
        )
    return None


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
        too_long = _refuse_large_steps(run)
        if too_long:
            section.empty = too_long
            return section
        frame = run.sql("SELECT * FROM critical_path_steps ORDER BY step")
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
