"""Capture the corpus of measured counterfactuals: each case runs bench/counterfactuals/job.py
twice under `trnprof record` — with its problem and without — and keeps both captures' raw
traces in tests/data/counterfactuals/CASE/{problem,clean}/ with the step times the job measured on
its own clock (case.json). What a fix is worth is then a measurement, not a model:
    expected gain = 1 - clean step / problem step   (medians over the profiled steps)
tests/rules/test_counterfactuals.py holds each finding's price to it.

    python bench/counterfactuals/capture.py [CASE ...]    # default: every case
Run it on a quiet machine (the captured step times are the ground truth): it prints the load.
Not in the corpus: gradients all-reduced after backward against DDP's overlapped buckets, because
on a CPU job overlap is not a fix (gloo's threads take the cores compute needs: DDP measured 24 %
slower than the unoverlapped job, 2026-12-05, idle machine); see docs/whatif.md, contention.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
JOB = Path(__file__).resolve().parent / "job.py"
OUT = ROOT / "tests" / "data" / "counterfactuals"
WAIT, WARMUP, ACTIVE = 2, 1, 5
STEPS = WAIT + WARMUP + ACTIVE + 3

# case -> (ranks, the problem's job options, the rule the problem must be found by, what it is)
CASES = {
    "slow_loader": (
        1,
        ["--load-ms", "40"],
        "input.starvation",
        "the loader sleeps 40 ms per batch on the training thread",
    ),
    "straggler_compute": (
        2,
        ["--straggle-rank", "1", "--straggle-kind", "compute", "--straggle-ms", "60"],
        "scale.straggler",
        "rank 1 computes 60 ms more per step (extra matmuls) before backward",
    ),
    "straggler_python": (
        2,
        ["--straggle-rank", "1", "--straggle-kind", "python", "--straggle-ms", "60"],
        "scale.straggler",
        "rank 1 runs 60 ms of pure Python per step before backward",
    ),
    "straggler_sleep": (
        2,
        ["--straggle-rank", "1", "--straggle-kind", "sleep", "--straggle-ms", "60"],
        "scale.straggler",
        "rank 1 sleeps 60 ms per step before backward",
    ),
    "straggler_pipeline": (
        2,
        ["--pipeline", "--straggle-rank", "0", "--straggle-kind", "compute", "--straggle-ms", "40"],
        "scale.straggler",
        "two pipeline stages; the first (rank 0) computes 40 ms more per step between forward and backward",
    ),
    "no_overlap": (
        2,
        ["--no-overlap"],
        "overlap.low_overlap_ratio",
        "gradients all-reduced one parameter at a time after backward; fixed: DDP all-reducing "
        "1 MB buckets as backward produces them",
    ),
    "one_bucket": (
        2,
        [],
        "overlap.low_overlap_ratio",
        "DDP's default 25 MB buckets hold all but the first MiB of the 14 MB of gradients: one "
        "all-reduce after backward; fixed: 1 MB buckets",
    ),
    "small_ops": (
        1,
        ["--small-ops", "1500"],
        "compute.small_ops",
        "1,500 tiny elementwise ops per step on the training thread",
    ),
}
STEP_LINE = re.compile(r"step-time rank=(\d+) step=(\d+) ms=([0-9.]+)")


# the clean job: the problem's options that shape the job (CLEAN_KEEPS), or where the fix is a
# setting rather than the problem's absence, the job with that setting (FIXED_BY)
CLEAN_KEEPS = ("--pipeline",)
FIXED_BY = {"no_overlap": ["--bucket-mb", "1"], "one_bucket": ["--bucket-mb", "1"]}


def clean_options(name: str) -> list[str]:
    options = CASES[name][1]
    return FIXED_BY.get(name) or [o for o in options if o in CLEAN_KEEPS]


def job_command(ranks: int, options: list[str]) -> list[str]:
    args = [str(JOB), "--steps", str(STEPS), *options]
    if ranks == 1:
        return [sys.executable, *args]
    return [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nproc-per-node",
        str(ranks),
        "--master-port",
        "29517",
        *args,
    ]


def record(ranks: int, options: list[str], workdir: Path) -> tuple[Path, list[float]]:
    """Record the job; its capture folder and its profiled steps' times (slowest rank per step)."""
    capture = workdir / "capture"
    cmd = [
        sys.executable,
        "-m",
        "trnprof",
        "record",
        "--neuron",
        "off",
        "--wait",
        str(WAIT),
        "--warmup",
        str(WARMUP),
        "--active",
        str(ACTIVE),
        "-o",
        str(workdir / "run"),
        "--capture",
        str(capture),
        "--",
        *job_command(ranks, options),
    ]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=workdir)
    if result.returncode != 0:
        raise SystemExit(f"capture failed: {' '.join(cmd)}\n{result.stdout}\n{result.stderr}")
    per_step: dict[int, float] = {}
    for rank, step, ms in STEP_LINE.findall(result.stdout + result.stderr):
        per_step[int(step)] = max(per_step.get(int(step), 0.0), float(ms))
    profiled = [per_step[s] for s in range(WAIT + WARMUP, WAIT + WARMUP + ACTIVE) if s in per_step]
    return capture, profiled


def keep_traces(capture: Path, dest: Path) -> list[str]:
    dest.mkdir(parents=True, exist_ok=True)
    names = []
    for trace in sorted(capture.glob("trace_rank*.json.gz")):
        shutil.copyfile(trace, dest / trace.name)
        names.append(trace.name)
    return names


def capture_case(name: str, repeats: int = 3) -> dict:
    """Problem and clean alternated `repeats` times (load drifts alike for both); the step times
    of all are pooled, and of each variant the capture whose own median is nearest the pooled one
    is kept (a trace is priced against the measurement, so it must be a typical capture: on a
    shared 2-core machine one capture in three can run its steps 25 % slower than the others)."""
    ranks, options, rule, what = CASES[name]
    case_dir = OUT / name
    shutil.rmtree(case_dir, ignore_errors=True)
    steps: dict[str, list[float]] = {"problem": [], "clean": []}
    kept: dict[str, list[tuple[list[float], Path]]] = {"problem": [], "clean": []}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(repeats):
            for variant, opts in (("problem", options), ("clean", clean_options(name))):
                workdir = Path(tmp) / f"{variant}{i}"
                workdir.mkdir()
                capture, profiled = record(ranks, opts, workdir)
                steps[variant] += profiled
                kept[variant].append((profiled, capture))
        traces = {}
        for variant, captures in kept.items():
            pooled = statistics.median(steps[variant])
            _, typical = min(captures, key=lambda c: abs(statistics.median(c[0] or [math.inf]) - pooled))
            traces[variant] = keep_traces(typical, case_dir / variant)
    measured = {v: {"step_ms": steps[v], "median_ms": statistics.median(steps[v]), "traces": traces[v]} for v in steps}
    gain = 1 - measured["clean"]["median_ms"] / measured["problem"]["median_ms"]
    doc = {
        "case": name,
        "ranks": ranks,
        "problem": what,
        "job": ["job.py", *options],
        "clean_job": ["job.py", *clean_options(name)],
        "rule": rule,
        "measured": measured,
        "expected_gain": round(gain, 4),
        "load": round(os.getloadavg()[0], 2),
    }
    (case_dir / "case.json").write_text(json.dumps(doc, indent=2) + "\n")
    return doc


def main(names: list[str]) -> None:
    print(f"load {os.getloadavg()[0]:.1f}")
    for name in names or list(CASES):
        doc = capture_case(name)
        p, c = doc["measured"]["problem"]["median_ms"], doc["measured"]["clean"]["median_ms"]
        print(
            f"{name:<18} problem {p:7.1f} ms  clean {c:7.1f} ms  fix worth {doc['expected_gain']:+.1%}  "
            f"(load {doc['load']:.1f})"
        )


if __name__ == "__main__":
    main(sys.argv[1:])
