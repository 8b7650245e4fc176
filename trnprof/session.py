"""DuckDB sessions over runs: the run's tables as views, then the SQL stdlib on top."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import duckdb

from .errors import TrnprofError, first_line
from .schema import PARTITIONED_TABLES, TABLE_COLUMNS, duckdb_type
from .stdlib import load_views

# Views that many queries reuse and that are costly to recompute: `materialize()` turns them
# into tables once per session (e.g. before running every rule of a pack).
MATERIALIZABLE = ("steps", "step_breakdown", "collectives")


def sql_string(text: str) -> str:
    """`text` as a SQL string literal."""
    return "'" + str(text).replace("'", "''") + "'"


def _empty_select(table: str) -> str:
    columns = ", ".join(f"CAST(NULL AS {duckdb_type(typ)}) AS {name}"
                        for name, typ, _, _ in TABLE_COLUMNS[table])
    return f"SELECT {columns} WHERE FALSE"


def _table_select(con: duckdb.DuckDBPyConnection, run_dir: Path, table: str) -> str:
    """The canonical columns of one table. A nullable column that the run's files lack (written
    before the column existed) reads as nulls; a missing required column is an error."""
    if table in PARTITIONED_TABLES:
        sample = next((run_dir / table).glob("rank=*/*.parquet"), None)
        if sample is None:
            return _empty_select(table)
        pattern = sql_string(str(run_dir / table / "rank=*" / "*.parquet"))
        source = f"read_parquet({pattern}, hive_partitioning = true, hive_types = {{'rank': INTEGER}})"
    else:
        sample = run_dir / f"{table}.parquet"
        source = f"read_parquet({sql_string(str(sample))})"
    # the run store writes every file of a table with one schema: one file tells its columns
    present = {row[0] for row in con.execute(f"DESCRIBE SELECT * FROM read_parquet({sql_string(str(sample))})").fetchall()}
    present.add("rank") if table in PARTITIONED_TABLES else None
    columns = []
    for name, typ, nullable, _ in TABLE_COLUMNS[table]:
        if name in present:
            columns.append(name)
        elif nullable:
            columns.append(f"CAST(NULL AS {duckdb_type(typ)}) AS {name}")
        else:
            raise TrnprofError(f"damaged run {run_dir}: its {table} table has no {name!r} column")
    return f"SELECT {', '.join(columns)} FROM {source}"


def attach_run(con: duckdb.DuckDBPyConnection, run_dir: Path, schema: str = "main") -> None:
    """Create `events`, `counters`, `ranks` and every stdlib view in `schema`."""
    if schema != "main":
        con.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
    con.execute(f'SET schema = {sql_string(schema)}')
    try:
        for table in TABLE_COLUMNS:
            try:
                con.execute(f"CREATE VIEW {table} AS {_table_select(con, run_dir, table)}")
            except duckdb.Error as exc:
                raise TrnprofError(f"damaged run {run_dir}: cannot read its {table} table "
                                   f"({first_line(exc)}); re-create the run") from None
        for view in load_views():
            con.execute(view.sql)
    finally:
        con.execute("SET schema = 'main'")


# DuckDB's memory budget per session: large sweeps spill to disk beyond it instead of growing
# the process (bench/bench_stdlib.py: 10M events sweep in ~1.7 GB peak RSS at this setting).
DEFAULT_MEMORY_LIMIT = "1536MB"


def connect(threads: int | None = None, memory_limit: str | None = None) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB session; TRNPROF_MEMORY_LIMIT / TRNPROF_THREADS override defaults."""
    con = duckdb.connect(":memory:")
    threads = threads or os.environ.get("TRNPROF_THREADS")
    if threads:
        con.execute(f"SET threads = {int(threads)}")
    limit = memory_limit or os.environ.get("TRNPROF_MEMORY_LIMIT", DEFAULT_MEMORY_LIMIT)
    con.execute(f"SET memory_limit = {sql_string(limit)}")
    con.execute(f"SET temp_directory = {sql_string(os.path.join(tempfile.gettempdir(), 'trnprof-duckdb'))}")
    con.execute("SET preserve_insertion_order = false")
    con.execute("SET parquet_metadata_cache = true")  # a run has a file per rank: read footers once
    con.execute("SET enable_progress_bar = false")  # DuckDB draws it on stdout: it would corrupt --format json
    return con


def materialize(con: duckdb.DuckDBPyConnection, names=MATERIALIZABLE, schema: str = "main") -> None:
    """Replace the views `names` of `schema` by tables holding their rows (idempotent)."""
    for name in names:
        # fetchall, not fetchone: an unfinished result makes the connection's next query fail
        kind = con.execute(
            "SELECT table_type FROM information_schema.tables WHERE table_schema = ? AND table_name = ?",
            [schema, name]).fetchall()
        if not kind or kind[0][0] != "VIEW":
            continue
        con.execute(f'CREATE TABLE "{schema}"."_m_{name}" AS SELECT * FROM "{schema}"."{name}"')
        con.execute(f'DROP VIEW "{schema}"."{name}"')
        con.execute(f'ALTER TABLE "{schema}"."_m_{name}" RENAME TO "{name}"')
