"""The critical path of each step: walk back from the end of the rank that finished the step last.

At a node whose own work set its end, the path takes that work, then the gap before it, then the
predecessor that set its start. At a collective whose end the last arrival set, it takes the
transfer after that arrival and continues on the rank that arrived last (the others waited for
it: `late_rank_wait` in the summary). At a host call held by the device, it takes the tail after
the device work (`sync`) and continues on the device. At a receive whose end its sender's data
set, it takes the time after the data arrived and continues on the sender's rank (the receive
waited for it: `late_rank_wait`, as at a collective). Segments of a step sum to its duration:
when the path ends on a rank that started the step later, the difference is `late_rank`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .graph import GAP, LATE_RANK, SYNC, Graph
from .replay import Solution

SEGMENT_COLUMNS = ["step", "rank", "seq", "category", "name", "ts", "dur"]


def _walk(graph: Graph, sol: Solution, row, columns) -> tuple[list, float]:
    """Segments (rank, category, name, start, end) of one step, latest first, and the time the
    ranks on the path waited at collectives for a later rank. `columns`: the nodes' rank,
    category and name, and each (rank, step)'s start (_columns)."""
    rank, kind_cat, names, step_start, node_step = columns
    segs, waited = [], 0.0
    j, t = int(row.last), float(row.end)
    if j < 0:
        return [(int(row.rank), GAP, "(untraced)", float(row.ts), t)], 0.0
    if t > sol.end[j]:
        segs.append((int(row.rank), GAP, "(untraced)", sol.end[j], t))
    cur_rank = int(row.rank)
    until = None  # entering a node part-way: the end of the nested call a device node waited for
    while j >= 0:
        cur_rank = int(rank[j])
        if node_step[j] != row.step:  # work of an earlier step ran into this one: its part in the step
            first = float(step_start[(cur_rank, int(row.step))])
            segs.append(
                (cur_rank, kind_cat[j], names[j], max(sol.start[j], first), sol.end[j] if until is None else until)
            )
            break
        by = int(sol.end_by[j])
        if until is not None and by >= 0 and graph.join[j] >= 0 and sol.start[by] < until:
            arrived = sol.start[by]  # a waiter resumed inside a collective: after its last arrival
            segs.append((cur_rank, kind_cat[j], names[j], arrived, until))
            if by != j:
                waited += max(arrived - sol.start[j], 0.0)
            j = by
        elif until is not None:
            segs.append((cur_rank, kind_cat[j], names[j], sol.start[j], until))
        elif by >= 0 and graph.join[j] >= 0:  # waited for the last arrival
            arrived = sol.start[by]
            segs.append((cur_rank, kind_cat[j], names[j], arrived, sol.end[j]))
            if by != j:
                waited += max(arrived - sol.start[j], 0.0)
            j = by
        elif by >= 0 and graph.from_start[j]:  # a send held until its receive was posted
            posted = sol.start[by]
            segs.append((cur_rank, kind_cat[j], names[j], posted, sol.end[j]))
            waited += max(posted - sol.start[j], 0.0)
            j, until = by, posted
            continue
        elif by >= 0 and rank[by] != rank[j]:  # a receive that waited for its sender's data
            arrived = sol.end[by]
            segs.append((cur_rank, kind_cat[j], names[j], arrived, sol.end[j]))
            waited += max(arrived - sol.start[j], 0.0)
            j = by
            continue
        elif by >= 0:  # held by the device
            segs.append((cur_rank, SYNC, names[j], sol.end[by], sol.end[j]))
            j = by
            continue
        else:
            segs.append((cur_rank, kind_cat[j], names[j], sol.start[j], sol.end[j]))
        cur_rank = int(rank[j])
        pred = int(sol.start_by[j])
        until = None
        if pred >= 0 and sol.via_launch[j]:
            until = ready = sol.start[pred] + graph.launch_at[j] * _scale_of(sol, graph, pred)
        elif pred >= 0 and pred == graph.near[j] and graph.near_lead[j] > 0:
            until = ready = sol.end[pred] - graph.near_lead[j]
        else:
            ready = sol.end[pred] if pred >= 0 else float(step_start[(cur_rank, int(row.step))])
        if sol.start[j] > ready:
            segs.append((cur_rank, GAP, "(gap)", ready, sol.start[j]))
        j = pred
    first = float(step_start[(cur_rank, int(row.step))])
    if first > row.ts:
        segs.append((cur_rank, LATE_RANK, f"rank {cur_rank} starts the step late", float(row.ts), first))
    return segs, waited


def _scale_of(sol: Solution, graph: Graph, node: int) -> float:
    """The factor the replay applied to `node`'s work (its replayed over its measured length)."""
    work = graph.work[node]
    return (
        (sol.end[node] - sol.start[node]) / work
        if work > 0 and graph.join[node] < 0 and graph.sync_on[node] < 0
        else 1.0
    )


def _clip(segs: list, start: float) -> list:
    """Drop what lies before the step's start (a path ending on a rank that started earlier)."""
    out = []
    for rank, cat, name, a, b in segs:
        if b <= start:
            continue
        out.append((rank, cat, name, max(a, start), b))
    return out


def critical_path(graph: Graph, sol: Solution) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(segments, per-step walk facts) for every step: the rank whose replayed step is longest."""
    steps = sol.steps
    rows, facts = [], []
    if steps.empty:
        return pd.DataFrame(columns=SEGMENT_COLUMNS), pd.DataFrame(columns=["step", "rank", "late_rank_wait"])
    ends = steps.loc[steps.groupby("step")["dur"].idxmax()]
    columns = _columns(graph, sol)
    for row in ends.itertuples(index=False):
        segs, waited = _walk(graph, sol, row, columns)
        segs = [s for s in _clip(segs, float(row.ts)) if s[4] > s[3]][::-1]
        rows += [(int(row.step), rank, seq, cat, name, a, b) for seq, (rank, cat, name, a, b) in enumerate(segs)]
        facts.append((int(row.step), int(row.rank), waited))
    segments = pd.DataFrame(rows, columns=[*SEGMENT_COLUMNS[:5], "a", "b"])
    a, b = segments.pop("a").to_numpy(float), segments.pop("b").to_numpy(float)
    segments["ts"] = np.rint(a).astype(np.int64) + graph.origin  # round half to even, as round()
    segments["dur"] = np.rint(b - a).astype(np.int64)
    return segments, pd.DataFrame(facts, columns=["step", "rank", "late_rank_wait"])


def _columns(graph: Graph, sol: Solution) -> tuple:
    """The nodes' rank, category, name and step, and each (rank, step)'s replayed start. A host
    call that blocks on the device is `sync` on the path: the host waited for the device, also
    for device work the trace does not show (a CUDA graph replayed without kernel records)."""
    nodes, steps = graph.nodes, sol.steps
    step_start = dict(zip(zip(steps["rank"].tolist(), steps["step"].tolist()), steps["ts"].tolist()))
    category = nodes["category"].to_numpy().astype(object)
    category[nodes["syncs"].to_numpy(bool) & ~nodes["device"].to_numpy(bool)] = SYNC
    return nodes["rank"].to_numpy(), category, nodes["name"].to_numpy(), step_start, nodes["step"].to_numpy()
