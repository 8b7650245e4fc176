"""Counter samples from a trace: PyTorch's `[memory]` instants and Chrome `C` counter events.

`[memory]` (profile_memory=True) carries the allocator totals after each allocation / free:
- `hbm.allocated` = `Total Allocated`, `hbm.allocator_cache` = `Total Reserved` - allocated
  (additive device-memory categories: together they are what the caching allocator holds;
  no cache row where `Total Reserved` is below `Total Allocated`, as on CPU, whose allocator
  reports 0 reserved);
- `alloc.device_delta` = `Bytes` (the allocation, negative for a free; not a residency);
- CPU allocations (`Device Type` 0) become `host.allocated`, `host.allocator_cache`,
  `alloc.host_delta`.
The `*.allocated` row carries the entry's `args` as staged (`{"cat", "pid", "tid", "args":
{source args verbatim: Addr, Device Id, any other key}, "extra"}`); the other rows made from it
have none. Taken column-wise from the staged rows: no work per event.
`C` events: one sample per series (`args` key): counter `NAME` for the series `value`, else
`NAME.SERIES`; values must be numbers. The first series' row carries the staged `args`. In
traces written by `trnprof export` the counter's unit travels as its `cat` and the counter's
own args as the `trnprof_args` field (its row gets exactly that).
"""

from __future__ import annotations

import json
import math

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from trnprof.schema import COUNTERS


def _column(table: pa.Table, name: str) -> np.ndarray:
    if name not in table.column_names or table.num_rows == 0:
        return np.full(table.num_rows, np.nan)
    column = table[name]
    if not (pa.types.is_integer(column.type) or pa.types.is_floating(column.type)):
        return np.full(table.num_rows, np.nan)
    return column.cast(pa.float64()).fill_null(np.nan).to_numpy()


def memory_counters(rows: pa.Table, margs: pa.Table, ranks: np.ndarray) -> tuple[dict, list[int]]:
    """Samples (ts relative to the file's time base) and the idx of unreadable entries."""
    n = rows.num_rows
    found = pc.index_in(rows["idx"], margs["idx"]) if margs.num_rows else pa.nulls(n, pa.int32())

    def field(name):
        values = _column(margs, name)
        out = np.full(n, np.nan)
        present = found.is_valid().to_numpy(zero_copy_only=False)
        out[present] = values[found.drop_null().to_numpy()]
        return out

    allocated, reserved, delta = field("total_allocated"), field("total_reserved"), field("alloc_bytes")
    host = field("device_type") == 0
    ts = rows["ts"].to_numpy()
    good = ~np.isnan(allocated)
    out = {"rank": [], "ts": [], "name": [], "value": []}
    args = [rows["args"].filter(pa.array(good)).combine_chunks()]  # the allocated rows' source fields

    def add(mask, names, values):
        out["rank"].append(ranks[mask])
        out["ts"].append(ts[mask])
        out["name"].append(np.where(host[mask], names[0], names[1]))
        out["value"].append(values[mask])

    add(good, ("host.allocated", "hbm.allocated"), allocated)
    cached = good & ~np.isnan(reserved) & (reserved >= allocated)  # CPU: Total Reserved is 0, no cache
    for mask, names, values in (
        (cached, ("host.allocator_cache", "hbm.allocator_cache"), reserved - allocated),
        (good & ~np.isnan(delta), ("alloc.host_delta", "alloc.device_delta"), delta),
    ):
        add(mask, names, values)
        args.append(pa.nulls(int(mask.sum()), pa.string()))
    samples = {k: np.concatenate(v) for k, v in out.items()}
    samples["unit"] = np.full(len(samples["ts"]), "bytes", dtype=object)
    samples["args"] = pa.concat_arrays(args)
    return samples, rows["idx"].to_numpy()[~good].tolist()


def series_counters(rows: pa.Table, ranks: np.ndarray, export: bool) -> tuple[dict, list[int]]:
    """Samples of `C` events and the idx of entries with non-numeric series."""
    out = {"rank": [], "ts": [], "name": [], "value": [], "unit": [], "args": []}
    bad = []
    for rank, idx, ts, name, cat, args in zip(
        ranks.tolist(),
        rows["idx"].to_pylist(),
        rows["ts"].to_pylist(),
        rows["name"].to_pylist(),
        rows["cat"].to_pylist(),
        rows["args"].to_pylist(),
    ):
        staged = json.loads(args)
        series = staged.get("args")
        if not isinstance(series, dict) or not series or not all(map(_finite_number, series.values())):
            bad.append(idx)
            continue
        for position, (key, value) in enumerate(series.items()):
            out["rank"].append(rank)
            out["ts"].append(ts)
            out["name"].append(name if key == "value" else f"{name}.{key}")
            out["value"].append(float(value))
            out["unit"].append(cat if export else None)
            out["args"].append(None if position else _own_args(staged, args, export))
    samples = {k: np.asarray(v, dtype=object if k in ("name", "unit") else None) for k, v in out.items() if k != "args"}
    samples["args"] = pa.array(out["args"], pa.string())
    return samples, bad


def _finite_number(value) -> bool:
    """True for a JSON number a float64 holds finitely (a bool is no number; an integer past
    1.8e308, which JSON allows, is no float)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def _own_args(staged: dict, text: str, export: bool) -> str | None:
    """What a `C` event keeps in `args`: the staged text, or in a trnprof export the run's own
    args (`trnprof_args`; cat, pid, tid and the series are the unit, rank, tid 0 and value)."""
    if not export:
        return text
    extra = staged.get("extra")
    return extra.get("trnprof_args") if isinstance(extra, dict) else None


def counters_table(samples: list[dict], rank_fill: int | None, base_ns: int) -> pa.Table:
    """Canonical counter rows from sample dicts (ts relative to the time base; `args` an Arrow
    string array, the rest NumPy); a sample rank of -1 means "the file's rank", `rank_fill`."""

    def cat(key, dtype=None):
        parts = [np.asarray(s[key], dtype=dtype) for s in samples if len(s[key])]
        return np.concatenate(parts) if parts else np.zeros(0, dtype=dtype)

    rank = cat("rank", np.int64)
    if rank_fill is not None:
        rank = np.where(rank < 0, rank_fill, rank)
    return pa.table(
        {
            "rank": pa.array(rank.astype(np.int32)),
            "ts": pa.array(cat("ts", np.int64) + base_ns, pa.int64()),
            "name": pa.array(cat("name", object), pa.string()),
            "value": pa.array(cat("value", np.float64), pa.float64()),
            "unit": pa.array(cat("unit", object).tolist(), pa.string()),
            "args": pa.concat_arrays([s["args"] for s in samples]) if samples else pa.array([], pa.string()),
        },
        schema=COUNTERS,
    )
