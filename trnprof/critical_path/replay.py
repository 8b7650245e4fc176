"""Solve the graph: every node's start and end with its work, tail and lead gap scaled.

start = max(end of lane predecessor, end of the node finished last before it, step start,
            start of a host node + the scaled offset of the nested call it waited for) + gap
end   = start + work                              for plain nodes
end   = max(start + work, last arrival + tail)    for a collective joined across ranks
end   = max(start + work, device node end + tail) for a host call blocking on the device
Each rank's step starts when it was measured to; its end is its last node's end plus the
measured gap after it. With every scale at 1 the solution is the measured timeline.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .graph import Graph


@dataclass
class Solution:
    start: np.ndarray
    end: np.ndarray
    start_by: np.ndarray    # predecessor that set the start, -1: the step's start
    end_by: np.ndarray      # member / device node that set the end, -1: its own work
    via_launch: np.ndarray  # the start was set by a call nested in start_by, not by its end
    steps: pd.DataFrame     # rank, step, ts, end (replayed), dur, last


def solve(graph: Graph, work_scale: np.ndarray | None = None, gap_scale: np.ndarray | None = None,
          step_gap_scale: np.ndarray | None = None) -> Solution:
    n = len(graph.nodes)
    ones = np.ones(n)
    work = (graph.work * (ones if work_scale is None else work_scale)).tolist()
    tail = (graph.tail * (ones if work_scale is None else work_scale)).tolist()
    gap = (graph.gap * (ones if gap_scale is None else gap_scale)).tolist()
    base = graph.nodes["base"].to_numpy(np.int64).tolist()
    s0 = graph.nodes["ts"].to_numpy(np.int64).tolist()
    lane_prev, near = graph.lane_prev.tolist(), graph.near.tolist()
    join, sync_on, members = graph.join.tolist(), graph.sync_on.tolist(), graph.members
    launch_by, launch_at = graph.launch_by.tolist(), graph.launch_at.tolist()
    work_f = (ones if work_scale is None else work_scale).tolist()
    start, end = [None] * n, [None] * n
    start_by, end_by = [-1] * n, [-1] * n
    via_launch = [False] * n

    arrival = {}       # instance id -> (last arrival, node): once every member has started

    def last_arrival(p):
        inst = join[p]
        known = arrival.get(inst)
        if known is not None:
            return known
        shift = start[p] - s0[p]
        best, who, complete = -np.inf, -1, True
        for m in members[inst]:
            arrived = start[m]
            if arrived is None:     # clocks disagree on the order: assume it kept its offset
                arrived, complete = s0[m] + shift, False
            if arrived > best:
                best, who = arrived, m
        if complete:
            arrival[inst] = (best, who)
        return best, who

    def end_of(p):
        if end[p] is None:
            own = start[p] + work[p]
            if join[p] >= 0:
                best, who = last_arrival(p)
                joined = best + tail[p]
            else:
                who = sync_on[p]
                joined = end_of(who) + tail[p]
            if joined > own:
                end[p], end_by[p] = joined, who
            else:
                end[p] = own
        return end[p]

    for j in graph.order.tolist():
        ready, by = base[j], -1
        p = lane_prev[j]
        if p >= 0:
            e = end[p]
            if e is None:
                e = end_of(p)
            if e > ready:
                ready, by = e, p
        q = near[j]
        if q >= 0 and q != p:
            e = end[q]
            if e is None:
                e = end_of(q)
            if e > ready:
                ready, by = e, q
        o = launch_by[j]
        if o >= 0:
            t = start[o] + launch_at[j] * work_f[o]
            if t > ready:
                ready, by = t, o
                via_launch[j] = True
        start[j], start_by[j] = ready + gap[j], by
        if join[j] < 0 and sync_on[j] < 0:
            end[j] = start[j] + work[j]
    for j in range(n):
        if end[j] is None:
            end_of(j)
    return Solution(np.array(start, float), np.array(end, float), np.array(start_by), np.array(end_by),
                    np.array(via_launch), _steps(graph, np.array(end, float), step_gap_scale))


def _steps(graph: Graph, end: np.ndarray, gap_scale) -> pd.DataFrame:
    """Each rank's step ends at the latest end of its nodes that ended within the measured step,
    plus the measured gap after the last of them."""
    nodes = graph.nodes
    inside = (nodes["end"] <= nodes["end_ts"]).to_numpy()
    found = pd.DataFrame({"rank": nodes["rank"].to_numpy()[inside], "step": nodes["step"].to_numpy()[inside],
                          "end": end[inside], "node": np.flatnonzero(inside)})
    found = found.loc[found.groupby(["rank", "step"])["end"].idxmax()] if len(found) else found
    steps = graph.steps.merge(found[["rank", "step", "node"]], on=["rank", "step"], how="left")
    last = steps["node"].fillna(-1).astype(np.int64).to_numpy()
    tail_gap = steps["tail_gap"].to_numpy(float) * (1.0 if gap_scale is None else gap_scale)
    start = steps["ts"].to_numpy(float)
    finished = np.where(last >= 0, end[np.maximum(last, 0)], start) + tail_gap
    return pd.DataFrame({"rank": steps["rank"].to_numpy(), "step": steps["step"].to_numpy(), "ts": start,
                         "end": finished, "dur": finished - start, "last": last})
