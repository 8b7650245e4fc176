"""Solve the graph lane by lane: passes that each settle whole lanes at once.

Within a lane (nodes in measured order) a node starts at
    start_i = max(x_i, start_{i-1} + work_{i-1}) + gap_i
where x_i gathers the constraints from outside the lane: the step start, the end of the node
that finished last before it, the launch point in its host node, and the end of the previous
node on the lane when that one is blocked (a collective joined across ranks or a host call held
by the device ends when other nodes say, not after its own work). So the lane breaks into
segments at blocked nodes, and each segment is a max-plus recurrence: an inclusive scan of the
maps t -> max(A, t + B), composed by doubling (log2 of the longest segment vectorised steps,
no sum ever spans more than one segment, so no precision is lost to large offsets).

A pass takes x from the current estimate of every other node, solves every segment, then ends
the blocked nodes (last arrival + tail, device end + tail). Starting from nothing known, the
estimates only grow and reach the graph's solution (every edge points forward in measured time:
the graph is acyclic) after as many passes as the binding chains switch lanes, plus one that
finds nothing changed. `solve` returns None when that takes more than `max_passes` (the caller
keeps the wavefront), or when a collective or sync could close a cycle of zero-length work
(where the wavefront falls back to measured offsets and this iteration would not).
"""

from __future__ import annotations

import numpy as np

from .graph import Graph

MAX_PASSES = 256


class Lanes:
    """The graph's lanes, for the scan: node ids in lane order, segment heads, blocked nodes."""

    def __init__(self, g: Graph):
        n = len(g.work)
        self.blocked = (g.join >= 0) | (g.sync_on >= 0)
        head, depth = _chain_heads(g.lane_prev)
        self.order = np.lexsort((depth, head))              # lanes contiguous, in lane order
        prev = g.lane_prev[self.order]
        # a segment starts at a lane's first node and after every blocked node
        self.first = (prev < 0) | self.blocked[np.maximum(prev, 0)]
        self.after_blocked = np.flatnonzero((g.lane_prev >= 0) & self.blocked[np.maximum(g.lane_prev, 0)])
        position = np.arange(n)
        self.seg_head = np.maximum.accumulate(np.where(self.first, position, 0)) if n else position
        self.longest = int((position - self.seg_head).max()) + 1 if n else 0
        self.joined = np.flatnonzero(g.join >= 0)
        self.synced = np.flatnonzero(g.sync_on >= 0)


def _chain_heads(prev: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per node, the first node of its chain (`prev` links) and its distance from it, by pointer
    doubling: log2 of the longest chain vectorised steps."""
    n = len(prev)
    jump = np.where(prev >= 0, prev, np.arange(n))
    dist = (prev >= 0).astype(np.int64)
    while True:
        further = jump[jump]
        if np.array_equal(further, jump):
            return jump, dist
        dist = dist + dist[jump]
        jump = further


def _scan(a: np.ndarray, b: np.ndarray, seg_head: np.ndarray, longest: int) -> np.ndarray:
    """Inclusive scan of t -> max(a_i, t + b_i) within segments (b at a segment's first node is
    -inf: nothing before it counts): the value at each position of the composed map."""
    a, b = a.copy(), b.copy()
    position = np.arange(len(a))
    d = 1
    live = position[position - seg_head >= 1]
    while d < longest:
        live = live[live - seg_head[live] >= d]
        src = live - d
        a_src, b_src, b_live = a[src], b[src], b[live]
        a[live] = np.maximum(a[live], a_src + b_live)
        b[live] = b_src + b_live
        d *= 2
    return a


class Sweep:
    def __init__(self, g: Graph, lanes: Lanes, work_f: np.ndarray, work: np.ndarray, tail: np.ndarray,
                 gap: np.ndarray, base: np.ndarray):
        self.g, self.lanes = g, lanes
        self.work_f, self.work, self.tail, self.gap, self.base = work_f, work, tail, gap, base
        o = lanes.order
        # the map of each node in lane order: t (previous start) -> max(x + gap, t + work_prev + gap)
        prev = g.lane_prev[o]
        self.b = np.where(lanes.first, -np.inf, work[np.maximum(prev, 0)] + gap[o])
        self.has_near = np.flatnonzero(g.near >= 0)
        self.has_launch = np.flatnonzero(g.launch_by >= 0)
        owner = g.launch_by[self.has_launch]
        self.launch_off = g.launch_at[self.has_launch] * work_f[owner]

    def ends(self, start: np.ndarray) -> np.ndarray:
        g, lanes = self.g, self.lanes
        end = start + self.work
        rows, ptr = g.members.rows, g.members.ptr
        if len(rows):
            arrival = np.maximum.reduceat(start[rows], ptr[:-1])
            j = lanes.joined
            end[j] = np.maximum(end[j], arrival[g.join[j]] + self.tail[j])
        s = lanes.synced
        end[s] = np.maximum(end[s], end[g.sync_on[s]] + self.tail[s])
        return end

    def outside(self, start: np.ndarray, end: np.ndarray) -> np.ndarray:
        """x: the latest of each node's constraints from outside its lane segment."""
        g = self.g
        x = self.base.copy()
        k = self.has_near
        x[k] = np.maximum(x[k], end[g.near[k]])
        k = self.has_launch
        x[k] = np.maximum(x[k], start[g.launch_by[k]] + self.launch_off)
        k = self.lanes.after_blocked
        x[k] = np.maximum(x[k], end[g.lane_prev[k]])
        return x

    def run(self, max_passes: int) -> tuple[np.ndarray, np.ndarray, int] | None:
        n, lanes = len(self.work), self.lanes
        start = np.full(n, -np.inf)
        end = np.full(n, -np.inf)
        for passes in range(1, max_passes + 1):
            x = self.outside(start, end)
            new = np.empty(n)
            new[lanes.order] = _scan(x[lanes.order] + self.gap[lanes.order], self.b, lanes.seg_head, lanes.longest)
            end = self.ends(new)
            if np.array_equal(new, start):
                return start, end, passes
            start = new
        return None


def cyclic_risk(g: Graph) -> bool:
    """Whether a collective or a sync could close a cycle of zero-length work (every edge points
    forward in measured time unless a member ends exactly at its last arrival, or a device node
    a host call waited for has no length)."""
    s0 = g.nodes["ts"].to_numpy(np.int64)
    e0 = g.nodes["end"].to_numpy(np.int64)
    rows, ptr = g.members.rows, g.members.ptr
    if len(rows):
        arrival = np.maximum.reduceat(s0[rows], ptr[:-1])
        inst = g.join[rows]
        if (e0[rows] <= arrival[inst]).any():
            return True
    dev = g.sync_on[g.sync_on >= 0]
    return bool((e0[dev] <= s0[dev]).any())
