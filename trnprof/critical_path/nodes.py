"""The graph's nodes: each lane's top-level work, per step.

Host threads nest events (an op inside an op); a lane's work is its top-level events: an event
inside an earlier one on the same lane is part of it, an event that starts inside one and ends
after it is cut to start where the earlier one ends. Steps and annotations are windows, never
work. An event belongs to the step its collector gave it (Kineto: the ProfilerStep window it
starts in). Vectorised over integer codes: string columns are categorical, matched per category.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from . import edges_launch
from .events import WORK_KINDS, with_object_categories  # noqa: F401  (WORK_KINDS: the kinds that are work)

# Host calls that block until the device has finished its queued work (as the stdlib's
# _host_calls names them: synchronous copies, stream / event / device synchronize, `.item()`,
# torch-xla's mark_step / wait_device_ops; the Neuron runtime's execute wait).
SYNC_NAME = (
    r"(?i)synchronize|cudaMemcpy(?!Async)|hipMemcpy(?!Async)|nrt_execute_wait|mark_step|wait_device_ops|"
    r"^aten::(?:item|_local_scalar_dense)$"
)
DEVICE_LANE = r"^(?:gpu|nc/|dma/|mtia|xpu)"


def matches(values: pd.Series, pattern: str) -> np.ndarray:
    """Regex search per row, evaluated once per distinct value (names and lanes repeat)."""
    if isinstance(values.dtype, pd.CategoricalDtype):
        hit = values.cat.categories.astype(str).str.contains(pattern, regex=True)
        codes = values.cat.codes.to_numpy()
        return np.asarray(hit, bool)[codes] & (codes >= 0) if len(hit) else np.zeros(len(values), bool)
    distinct = pd.Series(values.dropna().unique())
    hits = set(distinct[distinct.astype(str).str.contains(pattern, regex=True)])
    return values.isin(hits).to_numpy()


def codes(values: pd.Series) -> np.ndarray:
    """Integer codes of a categorical column, in the categories' (sorted) order; -1 for null."""
    return values.cat.codes.to_numpy().astype(np.int64)


def segment_cummax(values: np.ndarray, first: np.ndarray) -> np.ndarray:
    """Running maximum of int64 `values` restarting where `first` is set (contiguous segments)."""
    seg = np.cumsum(first) - 1
    low = np.minimum.reduceat(values, np.flatnonzero(first)) if len(values) else values
    rel = values - low[seg]
    span = int(rel.max()) + 1 if len(rel) else 1
    if len(seg) and int(seg[-1]) >= (1 << 62) // span:  # too many segments x span: per segment
        return pd.Series(values).groupby(seg).cummax().to_numpy()
    keyed = np.maximum.accumulate(seg * span + rel)
    return keyed - seg * span + low[seg]


def stable_order(primary: np.ndarray, secondary: np.ndarray) -> np.ndarray:
    """np.lexsort((secondary, primary)): by `primary`, ties by `secondary`, then by index. One
    stable sort of `primary` (fast on the nearly sorted keys of a lane), then a sort of the tied
    rows only: for keys with few ties (the lane sort: 0.09 s against the lexsort's 0.4 s CPU on
    2.2M events); with many ties (the starts of 1,024 ranks in step) the lexsort is faster."""
    order = np.argsort(primary, kind="stable")
    ranked = primary[order]
    tied = np.flatnonzero(ranked[1:] == ranked[:-1])
    if len(tied):
        rows = np.union1d(tied, tied + 1)  # runs of equal keys, contiguous in `order`
        sub = order[rows]
        order[rows] = sub[np.lexsort((secondary[sub], primary[sub]))]
    return order


def _lane_order(rank, step, lane, ts, dur) -> np.ndarray:
    """Stable order by rank, step, lane, start, longest first; (rank, step, lane, start) packed
    into one int64 key when they fit (two sort keys instead of five)."""
    if not len(ts):
        return np.zeros(0, np.int64)
    parts = [a - a.min() for a in (rank, step, lane, ts)]
    sizes = [int(p.max()) + 1 for p in parts]
    if sizes[0] * sizes[1] * sizes[2] * sizes[3] >= 1 << 62:
        return np.lexsort((-dur, ts, lane, step, rank))
    key = ((parts[0] * sizes[1] + parts[1]) * sizes[2] + parts[2]) * sizes[3] + parts[3]
    return stable_order(key, -dur)


def _outermost(calls: np.ndarray, owner: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Per event: one of `calls` not nested in an earlier one of the same node (lane order)."""
    rows = np.flatnonzero(calls)
    ends = pd.Series(end[rows]).groupby(owner[rows])
    reached = ends.cummax().groupby(owner[rows]).shift(fill_value=np.iinfo(np.int64).min).to_numpy()
    out = np.zeros(len(calls), bool)
    out[rows[end[rows] > reached]] = True
    return out


def flatten(events: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(nodes, marks). Nodes: top-level work per (rank, step, lane), ordered by start, with `nid`
    (their id here) and `syncs` (the node holds a blocking host sync, itself or a nested call,
    or a launch that blocked on the device's full queue: edges_launch.blocked).
    Marks: the ends of host events nested in a node (rank, step, end, owner nid): where inside
    it a launch or a nested call finished, which device work may wait for (less the node's
    earlier waits on a full launch queue); with the call's correlation id when the events have one."""
    events = with_object_categories(events.copy())
    rank, step = events["rank"].to_numpy(np.int64), events["step"].to_numpy(np.int64)
    lane, ts, dur = codes(events["lane"]), events["ts"].to_numpy(np.int64), events["dur"].to_numpy(np.int64)
    order = _lane_order(rank, step, lane, ts, dur)
    ev = events.take(order).reset_index(drop=True)
    rank, step, lane, ts, dur = rank[order], step[order], lane[order], ts[order], dur[order]
    end = ts + dur
    n = len(ev)
    first = np.ones(n, bool)
    first[1:] = (rank[1:] != rank[:-1]) | (step[1:] != step[:-1]) | (lane[1:] != lane[:-1])
    lowest = np.iinfo(np.int64).min
    reach = np.full(n, lowest, np.int64)
    if n:
        reach[1:] = segment_cummax(end, first)[:-1]
    reach[first] = lowest  # int64 throughout: floats lose ns at epoch scale
    top = (end > reach) | (ts >= reach)  # not inside an earlier event of the lane
    device = matches(ev["lane"], DEVICE_LANE)
    is_sync = matches(ev["name"], SYNC_NAME) & ~device
    owner = np.maximum.accumulate(np.where(top, np.arange(n), -1)) if n else np.zeros(0, np.int64)
    waited = _outermost(is_sync, owner, end) * dur  # a sync call waits its whole length
    queued = np.zeros(n, np.int64)
    if "corr" in ev:  # launches that blocked on a full device queue wait for the device too
        queued = edges_launch.blocked(rank, ts, end, device, edges_launch.ids(ev))
        is_sync, waited = is_sync | (queued > 0), waited + queued
    synced = np.zeros(n, bool)
    synced[owner[is_sync]] = True
    node_waited = np.zeros(n, np.int64)
    np.add.at(node_waited, owner[is_sync], waited[is_sync])
    keep = np.flatnonzero(top)
    nodes = ev.take(keep).reset_index(drop=True)
    start = np.maximum(ts, reach)[keep]  # cut partial overlaps
    nodes["ts"], nodes["end"] = start, end[keep]
    nodes["dur"] = end[keep] - start
    nodes["syncs"], nodes["nid"] = synced[keep], keep
    # the node's own work: its length but the time its calls waited on the device
    nodes["own"] = np.where(synced[keep], np.clip(end[keep] - start - node_waited[keep], 0, None), 0)
    inner = ~top & ~device
    # a call's end within its node, less the node's earlier waits on a full queue: a replay that
    # frees the queue sooner launches sooner (the device still starts an op after the one before)
    launched = end - pd.Series(queued).groupby(owner).cumsum().to_numpy(np.int64) if n else end
    launched = np.maximum(launched, np.maximum(ts, reach)[np.maximum(owner, 0)])
    marks = pd.DataFrame({"rank": rank[inner], "step": step[inner], "end": launched[inner], "owner": owner[inner]})
    if "corr" in ev:  # which device op a nested call launched (edges_launch.py)
        marks["corr"] = ev["corr"].to_numpy()[inner]
    return nodes, marks
