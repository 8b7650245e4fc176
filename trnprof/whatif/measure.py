"""What the run measured in its steady state, read from the stdlib views: the step time, the
step's breakdown, and the median duration of every event class (per pipeline stage, kind, op
name and phase) that the model also predicts.

Event classes are read on a sample of ranks — per pipeline stage, one whole tensor-parallel
group and one whole data-parallel group (so every collective in the sample has all its members
and its transfer time is its shortest member's duration, as the `collectives` view defines it)
— which keeps a 1,024-rank run's read to a few percent of its events. Medians over ranks and
steps make one straggler or one noisy step not move a class.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from trnprof.errors import TrnprofError
from trnprof.model.run_views import WAIT_FLOOR_S, unwaited
from trnprof.robuststats import bulk_sd
from trnprof.run import Run
from trnprof.units import S_PER_NS

MAX_SAMPLE = 512  # ranks read at most, when the ranks table has no layout to sample by
# Above this many ranks the measured breakdown (an interval sweep over every rank's events) is
# only reported when the run's derived/ cache already holds step_breakdown (`trnprof analyze`
# or `info` computed it): the fit does not need it, and it would take most of the time budget.
BREAKDOWN_RANKS = 256


@dataclass
class Measured:
    step_time_s: float  # median steady step (slowest rank), s: the typical step
    steps: int  # steady steps measured
    breakdown: dict[str, float] | None  # mean over ranks and steady steps, s (None: not computed)
    classes: dict[tuple, float]  # (stage, kind, name, phase) -> median seconds per event
    counts: dict[tuple, int]  # events behind each class
    sampled_ranks: int
    effective_s: float = 0.0  # wall time per steady step (step_time_views), s
    noise: float = 0.0  # the steps' bulk standard deviation over the typical step
    unwaited_s: float | None = None  # median steady step no rank waited for input in, s (None: no breakdown)
    rank_spread: float = 0.0  # every step waited: slowest over median rank compute - 1 (unwaited_step)


def steady_step(run: Run) -> tuple[float, int]:
    """The typical step (median steady step, s) and the steady steps."""
    df = run.sql("SELECT dur FROM step_phases WHERE NOT warmup")
    if df.empty:
        raise TrnprofError(f"run {run.path}: no steady-state steps to fit (the run has no step events after warm-up)")
    return float(df["dur"].median()) * S_PER_NS, len(df)


def step_views(run: Run) -> tuple[float, float]:
    """The effective step (view step_time_views, s) and the steps' relative noise: the bulk
    standard deviation of the steady step times over their median."""
    effective = float(run.sql("SELECT effective FROM step_time_views").iloc[0, 0]) * S_PER_NS
    durations = run.sql("SELECT dur FROM step_phases WHERE NOT warmup")["dur"].astype(float)
    return effective, bulk_sd(durations) / float(durations.median())


def breakdown(run: Run) -> dict[str, float]:
    """Mean seconds per rank and steady step; communication is the exposed part, idle counts
    input waits, host time, exposed transfers and compiles (the device did none of its own work)."""
    df = run.sql(
        "SELECT AVG(compute) AS compute, AVG(exposed_comm) AS comm, "
        "AVG(input_wait + host_sync + host + transfer_exposed + compile + idle) AS idle FROM steady_breakdown"
    )
    row = df.iloc[0]
    return {
        "compute": float(row["compute"] or 0) * S_PER_NS,
        "communication": float(row["comm"] or 0) * S_PER_NS,
        "idle": float(row["idle"] or 0) * S_PER_NS,
    }


def unwaited_step(run: Run) -> tuple[float | None, float]:
    """The median steady step among those in which no rank waited for its input
    (steady_breakdown's input_wait; run_views.unwaited), s; and, when every steady step waited,
    how much longer than the median rank's the slowest rank's compute ran (median over steps):
    a step the device bounds ends with its slowest rank, which a step the loader bounds hid."""
    df = run.sql(
        "SELECT p.step, p.dur, MAX(b.input_wait) AS wait, MAX(b.compute) / NULLIF(MEDIAN(b.compute), 0) - 1 "
        "AS spread FROM step_phases AS p JOIN steady_breakdown AS b ON b.step = p.step GROUP BY p.step, p.dur"
    )
    if df.empty:
        return None, 0.0
    waits = df["wait"].to_numpy(float) * S_PER_NS
    step = unwaited(df["dur"].to_numpy(float) * S_PER_NS, waits)
    if (waits < WAIT_FLOOR_S).any():
        return step, 0.0
    return step, float(df["spread"].astype(float).fillna(0).median())


def breakdown_ready(run: Run) -> bool:
    """Whether the run's step_breakdown is cheap: a small run, or already stored."""
    return int(run.manifest.get("world_size") or 0) <= BREAKDOWN_RANKS or run.is_stored("step_breakdown")


def sample_ranks(run: Run, tp: int, dp: int) -> list[int]:
    """Per stage: the TP group of data-parallel rank 0 and the DP group of tensor rank 0."""
    ranks = run.sql("SELECT rank, tp_rank, dp_rank, pp_rank FROM ranks")
    if ranks.empty or ranks[["tp_rank", "dp_rank"]].isna().any().any():
        return sorted(ranks["rank"].astype(int))[:MAX_SAMPLE] if not ranks.empty else []
    pick = (ranks["dp_rank"] == 0) | (ranks["tp_rank"] == 0)
    return sorted(int(r) for r in ranks.loc[pick, "rank"])


def event_classes(run: Run, ranks: list[int]) -> tuple[dict, dict]:
    """(stage, kind, name, phase) -> median seconds, and -> events: compute ops per event;
    collectives per instance, as the shortest member's duration (its transfer time)."""
    if not ranks:
        return {}, {}
    listed = ", ".join(str(r) for r in ranks)
    query = f"""
    WITH steady AS (SELECT step FROM step_phases WHERE NOT warmup),
    sampled AS (SELECT rank, COALESCE(pp_rank, 0) AS stage FROM ranks WHERE rank IN ({listed})),
    picked AS (
        SELECT s.stage, e.kind, e.name, COALESCE(e.phase, '') AS phase, e.dur, e.coll_group, e.coll_seq,
               e.coll_ranks
        FROM events AS e JOIN sampled AS s ON s.rank = e.rank
        WHERE e.rank IN ({listed}) AND e.kind IN ('compute', 'collective')
          AND e.step IN (SELECT step FROM steady)
    ),
    complete AS (  -- collectives with every member sampled: counted first, without the strings
        SELECT coll_group, coll_seq FROM picked
        WHERE kind = 'collective' AND coll_seq IS NOT NULL GROUP BY coll_group, coll_seq
        HAVING COUNT(*) >= COALESCE(MAX(coll_ranks), 0)
    ),
    instances AS (
        SELECT stage, kind, name, phase, dur FROM picked WHERE kind = 'compute' OR coll_seq IS NULL
        UNION ALL
        SELECT MIN(p.stage), 'collective', MIN(p.name), MIN(p.phase), MIN(p.dur)
        FROM picked AS p JOIN complete AS c
            ON c.coll_group IS NOT DISTINCT FROM p.coll_group AND c.coll_seq = p.coll_seq
        WHERE p.kind = 'collective' GROUP BY p.coll_group, p.coll_seq
    )
    SELECT stage, kind, name, phase, MEDIAN(dur) AS dur, COUNT(*) AS n FROM instances
    GROUP BY stage, kind, name, phase"""
    df: pd.DataFrame = run.sql(query)
    keys = list(zip(df["stage"].astype(int), df["kind"], df["name"], df["phase"]))
    return ({k: float(d) * S_PER_NS for k, d in zip(keys, df["dur"])}, {k: int(n) for k, n in zip(keys, df["n"])})


def measure(run: Run, tp: int, dp: int, *, need_breakdown: bool = False) -> Measured:
    step, steps = steady_step(run)
    ready = need_breakdown or breakdown_ready(run)
    parts = breakdown(run) if ready else None
    ranks = sample_ranks(run, tp, dp)
    classes, counts = event_classes(run, ranks)
    effective, noise = step_views(run)
    unwaited_s, spread = unwaited_step(run) if ready else (None, 0.0)
    return Measured(step, steps, parts, classes, counts, len(ranks), effective, noise, unwaited_s, spread)
