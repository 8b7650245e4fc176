"""Every read the report makes: queries of the stdlib views (and of the run's tables for the
timeline and queue depth), shaped for drawing, with aggregation or sampling past the budgets of
`limits.py`. Each function returns frames in display units (ms, GB/s, GiB) and the notes that
tell the page what was aggregated or sampled. No analysis here: the views decide what time is,
which steps are steady state and what a rank is compared with.
"""

from __future__ import annotations

import math

import pandas as pd

from ..units import GIB
from . import limits

MS = 1e6  # ns per ms


def _bin(count: int, budget: int) -> int:
    """Group size that brings `count` items within `budget` bins."""
    return max(1, math.ceil(count / budget))


def _ranges(lo: int, hi: int, size: int, what: str, how: str) -> str:
    return f"{what} {lo:,}-{hi:,} shown in groups of {size:,} ({how})"


# -- header ------------------------------------------------------------------------------------


def instance_type(run) -> str | None:
    """The run's instance type (view `run_hardware`)."""
    value = run.sql("SELECT instance_type FROM run_hardware").iloc[0, 0]
    return None if value is None or pd.isna(value) else str(value)


# -- step breakdown ----------------------------------------------------------------------------


def breakdown_by_rank(run) -> tuple[pd.DataFrame, list[str]]:
    """Mean time per steady-state step of each bucket of `steady_breakdown`, per rank (or group
    of ranks), ms. Warm-up steps (view `step_phases`) are left out: one compile can outweigh
    every other step (the compile rules report it) and would hide the steady state."""
    shape = run.sql("""SELECT (SELECT COUNT(DISTINCT rank) FROM steady_breakdown) AS ranks,
                              (SELECT COUNT(*) FROM step_phases WHERE warmup) AS warmup""").iloc[0]
    n, warmup = int(shape["ranks"]), int(shape["warmup"])
    if n == 0:
        return pd.DataFrame(), []
    size = _bin(n, limits.MAX_RANK_BARS)
    frame = run.sql(f"""
        SELECT MIN(rank) AS rank_lo, MAX(rank) AS rank_hi, COUNT(*) AS rank_steps,
               AVG(dur) / {MS} AS step, AVG(compute) / {MS} AS compute,
               AVG(exposed_comm) / {MS} AS exposed_comm, AVG(input_wait) / {MS} AS input_wait,
               AVG(host_sync) / {MS} AS host_sync, AVG(host) / {MS} AS host,
               AVG(transfer_exposed) / {MS} AS transfer_exposed,
               AVG(compile) / {MS} AS compile, AVG(idle) / {MS} AS idle
        FROM steady_breakdown GROUP BY rank // {size} ORDER BY rank_lo""")
    notes = []
    if warmup:
        notes.append(
            f"mean over the steady-state steps ({warmup:,} warm-up "
            f"step{'s' if warmup > 1 else ''} left out: view step_phases)"
        )
    if size > 1:
        notes.append(_ranges(int(frame.rank_lo.min()), int(frame.rank_hi.max()), size, "ranks", "mean over the group"))
    return frame.round(4), notes


# -- timeline ----------------------------------------------------------------------------------


def representative_step(run) -> dict | None:
    """The step whose time is nearest the median step time (lowest step on ties)."""
    frame = run.sql("""
        WITH m AS (SELECT PERCENTILE_CONT(0.5) WITHIN GROUP (ORDER BY dur) AS median FROM step_times)
        SELECT step, dur, median FROM step_times, m ORDER BY ABS(dur - median), step LIMIT 1""")
    if frame.empty:
        return None
    row = frame.iloc[0]
    return {"step": int(row["step"]), "dur_ms": float(row["dur"]) / MS, "median_ms": float(row["median"]) / MS}


def timeline_ranks(run, step: int) -> list[tuple[int, str]]:
    """(rank, role) of the ranks drawn: the slowest in the step, the fastest, the median one and
    rank 0, without repeats."""
    frame = run.sql(
        """
        SELECT s.rank, s.dur, COALESCE(b.compute, 0) AS compute FROM steps s
        LEFT JOIN step_breakdown b ON b.rank = s.rank AND b.step = s.step
        WHERE s.step = ? ORDER BY s.dur, compute, s.rank""",
        [step],
    )
    if frame.empty:
        return []
    ranks = [int(r) for r in frame["rank"]]
    picks = [(ranks[-1], "slowest"), (ranks[0], "fastest"), (ranks[len(ranks) // 2], "median"), (min(ranks), "first")]
    chosen, seen = [], set()
    for rank, role in picks:
        if rank not in seen:
            seen.add(rank)
            chosen.append((rank, role))
    return chosen[: limits.TIMELINE_RANKS]


def timeline_events(run, step: int, ranks: list[int]) -> tuple[pd.DataFrame, list[str]]:
    """Events of `ranks` overlapping their window of `step`, times in ms from the earliest of
    those windows; past the budget each lane's longest events are kept in turn (every lane's
    longest first, then every lane's second longest, ...), so no lane disappears: a lane of
    many short collectives stays beside one of a few long ops."""
    in_list = ", ".join(str(int(r)) for r in ranks)
    window = f"SELECT rank, ts, end_ts FROM steps WHERE step = {int(step)} AND rank IN ({in_list})"
    where = f"""FROM events e JOIN ({window}) w ON e.rank = w.rank
                WHERE e.ts < w.end_ts AND e.ts + e.dur > w.ts"""
    total = int(run.sql(f"SELECT COUNT(*) {where}").iloc[0, 0])
    origin = f"(SELECT MIN(ts) FROM ({window}))"
    frame = run.sql(f"""
        SELECT rank, kind, lane, name, phase, start, "end", dur FROM (
            SELECT e.rank, e.kind, e.lane, e.name, e.phase, e.ts,
                   (e.ts - {origin}) / {MS} AS start, (e.ts + e.dur - {origin}) / {MS} AS "end",
                   e.dur / {MS} AS dur,
                   ROW_NUMBER() OVER (PARTITION BY e.rank, e.lane ORDER BY e.dur DESC, e.ts) AS k
            {where}) AS ranked
        ORDER BY k, dur DESC, rank, ts LIMIT {limits.MAX_TIMELINE_EVENTS}""")
    notes = []
    if total > len(frame):
        lanes = frame.groupby(["rank", "lane"]).size()
        notes.append(
            f"{len(frame):,} of {total:,} events drawn, the longest of each of the {len(lanes):,} lanes "
            f"in turn (at least {int(lanes.min()):,} per lane); {total - len(frame):,} shorter events left out"
        )
    return frame.round(5), notes


# -- collectives -------------------------------------------------------------------------------


def collective_counts(run) -> dict:
    row = run.sql("""SELECT COUNT(*) AS instances, COUNT(bytes) AS with_bytes,
                            COUNT(*) FILTER (WHERE busbw > 0) AS with_busbw FROM collectives""").iloc[0]
    return {k: int(v) for k, v in row.items()}


def collective_points(run, total: int) -> tuple[pd.DataFrame, list[str]]:
    """Achieved bus bandwidth against message size, one point per collective instance; past
    the budget a deterministic uniform sample (by a hash of the instance's identity)."""
    frame = run.sql(f"""
        SELECT coll_op, coll_group, name, step, group_size, bytes,
               busbw / 1e9 AS busbw_gbs, transfer_dur / {MS} AS transfer_ms,
               arrival_skew / {MS} AS skew_ms
        FROM collectives WHERE busbw > 0 AND bytes > 0
        ORDER BY hash(coll_group, coll_seq, coll_op, first_start, name)
        LIMIT {limits.MAX_COLLECTIVE_POINTS}""")
    notes = []
    if total > len(frame):
        notes.append(f"{len(frame):,} of {total:,} collective instances drawn (uniform sample)")
    return frame.round(5), notes


def collective_reference_peaks(run) -> pd.DataFrame:
    """The peak bus bandwidth collectives.low_bus_bandwidth (CO001) judges each drawn group
    against (view `collective_peaks`), one row per distinct peak: nodes the groups span, peak in
    GB/s, how many groups and which (the first few)."""
    return run.sql("""
        WITH drawn AS (
            SELECT DISTINCT coll_group FROM collectives WHERE busbw > 0 AND bytes > 0 AND group_size > 1
        )
        SELECT p.nodes, p.peak_busbw / 1e9 AS gbs, COUNT(*) AS n_groups,
               STRING_AGG(p.coll_group, ', ' ORDER BY p.coll_group) AS coll_groups
        FROM collective_peaks AS p JOIN drawn AS d ON d.coll_group = p.coll_group
        WHERE p.peak_busbw IS NOT NULL
        GROUP BY p.nodes, p.peak_busbw
        ORDER BY gbs DESC, p.nodes""")


# -- memory ------------------------------------------------------------------------------------


def memory_rank(run) -> dict | None:
    """The rank with the highest device-memory peak, with its capacity."""
    frame = run.sql("SELECT rank, peak_bytes, capacity_bytes FROM memory_peak ORDER BY peak_bytes DESC, rank LIMIT 1")
    if frame.empty:
        return None
    row = frame.iloc[0]
    capacity = row["capacity_bytes"]
    return {
        "rank": int(row["rank"]),
        "peak_gib": float(row["peak_bytes"]) / GIB,
        "capacity_gib": None if pd.isna(capacity) else float(capacity) / GIB,
    }


def memory_series(run, rank: int) -> tuple[pd.DataFrame, list[str]]:
    """Residency by category of one rank over time (s from its first sample), GiB; past the
    budget one sample per time bin, the bin's highest total, so the peak stays drawn."""
    bins = limits.MAX_TIME_POINTS
    frame = run.sql(f"""
        WITH t AS (SELECT ts, bytes FROM memory_totals WHERE rank = {int(rank)}),
        span AS (SELECT MIN(ts) AS t0, MAX(ts) - MIN(ts) + 1 AS width, COUNT(*) AS n FROM t),
        ranked AS (
            SELECT t.ts, ROW_NUMBER() OVER (
                PARTITION BY CASE WHEN span.n <= {bins} THEN t.ts
                                  ELSE CAST(FLOOR((t.ts - span.t0) * {bins}.0 / span.width) AS BIGINT) END
                ORDER BY t.bytes DESC, t.ts) AS pick
            FROM t, span)
        SELECT (m.ts - span.t0) / 1e9 AS time_s, m.category, m.bytes / {GIB} AS gib, span.n AS samples
        FROM memory_timeline m JOIN ranked r ON m.ts = r.ts AND r.pick = 1, span
        WHERE m.rank = {int(rank)} ORDER BY time_s, m.category""")
    notes = []
    if not frame.empty:
        samples = int(frame["samples"].iloc[0])
        drawn = frame["time_s"].nunique()
        if samples > drawn:
            notes.append(
                f"{drawn:,} of {samples:,} samples drawn (the highest total in each of "
                f"{bins:,} time bins, so peaks stay visible)"
            )
    return frame.drop(columns="samples").round(6), notes


# -- stragglers --------------------------------------------------------------------------------


def straggler_cells(run) -> tuple[pd.DataFrame, list[str]]:
    """Per rank and steady step, how far step time and compute time sit from the median of the
    rank's peers (view `rank_deviation`: same stage, same step; +0.1 = 10 % slower); past the
    budget ranks and steps are grouped and each cell shows the group's largest deviation."""
    shape = run.sql(
        "SELECT COUNT(DISTINCT rank) AS ranks, MIN(rank) AS r0, MAX(rank) AS r1, "
        "MIN(step) AS s0, MAX(step) AS s1 FROM rank_deviation"
    ).iloc[0]
    if int(shape["ranks"]) == 0:
        return pd.DataFrame(), []
    r0, r1, s0, s1 = (int(shape[k]) for k in ("r0", "r1", "s0", "s1"))
    rank_size = _bin(r1 - r0 + 1, limits.MAX_HEATMAP_RANKS)
    step_size = _bin(s1 - s0 + 1, limits.MAX_HEATMAP_STEPS)
    frame = run.sql(f"""
        SELECT {r0} + (rank - {r0}) // {rank_size} * {rank_size} AS rank_lo,
               {s0} + (step - {s0}) // {step_size} * {step_size} AS step_lo,
               MAX(step_dev) AS step_dev, MAX(compute_dev) AS compute_dev
        FROM rank_deviation GROUP BY 1, 2 ORDER BY 1, 2""")
    frame["rank_end"] = frame["rank_lo"] + rank_size
    frame["step_end"] = frame["step_lo"] + step_size
    notes = []
    if rank_size > 1:
        notes.append(_ranges(r0, r1, rank_size, "ranks", "largest deviation of the group"))
    if step_size > 1:
        notes.append(_ranges(s0, s1, step_size, "steps", "largest deviation of the group"))
    return frame.round(4), notes


# -- input pipeline ----------------------------------------------------------------------------


def input_presence(run) -> dict:
    """What the input section can draw from: input events (counted from the stored per-kind
    totals, not by scanning the events), queue-depth samples and rank-steps."""
    row = run.sql("""SELECT (SELECT COALESCE(SUM(n), 0) FROM event_stats WHERE kind = 'input') AS input_events,
                            (SELECT COUNT(*) FROM counters WHERE name = 'input.queue_depth') AS queue_samples,
                            (SELECT COUNT(*) FROM step_breakdown) AS rank_steps""").iloc[0]
    return {k: int(v) for k, v in row.items()}


def input_wait_by_step(run) -> tuple[pd.DataFrame, list[str]]:
    """Input wait per step over ranks (mean and worst rank), ms; steps grouped past the budget."""
    span = run.sql("SELECT MIN(step) AS s0, MAX(step) AS s1 FROM step_breakdown").iloc[0]
    s0, s1 = int(span["s0"]), int(span["s1"])
    size = _bin(s1 - s0 + 1, limits.MAX_STEP_POINTS)
    frame = run.sql(f"""
        SELECT {s0} + (step - {s0}) // {size} * {size} AS step,
               AVG(input_wait) / {MS} AS mean_wait, MAX(input_wait) / {MS} AS worst_rank_wait,
               SUM(input_wait) / SUM(dur) AS share
        FROM step_breakdown GROUP BY 1 ORDER BY 1""")
    notes = [_ranges(s0, s1, size, "steps", "mean and worst over the group")] if size > 1 else []
    return frame.round(5), notes


def queue_depth(run) -> tuple[pd.DataFrame, list[str]]:
    """The `input.queue_depth` counter over time (s from its first sample): mean and lowest over
    ranks per time bin."""
    bins = limits.MAX_TIME_POINTS
    frame = run.sql(f"""
        WITH q AS (SELECT rank, ts, value FROM counters WHERE name = 'input.queue_depth'),
        span AS (SELECT MIN(ts) AS t0, MAX(ts) - MIN(ts) + 1 AS width, COUNT(DISTINCT ts) AS n FROM q),
        b AS (SELECT q.*, CASE WHEN span.n <= {bins} THEN q.ts - span.t0
                               ELSE CAST(FLOOR((q.ts - span.t0) * {bins}.0 / span.width) AS BIGINT)
                                    * span.width // {bins} END AS t, span.n AS n
              FROM q, span)
        SELECT t / 1e9 AS time_s, AVG(value) AS mean_depth, MIN(value) AS lowest_depth, MAX(n) AS n
        FROM b GROUP BY t ORDER BY t""")
    notes = []
    if not frame.empty and int(frame["n"].iloc[0]) > len(frame):
        notes.append(
            f"queue depth in {len(frame):,} time bins (of {int(frame['n'].iloc[0]):,} sample times): "
            "mean and lowest over ranks and the bin"
        )
    return frame.drop(columns="n").round(6), notes
