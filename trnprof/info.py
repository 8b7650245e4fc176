"""`trnprof info`: the facts about a run a perf engineer checks first."""

from __future__ import annotations

import math


def _seconds(ns) -> float | None:
    return None if ns is None or (isinstance(ns, float) and math.isnan(ns)) else float(ns) / 1e9


def run_info(run) -> dict:
    manifest = run.manifest
    by_kind = run.sql("SELECT kind, COUNT(*) AS n, MIN(ts) AS t0, MAX(ts + dur) AS t1 "
                      "FROM events GROUP BY kind ORDER BY kind")
    counters = run.sql("SELECT name, COUNT(*) AS n, MIN(ts) AS t0, MAX(ts) AS t1 "
                       "FROM counters GROUP BY name ORDER BY name")
    times = run.sql(
        "SELECT COUNT(*) AS steps, "
        "PERCENTILE_CONT(0.5) WITHIN GROUP (ORDER BY dur) AS median, "
        "PERCENTILE_CONT(0.95) WITHIN GROUP (ORDER BY dur) AS p95 FROM step_times").iloc[0]
    world_size = manifest.get("world_size")
    if world_size is None:
        world_size = int(run.sql("SELECT COUNT(*) AS n FROM ranks").iloc[0, 0])

    steps = int(times["steps"])
    median = _seconds(times["median"]) if steps else None
    step_time = {"median": median, "p95": _seconds(times["p95"])} if steps else None
    starts = list(by_kind["t0"]) + list(counters["t0"])
    ends = list(by_kind["t1"]) + list(counters["t1"])
    span = None
    if starts:
        start, end = int(min(starts)), int(max(ends))
        span = {"start_ns": start, "end_ns": end, "seconds": (end - start) / 1e9}

    job = manifest.get("job", {})
    return {
        "run": str(run.path),
        "source": manifest.get("source", {}).get("collector"),
        "job": job,
        "world_size": world_size,
        "steps": steps,
        "step_time_s": step_time,
        "throughput": _throughput(job, median),
        "mfu": _mfu(job, median),
        "events": {"total": int(by_kind["n"].sum()), "by_kind": dict(zip(by_kind["kind"], map(int, by_kind["n"])))},
        "counters": {"total": int(counters["n"].sum()), "by_name": dict(zip(counters["name"], map(int, counters["n"])))},
        "time_span": span,
    }


def _throughput(job: dict, step_seconds: float | None) -> dict | None:
    """Samples per second from the job's samples per step, when the collector knows them."""
    samples = job.get("samples_per_step")
    if not samples or not step_seconds:
        return None
    return {"value": samples / step_seconds, "unit": job.get("throughput_unit", "samples/s")}


def _mfu(job: dict, step_seconds: float | None) -> float | None:
    """Model FLOPs utilisation: the model's FLOPs per step over the cluster's peak FLOPs."""
    flops, peak = job.get("model_flops_per_step"), job.get("peak_flops_per_s")
    if not flops or not peak or not step_seconds:
        return None
    return flops / (step_seconds * peak)
