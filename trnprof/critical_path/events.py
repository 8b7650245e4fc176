"""The run's work events for the graph, a range of steps at a time, read as Arrow straight from
DuckDB: names, lanes, kinds and collective groups arrive as integer codes (joined inside DuckDB
to a dictionary of the run's distinct values, registered once as an Arrow table), so no Python
string is made per event and no value is written into the SQL text: the memory follows the
events, not the bytes of their names (an ENUM literal of 3,000 names of 64 KB took 3.9 GB)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa

from trnprof.tableread import sql_string

from .edges_launch import CORRELATION_PRESENT, CORRELATION_SQL
from .edges_p2p import P2P_RECV_SQL

WORK_KINDS = ("compute", "collective", "p2p", "input", "transfer", "memory", "compile", "host")
CODED = ("lane", "kind", "name", "coll_group")
COLUMNS = ("rank", "step", "lane", "kind", "name", "ts", "dur", "coll_group", "coll_seq", "bytes")
DICTIONARY = "_trnprof_critical_path_{}_codes"  # a coded column's distinct values and their codes


def derived(correlation: bool = True, p2p: bool = True) -> str:
    """Columns computed from others for the edges the trace records (edges_launch.py,
    edges_p2p.py); NULL where the run has nothing for them."""
    return (
        f"CAST({CORRELATION_SQL if correlation else 'NULL'} AS BIGINT) AS corr, "
        f"CAST({P2P_RECV_SQL if p2p else 'NULL'} AS TINYINT) AS p2p_recv"
    )


DERIVED = derived()
_KINDS_SQL = ", ".join(sql_string(k) for k in WORK_KINDS)


def where(steps: tuple[int, int], ranks: tuple[int | None, int | None] | None = None) -> str:
    """Work events of steps low..high; with `ranks` (low, stop), those of ranks low <= rank < stop
    only (None: unbounded on that side)."""
    clause = f"step BETWEEN {int(steps[0])} AND {int(steps[1])} AND kind IN ({_KINDS_SQL}) AND dur >= 0"
    low, stop = ranks if ranks is not None else (None, None)
    if low is not None:
        clause += f" AND rank >= {int(low)}"
    if stop is not None:
        clause += f" AND rank < {int(stop)}"
    return clause


def events_sql(steps: tuple[int, int], ranks=None) -> str:
    """The plain query (strings as text), for readers without a DuckDB connection."""
    return f"SELECT {', '.join(COLUMNS)}, {DERIVED} FROM events WHERE {where(steps, ranks)}"


def _connection(run):
    """(a cursor of the DuckDB connection, schema) behind `run`, or None (read through run.sql).
    The reads have a cursor of their own: one may run in a second thread (compute.Replayer) while
    the caller queries the run, and each sets its own schema."""
    con = getattr(run, "con", None)
    return (con.cursor(), getattr(run, "schema", "main")) if con is not None else None


class Reader:
    """Reads a run's work events per step range. One scan (`step_counts`) counts the events of
    each step and finds the distinct strings of the coded columns (their dictionaries)."""

    def __init__(self, run):
        self.run = run
        self.target = _connection(run)
        self._dictionaries: dict[str, list[str]] | None = None
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
        query = f"SELECT step, COUNT(*) AS n FROM events WHERE {where_work} GROUP BY step ORDER BY step"
        if self.target is None:
            return self.run.sql(query)
        if self._dictionaries is None:
            self._register(where_work)
        counts = self._arrow(query).to_pandas()
        return counts.astype({"step": "int64", "n": "int64"}).reset_index(drop=True)

    def _register(self, where_work: str) -> None:
        """Each coded column's distinct values, sorted (the codes keep the strings' order, which
        the lane sort relies on), registered on the reader's cursor as a `DICTIONARY` table."""
        con, _ = self.target
        self._dictionaries = {}
        for name in CODED:
            values = self._arrow(
                f"SELECT DISTINCT CAST({name} AS VARCHAR) AS v FROM events "
                f"WHERE {where_work} AND {name} IS NOT NULL ORDER BY v"
            )["v"].combine_chunks()
            self._dictionaries[name] = values.to_pylist()
            con.register(
                DICTIONARY.format(name),
                pa.table({f"_value_{name}": values, f"_code_{name}": pa.array(range(len(values)), pa.int32())}),
            )

    def _derived_columns(self) -> str:
        """`derived()` for this run, probed once (each probe stops at its first hit): the
        correlation regex is a pass over every event's args, wasted on runs without ids."""
        if self._derived is None:

            def has(condition: str) -> bool:
                return self._arrow(f"SELECT 1 FROM events WHERE {condition} LIMIT 1").num_rows > 0

            self._derived = derived(has(CORRELATION_PRESENT), has("kind = 'p2p'"))
        return self._derived

    def read_sql(self, steps: tuple[int, int], ranks=None) -> str:
        """The coded read of steps low..high (of the `ranks` range, where(), when given): each
        coded column replaced by its code (-1: null)."""
        if self._dictionaries is None:
            self.step_counts()
        select = ", ".join(f"COALESCE(_code_{c}, -1) AS {c}" if c in CODED else f"e.{c}" for c in COLUMNS)
        joins = " ".join(f"LEFT JOIN {DICTIONARY.format(c)} ON e.{c} = _value_{c}" for c in CODED)
        return (
            f"SELECT {select}, e.corr, e.p2p_recv FROM (SELECT *, {self._derived_columns()} FROM events "
            f"WHERE {where(steps, ranks)}) e {joins}"
        )

    def read(self, steps: tuple[int, int], ranks=None) -> pd.DataFrame:
        """The work events of steps low..high, of the `ranks` range when given (where())
        (COLUMNS; string columns categorical)."""
        if self.target is None:
            return with_object_categories(self.run.sql(events_sql(steps, ranks)))
        frame = self._arrow(self.read_sql(steps, ranks)).to_pandas()
        for name in CODED:
            categories = pd.Index(self._dictionaries[name], dtype=object)
            frame[name] = pd.Categorical.from_codes(frame[name].to_numpy(np.int32), categories=categories)
        return frame


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
