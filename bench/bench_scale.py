"""Benchmark: `analyze` and `report` as the run grows, with default settings.

The runs come from the Trn1 execution model: llama2-7b on 32 x trn1.32xlarge (1,024 ranks) for
2, 10 and 30 steps (about 8.8M, 44M and 132M events). For each run, each as its own process with
its wall time and peak RSS: `trnprof analyze --format json` and `trnprof report` with an empty
`derived/` cache (cold), then again with the cache the first wrote (warm). Beside them, in the
same round, a plain scan of the events (`SELECT kind, COUNT(*), SUM(dur) FROM events GROUP BY
kind`) whose time is the machine's pace, so the ratio analyze / scan can be compared across
loads. Prints the slope (seconds per million events) and the targets.

    python bench/bench_scale.py [--runs DIR] [--steps 2,10,30] [--skip-report-cold]

Runs are simulated into DIR (default /tmp/trnprof-bench-scale) once and reused.
Targets (issue 24; issue 16 had report <= 90 s and growth <= 3.5x): at 10 steps cold analyze
<= 60 s and cold report <= 60 s, peak RSS <= 2.5 GB; at 30 steps the same memory ceiling and time
<= 3x the 10-step run; warm <= 25 % of cold. The machine's load average (1 minute) and each
process's CPU seconds are printed beside each figure: on a shared machine compare runs by "x scan"
and by CPU seconds, not by wall seconds.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from trnprof.derived import FOLDER
from trnprof.manifest import read_manifest

PRESET = "llama2-7b"
NODES = 32
TARGET_ANALYZE_S, TARGET_REPORT_S, TARGET_RSS_MB = 60.0, 60.0, 2500
TARGET_GROWTH, TARGET_WARM = 3.0, 0.25
SCAN = "SELECT kind, COUNT(*), SUM(dur) FROM events GROUP BY kind"


def measured(*args: str) -> tuple[float, float, float, float]:
    """Wall seconds, peak RSS (MB) of one `trnprof` process, the load average at its end and the
    process's CPU seconds (user + system, all its threads): on a shared machine the wall time
    follows the load, the CPU time much less."""
    env = {k: v for k, v in os.environ.items() if k not in ("TRNPROF_CACHE", "TRNPROF_MEMORY_LIMIT")}
    with tempfile.TemporaryFile() as errors:
        start = time.perf_counter()
        child = subprocess.Popen(
            [sys.executable, "-m", "trnprof", *args], stdout=subprocess.DEVNULL, stderr=errors, env=env
        )
        _, status, usage = os.wait4(child.pid, 0)  # this child's own peak RSS
        seconds = time.perf_counter() - start
        code = child.returncode = os.waitstatus_to_exitcode(status)
        if code not in (0, 1):  # 1: findings at or above --fail-on (not used here)
            errors.seek(0)
            sys.exit(f"trnprof {' '.join(args)} failed ({code}):\n{errors.read().decode()}")
    return seconds, usage.ru_maxrss / 1024, os.getloadavg()[0], usage.ru_utime + usage.ru_stime


def ensure_run(folder: Path, steps: int) -> Path:
    run = folder / f"{PRESET}-{NODES}n-{steps}s"
    if not (run / "trnprof.json").is_file():
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "trnprof",
                "simulate",
                "--preset",
                PRESET,
                "--set",
                f"cluster.nodes={NODES}",
                "--steps",
                str(steps),
                "-o",
                str(run),
                "--force",
            ],
            stdout=subprocess.DEVNULL,
        )
        if done.returncode:
            sys.exit(f"simulating {run} failed")
    return run


def measure_run(run: Path, page: Path, report_cold: bool) -> dict:
    shutil.rmtree(run / FOLDER, ignore_errors=True)
    figures = {"scan": measured("query", str(run), SCAN)}
    figures["analyze cold"] = measured("analyze", str(run), "--format", "json")
    figures["analyze warm"] = measured("analyze", str(run), "--format", "json")
    figures["report warm"] = measured("report", str(run), "-o", str(page), "--force")
    if report_cold:
        shutil.rmtree(run / FOLDER, ignore_errors=True)
        figures["report cold"] = measured("report", str(run), "-o", str(page), "--force")
    return figures


def verdict(ok: bool) -> str:
    return "ok" if ok else "MISSED"


def print_run(steps: int, events: int, figures: dict) -> None:
    scan_s = figures["scan"][0]
    print(f"\n{PRESET}, 1,024 ranks x {steps} steps: {events / 1e6:.1f}M events")
    for name, (seconds, rss, load, cpu) in figures.items():
        print(
            f"  {name:13s} {seconds:7.1f} s  {seconds / scan_s:6.1f}x scan  peak RSS {rss:6.0f} MB"
            f"  {seconds / events * 1e6:6.2f} s/M events  load {load:4.1f}  CPU {cpu:7.1f} s"
        )
    cold = figures["analyze cold"][0]
    print(
        f"  warm / cold analyze {figures['analyze warm'][0] / cold:.2f} "
        f"(target <= {TARGET_WARM:.2f}: {verdict(figures['analyze warm'][0] <= TARGET_WARM * cold)})"
    )
    if "report cold" in figures:
        ratio = figures["report warm"][0] / figures["report cold"][0]
        print(f"  warm / cold report  {ratio:.2f} (target <= {TARGET_WARM:.2f}: {verdict(ratio <= TARGET_WARM)})")
    rss = max(figure[1] for figure in figures.values())
    print(f"  peak RSS {rss:.0f} MB (target <= {TARGET_RSS_MB} MB: {verdict(rss <= TARGET_RSS_MB)})")
    if steps == 10:
        print(f"  analyze cold {cold:.1f} s (target <= {TARGET_ANALYZE_S:.0f} s: {verdict(cold <= TARGET_ANALYZE_S)})")
        if "report cold" in figures:
            report = figures["report cold"][0]
            print(
                f"  report cold {report:.1f} s "
                f"(target <= {TARGET_REPORT_S:.0f} s: {verdict(report <= TARGET_REPORT_S)})"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=Path, default=Path("/tmp/trnprof-bench-scale"))
    parser.add_argument("--steps", default="2,10,30", help="comma-separated step counts")
    parser.add_argument("--skip-report-cold", action="store_true", help="measure report only with a warm cache")
    options = parser.parse_args()
    options.runs.mkdir(parents=True, exist_ok=True)
    results = {}
    for steps in (int(s) for s in options.steps.split(",")):
        run = ensure_run(options.runs, steps)
        events = read_manifest(run)["counts"]["events"]
        figures = measure_run(run, options.runs / f"report-{steps}.html", not options.skip_report_cold)
        print_run(steps, events, figures)
        results[steps] = (events, figures)
    if 10 in results and 30 in results:
        (e10, f10), (e30, f30) = results[10], results[30]
        for name in ("analyze cold", "report cold"):
            if name in f10 and name in f30:
                growth = f30[name][0] / f10[name][0]
                print(
                    f"\n{name}: 30 steps / 10 steps = {growth:.2f}x for {e30 / e10:.2f}x the events "
                    f"(target <= {TARGET_GROWTH}x: {verdict(growth <= TARGET_GROWTH)}); "
                    f"CPU seconds {f30[name][3] / f10[name][3]:.2f}x"
                )
    print(f"\nmachine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
