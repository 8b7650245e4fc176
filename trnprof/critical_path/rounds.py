"""The wavefront of replay.py, round for round, in plain Python: for batches of few (rank, step)
sequences, where each numpy round would start a handful of nodes and its call overhead (about
100 us a round) dominates. A single-rank trace is one sequence per step: the numpy wavefront
starts one node per round (docs/critical-path.md, Performance: the solver).

Every decision is the wavefront's, taken in the same order on the same float64 values (Python
floats are IEEE doubles): same rounds, same ties (the member that started latest, the first in
rank order), same settling of blocked nodes, same fallback to measured offsets
when no sequence can move. tests/critical_path/test_solvers.py holds the two to identical output.
"""

from __future__ import annotations

import math

import numpy as np


class Rounds:
    def __init__(self, wave):
        g = wave.g
        self.g, self.n = g, wave.n
        self.lane_prev, self.near, self.near_lead = g.lane_prev.tolist(), g.near.tolist(), g.near_lead.tolist()
        self.launch_by, self.launch_at = g.launch_by.tolist(), g.launch_at.tolist()
        self.join, self.sync_on, self.members = g.join.tolist(), wave.sync_on.tolist(), g.members
        self.from_start = g.from_start.tolist()
        self.work_f, self.work, self.tail = wave.work_f.tolist(), wave.work.tolist(), wave.tail.tolist()
        self.gap, self.base = wave.gap.tolist(), wave.base.tolist()
        n = self.n
        self.start, self.end = [math.nan] * n, [math.nan] * n
        self.start_by, self.end_by, self.via_launch = [-1] * n, [-1] * n, [False] * n
        size = len(wave.size)
        self.size = wave.size.tolist()
        self.started, self.arrival, self.last = [0] * size, [-math.inf] * size, [-1] * size
        self.pending: list[int] = []
        order, first, stop = wave._sequences()
        self.sequences = [order[a:b].tolist() for a, b in zip(first.tolist(), stop.tolist())]

    def set_base(self, nodes: np.ndarray, base: np.ndarray) -> None:
        for j, b in zip(nodes.tolist(), base.tolist()):
            self.base[j] = b

    def ends(self, nodes: np.ndarray) -> np.ndarray:
        """Every node's end as an array, known for `nodes` (NaN elsewhere)."""
        out = np.full(self.n, np.nan)
        out[nodes] = [self.end[j] for j in nodes.tolist()]
        return out

    def run_groups(self, groups: np.ndarray) -> None:
        """Solve the sequences `groups` (one step's) to their end."""
        sequences = [self.sequences[k] for k in groups.tolist()]
        pos = [0] * len(sequences)
        active = [k for k, s in enumerate(sequences) if s]
        while active:
            if len(active) == 1:
                self._run_alone(sequences[active[0]], pos[active[0]])
                break
            heads = [sequences[k][pos[k]] for k in active]
            ready = [self._ready(h) for h in heads]
            moved = [h for h, r in zip(heads, ready) if r]
            if moved:
                self._start(moved)
                for k, r in zip(active, ready):
                    pos[k] += r
                active = [k for k in active if pos[k] < len(sequences[k])]
            settled = self._settle(force=not moved)
            if not moved and not settled:
                raise RuntimeError("critical path: the graph has a cycle")  # measured order forbids it
        self._settle(force=True)

    def _run_alone(self, sequence: list[int], at: int) -> None:
        """The rounds of one sequence (a single-rank step's, or the last of a group): each starts
        the sequence's next node when it is ready, then settles; none ready forces the settle."""
        end, lane_prev, near, isnan = self.end, self.lane_prev, self.near, math.isnan
        while at < len(sequence):
            head = sequence[at]
            before, beside = lane_prev[head], near[head]  # _ready, inline: this loop runs once per node
            if (before < 0 or not isnan(end[before])) and (beside < 0 or not isnan(end[beside])):
                self._begin(head)
                self._arrive(head)
                at += 1
                if self.pending:
                    self._settle(force=False)
            elif not self._settle(force=True):
                raise RuntimeError("critical path: the graph has a cycle")  # measured order forbids it

    def result(self) -> tuple[np.ndarray, ...]:
        return (
            np.array(self.start, float),
            np.array(self.end, float),
            np.array(self.start_by, np.int64),
            np.array(self.end_by, np.int64),
            np.array(self.via_launch, bool),
        )

    def _known(self, node: int) -> bool:
        return node < 0 or not math.isnan(self.end[node])

    def _ready(self, h: int) -> bool:
        return self._known(self.lane_prev[h]) and self._known(self.near[h])

    def _start(self, nodes: list[int]) -> None:
        for j in nodes:
            self._begin(j)
        for j in nodes:
            self._arrive(j)

    def _begin(self, j: int) -> None:
        """Start node j when what it waits for is done; end it too unless it blocks."""
        start, end = self.start, self.end
        ready, by, via = self.base[j], -1, False
        p = self.lane_prev[j]
        if p >= 0 and end[p] > ready:
            ready, by = end[p], p
        p = self.near[j]
        if p >= 0 and end[p] - self.near_lead[j] > ready:
            ready, by = end[p] - self.near_lead[j], p
        o = self.launch_by[j]
        if o >= 0:
            t = start[o] + self.launch_at[j] * self.work_f[o]
            if t > ready:
                ready, by, via = t, o, True
        start[j], self.start_by[j], self.via_launch[j] = ready + self.gap[j], by, via
        if self.join[j] < 0 and self.sync_on[j] < 0:
            end[j] = start[j] + self.work[j]
        else:
            self.pending.append(j)

    def _arrive(self, j: int) -> None:
        """Count node j's start at the join it belongs to."""
        i = self.join[j]
        if i >= 0:
            self.started[i] += 1
            self.arrival[i] = max(self.arrival[i], self.start[j])

    def _settle(self, force: bool) -> bool:
        """The wavefront's settle: blocked nodes whose join is complete or whose device node had
        ended when it was called; with `force` and none such, all of them, one by one."""
        pending = self.pending
        if not pending:
            return False
        can = [self._settles(p) for p in pending]
        if any(can):
            for p in [p for p, c in zip(pending, can) if c]:
                i = self.join[p]
                after, who = (self.arrival[i], self._last(i)) if i >= 0 else (self._waited(p), self.sync_on[p])
                self._end(p, after + self.tail[p], who)
            self.pending = [p for p, c in zip(pending, can) if not c]
            return True
        if force:
            for p in pending:
                self._end_one(p)
            self.pending = []
            return True
        return False

    def _last(self, i: int) -> int:
        """The member of instance i that started latest, the first of ties (replay.first_latest)."""
        if self.last[i] < 0:
            arrival = self.arrival[i]
            self.last[i] = next(m for m in self.members[i].tolist() if self.start[m] == arrival)
        return self.last[i]

    def _settles(self, p: int) -> bool:
        i = self.join[p]
        if i >= 0:
            return self.started[i] == self.size[i]
        return not math.isnan(self._waited(p))

    def _waited(self, p: int) -> float:
        """When what `p`'s end waits for happened: its receive's start for a held send, else its node's end."""
        return self.start[self.sync_on[p]] if self.from_start[p] else self.end[self.sync_on[p]]

    def _end(self, p: int, after: float, who: int) -> None:
        own = self.start[p] + self.work[p]
        if after > own:
            self.end[p], self.end_by[p] = after, who
        else:
            self.end[p] = own

    def _end_one(self, p: int) -> None:
        """End a blocked node before its join is complete: members not started yet keep their
        measured offset from this node (clocks disagree on the order)."""
        g = self.g
        if self.join[p] >= 0:
            members = g.members[self.join[p]].tolist()
            ts = g.nodes["ts"].to_numpy()
            shift = self.start[p] - ts[p]
            arrived = [self.start[m] if not math.isnan(self.start[m]) else ts[m] + shift for m in members]
            k = max(range(len(members)), key=lambda i: (arrived[i], -i))  # the first latest
            who, after = members[k], arrived[k] + self.tail[p]
        elif self.from_start[p]:
            who = self.sync_on[p]
            posted = self.start[who]
            if math.isnan(posted):  # clocks disagree on the order: it keeps its measured offset
                ts = g.nodes["ts"].to_numpy()
                posted = ts[who] + self.start[p] - ts[p]
            after = posted + self.tail[p]
        else:
            who = self.sync_on[p]
            if math.isnan(self.end[who]):
                self._end_one(who)
            after = self.end[who] + self.tail[p]
        self._end(p, float(after), who)
