"""A chunk's event rows -> partial canonical rows, and the few facts kept for the end of the file.

What one chunk cannot know is settled per file at the end (`finish.py`): the rank and time base
(the trace's header may follow the events), whether the trace is CPU-only (then `cpu_kind`
applies), whether it holds one GPU (lanes `gpuD/stream-N` become `gpu/stream-N`), step windows,
and collectives (their launch records may sit in another chunk). So rows carry `cpu_kind`,
device-qualified lanes and null steps; collective candidates are held back whole.
"""

from __future__ import annotations

import msgspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from trnprof.schema import EVENTS

from . import classify

# The spilled rows: the canonical columns (rank null until known) + source position, the kind
# a CPU-only trace gives the row (when different) and the source key "ph/cat" for the counts.
_TEXT = pa.dictionary(pa.int32(), pa.string())
_DICTIONARY_COLUMNS = ("kind", "name", "lane")
PARTIAL = pa.schema(
    [f.with_type(_TEXT if f.name in _DICTIONARY_COLUMNS else f.type).with_nullable(True) for f in EVENTS]
    + [pa.field("idx", pa.int64()), pa.field("cpu_kind", _TEXT), pa.field("src", pa.string())]
)
# Runtime calls that launch GPU work: their `correlation` arg names the kernel they launched.
LAUNCH_SOURCES = ("X/cuda_runtime", "X/cuda_driver")


def _array(table: pa.Table, column: str) -> pa.Array:
    values = table[column]
    return values.chunk(0) if values.num_chunks == 1 else values.combine_chunks()  # one chunk: no copy


def rows_where(table: pa.Table, mask) -> pa.Table:
    """`table`'s rows where `mask` (numpy or Arrow booleans) holds; the table itself where it
    holds for every row (a filter would copy every column, the args' text too)."""
    everywhere = mask.all() if isinstance(mask, np.ndarray) else mask.null_count == 0 and pc.all(mask).as_py()
    return table if everywhere else table.filter(mask)


def plain(table: pa.Table) -> pa.Table:
    """The table with its dictionary columns as plain strings (chunk by chunk: dictionaries
    holding nulls cannot be unified)."""
    for i, f in enumerate(table.schema):
        if pa.types.is_dictionary(f.type):
            column = pa.chunked_array([c.cast(pa.string()) for c in table[f.name].chunks], pa.string())
            table = table.set_column(i, f.name, column)
    return table


def source_keys(ph, cat) -> pa.Array:
    return pc.binary_join_element_wise(ph, pc.fill_null(cat, "-"), "/")


def launches_of(rows: pa.Table) -> pa.Table:
    """Launch calls among spilled rows: correlation id (read from the args text), lane, ts."""
    launch = rows.filter(pc.is_in(rows["src"], pa.array(LAUNCH_SOURCES)))
    found = pc.extract_regex(launch["args"], r'"correlation":\s*(?P<c>-?\d{1,18})[,}]')
    correlation = pc.struct_field(found, "c").cast(pa.int64()) if launch.num_rows else pa.array([], pa.int64())
    return plain(pa.table({"correlation": correlation, "lane": launch["lane"], "ts": launch["ts"]}))


def partial_events(ev: pa.Table, margs: pa.Table) -> tuple[pa.Table, dict]:
    """Partial rows of a chunk's Kineto event rows, and side facts for the end of the file."""
    n = ev.num_rows
    cat, name, ph = _array(ev, "cat"), _array(ev, "name"), _array(ev, "ph")
    (d_cat, d_name), by_name = classify.distinct_rows(cat, name)
    d_kind, d_cpu_kind = classify.kinds(d_cat, d_name)
    d_cpu_kind = pc.if_else(pc.equal(d_cpu_kind, d_kind), pa.scalar(None, pa.string()), d_cpu_kind)
    (l_cat, l_pid, l_tid), by_lane = classify.distinct_rows(cat, _array(ev, "pid"), _array(ev, "tid"))
    lane = classify.expand(classify.lanes(l_cat, l_pid, l_tid, device_qualified=True), by_lane)
    kind = classify.expand(d_kind, by_name)
    cpu_kind = classify.expand(d_cpu_kind, by_name)
    kind_text = pc.take(d_kind, by_name)
    (s_ph, s_cat), by_source = classify.distinct_rows(ph, cat)
    instant = pc.is_in(ph, pa.array(["i", "I"]))
    dur = pc.if_else(instant, pa.scalar(0, pa.int64()), _array(ev, "dur"))
    table = pa.table(
        {
            "rank": pa.nulls(n, pa.int32()),
            "ts": _array(ev, "ts"),
            "dur": dur,
            "kind": kind,
            "name": classify.expand(d_name, by_name),
            "lane": lane,
            "step": pa.nulls(n, pa.int32()),
            "phase": pa.nulls(n, pa.string()),
            "bytes": _moved_bytes(ev, kind_text, margs),
            "flops": pa.nulls(n, pa.int64()),
            "coll_op": pa.nulls(n, pa.string()),
            "coll_group": pa.nulls(n, pa.string()),
            "coll_seq": pa.nulls(n, pa.int64()),
            "coll_ranks": pa.nulls(n, pa.int32()),
            "args": _array(ev, "args"),
            "idx": _array(ev, "idx"),
            "cpu_kind": cpu_kind,
            "src": pc.take(source_keys(s_ph, s_cat), by_source),
        },
        schema=PARTIAL,
    )
    held = pc.or_(pc.equal(kind_text, "collective"), pc.equal(pc.take(d_cpu_kind, by_name).fill_null(""), "collective"))
    is_step = pc.equal(kind_text, "step")
    records = pc.or_(pc.starts_with(name, "nccl:"), pc.equal(name, "record_param_comms"))
    gpu = pc.is_in(l_cat.fill_null(""), pa.array(classify.GPU_CATEGORIES))
    side = {
        "held": table.filter(held).append_column("cat", cat.filter(held)),
        "records": plain(table.filter(records).select(["idx", "name", "ts", "dur", "lane"])),
        "steps": pa.table(
            {
                "ts": table["ts"].filter(is_step),
                "dur": table["dur"].filter(is_step),
                "step": classify.step_numbers(name.filter(is_step)),
            }
        ),
        "devices": set(pc.unique(l_pid.filter(gpu)).to_pylist()),
        "device_work": pc.any(
            pc.or_(pc.is_in(d_cat, pa.array(classify.DEVICE_WORK_CATEGORIES)), classify.unknown_device_work(d_cat))
        ).as_py()
        or False,
        "platforms": classify.platforms(d_cat),
        "unknown_device_events": pc.sum(
            pc.take(pc.cast(classify.unknown_device_work(d_cat), pa.int64()), by_name)
        ).as_py()
        or 0,
    }
    return rows_where(table, pc.invert(held)), side


def _moved_bytes(ev: pa.Table, kind: pa.Array, margs: pa.Table) -> pa.Array:
    """`bytes` of copies and sets, from their own args."""
    n = ev.num_rows
    if (
        not margs.num_rows
        or not pa.types.is_integer(margs["bytes"].type)
        and not pa.types.is_floating(margs["bytes"].type)
    ):
        return pa.nulls(n, pa.int64())
    moved = np.flatnonzero(pc.is_in(kind, pa.array(["transfer", "memory"])).to_numpy(zero_copy_only=False))
    if not len(moved):
        return pa.nulls(n, pa.int64())
    arg_idx = margs["idx"].to_numpy()
    values = margs["bytes"].cast(pa.float64()).fill_null(np.nan).to_numpy()
    want = ev["idx"].to_numpy()[moved]
    pos = np.clip(np.searchsorted(arg_idx, want), 0, len(arg_idx) - 1)
    found = (arg_idx[pos] == want) & ~np.isnan(values[pos])
    data = np.zeros(n, dtype=np.int64)
    mask = np.ones(n, dtype=bool)
    data[moved[found]] = np.rint(values[pos[found]]).astype(np.int64)
    mask[moved[found]] = False
    return pa.array(data, pa.int64(), mask=mask)


class ExportArgs(msgspec.Struct, gc=False):
    """`args` of an event written by `trnprof export`: the canonical columns without a Chrome
    field, and the run's own args as a string."""

    step: int | None = None
    phase: str | None = None
    bytes: int | None = None
    flops: int | None = None
    coll_op: str | None = None
    coll_group: str | None = None
    coll_seq: int | None = None
    coll_ranks: int | None = None
    args: str | None = None


class _ExportEnvelope(msgspec.Struct, gc=False):
    pid: int | str | None = None
    args: ExportArgs = msgspec.field(default_factory=ExportArgs)


_ENVELOPES = msgspec.json.Decoder(list[_ExportEnvelope])


def exported_events(ev: pa.Table, lanes: dict) -> pa.Table:
    """Partial rows of events written by `trnprof export`: rank = pid, kind = cat, lane from
    the thread_name metadata, the other columns from args."""
    n = ev.num_rows
    texts = _array(ev, "args").to_pylist()
    envelopes = _ENVELOPES.decode(("[" + ",".join(texts) + "]").encode()) if n else []
    inner = [e.args for e in envelopes]
    pids, tids = _array(ev, "pid").to_pylist(), _array(ev, "tid").to_pylist()
    column = lambda field, typ: pa.array([getattr(a, field) for a in inner], typ)  # noqa: E731
    return pa.table(
        {
            "rank": pa.array([int(p) if p.lstrip("-").isdigit() else None for p in pids], pa.int32()),
            "ts": _array(ev, "ts"),
            "dur": pc.fill_null(_array(ev, "dur"), 0),
            "kind": _array(ev, "cat"),
            "name": _array(ev, "name"),
            "lane": pa.array([lanes.get((p, t), f"tid-{t}") for p, t in zip(pids, tids)], pa.string()),
            "step": column("step", pa.int32()),
            "phase": column("phase", pa.string()),
            "bytes": column("bytes", pa.int64()),
            "flops": column("flops", pa.int64()),
            "coll_op": column("coll_op", pa.string()),
            "coll_group": column("coll_group", pa.string()),
            "coll_seq": column("coll_seq", pa.int64()),
            "coll_ranks": column("coll_ranks", pa.int32()),
            "args": column("args", pa.string()),
            "idx": _array(ev, "idx"),
            "cpu_kind": pa.nulls(n, pa.string()),
            "src": source_keys(_array(ev, "ph"), _array(ev, "cat")),
        }
    ).cast(PARTIAL)
