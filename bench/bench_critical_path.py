"""Benchmark: critical path + replay of a large simulated run (issue 26).

Simulates Llama-2-7B with tp 8 on NODES trn1.32xlarge (32 NeuronCores each) for STEPS steps,
then times, in-process with a fresh session and TRNPROF_CACHE=off: the critical path of every
step (`critical_path_steps`, one pass over the run), and the critical path and one replay with a
scale (`whatif --scale collective=0`) from one graph build per batch (`Replayer.replay(...,
base_path=True)`), and reports peak RSS. The target (issue 26) is 1,024 ranks x 10 steps
(`--nodes 32`) in <= 60 s within the default memory budget. The machine may be shared: each row
gives the 1-minute load average and the machine's pace at the time (millions of int64 keys
sorted per second by numpy, one core), to compare figures taken under different load, and the
process's CPU seconds (user + system, all threads) of each measure, which the load moves less.

With `--job scale`, the runs are bench/bench_scale.py's instead (`trnprof simulate --preset
llama2-7b --set cluster.nodes=N`: the README's 1,024-rank x 10-step run at `--nodes 32`, 43.9M
events, 4.4M a step); the target there (issue 39) is the critical path of every step in <= 90 s
within 2.5 GB, each figure printed beside its ratio to the target.

    python bench/bench_critical_path.py [--nodes 2,4,8] [--steps 10] [--keep DIR] [--job tp8|scale]
"""

from __future__ import annotations

import argparse
import os
import resource
import tempfile
import time
from pathlib import Path

os.environ.setdefault("TRNPROF_CACHE", "off")

import numpy as np  # noqa: E402

from trnprof.api import open_run  # noqa: E402
from trnprof.collectors.trn1.simulate import simulate  # noqa: E402
from trnprof.critical_path import tables  # noqa: E402
from trnprof.critical_path.compute import Replayer  # noqa: E402
from trnprof.model.config import load_config  # noqa: E402

JOB = [
    "model=llama2-7b",
    "cluster.instance=trn1.32xlarge",
    "parallel.tp=8",
    "batch.micro=1",
    "memory.activation_checkpointing=selective",
]


TARGET_PATH_S, TARGET_RSS_MB = 90.0, 2500  # issue 39, the scale job's 1,024 ranks x 10 steps


def _run(folder: Path, nodes: int, steps: int, job: str = "tp8") -> Path:
    path = folder / (f"cp-{nodes}n-{steps}s" if job == "tp8" else f"llama2-7b-{nodes}n-{steps}s")
    if not (path / "trnprof.json").exists():
        overrides = [*JOB, f"batch.global={16 * nodes}"] if job == "tp8" else []
        config = load_config(
            preset=None if job == "tp8" else "llama2-7b",
            overrides=[*overrides, f"cluster.nodes={nodes}", f"run.steps={steps}"],
        )
        simulate(config, path, overwrite=True)
    return path


def pace() -> float:
    """Millions of int64 keys numpy sorts per second here, now (the machine's pace under its load)."""
    keys = np.random.default_rng(0).integers(0, 1 << 40, 2_000_000)
    started = time.perf_counter()
    np.sort(keys, kind="stable")
    return len(keys) / (time.perf_counter() - started) / 1e6


def _cpu() -> float:
    used = os.times()
    return used.user + used.system


def _time(path: Path) -> dict:
    with open_run(path) as run:
        events = int(run.sql("SELECT COUNT(*) AS n FROM events")["n"][0])
        started, cpu = time.perf_counter(), _cpu()
        steps = run.sql(f"SELECT * FROM {tables.SUMMARY}")
        path_s, path_cpu = time.perf_counter() - started, _cpu() - cpu
    with open_run(path) as run:
        started, cpu = time.perf_counter(), _cpu()
        replayed = Replayer(run).replay(["collective=0"], base_path=True)
        both_s, both_cpu = time.perf_counter() - started, _cpu() - cpu
    return {
        "events": events,
        "steps": len(steps),
        "nodes": replayed.nodes,
        "path_s": path_s,
        "both_s": both_s,
        "path_cpu": path_cpu,
        "both_cpu": both_cpu,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", default="2,4,8", help="comma-separated node counts (32 ranks each)")
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--keep", type=Path, help="folder to build (or reuse) the runs in")
    parser.add_argument(
        "--job",
        choices=("tp8", "scale"),
        default="tp8",
        help="tp8: llama2-7b tp 8, 16 samples a node; scale: bench_scale.py's run (its preset's batch)",
    )
    args = parser.parse_args()
    folder = args.keep or Path(tempfile.mkdtemp(prefix="bench-cp-"))
    folder.mkdir(parents=True, exist_ok=True)
    print(
        f"{'ranks':>6} {'events':>11} {'nodes':>11} {'path s':>7} {'path+replay s':>14} {'CPU s':>12} "
        f"{'peak RSS MB':>12} {'load':>5} {'pace M/s':>9}"
    )
    for nodes in (int(n) for n in args.nodes.split(",")):
        run = _run(folder, nodes, args.steps, args.job)
        load, speed = os.getloadavg()[0], pace()
        result = _time(run)
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        cpu = f"{result['path_cpu']:.1f} / {result['both_cpu']:.1f}"
        print(
            f"{32 * nodes:>6} {result['events']:>11,} {result['nodes']:>11,} {result['path_s']:>7.1f} "
            f"{result['both_s']:>14.1f} {cpu:>12} {rss:>12.0f} {max(load, os.getloadavg()[0]):>5.1f} {speed:>9.1f}",
            flush=True,
        )
        if args.job == "scale":
            print(
                f"{'':>6} target: path <= {TARGET_PATH_S:.0f} s ({result['path_s'] / TARGET_PATH_S:.2f}x), "
                f"peak RSS <= {TARGET_RSS_MB} MB ({rss / TARGET_RSS_MB:.2f}x)",
                flush=True,
            )


if __name__ == "__main__":
    main()
