"""The run's work events for the graph, a range of steps at a time, read as Arrow straight from
DuckDB: names, lanes, kinds and collective groups arrive dictionary-encoded (an ENUM of the run's
distinct values, cast inside DuckDB), so no Python string is made per event."""

from __future__ import annotations

import pandas as pd

from trnprof.tableread import sql_string

from .edges_launch import CORRELATION_PRESENT, CORRELATION_SQL
from .edges_p2p import P2P_RECV_SQL

WORK_KINDS = ("compute", "collective", "p2p", "input", "transfer", "memory", "compile", "host")
CODED = ("lane", "kind", "name", "coll_group")
COLUMNS = ("rank", "step", "lane", "kind", "name", "ts", "dur", "coll_group", "coll_seq", "bytes")


def derived(correlation: bool = True, p2p: bool = True) -> str:
    """Columns computed from others for the edges the trace records (edges_launch.py,
    edges_p2p.py); NULL where the run has nothing for them."""
    return (f"CAST({CORRELATION_SQL if correlation else 'NULL'} AS BIGINT) AS corr, "
            f"CAST({P2P_RECV_SQL if p2p else 'NULL'} AS TINYINT) AS p2p_recv")


DERIVED = derived()
_KINDS_SQL = ", ".join(sql_string(k) for k in WORK_KINDS)


def where(steps: tuple[int, int]) -> str:
    return (f"step BETWEEN {int(steps[0])} AND {int(steps[1])} AND kind IN ({_KINDS_SQL}) AND dur >= 0")


def events_sql(steps: tuple[int, int]) -> str:
    """The plain query (strings as text), for readers without a DuckDB connection."""
    return f"SELECT {', '.join(COLUMNS)}, {DERIVED} FROM events WHERE {where(steps)}"


def _connection(run):
    """(a cursor of the DuckDB connection, schema) behind `run`, or None (read through run.sql).
    The reads have a cursor of their own: one may run in a second thread (compute.Replayer) while
    the caller queries the run, and each sets its own schema."""
    con = getattr(run, "con", None)
    return (con.cursor(), getattr(run, "schema", "main")) if con is not None else None


class Reader:
    """Reads a run's work events per step range. One scan (`step_counts`) counts the events of
    each step and finds the distinct strings the reads cast to ENUMs."""

    def __init__(self, run):
        self.run = run
        self.target = _connection(run)
        self._select = None
        self._derived = None

    def _arrow(self, query: str):
        con, schema = self.target
        con.execute(f"SET schema = {sql_string(schema)}")
        try:
            return con.sql(query).to_arrow_table()
        finally:
            con.execute("SET schema = 'main'")

    def step_counts(self) -> pd.DataFrame:
        """step, n: the work events of each step, ordered by step."""
        where_work = f"step IS NOT NULL AND kind IN ({_KINDS_SQL})"
        if self.target is None:
            return self.run.sql(f"SELECT step, COUNT(*) AS n FROM events WHERE {where_work} GROUP BY step ORDER BY step")
        sets = ", ".join(f"({c})" for c in ("step", *CODED))
        found = self._arrow(f"SELECT step, {', '.join(CODED)}, COUNT(*) AS n, GROUPING(step) AS by_other "
                            f"FROM events WHERE {where_work} GROUP BY GROUPING SETS ({sets})").to_pandas()
        self._select = _coded_select(found[found["by_other"] == 1])
        counts = found[found["by_other"] == 0][["step", "n"]]
        return counts.astype({"step": "int64", "n": "int64"}).sort_values("step").reset_index(drop=True)

    def _derived_columns(self) -> str:
        """`derived()` for this run, probed once (each probe stops at its first hit): the
        correlation regex is a pass over every event's args, wasted on runs without ids."""
        if self._derived is None:
            def has(condition: str) -> bool:
                return self._arrow(f"SELECT 1 FROM events WHERE {condition} LIMIT 1").num_rows > 0
            self._derived = derived(has(CORRELATION_PRESENT), has("kind = 'p2p'"))
        return self._derived

    def read(self, steps: tuple[int, int]) -> pd.DataFrame:
        """The work events of steps low..high (COLUMNS; string columns categorical)."""
        if self.target is None:
            return with_object_categories(self.run.sql(events_sql(steps)))
        if self._select is None:
            self.step_counts()
        table = self._arrow(f"SELECT {self._select}, {self._derived_columns()} FROM events WHERE {where(steps)}")
        return with_object_categories(table.to_pandas())


def _coded_select(distinct: pd.DataFrame) -> str:
    """SELECT list casting each string column to an ENUM of its sorted distinct values (the
    codes keep the strings' order, which the lane sort relies on)."""
    columns = []
    for name in COLUMNS:
        if name not in CODED:
            columns.append(name)
            continue
        values = sorted({str(v) for v in distinct[name].dropna()})
        enum = ", ".join(sql_string(v) for v in values) if values else "''"
        columns.append(f"CAST({name} AS ENUM({enum})) AS {name}")
    return ", ".join(columns)


def with_object_categories(frame: pd.DataFrame) -> pd.DataFrame:
    """The coded columns as categoricals of plain Python strings (Arrow-backed categories are
    converted again at every lookup)."""
    for name in CODED:
        column = frame[name]
        if not isinstance(column.dtype, pd.CategoricalDtype):
            column = column.astype("category")
        categories = pd.Index(column.cat.categories.astype(object), dtype=object)
        frame[name] = pd.Categorical.from_codes(column.cat.codes.to_numpy(), categories=categories)
    return frame
