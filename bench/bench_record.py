"""Benchmark: cost of `trnprof record` on step time outside the profiler's window.

One CPU training job (an MLP, fixed work per step, no data loading) timed step by step by itself,
run three ways, alternated for --rounds rounds:

- plain: `python job.py`;
- before the window: `trnprof record --wait 100000 -- python job.py` (the window never opens:
  the optimizer hook, the profiler idling in its wait phase, the host-metrics sampler);
- after the window: `trnprof record --wait 0 --warmup 0 --active 2` (the window closes at step
  3 and the profiler stops; steps after --skip are timed).

Prints the median step time of each way (the fastest round's median) and the overheads. On a
loaded machine those whole-job figures are noise, so the costs are also measured part by part
(the fastest of many repetitions, which load inflates least): the optimizer-hook call while
waiting (paid on every step before the window; no profiler runs then), and one host-metrics sample (paid by
trnprof's own process every --interval, beside the job).

    python bench/bench_record.py [--steps 300] [--skip 20] [--rounds 3] [--width 512] [--parts-only]

Target (issue 25): <= 2 % on step time outside the active window.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

JOB = """
import json, sys, time, torch
torch.manual_seed(0)
steps, skip, width = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
model = torch.nn.Sequential(torch.nn.Linear(width, width), torch.nn.ReLU(), torch.nn.Linear(width, width))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(64, width)
times = []
for step in range(steps):
    start = time.perf_counter()
    model(x).square().mean().backward()
    optimizer.step()
    optimizer.zero_grad()
    times.append(time.perf_counter() - start)
print(json.dumps(times[skip:]))
"""

WAYS = {
    "plain": None,
    "before the window": ["--wait", "100000"],
    "after the window": ["--wait", "0", "--warmup", "0", "--active", "2"],
}


def run(way: list[str] | None, job: Path, args, folder: Path) -> float:
    command = [sys.executable, str(job), str(args.steps), str(args.skip), str(args.width)]
    if way is not None:
        out = folder / f"run-{len(list(folder.iterdir()))}"
        command = [sys.executable, "-m", "trnprof", "record", "--neuron", "off", "-o", str(out), *way, "--", *command]
    result = subprocess.run(command, capture_output=True, text=True, check=True)
    times = json.loads(next(line for line in result.stdout.splitlines() if line.startswith("[")))
    return statistics.median(times)


def _fastest(fn, reps: int, batches: int = 20) -> float:
    """Seconds per call: the fastest batch of `reps` calls."""
    import time

    best = float("inf")
    for _ in range(batches):
        start = time.perf_counter()
        for _ in range(reps):
            fn()
        best = min(best, (time.perf_counter() - start) / reps)
    return best


def _trace_writing(folder: Path, steps: int = 5, width: int = 512) -> None:
    """Seconds one rank spends writing its window's trace (once per rank, at the window's end),
    plain and with --stack, for the JOB's model: the fastest of three."""
    import time

    import torch
    from torch.profiler import ProfilerActivity, profile

    model = torch.nn.Sequential(torch.nn.Linear(width, width), torch.nn.ReLU(), torch.nn.Linear(width, width))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(64, width)
    for stack in (False, True):
        best, size = float("inf"), 0
        for _ in range(3):
            with profile(activities=[ProfilerActivity.CPU], with_stack=stack) as prof:
                for _ in range(steps):
                    model(x).square().mean().backward()
                    optimizer.step()
                    optimizer.zero_grad()
            path = folder / "trace.json.gz"
            start = time.perf_counter()
            prof.export_chrome_trace(str(path))
            best, size = min(best, time.perf_counter() - start), path.stat().st_size
        import gzip
        import json

        with gzip.open(path) as handle:
            events = len(json.load(handle)["traceEvents"])
        print(
            f"trace writing, {steps} steps{' with --stack' if stack else ''}: {best:.3f} s for {events:,} events "
            f"({best / events * 1e6:.0f} us per event), {size / 1e3:.0f} KB"
        )


def parts(folder: Path) -> None:
    import os

    import torch

    from trnprof.record.hostmetrics import Sampler
    from trnprof.record.runtime import JobLog, Session, Settings

    model = torch.nn.Linear(8, 8)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    session = Session(Settings(capture=str(folder), wait=10**9, warmup=0, active=1), manual=False)
    session.on_optimizer_step(optimizer)  # the first step starts the profiler: it waits from here
    hook = _fastest(lambda: session.on_optimizer_step(optimizer), 200)
    session.stop()
    log = JobLog(str(folder))
    log.gap = 0  # a reading at every step: the most the job's memory log costs a step
    rss = _fastest(log.step, 200)
    print(
        f"job memory log: {rss * 1e6:.2f} us per reading (one /proc/self/statm read), at most one per "
        f"{JobLog.MARK_GAP_NS / 1e6:.0f} ms: {100 * rss / (JobLog.MARK_GAP_NS / 1e9):.3f} % at most"
    )
    _trace_writing(folder)
    sampler = Sampler(folder, os.getpid(), 0.5)
    sampler.start()
    sampler.stop()
    sample = _fastest(sampler.sample, 1, 30)
    print(
        f"optimizer hook while waiting (no profiler yet): {hook * 1e6:.2f} us per step "
        f"({100 * hook / 0.010:.3f} % of a 10 ms step, {100 * hook / 0.001:.2f} % of a 1 ms step)"
    )
    print(
        f"one host-metrics sample: {sample * 1e3:.2f} ms, {100 * sample / 0.5:.2f} % of one core at the "
        f"default 0.5 s interval (trnprof's process, beside the job)"
    )


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--skip", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--width", type=int, default=512)
    parser.add_argument("--parts-only", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        parts(Path(tmp))
    if args.parts_only:
        return
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        job = folder / "job.py"
        job.write_text(JOB)
        runs = folder / "runs"
        runs.mkdir()
        best = {name: float("inf") for name in WAYS}
        for round_ in range(args.rounds):
            for name, way in WAYS.items():
                median = run(way, job, args, runs)
                best[name] = min(best[name], median)
                print(f"round {round_ + 1}: {name:<18} median step {median * 1e3:.3f} ms", flush=True)
    plain = best["plain"]
    for name, median in best.items():
        extra = "" if name == "plain" else f"  overhead {100 * (median / plain - 1):+.2f} %"
        print(f"{name:<18} median step {median * 1e3:.3f} ms{extra}")


if __name__ == "__main__":
    main()
