"""Runs for the diff tests, made by the Trn1 execution model: one small data-parallel job
(a tiny decoder on one trn1.32xlarge, 32 ranks, 12 steps) with different seeds and faults."""

from __future__ import annotations

from pathlib import Path

from trnprof.collectors.trn1 import load_config, simulate

JOB = [
    "cluster.instance=trn1.32xlarge",
    "batch.global=256",
    "input.per_sample_ms=0.01",
    "model.seq_len=2048",
    "run.steps=12",
]


def simulate_job(path: Path, *, seed: int, faults=None, overrides=()) -> Path:
    config = load_config(preset="tiny", overrides=[*JOB, f"run.seed={seed}", *overrides], faults=faults)
    return simulate(config, path)
