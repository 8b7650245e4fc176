"""The canonical run tables: Arrow schemas and the documentation of every column.

One source of truth: the run store validates against these schemas, DuckDB views expose them,
and `docs/run-format.md` is generated from the descriptions below.
"""

from __future__ import annotations

import pyarrow as pa

from .runfiles import FORMAT_NAME, MANIFEST_FILE, SCHEMA_VERSION  # noqa: F401 - the run format's names, here too

EVENT_KINDS = (
    "compute",
    "collective",
    "p2p",
    "input",
    "transfer",
    "memory",
    "compile",
    "host",
    "annotation",
    "step",
)

# (name, arrow type, nullable, description)
EVENT_COLUMNS = [
    ("rank", pa.int32(), False, "global rank; on Trn1 one NeuronCore (hive partition key)"),
    ("ts", pa.int64(), False, "start, ns on the run's single clock"),
    ("dur", pa.int64(), False, "duration, ns (>= 0)"),
    ("kind", pa.string(), False, "one of: " + ", ".join(EVENT_KINDS)),
    ("name", pa.string(), False, "op / kernel / collective / annotation name as the source spells it"),
    ("lane", pa.string(), False, "where it ran: nc/tensor, nc/vector, nc/cc, dma/..., host/main, a GPU stream ..."),
    ("step", pa.int32(), True, "training step, when known"),
    ("phase", pa.string(), True, "fwd, bwd, opt, ... when known"),
    (
        "bytes",
        pa.int64(),
        True,
        "data moved, when known (collectives: message size as nccl-tests counts it; all-gather: the gathered output)",
    ),
    ("flops", pa.int64(), True, "floating-point operations done, when known"),
    (
        "coll_op",
        pa.string(),
        True,
        "collective kind: all_reduce, all_gather, reduce_scatter, all_to_all, send, recv, ...",
    ),
    ("coll_group", pa.string(), True, "replica group the collective ran over (any stable spelling)"),
    ("coll_seq", pa.int64(), True, "sequence number of the collective within its group: matches it across ranks"),
    ("coll_ranks", pa.int32(), True, "number of ranks in the collective's group, when known"),
    ("args", pa.string(), True, "JSON object of every source field not mapped to a column"),
]

COUNTER_COLUMNS = [
    ("rank", pa.int32(), False, "global rank (hive partition key)"),
    ("ts", pa.int64(), False, "sample time, ns"),
    ("name", pa.string(), False, "counter name, dotted: hbm.params, hbm.activations, input.queue_depth, ..."),
    ("value", pa.float64(), False, "sampled value"),
    ("unit", pa.string(), True, "unit of value: bytes, count, percent, ..."),
    (
        "args",
        pa.string(),
        True,
        "JSON object of every source field not mapped to a column (on one sample row per source entry)",
    ),
]

RANK_COLUMNS = [
    ("rank", pa.int32(), False, "global rank"),
    ("node", pa.int32(), True, "node (instance) index"),
    ("host", pa.string(), True, "host name"),
    ("chip", pa.int32(), True, "device (Trainium chip / GPU) index within the node"),
    ("core", pa.int32(), True, "NeuronCore index within the chip"),
    ("dp_rank", pa.int32(), True, "data-parallel coordinate"),
    ("tp_rank", pa.int32(), True, "tensor-parallel coordinate"),
    ("pp_rank", pa.int32(), True, "pipeline-parallel coordinate"),
    ("instance_type", pa.string(), True, "e.g. trn1.32xlarge"),
    ("hbm_capacity_bytes", pa.int64(), True, "device memory this rank may use (Trn1: 16 GiB per NeuronCore)"),
]

# Counter names with a meaning the stdlib relies on.
HBM_COUNTER_PREFIX = "hbm."  # additive device-memory categories, bytes, sampled together per ts


def arrow_schema(columns) -> pa.Schema:
    return pa.schema([pa.field(name, typ, nullable=nullable) for name, typ, nullable, _ in columns])


EVENTS = arrow_schema(EVENT_COLUMNS)
COUNTERS = arrow_schema(COUNTER_COLUMNS)
RANKS = arrow_schema(RANK_COLUMNS)

TABLES = {"events": EVENTS, "counters": COUNTERS, "ranks": RANKS}
TABLE_COLUMNS = {"events": EVENT_COLUMNS, "counters": COUNTER_COLUMNS, "ranks": RANK_COLUMNS}
PARTITIONED_TABLES = ("events", "counters")


def duckdb_type(arrow_type: pa.DataType) -> str:
    return {
        pa.int32(): "INTEGER",
        pa.int64(): "BIGINT",
        pa.float64(): "DOUBLE",
        pa.string(): "VARCHAR",
    }[arrow_type]
