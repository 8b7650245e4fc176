"""DuckDB sessions over runs: the run's tables as views, then the SQL stdlib on top.

Each session has a memory budget (DuckDB spills to disk beyond it) and a private temporary
folder for that spilling, removed with the session. Costly stdlib views are computed per batch
of ranks and stored as Parquet (`batches.py`), in the run's `derived/` cache (`derived.py`)
when the run folder can be written, so a later session of the same run reads them back.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import tempfile
import weakref
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

from . import batches, device_tables, progress, sqlparse
from .derived import Store, data_files
from .errors import TrnprofError, first_line
from .schema import TABLE_COLUMNS
from .stdlib import create_view, load_views
from .tableread import sql_string, table_select

# The views the report and most rules read: `materialize()` computes them by default.
MATERIALIZABLE = ("steps", "step_breakdown", "collectives")

# DuckDB's memory budget per session: every sweep and join spills to disk beyond it instead of
# growing the process (docs/performance.md: peak RSS of `analyze` at 44M events).
DEFAULT_MEMORY_LIMIT = "1536MB"


@dataclass
class _Session:
    scratch: Path  # private temporary folder: DuckDB's spill files, stored views of read-only runs
    memory_limit: str
    runs: dict[str, batches.AttachedRun] = field(default_factory=dict)  # schema -> attached run
    prepared: dict[str, set[str]] = field(default_factory=dict)  # schema -> names `prepare` made ready


_SESSIONS: "weakref.WeakKeyDictionary[duckdb.DuckDBPyConnection, _Session]" = weakref.WeakKeyDictionary()
show_progress = progress.show_progress  # draw a bar while views are computed (trnprof/progress.py)


def _session(con: duckdb.DuckDBPyConnection) -> _Session:
    state = _SESSIONS.get(con)
    if state is None:
        raise TrnprofError("internal: this DuckDB connection was not made by trnprof.session.connect()")
    return state


def attach_run(con: duckdb.DuckDBPyConnection, run_dir: Path, schema: str = "main") -> None:
    """Create `events`, `counters`, `ranks` and every stdlib view in `schema`; views the run's
    cache already holds read their stored results."""
    state = _session(con)
    files = data_files(run_dir)
    try:
        store = Store(run_dir, files, state.scratch)
    except OSError as exc:
        raise TrnprofError(f"cannot read run {run_dir}: {exc.strerror or first_line(exc)}") from None
    attached = batches.AttachedRun(run_dir, schema, files, store)
    if schema != "main":
        con.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
    con.execute(f"SET schema = {sql_string(schema)}")
    try:
        for table in TABLE_COLUMNS:
            try:
                con.execute(f"CREATE VIEW {table} AS {table_select(con, run_dir, table, attached.table_files(table))}")
            except duckdb.Error as exc:
                raise TrnprofError(
                    f"damaged run {run_dir}: cannot read its {table} table ({first_line(exc)}); re-create the run"
                ) from None
        try:
            device_tables.attach(con, run_dir)
        except duckdb.Error as exc:
            raise TrnprofError(f"damaged run {run_dir}: cannot read its device profile ({first_line(exc)})") from None
        for view in load_views():
            create_view(con, view)
    finally:
        con.execute("SET schema = 'main'")
    for view in load_views():
        if store.files(view.name):
            batches.read_stored(con, attached, view.name)
    state.runs[schema] = attached


def memory_budget() -> str:
    """The memory budget of a session: TRNPROF_MEMORY_LIMIT, else DEFAULT_MEMORY_LIMIT."""
    return os.environ.get("TRNPROF_MEMORY_LIMIT", DEFAULT_MEMORY_LIMIT)


def connect(threads: int | None = None, memory_limit: str | None = None) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB session; TRNPROF_MEMORY_LIMIT / TRNPROF_THREADS override defaults."""
    con = duckdb.connect(":memory:")
    threads = threads or os.environ.get("TRNPROF_THREADS")
    if threads:
        con.execute(f"SET threads = {int(threads)}")
    limit = memory_limit or memory_budget()
    try:
        con.execute(f"SET memory_limit = {sql_string(limit)}")
    except duckdb.Error:
        raise TrnprofError(f"memory limit {limit!r} not understood: give a size such as 1536MB or 4GB") from None
    scratch = Path(tempfile.mkdtemp(prefix="trnprof-"))  # mode 0700: private to this user
    weakref.finalize(con, shutil.rmtree, scratch, True)
    _SESSIONS[con] = _Session(scratch, limit)
    con.execute(f"SET temp_directory = {sql_string(str(scratch / 'spill'))}")
    con.execute("SET preserve_insertion_order = false")
    con.execute("SET parquet_metadata_cache = true")  # a run has a file per rank: read footers once
    con.execute("SET enable_progress_bar = false")  # DuckDB draws it on stdout: it would corrupt --format json
    return con


def close(con: duckdb.DuckDBPyConnection) -> None:
    """Close a session: release its runs' cache entries (others may sweep them) and DuckDB."""
    state = _SESSIONS.get(con)
    for attached in state.runs.values() if state else ():
        attached.store.release()
    con.close()


def materialize(con: duckdb.DuckDBPyConnection, names=MATERIALIZABLE, schema: str = "main") -> None:
    """Compute the stdlib views `names` of `schema` (and the views they read) once and store
    them, so later queries read stored rows (idempotent). Views as large as the events
    (`batches.ROW_LEVEL`) stay views."""
    state = _session(con)
    attached = state.runs.get(schema)
    if attached is None:
        raise TrnprofError(f"internal: no run attached in schema {schema!r}")
    batches.materialize(con, attached, names, memory_limit=state.memory_limit, progress=progress.progress_shown())


def readable_files(con: duckdb.DuckDBPyConnection) -> tuple[list[str], list[str]]:
    """(folders, files) the session's views read: each attached run's table files and folders,
    its stored views and the spill folder. A locked session may read only these
    (`rules_engine.sandbox.lock_down`)."""
    state = _session(con)
    folders, files = [f"{state.scratch / 'spill'}/"], []
    for attached in state.runs.values():
        folders += [f"{attached.run_dir / table}/" for table in TABLE_COLUMNS if (attached.run_dir / table).is_dir()]
        files += [str(path) for path in data_files(attached.run_dir)]
        folders.append(f"{attached.store.root}/")
    return folders, files


def table_source(con: duckdb.DuckDBPyConnection, table: str, schema: str = "main") -> tuple[str, list[str]]:
    """The SELECT that reads `table` (events, counters, ranks) of the attached run from its files,
    and those files: for another connection that reads the table in place (the rule sandbox)."""
    attached = _session(con).runs[schema]
    files = attached.table_files(table)
    return table_select(con, attached.run_dir, table, files), [str(path) for path in files]


def stored_source(con: duckdb.DuckDBPyConnection, view: str, schema: str = "main") -> tuple[str, list[str]] | None:
    """The SELECT that reads the stored view `view` from its (verified) Parquet files, and those
    files, or None when it is not stored: for a connection that reads it in place (the rule sandbox)."""
    attached = _session(con).runs[schema]
    pattern = attached.store.files(view) if view in attached.stored else None
    if pattern is None:
        return None
    files = sorted(str(path) for path in Path(pattern).parent.glob("*.parquet"))
    listed = ", ".join(sql_string(path) for path in files)
    return (f"SELECT * FROM read_parquet([{listed}])", files) if files else None


def store_of(con: duckdb.DuckDBPyConnection, schema: str = "main") -> Store | None:
    """The `derived/` store of the run attached as `schema` (None when none is)."""
    attached = _session(con).runs.get(schema)
    return attached.store if attached is not None else None


def is_stored(con: duckdb.DuckDBPyConnection, view: str, schema: str = "main") -> bool:
    """Whether `view` of `schema` is stored (computed in this session or an earlier one)."""
    attached = _session(con).runs.get(schema)
    return attached is not None and (view in attached.stored or attached.store.files(view) is not None)


def prepare(con: duckdb.DuckDBPyConnection, query: str) -> None:
    """Compute and store the stdlib views `query` reads, so it runs within the memory budget.
    A query whose words name no view or critical path table that is not ready in every attached
    run needs nothing: it is not parsed (`tables_read` would find only ready names)."""
    state = _session(con)
    named = {word.lower() for word in _WORD.findall(query)} & _preparable()
    if all(_ready(named, attached, state.prepared.get(schema, set())) for schema, attached in state.runs.items()):
        return
    schemas = {schema.lower(): schema for schema in state.runs}
    wanted: dict[str, set[str]] = {}
    for schema, name in tables_read(query):
        schema = schemas.get((schema or "main").lower())
        if schema is not None:
            wanted.setdefault(schema, set()).add(name.lower())
    for schema, names in wanted.items():
        materialize(con, names, schema)
        if names & set(_critical_path_tables()):
            from .critical_path import tables

            tables.attach(con, schema)
        state.prepared.setdefault(schema, set()).update(names)


_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _ready(names: set[str], attached: batches.AttachedRun, prepared: set[str]) -> bool:
    """Whether `prepare` would do nothing for `names` in this run: no view among them, nor under
    them, left to store, and the critical path tables among them already made."""
    paths = names & {name.lower() for name in _critical_path_tables()}
    return paths <= prepared and not batches.to_store(names - paths, attached.stored)


@functools.cache
def _preparable() -> frozenset[str]:
    """The names `prepare` may act on: the stdlib views and the critical path tables."""
    return frozenset(view.name.lower() for view in load_views()) | {name.lower() for name in _critical_path_tables()}


def tables_read(query: str) -> set[tuple[str | None, str]]:
    """(schema or None, name) of every table `query` names (CTE names included), from DuckDB's
    own parse tree: any alias, case, join or nesting. Empty when it does not parse (running it
    reports the error). `duckdb.get_table_names` binds, so it fails on a `USING` join over
    tables it does not know, and writes an aliased table as 'name AS alias'."""
    found, todo = set(), [sqlparse.syntax_tree(query)]
    while todo:
        node = todo.pop()
        if isinstance(node, list):
            todo += node
        elif isinstance(node, dict):
            if node.get("type") == "BASE_TABLE":
                found.add((node.get("schema_name") or None, node["table_name"]))
            todo += node.values()
    return found


def _critical_path_tables() -> tuple[str, ...]:
    from .critical_path.tables import NAMES

    return NAMES
