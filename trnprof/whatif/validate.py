"""The what-if validation (docs/whatif.md): ground truth from the simulator itself, with free
parameters the fit does not know.

Simulate job A with every `calibration.*` value perturbed, fit it, predict A + change, and
compare with the measured steady step of simulating A + change under the same perturbed
parameters. The tests run a few cases on a small job; bench/bench_whatif.py runs the table.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from trnprof.collectors.trn1.simulate import simulate
from trnprof.engines import open_run
from trnprof.model.config import load_config
from trnprof.model.params import default_params

from .describe import expand
from .document import whatif
from .measure import steady_step

# Perturbations of the shipped free parameters (efficiencies x1.3 would exceed 1, so set B
# raises them by x1.15).
PERTURBATIONS = {
    "A": {"tensor_efficiency": 1.3, "op_overhead_us": 0.7, "hbm_efficiency": 0.7, "network_efficiency": 0.7},
    "B": {"tensor_efficiency": 0.7, "op_overhead_us": 1.3, "hbm_efficiency": 1.15, "network_efficiency": 1.15},
}
# One change per kind the issue lists (and two more); each a --set list.
CHANGES = {
    "nodes": ["nodes=4"],
    "tp": ["tp=2"],
    "pp": ["pp=2"],
    "micro-batch": ["micro=2"],
    "global batch": ["global=64"],
    "ZeRO-1": ["zero1=true"],
    "overlap off": ["overlap=false"],
    "loader workers": ["workers=0"],
    "sequence length": ["seq_len=512"],
    "precision": ["precision=fp32"],
    "bucket size": ["bucket_mb=0.5"],
    "activation checkpointing": ["checkpointing=full"],
}
# Faults injected into A and removed with faults=[].
FAULTS = {
    "straggler": "{kind: straggler, rank: 1, slowdown: 1.5}",
    "slow loader": "{kind: slow_loader, factor: 16}",  # at 8 the prefetch queue outlasts job A's 5 steps
    "no overlap": "{kind: no_overlap}",
    "slow link": "{kind: slow_link, node: 1, factor: 4}",
}
# Job A: the tiny decoder on two trn1.2xlarge (4 ranks, dp 4 across EFA, 2 microbatches).
JOB_A = ["model=tiny", "cluster.instance=trn1.2xlarge", "cluster.nodes=2", "batch.global=32", "batch.micro=4"]
# Jobs a slow loader bounds (tests/whatif/test_whatif_loader.py, bench/bench_whatif_loader.py):
# name -> (config sets, steps, loader seconds per step at factor 1 when one worker builds every
# batch: microbatches x micro x per-sample ms; None with more workers).
LOADER_JOBS = {
    "tiny, 1 worker": (JOB_A + ["input.workers=1"], 6, 2 * 4 * 1e-3),
    "tiny, 4 workers": (JOB_A, 12, None),  # the prefetch queue hides the loader for the first steps
    "bert-large phase 1": (
        [
            "model=bert-large",
            "model.seq_len=128",
            "cluster.instance=trn1.32xlarge",
            "cluster.nodes=1",
            "batch.global=16384",
            "batch.micro=16",
            "input.workers=1",
            "input.per_sample_ms=5",
        ],
        6,
        32 * 16 * 5e-3,
    ),
}
LOADER_FACTORS = {"tiny, 1 worker": (4, 8, 16), "tiny, 4 workers": (8, 16), "bert-large phase 1": (4, 8, 16)}


def perturbed(name: str) -> list[str]:
    shipped = default_params().as_dict()
    return [f"calibration.{k}={shipped[k] * f:.6g}" for k, f in PERTURBATIONS[name].items()]


def measured_step(config_sets: list[str], where: Path, steps: int) -> float:
    config = load_config(overrides=[expand(s) for s in config_sets] + [f"run.steps={steps}"])
    simulate(config, where, overwrite=True)
    with open_run(where) as run:
        return steady_step(run)[0]


def simulate_job(job: list[str], perturbation: str, where: Path, *, faults: str | None = None, steps: int = 5) -> Path:
    """Job A under a perturbation (and with `faults`), simulated into `where`."""
    sets = job + perturbed(perturbation) + ([f"faults=[{faults}]"] if faults else [])
    simulate(load_config(overrides=[expand(s) for s in sets] + [f"run.steps={steps}"]), where, overwrite=True)
    return where


def truth_sets(job: list[str], change: list[str], perturbation: str, faults: str | None) -> list[str]:
    """Job A + change under the same perturbation; `faults=[]` removes A's faults."""
    removes = "faults=[]" in change
    return (
        job
        + perturbed(perturbation)
        + ([f"faults=[{faults}]"] if faults and not removes else [])
        + [c for c in change if c != "faults=[]"]
    )


def compare(
    run: Path,
    job: list[str],
    change: list[str],
    perturbation: str = "A",
    *,
    faults: str | None = None,
    steps: int = 5,
    workdir: Path | None = None,
) -> dict:
    """One row of the table: whatif on `run` (job A simulated) against simulating A + change."""
    document = whatif(run, change)
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        truth = measured_step(truth_sets(job, change, perturbation, faults), Path(tmp) / "b", steps)
    predicted = document["predicted"]["step_time_s"]
    return {
        "change": " ".join(change),
        "predicted_s": predicted,
        "simulated_s": truth,
        "error": predicted / truth - 1,
        "band": document["predicted"]["band"],
        "fits": document["fit"]["fits"],
        "whatif_s": document["seconds"],
    }


def case(
    job: list[str],
    change: list[str],
    perturbation: str = "A",
    *,
    faults: str | None = None,
    steps: int = 5,
    workdir: Path | None = None,
) -> dict:
    """Simulate A, then `compare`."""
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        run = simulate_job(job, perturbation, Path(tmp) / "a", faults=faults, steps=steps)
        return compare(run, job, change, perturbation, faults=faults, steps=steps, workdir=workdir)
