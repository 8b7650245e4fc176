"""Tensor-engine time of a matrix multiply from its per-core shape (the tile model).

A NeuronCore-v2 tensor engine is a 128 x 128 systolic array (NKI architecture guide,
nki.isa.nc_matmul). C[a, b] = sum over k of X[k, a] Y[k, b] runs as instructions, each holding a
stationary tile of <= 128 contraction rows x <= 128 columns of one operand and streaming <= 512
columns of the other (one PSUM bank of FP32 partial sums, accumulated over the contraction
tiles). An instruction costs its moving columns plus a fixed ~100 cycles, times 4 passes for FP32
inputs. So an op's rate falls when a dimension pads to 128 (contraction 64: half the rows idle),
when the moving side is short (fixed cost not amortised), and when the stationary side is
narrow. The compiler picks which operand is stationary; the model takes the cheaper choice.
Achieved time divides by `tensor_efficiency` (stalls on SBUF loads and engine synchronisation).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .hardware import DEFAULT_INSTANCE, INSTRUCTION_CYCLES, MOVING_MAX, PE_COLS, PE_ROWS, Instance


@dataclass(frozen=True)
class Matmul:
    """`count` independent products, each contracting `k` with outputs `a` x `b`."""

    k: float
    a: float
    b: float
    count: float = 1.0

    @property
    def flops(self) -> float:
        return 2.0 * self.k * self.a * self.b * self.count

    def backward(self) -> list["Matmul"]:
        """Gradients of both inputs: dX contracts b (outputs k x a), dW contracts a (k x b)."""
        return [Matmul(self.b, self.k, self.a, self.count), Matmul(self.a, self.k, self.b, self.count)]


def _cycles(k: float, moving: float, stationary: float) -> float:
    k_tiles = math.ceil(k / PE_ROWS)
    s_tiles = math.ceil(stationary / PE_COLS)
    full, rest = divmod(math.ceil(moving), MOVING_MAX)
    per_stationary = full * (MOVING_MAX + INSTRUCTION_CYCLES) + (rest + INSTRUCTION_CYCLES if rest else 0)
    return k_tiles * s_tiles * per_stationary


def matmul_cycles(mm: Matmul) -> float:
    """Tensor-engine cycles of the product at one pass per column (BF16), best orientation."""
    if mm.k <= 0 or mm.a <= 0 or mm.b <= 0 or mm.count <= 0:
        return 0.0
    return mm.count * min(_cycles(mm.k, mm.a, mm.b), _cycles(mm.k, mm.b, mm.a))


def tensor_seconds(mms, dtype: str, tensor_efficiency: float, instance: Instance = DEFAULT_INSTANCE) -> float:
    """Streaming time (cycles x passes) plus the stalls: waiting on SBUF loads and the other
    engines costs (1/tensor_efficiency - 1) x the one-pass cycles, whatever the passes, since a
    slower array gives the DMA queues and engines more time, not more work. Passes and cycle rate
    are the instance's (FP8 streams in half the BF16 passes on Trn2); on Trn2 an op also pays the
    tensor engine's throttle ramp (hardware.THROTTLE_RAMP_S)."""
    cycles = sum(matmul_cycles(mm) for mm in mms)
    if cycles == 0:
        return 0.0
    streaming = cycles * instance.matmul_passes(dtype) / instance.tensor_cycle_hz
    stalls = cycles * (1 / tensor_efficiency - 1) / instance.tensor_cycle_hz
    return streaming + stalls + min(streaming, instance.throttle_ramp_s)


def fill(mm: Matmul) -> float:
    """Achieved fraction of the array's peak for this shape (1 = every PE busy every cycle)."""
    cycles = matmul_cycles(mm)
    return mm.flops / (2 * PE_ROWS * PE_COLS * cycles) if cycles else 0.0
