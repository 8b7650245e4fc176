"""`--scale SELECTOR=FACTOR`: which nodes' durations a replay scales, and by how much.

SELECTOR is one term or several joined by `,` (all must match):
    KIND or CATEGORY      compute, collective, p2p, input, transfer, memory, compile, host;
                          communication (collective + p2p)
    kind:K, category:C    the same, spelled out
    name:GLOB             op / kernel / collective name (fnmatch pattern, case-sensitive)
    rank:N                one rank
    size:CLASS            collectives by message size: small (< 1 MiB), medium (< 64 MiB), large
    under:DURATION        work recorded shorter than DURATION (ns, or with a unit: 20us, 1.5ms, 1s);
                          with `gap`, the lead gaps shorter than DURATION of such work (the host
                          dispatching one tiny op after another)
    gap                   the time between recorded work (untraced host work, launch latency)
    sync                  host calls that block on the device (synchronize, synchronous copies,
                          .item(), xm.mark_step / wait_device_ops), or ops holding one
    matmul                compute whose name says matrix multiply or convolution (GEMM kernels,
                          aten::mm / addmm / bmm / linear / conv*, cuBLAS, CUTLASS)
FACTOR is a number from 0 to 1000 (0 removes the time; the factors that meet on one node multiply,
and their product is bounded the same), or:
    peers    with a rank term: the rank's matching work of each category but communication per
             step scaled down to the median of the other ranks' of its pipeline stage, never up
             (a rank faster than its peers keeps its pace: the peers' ops may hold waits), taken
             first off the work (by op name) the peers do not do or do in less time, then evenly
             (bring a straggler to its peers' pace; stages do different work); a plain `rank:N=peers` also
             brings the rank's untraced time (the lead gaps of its nodes and the gap after its
             step's last op: Python, I/O, sleep) to its peers' per step
    launch   the selected blocking host calls no longer wait for the device: the call takes its
             own time after the device finished (a host sync removed: the call becomes a launch)
    early    the selected nodes no longer wait for the work that finished last before them (nor
             for their launch call): they start once their lane and step allow, plus their lead
             gap (collectives bucketed to start during the backward pass: an upper bound, the
             trace does not record which gradients each bucket needs)
Fixes as replays: mixed precision `matmul=R` (R: the device's 16-bit over 32-bit matmul time,
e.g. its FP32 peak over its BF16 peak; off-path matmuls gain nothing), gradient bucketing
`collective=early` with fewer launches `name:GLOB=F` on the launch calls, a removed host sync
`sync=launch` (or `name:aten::item=launch`), a straggler `rank:N=peers`, a loader `input=0`,
tiny ops fused on a device that runs them on the host's thread (a CPU) `compute,under:20us=0`
with `compute,under:20us,gap=0`.
A selector that matches no work event of the run (a rank it does not have, a category none of
its events is, a name no event has) is an error, not a change of 0 %: `check_matches`.
"""

from __future__ import annotations

import fnmatch
import math
import re
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from trnprof.errors import TrnprofError
from trnprof.validation import SCALE_FACTOR

from .graph import CATEGORY_OF_KIND, Graph
from .nodes import matches as _name_matches

KINDS = tuple(CATEGORY_OF_KIND)
CATEGORIES = tuple(sorted(set(CATEGORY_OF_KIND.values())))
SIZE_CLASSES = {"small": (0, 1 << 20), "medium": (1 << 20, 64 << 20), "large": (64 << 20, math.inf)}
DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*(ns|us|ms|s)?")
NS_PER_UNIT = {"ns": 1, "us": 1_000, "ms": 1_000_000, "s": 1_000_000_000}
MAX_DURATION_NS = 86_400 * NS_PER_UNIT["s"]  # a day: longer than any op a trace holds
PEERS = "peers"
LAUNCH, EARLY = "launch", "early"  # operations on the graph's edges, not on durations
FLAGS = ("gap", "sync", "matmul")  # terms without a value
MATMUL_NAME = (
    r"(?i)gemm|matmul|cublas|cutlass|conv|wgrad|dgrad|"
    r"aten::(?:mm|bmm|addmm|addbmm|baddbmm|linear|_convolution|einsum)$"
)


@dataclass(frozen=True)
class Scale:
    terms: tuple[tuple[str, str], ...]  # (field, value): kind, category, name, rank, size, gap, sync, matmul
    factor: float | None  # None: `peers`
    text: str
    action: str | None = None  # LAUNCH or EARLY (factor 1.0): rewires edges instead of scaling


def _term(text: str, spec: str) -> tuple[str, str]:
    field, sep, value = text.partition(":")
    field, value = field.strip(), value.strip()
    if not sep:
        if field in FLAGS:
            return field, ""
        if field in KINDS or field in CATEGORIES:
            return ("kind" if field in KINDS else "category"), field
        raise TrnprofError(
            f"--scale {spec}: unknown selector {field!r} (a kind: {', '.join(KINDS)}; "
            f"a category: {', '.join(CATEGORIES)}; gap, sync, matmul; or kind:, category:, name:, "
            "rank:, size:, under:)"
        )
    allowed = {"kind": KINDS, "category": CATEGORIES, "size": tuple(SIZE_CLASSES)}
    if field in allowed and value not in allowed[field]:
        raise TrnprofError(f"--scale {spec}: {field} {value!r} is not one of {', '.join(allowed[field])}")
    if field == "rank" and not re.fullmatch(r"-?\d{1,9}", value):
        raise TrnprofError(f"--scale {spec}: rank {value!r} is not a rank number")
    if field == "under":
        return field, str(_duration_ns(value, spec))
    if field not in ("kind", "category", "name", "rank", "size") or not value:
        raise TrnprofError(
            f"--scale {spec}: selector {text!r} not understood (kind:K, category:C, name:GLOB, "
            "rank:N, size:small|medium|large, under:DURATION, gap)"
        )
    return field, value


def _duration_ns(value: str, spec: str) -> int:
    """`20us` -> 20000: a positive duration of at most a day, in whole nanoseconds."""
    match = DURATION.fullmatch(value)
    ns = float(match.group(1)) * NS_PER_UNIT[match.group(2) or "ns"] if match else math.nan
    if not 1 <= ns <= MAX_DURATION_NS:
        raise TrnprofError(f"--scale {spec}: under {value!r} is not a duration from 1 ns to a day (e.g. 20us)")
    return int(ns)


def parse(spec: str) -> Scale:
    """`collective=0`, `rank:3=peers`, `name:aten::mm,rank:1=0.5` -> Scale (one error line when bad)."""
    if not isinstance(spec, str) or "=" not in spec:
        raise TrnprofError(f"--scale {spec!r}: expected SELECTOR=FACTOR, e.g. collective=0 or rank:3=peers")
    selector, _, value = spec.rpartition("=")
    terms = tuple(_term(t, spec) for t in selector.split(",") if t.strip())
    if not terms:
        raise TrnprofError(f"--scale {spec}: no selector before '='")
    if value.strip() == PEERS:
        if any(f == "gap" for f, _ in terms):
            raise TrnprofError(f"--scale {spec}: 'peers' scales work, not gaps: give gap a number")
        if not any(f == "rank" for f, _ in terms):
            raise TrnprofError(f"--scale {spec}: 'peers' needs a rank:N term (whose work to bring to its peers' pace)")
        return Scale(terms, None, spec)
    if value.strip() in (LAUNCH, EARLY):
        if any(f == "gap" for f, _ in terms):
            raise TrnprofError(f"--scale {spec}: {value.strip()!r} rewires nodes, not gaps")
        return Scale(terms, 1.0, spec, value.strip())
    if _word(value.strip()):
        raise TrnprofError(f"--scale {spec}: factor {value.strip()!r} is not a number, 'peers', 'launch' or 'early'")
    return Scale(terms, SCALE_FACTOR.check(value.strip(), f"--scale {spec}: factor"), spec)


def _word(value: str) -> bool:
    """True when `value` is no number at all (a misspelt operation): out-of-range numbers, nan and
    inf are the range check's to refuse."""
    try:
        float(value)
    except ValueError:
        return True
    return False


def _matches(nodes: pd.DataFrame, terms, skip_rank: bool = False) -> np.ndarray:
    hit = np.ones(len(nodes), bool)
    for field, value in terms:
        if field == "kind":
            hit &= (nodes["kind"] == value).to_numpy()
        elif field == "category":
            hit &= (nodes["category"] == value).to_numpy()
        elif field == "name":
            names = pd.Series(nodes["name"].unique())
            chosen = set(names[names.map(lambda n: fnmatch.fnmatchcase(str(n), value))])
            hit &= nodes["name"].isin(chosen).to_numpy()
        elif field == "rank" and not skip_rank:
            hit &= (nodes["rank"] == int(value)).to_numpy()
        elif field == "sync":
            hit &= nodes["syncs"].to_numpy(bool)
        elif field == "matmul":
            hit &= (nodes["kind"] == "compute").to_numpy() & _name_matches(nodes["name"], MATMUL_NAME)
        elif field == "under":
            hit &= (nodes["end"].to_numpy(np.int64) - nodes["ts"].to_numpy(np.int64)) < int(value)
        elif field == "size":
            low, high = SIZE_CLASSES[value]
            size = nodes["bytes"].astype("float64").to_numpy()
            hit &= (nodes["category"] == "communication").to_numpy() & (size >= low) & (size < high)
    return hit


def _peer_factor(nodes: pd.DataFrame, work: np.ndarray, scale: Scale, stages: dict | None = None) -> np.ndarray:
    """Per node of the scale's rank: the factor bringing the rank's matching work of the node's
    category in that step down to the median of the other ranks' (1 where either has none, never
    up): each kind of work is brought to its peers' pace on its own. The time removed is taken
    first from the work the peers do not do, or do in less time (per op name, the rank's excess
    over the peers' median of that name: a straggler's extra ops, its slower kernels), then
    evenly from the rest: a fix removes the straggler's extra work, not a share of every op.
    Peers are the ranks of the same pipeline stage when `stages` (rank -> stage) knows it.
    Communication keeps its length: a collective's time on one rank is set by the others'
    arrivals and the shared transfer, not by the rank's pace."""
    rank = int(next(v for f, v in scale.terms if f == "rank"))
    hit = _matches(nodes, scale.terms, skip_rank=True)
    if stages and rank in stages:
        same = [r for r, stage in stages.items() if stage == stages[rank]]
        hit &= nodes["rank"].isin(same).to_numpy()
    keys = ["step", "category"]
    frame = pd.DataFrame(
        {
            "rank": nodes["rank"].to_numpy()[hit],
            "step": nodes["step"].to_numpy()[hit],
            "category": nodes["category"].astype(str).to_numpy()[hit],
            "name": nodes["name"].astype(str).to_numpy()[hit],
            "work": work[hit].astype(float),
        }
    )
    frame = frame[frame["category"] != "communication"]
    by_name = frame.groupby([*keys, "name", "rank"])["work"].sum().unstack("rank", fill_value=0.0)
    if rank not in by_name.columns or by_name.shape[1] < 2:
        return np.ones(len(nodes))
    totals = frame.groupby([*keys, "rank"])["work"].sum().reset_index()
    # a peer counts for a name it does not run (0), within the steps and categories it has work of
    doing = by_name.index.droplevel("name")
    others = by_name.drop(columns=rank)
    others = others.where(
        np.column_stack(
            [doing.isin(pd.MultiIndex.from_frame(totals.loc[totals["rank"] == r, keys])) for r in others.columns]
        )
    )
    own_name, peers_name = by_name[rank], others.median(axis=1)
    own = totals[totals["rank"] == rank].set_index(keys)["work"]
    peers = totals[totals["rank"] != rank].groupby(keys)["work"].median()
    remove = (own - peers).clip(lower=0).dropna()  # a fix never slows a rank
    excess = (own_name - peers_name.fillna(0.0)).clip(lower=0)
    excess_sum = excess.groupby(level=keys).sum()
    share = (remove / excess_sum).replace([np.inf, -np.inf], np.nan).fillna(0.0).clip(upper=1.0)
    taken = excess * share.reindex(excess.index.droplevel("name")).to_numpy()  # from the excess first
    rest_total = (own - excess_sum).reindex(remove.index)
    rest_cut = ((remove - excess_sum).clip(lower=0) / rest_total).replace([np.inf, -np.inf], np.nan).fillna(0.0)
    left = (own_name - taken) * (1 - rest_cut.reindex(excess.index.droplevel("name")).fillna(0.0).to_numpy())
    ratio = (left / own_name).replace([np.inf, -np.inf], np.nan).dropna().clip(0.0, 1.0)
    ratio = ratio[own_name.reindex(ratio.index) > 0]
    index = pd.MultiIndex.from_arrays(
        [nodes["step"].to_numpy(), nodes["category"].astype(str).to_numpy(), nodes["name"].astype(str).to_numpy()],
        names=[*keys, "name"],
    )
    factor = pd.Series(ratio).reindex(index).fillna(1.0).to_numpy()
    return np.where(nodes["rank"].to_numpy() == rank, factor, 1.0)


def factors(
    nodes: pd.DataFrame, work: np.ndarray, scales, stages: dict | None = None, gaps: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """(work factor per node, gap factor per node): the scales applied in order, multiplied;
    `stages` (rank -> pipeline stage) chooses the peers of `peers`; `gaps` (each node's lead gap)
    lets `under:D,gap` select the gaps shorter than D."""
    work_f, gap_f = np.ones(len(nodes)), np.ones(len(nodes))
    given = np.ones(len(nodes))  # the product of the factors the user gave (not `peers`' measured ones)
    for scale in scales:
        if scale.action is not None:  # rewired(), not scaled
            continue
        if any(f == "gap" for f, _ in scale.terms):
            hit = _matches(nodes, [t for t in scale.terms if t[0] != "gap"])
            under = next((int(v) for f, v in scale.terms if f == "under"), None)
            if under is not None and gaps is not None:
                hit &= gaps < under
            gap_f[hit] *= scale.factor if scale.factor is not None else 1.0
            continue
        hit = _matches(nodes, scale.terms)
        factor = _peer_factor(nodes, work, scale, stages) if scale.factor is None else scale.factor
        work_f[hit] *= factor[hit] if isinstance(factor, np.ndarray) else factor
        given[hit] *= scale.factor if scale.factor is not None else 1.0
    if len(nodes) and max(given.max(), gap_f.max()) > SCALE_FACTOR.high:
        raise TrnprofError(
            f"--scale {', '.join(s.text for s in scales)}: the factors multiply to more than "
            f"{SCALE_FACTOR.high:g} on some work (the replay's range)"
        )
    return work_f, gap_f


def _where(terms) -> str:
    """SQL over the run's events: the work events the terms other than name and gap select."""
    kinds = ", ".join(f"'{k}'" for k in KINDS)
    parts = ["step IS NOT NULL", "dur >= 0", f"kind IN ({kinds})"]
    for field, value in terms:  # values checked by parse: known kinds, categories, classes; integers
        if field == "kind":
            parts.append(f"kind = '{value}'")
        elif field == "category":
            parts.append("kind IN (" + ", ".join(f"'{k}'" for k, c in CATEGORY_OF_KIND.items() if c == value) + ")")
        elif field == "rank":
            parts.append(f"rank = {int(value)}")
        elif field == "other_rank":
            parts.append(f"rank <> {int(value)}")
        elif field == "under":
            parts.append(f"dur < {int(value)}")
        elif field == "size":
            low, high = SIZE_CLASSES[value]
            communication = ", ".join(f"'{k}'" for k, c in CATEGORY_OF_KIND.items() if c == "communication")
            parts.append(
                f"kind IN ({communication}) AND bytes >= {low}" + (f" AND bytes < {high}" if high < math.inf else "")
            )
    return " AND ".join(parts)


def _any(run, terms) -> bool:
    """Whether some work event of `run` matches every term (name globs matched in Python, as the
    replay does, over the distinct names the other terms leave)."""
    globs = [value for field, value in terms if field == "name"]
    if not globs:
        return len(run.sql(f"SELECT 1 AS hit FROM events WHERE {_where(terms)} LIMIT 1")) > 0
    names = run.sql(f"SELECT DISTINCT name FROM events WHERE {_where(terms)} AND name IS NOT NULL")["name"]
    return any(all(fnmatch.fnmatchcase(str(name), glob) for glob in globs) for name in names)


def check_matches(run, scales) -> None:
    """One error line for the first scale whose selector matches no work event of `run` (or, for
    `peers`, whose rank has no peer doing such work): it would change nothing, silently."""
    for scale in scales:
        terms = [t for t in scale.terms if t[0] != "gap"]
        rank = next((int(v) for f, v in terms if f == "rank"), None)
        if rank is not None:
            known = run.sql(f"SELECT MIN(rank) AS low, MAX(rank) AS high, COUNT(*) AS n FROM ranks WHERE rank = {rank}")
            if int(known["n"].iloc[0]) == 0:
                world = run.sql("SELECT MIN(rank) AS low, MAX(rank) AS high FROM ranks").iloc[0]
                raise TrnprofError(
                    f"--scale {scale.text}: rank {rank} is not a rank of this run "
                    f"(ranks {world['low']}-{world['high']})"
                )
        if not _any(run, terms):
            raise TrnprofError(f"--scale {scale.text}: matches no work event of this run, so it would change nothing")
        if scale.factor is None and not _any(run, [t for t in terms if t[0] != "rank"] + [("other_rank", str(rank))]):
            raise TrnprofError(
                f"--scale {scale.text}: no other rank does such work, so rank {rank} has no peers to be paced by"
            )


def node_factors(graph: Graph, scales, stages: dict | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(work factor per node, gap factor per node, factor of the gap after each step's last node,
    per row of graph.steps) for `scales`; a plain `rank:N=peers` also brings the rank's untraced
    host time to its peers' (_untraced_to_peers)."""
    sized = [s for s in scales if s.action is None]
    work_f, gap_f = factors(graph.nodes, graph.work, sized, stages, graph.gap)
    step_f = np.ones(len(graph.steps))
    ranks = graph.steps["rank"].to_numpy(np.int64)
    for scale in sized:
        terms = dict(scale.terms)
        if "gap" in terms and set(terms) <= {"gap", "rank"} and scale.factor is not None:
            step_f[(ranks == int(terms["rank"])) if "rank" in terms else slice(None)] *= scale.factor
        elif scale.factor is None and set(terms) == {"rank"}:
            node_f, row_f = _untraced_to_peers(graph, int(terms["rank"]), stages)
            gap_f *= node_f
            step_f *= row_f
    return work_f, gap_f, step_f


def _untraced_to_peers(graph: Graph, rank: int, stages: dict | None) -> tuple[np.ndarray, np.ndarray]:
    """Factors bringing `rank`'s untraced time per step (the lead gaps of its nodes: time on its
    lanes with nothing recorded after what they waited for, and the gap after its step's last
    node) to the median of its peers' (the other ranks of its pipeline stage) in that step, at
    most their median over the batch's steps, never up:
    (per node, per row of graph.steps); 1 where the rank has none or no peer recorded the step."""
    nodes, steps = graph.nodes, graph.steps
    untraced = pd.DataFrame(
        {"rank": nodes["rank"].to_numpy(), "step": nodes["step"].to_numpy(), "ns": graph.gap.astype(float)}
    )
    untraced = pd.concat(
        [
            untraced,
            pd.DataFrame(
                {
                    "rank": steps["rank"].to_numpy(),
                    "step": steps["step"].to_numpy(),
                    "ns": steps["tail_gap"].to_numpy(float),
                }
            ),
        ]
    )
    if stages and rank in stages:
        untraced = untraced[untraced["rank"].map(lambda r: stages.get(int(r)) == stages[rank])]
    per = untraced.groupby(["step", "rank"])["ns"].sum().reset_index()
    own = per[per["rank"] == rank].set_index("step")["ns"]
    others = per[per["rank"] != rank]
    # a peer's gap may hold its wait for this rank (a wait outside every recorded op): the
    # target is the peers' median in the step, at most their median step of the batch
    peers = others.groupby("step")["ns"].median().clip(upper=float(others["ns"].median()) if len(others) else None)
    ratio = (peers / own).replace([np.inf, -np.inf], np.nan).dropna().clip(upper=1.0)  # a fix never slows a rank
    node_f = np.where(nodes["rank"].to_numpy() == rank, nodes["step"].map(ratio).fillna(1.0).to_numpy(), 1.0)
    row_f = np.where(steps["rank"].to_numpy() == rank, steps["step"].map(ratio).fillna(1.0).to_numpy(), 1.0)
    return node_f, row_f


def rewired(graph: Graph, scales) -> Graph:
    """`graph` with the edges the `launch` and `early` scales remove (the same graph when none):
    `launch` drops the end edge of the selected blocking host calls from the device, `early` the
    selected nodes' latest-finished and launch edges into their start."""
    near, launch_by, sync_on = graph.near, graph.launch_by, graph.sync_on
    for scale in scales:
        if scale.action is None:
            continue
        hit = _matches(graph.nodes, scale.terms)
        if scale.action == LAUNCH:
            sync_on = np.where(hit & graph.nodes["syncs"].to_numpy(bool), -1, sync_on)
        else:
            near, launch_by = np.where(hit, -1, near), np.where(hit, -1, launch_by)
    if near is graph.near and launch_by is graph.launch_by and sync_on is graph.sync_on:
        return graph
    return replace(graph, near=near, launch_by=launch_by, sync_on=sync_on)
