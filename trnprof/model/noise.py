"""Seeded run-to-run variation: per-rank speed factors and data-loader batch costs.

Factors are log-normal, exp(sigma * z) with z clipped to +-3 (sigma = run.noise), drawn once
per rank, step and block in a fixed order, so the same config and seed give the same run.
A straggler multiplies its rank's factors; a slow loader multiplies batch costs.
"""

from __future__ import annotations

import numpy as np

from .faults import Effects
from .job import Job


def _lognormal(rng: np.random.Generator, sigma: float, shape) -> np.ndarray:
    if sigma == 0:
        return np.ones(shape)
    return np.exp(sigma * np.clip(rng.standard_normal(shape), -3, 3))


def draw(
    job: Job, steps: int, seed: int, sigma: float, fx: Effects, data_stages, batch_cost: float, dp: int | None = None
):
    """Speed factors (ranks, steps, blocks + optimizer) and loader costs {stage: (batches, dp)}.
    `dp` collapses data parallelism (predictions simulate one group per stage)."""
    dp = job.dp if dp is None else dp
    rng = np.random.default_rng(seed)
    n_ranks = job.pp * dp * job.tp
    f = _lognormal(rng, sigma, (n_ranks, steps, 2 * job.microbatches + 1))
    if dp == job.dp:
        for rank, slowdown in fx.stragglers.items():
            f[rank] *= slowdown
    else:  # collapsed: a straggler slows its (stage, tp) position of the one group
        for rank, slowdown in fx.stragglers.items():
            stage, tp = rank // (job.tp * job.dp), rank % job.tp
            f[stage * job.tp + tp] *= slowdown
    costs = {
        s: batch_cost * fx.loader_factor * _lognormal(rng, sigma, (steps * job.microbatches, dp)) for s in data_stages
    }
    return f, costs
