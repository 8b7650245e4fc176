"""Bind rule SQL against the columns of the tables and stdlib views, before any run: a column
typo is one load error naming the rule file, the field and the column, not a failure at
analysis time.

The schema is a DuckDB session over empty tables with every stdlib view (built once per
process); binding a query resolves its names and types without running it."""

from __future__ import annotations

import threading
from functools import lru_cache

import duckdb

from trnprof import device_tables, session_tables
from trnprof.schema import TABLE_COLUMNS
from trnprof.stdlib import load_views
from trnprof.tableread import empty_select

_LOCK = threading.Lock()


@lru_cache(maxsize=1)
def _schema() -> duckdb.DuckDBPyConnection:
    con = duckdb.connect(":memory:")
    session_tables.attach_tables(con, {})
    for table in TABLE_COLUMNS:
        con.execute(f"CREATE VIEW {table} AS {empty_select(table)}")
    device_tables.attach(con, None)
    for view in load_views():
        con.execute(view.sql)
    return con


def bind_problem(sql: str, params: dict) -> str | None:
    """Why `sql` (with `params` for its $names) does not bind: the binder's message with its
    candidate names, e.g. 'Referenced column "idel" not found ... Candidate bindings: "idle"';
    None when it binds."""
    with _LOCK:
        cursor = _schema().cursor()
    try:
        cursor.sql(sql, params=params or None).columns
    except duckdb.BinderException as exc:
        lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
        return " ".join(lines[:2])
    except duckdb.Error:
        return None  # not a naming problem: the run decides (e.g. a cast that fails on a value)
    finally:
        cursor.close()
    return None
