"""Launch edges from correlation ids: a device op depends on the runtime call that launched it.

Kineto gives a runtime call that enqueues device work (`cudaLaunchKernel`, `cudaMemcpyAsync`, ...)
and the device op it enqueued the same `correlation` id (in `args`; the trace's `ac2g` flow
arrows join the same pairs). Where a device node's id matches a host call of its rank (in its
step or an earlier one of the batch: a kernel launched at the end of a step may run in the next),
the node waits for that call's end, at its offset into the top-level host node holding it; this
replaces the edge inferred from nesting and time (graph.py: `_launches`, and the latest-finished
edge from host work, which a launched op no longer waits for). Runs without ids (Trn1, Neuron
traces) keep the inference.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

# The id as read with the events (events.py): only rows whose args name one pay for the regex.
CORRELATION_PRESENT = "contains(args, '\"correlation\"')"
CORRELATION_SQL = (
    f"CASE WHEN {CORRELATION_PRESENT} THEN TRY_CAST(regexp_extract("
    "args, '\"correlation\":\\s*(-?[0-9]{1,18})', 1) AS BIGINT) END"
)


def ids(frame: pd.DataFrame, rows=None) -> np.ndarray:
    """The correlation id of each row as float64 (NaN: none, or no such column)."""
    if "corr" not in frame:
        return np.full(len(frame) if rows is None else len(rows), np.nan)
    values = pd.to_numeric(frame["corr"], errors="coerce").to_numpy("float64", na_value=np.nan)
    return values if rows is None else values[rows]


def _host_calls(nodes: pd.DataFrame, marks: pd.DataFrame, device: np.ndarray, origin: int) -> pd.DataFrame:
    """Every host call with an id: (owner node, end, corr). A nested call's owner is the top-level
    node holding it; a top-level call is its own owner and ends with it."""
    top = np.flatnonzero(~device & ~np.isnan(ids(nodes)))
    calls = [pd.DataFrame({"owner": top, "end": nodes["end"].to_numpy(np.int64)[top], "corr": ids(nodes)[top]})]
    corr = ids(marks)
    nested = np.flatnonzero(~np.isnan(corr))
    if len(nested):
        nid = nodes["nid"].to_numpy(np.int64)
        sorter = np.argsort(nid, kind="stable")
        owner_nid = marks["owner"].to_numpy(np.int64)[nested]
        pos = np.minimum(np.searchsorted(nid[sorter], owner_nid), max(len(nid) - 1, 0))
        found = nid[sorter][pos] == owner_nid if len(nid) else np.zeros(len(nested), bool)
        calls.append(
            pd.DataFrame(
                {
                    "owner": sorter[pos][found],
                    "end": marks["end"].to_numpy(np.int64)[nested][found] - origin,
                    "corr": corr[nested][found],
                }
            )
        )
    return pd.concat(calls, ignore_index=True)


def correlated(
    nodes: pd.DataFrame, marks: pd.DataFrame, device: np.ndarray, group: np.ndarray, position: np.ndarray, origin: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(device node, the host node holding its launch call, ns into that node at which the call
    ended) for every device node whose launch call has the same `group` (graph.py passes the
    rank: launches connect across the batch's steps). `nodes` are in
    graph.py's attached form (times after `origin`), `device` marks those on a device lane and
    `position` is each node's solving order.
    The host node must start first; a call that ends after the device op started (the host's
    and device's clocks disagree) counts as ending at the op's start."""
    empty = np.zeros(0, np.int64)
    corr = ids(nodes)
    launched = np.flatnonzero(device & ~np.isnan(corr))
    if not len(launched):
        return empty, empty, empty
    calls = _host_calls(nodes, marks, device, origin)
    calls["group"] = group[calls["owner"].to_numpy(np.int64)]
    calls = calls.drop_duplicates(["group", "corr"], keep=False)  # an id used twice names no one call
    ops = pd.DataFrame({"node": launched, "group": group[launched], "corr": corr[launched]})
    pairs = ops.merge(calls, on=["group", "corr"], how="inner")
    node, owner = pairs["node"].to_numpy(np.int64), pairs["owner"].to_numpy(np.int64)
    s0 = nodes["ts"].to_numpy(np.int64)
    keep = (position[owner] < position[node]) & (owner != node)
    node, owner = node[keep], owner[keep]
    at = np.minimum(pairs["end"].to_numpy(np.int64)[keep], s0[node]) - s0[owner]
    return node, owner, at


# A launch that finds the device's queue full blocks until a queued op completes (CUDA's queue
# holds about a thousand launches): the call ends just after a device op of its rank ends (on a
# public V100 trace, calls over 30 us end a median 5 us, at most ~7 us for 9 in 10, after one),
# and the op it launched starts long after it (a full queue of even 1 us ops is ~1 ms deep), or
# after the device's record ends.
BLOCKED_LONGER = 4  # x the rank's median launch call: a call that waited, not one that enqueued
QUEUED_NS = 1_000_000  # launched work starting this long after its call: the queue was full
RELEASED_NS = 20_000  # a device op ending this shortly before the call's end released it


def blocked(rank: np.ndarray, ts: np.ndarray, end: np.ndarray, device: np.ndarray, corr: np.ndarray) -> np.ndarray:
    """Per event: how long a host launch call waited on the device's full queue (its length
    beyond the rank's median launch call), 0 for calls that did not block. Such a call waits
    for the device like a synchronize does (the sync edge: it ends when the device op that
    freed its slot ends), so work the device finishes sooner lets the host launch sooner."""
    waited = np.zeros(len(rank), np.int64)
    calls = np.flatnonzero(~device & ~np.isnan(corr))
    ops = np.flatnonzero(device & ~np.isnan(corr))
    if not len(calls) or not len(ops):
        return waited
    frame = pd.DataFrame({"row": calls, "rank": rank[calls], "corr": corr[calls], "ts": ts[calls], "end": end[calls]})
    frame["dur"] = frame["end"] - frame["ts"]
    frame["typical"] = frame.groupby("rank")["dur"].transform("median")
    started = pd.DataFrame({"rank": rank[ops], "corr": corr[ops], "start": ts[ops]}).groupby(["rank", "corr"]).min()
    frame = frame.join(started, on=["rank", "corr"])
    # an op not among the events had not started when the device's record ends (the trace
    # stopped with the queue full: the last step's launches)
    last_end = pd.Series(end[ops]).groupby(rank[ops]).max()
    frame["start"] = frame["start"].fillna(frame["rank"].map(last_end))
    full = (frame["dur"] > BLOCKED_LONGER * frame["typical"]) & (frame["start"] - frame["end"] > QUEUED_NS)
    for r, rows in frame[full].groupby("rank"):
        ends = np.sort(end[device & (rank == r)])
        at = np.searchsorted(ends, rows["end"].to_numpy(np.int64), side="right") - 1
        freed = (at >= 0) & (rows["end"].to_numpy(np.int64) - ends[np.maximum(at, 0)] <= RELEASED_NS)
        waited[rows["row"].to_numpy()[freed]] = (rows["dur"] - rows["typical"]).to_numpy(np.int64)[freed]
    return waited
