"""The model's own predictions for a job, without emitting a trace.

A noise-free timeline with one data-parallel group per stage (all groups are alike without
noise; a slow link takes each stage's worst pipeline), run until the data-loader queue reaches
its steady state. The full simulation stores exactly these numbers in its manifest.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from . import architecture
from .faults import Effects
from .faults import effects as fault_effects
from .job import Job
from .layout import Layout
from .memory import capacity, residency
from .noise import draw
from .params import Params, job_params
from .plan import Plan, build_plan
from .timeline import simulate_timeline


def _collapsed(plan: Plan) -> Plan:
    """The plan with data parallelism folded into one group (worst pipeline per position)."""
    p2p = plan.p2p_cost.max(axis=1, keepdims=True) if plan.p2p_cost.size else plan.p2p_cost[:, :1]
    return replace(plan, p2p_cost=p2p)


MAX_STEPS = 256  # most extra steps run to let a slow loader's queue drain


def loader_cycle(job: Job) -> int:
    """Steps in one cycle of a loader-bound pipeline: its workers finish batches together, so a
    host-bound job alternates a step that waits for the next round of batches with steps that
    find them ready; the cycle is `workers` batches, in whole steps."""
    workers = max(job.config.input.workers, 1)
    return workers // math.gcd(workers, job.microbatches)


def steady_steps(job: Job) -> int:
    """Steps until the loader queue (workers x prefetch batches, full after the first compile)
    no longer hides a slow loader: the compile step, the steps that drain it and the workers'
    first round after the compile, then one loader cycle to measure. (A loader only slightly
    slower than the device drains the queue over more steps: `drain_steps` adds them.)"""
    inputs = job.config.input
    drain_batches = inputs.workers * inputs.prefetch + inputs.workers
    return 1 + math.ceil(drain_batches / job.microbatches) + loader_cycle(job)


def loader_step(plan: Plan, fx: Effects) -> float:
    """Seconds the loader workers need per step in steady state (noise-free): each worker
    builds one batch per batch cost, a step takes `microbatches` batches (0 without workers:
    the training process loads each batch itself, inside the step the timeline measures)."""
    workers = plan.job.config.input.workers
    return plan.job.microbatches * plan.batch_cost * fx.loader_factor / workers if workers else 0.0


def drain_steps(job: Job, step_s: float, loader_s: float) -> int:
    """Extra steps until a loader slower than the device (loader_s > step_s per step) has
    emptied its queue: the queue loses 1 - step_s / loader_s batches per batch taken; capped
    (beyond the cap the loader is within capacity / (MAX_STEPS x microbatches) of the device)."""
    if loader_s <= step_s:
        return 0
    capacity_batches = job.config.input.workers * job.config.input.prefetch
    return min(MAX_STEPS, math.ceil(capacity_batches / (1 - step_s / loader_s) / job.microbatches))


def noise_free_timeline(plan: Plan, fx: Effects, compile_steps: np.ndarray):
    """The collapsed timeline without noise of a run of len(compile_steps) steps."""
    job, steps = plan.job, len(compile_steps)
    data = [s for s, st in enumerate(plan.stages) if st.consumes_data]
    f, costs = draw(job, steps, 0, 0.0, fx, data, plan.batch_cost, dp=1)
    return simulate_timeline(_collapsed(plan), steps, f, costs, compile_steps, fx.overlap_dp, dp=1)


def steady_timeline(plan: Plan, fx: Effects, extra_steps: int = 0):
    """The noise-free collapsed timeline (only the first step compiles) and its steady
    (measured) steps, first and last."""
    job = plan.job
    steps = steady_steps(job) + extra_steps
    compile_steps = np.zeros(steps, dtype=bool)
    compile_steps[0] = True
    tl = noise_free_timeline(plan, fx, compile_steps)
    return tl, steps - loader_cycle(job), steps - 1


def step_time(tl, first: int, last: int) -> float:
    """The mean step over steps first..last (one loader cycle)."""
    return max(float((st.step_end[last] - st.step_start[first][:, None]).max()) for st in tl.stages) / (
        last - first + 1
    )


def device_idle(tl, first: int, last: int) -> float:
    """Seconds per step, over steps first..last, in which a stage's device neither computes nor
    communicates: before each block, the wait beyond its neighbour's data (for the host's launch,
    the batch or its copy); the worst stage."""
    idle = []
    for st in tl.stages:
        waited_for = np.maximum(st.ready[first : last + 1], st.recv_end[first : last + 1].max(axis=-1))
        idle.append(float(np.clip(st.body[first : last + 1] - waited_for, 0, None).sum(axis=(0, 1)).max()))
    return max(idle) / (last - first + 1)


def hbm_peak(job: Job, fx: Effects) -> float:
    leak = fx.leak_bytes_per_step * (job.config.run.steps - 1)
    return max(residency(job, s).peak for s in range(job.pp)) + leak


def predictions(job: Job, plan: Plan, fx: Effects) -> dict:
    tl, first, last = steady_timeline(plan, fx)
    seconds = step_time(tl, first, last)
    extra = drain_steps(job, seconds, loader_step(plan, fx))
    if extra:  # a loader slower than the device whose queue outlasted the measured steps
        tl, first, last = steady_timeline(plan, fx, extra)
        seconds = step_time(tl, first, last)
    peak = hbm_peak(job, fx)
    return {
        "step_time_s": seconds,
        "throughput": {"value": job.global_batch / seconds, "unit": job.arch.unit},
        "mfu": predicted_mfu(job, seconds),
        "hbm_peak_bytes": int(round(peak)),
        "hbm_capacity_bytes": capacity(job.instance),
        "fits": bool(peak <= capacity(job.instance)),
        "device_idle_share": device_idle(tl, first, last) / seconds,
        "calibration": plan.params.as_dict(),  # the free parameters these numbers rest on
    }


def peak_flops(job: Job) -> float:
    """Cluster BF16 peak (the MFU denominator, whatever the compute precision)."""
    return job.nodes * job.instance.bf16_flops


def predicted_mfu(job: Job, seconds: float) -> float:
    """The MFU of `job` at a step of `seconds`: the model's FLOPs over the cluster's BF16 peak."""
    return architecture.model_flops_per_step(job) / (seconds * peak_flops(job))


def predict(job: Job, params: Params | None = None) -> dict:
    params = job_params(job.config.calibration, params)
    fx = fault_effects(job.config.faults, job.config.comm.overlap_dp)
    plan = build_plan(job, params, Layout(job), fx.slow_nodes, fx.host_factor)
    return predictions(job, plan, fx)
