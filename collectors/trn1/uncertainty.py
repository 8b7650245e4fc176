"""How sure the model is of a prediction: a throughput band and the range of the evidence.

The band rests on two measurements stored in data/uncertainty.yaml by `scripts/calibrate.py
--write`: the leave-one-out fits over the fit rows (each held-out row's log error and the
parameters fitted without it) and the log errors of the validation rows under the shipped
parameters. For a job:

    spread = max over the leave-one-out parameter sets of |log(prediction with them / prediction)|,
             to first order from the plan: the change of the step's critical-path compute on the
             share of the step it holds (no timeline runs: parameter_spread)
    scale  = 90th percentile of |log error| of the leave-one-out rows (a job inside the evidence)
             or of the leave-one-out and validation rows (a job outside it)
    band   = prediction x exp(-w) .. prediction x exp(+w),  w = sqrt(scale^2 + spread^2)

A job is outside the evidence when its chip generation (every fit row is a Trainium1 job: no Trn2
training throughput is published), model size, parallel layout (tensor- and pipeline-parallel
degree, node count, ZeRO-1, activation checkpointing), matmul or elementwise dtype or model kind
lies outside what the fit rows span.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

import numpy as np
import yaml

from trnprof.model import architecture
from trnprof.model.config import Config, load_config
from trnprof.model.job import Job, resolve
from trnprof.model.params import Params, default_params, job_params
from trnprof.model.plan import critical_compute_seconds

from .simulate import summary

QUANTILE = 0.9


def evidence_file():
    return resources.files("trnprof.collectors.trn1") / "data" / "uncertainty.yaml"


@lru_cache(maxsize=1)
def evidence() -> dict:
    """The stored leave-one-out and validation results (see the module docstring)."""
    return yaml.safe_load(evidence_file().read_text(encoding="utf-8"))


@dataclass(frozen=True)
class Range:
    """What the fit rows span."""

    params: tuple[float, float]
    tp: tuple[int, int]
    pp: tuple[int, int]
    nodes: tuple[int, int]
    matmul_dtypes: frozenset
    vector_dtypes: frozenset
    kinds: frozenset
    zero1: frozenset  # ZeRO-1 on / off
    checkpointing: frozenset  # activation checkpointing modes
    chips: frozenset = frozenset({"Trainium1"})  # chip generations of the fit rows


def evidence_range(jobs: list[Job]) -> Range:
    sizes = [architecture.total_params(j.arch) for j in jobs]
    return Range(
        params=(min(sizes), max(sizes)),
        tp=(min(j.tp for j in jobs), max(j.tp for j in jobs)),
        pp=(min(j.pp for j in jobs), max(j.pp for j in jobs)),
        nodes=(min(j.nodes for j in jobs), max(j.nodes for j in jobs)),
        matmul_dtypes=frozenset(j.dtypes.matmul for j in jobs),
        vector_dtypes=frozenset(j.dtypes.vector for j in jobs),
        kinds=frozenset(j.arch.kind for j in jobs),
        zero1=frozenset(j.zero1 for j in jobs),
        checkpointing=frozenset(j.checkpointing for j in jobs),
        chips=frozenset(j.instance.chip.name for j in jobs),
    )


@lru_cache(maxsize=1)
def fit_range() -> Range:
    return evidence_range([resolve(load_config(preset=r["preset"])) for r in evidence()["loo"]])


def _billions(n: float) -> str:
    return f"{n / 1e9:.3g} B"


def outside(job: Job, span: Range | None = None) -> list[str]:
    """Why the job lies outside the calibration evidence (empty when inside)."""
    span = span or fit_range()
    reasons = []
    chip = job.instance.chip.name
    if chip not in span.chips:
        reasons.append(
            f"{chip} ({job.instance.name}): no published {chip} training throughput; the fit "
            f'rows are {", ".join(sorted(span.chips))} jobs (docs/execution-model.md, "Trn2")'
        )
    size = architecture.total_params(job.arch)
    if not span.params[0] <= size <= span.params[1]:
        reasons.append(
            f"model size {_billions(size)} parameters (evidence: "
            f"{_billions(span.params[0])} to {_billions(span.params[1])})"
        )
    for name, value, (lo, hi) in (("tp", job.tp, span.tp), ("pp", job.pp, span.pp), ("nodes", job.nodes, span.nodes)):
        if not lo <= value <= hi:
            reasons.append(f"{name} {value} (evidence: {lo} to {hi})")
    if job.zero1 not in span.zero1:
        reasons.append(
            f"ZeRO-1 {'on' if job.zero1 else 'off'} (evidence: {'on' if True in span.zero1 else 'off'} only)"
        )
    if job.checkpointing not in span.checkpointing:
        reasons.append(
            f"activation checkpointing {job.checkpointing} (evidence: {', '.join(sorted(span.checkpointing))})"
        )
    if job.dtypes.matmul not in span.matmul_dtypes:
        reasons.append(f"matmuls in {job.dtypes.matmul} (evidence: {', '.join(sorted(span.matmul_dtypes))})")
    if job.dtypes.vector not in span.vector_dtypes:
        reasons.append(f"elementwise work in {job.dtypes.vector} (evidence: {', '.join(sorted(span.vector_dtypes))})")
    if job.arch.kind not in span.kinds:
        reasons.append(f"model kind {job.arch.kind} (evidence: {', '.join(sorted(span.kinds))})")
    return reasons


def loo_params(base: Params | None = None) -> list[Params]:
    base = base or default_params()
    return [base.replace(**r["params"]) for r in evidence()["loo"]]


def residual_scale(inside: bool, exclude: str | None = None) -> float:
    """The 90th percentile of |log error| of the leave-one-out rows, plus the validation rows for
    a job outside the evidence; `exclude` leaves one row out (the validation report's own rows)."""
    rows = evidence()["loo"] + ([] if inside else evidence()["validation"])
    errors = [abs(r["log_error"]) for r in rows if r["row"] != exclude]
    return float(np.quantile(errors, QUANTILE))


def parameter_spread(job: Job, step_s: float) -> float:
    """Largest |log| change of the throughput under the leave-one-out parameter sets, to first
    order from the plan alone (no timeline): the free parameters change only compute op
    durations, so the step changes by the relative change r of its critical-path compute
    (plan.critical_compute_seconds) on the share of the step that compute holds:
    |log(1 + share x (r - 1))|, share = min(1, compute / step)."""
    base = critical_compute_seconds(job, job_params(job.config.calibration))
    share = min(1.0, base / step_s)
    ratios = [critical_compute_seconds(job, job_params(job.config.calibration, p)) / base for p in loo_params()]
    return max(abs(math.log1p(share * (r - 1))) for r in ratios)


def band(config: Config, prediction: dict | None = None, exclude: str | None = None) -> dict:
    """The throughput band of a job's prediction and why it is outside the evidence, if it is."""
    job = resolve(config)
    prediction = prediction or summary(config)
    value = prediction["throughput"]["value"]
    reasons = outside(job)
    scale = residual_scale(not reasons, exclude)
    spread = parameter_spread(job, prediction["step_time_s"])
    width = math.hypot(scale, spread)
    return {
        "low": value * math.exp(-width),
        "high": value * math.exp(width),
        "unit": prediction["throughput"]["unit"],
        "log_half_width": width,
        "residual_scale": scale,
        "parameter_spread": spread,
        "inside_evidence": not reasons,
        "outside_evidence": reasons,
    }
