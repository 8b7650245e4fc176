"""Build, replay and walk the graph of a run, a batch of steps at a time.

Collectives join ranks, never steps, so a batch is a run of consecutive steps with all their
ranks; batches hold at most BATCH_EVENTS events (a bigger step is a batch alone, read and
flattened a rank range at a time: RANGE_EVENTS), and a step over STEP_EVENTS is refused.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..errors import TrnprofError
from ..heap import trim as release_freed_memory
from . import nodes, replay, scale
from .events import WORK_KINDS, Reader
from .graph import Graph, build_ranges
from .path import SEGMENT_COLUMNS, critical_path

BATCH_EVENTS = 1_000_000  # events per batch of steps: about 1 GB at peak (bench/bench_critical_path.py)
# a batch over this many events is read, flattened and given its edges within ranks a rank range
# at a time (graph.build_ranges): the raw events and their temporaries of one range at once
RANGE_EVENTS = 1_000_000
KEEP_NODES = 5_000_000  # runs of up to this many events keep their graphs (and unchanged replays) between replays
# A step's graph holds all its ranks (collectives join them); its events are read and flattened
# a rank range at a time, but the graph and a replay of it grow with the step: peak RSS 2.22 GB
# for the path and one replay at 4.4M events per step (llama2-7b on 1,024 ranks), about 420
# bytes an event over the session's own: past this the 2.5 GB budget does not hold
STEP_EVENTS = 5_000_000


# Commands with a budget of about a minute (analyze's pricing by replay, the report's section)
# compute the critical path of runs of at most this many work events in their steps: it takes
# about 3 CPU us an event (docs/critical-path.md, Performance); `trnprof whatif --scale` and
# `trnprof query` compute any run whose steps fit (STEP_EVENTS)
WITHIN_A_MINUTE_EVENTS = 25_000_000


class StepTooLarge(TrnprofError):
    """A step has more events than one graph may hold within the memory budget."""


@dataclass
class Result:
    segments: pd.DataFrame  # critical path of the replayed run (path.SEGMENT_COLUMNS)
    walks: pd.DataFrame  # step, rank (the rank that ended the step), late_rank_wait
    measured: pd.DataFrame  # step, dur: the replay of the unchanged graph (slowest rank), ns
    replayed: pd.DataFrame  # step, dur: with the scales applied, ns
    nodes: int = 0
    scales: list = field(default_factory=list)
    base_segments: pd.DataFrame | None = None  # critical path of the unchanged replay (base_path)


def step_batches(counts: pd.DataFrame, limit: int = BATCH_EVENTS) -> list[tuple[int, int]]:
    """Consecutive step ranges of at most `limit` events each (a bigger step is a batch alone)."""
    batches: list[tuple[int, int]] = []
    first = last = None  # the open batch's first and last step; None while no batch is open
    total = 0
    for step, n in zip(counts["step"].tolist(), counts["n"].tolist()):
        if first is not None and total + n > limit:
            batches.append((first, last))
            first, total = None, 0
        if first is None:
            first = step
        last = step
        total += n
    if first is not None:
        batches.append((first, last))
    return batches


def rank_ranges(ranks: np.ndarray, events: int, limit: int) -> list[tuple[int | None, int | None]]:
    """(low, stop) rank ranges (events.where) that split a batch of `events` over its sorted
    distinct `ranks` into parts of about `limit` events (ranks hold similar work); the first is
    open below and the last above, so together they read every event of the batch."""
    parts = min(-(-int(events) // limit), len(ranks))
    if parts <= 1:
        return [(None, None)]
    lows = [int(chunk[0]) for chunk in np.array_split(ranks, parts)]
    return [(low if k else None, lows[k + 1] if k + 1 < len(lows) else None) for k, low in enumerate(lows)]


class _ReadAhead:
    """Reads (steps, ranks) tasks in order, each next one in a second thread while the caller
    works on the one before (DuckDB releases the GIL; the reader has a cursor of its own)."""

    def __init__(self, pool: ThreadPoolExecutor, read, tasks):
        self.pool, self.read, self.tasks = pool, read, iter(tasks)
        self.ahead = self._submit()

    def _submit(self):
        task = next(self.tasks, None)
        return None if task is None else self.pool.submit(self.read, *task)

    def next(self) -> pd.DataFrame:
        events = self.ahead.result()
        self.ahead = self._submit()
        return events


def check_step_sizes(counts: pd.DataFrame) -> None:
    """StepTooLarge when a step (`counts`: step, n work events across its ranks) is more than one
    step's graph holds."""
    if len(counts) and int(counts["n"].max()) > STEP_EVENTS:
        big = counts.loc[counts["n"].idxmax()]
        raise StepTooLarge(
            f"critical path: step {int(big['step'])} has {int(big['n']):,} events across its ranks, "
            f"over the {STEP_EVENTS:,} one step's graph holds within the memory budget "
            "(docs/critical-path.md, Performance)"
        )


class RunTooLarge(TrnprofError):
    """A run's steps hold more work events than a command with a minute's budget walks."""


def step_work_counts(run) -> pd.DataFrame:
    """step, n: the work events of each step across its ranks, from the stored counts per rank,
    step and kind (view event_stats): no scan of the events."""
    kinds = ", ".join(f"'{kind}'" for kind in WORK_KINDS)
    return run.sql(
        f"SELECT step, SUM(n) AS n FROM event_stats WHERE kind IN ({kinds}) "
        "AND step IN (SELECT step FROM steps) GROUP BY step ORDER BY step"
    )


def check_within_a_minute(run) -> None:
    """StepTooLarge when a step is more than one graph holds, RunTooLarge when the run's steps
    hold more than WITHIN_A_MINUTE_EVENTS work events in all."""
    counts = step_work_counts(run)
    check_step_sizes(counts)
    total = int(counts["n"].sum()) if len(counts) else 0
    if total > WITHIN_A_MINUTE_EVENTS:
        raise RunTooLarge(
            f"the run's steps hold {total:,} work events, over the {WITHIN_A_MINUTE_EVENTS:,} whose critical "
            "path a command computes within about a minute (docs/critical-path.md, Performance)"
        )


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
        ranks = np.sort(self.steps["rank"].unique())
        per_step = dict(zip(counts["step"].tolist(), counts["n"].tolist()))
        self.ranges = [
            rank_ranges(ranks, sum(per_step.get(s, 0) for s in range(low, high + 1)), RANGE_EVENTS)
            for low, high in self.batches
        ]
        # keep the graphs only when the whole run fits: keeping part of a bigger run saves a
        # fraction of the rebuilds for memory the next batch needs
        self.keep = int(counts["n"].sum()) <= KEEP_NODES
        self._kept: dict[tuple[int, int], Graph] = {}
        self._solved: dict[tuple[int, int], replay.Solution] = {}
        self.stages = pipeline_stages(run)

    def graphs(self):
        """Each batch's graph, built from its events a rank range at a time (`ranges`); each
        range's events are read in a second thread while the one before is flattened and built
        (or, for a batch's first range, while the batch before is solved). Reading ahead costs
        one range's raw events of memory (flattening them ahead too cost twice as much: 2.4 GB
        peak at 1,024 ranks)."""
        tasks = [
            ((low, high), ranks)
            for (low, high), ranges in zip(self.batches, self.ranges)
            if (low, high) not in self._kept
            for ranks in ranges
        ]
        with ThreadPoolExecutor(max_workers=1) as pool:
            reads = _ReadAhead(pool, self.reader.read, tasks)
            for (low, high), ranges in zip(self.batches, self.ranges):
                graph = self._kept.get((low, high))
                if graph is None:
                    batch_steps = self.steps[(self.steps["step"] >= low) & (self.steps["step"] <= high)]
                    # each range's events are flattened as read and freed once its edges are built
                    graph = build_ranges((nodes.flatten(reads.next()) for _ in ranges), batch_steps)
                    if self.keep:
                        self._kept[(low, high)] = graph
                yield graph
                del graph  # not held while the next batch is built

    def solved(self):
        """(graph, its unchanged replay) per batch: solved once when the run is kept."""
        # not zip() or enumerate(): they keep their last tuple, and so the last graph, while
        # they take the next
        batches = iter(self.batches)
        for graph in self.graphs():
            low, high = next(batches)
            base = self._solved.get((low, high))
            if base is None:
                base = replay.solve_unchanged(graph)
                if self.keep:
                    self._solved[(low, high)] = base
            yield graph, base
            del graph, base  # not held while the next batch is built (two steps' graphs: 2.99 GB peak)

    def replay(self, scales=(), base_path: bool = False, path: bool = True) -> Result:
        """Replay every batch with `scales` (Scale or `SELECTOR=FACTOR` strings); the critical
        path is the changed run's (none without `path`: step times only), and also the
        unchanged one's with `base_path`."""
        scales = [s if isinstance(s, scale.Scale) else scale.parse(s) for s in scales]
        parts = {"segments": [], "walks": [], "measured": [], "replayed": [], "base_segments": []}
        total, carry = 0, None
        for batch in self.solved():
            total += len(batch[0].nodes)
            carry = self._replay_batch(*batch, scales, carry, path, base_path, parts)
            del batch  # the graph is not held while the next batch is built
            release_freed_memory()
        empty = {
            "segments": pd.DataFrame(columns=SEGMENT_COLUMNS),
            "base_segments": pd.DataFrame(columns=SEGMENT_COLUMNS),
            "walks": pd.DataFrame(columns=["step", "rank", "late_rank_wait"]),
            "measured": pd.DataFrame(columns=["step", "dur"]),
            "replayed": pd.DataFrame(columns=["step", "dur"]),
        }
        out = {k: (pd.concat(v, ignore_index=True) if v else empty[k]) for k, v in parts.items()}
        return Result(
            out["segments"], out["walks"], out["measured"], out["replayed"], total, scales, out["base_segments"]
        )

    def _replay_batch(self, measured, base, scales, carry, path: bool, base_path: bool, parts: dict):
        """One batch of `replay`, its results appended to `parts`; returns the next batch's carry."""
        graph, changed = measured, base
        if scales:  # each batch starts where the previous one's replay ended (replay.carried)
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
        return carry


def analyse(run, scales=(), steps: pd.DataFrame | None = None, limit: int = BATCH_EVENTS) -> Result:
    """The critical path of every step of `run` (an open Run), replayed with `scales`
    (scale.Scale or `SELECTOR=FACTOR` strings). `steps` restricts the steps (rank, step, ts, end_ts)."""
    return Replayer(run, steps, limit).replay(scales)
