"""The Trainium hardware table: one row per instance type, every peak the analysis compares with.

The one place trnprof states published hardware facts. Sessions expose it as the `hardware` table
(see `trnprof/session_tables.py`), which rules, the MFU view and the report read; the execution
model (`trnprof/model/hardware.py`) derives its figures from it; docs/hardware.md is generated
from it (`trnprof.docgen`). Per-core figures are the chip's halved: a Trainium1 chip has 2
NeuronCore-v2 and one rank drives one NeuronCore. `tests/core/test_one_fact.py` fails when a peak
literal appears anywhere else.
"""

from __future__ import annotations

from dataclasses import dataclass

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
class InstanceType:
    name: str
    chips: int
    vcpus: int
    neuronlink_bytes_per_s: float | None  # per chip; None where the instance has no NeuronLink
    network_bytes_per_s: float            # per node: EFA (ENA on trn1.2xlarge)
    network_kind: str = "EFA"             # the inter-node network: EFA, or ENA where the instance has no EFA

    @property
    def cores(self) -> int:
        return self.chips * CORES_PER_CHIP


# Trn1 instance types (aws.amazon.com/ec2/instance-types/trn1; trn1-arch.rst). NeuronLink-v2
# per chip is the least certain figure (sources disagree; see docs/hardware.md).
INSTANCE_TYPES = {
    "trn1.2xlarge": InstanceType("trn1.2xlarge", chips=1, vcpus=8, neuronlink_bytes_per_s=None,
                                 network_bytes_per_s=25e9 / 8, network_kind="ENA"),
    "trn1.32xlarge": InstanceType("trn1.32xlarge", chips=16, vcpus=128, neuronlink_bytes_per_s=384 * GIB,
                                  network_bytes_per_s=800e9 / 8),
    "trn1n.32xlarge": InstanceType("trn1n.32xlarge", chips=16, vcpus=128, neuronlink_bytes_per_s=768 * GIB,
                                   network_bytes_per_s=1600e9 / 8),
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
}
# Published once, superseded (SDK 2.3 era), per chip: stated in the docs as not used.
OLDER_CHIP_TENSOR_FLOPS = {"bf16": 210e12, "fp32": 52.5e12}

# (column, arrow type, meaning): the `hardware` table's columns, documented in docs/stdlib.md
COLUMNS = [
    ("instance_type", pa.string(), "EC2 instance type, e.g. trn1.32xlarge"),
    ("chips", pa.int64(), "Trainium chips per instance"),
    ("cores", pa.int64(), "NeuronCores per instance (= ranks per node)"),
    ("cores_per_chip", pa.int64(), "NeuronCores per chip"),
    ("hbm_bytes_per_core", pa.int64(), "device memory (HBM) per NeuronCore, bytes"),
    ("hbm_bytes_per_s_per_core", pa.float64(), "HBM bandwidth per NeuronCore, bytes/s"),
    ("tensor_bf16_flops", pa.float64(), "tensor engine peak per NeuronCore, dense BF16, FLOP/s"),
    ("tensor_fp16_flops", pa.float64(), "tensor engine peak per NeuronCore, dense FP16, FLOP/s"),
    ("tensor_tf32_flops", pa.float64(), "tensor engine peak per NeuronCore, dense TF32, FLOP/s"),
    ("tensor_fp8_flops", pa.float64(), "tensor engine peak per NeuronCore, dense FP8 (no gain over BF16 on Trn1), FLOP/s"),
    ("tensor_fp32_flops", pa.float64(), "tensor engine peak per NeuronCore, dense FP32, FLOP/s"),
    ("vector_fp32_flops", pa.float64(), "vector engine peak per NeuronCore, FP32, FLOP/s"),
    ("scalar_fp32_flops", pa.float64(), "scalar engine peak per NeuronCore, FP32, FLOP/s"),
    ("chip_link_bytes_per_s", pa.float64(),
     "link class `chip`: DMA bandwidth per NeuronCore, the bound of a collective between the cores of one chip, bytes/s"),
    ("node_link_bytes_per_s", pa.float64(),
     "link class `node`: NeuronLink-v2 bandwidth per NeuronCore inside a node, bytes/s; null without NeuronLink"),
    ("network_bytes_per_s", pa.float64(),
     "link class `network`: EFA (ENA on trn1.2xlarge) bandwidth per node, shared by its cores, bytes/s"),
    ("network_kind", pa.string(), "the inter-node network: EFA, or ENA on trn1.2xlarge (no EFA)"),
]
DOC = ("One row per Trainium instance type: cores, device memory, engine peaks per precision and "
       "link peaks per class, from `trnprof/hardware.py` (values and public sources: docs/hardware.md).")


def row(instance: InstanceType) -> dict:
    """The `hardware` row of one instance type."""
    tensor = {f"tensor_{p}_flops": flops / CORES_PER_CHIP for p, flops in CHIP_TENSOR_FLOPS.items()}
    return {"instance_type": instance.name, "chips": instance.chips, "cores": instance.cores,
            "cores_per_chip": CORES_PER_CHIP, "hbm_bytes_per_core": CHIP_HBM_BYTES // CORES_PER_CHIP,
            "hbm_bytes_per_s_per_core": CHIP_HBM_BYTES_PER_S / CORES_PER_CHIP, **tensor,
            "vector_fp32_flops": CORE_VECTOR_FLOPS, "scalar_fp32_flops": CORE_SCALAR_FLOPS,
            "chip_link_bytes_per_s": CHIP_DMA_BYTES_PER_S / CORES_PER_CHIP,
            "node_link_bytes_per_s": (None if instance.neuronlink_bytes_per_s is None
                                      else instance.neuronlink_bytes_per_s / CORES_PER_CHIP),
            "network_bytes_per_s": instance.network_bytes_per_s, "network_kind": instance.network_kind}


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
    bf16: bool                       # BF16 arithmetic supported
    fp32_flops: float                # FP32 without tensor cores (how FP32 matmuls run by default)
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
GPU_DOC = ("One row per GPU family a trace may come from: BF16 support and the peaks the compute advice "
           "compares, from `trnprof/hardware.py` (values and sources: docs/hardware.md).")


def gpu_table() -> pa.Table:
    """The `gpu_hardware` table: every GPU family, the columns of `GPU_COLUMNS`."""
    return pa.table({name: pa.array([getattr(g, name) for g in GPU_MODELS], type=typ)
                     for name, typ, _ in GPU_COLUMNS})
