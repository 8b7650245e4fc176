"""Injected faults, turned into the knobs the model uses."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .config import MemoryLeak, NoOverlap, Recompile, SlowLink, SlowLoader, Straggler


@dataclass
class Effects:
    stragglers: dict[int, float] = field(default_factory=dict)   # rank -> compute slowdown
    loader_factor: float = 1.0                                    # per-sample cost multiplier
    slow_nodes: dict[int, float] = field(default_factory=dict)   # node -> inter-node slowdown
    recompile_every: int | None = None
    leak_bytes_per_step: float = 0.0
    overlap_dp: bool = True

    def compile_steps(self, steps: int) -> np.ndarray:
        """Steps that compile: the first, and every `recompile_every`-th under the fault."""
        out = np.zeros(steps, dtype=bool)
        out[0] = True
        if self.recompile_every:
            out[self.recompile_every::self.recompile_every] = True
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
    return out
