"""The end of a trace file: settle what needed the whole file, then hand out canonical rows.

- held-back collective candidates get their kind (CPU-only traces: `cpu_kind`) and, when
  collective, their op / group / sequence / group size / bytes (`collectives.py`);
- every spilled batch gets the file's rank, its CPU-only kind, single-device lanes, its step
  (`steps.py`), and times on the run's clock (ts + baseTimeNanoseconds); rows whose time leaves
  the int64 ns range or falls before the epoch once the time base is added go to quarantine.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from trnprof.collectors.common.tables import rebuild_event
from trnprof.schema import EVENTS

from . import classify
from .collectives import collective_columns, number_gloo_work
from .partial import PARTIAL, plain
from .steps import assign_steps

INT64_MAX = 2**63 - 1


@dataclass
class FileFacts:
    rank: int | None  # None: per-row ranks (a trnprof export)
    base_ns: int
    cpu_only: bool
    single_device: bool
    steps: pa.Table | None  # None: steps are already in the rows
    moved_to_quarantine: list = field(default_factory=list)  # (idx, reason, detail, event, src)
    process_group: tuple[str, int] | None = None  # the trace's one process group (name, size), if one
    refused_payloads: int = 0  # collectives whose size args were impossible (collectives.py)


def settle_held(
    held: pa.Table, margs: pd.DataFrame, launches: pa.Table, records: pa.Table, facts: FileFacts
) -> pa.Table:
    """Final rows of the held-back collective candidates (PARTIAL schema); with the trace's one
    process group and its step windows, gloo work spans are numbered (`number_gloo_work`).
    Counts the refused payloads in `facts`."""
    cpu_only = facts.cpu_only
    held = plain(held)
    kind = held["kind"]
    if cpu_only:
        kind = pc.coalesce(held["cpu_kind"], kind)
    held = held.set_column(held.schema.get_field_index("kind"), "kind", kind)
    coll = held.filter(pc.equal(kind, "collective"))
    if not coll.num_rows:
        return held.drop_columns(["cat"]).cast(PARTIAL)
    frame = pd.DataFrame({c: coll[c].to_pylist() for c in ("idx", "cat", "name", "ts", "dur")})
    if not margs.empty:
        frame = frame.merge(margs, on="idx", how="left")
    record_frame = pd.DataFrame({c: records[c].to_pylist() for c in records.column_names})
    if not record_frame.empty and not margs.empty:
        record_frame = record_frame.merge(margs, on="idx", how="left")
    launch_frame = launches.to_pandas() if launches.num_rows else pd.DataFrame()
    result = collective_columns(frame, launch_frame, record_frame)
    facts.refused_payloads += int(result["payload_refused"].sum())
    result = number_gloo_work(result, frame, facts.process_group, facts.steps).set_index("idx")
    idx = held["idx"].to_pylist()

    def column(name, typ, fallback):
        values = result[name].reindex(idx)
        out = []
        for i, value, old in zip(idx, values, fallback.to_pylist()):
            if i not in result.index:
                out.append(old)
            elif pd.isna(value):
                out.append(None)
            else:
                out.append(value if typ == pa.string() else int(value))
        return pa.array(out, typ)

    for name, typ in (
        ("kind", pa.string()),
        ("coll_op", pa.string()),
        ("coll_group", pa.string()),
        ("coll_seq", pa.int64()),
        ("coll_ranks", pa.int32()),
        ("bytes", pa.int64()),
    ):
        held = held.set_column(held.schema.get_field_index(name), name, column(name, typ, held[name]))
    return held.drop_columns(["cat"]).cast(PARTIAL)


def _text(column: pa.ChunkedArray) -> pa.ChunkedArray:
    """Plain strings, chunk by chunk (dictionaries holding nulls cannot be unified)."""
    return pa.chunked_array([c.cast(pa.string()) for c in column.chunks], pa.string())


def _single_device(lane: pa.ChunkedArray) -> pa.ChunkedArray:
    """`gpuD/stream-N` -> `gpu/stream-N`, rewriting only the distinct lanes of each chunk."""
    chunks = []
    for chunk in lane.chunks:
        if pa.types.is_dictionary(chunk.type):
            chunk = pa.DictionaryArray.from_arrays(chunk.indices, classify.single_device_lanes(chunk.dictionary))
        else:
            chunk = classify.single_device_lanes(chunk)
        chunks.append(chunk.cast(pa.string()))
    return pa.chunked_array(chunks, pa.string())


def finalize(batch: pa.Table, facts: FileFacts) -> pa.Table:
    """Canonical event rows of one spilled batch; out-of-range rows are moved to quarantine."""
    if facts.rank is not None:
        batch = batch.set_column(0, "rank", pa.array(np.full(batch.num_rows, facts.rank, dtype=np.int32)))
    kind = pc.coalesce(_text(batch["cpu_kind"]), _text(batch["kind"])) if facts.cpu_only else _text(batch["kind"])
    lane = _single_device(batch["lane"]) if facts.single_device else _text(batch["lane"])
    ts = batch["ts"].to_numpy()
    dur = batch["dur"].to_numpy()
    step = batch["step"]
    if facts.steps is not None:
        windows = facts.steps
        numbers, outside = assign_steps(
            ts,
            windows["ts"].to_numpy(),
            windows["ts"].to_numpy() + windows["dur"].to_numpy(),
            windows["step"].to_numpy(),
        )
        step = pa.array(numbers.astype(np.int32), mask=outside)
    late = ts > INT64_MAX - max(facts.base_ns, 0) - np.maximum(dur, 0)
    absolute = np.where(late, 0, ts) + facts.base_ns
    bad = late | (absolute < 0)
    columns = {name: batch[name] for name in EVENTS.names}
    columns.update(ts=pa.array(absolute, pa.int64()), kind=kind, lane=lane, step=step, name=_text(batch["name"]))
    table = pa.table(columns, schema=EVENTS)
    if bad.any():
        moved = plain(batch.filter(pa.array(bad)))
        for i, row in enumerate(moved.to_pylist()):
            reason = "time_out_of_range" if late[np.flatnonzero(bad)[i]] else "negative_time"
            detail = f"ts + baseTimeNanoseconds ({facts.base_ns}) is outside 0 .. 2**63-1 ns"
            event = rebuild_event(row["src"].split("/")[0], row["name"], row["ts"], row["dur"], row["args"])
            facts.moved_to_quarantine.append((row["idx"], reason, detail, event, row["src"]))
        table = table.filter(pa.array(~bad))
    return table
