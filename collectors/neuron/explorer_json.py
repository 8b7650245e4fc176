"""The deprecated JSON output of Neuron Explorer / neuron-profile (`view --output-format json`,
ending after Neuron 2.33) -> the Explorer tables, then read as a Parquet profile is
(explorer.py): `{"summary": [{...}], "instruction": [{timestamp, duration, label, opcode, ...}],
...}`. `summary` rows are the `Summary` table (same field names); `instruction` rows become
`Instruction` rows (start_ts = timestamp, duration_ns = duration, end_ts = their sum, engine from
the timeline label: TensorMatrix / Tensor -> tensor, Vector -> vector, Scalar / Act -> scalar,
GpSimd / Pool -> gpsimd, Sync / SP -> sync); any other key holding a list of objects named like an
Explorer table (`cc_op`, `dma_packet`, `throttle`, ...) is that table as it is.
"""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from trnprof.collectors.common.source import Source
from trnprof.errors import TrnprofError, first_line

from .explorer import read_explorer
from .explorer_tables import TABLE_KEYS

_ENGINES = (
    ("tensor", "tensor"),
    ("matrix", "tensor"),
    ("vector", "vector"),
    ("scalar", "scalar"),
    ("act", "scalar"),
    ("gpsimd", "gpsimd"),
    ("pool", "gpsimd"),
    ("sync", "sync"),
    ("sp", "sync"),
)


def _engine(label) -> str | None:
    text = str(label or "").lower()
    return next((engine for key, engine in _ENGINES if key in text), text or None)


def _instructions(rows: list[dict]) -> pa.Table:
    out = []
    for row in rows:
        start, dur = row.get("timestamp", row.get("start_ts")), row.get("duration", row.get("duration_ns"))
        if not isinstance(start, int) or not isinstance(dur, int):
            raise TrnprofError(f"instruction {row!r:.120}: timestamp and duration must be integers (ns)")
        out.append(
            {
                **{k: v for k, v in row.items() if k not in ("timestamp", "duration", "label")},
                "start_ts": start,
                "end_ts": start + dur,
                "duration_ns": dur,
                "engine": row.get("engine") or _engine(row.get("label")),
                "timeline_track": row.get("label"),
            }
        )
    return pa.Table.from_pylist(out)


def _tables(document: dict) -> dict[str, pa.Table]:
    tables = {}
    for key, rows in document.items():
        if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows) or not rows:
            continue
        if key == "instruction":
            tables["Instruction"] = _instructions(rows)
        else:
            table = TABLE_KEYS.get(re.sub(r"[^a-z]", "", key.lower()))
            if table:
                tables[table] = pa.Table.from_pylist(rows)
    return tables


def read_explorer_json(path: Path, rank: int | None = None) -> Source:
    try:
        document = json.loads(path.read_bytes())
    except (OSError, ValueError) as exc:
        raise TrnprofError(f"{path}: not a readable Neuron Explorer JSON profile ({first_line(exc)})") from None
    if not isinstance(document, dict):
        raise TrnprofError(f"{path}: a Neuron Explorer JSON profile is an object (summary, instruction, ...)")
    try:
        tables = _tables(document)
    except (pa.ArrowException, TypeError) as exc:
        raise TrnprofError(f"{path}: {first_line(exc)}") from None
    if not tables:
        raise TrnprofError(f"{path}: no Neuron Explorer tables in this JSON (expected summary, instruction, ...)")
    with tempfile.TemporaryDirectory(prefix="trnprof-explorer-") as folder:
        for table, data in tables.items():
            pq.write_table(data, Path(folder) / f"{table}.parquet")
        source = read_explorer(Path(folder), rank)
    source.path, source.format = path, "neuron-explorer-json"
    source.counts["source_entries"] = sum(t.num_rows for t in tables.values())
    return source
