"""Benchmark: the what-if validation table and the fit + predict time (issue 10).

1. Validation. For each job (A: the tiny decoder on 2 x trn1.2xlarge; L: Llama-2-7B on one
   trn1.32xlarge, tp 8), each perturbation of the free parameters (trnprof/whatif/validate.py:
   every calibration value x0.7 / x1.3, efficiencies x1.15 where x1.3 would exceed 1) and each
   kind of change: simulate the job, `whatif --set change`, simulate job + change under the same
   perturbed parameters, and compare the predicted with the simulated (measured) steady step.
   Then each injected fault removed with `faults=[]` against the clean run.
2. Time. whatif (fit + predict, in-process, fresh session, TRNPROF_CACHE=off) on a single-node
   run and on a 1,024-rank run, side by side with `trnprof info` of the same run (which reads
   the steady steps too), and their ratio.

    python bench/bench_whatif.py [--keep DIR] [--skip-big] [--jobs A,L]

Targets: median |error| <= 5 % over the table; whatif <= 3 s single-node, <= 30 s at 1,024 ranks.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

os.environ.setdefault("TRNPROF_CACHE", "off")

from trnprof.api import open_run  # noqa: E402
from trnprof.collectors.trn1.simulate import simulate  # noqa: E402
from trnprof.model.config import load_config  # noqa: E402
from trnprof.whatif.document import whatif  # noqa: E402
from trnprof.whatif.validate import CHANGES, FAULTS, JOB_A, PERTURBATIONS, compare, perturbed, simulate_job  # noqa: E402

JOB_L = [
    "model=llama2-7b",
    "cluster.instance=trn1.32xlarge",
    "cluster.nodes=1",
    "parallel.tp=8",
    "batch.global=16",
    "batch.micro=1",
    "checkpointing=selective",
]
CHANGES_L = {
    "nodes": ["nodes=2"],
    "tp": ["tp=16"],
    "pp": ["pp=2"],
    "micro-batch": ["micro=2"],
    "global batch": ["global=32"],
    "ZeRO-1": ["zero1=true"],
    "overlap off": ["overlap=false"],
    "loader workers": ["workers=0"],
    "sequence length": ["seq_len=2048"],
    "precision": ["precision=fp32"],
    "bucket size": ["bucket_mb=10"],
    "activation checkpointing": ["checkpointing=full"],
}
FAULTS_L = {
    "straggler": "{kind: straggler, rank: 3, slowdown: 1.3}",
    "slow loader": "{kind: slow_loader, factor: 50}",
    "no overlap": "{kind: no_overlap}",
}
JOBS = {"A": (JOB_A, CHANGES, FAULTS, 5), "L": (JOB_L, CHANGES_L, FAULTS_L, 4)}
BIG = [
    "model=llama2-7b",
    "cluster.instance=trn1.32xlarge",
    "cluster.nodes=32",
    "parallel.tp=8",
    "batch.global=1024",
    "batch.micro=1",
    "checkpointing=selective",
]


def table(name: str, tmp: Path) -> list[dict]:
    job, changes, faults, steps = JOBS[name]
    rows = []
    for pert in PERTURBATIONS:
        run = simulate_job(job, pert, tmp / f"{name}-{pert}", steps=steps)
        for kind, change in changes.items():
            row = compare(run, job, change, pert, steps=steps, workdir=tmp)
            rows.append({"job": name, "perturbation": pert, "kind": kind, **row})
            _print(rows[-1])
        for kind, fault in faults.items():
            faulty = simulate_job(job, pert, tmp / f"{name}-{pert}-fault", faults=fault, steps=steps)
            row = compare(faulty, job, ["faults=[]"], pert, faults=fault, steps=steps, workdir=tmp)
            rows.append({"job": name, "perturbation": pert, "kind": f"remove {kind}", **row})
            _print(rows[-1])
    return rows


def _print(row: dict) -> None:
    inside = row["band"]["low_s"] <= row["simulated_s"] <= row["band"]["high_s"]
    print(
        f"| {row['job']} | {row['perturbation']} | {row['kind']} | `{row['change']}` | "
        f"{row['predicted_s'] * 1e3:.3f} | {row['simulated_s'] * 1e3:.3f} | {row['error']:+.2%} | "
        f"{'yes' if inside else 'no'} | {'yes' if row['fits'] else 'no'} |",
        flush=True,
    )


def _fresh_info(path: Path) -> float:
    start = time.perf_counter()
    with open_run(path) as run:
        run.info()
    return time.perf_counter() - start


def _fresh_whatif(path: Path, change: list[str]) -> float:
    start = time.perf_counter()
    whatif(path, change)
    return time.perf_counter() - start


def timing(label: str, path: Path, change: list[str], target: float) -> None:
    w = _fresh_whatif(path, change)
    i = _fresh_info(path)
    verdict = "met" if w <= target else "MISSED"
    print(
        f"{label}: whatif {w:.2f} s (target <= {target:.0f} s: {verdict}), info {i:.2f} s, ratio {w / i:.2f}",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, help="folder to build (or reuse) the 1,024-rank run in")
    parser.add_argument("--skip-big", action="store_true", help="skip the 1,024-rank timing")
    parser.add_argument("--jobs", default="A,L", help="validation jobs, comma-separated (A, L)")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        print("| job | perturbation | kind | change | predicted ms | simulated ms | error | in band | fits |")
        print("|---|---|---|---|---|---|---|---|---|")
        for name in filter(None, args.jobs.split(",")):
            rows += table(name, Path(tmp))
        if rows:
            errors = [abs(r["error"]) for r in rows]
            kinds = {r["kind"] for r in rows if not r["kind"].startswith("remove")}
            print(
                f"\n{len(rows)} cases, {len(kinds)} kinds of change: median |error| {statistics.median(errors):.2%}, "
                f"max {max(errors):.2%}, within 5 %: {sum(e <= 0.05 for e in errors)}/{len(rows)}, "
                f"truth in band: {sum(r['band']['low_s'] <= r['simulated_s'] <= r['band']['high_s'] for r in rows)}"
                f"/{len(rows)}"
            )
        single = simulate_job(JOB_L, "A", Path(tmp) / "single", steps=4)
        timing("single node (32 ranks)", single, ["tp=16"], 3.0)
    if args.skip_big:
        return
    folder = args.keep or Path(tempfile.mkdtemp())
    big = folder / "whatif-big-1024"
    if not big.exists():
        start = time.perf_counter()
        sets = BIG + perturbed("A") + ["run.steps=4"]
        simulate(load_config(overrides=_expanded(sets)), big)
        print(f"simulated {big} in {time.perf_counter() - start:.1f} s")
    timing("1,024 ranks", big, ["tp=16"], 30.0)


def _expanded(sets: list[str]) -> list[str]:
    from trnprof.whatif.describe import expand

    return [expand(s) for s in sets]


if __name__ == "__main__":
    main()
