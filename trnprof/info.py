"""`trnprof info`: the facts about a run a perf engineer checks first."""

from __future__ import annotations

import math

import pandas as pd


def _seconds(ns) -> float | None:
    return None if ns is None or (isinstance(ns, float) and math.isnan(ns)) else float(ns) / 1e9


def _counts(run) -> tuple[dict, dict, dict | None]:
    """Events by kind, counters by name, time span: from the manifest's stats (gathered when the
    run was written), else by scanning."""
    stats = run.manifest.get("stats")
    if stats:
        by_kind, by_name = stats["events_by_kind"], stats["counters_by_name"]
        start, end = stats["start_ns"], stats["end_ns"]
    else:
        kinds = run.sql("SELECT kind, COUNT(*) AS n, MIN(ts) AS t0, MAX(ts + dur) AS t1 FROM events GROUP BY kind")
        names = run.sql("SELECT name, COUNT(*) AS n, MIN(ts) AS t0, MAX(ts) AS t1 FROM counters GROUP BY name")
        by_kind = dict(zip(kinds["kind"], map(int, kinds["n"])))
        by_name = dict(zip(names["name"], map(int, names["n"])))
        starts, ends = list(kinds["t0"]) + list(names["t0"]), list(kinds["t1"]) + list(names["t1"])
        start, end = (int(min(starts)), int(max(ends))) if starts else (None, None)
    span = None if start is None else {"start_ns": start, "end_ns": end, "seconds": (end - start) / 1e9}
    return dict(sorted(by_kind.items())), dict(sorted(by_name.items())), span


def _step_times(run) -> tuple[dict | None, list[dict]]:
    """The two views of the step time (stdlib view `step_time_views`): the typical (median) and
    p95 step over the steady steps, and the effective step, wall time per step with the recurring
    outliers; the warm-up steps apart: one compile can outweigh every other step."""
    views = run.sql("SELECT steps, typical, p95, wall, effective, outlier_share FROM step_time_views").iloc[0]
    warmup = run.sql("SELECT step, dur, compiles FROM step_phases WHERE warmup ORDER BY step")
    times = (
        None
        if not int(views["steps"])
        else {
            "median": _seconds(views["typical"]),
            "p95": _seconds(views["p95"]),
            "steps": int(views["steps"]),
            "effective": _seconds(views["effective"]),
            "wall": _seconds(views["wall"]),
            "outlier_share": _number(views["outlier_share"]),
        }
    )
    return times, [
        {"step": int(r.step), "seconds": _seconds(r.dur), "compiles": int(r.compiles)} for r in warmup.itertuples()
    ]


def _number(value) -> float | None:
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else float(value)


def outlier_steps(run) -> list[dict]:
    """The steady steps far longer than the typical one and what made each long (view
    `outlier_steps`)."""
    # the causes need the step breakdown (an interval sweep over every event): only when a slot is long
    long = run.sql("SELECT COUNT(*) FROM step_slots, step_time_views WHERE slot > typical * 1.1").iloc[0, 0]
    if not long:
        return []
    frame = run.sql("SELECT step, slot, excess, cause, rank, cause_ns FROM outlier_steps ORDER BY step")
    return [
        {
            "step": int(r.step),
            "seconds": _seconds(r.slot),
            "excess_s": _seconds(r.excess),
            "cause": r.cause,
            "rank": None if pd.isna(r.rank) else int(r.rank),
            "cause_s": _seconds(r.cause_ns),
        }
        for r in frame.itertuples()
    ]


def mfu_views(run) -> tuple[float | None, float | None]:
    """MFU on the typical and on the effective step (view `mfu`)."""
    row = run.sql("SELECT typical_mfu, effective_mfu FROM mfu").iloc[0]
    return _number(row["typical_mfu"]), _number(row["effective_mfu"])


def partial_steps(run) -> list[dict]:
    """The steps the trace cut at its start or end (view `recorded_steps`), left out of every
    statistic and rule."""
    frame = run.sql("SELECT rank, step, dur FROM recorded_steps WHERE partial ORDER BY step, rank")
    return [{"rank": int(r.rank), "step": int(r.step), "recorded_s": _seconds(r.dur)} for r in frame.itertuples()]


def run_info(run) -> dict:
    manifest = run.manifest
    by_kind, by_name, span = _counts(run)
    world_size = manifest.get("world_size")
    if world_size is None:
        world_size = int(run.sql("SELECT COUNT(*) AS n FROM ranks").iloc[0, 0])
    step_time, warmup = _step_times(run)
    job = manifest.get("job", {})
    typical_mfu, effective_mfu = mfu_views(run)
    return {
        "run": str(run.path),
        "source": manifest.get("source", {}).get("collector"),
        "job": job,
        "world_size": world_size,
        "steps": (step_time or {}).get("steps", 0) + len(warmup),
        "warmup": warmup,
        "partial_steps": partial_steps(run),
        "step_time_s": step_time,
        "throughput": _rates(job, step_time),
        "mfu": typical_mfu,
        "effective_mfu": effective_mfu,
        "outlier_steps": outlier_steps(run) if step_time else [],
        "events": {"total": sum(by_kind.values()), "by_kind": by_kind},
        "counters": {"total": sum(by_name.values()), "by_name": by_name},
        "time_span": span,
    }


def throughput(job: dict, step_seconds: float | None) -> dict | None:
    """Samples per second from the job's samples per step and the steady median step time."""
    samples = job.get("samples_per_step")
    if isinstance(samples, bool) or not isinstance(samples, (int, float)) or not samples or not step_seconds:
        return None  # a manifest may say anything: only a number of samples makes a rate
    try:
        value = samples / step_seconds
    except OverflowError:
        return None
    return {"value": value, "unit": str(job.get("throughput_unit", "samples/s"))} if math.isfinite(value) else None


def _rates(job: dict, step_time: dict | None) -> dict | None:
    """Throughput on the typical step (`value`) and on the effective step (`effective`: samples
    over wall time)."""
    typical = throughput(job, step_time and step_time["median"])
    if typical is None:
        return None
    effective = throughput(job, step_time["effective"])
    return {**typical, "effective": effective["value"] if effective else None}
