"""The sandbox rule SQL runs in: an in-memory DuckDB holding only the tables the rules read,
locked down before any rule runs.

Defence in depth, each layer enough on its own for the usual escapes:
1. only one SELECT statement is accepted (no COPY, ATTACH, SET, DDL, PRAGMA, INSTALL/LOAD);
2. external access is off (no file reads or writes, no file or remote attach, no extension
   install), Python replacement scans are off (no reading the host's DataFrames by name),
   extension autoloading is off, and the configuration is locked so no setting can be changed;
3. each query runs in a transaction that is rolled back.
A query that runs past its time limit is interrupted from a timer (`connection.interrupt()`).
See DuckDB's "Securing DuckDB" page for the settings.
"""

from __future__ import annotations

import threading

import duckdb
import pandas as pd
import pyarrow as pa

LOCKDOWN = (
    "SET enable_external_access = false",
    "SET allow_community_extensions = false",
    "SET autoload_known_extensions = false",
    "SET autoinstall_known_extensions = false",
    "SET lock_configuration = true",
)


class SandboxError(Exception):
    """A rule query that was refused, failed or timed out; the message says which."""


def check_select(sql: str) -> None:
    """Refuse anything but exactly one SELECT statement."""
    try:
        statements = duckdb.extract_statements(sql)
    except duckdb.Error as exc:
        raise SandboxError(f"SQL does not parse: {_first_line(exc)}") from None
    if len(statements) != 1 or statements[0].type != duckdb.StatementType.SELECT:
        kinds = ", ".join(s.type.name for s in statements) or "nothing"
        raise SandboxError(f"refused: rule SQL must be one SELECT statement, got {kinds}")


def _first_line(exc: Exception) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


class Sandbox:
    """Tables copied in, then locked; `query()` runs one SELECT with a time limit."""

    def __init__(self, tables: dict[str, pa.Table], *, threads: int | None = None):
        config = {"python_enable_replacements": False}
        if threads:
            config["threads"] = int(threads)
        self.con = duckdb.connect(":memory:", config=config)
        for name, table in tables.items():
            self.con.register("_sandbox_source", table)
            self.con.execute(f'CREATE TABLE "{name}" AS SELECT * FROM _sandbox_source')
            self.con.unregister("_sandbox_source")
        for statement in LOCKDOWN:
            self.con.execute(statement)
        self.tables = tuple(tables)

    def query(self, sql: str, params: dict | None = None, *, timeout: float | None = None) -> pd.DataFrame:
        check_select(sql)
        timer = threading.Timer(timeout, self.con.interrupt) if timeout else None
        self.con.execute("BEGIN TRANSACTION")
        try:
            if timer:
                timer.start()
            result = self.con.execute(sql, params or None).df()
        except duckdb.InterruptException:
            raise SandboxError(f"timed out after {timeout:g} s") from None
        except duckdb.Error as exc:
            raise SandboxError(_first_line(exc)) from None
        finally:
            if timer:
                timer.cancel()
                timer.join()
            self.con.execute("ROLLBACK")
        return result

    def close(self) -> None:
        self.con.close()
