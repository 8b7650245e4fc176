"""Benchmark: the issue-21 "Done when" on a job that recompiles every 4 steps, against the same
job clean (docs/whatif.md, *Recurring costs, checked end to end*).

Jobs: `tiny` (the preset, 12 steps) and Llama-2-7B on one trn1.32xlarge (tp 8, dp 4, global 16,
micro 1, selective checkpointing: job L of bench_whatif.py), 12 steps. For each, simulate it clean
and with `{kind: recompile, every: 4}` (seed 1), then check against the raw step and compile
events: `trnprof diff` flags the effective step significant and `--fail-if "step_time>+5%"` exits 1;
`info`'s effective throughput is within 2 % of samples / wall time; the compile finding's projected
effective step is within 10 % of the clean run's (wall time per step) and its gain within 10 points
of the share of wall time the recompiles cost.

    python bench/bench_recurring_costs.py [--jobs tiny,llama2-7b]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("TRNPROF_CACHE", "off")

import trnprof  # noqa: E402
from trnprof.api import open_run  # noqa: E402
from trnprof.collectors.trn1 import load_config, simulate  # noqa: E402
from trnprof.whatif.describe import expand  # noqa: E402

STEPS, EVERY = 12, 4
JOBS = {
    "tiny": {"preset": "tiny", "sets": []},
    "llama2-7b": {
        "preset": None,
        "sets": [
            "model=llama2-7b",
            "cluster.instance=trn1.32xlarge",
            "cluster.nodes=1",
            "parallel.tp=8",
            "batch.global=16",
            "batch.micro=1",
            "checkpointing=selective",
        ],
    },
}


def simulated(job: str, path: Path, faults=None) -> Path:
    spec = JOBS[job]
    overrides = [expand(s) for s in spec["sets"]] + [f"run.steps={STEPS}", "run.seed=1"]
    return simulate(load_config(preset=spec["preset"], overrides=overrides, faults=faults), path)


def raw(path: Path) -> dict:
    """From the raw events: samples per step, the steps after the first, their wall time (first
    start to last end), and the seconds of the recompiles after the first step (slowest rank)."""
    with open_run(path) as run:
        steps = run.sql(
            "SELECT step, MIN(ts) AS ts, MAX(ts + dur) AS end_ts FROM events WHERE kind = 'step' "
            "GROUP BY step ORDER BY step"
        )
        compile_s = run.sql(
            "SELECT COALESCE(SUM(s), 0) AS s FROM (SELECT step, MAX(dur) / 1e9 AS s FROM events "
            "WHERE kind = 'compile' AND step > 0 GROUP BY step)"
        ).iloc[0, 0]
        samples = run.manifest["job"]["samples_per_step"]
    later = steps[steps["step"] > steps["step"].min()]
    wall = (later["end_ts"].max() - later["ts"].min()) / 1e9
    return {"samples": samples, "steps": len(later), "wall_s": wall, "compile_s": float(compile_s)}


def check(job: str, folder: Path) -> list[tuple[str, str, bool]]:
    clean_path = simulated(job, folder / "clean")
    faulty_path = simulated(job, folder / "recompile", [{"kind": "recompile", "every": EVERY}])
    clean, faulty = raw(clean_path), raw(faulty_path)
    out = []
    document = trnprof.api.diff(clean_path, faulty_path)
    effective = document["step_time"]["effective"]
    out.append(
        (
            "diff: effective step",
            f"{effective['change']:+.1%}, significant {effective['significant']} "
            f"(typical {document['step_time']['change']:+.1%})",
            bool(effective["significant"]),
        )
    )
    gate = subprocess.run(
        [sys.executable, "-m", "trnprof", "diff", str(clean_path), str(faulty_path), "--fail-if", "step_time>+5%"],
        capture_output=True,
        text=True,
    )
    out.append(("gate step_time>+5%", f"exit {gate.returncode}", gate.returncode == 1))
    for name, path, truth in (("clean", clean_path, clean), ("recompile", faulty_path, faulty)):
        with open_run(path) as run:
            measured = run.info()["throughput"]["effective"]
        expected = truth["samples"] * truth["steps"] / truth["wall_s"]
        out.append(
            (
                f"info effective throughput, {name}",
                f"{measured:,.2f} vs samples/wall {expected:,.2f} ({measured / expected - 1:+.2%})",
                abs(measured / expected - 1) <= 0.02,
            )
        )
    [finding] = [f for f in trnprof.api.analyze(faulty_path).findings if f.name == "compile.recompilation"]
    projected, clean_step = finding.projected, clean["wall_s"] / clean["steps"]
    share = faulty["compile_s"] / faulty["wall_s"]
    out.append(
        (
            "projected effective step",
            f"{projected['effective_step_s']:.3f} s vs clean {clean_step:.3f} s "
            f"({projected['effective_step_s'] / clean_step - 1:+.2%})",
            abs(projected["effective_step_s"] / clean_step - 1) <= 0.10,
        )
    )
    out.append(
        (
            "projected gain",
            f"{projected['gain_fraction']:.1%} vs recompile share of wall {share:.1%}",
            abs(projected["gain_fraction"] - share) <= 0.10,
        )
    )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", default=",".join(JOBS))
    args = parser.parse_args()
    print("| job | check | figure | met |\n|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for job in args.jobs.split(","):
            started = time.perf_counter()
            for name, figure, met in check(job, Path(tmp) / job):
                print(f"| {job} | {name} | {figure} | {'yes' if met else 'NO'} |", flush=True)
            print(
                f"| {job} | seconds (2 simulations, diff, gate, info x2, analyze) | "
                f"{time.perf_counter() - started:.0f} | |",
                flush=True,
            )


if __name__ == "__main__":
    main()
