"""The session tables `critical_path` and `critical_path_steps`, computed on first use.

A session creates them when a query names them (`session.prepare`), from the run's events by
`compute.analyse`: `trnprof query RUN "SELECT * FROM critical_path_steps"` works on any run with
step events. Their documentation (DOCS) is in docs/stdlib.md.
"""

from __future__ import annotations

import duckdb
import pandas as pd

from .graph import CATEGORIES, LATE_RANK

SEGMENTS, SUMMARY = "critical_path", "critical_path_steps"
NAMES = (SEGMENTS, SUMMARY)

SEGMENT_DOC = (
    "One row per segment of each step's critical path: the chain of work and waits, across "
    "ranks, that set the step's length, walked back from the end of the rank that finished the "
    "step last (docs/critical-path.md). A step's segments sum to its duration."
)
SEGMENT_COLUMNS = [
    ("step", "training step number"),
    ("rank", "rank the segment ran on (the path crosses ranks at collectives)"),
    ("seq", "position of the segment in the step's path, 0 first"),
    (
        "category",
        "compute, communication, late_rank (waiting for a rank that started the step late), host "
        "(host ops and the untraced time between recorded work), input, sync (a host call held by "
        "the device), transfer, compile",
    ),
    ("name", "op / kernel / collective name; `(gap)` for time between recorded work"),
    ("ts", "segment start, ns"),
    ("dur", "segment duration, ns"),
]
SUMMARY_DOC = (
    "One row per step: what its critical path is made of and what bounds it. `bound_by` is "
    "the category with the most time on the path, where waiting for a late rank counts both "
    "the late_rank segments and the waits of the ranks on the path at collectives and pipeline "
    "receives."
)
SUMMARY_COLUMNS = [
    ("step", "training step number"),
    ("rank", "the rank that finished the step last (where the path ends)"),
    ("dur", "step duration: the sum of the path's segments, ns"),
    *[(c, f"{c} time on the path, ns") for c in CATEGORIES],
    (
        "late_rank_wait",
        "time the ranks on the path waited at collectives for a later rank's arrival, and at "
        "pipeline receives for their sender's data, ns (the path continues on that rank's work: "
        "not part of dur)",
    ),
    ("ranks_on_path", "distinct ranks the path crosses"),
    ("bound_by", "what bounds the step: the category with most time (late_rank including late_rank_wait)"),
]
DOCS = {SEGMENTS: (SEGMENT_DOC, SEGMENT_COLUMNS), SUMMARY: (SUMMARY_DOC, SUMMARY_COLUMNS)}


def summary(segments: pd.DataFrame, walks: pd.DataFrame) -> pd.DataFrame:
    """critical_path_steps from the segments and the walks' facts."""
    if segments.empty:
        return pd.DataFrame(
            {name: pd.Series(dtype="int64" if name not in ("bound_by",) else "object") for name, _ in SUMMARY_COLUMNS}
        )
    per = segments.pivot_table(index="step", columns="category", values="dur", aggfunc="sum", fill_value=0)
    per = per.reindex(columns=list(CATEGORIES), fill_value=0).astype("int64")
    out = walks.set_index("step")[["rank"]].join(per, how="left").fillna(0)
    out.insert(1, "dur", segments.groupby("step")["dur"].sum())
    out["late_rank_wait"] = walks.set_index("step")["late_rank_wait"].round().astype("int64")
    out["ranks_on_path"] = segments.groupby("step")["rank"].nunique()
    weights = out[list(CATEGORIES)].copy()
    weights[LATE_RANK] = weights[LATE_RANK] + out["late_rank_wait"]
    out["bound_by"] = weights.idxmax(axis=1)
    return out.reset_index().astype({c: "int64" for c in ["rank", "dur", *CATEGORIES, "ranks_on_path"]})


def _sql_in(con: duckdb.DuckDBPyConnection, schema: str):
    def sql(query: str) -> pd.DataFrame:
        con.execute(f"SET schema = '{schema}'")
        try:
            return con.execute(query).df()
        finally:
            con.execute("SET schema = 'main'")

    return sql


class _Reader:
    """The one method compute.analyse needs of a Run, over a session schema."""

    def __init__(self, con, schema):
        self.con, self.schema = con, schema  # events.Reader reads Arrow through them
        self.sql = _sql_in(con, schema)


def exists(con: duckdb.DuckDBPyConnection, schema: str) -> bool:
    found = con.execute(
        "SELECT COUNT(*) FROM duckdb_tables() WHERE schema_name = ? AND table_name = ?", [schema, SEGMENTS]
    ).fetchall()[0][0]
    return bool(found)


def attach(con: duckdb.DuckDBPyConnection, schema: str = "main") -> None:
    """Compute the run's critical path and create both tables in `schema` (once)."""
    from .compute import analyse

    if exists(con, schema):
        return
    result = analyse(_Reader(con, schema))
    segments = result.segments.astype(
        {
            "step": "int64",
            "rank": "int64",
            "seq": "int64",
            "ts": "int64",
            "dur": "int64",
            "category": "object",
            "name": "object",
        }
    )
    for name, frame in ((SEGMENTS, segments), (SUMMARY, summary(segments, result.walks))):
        con.register("_critical_path_source", frame)
        try:
            con.execute(f'CREATE TABLE "{schema}"."{name}" AS SELECT * FROM _critical_path_source')
        finally:
            con.unregister("_critical_path_source")
