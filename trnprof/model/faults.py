"""Injected faults: what each kind does, the check that it can act in the job, and the knobs
the model turns them into."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from trnprof.errors import TrnprofError

from .config import MemoryLeak, NoOverlap, Recompile, SbufSpill, SlowHost, SlowLink, SlowLoader, Straggler, Throttle

# kind -> (keys with defaults, what it does, an example): `trnprof simulate --help` lists these.
FAULT_KINDS = {
    "straggler": (
        "rank (required), slowdown=1.3",
        "The rank's device work takes `slowdown` times longer; its TP and DP peers wait for it",
        "faults=[{kind: straggler, rank: 5, slowdown: 1.5}]",
    ),
    "slow_loader": (
        "factor=8",
        "Every data-loader batch costs `factor` times the host time",
        "faults=[{kind: slow_loader, factor: 8}]",
    ),
    "slow_link": (
        "node (required), factor=4",
        "Inter-node traffic touching `node` runs at 1/factor of the bandwidth (needs >= 2 nodes)",
        "faults=[{kind: slow_link, node: 1, factor: 4}]",
    ),
    "recompile": (
        "every=5",
        "The graph compiles again every `every` steps (needs more steps than that)",
        "faults=[{kind: recompile, every: 2}]",
    ),
    "memory_leak": (
        "bytes_per_step=2.0e9",
        "Runtime device memory grows by `bytes_per_step` every step (needs >= 2 steps)",
        "faults=[{kind: memory_leak, bytes_per_step: 2.0e8}]",
    ),
    "no_overlap": (
        "(none)",
        "Gradient collectives start only after the backward pass (needs dp > 1)",
        "faults=[{kind: no_overlap}]",
    ),
    "slow_host": (
        "factor=4",
        "The host spends `factor` times its time per graph execution (launch, tracing, "
        "Python); the device waits when that outlasts the graph",
        "faults=[{kind: slow_host, factor: 8}]",
    ),
    "sbuf_spill": (
        "fraction=0.5",
        "Every tensor-engine op spills `fraction` of its HBM traffic out of SBUF and "
        "reloads it (save + reload through the DMA queues, which the consuming engine waits for); "
        "the device profile (--device-profile) shows it on spill queues",
        "faults=[{kind: sbuf_spill, fraction: 0.5}]",
    ),
    "throttle": (
        "utilization=0.6",
        "The tensor engine is throttled to `utilization` (k/n) of its issue rate on "
        "every op: its matmul time grows by 1/utilization; the device profile shows Throttle events",
        "faults=[{kind: throttle, utilization: 0.6}]",
    ),
}


def check_faults(faults, steps: int, *, nodes: int, world: int, dp: int) -> None:
    """One-line error for a fault that cannot act in the configured job."""
    for fault in faults:
        problem = None
        if isinstance(fault, Straggler) and fault.rank >= world:
            problem = f"straggler rank {fault.rank} is outside the world of {world} ranks (0-{world - 1})"
        elif isinstance(fault, SlowLink) and nodes < 2:
            problem = "slow_link slows inter-node traffic, and the job runs on one node; set cluster.nodes >= 2"
        elif isinstance(fault, SlowLink) and fault.node >= nodes:
            problem = f"slow_link node {fault.node} is outside the {nodes} node(s) (0-{nodes - 1})"
        elif isinstance(fault, Recompile) and fault.every >= steps:
            problem = (
                f"recompile every {fault.every} steps never recompiles in a run of {steps} step(s); "
                f"set run.steps > {fault.every} or a smaller every"
            )
        elif isinstance(fault, MemoryLeak) and (steps < 2 or fault.bytes_per_step == 0):
            problem = "memory_leak needs bytes_per_step > 0 and run.steps >= 2 to grow"
        elif isinstance(fault, NoOverlap) and dp < 2:
            problem = "no_overlap delays gradient collectives, and the job has no data parallelism (dp = 1)"
        if problem:
            raise TrnprofError(f"config faults: {problem}")


def loader_acts(
    slowed: np.ndarray, clean: np.ndarray, factor: float, *, workers: int, batch_s: float, microbatches: int
) -> None:
    """One-line error when slow_loader changes no step's end (`slowed` and `clean`: step ends of
    the job with and without it): the loader, even slowed, stays ahead of the device."""
    if factor == 1.0 or not np.allclose(slowed, clean, rtol=0.0, atol=1e-9):
        return
    step_s = float(np.median(np.diff(clean.max(axis=tuple(range(1, clean.ndim)))))) if len(clean) > 1 else 0.0
    per_batch = batch_s * factor / max(workers, 1)
    per_micro = step_s / microbatches
    needed = factor * per_micro / per_batch if per_batch > 0 else float("inf")
    raise TrnprofError(
        f"config faults: slow_loader factor {factor:g} changes nothing in this job: slowed, the "
        f"{workers} loader worker(s) still deliver a batch every {per_batch * 1e3:.2f} ms while the device takes "
        f"{per_micro * 1e3:.2f} ms per microbatch, so the step time stays {step_s:.3f} s; set a factor above "
        f"about {needed:.0f} or fewer input.workers"
    )


@dataclass
class Effects:
    stragglers: dict[int, float] = field(default_factory=dict)  # rank -> compute slowdown
    loader_factor: float = 1.0  # per-sample cost multiplier
    slow_nodes: dict[int, float] = field(default_factory=dict)  # node -> inter-node slowdown
    recompile_every: int | None = None
    leak_bytes_per_step: float = 0.0
    overlap_dp: bool = True
    host_factor: float = 1.0  # host time per graph execution multiplier
    spill_fraction: float = 0.0  # sbuf_spill: spilled share of op HBM bytes
    tensor_utilization: float = 1.0  # throttle: allowed tensor-engine rate

    def compile_steps(self, steps: int) -> np.ndarray:
        """Steps that compile: the first, and every `recompile_every`-th under the fault."""
        out = np.zeros(steps, dtype=bool)
        out[0] = True
        if self.recompile_every:
            out[self.recompile_every :: self.recompile_every] = True
        return out


def effects(faults, overlap_dp: bool) -> Effects:
    out = Effects(overlap_dp=overlap_dp)
    for fault in faults:
        if isinstance(fault, Straggler):
            out.stragglers[fault.rank] = out.stragglers.get(fault.rank, 1.0) * fault.slowdown
        elif isinstance(fault, SlowLoader):
            out.loader_factor *= fault.factor
        elif isinstance(fault, SlowLink):
            out.slow_nodes[fault.node] = out.slow_nodes.get(fault.node, 1.0) * fault.factor
        elif isinstance(fault, Recompile):
            out.recompile_every = fault.every
        elif isinstance(fault, MemoryLeak):
            out.leak_bytes_per_step += fault.bytes_per_step
        elif isinstance(fault, NoOverlap):
            out.overlap_dp = False
        elif isinstance(fault, SlowHost):
            out.host_factor *= fault.factor
        elif isinstance(fault, SbufSpill):
            out.spill_fraction += fault.fraction
        elif isinstance(fault, Throttle):
            out.tensor_utilization *= fault.utilization
    return out


def device_effects(faults) -> tuple[float, float]:
    """(spilled share of a tensor-engine op's HBM bytes, allowed tensor-engine utilization): the
    two faults that act inside an op (compute.rates reads them)."""
    fx = effects(faults, True)
    return fx.spill_fraction, fx.tensor_utilization
