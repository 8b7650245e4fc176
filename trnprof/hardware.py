"""The Trainium hardware table: one row per instance type, every peak the analysis compares with.

The one place trnprof states published hardware facts. Sessions expose it as the `hardware` table
(see `trnprof/session_tables.py`), which rules, the MFU view and the report read; the execution
model (`trnprof/model/hardware.py`) derives its figures from it; docs/hardware.md is generated
from it (`trnprof.docgen`). One rank drives one (logical) NeuronCore, so per-core figures are the
chip's divided by the ranks a chip holds: 2 NeuronCore-v2 on a Trainium1 chip; on a Trainium2
chip 8 physical NeuronCore-v3 grouped in pairs by the default Logical NeuronCore Configuration
(LNC=2), 4 ranks. `tests/core/test_one_fact.py` fails when a peak literal appears anywhere else.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pyarrow as pa

from .units import GIB

CORES_PER_CHIP = 2
# Tensor engine, dense, per chip (trainium.rst): 190 TFLOPS BF16 / FP16 / TF32 / cFP8, 47.5 FP32.
# FP8 runs at the BF16 rate on Trn1 (Neuron Explorer schema, `adjusted_hardware_flops`).
CHIP_TENSOR_FLOPS = {"bf16": 190e12, "fp16": 190e12, "tf32": 190e12, "fp8": 190e12, "fp32": 47.5e12}
# Vector and scalar engines, FP32, per NeuronCore (NKI architecture guide).
CORE_VECTOR_FLOPS = 2.3e12
CORE_SCALAR_FLOPS = 2.9e12
# HBM per chip (trainium.rst; NKI architecture guide): 32 GiB at 820 GiB/s.
CHIP_HBM_BYTES = 32 * GIB
CHIP_HBM_BYTES_PER_S = 820 * GIB
# DMA per chip (trainium.rst): ~1 TB/s; a collective between the two cores of a chip moves
# through it.
CHIP_DMA_BYTES_PER_S = 1e12


@dataclass(frozen=True)
class Chip:
    """One Trainium generation: its NeuronCores and the per-chip peaks."""

    name: str  # Trainium1, Trainium2
    neuron_core: str  # NeuronCore-v2, NeuronCore-v3
    physical_cores: int  # NeuronCores per chip
    default_lnc: int  # physical cores per logical core (rank) unless configured
    lncs: tuple[int, ...]  # the Logical NeuronCore Configurations the chip supports
    tensor_flops: dict  # dense tensor-engine peak per chip, by dtype, FLOP/s
    vector_flops: float  # vector engine FP32 peak per physical core
    scalar_flops: float  # scalar engine FP32 peak per physical core
    hbm_bytes: int
    hbm_bytes_per_s: float
    dma_bytes_per_s: float
    link: str  # the chip-to-chip link: NeuronLink-v2, NeuronLink-v3

    def ranks_per_chip(self, lnc: int | None = None) -> int:
        """Logical NeuronCores (ranks) per chip at `lnc` (the default when None)."""
        return self.physical_cores // (lnc or self.default_lnc)


TRAINIUM1 = Chip(
    "Trainium1",
    "NeuronCore-v2",
    physical_cores=CORES_PER_CHIP,
    default_lnc=1,
    lncs=(1,),
    tensor_flops=CHIP_TENSOR_FLOPS,
    vector_flops=CORE_VECTOR_FLOPS,
    scalar_flops=CORE_SCALAR_FLOPS,
    hbm_bytes=CHIP_HBM_BYTES,
    hbm_bytes_per_s=CHIP_HBM_BYTES_PER_S,
    dma_bytes_per_s=CHIP_DMA_BYTES_PER_S,
    link="NeuronLink-v2",
)

# Trainium2 (trainium2.rst): 8 NeuronCore-v3 per chip delivering 1,299 FP8, 667 BF16 / FP16 / TF32
# and 181 FP32 dense TFLOPS; 96 GiB HBM at 2.9 TB/s; 3.5 TB/s DMA. FP8 runs at ~2x the BF16 rate.
# Vector 1 TFLOPS and scalar 1.2 TFLOPS FP32 per NeuronCore-v3 (neuron-core-v3.rst). LNC=1 or 2,
# 2 by default on Trn2 (logical-neuroncore-config.rst; neuronx-cc error EVRF066: "neuronx-cc
# defaults to LNC=2 on Trn2 and later").
TRAINIUM2 = Chip(
    "Trainium2",
    "NeuronCore-v3",
    physical_cores=8,
    default_lnc=2,
    lncs=(1, 2),
    tensor_flops={"bf16": 667e12, "fp16": 667e12, "tf32": 667e12, "fp8": 1299e12, "fp32": 181e12},
    vector_flops=1.0e12,
    scalar_flops=1.2e12,
    hbm_bytes=96 * GIB,
    hbm_bytes_per_s=2.9e12,
    dma_bytes_per_s=3.5e12,
    link="NeuronLink-v3",
)
CHIPS = {chip.name: chip for chip in (TRAINIUM1, TRAINIUM2)}


@dataclass(frozen=True)
class InstanceType:
    name: str
    chips: int
    vcpus: int
    neuronlink_bytes_per_s: float | None  # per chip; None where the instance has no NeuronLink
    network_bytes_per_s: float  # per node: EFA (ENA on trn1.2xlarge)
    network_kind: str = "EFA"  # the inter-node network: EFA, or ENA where the instance has no EFA
    chip: Chip = field(default=TRAINIUM1)
    # A Trn2 UltraServer joins `ultraserver_nodes` instances by NeuronLink at
    # `ultraserver_link_bytes_per_s` per chip (chips at the same torus coordinates form a ring).
    ultraserver_nodes: int = 1
    ultraserver_link_bytes_per_s: float | None = None

    @property
    def cores(self) -> int:
        """Ranks per node at the chip's default LNC."""
        return self.chips * self.chip.ranks_per_chip()


# Trn1 instance types (aws.amazon.com/ec2/instance-types/trn1; trn1-arch.rst). NeuronLink-v2
# per chip is the least certain figure (sources disagree; see docs/hardware.md).
# Trn2 (trn2-arch.rst): 16 Trainium2 in a 4x4 2D torus, 192 vCPUs, NeuronLink-v3 1,024 GB/s per
# chip inside the instance, EFAv3 3,200 Gbps; a Trn2 UltraServer is 4 trn2u.48xlarge joined by
# NeuronLink-v3 at 256 GB/s per chip between instances.
INSTANCE_TYPES = {
    "trn1.2xlarge": InstanceType(
        "trn1.2xlarge", chips=1, vcpus=8, neuronlink_bytes_per_s=None, network_bytes_per_s=25e9 / 8, network_kind="ENA"
    ),
    "trn1.32xlarge": InstanceType(
        "trn1.32xlarge", chips=16, vcpus=128, neuronlink_bytes_per_s=384 * GIB, network_bytes_per_s=800e9 / 8
    ),
    "trn1n.32xlarge": InstanceType(
        "trn1n.32xlarge", chips=16, vcpus=128, neuronlink_bytes_per_s=768 * GIB, network_bytes_per_s=1600e9 / 8
    ),
    "trn2.48xlarge": InstanceType(
        "trn2.48xlarge",
        chips=16,
        vcpus=192,
        neuronlink_bytes_per_s=1024e9,
        network_bytes_per_s=3200e9 / 8,
        network_kind="EFAv3",
        chip=TRAINIUM2,
    ),
    "trn2u.48xlarge": InstanceType(
        "trn2u.48xlarge",
        chips=16,
        vcpus=192,
        neuronlink_bytes_per_s=1024e9,
        network_bytes_per_s=3200e9 / 8,
        network_kind="EFAv3",
        chip=TRAINIUM2,
        ultraserver_nodes=4,
        ultraserver_link_bytes_per_s=256e9,
    ),
}

# Where each fact comes from (files of github.com/aws-neuron/aws-neuron-sdk unless a URL), for
# docs/hardware.md; "(uncertain)" there marks figures where public sources disagree.
SOURCES = {
    "cores_per_chip": "about-neuron/arch/neuron-hardware/trainium.rst",
    "tensor": "trainium.rst",
    "fp8": "Neuron Explorer profile schema (tools/neuron-explorer/profile-schema-reference.rst), "
    "`adjusted_hardware_flops` weights FP8 at 1.0x on Trn1",
    "vector_scalar": "NKI architecture guide (nki/guides/architecture/trainium_inferentia2_arch.rst)",
    "hbm": "trainium.rst; NKI architecture guide",
    "dma": "trainium.rst",
    "older": "trn1-arch.rst history",
    "instances": "trn1-arch.rst; aws.amazon.com/ec2/instance-types/trn1",
    "neuronlink": "trn1-arch.rst instance table header",
    "network": "aws.amazon.com/ec2/instance-types/trn1",
    "topology": "`neuron-ls --topology` (tools/neuron-sys-tools/neuron-ls.rst)",
    "trn2_cores": "about-neuron/arch/neuron-hardware/trainium2.rst (eight NeuronCore-v3 per chip)",
    "trn2_lnc": "about-neuron/arch/neuron-features/logical-neuroncore-config.rst (LNC 1 or 2); compiler "
    "error EVRF066 (compiler/error-codes/EVRF066.rst: neuronx-cc defaults to LNC=2 on Trn2); "
    "training/best-practices.rst (LNC2: 64 ranks per trn2.48xlarge, ~24 GiB HBM per rank)",
    "trn2_tensor": "trainium2.rst: 667 BF16/FP16/TF32, 1,299 FP8, 181 FP32 dense TFLOPS per chip "
    "(neuron-core-v3.rst states 79 BF16 / 158 cFP8 per core, 632 / 1,264 per chip: "
    "the chip figures are used)",
    "trn2_vector_scalar": "about-neuron/arch/neuron-hardware/neuron-core-v3.rst (vector 1 TFLOPS, scalar "
    "1.2 TFLOPS FP32 per NeuronCore-v3)",
    "trn2_hbm": "trainium2.rst (96 GiB at 2.9 TB/s; the NKI Trainium2 guide says 3 TB/s)",
    "trn2_dma": "trainium2.rst (3.5 TB/s)",
    "trn2_instances": "general/arch/neuron-hardware/trn2-arch.rst (16 chips, 192 vCPUs; UltraServer "
    "= 4 x trn2u.48xlarge, 64 chips)",
    "trn2_neuronlink": "trn2-arch.rst: intra-instance NeuronLink-v3 1,024 GB/s per chip, inter-instance "
    "256 GB/s per chip in an UltraServer (one version of the page writes GiB/s; "
    "trainium2.rst gives 1.28 TB/s per chip in all, = 1,024 + 256)",
    "trn2_network": "trn2-arch.rst: EFAv3 3,200 Gbps per instance",
    "trn2_topology": "trn2-arch.rst: 4x4 2D torus of chips; same-coordinate chips of the UltraServer's "
    "4 instances form a ring",
}
# Published once, superseded (SDK 2.3 era), per chip: stated in the docs as not used.
OLDER_CHIP_TENSOR_FLOPS = {"bf16": 210e12, "fp32": 52.5e12}

# (column, arrow type, meaning): the `hardware` table's columns, documented in docs/stdlib.md
COLUMNS = [
    ("instance_type", pa.string(), "EC2 instance type, e.g. trn1.32xlarge"),
    ("chip", pa.string(), "Trainium generation: Trainium1 or Trainium2"),
    ("neuron_core", pa.string(), "NeuronCore generation: NeuronCore-v2 (Trn1) or NeuronCore-v3 (Trn2)"),
    (
        "lnc",
        pa.int64(),
        "Logical NeuronCore Configuration the per-core figures assume: physical cores per rank "
        "(1 on Trn1; 2, the default, on Trn2)",
    ),
    ("chips", pa.int64(), "Trainium chips per instance"),
    ("cores", pa.int64(), "(logical) NeuronCores per instance at `lnc` (= ranks per node)"),
    ("cores_per_chip", pa.int64(), "(logical) NeuronCores per chip at `lnc`"),
    ("hbm_bytes_per_core", pa.int64(), "device memory (HBM) per NeuronCore, bytes"),
    ("hbm_bytes_per_s_per_core", pa.float64(), "HBM bandwidth per NeuronCore, bytes/s"),
    ("tensor_bf16_flops", pa.float64(), "tensor engine peak per NeuronCore, dense BF16, FLOP/s"),
    ("tensor_fp16_flops", pa.float64(), "tensor engine peak per NeuronCore, dense FP16, FLOP/s"),
    ("tensor_tf32_flops", pa.float64(), "tensor engine peak per NeuronCore, dense TF32, FLOP/s"),
    (
        "tensor_fp8_flops",
        pa.float64(),
        "tensor engine peak per NeuronCore, dense FP8 (no gain over BF16 on Trn1, about 2x on Trn2), FLOP/s",
    ),
    ("tensor_fp32_flops", pa.float64(), "tensor engine peak per NeuronCore, dense FP32, FLOP/s"),
    ("vector_fp32_flops", pa.float64(), "vector engine peak per NeuronCore, FP32, FLOP/s"),
    ("scalar_fp32_flops", pa.float64(), "scalar engine peak per NeuronCore, FP32, FLOP/s"),
    (
        "chip_link_bytes_per_s",
        pa.float64(),
        "link class `chip`: DMA bandwidth per NeuronCore, the bound of a collective between the cores of one chip, "
        "bytes/s",
    ),
    (
        "node_link_bytes_per_s",
        pa.float64(),
        "link class `node`: NeuronLink (v2 on Trn1, v3 on Trn2) bandwidth per NeuronCore inside a node, bytes/s; "
        "null without NeuronLink",
    ),
    (
        "ultraserver_link_bytes_per_s",
        pa.float64(),
        "NeuronLink-v3 bandwidth per NeuronCore between the instances of a Trn2 UltraServer, bytes/s; null elsewhere",
    ),
    (
        "ultraserver_nodes",
        pa.int64(),
        "instances joined by NeuronLink in one UltraServer (4 for trn2u.48xlarge; 1 elsewhere)",
    ),
    (
        "network_bytes_per_s",
        pa.float64(),
        "link class `network`: EFA (ENA on trn1.2xlarge) bandwidth per node, shared by its cores, bytes/s",
    ),
    ("network_kind", pa.string(), "the inter-node network: EFA, EFAv3 (Trn2), or ENA on trn1.2xlarge (no EFA)"),
]
DOC = (
    "One row per Trainium instance type: cores, device memory, engine peaks per precision and "
    "link peaks per class, from `trnprof/hardware.py` (values and public sources: docs/hardware.md)."
)


def _per_core(bytes_per_s: float | None, per_chip: int) -> float | None:
    return None if bytes_per_s is None else bytes_per_s / per_chip


def row(instance: InstanceType, lnc: int | None = None) -> dict:
    """The `hardware` row of one instance type, per logical core at `lnc` (the chip's default)."""
    chip = instance.chip
    lnc = lnc or chip.default_lnc
    per_chip = chip.ranks_per_chip(lnc)
    tensor = {f"tensor_{p}_flops": flops / per_chip for p, flops in chip.tensor_flops.items()}
    return {
        "instance_type": instance.name,
        "chip": chip.name,
        "neuron_core": chip.neuron_core,
        "lnc": lnc,
        "chips": instance.chips,
        "cores": instance.chips * per_chip,
        "cores_per_chip": per_chip,
        "hbm_bytes_per_core": chip.hbm_bytes // per_chip,
        "hbm_bytes_per_s_per_core": chip.hbm_bytes_per_s / per_chip,
        **tensor,
        "vector_fp32_flops": chip.vector_flops * lnc,
        "scalar_fp32_flops": chip.scalar_flops * lnc,
        "chip_link_bytes_per_s": chip.dma_bytes_per_s / per_chip,
        "node_link_bytes_per_s": _per_core(instance.neuronlink_bytes_per_s, per_chip),
        "ultraserver_link_bytes_per_s": _per_core(instance.ultraserver_link_bytes_per_s, per_chip),
        "ultraserver_nodes": instance.ultraserver_nodes,
        "network_bytes_per_s": instance.network_bytes_per_s,
        "network_kind": instance.network_kind,
    }


def table() -> pa.Table:
    """The `hardware` table: every instance type, the columns of `COLUMNS`."""
    rows = [row(instance) for instance in INSTANCE_TYPES.values()]
    return pa.table({name: pa.array([r[name] for r in rows], type=typ) for name, typ, _ in COLUMNS})


def lookup(instance_type: str | None) -> dict | None:
    """The `hardware` row of an instance type; None when it is not a known Trainium type."""
    instance = INSTANCE_TYPES.get(instance_type or "")
    return None if instance is None else row(instance)


# GPUs a trace may come from (Kineto's deviceProperties name them): what the compute advice
# needs. Dense peaks of the SXM parts, per GPU (NVIDIA's V100, A100 and H100 datasheets; see
# docs/hardware.md); `match` is a case-insensitive substring of the device name.
@dataclass(frozen=True)
class GpuModel:
    model: str
    match: str
    bf16: bool  # BF16 arithmetic supported
    fp32_flops: float  # FP32 without tensor cores (how FP32 matmuls run by default)
    tensor_fp16_flops: float
    tensor_bf16_flops: float | None  # None: no BF16


GPU_MODELS = (
    GpuModel("V100", "v100", bf16=False, fp32_flops=15.7e12, tensor_fp16_flops=125e12, tensor_bf16_flops=None),
    GpuModel("A100", "a100", bf16=True, fp32_flops=19.5e12, tensor_fp16_flops=312e12, tensor_bf16_flops=312e12),
    GpuModel("H100", "h100", bf16=True, fp32_flops=67e12, tensor_fp16_flops=989.4e12, tensor_bf16_flops=989.4e12),
)
GPU_COLUMNS = [
    ("model", pa.string(), "GPU family, e.g. A100"),
    ("match", pa.string(), "lower-case text the device name (Kineto deviceProperties) contains"),
    ("bf16", pa.bool_(), "whether the GPU computes in BF16"),
    ("fp32_flops", pa.float64(), "FP32 peak without tensor cores (PyTorch's default for FP32 matmuls), FLOP/s"),
    ("tensor_fp16_flops", pa.float64(), "tensor-core peak, dense FP16, FLOP/s"),
    ("tensor_bf16_flops", pa.float64(), "tensor-core peak, dense BF16, FLOP/s; null without BF16"),
]
GPU_DOC = (
    "One row per GPU family a trace may come from: BF16 support and the peaks the compute advice "
    "compares, from `trnprof/hardware.py` (values and sources: docs/hardware.md)."
)


def gpu_table() -> pa.Table:
    """The `gpu_hardware` table: every GPU family, the columns of `GPU_COLUMNS`."""
    return pa.table({name: pa.array([getattr(g, name) for g in GPU_MODELS], type=typ) for name, typ, _ in GPU_COLUMNS})
