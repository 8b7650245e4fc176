"""The dependency graph of a batch of steps, as arrays (one entry per node, in solving order).

Edges into a node's start: the previous node on its lane, and the node of its rank and step that
finished last before it started (what it may have waited for: a kernel's launch, the bucket a
collective reduces, the batch an op consumes); the measured gap after the later of the two (or
after the step's start) is kept as the node's own lead time; a device op also waits for the
call that launched it (by correlation id, edges_launch.py; else inferred from nesting and time).
Edges into a node's end: a collective ends no earlier than its last rank arrives (members matched
by group and sequence number across ranks); a host call that blocks on the device ends no earlier
than the device work it waited for; a pipeline receive ends no earlier than its send delivered
(edges_p2p.py). Every edge points from an earlier to a later measured time, so
the measured start order solves the graph. Built with numpy over integer codes: no Python
object per node.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..heap import trim as release_freed_memory
from . import edges_launch, edges_p2p
from .nodes import DEVICE_LANE, codes, matches

CATEGORY_OF_KIND = {
    "compute": "compute",
    "collective": "communication",
    "p2p": "communication",
    "input": "input",
    "transfer": "transfer",
    "memory": "transfer",
    "compile": "compile",
    "host": "host",
}
GAP = "host"  # time between recorded work: untraced host work, launch latency
LATE_RANK = "late_rank"
SYNC = "sync"
CATEGORIES = ("compute", "communication", LATE_RANK, "host", "input", SYNC, "transfer", "compile")
# node columns the replay, the path and the scales read (the rest only builds the edges)
KEPT_COLUMNS = (
    "rank",
    "step",
    "kind",
    "name",
    "category",
    "ts",
    "end",
    "base",
    "end_ts",
    "bytes",
    "nid",
    "syncs",
    "device",
)


class Members:
    """Collective instance id -> its member nodes (compressed rows: ids sorted, then cut)."""

    def __init__(self, rows: np.ndarray, ptr: np.ndarray):
        self.rows, self.ptr = rows, ptr

    def __getitem__(self, instance: int) -> np.ndarray:
        return self.rows[self.ptr[instance] : self.ptr[instance + 1]]

    def __len__(self) -> int:
        return len(self.ptr) - 1


@dataclass
class Graph:
    nodes: pd.DataFrame  # KEPT_COLUMNS
    order: np.ndarray  # node indices in solving order (measured start)
    lane_prev: np.ndarray  # -1: first on its lane in the step
    near: np.ndarray  # -1: nothing finished before it in the step
    gap: np.ndarray  # ns from the binding predecessor's (or the step's) start to its start
    work: np.ndarray  # ns of its own work
    tail: np.ndarray  # ns after its end predecessor (collective transfer, sync tail)
    join: np.ndarray  # collective instance id, -1 when not joined across ranks
    sync_on: np.ndarray  # device node a blocking host call waited for (or send a receive waited for), -1: none
    launch_by: np.ndarray  # host node holding the call this device node waited for (its launch)
    launch_at: np.ndarray  # ns into launch_by's work at which that call ended
    members: Members  # instance id -> member node indices
    steps: pd.DataFrame  # rank, step, ts, end_ts, tail_gap (times in ns after `origin`), group
    origin: int  # ns on the run's clock of time 0 here (keeps float replay exact)
    group: np.ndarray  # (rank, step) sequence of each node, contiguous, 0..
    near_lead: np.ndarray | None = None  # ns before `near`'s end the node could start (0: at its end)
    from_start: np.ndarray | None = None  # the end edge from sync_on reads its start (a send held by its receive)
    by_sequence: np.ndarray | None = None  # node indices sequence by sequence, each in solving order (_round_major)


def _starts(*columns: np.ndarray) -> np.ndarray:
    """True where any of the (sorted) columns changes value: the first row of each run."""
    n = len(columns[0])
    first = np.ones(n, bool)
    if n:
        first[1:] = np.logical_or.reduce([c[1:] != c[:-1] for c in columns])
    return first


def _latest_end(group, queries, end_group, ends, end_ids) -> np.ndarray:
    """Per query (group, time): the id of the latest end <= time in the same group, or -1 (among
    equal ends, the last given)."""
    n = len(group)
    found = np.full(n, -1, np.int64)
    if not n or not len(ends):
        return found
    low = min(int(queries.min()), int(ends.min()))
    span = max(int(queries.max()), int(ends.max())) - low + 1
    groups = max(int(group.max()), int(end_group.max())) + 1
    if groups >= (1 << 62) // span:
        raise OverflowError("critical path: batch too long to key (group x time)")
    end_key = end_group.astype(np.int64) * span + (ends - low)
    sorter = np.argsort(end_key, kind="stable")
    sorted_keys = end_key[sorter]
    query_key = group.astype(np.int64) * span + (queries - low)
    at = np.searchsorted(sorted_keys, query_key, side="right") - 1
    ok = at >= 0
    hit = sorter[np.maximum(at, 0)]
    ok &= end_group[hit] == group
    found[ok] = np.asarray(end_ids, np.int64)[hit[ok]]
    return found


def _latest_before(group: np.ndarray, ends: np.ndarray, queries: np.ndarray, eligible: np.ndarray) -> np.ndarray:
    """Per query, the eligible node of the same group with the latest end <= the query time (-1)."""
    ids = np.flatnonzero(eligible)
    return _latest_end(group, queries, group[ids], ends[ids], ids)


def _joins(nodes: pd.DataFrame, s0: np.ndarray, e0: np.ndarray) -> tuple[np.ndarray, Members]:
    """Collective instances seen on two ranks or more whose members all end after the last
    arrival (otherwise the ranks' clocks disagree and the instance is left unjoined)."""
    n = len(nodes)
    join = np.full(n, -1, np.int64)
    seq = nodes["coll_seq"].to_numpy("float64", na_value=np.nan)
    cg = codes(nodes["coll_group"])
    rows = np.flatnonzero((nodes["kind"] == "collective").to_numpy() & (cg >= 0) & ~np.isnan(seq))
    rank = nodes["rank"].to_numpy(np.int64)
    rows = rows[np.lexsort((rank[rows], seq[rows], cg[rows]))]
    if not len(rows):
        return join, Members(rows, np.zeros(1, np.int64))
    first = _starts(cg[rows], seq[rows])
    cuts = np.flatnonzero(first)
    arrive = np.maximum.reduceat(s0[rows], cuts)
    last_end = np.minimum.reduceat(e0[rows], cuts)
    ranks = np.add.reduceat(_starts(cg[rows], seq[rows], rank[rows]).astype(np.int64), cuts)
    valid = (ranks > 1) & (last_end >= arrive)
    inst = np.cumsum(first) - 1
    keep = valid[inst]
    rows, inst = rows[keep], inst[keep]
    renumber = np.cumsum(valid) - 1
    inst = renumber[inst]
    join[rows] = inst
    ptr = np.searchsorted(inst, np.arange(int(valid.sum()) + 1))
    return join, Members(rows, ptr)


def _attach_steps(nodes: pd.DataFrame, steps: pd.DataFrame, origin: int) -> pd.DataFrame:
    """Nodes of the given steps (inner join on rank, step) that start within them, with `base`
    (the step's start) and `end_ts`, times after `origin`, in flatten's order."""
    key = steps["rank"].to_numpy(np.int64) * (1 << 32) + steps["step"].to_numpy(np.int64)
    sorter = np.argsort(key, kind="stable")
    node_key = nodes["rank"].to_numpy(np.int64) * (1 << 32) + nodes["step"].to_numpy(np.int64)
    at = np.minimum(np.searchsorted(key[sorter], node_key), max(len(key) - 1, 0))
    row = sorter[at] if len(key) else at
    found = (key[row] == node_key) if len(key) else np.zeros(len(nodes), bool)
    base = steps["ts"].to_numpy(np.int64)[row] - origin if len(key) else node_key
    ts = nodes["ts"].to_numpy(np.int64) - origin
    keep = np.flatnonzero(found & (ts >= base))
    out = nodes.take(keep).reset_index(drop=True)
    out["ts"], out["end"] = ts[keep], nodes["end"].to_numpy(np.int64)[keep] - origin
    out["base"] = base[keep]
    out["end_ts"] = steps["end_ts"].to_numpy(np.int64)[row[keep]] - origin
    return out


def _categories(kind: pd.Series) -> pd.Categorical:
    mapped = [CATEGORY_OF_KIND.get(str(k), GAP) for k in kind.cat.categories]
    lookup = np.array([CATEGORIES.index(c) for c in mapped] + [CATEGORIES.index(GAP)], np.int64)
    return pd.Categorical.from_codes(lookup[codes(kind)], categories=list(CATEGORIES))


# node columns the edges across ranks (collectives, pipeline pairs, collective waiters) read
# besides KEPT_COLUMNS; a rank range's other columns are dropped once its own edges are built
JOIN_COLUMNS = ("lane", "coll_group", "coll_seq", "p2p_recv", "own")
# per-node arrays of a rank range's edges (node ids local to the range; `group`: its sequences)
_LOCAL_IDS = ("lane_prev", "near", "launch_by", "sync_on")


def build(flat: tuple[pd.DataFrame, pd.DataFrame], steps: pd.DataFrame) -> Graph:
    """The graph of flattened nodes and marks (nodes.flatten) within `steps` (rank, step, ts, end_ts)."""
    return build_ranges([flat], steps)


def build_ranges(flats, steps: pd.DataFrame) -> Graph:
    """The graph of a batch whose flattened nodes and marks come in rank ranges (`flats`, an
    iterable of nodes.flatten's results, each holding every event of its ranks, in rank order).
    Each range's edges within a rank are built while only its events are in memory; the edges
    across ranks (collectives, pipeline pairs) are built once over the whole batch's nodes. The
    graph is the one `build` gives the batch's events in one piece."""
    origin = int(steps["ts"].min()) if len(steps) else 0
    parts, ids = [], 0
    nodes = arrays = None
    for flat in flats:
        nodes, arrays = _rank_local(flat, steps, origin)
        del flat
        release_freed_memory()
        # node ids (flatten's `nid`) stay distinct and in lane order across ranges
        nid = nodes["nid"].to_numpy(np.int64)
        nodes["nid"] = nid + ids
        ids += int(nid.max()) + 1 if len(nid) else 0
        parts.append((nodes, arrays))
    del nodes, arrays  # the last range's, held by _concat's parts only
    return _across_ranks(parts, steps, origin)


def _rank_local(flat: tuple[pd.DataFrame, pd.DataFrame], steps: pd.DataFrame, origin: int) -> tuple:
    """(nodes, arrays) of one rank range: the edges within a rank (lane order, latest finished,
    launches, syncs) and the lead gaps they give; node ids local to the range."""
    nodes, marks = flat
    nodes = _attach_steps(nodes, steps, origin)
    nodes["category"] = _categories(nodes["kind"])
    n = len(nodes)
    s0, e0 = nodes["ts"].to_numpy(np.int64), nodes["end"].to_numpy(np.int64)
    rank, step = nodes["rank"].to_numpy(np.int64), nodes["step"].to_numpy(np.int64)
    group = np.cumsum(_starts(rank, step)) - 1
    order = np.lexsort((np.arange(n), e0, s0))  # (starts tie across ranks: stable_order is slower here)
    position = np.empty(n, np.int64)
    position[order] = np.arange(n)
    del order
    lane = codes(nodes["lane"])
    lane_prev = np.where(_starts(rank, step, lane), -1, np.arange(n) - 1)
    _lane_across_steps(lane_prev, rank, step, lane, s0, e0)
    del lane
    nodes["device"] = matches(nodes["lane"], DEVICE_LANE)
    near = _latest_before(group, e0, s0, np.ones(n, bool))
    near = np.where((near >= 0) & (position[np.maximum(near, 0)] < position), near, -1)
    launch_by, launch_at = _launches(nodes, marks, group, s0, e0, origin)
    _correlate(nodes, marks, group, position, origin, s0, e0, near, launch_by, launch_at, rank, step)
    del marks, position
    ready = np.maximum.reduce(
        [
            nodes["base"].to_numpy(np.int64),
            np.where(lane_prev >= 0, e0[np.maximum(lane_prev, 0)], 0),
            np.where(near >= 0, e0[np.maximum(near, 0)], 0),
        ]
    )
    has = launch_by >= 0
    ready[has] = np.maximum(ready[has], s0[launch_by[has]] + launch_at[has])
    gap = np.maximum(s0 - ready, 0)
    del ready, has
    sync_on = _syncs(nodes, rank, step, s0, e0)
    arrays = {
        "lane_prev": lane_prev,
        "near": near,
        "launch_by": launch_by,
        "launch_at": launch_at,
        "gap": gap,
        "sync_on": sync_on,
        "group": group,
    }
    keep = [c for c in nodes.columns if c in KEPT_COLUMNS or c in JOIN_COLUMNS]
    return nodes[keep].copy(), arrays  # a copy: a selection would keep every column's memory


def _concat(parts: list) -> tuple[pd.DataFrame, dict]:
    """The rank ranges' nodes and arrays as one batch: local ids shifted by the nodes before."""
    if len(parts) == 1:
        return parts[0]
    sizes = [len(nodes) for nodes, _ in parts]
    offsets = np.cumsum([0, *sizes[:-1]])
    groups = np.cumsum([0, *[int(a["group"].max()) + 1 if len(a["group"]) else 0 for _, a in parts[:-1]]])
    arrays = {}
    for name in list(parts[0][1]):
        pieces = []
        for (_, a), offset, first in zip(parts, offsets, groups):
            piece = a.pop(name)
            if name in _LOCAL_IDS:
                piece = np.where(piece >= 0, piece + offset, -1)
            elif name == "group":
                piece = piece + first
            pieces.append(piece)
        arrays[name] = np.concatenate(pieces)
        del pieces
    nodes = pd.concat([nodes for nodes, _ in parts], ignore_index=True)
    parts.clear()
    release_freed_memory()
    return nodes, arrays


def _across_ranks(parts: list, steps: pd.DataFrame, origin: int) -> Graph:
    """The batch's graph from its rank ranges: collectives joined across ranks, their waiters,
    pipeline pairs, the step ends, renumbered round-major."""
    nodes, a = _concat(parts)
    n = len(nodes)
    s0, e0 = nodes["ts"].to_numpy(np.int64), nodes["end"].to_numpy(np.int64)
    order = np.lexsort((np.arange(n), e0, s0))  # the measured start order across ranks
    group, near, gap, sync_on = a["group"], a["near"], a["gap"], a["sync_on"]
    dur = e0 - s0
    work, tail = dur.copy(), np.zeros(n, np.int64)
    join, members = _joins(nodes, s0, e0)
    if len(members):
        j = join >= 0
        first_of = members.ptr[:-1]
        arrive_of = np.maximum.reduceat(s0[members.rows], first_of) if len(members.rows) else s0[:0]
        arrive = arrive_of[join[j]]
        tail[j] = e0[j] - arrive
        work[j] = np.where(arrive > s0[j], tail[j], dur[j])
        del j, arrive
    near_lead = _collective_waiters(nodes, join, members, s0, e0, group, near, gap)
    s = sync_on >= 0
    tail[s] = np.minimum(dur[s], e0[s] - e0[sync_on[s]])  # its own length when the device had finished
    del dur
    own = nodes["own"].to_numpy(np.int64).copy()  # and its work when the device is not late
    recv, send = edges_p2p.pairs(nodes, codes(nodes["coll_group"]), s0, e0)
    got, sent = edges_p2p.delivered(recv, send, e0)
    sync_on[got] = sent  # the same end edge: the receive ends after the send's data arrived
    tail[got] = edges_p2p.after_arrival(got, sent, s0, e0)
    held, posted, after = edges_p2p.rendezvous(recv, send, s0, e0)
    from_start = np.zeros(n, bool)
    sync_on[held], tail[held], from_start[held] = posted, after, True  # a send ends after its receive is posted
    own[recv], own[held] = 0, 0
    s = sync_on >= 0
    work[s] = np.maximum(tail[s], own[s])
    del s, own, s0, e0
    step_ends = _step_ends(nodes, steps, group, origin)
    nodes = nodes[list(KEPT_COLUMNS)]
    graph = Graph(
        nodes,
        order,
        a.pop("lane_prev"),
        a.pop("near"),
        a.pop("gap"),
        work,
        tail,
        join,
        a.pop("sync_on"),
        a.pop("launch_by"),
        a.pop("launch_at"),
        members,
        step_ends,
        origin,
        a.pop("group"),
        near_lead,
        from_start,
    )
    del nodes, order, group, near, gap, sync_on, work, tail, join, members, near_lead, from_start, a
    return _round_major(graph)


def _round_major(g: Graph) -> Graph:
    """The same graph renumbered so that the nodes the solver takes in one round (the k-th of
    every (rank, step) sequence in start order) are adjacent: its gathers read memory in order.
    Renumbered in place, one array at a time (each old array is freed as its new one is made)."""
    n = len(g.nodes)
    by_sequence = g.order[np.argsort(g.group[g.order], kind="stable")]
    counts = np.bincount(g.group, minlength=int(g.group.max()) + 1 if n else 0)
    within = np.empty(n, np.int64)
    within[by_sequence] = np.arange(n) - np.repeat(np.cumsum(counts) - counts, counts)
    # nodes are in (rank, step) order: a stable sort on `within` alone keeps the sequences' order
    # (radix sort when it fits 16 bits)
    small = np.int16 if n and within.max() < np.iinfo(np.int16).max else np.int64
    old = np.argsort(within.astype(small), kind="stable")  # new index -> old index
    del within
    new = np.empty(n, np.int64)
    new[old] = np.arange(n)  # old index -> new index
    lookup = np.append(new, -1)  # a missing edge (-1) stays -1

    for name in ("lane_prev", "near", "sync_on", "launch_by"):
        setattr(g, name, lookup[getattr(g, name)[old]])
    for name in ("gap", "work", "tail", "join", "launch_at", "group", "near_lead", "from_start"):
        setattr(g, name, getattr(g, name)[old])
    g.order = new[g.order]
    g.members = Members(new[g.members.rows], g.members.ptr)
    g.nodes = g.nodes[list(KEPT_COLUMNS)].take(old).reset_index(drop=True)
    g.by_sequence = new[by_sequence]
    return g


def _launches(nodes: pd.DataFrame, marks: pd.DataFrame, group, s0, e0, origin: int):
    """Device nodes that waited for a call nested in a host node still running when they started
    (a kernel launched from inside an op): that node and how far into it the call ended."""
    n = len(nodes)
    by, at = np.full(n, -1, np.int64), np.zeros(n, np.int64)
    nid = nodes["nid"].to_numpy(np.int64)
    owner = marks["owner"].to_numpy(np.int64)
    if not n or not len(owner):
        return by, at
    sorter = np.argsort(nid, kind="stable")
    pos = np.minimum(np.searchsorted(nid[sorter], owner), n - 1)
    ok = nid[sorter][pos] == owner
    owner_node = sorter[pos][ok]
    if not len(owner_node):
        return by, at
    ends = marks["end"].to_numpy(np.int64)[ok] - origin
    found = _latest_end(group, s0, group[owner_node], ends, np.arange(len(ends)))
    hit = matches(nodes["lane"], DEVICE_LANE) & (found >= 0)
    f = np.maximum(found, 0)
    o = np.where(hit, owner_node[f], -1)
    live = hit & (e0[np.maximum(o, 0)] > s0) & (o != np.arange(n))
    by[live], at[live] = o[live], ends[f][live] - s0[o[live]]
    return by, at


def _lane_across_steps(lane_prev, rank, step, lane, s0, e0) -> None:
    """The first node of a lane in a step follows the lane's last node of an earlier step of the
    batch that ended before it started (a stream still busy with the previous step's kernels)."""
    n = len(rank)
    if not n:
        return
    order = np.lexsort((np.arange(n), s0, lane, rank))
    prev = np.full(n, -1, np.int64)
    same = (rank[order][1:] == rank[order][:-1]) & (lane[order][1:] == lane[order][:-1])
    prev[order[1:][same]] = order[:-1][same]
    p = np.maximum(prev, 0)
    cross = (lane_prev < 0) & (prev >= 0) & (step[p] < step) & (e0[p] <= s0)
    lane_prev[cross] = prev[cross]


def _correlate(nodes, marks, group, position, origin, s0, e0, near, launch_by, launch_at, rank, step) -> None:
    """Device nodes whose launch call is known by its correlation id wait for that call (in
    place of the inferred launch), also when it was made in an earlier step, and, of the rank's
    other work, for device work only; on such a run host nodes wait, of the rank's other work,
    for host work only (the device is asynchronous: blocking calls have their own edge)."""
    if "corr" not in nodes or not nodes["corr"].notna().any():
        return
    device = matches(nodes["lane"], DEVICE_LANE)
    node, owner, at = edges_launch.correlated(nodes, marks, device, rank, position, origin)
    earlier = step[owner] <= step[node]
    node, owner, at = node[earlier], owner[earlier], at[earlier]
    if not len(node):
        return
    launch_by[node], launch_at[node] = owner, at
    device_near = _latest_before(group, e0, s0, device)[node]
    ok = (device_near >= 0) & (position[np.maximum(device_near, 0)] < position[node])
    near[node] = np.where(ok, device_near, -1)
    # the host runs ahead of an asynchronous device: its work waits for device work only
    # through a blocking call (the sync edge), not because a kernel happened to end before it
    host = np.flatnonzero(~device)
    host_near = _latest_before(group, e0, s0, ~device)[host]
    ok = (host_near >= 0) & (position[np.maximum(host_near, 0)] < position[host])
    near[host] = np.where(ok, host_near, -1)


def _collective_waiters(nodes, join, members, s0, e0, group, near, gap) -> np.ndarray:
    """Host nodes that waited for a collective of their rank running on another host thread
    (CPU collectives: DDP's reducer resumes when gloo's all-reduce has the data, which its
    recorded event shows ending a little later): a host node that started, after a lead gap,
    while such a collective was in flight and after its last rank had arrived, but whose other
    predecessors had all ended before that arrival. Its `near` becomes the collective and the
    returned lead says how long before the collective's recorded end it started (0 elsewhere),
    so a replay that moves the last arrival moves the node. `near` and `gap` change in place."""
    n = len(nodes)
    lead = np.zeros(n, np.int64)
    host_lane = ~nodes["device"].to_numpy(bool)
    joined = np.flatnonzero((join >= 0) & host_lane)
    if not len(joined) or not len(members):
        return lead
    arrival_of = np.maximum.reduceat(s0[members.rows], members.ptr[:-1])
    arrival = arrival_of[join[joined]]
    waiters = np.flatnonzero(host_lane & (join < 0) & (gap > 0))
    found = _latest_end(group[waiters], s0[waiters], group[joined], arrival, joined)
    c = np.maximum(found, 0)
    ready = s0[waiters] - gap[waiters]  # when its other predecessors let it start
    lane = codes(nodes["lane"])
    ok = (
        (found >= 0)
        & (s0[c] < s0[waiters])
        & (e0[c] > s0[waiters])
        & (ready < arrival_of[join[c]])
        & (lane[c] != lane[waiters])
    )
    w, c = waiters[ok], c[ok]
    near[w], lead[w] = c, e0[c] - s0[w]
    gap[w] = 0
    return lead


def _syncs(nodes: pd.DataFrame, rank, step, s0, e0) -> np.ndarray:
    """For each blocking host call, the rank's device node (of its step or an earlier one) that
    finished last before the call ended: the device work it waited for, whether it was still
    running when the call began (the call blocked) or not (a replay that makes it later makes
    the call wait)."""
    found = _latest_before(rank, e0, e0, nodes["device"].to_numpy(bool))
    f = np.maximum(found, 0)
    ok = nodes["syncs"].to_numpy(bool) & (found >= 0) & (step[f] <= step) & (f != np.arange(len(found)))
    return np.where(ok, found, -1)


def _step_ends(nodes: pd.DataFrame, steps: pd.DataFrame, group: np.ndarray, origin: int) -> pd.DataFrame:
    """Each (rank, step) of `steps`: the gap after the last end of its nodes that ended within it."""
    out = pd.DataFrame(
        {
            "rank": steps["rank"].to_numpy(),
            "step": steps["step"].to_numpy(),
            "ts": steps["ts"].to_numpy(np.int64) - origin,
            "end_ts": steps["end_ts"].to_numpy(np.int64) - origin,
        }
    )
    e0 = nodes["end"].to_numpy(np.int64)
    inside = e0 <= nodes["end_ts"].to_numpy(np.int64)
    groups = int(group.max()) + 1 if len(group) else 0
    last = np.full(groups, np.iinfo(np.int64).min)
    np.maximum.at(last, group[inside], e0[inside])
    first = np.flatnonzero(_starts(group)) if len(group) else np.zeros(0, np.int64)
    key = nodes["rank"].to_numpy(np.int64)[first] * (1 << 32) + nodes["step"].to_numpy(np.int64)[first]
    step_key = out["rank"].to_numpy(np.int64) * (1 << 32) + out["step"].to_numpy(np.int64)
    at = np.minimum(np.searchsorted(key, step_key), max(groups - 1, 0))
    has = (key[at] == step_key) & (last[at] > np.iinfo(np.int64).min) if groups else np.zeros(len(out), bool)
    last_end = np.where(has, last[at] if groups else 0, out["ts"].to_numpy())
    out["tail_gap"] = np.maximum(out["end_ts"].to_numpy() - last_end, 0)
    out["group"] = np.where(has, at, -1)  # the step's node sequence, -1 when none ended within it
    return out
