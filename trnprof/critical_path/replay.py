"""Solve the graph: every node's start and end with its work, tail and lead gap scaled.

start = max(end of lane predecessor, end of the node finished last before it, step start,
            start of a host node + the scaled offset of the nested call it waited for) + gap
end   = start + work                              for plain nodes
end   = max(start + work, last arrival + tail)    for a collective joined across ranks
end   = max(start + work, device node end + tail) for a host call blocking on the device
Steps are solved in order: each rank's step starts at its previous step's replayed end plus the
measured time between the two (the first step of a run, when it was measured to; `carry` brings
the shift of each rank's last step from the batch before), so a change that ends a step earlier
moves the steps after it. A rank's step ends at its last node's end plus the measured gap after
it. With every scale at 1 the solution is the measured timeline.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .graph import Graph
from .rounds import Rounds


@dataclass
class Solution:
    start: np.ndarray
    end: np.ndarray
    start_by: np.ndarray  # predecessor that set the start, -1: the step's start
    end_by: np.ndarray  # member / device node that set the end, -1: its own work
    via_launch: np.ndarray  # the start was set by a call nested in start_by, not by its end
    steps: pd.DataFrame  # rank, step, ts (replayed start), end (replayed), dur, last


def carried(graph: Graph, sol: Solution) -> dict:
    """rank -> (its last step of the batch, ns that step ends after (or, negative, before) its
    measured end): the next batch's first step starts that much later when it is the next step
    (`solve(carry=...)`)."""
    steps = sol.steps.assign(measured=graph.steps["end_ts"].to_numpy(float))
    last = steps.sort_values("step").groupby("rank").tail(1)
    return dict(
        zip(
            last["rank"].astype(int).tolist(),
            zip(last["step"].astype(int).tolist(), (last["end"] - last["measured"]).tolist()),
        )
    )


# Rounds run in plain Python (rounds.py) when a round would start at most NARROW nodes on average
# (nodes / the longest sequence): Python takes ~4.5 us a node, a numpy round ~100 us plus ~0.3 us
# a node (bench/bench_critical_path.py, docs/critical-path.md: Performance: the solver).
NARROW = 20
# ... and hold at most this many nodes: Python's rounds take ~450 bytes a node (about 450 MB here,
# beside the graph), numpy's under 100; bigger batches (one step over the batch size) stay in numpy.
PYTHON_NODES = 1_000_000


def solve(
    graph: Graph,
    work_scale: np.ndarray | None = None,
    gap_scale: np.ndarray | None = None,
    step_gap_scale: np.ndarray | None = None,
    method: str = "auto",
    carry: dict | None = None,
) -> Solution:
    """Every node's replayed start and end: a wavefront over the (rank, step) sequences of one
    step at a time (steps in order, each starting where the rank's previous one ended, _Clock).
    Each round takes the next node of every sequence whose predecessors have ended; a
    collective's end is settled once all its members have started, a blocking host call's once
    its device node has ended. `numpy` vectorises each round over the sequences; `python` runs
    the same rounds node by node (rounds.py), faster when few sequences run side by side;
    `auto` picks by the nodes per round (NARROW). Both give identical results. `carry`: rank ->
    shift of its previous step's end (carried())."""
    wave = _Wave(graph, work_scale, gap_scale)
    longest = int(np.bincount(graph.group).max()) if len(graph.group) else 0
    narrow = len(graph.group) <= min(NARROW * longest, PYTHON_NODES)
    solver = Rounds(wave) if method == "python" or (method == "auto" and narrow) else wave
    clock = _Clock(graph, step_gap_scale, carry)
    for groups, nodes in clock.steps():
        solver.set_base(nodes, clock.start[clock.node_row[nodes]])
        solver.run_groups(groups)
        clock.ended(solver.ends(nodes))
    start, end, start_by, end_by, via_launch = solver.result()
    return Solution(start, end, start_by, end_by, via_launch, _steps(graph, end, step_gap_scale, clock.start))


class _Clock:
    """The batch's steps in order; each (rank, step) starts at the rank's previous step's replayed
    end plus the measured time between them (`shift`: replayed minus measured end of the rank's
    previous step, from `carry` for the batch's first), when that step is step - 1 and replayed."""

    def __init__(self, graph: Graph, step_gap_scale, carry: dict | None):
        steps = graph.steps
        self.g = graph
        self.rank = steps["rank"].to_numpy(np.int64)
        self.step = steps["step"].to_numpy(np.int64)
        self.ts = steps["ts"].to_numpy(float)
        self.end_ts = steps["end_ts"].to_numpy(float)
        self.tail = steps["tail_gap"].to_numpy(float) * (1.0 if step_gap_scale is None else step_gap_scale)
        self.start = self.ts.copy()
        self.shift = {int(r): (int(k), float(v)) for r, (k, v) in (carry or {}).items()}  # rank -> (step, ns)
        node_step = graph.nodes["step"].to_numpy(np.int64)
        key = self.rank * (1 << 32) + self.step  # every node belongs to a row (graph._attach_steps)
        sorter = np.argsort(key, kind="stable")
        node_key = graph.nodes["rank"].to_numpy(np.int64) * (1 << 32) + node_step
        self.node_row = (
            sorter[np.minimum(np.searchsorted(key[sorter], node_key), max(len(key) - 1, 0))]
            if len(key)
            else np.zeros(0, np.int64)
        )
        self._by_step = np.argsort(node_step, kind="stable")
        self._node_step = node_step[self._by_step]
        self._rows = self._nodes = None

    def steps(self):
        """(sequences, nodes) of each step in order, its rows' starts set from the shifts."""
        for step in np.unique(self.step).tolist():
            rows = np.flatnonzero(self.step == step)
            self._rows = rows
            shift = np.array([_carried(self.shift.get(int(r)), step) for r in self.rank[rows]])
            self.start[rows] = self.ts[rows] + shift
            low, high = np.searchsorted(self._node_step, [step, step + 1])
            self._nodes = self._by_step[low:high]
            yield np.unique(self.g.group[self._nodes]), self._nodes

    def ended(self, end: np.ndarray) -> None:
        """Record the replayed ends of the current step's rows (`end`: every node's end so far)."""
        rows = self._rows
        finished = _finish(self.g, end, rows, self.start, self.tail, self._nodes)[0]
        step = int(self.step[rows[0]]) if len(rows) else 0
        for r, e, m in zip(self.rank[rows].tolist(), finished.tolist(), self.end_ts[rows].tolist()):
            self.shift[r] = (step, e - m)


def _carried(previous: tuple[int, float] | None, step: int) -> float:
    """The shift a rank's `step` inherits: its previous step's, when that was the step just
    before (steps left out of the replay keep their measured times, and so does what follows)."""
    return previous[1] if previous is not None and previous[0] == step - 1 else 0.0


def solve_unchanged(graph: Graph) -> Solution:
    """The replay with nothing scaled, without rounds: every node's equations evaluated once on
    the measured times of its predecessors. When the result is the measured timeline (it is by
    construction: the lead gaps, tails and launch offsets were measured from it) it is the
    solution, the one `solve` finds; otherwise (never seen) `solve` runs."""
    g, n = graph, len(graph.nodes)
    measured_start = g.nodes["ts"].to_numpy(np.int64).astype(float)
    measured_end = g.nodes["end"].to_numpy(np.int64).astype(float)
    every = np.arange(n)
    base = g.nodes["base"].to_numpy(np.int64).astype(float)
    ready, start_by, via_launch = _binding(g, every, base, measured_start, measured_end, np.ones(n))
    start = ready + g.gap
    end = start + g.work
    end_by = np.full(n, -1, np.int64)
    j = np.flatnonzero(g.join >= 0)
    if len(j):
        instances = np.arange(len(g.members))
        arrival = np.maximum.reduceat(start[g.members.rows], g.members.ptr[:-1])
        last = first_latest(g.members, instances, start)
        _end_after(end, end_by, j, start[j] + g.work[j], arrival[g.join[j]] + g.tail[j], last[g.join[j]])
    held = (g.sync_on >= 0) & (g.join < 0) & g.from_start  # sends held by their receive's start first
    s = np.flatnonzero(held)
    if len(s):
        _end_after(end, end_by, s, start[s] + g.work[s], start[g.sync_on[s]] + g.tail[s], g.sync_on[s])
    s = np.flatnonzero((g.sync_on >= 0) & (g.join < 0) & ~held)  # a joined node ends with its join
    if len(s):
        device = g.sync_on[s]
        _end_after(end, end_by, s, start[s] + g.work[s], end[device] + g.tail[s], device)
    if not (np.array_equal(start, measured_start) and np.array_equal(end, measured_end)):
        return solve(graph)
    return Solution(start, end, start_by, end_by, via_launch, _steps(graph, end, None))


def _end_after(end, end_by, nodes, own, after, who) -> None:
    """End `nodes` at the later of their own work and what they waited for (`who`, ending at `after`)."""
    later = after > own
    end[nodes] = np.where(later, after, own)
    end_by[nodes] = np.where(later, who, -1)


class _Wave:
    def __init__(self, graph: Graph, work_scale, gap_scale):
        n = len(graph.nodes)
        self.g, self.n = graph, n
        self.sync_on = graph.sync_on
        self.work_f = np.ones(n) if work_scale is None else np.asarray(work_scale, float)
        self.work = graph.work * self.work_f
        self.tail = graph.tail * self.work_f
        self.gap = graph.gap * (1.0 if gap_scale is None else np.asarray(gap_scale, float))
        self.base = graph.nodes["base"].to_numpy(np.int64).astype(float)
        self.start = np.full(n, np.nan)
        self.end = np.full(n, np.nan)
        self.start_by = np.full(n, -1, np.int64)
        self.end_by = np.full(n, -1, np.int64)
        self.via_launch = np.zeros(n, bool)
        self.blocked = (graph.join >= 0) | (self.sync_on >= 0)
        inst = graph.join[graph.join >= 0]
        size = int(inst.max()) + 1 if len(inst) else 1  # one spare slot: lookups of -1 stay in bounds
        self.size = np.bincount(inst, minlength=size)
        self.started = np.zeros(size, np.int64)
        self.arrival = np.full(size, -np.inf)  # latest start among the started members
        # the member that started latest, the first of ties, as its position among the members
        self.last_pos = np.full(size, np.iinfo(np.int64).max)
        sizes = np.diff(graph.members.ptr)
        self.member_pos = np.zeros(n, np.int64)
        self.member_pos[graph.members.rows] = np.arange(len(graph.members.rows)) - np.repeat(
            graph.members.ptr[:-1], sizes
        )
        self.pending = np.zeros(0, np.int64)  # started nodes whose end waits on a join or a sync

    def _sequences(self):
        """Node order per (rank, step): the measured start order, as positions and bounds."""
        if getattr(self, "_seq", None) is None:
            self._seq = self._sequence_bounds()
        return self._seq

    def _sequence_bounds(self):
        group = self.g.group
        order = self.g.by_sequence
        counts = np.bincount(group, minlength=group.max() + 1 if len(group) else 0)
        first = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
        return order, first, first + counts

    def set_base(self, nodes: np.ndarray, base: np.ndarray) -> None:
        self.base[nodes] = base

    def ends(self, nodes: np.ndarray) -> np.ndarray:
        return self.end

    def result(self) -> tuple[np.ndarray, ...]:
        return self.start, self.end, self.start_by, self.end_by, self.via_launch

    def run_groups(self, groups: np.ndarray) -> None:
        """Solve the sequences `groups` (one step's) to their end."""
        order, first, stop = self._sequences()
        pos, stop = first[groups].copy(), stop[groups]
        while True:
            active = pos < stop
            if not active.any():
                break
            heads = order[pos[active]]
            ready = self._ready(heads)
            if ready.any():
                self._start(heads[ready])
                advanced = np.flatnonzero(active)[ready]
                pos[advanced] += 1
            settled = self._settle(force=not ready.any())
            if not ready.any() and not settled:
                raise RuntimeError("critical path: the graph has a cycle")  # measured order forbids it
        self._settle(force=True)

    def _known(self, nodes: np.ndarray) -> np.ndarray:
        return (nodes < 0) | ~np.isnan(self.end[np.maximum(nodes, 0)])

    def _ready(self, heads: np.ndarray) -> np.ndarray:
        g = self.g
        return self._known(g.lane_prev[heads]) & self._known(g.near[heads])

    def _start(self, j: np.ndarray) -> None:
        g = self.g
        ready, by, self.via_launch[j] = _binding(g, j, self.base, self.start, self.end, self.work_f)
        self.start[j], self.start_by[j] = ready + self.gap[j], by
        plain = ~self.blocked[j]
        self.end[j[plain]] = self.start[j[plain]] + self.work[j[plain]]
        joined = j[g.join[j] >= 0]
        inst = g.join[joined]
        if len(joined):
            before = self.arrival[inst]
            np.add.at(self.started, inst, 1)
            np.maximum.at(self.arrival, inst, self.start[joined])
            self.last_pos[inst[self.arrival[inst] > before]] = np.iinfo(np.int64).max  # a later arrival
            top = self.start[joined] == self.arrival[inst]
            np.minimum.at(self.last_pos, inst[top], self.member_pos[joined[top]])
        self.pending = np.concatenate([self.pending, j[~plain]])

    def _settle(self, force: bool) -> bool:
        """End the pending nodes whose join is complete or whose device node has ended; with
        `force`, all of them (members not started yet, where clocks disagree, count from their
        measured offset)."""
        g, p = self.g, self.pending
        if not len(p):
            return False
        inst, dev = g.join[p], self.sync_on[p]
        i, d = np.maximum(inst, 0), np.maximum(dev, 0)
        joins = (inst >= 0) & (self.started[i] == self.size[i])
        held = g.from_start[p]  # a send waits for its receive's start, others for their node's end
        waited = np.where(held, self.start[d], self.end[d])
        syncs = (inst < 0) & ~np.isnan(waited)
        can = joins | syncs
        if can.any():
            q = p[can]
            own = self.start[q] + self.work[q]
            after = np.where(joins[can], self.arrival[i[can]], waited[can]) + self.tail[q]
            who = dev[can].copy()
            complete = i[can][joins[can]]
            who[joins[can]] = g.members.rows[g.members.ptr[complete] + self.last_pos[complete]]
            later = after > own
            self.end[q] = np.where(later, after, own)
            self.end_by[q] = np.where(later, who, -1)
            self.pending = p[~can]
            return True
        if force:
            for node in p.tolist():
                self._end_one(node)
            self.pending = p[:0]
            return True
        return False

    def _end_one(self, p: int) -> None:
        g = self.g
        own = self.start[p] + self.work[p]
        if g.join[p] >= 0:
            members = g.members[int(g.join[p])]
            arrived = self.start[members]
            missing = np.isnan(arrived)
            if missing.any():  # clocks disagree on the order: they keep their measured offset
                s0 = g.nodes["ts"].to_numpy()[members]
                shift = self.start[p] - g.nodes["ts"].iat[p]
                arrived = np.where(missing, s0 + shift, arrived)
            k = int(np.argmax(arrived))
            who, joined = members[k], arrived[k] + self.tail[p]
        elif g.from_start[p]:
            who = int(self.sync_on[p])
            posted = self.start[who]
            if np.isnan(posted):  # clocks disagree on the order: it keeps its measured offset
                posted = g.nodes["ts"].iat[who] + self.start[p] - g.nodes["ts"].iat[p]
            joined = posted + self.tail[p]
        else:
            who = int(self.sync_on[p])
            if np.isnan(self.end[who]):
                self._end_one(who)
            joined = self.end[who] + self.tail[p]
        if joined > own:
            self.end[p], self.end_by[p] = joined, who
        else:
            self.end[p] = own


def first_latest(members, instances: np.ndarray, start: np.ndarray) -> np.ndarray:
    """Per collective instance, its member that started latest; among equal starts the first
    member (members are in rank order), whatever order the solver took them in."""
    low, high = members.ptr[instances], members.ptr[instances + 1]
    sizes = high - low
    offsets = np.cumsum(sizes) - sizes
    rows = members.rows[np.repeat(low - offsets, sizes) + np.arange(int(sizes.sum()))]
    arrived = start[rows]
    latest = np.repeat(np.maximum.reduceat(arrived, offsets), sizes) if len(rows) else arrived
    at = np.where(arrived == latest, np.arange(len(rows)), len(rows))
    return rows[np.minimum.reduceat(at, offsets)] if len(rows) else rows


def _binding(g: Graph, j: np.ndarray, base, start, end, work_f):
    """(ready time, the predecessor that set it or -1, set by a launch) of nodes `j`: the step
    start, then the lane predecessor's end, the latest finished node's end (less its lead: a
    collective's waiter resumes before the collective's recorded end), the launch point in its
    host node; a later candidate binds only when strictly later."""
    ready, by = base[j].copy(), np.full(len(j), -1, np.int64)
    for preds, lead in ((g.lane_prev[j], 0), (g.near[j], g.near_lead[j])):
        has = preds >= 0
        e = np.where(has, end[np.maximum(preds, 0)] - lead, -np.inf)
        later = e > ready
        ready, by = np.where(later, e, ready), np.where(later, preds, by)
    owner = g.launch_by[j]
    o = np.maximum(owner, 0)
    t = np.where(owner >= 0, start[o] + g.launch_at[j] * work_f[o], -np.inf)
    later = t > ready
    return np.where(later, t, ready), np.where(later, owner, by), later


def _last_of(graph: Graph, end: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """Per (rank, step) sequence, its node among `idx` with the latest replayed end of those that
    ended within the measured step (ties: the first in measured lane order); -1 when none."""
    nodes = graph.nodes
    inside = idx[nodes["end"].to_numpy()[idx] <= nodes["end_ts"].to_numpy()[idx]]
    group, ends = graph.group[inside], end[inside]
    sequences = int(graph.group.max()) + 1 if len(graph.group) else 0
    latest = np.full(sequences, -np.inf)
    np.maximum.at(latest, group, ends)
    tied = ends == latest[group]
    nid = nodes["nid"].to_numpy(np.int64)[inside]
    first_nid = np.full(sequences, np.iinfo(np.int64).max)
    np.minimum.at(first_nid, group[tied], nid[tied])
    pick = tied & (nid == first_nid[group])
    last_of = np.full(sequences, -1, np.int64)
    last_of[group[pick]] = inside[pick]
    return last_of


def _finish(
    graph: Graph, end: np.ndarray, rows: np.ndarray, start: np.ndarray, tail: np.ndarray, idx: np.ndarray | None = None
) -> np.ndarray:
    """Replayed ends of the steps' `rows`: the last node's end (or the step's start when none
    ended within it) plus the gap after it; `idx`: the nodes to look among (all by default)."""
    last_of = _last_of(graph, end, np.arange(len(end)) if idx is None else idx)
    seq = graph.steps["group"].to_numpy(np.int64)[rows]
    last = np.where(seq >= 0, last_of[np.maximum(seq, 0)] if len(last_of) else -1, -1)
    return np.where(last >= 0, end[np.maximum(last, 0)], start[rows]) + tail[rows], last


def _steps(graph: Graph, end: np.ndarray, gap_scale, start: np.ndarray | None = None) -> pd.DataFrame:
    """Each rank's step ends at the latest end of its nodes that ended within the measured step,
    plus the measured gap after the last of them; it starts at `start` (the measured start)."""
    steps = graph.steps
    start = steps["ts"].to_numpy(float) if start is None else start
    tail = steps["tail_gap"].to_numpy(float) * (1.0 if gap_scale is None else gap_scale)
    finished, last = _finish(graph, end, np.arange(len(steps)), start, tail)
    return pd.DataFrame(
        {
            "rank": steps["rank"].to_numpy(),
            "step": steps["step"].to_numpy(),
            "ts": start,
            "end": finished,
            "dur": finished - start,
            "last": last,
        }
    )
