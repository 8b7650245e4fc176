"""Trainium1 hardware as the execution model uses it: the published figures of the hardware table
(`trnprof/hardware.py`, the one place they are stated), restated per NeuronCore, and the
model's own constants beside them, each with its source.

Sources: the aws-neuron-sdk docs (cited per constant; collected in the project's Trn1 hardware
notes) and the public nccom-test and neuron-monitor output samples of the same docs. Per-core figures are the chip's halved: a
Trn1 chip has 2 NeuronCore-v2 and one rank drives one NeuronCore.
"""

from __future__ import annotations

from dataclasses import dataclass

from trnprof import hardware as table
from trnprof.units import GB

# Published peaks (trnprof/hardware.py): tensor engine per chip, vector / scalar per core, HBM.
CHIP_BF16_FLOPS = table.CHIP_TENSOR_FLOPS["bf16"]
CHIP_FP32_FLOPS = table.CHIP_TENSOR_FLOPS["fp32"]
CORES_PER_CHIP = table.CORES_PER_CHIP
CORE_BF16_FLOPS = CHIP_BF16_FLOPS / CORES_PER_CHIP
CORE_FP32_FLOPS = CHIP_FP32_FLOPS / CORES_PER_CHIP
CORE_VECTOR_FLOPS = table.CORE_VECTOR_FLOPS
CORE_SCALAR_FLOPS = table.CORE_SCALAR_FLOPS
CHIP_HBM_BYTES = table.CHIP_HBM_BYTES
CORE_HBM_BYTES = CHIP_HBM_BYTES // CORES_PER_CHIP
CORE_HBM_BW = table.CHIP_HBM_BYTES_PER_S / CORES_PER_CHIP

# The model's own constants.
# DMA: per-engine rate 17-27 GB/s (nki-dma-bandwidth-guide.rst); a host-to-device batch copy
# is one DMA queue, so the low end.
DMA_ENGINE_BW = 17 * GB

# Tensor engine (NKI architecture guide trainium_inferentia2_arch.rst; nki.isa.nc_matmul): a
# 128 x 128 systolic array. One matmul instruction holds a stationary tile of <= 128 contraction
# partitions x <= 128 columns and streams a moving tile of <= 128 partitions x <= 512 columns
# (512 fp32 = one 2 KiB PSUM bank per partition, where results accumulate over contraction tiles).
# Streaming takes one cycle per moving column; the cycle rate follows from the published peak
# (2 x 128 x 128 FLOPs per cycle -> 2.9 GHz for 95 TFLOPS, against the guide's nominal 2.8 GHz).
PE_ROWS = 128            # contraction partitions per instruction
PE_COLS = 128            # stationary columns per instruction
MOVING_MAX = 512         # moving columns per instruction (one PSUM bank)
TENSOR_CYCLE_HZ = CORE_BF16_FLOPS / (2 * PE_ROWS * PE_COLS)
# Passes through the array per moving column: FP32 at a quarter of the BF16 rate (47.5 vs 190
# TFLOPS, trainium.rst); BF16, FP16, TF32 and cFP8 at the full rate (FP8 has no speed-up over
# BF16 on Trn1: Neuron Explorer schema, `adjusted_hardware_flops`).
MATMUL_PASSES = {"bf16": 1, "fp16": 1, "tf32": 1, "fp8": 1, "fp32": round(CORE_BF16_FLOPS / CORE_FP32_FLOPS)}
# Fixed cost of one instruction: ~100 cycles per small dependent instruction (NKI architecture
# guide, engine section), counted for every tensor-engine instruction.
INSTRUCTION_CYCLES = 100

# Runtime launch of one compiled graph: the neuron-monitor `execution_stats` sample reports
# total latency 11.0 ms against device latency 10.0 ms per execution, so ~1 ms of host/runtime
# time per graph execution. torch-xla executes asynchronously: the host prepares the next graph
# while the device runs the current one.
GRAPH_LAUNCH_S = 1.0e-3

# Collective latency across nodes: ~15 us per algorithm step (inside a node ~1-2 us per hop;
# neuron-runtime/explore/*-collective-comm.rst).
INTER_NODE_HOP_S = 15e-6
# Fixed cost of one collective inside a node, whatever its size: nccom-test's 32-rank all-gather
# of 1 KiB takes 6.16 us (nccom-test.rst sample, --show-input-output-size run). Across nodes the
# runtime uses recursive halving/doubling (RDH): log2(nodes) steps of the inter-node latency.
COLLECTIVE_BASE_S = 6.16e-6
# Achieved fraction of NeuronLink bandwidth for large collectives: nccom-test's 16-rank
# kangaring all-reduce reaches 103.89 GiB/s bus bandwidth at 512 MiB against 192 GiB/s per core
# (384 GiB/s NeuronLink per chip / 2 cores) -> 0.54 (nccom-test.rst sample).
NEURONLINK_EFFICIENCY = 0.54
# Same-chip (core-to-core) collectives move data by DMA through HBM: the chip's DMA bandwidth
# (trainium.rst), half per core, at the same achieved fraction.
CORE_DMA_BW = table.CHIP_DMA_BYTES_PER_S / CORES_PER_CHIP

# Runtime-owned device memory per core before any tensor: model code 176,285,056 B + constants
# 193,986,816 B in the neuron-monitor `memory_used` sample.
RUNTIME_BASE_BYTES = 176_285_056 + 193_986_816


@dataclass(frozen=True)
class Instance:
    name: str
    chips: int
    neuronlink_bw: float  # bytes/s per chip; 0 where there is no NeuronLink
    network_bw: float     # bytes/s per node (EFA, or ENA on trn1.2xlarge)
    vcpus: int

    @property
    def cores(self) -> int:
        return self.chips * CORES_PER_CHIP

    @property
    def bf16_flops(self) -> float:
        return self.chips * CHIP_BF16_FLOPS


# The instance types of the hardware table, in the model's terms (no NeuronLink: 0 bytes/s).
INSTANCES = {name: Instance(name, chips=t.chips, neuronlink_bw=t.neuronlink_bytes_per_s or 0.0,
                            network_bw=t.network_bytes_per_s, vcpus=t.vcpus)
             for name, t in table.INSTANCE_TYPES.items()}

DTYPE_BYTES = {"fp32": 4, "tf32": 4, "bf16": 2, "fp16": 2, "fp8": 1}
