"""The dependency graph of a batch of steps, as arrays (one entry per node, in solving order).

Edges into a node's start: the previous node on its lane, and the node of its rank and step that
finished last before it started (what it may have waited for: a kernel's launch, the bucket a
collective reduces, the batch an op consumes); the measured gap after the later of the two (or
after the step's start) is kept as the node's own lead time. Edges into a node's end: a
collective ends no earlier than its last rank arrives (members matched by group and sequence
number across ranks); a host call that blocks on the device ends no earlier than the device work
it waited for. Every edge points from an earlier to a later measured time, so the measured start
order solves the graph.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .nodes import DEVICE_LANE, matches

CATEGORY_OF_KIND = {"compute": "compute", "collective": "communication", "p2p": "communication",
                    "input": "input", "transfer": "transfer", "memory": "transfer", "compile": "compile",
                    "host": "host"}
GAP = "host"          # time between recorded work: untraced host work, launch latency
LATE_RANK = "late_rank"
SYNC = "sync"
CATEGORIES = ("compute", "communication", LATE_RANK, "host", "input", SYNC, "transfer", "compile")


@dataclass
class Graph:
    nodes: pd.DataFrame    # rank, step, lane, kind, name, ts, dur, end, bytes, category, base
    order: np.ndarray      # node indices in solving order (measured start)
    lane_prev: np.ndarray  # -1: first on its lane in the step
    near: np.ndarray       # -1: nothing finished before it in the step
    gap: np.ndarray        # ns from the binding predecessor's (or the step's) start to its start
    work: np.ndarray       # ns of its own work
    tail: np.ndarray       # ns after its end predecessor (collective transfer, sync tail)
    join: np.ndarray       # collective instance id, -1 when not joined across ranks
    sync_on: np.ndarray    # device node a blocking host call waited for, -1 when none
    launch_by: np.ndarray  # host node still running when the nested call this device node waited for ended
    launch_at: np.ndarray  # ns into launch_by's work at which that call ended
    members: dict          # instance id -> list of node indices
    steps: pd.DataFrame    # rank, step, ts, end_ts, tail_gap (times in ns after `origin`)
    origin: int            # ns on the run's clock of time 0 here (keeps float replay exact)


def _latest_before(group: np.ndarray, ends: np.ndarray, queries: np.ndarray, eligible: np.ndarray) -> np.ndarray:
    """Per query, the eligible node of the same group with the latest end <= the query time (-1)."""
    idx = np.arange(len(group))
    return _latest_end(group, queries, group[eligible], ends[eligible], idx[eligible])


def _latest_end(group, queries, end_group, ends, end_ids) -> np.ndarray:
    """Per query (group, time): the id of the latest end <= time in the same group, or -1."""
    n = len(group)
    idx = np.arange(n)
    e_idx = np.asarray(end_ids, np.int64)
    g = np.concatenate([end_group, group])
    t = np.concatenate([ends, queries])
    typ = np.concatenate([np.zeros(len(e_idx), np.int8), np.ones(n, np.int8)])
    who = np.concatenate([e_idx, idx])
    order = np.lexsort((typ, t, g))
    is_end = typ[order] == 0
    pos = np.where(is_end, np.arange(len(order)), -1)
    last = np.maximum.accumulate(pos)
    found = np.full(n, -1, np.int64)
    q_pos = np.flatnonzero(~is_end)
    cand = last[q_pos]
    ok = cand >= 0
    cand_node = np.where(ok, who[order][np.maximum(cand, 0)], -1)
    same = ok & (g[order][np.maximum(cand, 0)] == g[order][q_pos])
    found[who[order][q_pos]] = np.where(same, cand_node, -1)
    return found


def _lane_prev(nodes: pd.DataFrame) -> np.ndarray:
    prev = np.arange(len(nodes)) - 1
    first = ~nodes.duplicated(["rank", "step", "lane"]).to_numpy()
    return np.where(first, -1, prev)


def _joins(nodes: pd.DataFrame):
    """Collective instances seen on two ranks or more whose members all end after the last
    arrival (otherwise the ranks' clocks disagree and the instance is left unjoined)."""
    coll = nodes[(nodes["kind"] == "collective") & nodes["coll_group"].notna() & nodes["coll_seq"].notna()]
    join = np.full(len(nodes), -1, np.int64)
    if coll.empty:
        return join, {}
    keys = coll.groupby(["coll_group", "coll_seq"], sort=False)
    arrive = keys["ts"].transform("max")
    valid = (keys["rank"].transform("nunique") > 1) & (keys["end"].transform("min") >= arrive)
    coll = coll[valid]
    if coll.empty:
        return join, {}
    ids = coll.groupby(["coll_group", "coll_seq"], sort=False).ngroup().to_numpy()
    rows = coll.index.to_numpy()
    join[rows] = ids
    order = np.argsort(ids, kind="stable")
    cuts = np.flatnonzero(np.diff(ids[order])) + 1
    members = dict(enumerate(r.tolist() for r in np.split(rows[order], cuts)))
    return join, members


def build(flat: tuple[pd.DataFrame, pd.DataFrame], steps: pd.DataFrame) -> Graph:
    """The graph of flattened nodes and marks (nodes.flatten) within `steps` (rank, step, ts, end_ts)."""
    nodes, marks = flat
    origin = int(steps["ts"].min()) if len(steps) else 0
    steps = steps.rename(columns={"ts": "step_ts"})[["rank", "step", "step_ts", "end_ts"]].copy()
    steps[["step_ts", "end_ts"]] -= origin
    nodes = nodes.assign(ts=nodes["ts"] - origin, end=nodes["end"] - origin)
    marks = marks.assign(end=marks["end"] - origin)
    nodes = nodes.merge(steps, on=["rank", "step"], how="inner")
    nodes = nodes[nodes["ts"] >= nodes["step_ts"]].rename(columns={"step_ts": "base"})
    nodes = nodes.sort_values(["rank", "step", "lane", "ts"], kind="stable").reset_index(drop=True)
    nodes["category"] = nodes["kind"].map(CATEGORY_OF_KIND).fillna(GAP)
    n = len(nodes)
    s0, e0 = nodes["ts"].to_numpy(np.int64), nodes["end"].to_numpy(np.int64)
    group = nodes.groupby(["rank", "step"], sort=False).ngroup().to_numpy()
    order = np.lexsort((np.arange(n), e0, s0))
    position = np.empty(n, np.int64)
    position[order] = np.arange(n)
    lane_prev = _lane_prev(nodes)
    near = _latest_before(group, e0, s0, np.ones(n, bool))
    near = np.where((near >= 0) & (position[np.maximum(near, 0)] < position), near, -1)
    ready = np.maximum.reduce([nodes["base"].to_numpy(np.int64),
                               np.where(lane_prev >= 0, e0[np.maximum(lane_prev, 0)], 0),
                               np.where(near >= 0, e0[np.maximum(near, 0)], 0)])
    launch_by, launch_at = _launches(nodes, marks, group, s0, e0)
    has = launch_by >= 0
    ready[has] = np.maximum(ready[has], s0[launch_by[has]] + launch_at[has])
    gap = np.maximum(s0 - ready, 0)
    dur = e0 - s0
    work, tail = dur.copy(), np.zeros(n, np.int64)
    join, members = _joins(nodes)
    if members:
        arrive = np.zeros(n, np.int64)
        for ids in members.values():
            arrive[ids] = s0[ids].max()
        j = join >= 0
        tail[j] = e0[j] - arrive[j]
        work[j] = np.where(arrive[j] > s0[j], tail[j], dur[j])
    sync_on = _syncs(nodes, group, s0, e0)
    s = sync_on >= 0
    tail[s] = e0[s] - e0[sync_on[s]]
    work[s] = tail[s]
    return Graph(nodes, order, lane_prev, near, gap, work, tail, join, sync_on, launch_by, launch_at, members,
                 _step_ends(nodes, steps), origin)


def _launches(nodes: pd.DataFrame, marks: pd.DataFrame, group, s0, e0):
    """Device nodes that waited for a call nested in a host node still running when they started
    (a kernel launched from inside an op): that node and how far into it the call ended."""
    n = len(nodes)
    by, at = np.full(n, -1, np.int64), np.zeros(n, np.int64)
    position = pd.Series(np.arange(n), index=nodes["nid"].to_numpy())
    marks = marks[marks["owner"].isin(position.index)]
    if marks.empty:
        return by, at
    owner = position.reindex(marks["owner"].to_numpy()).to_numpy()
    keys = pd.MultiIndex.from_frame(nodes[["rank", "step"]])
    mark_group = pd.Series(group, index=keys).groupby(level=[0, 1]).first().reindex(
        pd.MultiIndex.from_frame(marks[["rank", "step"]])).to_numpy()
    ok = ~pd.isna(mark_group)
    ends = marks["end"].to_numpy(np.int64)[ok]
    found = _latest_end(group, s0, mark_group[ok].astype(np.int64), ends, np.flatnonzero(ok))
    device = matches(nodes["lane"], DEVICE_LANE).to_numpy()
    hit = device & (found >= 0)
    o = np.where(hit, owner[np.maximum(found, 0)], -1).astype(np.int64)
    end_at = np.where(hit, marks["end"].to_numpy(np.int64)[np.maximum(found, 0)], 0)
    live = hit & (e0[np.maximum(o, 0)] > s0) & (o != np.arange(n))
    by[live], at[live] = o[live], end_at[live] - s0[o[live]]
    return by, at


def _syncs(nodes: pd.DataFrame, group, s0, e0) -> np.ndarray:
    """For each blocking host call, the device node that finished last while it blocked."""
    device = nodes["lane"].str.contains(DEVICE_LANE, regex=True).to_numpy()
    found = _latest_before(group, e0, e0, device)
    holds = nodes["syncs"].to_numpy() & (found >= 0)
    found = np.where(holds, found, -1)
    ok = (found >= 0) & (e0[np.maximum(found, 0)] > s0)
    return np.where(ok, found, -1)


def _step_ends(nodes: pd.DataFrame, steps: pd.DataFrame) -> pd.DataFrame:
    """Each (rank, step): the gap after the last end of its nodes that ended within the step."""
    inside = nodes[nodes["end"] <= nodes["end_ts"]]
    last_end = inside.groupby(["rank", "step"])["end"].max().rename("last_end").reset_index()
    out = steps.merge(last_end, on=["rank", "step"], how="left")
    last_end = out["last_end"].fillna(out["step_ts"]).to_numpy(np.int64)
    out["tail_gap"] = np.maximum(out["end_ts"].to_numpy(np.int64) - last_end, 0)
    return out.drop(columns="last_end").rename(columns={"step_ts": "ts"})
