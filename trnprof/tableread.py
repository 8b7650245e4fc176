"""The run's Parquet tables as SQL: each table's canonical columns read from its files, and
SQL string literals. The storage layer's reading side, shared by sessions, batches and the
collectors that query their inputs with DuckDB."""

from __future__ import annotations

from pathlib import Path

import duckdb

from .errors import TrnprofError
from .schema import PARTITIONED_TABLES, TABLE_COLUMNS, duckdb_type


def sql_string(text: str) -> str:
    """`text` as a SQL string literal."""
    return "'" + str(text).replace("'", "''") + "'"


def sql_name(name: str) -> str:
    """`name` as a quoted SQL identifier."""
    return '"' + name.replace('"', '""') + '"'


def empty_select(table: str) -> str:
    columns = ", ".join(f"CAST(NULL AS {duckdb_type(typ)}) AS {name}" for name, typ, _, _ in TABLE_COLUMNS[table])
    return f"SELECT {columns} WHERE FALSE"


def table_select(con: duckdb.DuckDBPyConnection, run_dir: Path, table: str, files: list[Path]) -> str:
    """The canonical columns of one table read from `files`. A nullable column that the run's
    files lack (written before the column existed) reads as nulls; a missing required column
    is an error."""
    if not files:
        return empty_select(table)
    listed = "[" + ", ".join(sql_string(str(f)) for f in files) + "]"
    if table in PARTITIONED_TABLES:
        source = f"read_parquet({listed}, hive_partitioning = true, hive_types = {{'rank': INTEGER}})"
    else:
        source = f"read_parquet({listed})"
    # the run store writes every file of a table with one schema: one file tells its columns
    described = con.execute(f"DESCRIBE SELECT * FROM read_parquet({sql_string(str(files[0]))})").fetchall()
    present = {row[0] for row in described} | ({"rank"} if table in PARTITIONED_TABLES else set())
    columns = []
    for name, typ, nullable, _ in TABLE_COLUMNS[table]:
        if name in present:
            columns.append(name)
        elif nullable:
            columns.append(f"CAST(NULL AS {duckdb_type(typ)}) AS {name}")
        else:
            raise TrnprofError(f"damaged run {run_dir}: its {table} table has no {name!r} column")
    return f"SELECT {', '.join(columns)} FROM {source}"
