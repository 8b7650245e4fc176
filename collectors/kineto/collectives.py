"""Collective columns for communication events: op, group, sequence number, group size, bytes.

Sources, first found wins:
1. the event's own args (NCCL kernels of recent PyTorch carry `Collective name`, `In msg
   nelems`, `Out msg nelems`, `dtype`, `Group size`, `Process Group Name`, `Seq`);
2. for kernels without them, the host-side record that launched the kernel: the kernel's
   `correlation` id names the `cuda_runtime` launch call, and the innermost `record_param_comms`
   or `nccl:*` annotation around that call on its thread gives the op and payload;
3. the name itself (`gloo:all_reduce`, `ncclKernel_AllReduce_RING_LL_Sum_float`).
bytes = max(In msg nelems, Out msg nelems) x dtype size: the nccl-tests "size" the stdlib's bus
bandwidth factors assume (= In for all-reduce, the gathered output for all-gather, the scattered
input for reduce-scatter); without nelems, the first input tensor's elements (`Input Dims`) x
its `Input type` size. Impossible sizes (negative or fractional counts, non-integer dimensions,
over 1 TiB) are refused: no bytes, and the file's ingest accounting counts them
(`ignored_args.collective_payload`); the args stay verbatim in `args`.
coll_seq from an explicit sequence number (`Seq` / `seq`), else, for the
work spans of ProcessGroupGloo (`gloo:all_reduce` on its worker thread: no group, no sequence
number), from their order in the step when the trace names a single process group
(`number_gloo_work`): a process group runs its collectives in the order every rank issues them,
so the n-th gloo collective of step s is the same instance on every rank.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd

from .classify import P2P_OPS, dtype_bytes, normalize_op
from .steps import assign_steps

COLUMNS = ("coll_op", "coll_group", "coll_seq", "coll_ranks", "bytes", "kind", "payload_refused")


def _present(value) -> bool:
    return value is not None and not (isinstance(value, float) and math.isnan(value))


MAX_PAYLOAD_BYTES = 1 << 40  # 1 TiB: far beyond any one collective (a Trn1 chip holds 32 GiB of HBM)


def _count(value) -> int | None:
    """A non-negative element count, else None (bools, floats with a fraction, negatives, text)."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _payload(args: dict) -> tuple[int | None, bool]:
    """(message bytes or None, whether the args gave a size that was refused as impossible:
    negative or non-integer counts, dimensions that are not integers, or more than 1 TiB)."""
    size = dtype_bytes(args.get("dtype"))
    given = [args[k] for k in ("in_nelems", "out_nelems") if _present(args.get(k))]
    if size and given:
        counts = [_count(v) for v in given]
        if None in counts or max(counts) * size > MAX_PAYLOAD_BYTES:
            return None, True
        return max(counts) * size, False
    dims, types = _parse_list(args.get("input_dims")), _parse_list(args.get("input_type"))
    if dims and types and isinstance(dims[0], list) and dims[0]:
        size = dtype_bytes(types[0])
        if not size:
            return None, False
        counts = [_count(d) for d in dims[0]]
        if None in counts:
            return None, True
        elements = 1
        for count in counts:  # Python ints: no silent int64 wrap-around
            elements *= count
            if elements * size > MAX_PAYLOAD_BYTES:
                return None, True
        return elements * size, False
    return None, False


def _parse_list(value):
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return None
    return value if isinstance(value, list) else None


def _group(args: dict) -> str | None:
    for key in ("pg_name", "pg_id", "pg_ranks"):
        value = args.get(key)
        if _present(value) and value != "":
            return str(int(value)) if isinstance(value, float) else str(value)
    return None


def _launch_records(colls: pd.DataFrame, launches: pd.DataFrame, records: pd.DataFrame) -> dict:
    """kernel idx -> the args dict (with `name`) of the host record that launched it."""
    if launches.empty or records.empty or "correlation" not in colls:
        return {}
    wanted = {int(c) for c in colls["correlation"] if _present(c)}
    launches = launches[launches["correlation"].isin(wanted)].drop_duplicates("correlation")
    by_corr = {int(c): (lane, ts) for c, lane, ts in zip(launches["correlation"], launches["lane"], launches["ts"])}
    threads = {}
    has_args = "collective_name" in records
    for lane, group in records.groupby("lane"):
        group = group.sort_values("ts", kind="stable")
        described = group["collective_name"].notna().to_numpy() if has_args else np.zeros(len(group), dtype=bool)
        threads[lane] = (
            group["ts"].to_numpy(),
            (group["ts"] + group["dur"]).to_numpy(),
            described,
            group.to_dict("records"),
        )
    found = {}
    for idx, corr in zip(colls["idx"], colls["correlation"]):
        launch = by_corr.get(int(corr)) if _present(corr) else None
        thread = threads.get(launch[0]) if launch else None
        if thread is None:
            continue
        starts, ends, described, rows = thread
        t = launch[1]
        i = int(np.searchsorted(starts, t, side="right")) - 1
        enclosing = []  # innermost first: latest start at or before t still open at t
        while i >= 0 and len(enclosing) < 8:
            if ends[i] >= t:
                enclosing.append(i)
            i -= 1
        if enclosing:
            with_args = [j for j in enclosing if described[j]]
            found[idx] = rows[(with_args or enclosing)[0]]
    return found


def collective_columns(colls: pd.DataFrame, launches: pd.DataFrame, records: pd.DataFrame) -> pd.DataFrame:
    """Per collective row (`idx`, `name`, `kind` and its mapped args) the collective columns.

    `launches`: runtime launch calls (correlation, lane, ts); `records`: host records that
    describe collectives (`record_param_comms`, `nccl:*`: idx, name, ts, dur, lane) with their
    args."""
    needs_link = (
        colls[
            colls.get("collective_name", pd.Series(index=colls.index, dtype=object)).isna() & colls["cat"].eq("kernel")
        ]
        if not colls.empty
        else colls
    )
    linked = _launch_records(needs_link, launches, records)
    rows = []
    for row in colls.to_dict("records"):
        args = row
        record = linked.get(row["idx"])
        if not _present(row.get("collective_name")) and record is not None:
            args = {**record, **{k: v for k, v in row.items() if _present(v)}}
        op = (
            normalize_op(args.get("collective_name"))
            or (normalize_op(record["name"]) if record is not None else None)
            or normalize_op(row["name"])
        )
        seq = args.get("seq_upper") if _present(args.get("seq_upper")) else args.get("seq")
        size = args.get("group_size")
        payload, refused = _payload(args)
        rows.append(
            {
                "idx": row["idx"],
                "coll_op": op,
                "coll_group": _group(args),
                "coll_seq": int(seq) if _present(seq) else None,
                "coll_ranks": int(size) if _present(size) else None,
                "bytes": payload,
                "kind": "p2p" if op in P2P_OPS else "collective",
                "payload_refused": refused,
            }
        )
    return pd.DataFrame(rows, columns=("idx",) + COLUMNS)


GLOO_WORK = "gloo:"
STEP_STRIDE = 1 << 20  # coll_seq of a numbered gloo span: step x STEP_STRIDE + its position in the step


def number_gloo_work(columns: pd.DataFrame, frame: pd.DataFrame, group: tuple[str, int] | None, steps) -> pd.DataFrame:
    """`columns` (collective_columns' result) with group, group size and sequence number for the
    unnumbered gloo work spans of `frame` (idx, name, ts) that fall in a step, given the trace's
    one process group (name, size) and its step windows (ts, dur, step: pyarrow or pandas)."""
    if group is None or steps is None or not len(steps) or columns.empty or columns["coll_seq"].notna().any():
        return columns  # collectives with their own sequence numbers (record_param_comms): those match
    ts, dur, number = (np.asarray(steps[c], dtype=np.int64) for c in ("ts", "dur", "step"))
    spans = frame[["idx", "name", "ts"]].merge(columns[["idx", "coll_group", "coll_seq"]], on="idx")
    spans = spans[
        spans["name"].astype(str).str.startswith(GLOO_WORK) & spans["coll_group"].isna() & spans["coll_seq"].isna()
    ]
    if spans.empty:
        return columns
    step, outside = assign_steps(spans["ts"].to_numpy(np.int64), ts, ts + dur, number)
    spans = spans.assign(step=step)[~outside].sort_values(["step", "ts", "idx"], kind="stable")
    position = spans.groupby("step").cumcount()
    spans = spans[(position < STEP_STRIDE) & (spans["step"] >= 0)]
    seq = dict(zip(spans["idx"], spans["step"].astype(np.int64) * STEP_STRIDE + position[spans.index]))
    columns = columns.copy()
    chosen = columns["idx"].isin(seq.keys())
    columns["coll_seq"] = columns["coll_seq"].astype(object)
    columns.loc[chosen, "coll_seq"] = columns.loc[chosen, "idx"].map(seq)
    columns.loc[chosen, "coll_group"] = group[0]
    columns["coll_ranks"] = columns["coll_ranks"].astype(object)
    columns.loc[chosen & columns["coll_ranks"].isna(), "coll_ranks"] = group[1]
    return columns
