"""`trnprof info`: the facts about a run a perf engineer checks first."""

from __future__ import annotations

import math


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
    """Median and p95 step time over the steady steps (view `step_phases`), and the warm-up
    steps apart: one compile can outweigh every other step."""
    steady = run.sql(
        "SELECT COUNT(*) AS steps, "
        "PERCENTILE_CONT(0.5) WITHIN GROUP (ORDER BY dur) AS median, "
        "PERCENTILE_CONT(0.95) WITHIN GROUP (ORDER BY dur) AS p95 FROM step_phases WHERE NOT warmup").iloc[0]
    warmup = run.sql("SELECT step, dur, compiles FROM step_phases WHERE warmup ORDER BY step")
    times = None if not int(steady["steps"]) else {
        "median": _seconds(steady["median"]), "p95": _seconds(steady["p95"]), "steps": int(steady["steps"])}
    return times, [{"step": int(r.step), "seconds": _seconds(r.dur), "compiles": int(r.compiles)}
                   for r in warmup.itertuples()]


def mfu(run) -> float | None:
    """The run's MFU over its steady steps: the stdlib's `mfu` view, as the report and the
    compute.low_mfu rule state it."""
    value = run.sql("SELECT mfu FROM mfu").iloc[0, 0]
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else float(value)


def run_info(run) -> dict:
    manifest = run.manifest
    by_kind, by_name, span = _counts(run)
    world_size = manifest.get("world_size")
    if world_size is None:
        world_size = int(run.sql("SELECT COUNT(*) AS n FROM ranks").iloc[0, 0])
    step_time, warmup = _step_times(run)
    job = manifest.get("job", {})
    return {
        "run": str(run.path),
        "source": manifest.get("source", {}).get("collector"),
        "job": job,
        "world_size": world_size,
        "steps": (step_time or {}).get("steps", 0) + len(warmup),
        "warmup": warmup,
        "step_time_s": step_time,
        "throughput": throughput(job, step_time and step_time["median"]),
        "mfu": mfu(run),
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
