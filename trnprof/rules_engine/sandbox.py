"""The sandbox rule SQL runs in: a DuckDB database holding only the tables the rules read, in a
private temporary folder, locked down before any rule runs.

Defence in depth, each layer enough on its own for the usual escapes:
1. only one SELECT statement is accepted (no COPY, ATTACH, SET, DDL, PRAGMA, INSTALL/LOAD);
2. external access is off (no file reads or writes, no file or remote attach, no extension
   install), Python replacement scans are off (no reading the host's DataFrames by name),
   extension autoloading is off, and the configuration is locked so no setting can be changed;
3. each query runs in a transaction that is rolled back.
A query runs in a worker thread (`interruptible`): past its time limit, or when the user presses
Ctrl-C, the waiting thread interrupts DuckDB (`connection.interrupt()`) and the query stops.

`trnprof query` runs in this sandbox too (`query_run`), over the run's own session instead of a
copy: the views it reads are computed first, then the session is locked the same way (`lock_down`),
DuckDB being allowed to read only the run's table files and its stored views (the files the
session's views read; `allowed_directories`/`allowed_paths`), then the query runs with `select`.
Memory: the engine has the sandbox read the stored views and the run's events and counters in place
(`in_place`: views over their Parquet files, the only files it may read); the tables copied in
live in a database file in the sandbox's private temporary folder, so DuckDB reads them
through its buffer pool instead of holding them (a small run's, `in_memory`, in memory). The sandbox has a
memory limit (default 2 GB, `--memory-limit`), the same folder for what DuckDB spills (removed on
close, capped at twice the limit) and a cap on the rows and the bytes a rule may return
(`fetch.py`: the result is fetched a vector at a time, so a huge result fails the rule before it
fills memory). The limit is per rule: one that exceeds it fails alone with DuckDB's one-line
"Out of Memory" error. Over a small run (its tables in memory) a few rules run at once
(`Sandbox.map`, each on a cursor of the locked database), sharing the limit; a rule that runs
out of memory there is evaluated again alone (`engine.evaluate`), so that it fails alone too.
The load-time checks (parsing a rule's SQL, listing the tables it reads) run on
`trnprof.sqlparse`'s connection, locked the same way: no connection the engine opens can
install or load an extension or reach the network. See DuckDB's "Securing DuckDB" page for the
settings.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import tempfile
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import wait as futures_wait
from typing import TypeVar

import duckdb
import pandas as pd
import pyarrow as pa

from trnprof import sqlparse
from trnprof.errors import TrnprofError
from trnprof.validation import MEMORY_BYTES

from . import fetch
from .fetch import MAX_RESULT_ROWS  # noqa: F401  (the row cap, read by the Spark sandbox and the tests)

DEFAULT_MEMORY_LIMIT = "2GB"
# set when a connection is made, before anything runs on it
NO_EXTENSIONS = {
    "autoinstall_known_extensions": False,
    "autoload_known_extensions": False,
    "allow_community_extensions": False,
    "python_enable_replacements": False,
}
LOCKDOWN = (
    "SET enable_progress_bar = false",  # a slow rule must not draw on the user's terminal
    "SET enable_external_access = false",
    "SET allow_community_extensions = false",
    "SET autoload_known_extensions = false",
    "SET autoinstall_known_extensions = false",
    "SET lock_configuration = true",
)


_UNITS = {
    "": 1,
    "B": 1,
    "KB": 10**3,
    "MB": 10**6,
    "GB": 10**9,
    "TB": 10**12,
    "KIB": 2**10,
    "MIB": 2**20,
    "GIB": 2**30,
    "TIB": 2**40,
}


def parse_size(text: str | int) -> int:
    """'2GB', '512MiB', '1.5 GB' or a number of bytes -> bytes; one clear error otherwise."""
    if isinstance(text, int) and not isinstance(text, bool):
        number, unit = text, ""
    else:
        match = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([A-Za-z]*)\s*", str(text))
        if not match or match.group(2).upper() not in _UNITS:
            raise TrnprofError(f"memory limit {text!r}: write a size such as 2GB, 512MB or 1.5GiB")
        number, unit = float(match.group(1)), match.group(2).upper()
    size = int(number * _UNITS[unit])
    if size < MEMORY_BYTES.low:
        raise TrnprofError(f"memory limit {text!r}: at least 16MiB (DuckDB needs some to run a query)")
    if not MEMORY_BYTES.contains(size):
        raise TrnprofError(f"memory limit {text!r}: at most 1PiB")
    return size


class SandboxError(Exception):
    """A rule query that was refused, failed or timed out; the message says which.
    `out_of_memory`: DuckDB ran out of the memory limit (which queries run at once share)."""

    def __init__(self, message: str, *, out_of_memory: bool = False):
        super().__init__(message)
        self.out_of_memory = out_of_memory


def too_many_rows() -> SandboxError:
    return SandboxError(str(fetch.too_many_rows()))


def check_select(sql: str, what: str = "rule SQL") -> None:
    """Refuse anything but exactly one SELECT statement (`what` names the SQL in the refusal)."""
    refusal = _refusal(sql)
    if refusal:
        raise SandboxError(refusal.format(what=what))


@functools.lru_cache(maxsize=4096)
def _refusal(sql: str) -> str | None:
    """Why `sql` is not exactly one SELECT ("{what}" left to fill), or None: a function of the
    text alone, so each rule's SQL is parsed once a process, not once a query."""
    try:
        statements = sqlparse.statements(sql)
    except duckdb.Error as exc:
        return "SQL does not parse: " + _first_line(exc).replace("{", "{{").replace("}", "}}")
    if len(statements) != 1 or statements[0].type != duckdb.StatementType.SELECT:
        kinds = ", ".join(s.type.name for s in statements) or "nothing"
        return "refused: {what} must be one SELECT statement, got " + kinds
    return None


def lock_down(con: duckdb.DuckDBPyConnection, readable: tuple[list[str], list[str]] = ([], [])) -> None:
    """Lock `con` for good: no file, network, extension or replacement scan, no setting changed.
    readable: (folders, files) DuckDB may still read, for views over files made before."""
    folders, files = readable
    if folders:
        con.execute("SET allowed_directories = ?", [folders])
    if files:
        con.execute("SET allowed_paths = ?", [files])
    con.execute("SET python_enable_replacements = false")
    for statement in LOCKDOWN:
        con.execute(statement)


_T = TypeVar("_T")
_R = TypeVar("_R")
Query = Callable[..., pd.DataFrame]  # query(sql, params=None, *, timeout=None): one SELECT's rows


def interruptible(con: duckdb.DuckDBPyConnection, work: Callable[[], _T], timeout: float | None = None) -> _T:
    """`work()` (DuckDB calls on `con`) in a worker thread, so that the time limit and Ctrl-C (a
    KeyboardInterrupt in this thread) stop it: DuckDB is interrupted until the worker ends."""
    outcome: dict = {}
    done = threading.Event()  # not Thread.join: a join cut by Ctrl-C marks a running thread ended

    def run():
        try:
            outcome["value"] = work()
        except BaseException as exc:  # handed to the waiting thread
            outcome["error"] = exc
        finally:
            done.set()

    threading.Thread(target=run, name="trnprof-sql", daemon=True).start()
    try:
        finished = done.wait(timeout)
    except KeyboardInterrupt:
        _stop(con, done)
        raise
    if not finished:
        _stop(con, done)
        if "value" not in outcome:
            raise SandboxError(f"timed out after {timeout:g} s")
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def _stop(con: duckdb.DuckDBPyConnection, done: threading.Event) -> None:
    """Interrupt DuckDB until the worker is `done` (it may be between two queries when first asked)."""
    while not done.is_set():
        con.interrupt()
        done.wait(0.05)


def select(
    con: duckdb.DuckDBPyConnection,
    sql: str,
    params: dict | None = None,
    *,
    timeout: float | None = None,
    budget: int | None = None,
) -> pd.DataFrame:
    """One SELECT on a locked connection, in a transaction rolled back after, with a time limit;
    its result within `budget` bytes (default: a quarter of the default memory limit) and
    MAX_RESULT_ROWS rows (`fetch.bounded`)."""
    check_select(sql)
    budget = budget or fetch.result_bytes(parse_size(DEFAULT_MEMORY_LIMIT))
    con.execute("BEGIN TRANSACTION")
    try:
        return interruptible(con, lambda: _bounded(con, sql, params, budget), timeout)
    except duckdb.InterruptException:
        raise SandboxError(f"timed out after {timeout:g} s") from None
    except duckdb.OutOfMemoryException as exc:
        raise SandboxError(_first_line(exc), out_of_memory=True) from None
    except duckdb.Error as exc:
        raise SandboxError(_first_line(exc)) from None
    finally:
        con.execute("ROLLBACK")


def _bounded(con: duckdb.DuckDBPyConnection, sql: str, params: dict | None, budget: int) -> pd.DataFrame:
    try:
        return fetch.bounded(con, sql, params, budget)
    except fetch.ResultError as exc:
        raise SandboxError(str(exc)) from None


def query_run(run, sql: str, *, timeout: float | None = None) -> pd.DataFrame:
    """`trnprof query` in the sandbox: one SELECT over an open run's tables and views (computed
    first, within the time limit), no file, setting or extension. Locks the run's session for
    good: open a run for this query alone. DuckDB runs only (Spark's: `spark_sandbox`)."""
    from trnprof import session

    check_select(sql, "the query")
    interruptible(run.con, lambda: session.prepare(run.con, sql), timeout)
    lock_down(run.con, session.readable_files(run.con))
    return select(run.con, sql, timeout=timeout)


def _first_line(exc: Exception) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


class Sandbox:
    """Tables copied in, then locked; `query()` runs one SELECT with a time limit."""

    def __init__(
        self,
        tables: dict[str, pa.Table],
        *,
        threads: int | None = None,
        memory_limit: str | int = DEFAULT_MEMORY_LIMIT,
        in_memory: bool = False,
        in_place: dict[str, tuple[str, list[str]]] | None = None,
        workers: int = 1,
    ):
        """in_memory: hold the tables in memory instead of a database file (small tables: no
        file to write, sync and remove; DuckDB still spills to the private folder).
        in_place: name -> (the SELECT that reads it, its files): tables read from the run's own
        files rather than copied (the events of a large run), those files alone readable.
        workers: how many `map` runs at once (they share the memory limit)."""
        budget = parse_size(memory_limit)
        self.result_bytes = fetch.result_bytes(budget)
        self.temp = tempfile.mkdtemp(prefix="trnprof-sandbox-")
        config = dict(NO_EXTENSIONS, temp_directory=self.temp, max_temp_directory_size=f"{2 * budget}B")
        if threads:
            config["threads"] = int(threads)
        self.con = duckdb.connect(":memory:" if in_memory else os.path.join(self.temp, "tables.duckdb"), config=config)
        for name, table in tables.items():
            self.con.register("_sandbox_source", table)
            self.con.execute(f'CREATE TABLE "{name}" AS SELECT * FROM _sandbox_source')
            self.con.unregister("_sandbox_source")
        readable = []
        for name, (select, files) in (in_place or {}).items():
            self.con.execute(f'CREATE VIEW "{name}" AS {select}')
            readable += files
        # what the buffer pool holds of the tables now (cached blocks): each rule gets `budget` on top
        held = self.con.execute("SELECT SUM(memory_usage_bytes) FROM duckdb_memory()").fetchone()[0] or 0
        self.con.execute(f"SET memory_limit = '{int(held) + budget}B'")
        lock_down(self.con, ([], readable))
        self.tables = (*tables, *(in_place or {}))
        self.workers = workers

    def query(self, sql: str, params: dict | None = None, *, timeout: float | None = None) -> pd.DataFrame:
        return select(self.con, sql, params, timeout=timeout, budget=self.result_bytes)

    def map(self, work: Callable[[Query, _T], _R], items: list[_T]) -> list[_R]:
        """`work(query, item)` for each item, results in order. With `workers` > 1, that many at
        once, each querying through its own cursor (a connection to the same locked database:
        every lock holds on it). Ctrl-C interrupts them all and waits for them to end."""
        if self.workers <= 1 or len(items) < 2:
            return [work(self.query, item) for item in items]
        local, cursors, guard = threading.local(), [], threading.Lock()

        def query(sql: str, params: dict | None = None, *, timeout: float | None = None) -> pd.DataFrame:
            if not hasattr(local, "cursor"):
                local.cursor = self.con.cursor()
                with guard:
                    cursors.append(local.cursor)
            return select(local.cursor, sql, params, timeout=timeout, budget=self.result_bytes)

        pool = ThreadPoolExecutor(self.workers, thread_name_prefix="trnprof-rules")
        futures = [pool.submit(work, query, item) for item in items]
        try:
            return [future.result() for future in futures]
        except KeyboardInterrupt:
            for future in futures:
                future.cancel()  # those not started
            while futures_wait(futures, timeout=0.05).not_done:
                with guard:
                    for cursor in cursors:
                        cursor.interrupt()
            raise
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
            for cursor in cursors:
                cursor.close()

    def close(self) -> None:
        self.con.close()
        shutil.rmtree(self.temp, ignore_errors=True)
