"""The device profile's tables in a session: `device_instructions`, `device_dma`, `device_cc_ops`,
`device_throttle`, `explorer_summary` and `explorer_metadata`, read from the run's copies of the
Neuron Explorer tables (`neuron_explorer/<table>.parquet`, written by `trnprof ingest` of an
Explorer profile and by `trnprof simulate --device-profile`), with the columns the stdlib's
device views read. A column the profile lacks reads as null; a run without a device profile has
the tables, empty, so every view binds on every run.

Besides the Explorer schema's fields (v7.4.0), every table has `rank` (the rank the profile
belongs to) and `step` (the training step, when the writer knew it; null otherwise, which the
views read as step 0: an Explorer capture profiles one execution).
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from .tableread import sql_string

_I64, _F64, _S, _I32 = pa.int64(), pa.float64(), pa.string(), pa.int32()
_KEYS = [("rank", _I32), ("step", _I32)]

# session table -> (the run's extra table, [(column, type)]), Explorer field names.
TABLES: dict[str, tuple[str, list[tuple[str, pa.DataType]]]] = {
    "device_instructions": (
        "neuron_explorer/instruction",
        _KEYS
        + [
            ("start_ts", _I64),
            ("end_ts", _I64),
            ("duration_ns", _I64),
            ("engine", _S),
            ("opcode", _S),
            ("pcore_idx", _I64),
            ("raw_flops", _I64),
            ("adjusted_flops", _I64),
            ("flops_transpose", _I64),
            ("adjusted_flops_transpose", _I64),
            ("tensor_instruction_type", _S),
            ("hbm_read_bytes", _I64),
            ("hbm_write_bytes", _I64),
            ("sbuf_read_bytes", _I64),
            ("sbuf_write_bytes", _I64),
            ("spill_save_bytes", _I64),
            ("spill_reload_bytes", _I64),
            ("hlo_name", _S),
        ],
    ),
    "device_dma": (
        "neuron_explorer/dma_packet",
        _KEYS
        + [
            ("start_ts", _I64),
            ("end_ts", _I64),
            ("duration_ns", _I64),
            ("queue_name", _S),
            ("queue_type", _S),
            ("engine_idx", _I64),
            ("transfer_bytes", _I64),
            ("read_bytes", _I64),
            ("write_bytes", _I64),
            ("pcore_idx", _I64),
        ],
    ),
    "device_cc_ops": (
        "neuron_explorer/cc_op",
        _KEYS
        + [
            ("start_ts", _I64),
            ("end_ts", _I64),
            ("duration_ns", _I64),
            ("operation", _S),
            ("algorithm", _S),
            ("op_id", _I64),
            ("input_size", _I64),
            ("output_size", _I64),
            ("algorithm_bandwidth", _F64),
            ("bus_bandwidth", _F64),
            ("replica_group", _S),
        ],
    ),
    "device_throttle": (
        "neuron_explorer/throttle",
        _KEYS + [("timestamp", _I64), ("duration", _I64), ("k", _I64), ("n", _I64), ("type", _S), ("pcore_idx", _I64)],
    ),
    "explorer_summary": (
        "neuron_explorer/summary",
        _KEYS
        + [
            ("total_time", _F64),
            ("model_flops", _I64),
            ("hardware_flops", _I64),
            ("transpose_flops", _I64),
            ("mfu_estimated_percent", _F64),
            ("hfu_estimated_percent", _F64),
            ("mbu_estimated_percent", _F64),
            ("hbm_read_bytes", _I64),
            ("hbm_write_bytes", _I64),
            ("spill_save_bytes", _I64),
            ("spill_reload_bytes", _I64),
            ("dma_active_time", _F64),
            ("cc_op_time", _F64),
            ("tensor_engine_active_time", _F64),
            ("vector_engine_active_time", _F64),
            ("scalar_engine_active_time", _F64),
            ("gpsimd_engine_active_time", _F64),
            ("sync_engine_active_time", _F64),
        ],
    ),
    "explorer_metadata": (
        "neuron_explorer/metadata",
        _KEYS
        + [
            ("profile_schema_version", _S),
            ("instance_type", _S),
            ("tensor_engine_num_rows", _I64),
            ("tensor_engine_num_cols", _I64),
            ("tensor_engine_clock_freq", _F64),
            ("hbm_ddr_bandwidth", _F64),
            ("dma_ddr_bandwidth", _F64),
            ("is_simulation", pa.bool_()),
        ],
    ),
}

DOCS = {
    "device_instructions": "Instructions on the NeuronCore engines (Explorer table `Instruction`).",
    "device_dma": "DMA packets per queue (Explorer table `DmaPacket`).",
    "device_cc_ops": "Collective operations on the collective engines (Explorer table `CcOp`).",
    "device_throttle": "Tensor-engine throttling windows: utilization limited to k/n (Explorer table `Throttle`).",
    "explorer_summary": "Explorer's own summary metrics of each profile (Explorer table `Summary`).",
    "explorer_metadata": "The profile's metadata: schema version, tensor-engine geometry and clock "
    "(Explorer table `Metadata`).",
}


def _sql_type(arrow_type: pa.DataType) -> str:
    return {_I32: "INTEGER", _I64: "BIGINT", _F64: "DOUBLE", _S: "VARCHAR", pa.bool_(): "BOOLEAN"}[arrow_type]


def _file(run_dir: Path, extra: str) -> Path:
    return run_dir / f"{extra}.parquet"


def _select(con: duckdb.DuckDBPyConnection, path: Path | None, columns) -> str:
    if path is None or not path.is_file():
        return "SELECT " + ", ".join(f"CAST(NULL AS {_sql_type(t)}) AS {c}" for c, t in columns) + " WHERE FALSE"
    source = f"read_parquet({sql_string(str(path))})"
    present = {row[0] for row in con.execute(f"DESCRIBE SELECT * FROM {source}").fetchall()}
    return (
        "SELECT "
        + ", ".join(
            f'TRY_CAST("{c}" AS {_sql_type(t)}) AS {c}' if c in present else f"CAST(NULL AS {_sql_type(t)}) AS {c}"
            for c, t in columns
        )
        + f" FROM {source}"
    )


def attach(con: duckdb.DuckDBPyConnection, run_dir: Path | None) -> None:
    """Create the device tables as views in the connection's current schema."""
    for name, (extra, columns) in TABLES.items():
        con.execute(
            f"CREATE VIEW {name} AS {_select(con, None if run_dir is None else _file(run_dir, extra), columns)}"
        )


def arrow_tables(run_dir: Path | None) -> list[tuple[str, pa.Table]]:
    """(name, table) of every device table, for an engine that registers Arrow tables (Spark);
    a remote run (`run_dir` None) gets them empty."""
    out = []
    for name, (extra, columns) in TABLES.items():
        schema = pa.schema(columns)
        path = None if run_dir is None else _file(run_dir, extra)
        if path is None or not path.is_file():
            out.append((name, schema.empty_table()))
            continue
        table = pq.read_table(path)
        arrays = [
            table[c].cast(t, safe=False) if c in table.column_names else pa.nulls(table.num_rows, t) for c, t in columns
        ]
        out.append((name, pa.Table.from_arrays(arrays, schema=schema)))
    return out
