"""A plain reference solver of the critical-path graph (one node at a time, in measured start
order, step after step: each rank's step starts at its previous step's replayed end plus the
measured time between them), for tests: the vectorised wavefront in
trnprof/critical_path/replay.py must agree with it exactly (tests/critical_path/test_critical_path.py)."""

from __future__ import annotations

import numpy as np

from trnprof.critical_path.graph import Graph
from trnprof.critical_path.replay import Solution, _steps


def solve(
    graph: Graph,
    work_scale: np.ndarray | None = None,
    gap_scale: np.ndarray | None = None,
    step_gap_scale: np.ndarray | None = None,
) -> Solution:
    n = len(graph.nodes)
    ones = np.ones(n)
    work = (graph.work * (ones if work_scale is None else work_scale)).tolist()
    tail = (graph.tail * (ones if work_scale is None else work_scale)).tolist()
    gap = (graph.gap * (ones if gap_scale is None else gap_scale)).tolist()
    base = graph.nodes["base"].to_numpy(np.int64).tolist()
    s0 = graph.nodes["ts"].to_numpy(np.int64).tolist()
    lane_prev, near, near_lead = graph.lane_prev.tolist(), graph.near.tolist(), graph.near_lead.tolist()
    join, sync_on, members = graph.join.tolist(), graph.sync_on.tolist(), graph.members
    from_start = graph.from_start.tolist()
    launch_by, launch_at = graph.launch_by.tolist(), graph.launch_at.tolist()
    work_f = (ones if work_scale is None else work_scale).tolist()
    start, end = [None] * n, [None] * n
    start_by, end_by = [-1] * n, [-1] * n
    via_launch = [False] * n

    arrival = {}  # instance id -> (last arrival, node): once every member has started

    def last_arrival(p):
        inst = join[p]
        known = arrival.get(inst)
        if known is not None:
            return known
        shift = start[p] - s0[p]
        best, who, complete = -np.inf, -1, True
        for m in members[inst]:
            arrived = start[m]
            if arrived is None:  # clocks disagree on the order: assume it kept its offset
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
            elif from_start[p]:  # a send held until its receive was posted
                who = sync_on[p]
                posted = start[who] if start[who] is not None else s0[who] + start[p] - s0[p]
                joined = posted + tail[p]
            else:
                who = sync_on[p]
                joined = end_of(who) + tail[p]
            if joined > own:
                end[p], end_by[p] = joined, who
            else:
                end[p] = own
        return end[p]

    def _solve_nodes(nodes):
        for j in nodes:
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
                e -= near_lead[j]
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

    node_step = graph.nodes["step"].to_numpy(np.int64).tolist()
    node_rank = graph.nodes["rank"].to_numpy(np.int64).tolist()
    measured_end = graph.nodes["end"].to_numpy(np.int64).tolist()
    end_ts = graph.nodes["end_ts"].to_numpy(np.int64).tolist()
    nid = graph.nodes["nid"].to_numpy(np.int64).tolist()
    rows = graph.steps
    tail_gap = (rows["tail_gap"].to_numpy(float) * (1.0 if step_gap_scale is None else step_gap_scale)).tolist()
    row_of = {(r, s): k for k, (r, s) in enumerate(zip(rows["rank"].tolist(), rows["step"].tolist()))}
    row_start = rows["ts"].to_numpy(float).tolist()
    shift = {}  # rank -> replayed minus measured end of its previous step
    order = graph.order.tolist()
    for step in sorted(set(rows["step"].tolist())):
        for k in [k for k, s in enumerate(rows["step"].tolist()) if s == step]:
            previous = shift.get(int(rows["rank"].iat[k]))
            row_start[k] += previous[1] if previous is not None and previous[0] == step - 1 else 0.0
        mine = [j for j in order if node_step[j] == step]
        for j in mine:
            base[j] = row_start[row_of[(node_rank[j], step)]]
        _solve_nodes(mine)
        for j in mine:
            if end[j] is None:
                end_of(j)
        for k in [k for k, s in enumerate(rows["step"].tolist()) if s == step]:
            rank = int(rows["rank"].iat[k])
            inside = [j for j in mine if node_rank[j] == rank and measured_end[j] <= end_ts[j]]
            last = max(inside, key=lambda j: (end[j], -nid[j])) if inside else None
            finished = (end[last] if last is not None else row_start[k]) + tail_gap[k]
            shift[rank] = (step, finished - float(rows["end_ts"].iat[k]))
    for j in range(n):
        if end[j] is None:
            end_of(j)
    return Solution(
        np.array(start, float),
        np.array(end, float),
        np.array(start_by),
        np.array(end_by),
        np.array(via_launch),
        _steps(graph, np.array(end, float), step_gap_scale, np.array(row_start)),
    )
