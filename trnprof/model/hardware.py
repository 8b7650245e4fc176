"""Trainium hardware as the execution model uses it: the published figures of the hardware table
(`trnprof/hardware.py`, the one place they are stated), restated per rank, and the model's own
constants beside them, each with its source.

Sources: the aws-neuron-sdk docs (cited per constant; collected in the project's Trn1 hardware
notes) and the public nccom-test and neuron-monitor output samples of the same docs. One rank
drives one logical NeuronCore: on Trn1 a NeuronCore-v2 (2 per chip); on Trn2 `lnc` NeuronCore-v3
(8 per chip; LNC=2 by default, 4 ranks per chip), whose engines the compiler shards the rank's
graph across. The module-level CORE_* constants are Trn1's (the calibrated generation); an
`Instance` states the figures of its own chip and LNC.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

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
PE_ROWS = 128  # contraction partitions per instruction
PE_COLS = 128  # stationary columns per instruction
MOVING_MAX = 512  # moving columns per instruction (one PSUM bank)
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


# Tensor-engine throttling (dI/dt) on Trainium2: the tensor engine slows down when its
# utilisation jumps, as it does at the start of every tensor-engine op after vector, scalar or
# collective work (Neuron Explorer reports throttle events; the Neuron docs publish no ramp).
# Assumption, not a published figure: the first THROTTLE_RAMP_S of an op's streaming runs at half
# rate, so an op pays min(streaming time, THROTTLE_RAMP_S) extra. Trn1 has no such term: its fitted
# op overhead holds whatever ramp it has.
THROTTLE_RAMP_S = 1.0e-6


@dataclass(frozen=True)
class Instance:
    name: str
    chips: int
    neuronlink_bw: float  # bytes/s per chip; 0 where there is no NeuronLink
    network_bw: float  # bytes/s per node (EFA, or ENA on trn1.2xlarge)
    vcpus: int
    chip: table.Chip = table.TRAINIUM1
    lnc: int = 1  # physical NeuronCores per rank
    ultraserver_nodes: int = 1  # nodes joined by NeuronLink (4 in a Trn2 UltraServer)
    ultraserver_bw: float = 0.0  # bytes/s per chip between the nodes of an UltraServer

    @property
    def ranks_per_chip(self) -> int:
        return self.chip.ranks_per_chip(self.lnc)

    @property
    def cores(self) -> int:
        return self.chips * self.ranks_per_chip

    @property
    def bf16_flops(self) -> float:
        return self.chips * self.chip.tensor_flops["bf16"]

    @property
    def trainium2(self) -> bool:
        return self.chip is table.TRAINIUM2

    # per-rank figures
    @property
    def core_bf16_flops(self) -> float:
        return self.chip.tensor_flops["bf16"] / self.ranks_per_chip

    @property
    def tensor_cycle_hz(self) -> float:
        """The rank's systolic-array cycles per second at one pass per column (BF16): a logical
        core of `lnc` physical cores streams `lnc` arrays at once."""
        return self.core_bf16_flops / (2 * PE_ROWS * PE_COLS)

    def matmul_passes(self, dtype: str) -> float:
        """Passes through the array per moving column: the BF16 peak over the dtype's (FP32 4 on
        Trn1 and 3.7 on Trn2; FP8 1 on Trn1 and 0.51 on Trn2, where it runs at ~2x BF16)."""
        return self.chip.tensor_flops["bf16"] / self.chip.tensor_flops[dtype]

    @property
    def core_vector_flops(self) -> float:
        return self.chip.vector_flops * self.lnc

    @property
    def core_scalar_flops(self) -> float:
        return self.chip.scalar_flops * self.lnc

    @property
    def core_hbm_bytes(self) -> int:
        return self.chip.hbm_bytes // self.ranks_per_chip

    @property
    def core_hbm_bw(self) -> float:
        return self.chip.hbm_bytes_per_s / self.ranks_per_chip

    @property
    def core_dma_bw(self) -> float:
        return self.chip.dma_bytes_per_s / self.ranks_per_chip

    @property
    def throttle_ramp_s(self) -> float:
        return THROTTLE_RAMP_S if self.trainium2 else 0.0

    def with_lnc(self, lnc: int | None) -> "Instance":
        return self if lnc is None or lnc == self.lnc else replace(self, lnc=lnc)


def _instance(t: table.InstanceType) -> Instance:
    return Instance(
        t.name,
        chips=t.chips,
        neuronlink_bw=t.neuronlink_bytes_per_s or 0.0,
        network_bw=t.network_bytes_per_s,
        vcpus=t.vcpus,
        chip=t.chip,
        lnc=t.chip.default_lnc,
        ultraserver_nodes=t.ultraserver_nodes,
        ultraserver_bw=t.ultraserver_link_bytes_per_s or 0.0,
    )


# The instance types of the hardware table, in the model's terms (no NeuronLink: 0 bytes/s), at
# their chip's default LNC.
INSTANCES = {name: _instance(t) for name, t in table.INSTANCE_TYPES.items()}
DEFAULT_INSTANCE = INSTANCES["trn1.32xlarge"]

DTYPE_BYTES = {"fp32": 4, "tf32": 4, "bf16": 2, "fp16": 2, "fp8": 1}
