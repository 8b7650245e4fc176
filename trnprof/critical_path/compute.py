"""Build, replay and walk the graph of a run, a batch of steps at a time.

Collectives join ranks, never steps, so a batch is a run of consecutive steps with all their
ranks; batches hold at most BATCH_EVENTS events, which bounds memory whatever the rank count.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..errors import TrnprofError
from . import nodes, replay, scale
from .events import Reader
from .graph import Graph, build as build_graph
from .path import SEGMENT_COLUMNS, critical_path

BATCH_EVENTS = 1_000_000   # events per batch of steps: about 1 GB at peak (bench/bench_critical_path.py)
KEEP_NODES = 5_000_000    # runs of up to this many events keep their graphs (and unchanged replays) between replays
# A step's graph is built whole (collectives join all its ranks): peak RSS 2.06 GB at 2.2M events
# per step, 3.25 GB at 4.4M (llama2-7b on 1,024 ranks): past this the 2.5 GB budget does not hold
STEP_EVENTS = 3_000_000


class StepTooLarge(TrnprofError):
    """A step has more events than one graph may hold within the memory budget."""


@dataclass
class Result:
    segments: pd.DataFrame          # critical path of the replayed run (path.SEGMENT_COLUMNS)
    walks: pd.DataFrame             # step, rank (the rank that ended the step), late_rank_wait
    measured: pd.DataFrame          # step, dur: the replay of the unchanged graph (slowest rank), ns
    replayed: pd.DataFrame          # step, dur: with the scales applied, ns
    nodes: int = 0
    scales: list = field(default_factory=list)
    base_segments: pd.DataFrame | None = None   # critical path of the unchanged replay (base_path)


def step_batches(counts: pd.DataFrame, limit: int = BATCH_EVENTS) -> list[tuple[int, int]]:
    """Consecutive step ranges of at most `limit` events each (a bigger step is a batch alone)."""
    batches, low, total = [], None, 0
    for step, n in zip(counts["step"].tolist(), counts["n"].tolist()):
        if low is not None and total + n > limit:
            batches.append((low, prev))
            low, total = None, 0
        low = step if low is None else low
        total += n
        prev = step
    if low is not None:
        batches.append((low, prev))
    return batches


def check_step_sizes(counts: pd.DataFrame) -> None:
    """StepTooLarge when a step (`counts`: step, n work events across its ranks) is more than one
    step's graph holds."""
    if len(counts) and int(counts["n"].max()) > STEP_EVENTS:
        big = counts.loc[counts["n"].idxmax()]
        raise StepTooLarge(f"critical path: step {int(big['step'])} has {int(big['n']):,} events across its ranks, "
                           f"over the {STEP_EVENTS:,} one step's graph holds within the memory budget "
                           "(docs/critical-path.md, Performance)")


def pipeline_stages(run) -> dict | None:
    """rank -> pipeline stage when the run has two stages or more (a rank's peers do the same
    work), else None."""
    ranks = run.sql("SELECT rank, pp_rank FROM ranks WHERE pp_rank IS NOT NULL")
    if ranks["pp_rank"].nunique() < 2:
        return None
    return dict(zip(ranks["rank"].astype(int), ranks["pp_rank"].astype(int)))


class Replayer:
    """A run's graphs, built and replayed unchanged once per batch of steps (both kept in memory
    when the run has at most KEEP_NODES events, else redone per replay), replayed with any number
    of scale sets."""

    def __init__(self, run, steps: pd.DataFrame | None = None, limit: int = BATCH_EVENTS):
        self.run = run
        self.steps = run.sql("SELECT rank, step, ts, end_ts FROM steps") if steps is None else steps
        self.reader = Reader(run)
        counts = self.reader.step_counts()
        counts = counts[counts["step"].isin(self.steps["step"].unique())]
        check_step_sizes(counts)
        self.batches = step_batches(counts, limit)
        # keep the graphs only when the whole run fits: keeping part of a bigger run saves a
        # fraction of the rebuilds for memory the next batch needs
        self.keep = int(counts["n"].sum()) <= KEEP_NODES
        self._kept: dict[tuple[int, int], Graph] = {}
        self._solved: dict[tuple[int, int], replay.Solution] = {}
        self.stages = pipeline_stages(run)

    def _graph(self, low: int, high: int, flat=None) -> Graph:
        graph = self._kept.get((low, high))
        if graph is None:
            batch_steps = self.steps[(self.steps["step"] >= low) & (self.steps["step"] <= high)]
            graph = build_graph(flat if flat is not None else nodes.flatten(self.reader.read((low, high))), batch_steps)
            if self.keep:
                self._kept[(low, high)] = graph
        return graph

    def graphs(self):
        """Each batch's graph. The next batch's events are read in a second thread while this
        one is built and solved (DuckDB releases the GIL; the reader has a cursor of its own, so the
        caller may query the run meanwhile); they cost a batch's raw events of memory (flattening them ahead too
        cost twice as much: 2.4 GB peak at 1,024 ranks)."""
        with ThreadPoolExecutor(max_workers=1) as pool:
            ahead = None
            for k, (low, high) in enumerate(self.batches):
                events = None
                if (low, high) not in self._kept:   # read here only while no read runs ahead
                    events = ahead.result() if ahead is not None else self.reader.read((low, high))
                following = self.batches[k + 1] if k + 1 < len(self.batches) else None
                ahead = pool.submit(self.reader.read, following) \
                    if following is not None and following not in self._kept else None
                flat = nodes.flatten(events) if events is not None else None
                del events   # the raw events are not kept while the graph is built
                graph = self._graph(low, high, flat)
                del flat
                yield graph

    def solved(self):
        """(graph, its unchanged replay) per batch: solved once when the run is kept."""
        for (low, high), graph in zip(self.batches, self.graphs()):
            base = self._solved.get((low, high))
            if base is None:
                base = replay.solve_unchanged(graph)
                if self.keep:
                    self._solved[(low, high)] = base
            yield graph, base

    def replay(self, scales=(), base_path: bool = False, path: bool = True) -> Result:
        """Replay every batch with `scales` (Scale or `SELECTOR=FACTOR` strings); the critical
        path is the changed run's (none without `path`: step times only), and also the
        unchanged one's with `base_path`."""
        scales = [s if isinstance(s, scale.Scale) else scale.parse(s) for s in scales]
        parts = {"segments": [], "walks": [], "measured": [], "replayed": [], "base_segments": []}
        total, carry = 0, None
        for measured, base in self.solved():
            total += len(measured.nodes)
            graph, changed = measured, base
            if scales:   # each batch starts where the previous one's replay ended (replay.carried)
                graph = scale.rewired(measured, scales)
                work_f, gap_f, step_gap_f = scale.node_factors(graph, scales, self.stages)
                changed = replay.solve(graph, work_f, gap_f, step_gap_f, carry=carry)
                carry = replay.carried(graph, changed)
            segments = None
            if path or (base_path and not scales):
                segments, walks = critical_path(graph, changed)
                parts["segments"].append(segments)
                parts["walks"].append(walks)
            if base_path:
                parts["base_segments"].append(critical_path(measured, base)[0] if scales else segments)
            parts["measured"].append(base.steps.groupby("step", as_index=False)["dur"].max())
            parts["replayed"].append(changed.steps.groupby("step", as_index=False)["dur"].max())
        empty = {"segments": pd.DataFrame(columns=SEGMENT_COLUMNS),
                 "base_segments": pd.DataFrame(columns=SEGMENT_COLUMNS),
                 "walks": pd.DataFrame(columns=["step", "rank", "late_rank_wait"]),
                 "measured": pd.DataFrame(columns=["step", "dur"]), "replayed": pd.DataFrame(columns=["step", "dur"])}
        out = {k: (pd.concat(v, ignore_index=True) if v else empty[k]) for k, v in parts.items()}
        return Result(out["segments"], out["walks"], out["measured"], out["replayed"], total, scales,
                      out["base_segments"])


def analyse(run, scales=(), steps: pd.DataFrame | None = None, limit: int = BATCH_EVENTS) -> Result:
    """The critical path of every step of `run` (an open Run), replayed with `scales`
    (scale.Scale or `SELECTOR=FACTOR` strings). `steps` restricts the steps (rank, step, ts, end_ts)."""
    return Replayer(run, steps, limit).replay(scales)
