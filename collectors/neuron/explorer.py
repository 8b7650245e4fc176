"""Neuron Explorer Parquet profiles -> events and counters (docs/ingest.md, "Neuron Explorer").

A profile is a folder with one Parquet file per table of the Explorer profile schema v7.4.0
(aws-neuron/aws-neuron-sdk tools/neuron-explorer/profile-schema-reference.rst, v7.4.0), named after the table
(`CcOp.parquet`, `cc_op.parquet`). No real profile was available: the tests use tables built
from the documented fields. Mapped, in SQL (DuckDB), with every other field kept in `args`:
- `Instruction` -> compute on `nc/<engine>` (`nc/pcoreP/<engine>` for a second physical
  core), name = `opcode`;
- `CcOp` -> collective (`p2p` for send/recv) on `nc/cc`, name = `operation`, coll_op
  normalised, bytes = max(input_size, output_size) (nccl-tests size, as the table's own
  algorithm_bandwidth uses), coll_group = `replica_group`, coll_seq = `op_id`, coll_ranks = size
  of the first replica group; `algorithm`, `algorithm_bandwidth`, `bus_bandwidth` stay in args;
- `SystemProfileEvents` -> events by name (`names.py`), rank from `nc_idx`;
- `HbmUsage` -> counters `hbm_traffic.throughput` (bytes/s) and `hbm_traffic.transferred`
  (bytes, cumulative): HBM traffic, not residency, so not `hbm.*`;
- `HostMemUsage` -> `host.memory.used` (bytes), `host.memory.used_percent`;
  the other columns of both stay in the counter's `args`.
Every table (the mapped ones too) is copied to `neuron_explorer/<table>` in the run with two
columns in front, `rank` and `step` (null: the profile is one execution), which the session's
device tables and the stdlib's device views read (trnprof/device_tables.py). The profile's span
(first start to last end of its instructions, DMA packets and collectives) becomes one `step`
event (step 0, lane `nc/profile`), so an Explorer profile ingested alone has a step to judge.
Rank = `--rank`, else `Metadata.neuroncore_idx`, else 0. `Metadata.profile_schema_version` is
checked: a major version other than 7 (the schema trnprof reads) loads with one warning.
"""

from __future__ import annotations

import re
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.compute  # noqa: F401 (pa.compute)
import pyarrow.parquet as pq

from trnprof.collectors.common.limits import check_rank
from trnprof.collectors.common.source import Source
from trnprof.collectors.common.tables import quarantine_table
from trnprof.collectors.kineto.classify import P2P_OPS, normalize_op
from trnprof.errors import TrnprofError, first_line
from trnprof.runstore import conform
from trnprof.schema import COUNTERS, EVENTS
from trnprof.tableread import sql_string

from .explorer_tables import table_files
from .names import classify

MAPPED_TABLES = ("Instruction", "CcOp", "SystemProfileEvents", "HbmUsage", "HostMemUsage")
KNOWN_SCHEMA_MAJOR = 7  # profile schema 7.x.y (v7.4.0: Neuron 2.31)
_SPAN_TABLES = ("Instruction", "DmaPacket", "CcOp")


def snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _args(columns: list[str], mapped: set[str]) -> str:
    """SQL for a JSON object of the columns without a canonical column."""
    rest = [c for c in columns if c not in mapped]
    if not rest:
        return "NULL"
    return "to_json(struct_pack(" + ", ".join(f"{_quoted(c)} := {_quoted(c)}" for c in rest) + "))"


def _require(table: str, columns: list[str], needed: tuple[str, ...], path: Path) -> None:
    missing = [c for c in needed if c not in columns]
    if missing:
        raise TrnprofError(
            f"{path}: {table} lacks required field(s) {', '.join(missing)} (Neuron Explorer profile schema)"
        )


def _read(file: Path, columns=None) -> pa.Table:
    try:
        return pq.read_table(file, columns=columns)
    except (pa.ArrowException, OSError) as exc:
        raise TrnprofError(f"{file}: not a readable Parquet file ({first_line(exc)})") from None


def _rank(files: dict[str, Path], option: int | None) -> tuple[int, str]:
    if option is not None:
        return check_rank(option, "--rank"), "--rank"
    meta = files.get("Metadata")
    if meta is not None:
        table = _read(meta)
        if "neuroncore_idx" in table.column_names and table.num_rows and table["neuroncore_idx"][0].is_valid:
            value = table["neuroncore_idx"][0].as_py()
            if isinstance(value, str) and value.strip().isdigit():
                value = int(value)
            return check_rank(value, f"{meta}: Metadata.neuroncore_idx"), "Metadata.neuroncore_idx"
    return 0, "default"


def read_explorer(path: Path, rank: int | None = None) -> Source:
    folder = path if path.is_dir() else path.parent
    files = table_files(folder) if path.is_dir() else {t: p for t, p in table_files(folder).items() if p == path}
    if not files:
        raise TrnprofError(f"{path}: no Neuron Explorer tables (expected e.g. CcOp.parquet, Instruction.parquet)")
    the_rank, origin = _rank(files, rank)
    con = duckdb.connect(
        ":memory:",
        config={
            "enable_external_access": True,
            "autoinstall_known_extensions": False,
            "autoload_known_extensions": False,
        },
    )
    events, counters, extra, to, sources = [], [], {}, {}, {}
    try:
        for table, file in sorted(files.items()):
            try:
                columns = [f.name for f in pq.read_schema(file)]
                sources[table] = pq.ParquetFile(file).metadata.num_rows
            except (pa.ArrowException, OSError) as exc:
                raise TrnprofError(f"{file}: not a readable Parquet file ({first_line(exc)})") from None
            try:
                to[table] = _map_table(con, table, file, columns, the_rank, events, counters, extra)
            except duckdb.Error as exc:
                raise TrnprofError(f"{file}: cannot read the {table} table: {first_line(exc)}") from None
            except TrnprofError as exc:
                if str(exc).startswith(str(file)):
                    raise
                raise TrnprofError(f"{file}: {exc}") from None
    finally:
        con.close()
    for table, file in sorted(files.items()):
        extra[f"neuron_explorer/{snake(table)}"] = _keyed(_read(file), the_rank)
    warnings = _schema_warnings(files)
    span = _profile_step(files, the_rank)
    if span is not None:
        events.append(span)
    events_table = pa.concat_tables(events) if events else EVENTS.empty_table()
    counters_table = pa.concat_tables(counters) if counters else COUNTERS.empty_table()
    totals = {"events": 0, "counters": 0, "meta": 0, "quarantine": 0}
    for table, dest in to.items():
        totals[dest] += sources[table]
    counts = {
        "source_entries": sum(sources.values()),
        "to": totals,
        "counter_rows": counters_table.num_rows,
        "by_source": {table: {to[table]: n} for table, n in sorted(sources.items())},
        "quarantine_reasons": {},
        **({"warnings": warnings} if warnings else {}),
    }
    return Source(
        path=path,
        format="neuron-explorer",
        events=events_table,
        counters=counters_table,
        extra=extra,
        quarantine=quarantine_table([], the_rank, path.name),
        ranks=[{"rank": the_rank}],
        counts=counts,
        rank_from=origin,
    )


def _map_table(
    con, table: str, file: Path, columns: list[str], rank: int, events: list, counters: list, extra: dict
) -> str:
    """Map one Explorer table into `events`, `counters` or `extra`; returns where it went."""
    source = f"read_parquet({sql_string(str(file))})"
    if table == "Instruction":
        events.append(_instructions(con, source, columns, rank, file))
    elif table == "CcOp":
        events.append(_collectives(con, source, columns, rank, file))
    elif table == "SystemProfileEvents":
        events.append(_system_events(con, source, columns, rank, file))
    elif table in ("HbmUsage", "HostMemUsage"):
        counters.append(_usage(con, table, source, columns, rank, file))
        return "counters"
    else:
        return "meta"
    return "events"


def _keyed(table: pa.Table, rank: int) -> pa.Table:
    """The Explorer table with `rank` and `step` (null) in front (replacing columns of those names)."""
    table = table.drop_columns([c for c in ("rank", "step") if c in table.column_names])
    return table.add_column(0, "step", pa.nulls(table.num_rows, pa.int32())).add_column(
        0, "rank", pa.array([rank] * table.num_rows, pa.int32())
    )


def _schema_warnings(files: dict[str, Path]) -> list[str]:
    """One warning when Metadata names a schema version trnprof does not know."""
    meta = files.get("Metadata")
    if meta is None:
        return []
    table = _read(meta)
    if "profile_schema_version" not in table.column_names or not table.num_rows:
        return [f"{meta}: no Metadata.profile_schema_version; read as schema {KNOWN_SCHEMA_MAJOR}.x"]
    version = str(table["profile_schema_version"][0].as_py())
    major = version.split(".")[0]
    if not major.isdigit() or int(major) != KNOWN_SCHEMA_MAJOR:
        return [
            f"{meta}: profile schema version {version!r} is not one trnprof knows ({KNOWN_SCHEMA_MAJOR}.x, "
            "Neuron Explorer 7.4.0); loaded as that schema: missing fields read as null"
        ]
    return []


def _profile_step(files: dict[str, Path], rank: int) -> pa.Table | None:
    """One `step` event over the profile's span (its instructions, DMA packets and collectives)."""
    lows, highs = [], []
    for table in _SPAN_TABLES:
        file = files.get(table)
        if file is None:
            continue
        columns = [f.name for f in pq.read_schema(file)]
        if "start_ts" not in columns:
            continue
        data = _read(file, [c for c in ("start_ts", "end_ts", "duration_ns") if c in columns])
        start = data["start_ts"].cast(pa.int64())
        end = (
            data["end_ts"].cast(pa.int64())
            if "end_ts" in columns
            else pa.compute.add(start, data["duration_ns"].cast(pa.int64()))
            if "duration_ns" in columns
            else start
        )
        low, high = pa.compute.min(start).as_py(), pa.compute.max(end).as_py()
        if low is not None and high is not None:
            lows.append(low)
            highs.append(high)
    if not lows:
        return None
    return conform(
        pa.table(
            {
                "rank": pa.array([rank], pa.int32()),
                "ts": [min(lows)],
                "dur": [max(highs) - min(lows)],
                "kind": ["step"],
                "name": ["neuron_explorer.profile"],
                "lane": ["nc/profile"],
                "step": pa.array([0], pa.int32()),
            }
        ),
        "events",
    )


def _fetch(con, sql: str, schema: pa.Schema) -> pa.Table:
    return conform(con.sql(sql).to_arrow_table(), "events" if schema is EVENTS else "counters")


def _duration(columns) -> str:
    return (
        "COALESCE(duration_ns, end_ts - start_ts)"
        if "duration_ns" in columns and "end_ts" in columns
        else ("duration_ns" if "duration_ns" in columns else "end_ts - start_ts")
    )


def _instructions(con, source: str, columns: list[str], rank: int, file: Path) -> pa.Table:
    _require("Instruction", columns, ("start_ts", "engine", "opcode"), file)
    pcore = (
        "CASE WHEN pcore_idx IS NULL OR pcore_idx = 0 THEN '' ELSE 'pcore' || pcore_idx || '/' END"
        if "pcore_idx" in columns
        else "''"
    )
    mapped = {"start_ts", "end_ts", "duration_ns", "engine", "opcode"}
    return _fetch(
        con,
        f"""
        SELECT {rank} AS rank, start_ts AS ts, {_duration(columns)} AS dur, 'compute' AS kind,
               opcode AS name, 'nc/' || {pcore} || lower(engine) AS lane, {_args(columns, mapped)} AS args
        FROM {source}""",
        EVENTS,
    )


def _collectives(con, source: str, columns: list[str], rank: int, file: Path) -> pa.Table:
    _require("CcOp", columns, ("start_ts", "operation"), file)
    ops = [row[0] for row in con.sql(f"SELECT DISTINCT CAST(operation AS VARCHAR) FROM {source}").fetchall()]
    mapping = (
        "CASE "
        + " ".join(
            f"WHEN CAST(operation AS VARCHAR) = {_literal(op)} THEN {_literal(normalize_op(op))}"
            for op in ops
            if op is not None
        )
        + " END"
        if ops
        else "NULL"
    )
    p2p = ", ".join(_literal(op) for op in P2P_OPS)
    size = "GREATEST(input_size, output_size)" if {"input_size", "output_size"} <= set(columns) else "NULL"
    group = (
        "replica_group"
        if "replica_group" in columns
        else ("CAST(replica_group_id AS VARCHAR)" if "replica_group_id" in columns else "NULL")
    )
    ranks = "json_array_length(CAST(replica_group AS JSON), '$[0]')" if "replica_group" in columns else "NULL"
    seq = "op_id" if "op_id" in columns else "NULL"
    mapped = {"start_ts", "end_ts", "duration_ns", "operation", "op_id"}
    return _fetch(
        con,
        f"""
        WITH ops AS (SELECT *, {mapping} AS coll_op FROM {source})
        SELECT {rank} AS rank, start_ts AS ts, {_duration(columns)} AS dur,
               CASE WHEN coll_op IN ({p2p}) THEN 'p2p' ELSE 'collective' END AS kind,
               CAST(operation AS VARCHAR) AS name, 'nc/cc' AS lane, {size} AS bytes, coll_op, {group} AS coll_group,
               {seq} AS coll_seq, {ranks} AS coll_ranks, {_args(columns, mapped)} AS args
        FROM ops""",
        EVENTS,
    )


def _literal(value) -> str:
    return "NULL" if value is None else sql_string(value)


def _system_events(con, source: str, columns: list[str], rank: int, file: Path) -> pa.Table:
    _require("SystemProfileEvents", columns, ("name", "start_ts"), file)
    core = "nc_idx" if "nc_idx" in columns else "NULL"
    origin = "CAST(trace_event_source AS VARCHAR)" if "trace_event_source" in columns else "NULL"
    thread = "thread_id" if "thread_id" in columns else "NULL"
    mapped = {"name", "start_ts", "end_ts", "duration_ns"}
    rows = con.sql(f"""
        SELECT {rank} + COALESCE({core}, 0) AS rank, start_ts AS ts, {_duration(columns)} AS dur,
               CAST(name AS VARCHAR) AS name,
               {origin} AS origin, {thread} AS thread, {_args(columns, mapped)} AS args
        FROM {source}""").to_arrow_table()
    kinds, lanes = [], []
    for name, origin, thread in zip(rows["name"].to_pylist(), rows["origin"].to_pylist(), rows["thread"].to_pylist()):
        kind, lane = classify(name, origin)
        kinds.append(kind)
        lanes.append(lane or f"host/tid-{thread}")
    table = (
        rows.drop_columns(["origin", "thread"])
        .append_column("kind", pa.array(kinds, pa.string()))
        .append_column("lane", pa.array(lanes, pa.string()))
    )
    return conform(table, "events")


def _usage(con, table: str, source: str, columns: list[str], rank: int, file: Path) -> pa.Table:
    if table == "HbmUsage":
        _require(table, columns, ("timestamp", "current_throughput", "total_transfer_bytes"), file)
        series = (
            ("current_throughput", "hbm_traffic.throughput", "bytes/s"),
            ("total_transfer_bytes", "hbm_traffic.transferred", "bytes"),
        )
    else:
        _require(table, columns, ("timestamp", "used_bytes"), file)
        series = (("used_bytes", "host.memory.used", "bytes"), ("used_percent", "host.memory.used_percent", "percent"))
    args = _args(columns, {"timestamp"} | {column for column, _, _ in series})
    parts = [
        f"SELECT {rank} AS rank, timestamp AS ts, '{name}' AS name, CAST({column} AS DOUBLE) AS value, "
        f"'{unit}' AS unit, {args} AS args FROM {source} WHERE {column} IS NOT NULL"
        for column, name, unit in series
        if column in columns
    ]
    return _fetch(con, " UNION ALL ".join(parts), COUNTERS)
