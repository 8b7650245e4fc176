"""SQL read as text: statements, the tables a query names and its parse tree, from DuckDB's own
parser on one empty connection a process shares (opening a connection costs 15-30 ms).

The connection is locked the way the rule sandbox is: no file, network, extension or Python
replacement scan, and no setting can be changed. Each call runs on a cursor of its own (a fresh
context on the same locked database, 0.07 ms): calls from several threads do not wait for each
other (diff reads its two runs in threads), and a failed one leaves nothing behind for the next.
"""

from __future__ import annotations

import contextlib
import functools
import json
import threading

import duckdb

_LOCK = threading.Lock()


@functools.cache
def _connection() -> duckdb.DuckDBPyConnection:
    return duckdb.connect(
        ":memory:",
        config={
            "autoinstall_known_extensions": False,
            "autoload_known_extensions": False,
            "allow_community_extensions": False,
            "python_enable_replacements": False,
            "enable_external_access": False,
            "lock_configuration": True,
        },
    )


@contextlib.contextmanager
def _cursor():
    with _LOCK:  # opening the shared connection, and a cursor on it
        cursor = _connection().cursor()
    try:
        yield cursor
    finally:
        cursor.close()


def statements(sql: str) -> list[duckdb.Statement]:
    """The statements of `sql`, parsed; duckdb.Error when it does not parse."""
    with _cursor() as cursor:
        return cursor.extract_statements(sql)


def table_names(sql: str) -> set[str]:
    """The tables one statement reads (DuckDB's `get_table_names`)."""
    with _cursor() as cursor:
        return cursor.get_table_names(sql)


def syntax_tree(sql: str) -> dict:
    """DuckDB's parse tree of `sql` (`json_serialize_sql`), as JSON objects."""
    with _cursor() as cursor:
        text = cursor.execute("SELECT json_serialize_sql(?::VARCHAR)", [sql]).fetchone()[0]
    return json.loads(text)
