"""docs/hardware.md, generated from the hardware table (`trnprof/hardware.py`): every figure and
its source come from there, so the page cannot state another number than the code uses."""

from __future__ import annotations

from . import hardware as hw
from .textfmt import markdown_table as _table
from .units import GB, GIB

INTRO = [
    "# Hardware facts", "",
    "`trnprof/hardware.py` is the one place trnprof states Trainium hardware facts; this page is",
    "generated from it. Every session exposes it as the `hardware` table (one row per instance type,",
    "columns in [stdlib.md](stdlib.md)); the views `run_hardware`, `link_peaks`, `collective_peaks`,",
    "`step_mfu` and `mfu`, the rules and the report read it, the execution model",
    "(`trnprof/model/hardware.py`) derives its per-core figures from it, and nothing else states a",
    "peak (`tests/core/test_one_fact.py` fails when a peak literal appears elsewhere). Per-NeuronCore",
    "figures are the chip's halved: a Trainium1 chip has 2 NeuronCore-v2 and one rank drives one",
    "NeuronCore.", "",
    "Sources are files of the public AWS Neuron documentation repository",
    "(github.com/aws-neuron/aws-neuron-sdk) unless said otherwise; \"(uncertain)\" marks figures where",
    "public sources disagree.", ""]

PROSE = [
    "## Link classes", "",
    "A collective's bus bandwidth (nccl-tests convention, view `collectives`) is bounded by the",
    "links it crosses:", "",
    "- `chip`: between the two NeuronCores of one chip, data moves by DMA through HBM: the core's",
    "  share of the chip's DMA bandwidth.",
    "- `node`: inside a node, the core's share of its chip's NeuronLink-v2 bandwidth (the DMA share",
    "  on trn1.2xlarge, which has no NeuronLink).",
    "- `network`: across nodes, the node's EFA bandwidth, shared by its cores; a replica group gets",
    "  its members' share of the node's cores (view `collective_peaks`).", "",
    "Collective latency: ~1–2 µs per hop inside a node, ~15 µs across nodes; below ~1 MiB a ring",
    "spends more time in hop latency than in moving data (neuron-runtime/explore/*-collective-comm.rst).",
    "The collectives rules cite this for their `min_bytes` defaults.", "",
    "## Software behaviour the rules cite", "",
    "- First compiles of a large model take minutes to an hour; `neuron_parallel_compile` and the",
    "  persistent cache (`NEURON_COMPILE_CACHE_URL`) avoid repeating them (neuronx-distributed and",
    "  torch-neuronx developer guides). Cited by `compile.slow_first_step`.",
    "- Mixed precision keeps FP32 master weights and FP32 Adam moments: 8 bytes of optimizer state per",
    "  parameter next to 2 (BF16) or 4 (FP32) bytes of parameters, divided by the data-parallel degree",
    "  when ZeRO-1 (`NeuronZero1Optimizer`) shards it (neuronx-distributed ZeRO-1 docs). Cited by",
    "  `memory.optimizer_state_unsharded`.", "",
    "## The execution model's own constants", "",
    "The simulator and the what-if model add figures of their own beside the table (systolic-array",
    "geometry, instruction and graph-launch overheads, collective latencies, achieved NeuronLink",
    "fraction, runtime-owned memory): `trnprof/model/hardware.py`, each with its source.", "",
    "## MFU", "",
    "`step_mfu` and `mfu` divide a step's FLOPs by the dense BF16 tensor-engine peak of every rank",
    "(the hardware table's `tensor_bf16_flops` of its instance type), unless the job metadata states",
    "its own `peak_flops_per_s`. BF16 is the denominator whatever the training precision, so an FP32",
    "model shows a low MFU (see `compute.fp32_matmul`).", ""]


def _tflops(flops: float) -> str:
    return f"{flops / 1e12:g}"


def _peak(flops: float) -> str:
    """A table value as the page writes it: 95e12."""
    return f"{_tflops(flops)}e12"


def _chip_rows() -> list[tuple]:
    per_core = hw.row(hw.INSTANCE_TYPES["trn1.32xlarge"])
    tensor, src = hw.CHIP_TENSOR_FLOPS, hw.SOURCES
    same_as_bf16 = [{"fp8": "cFP8"}.get(p, p.upper()) for p in tensor if p != "fp32" and tensor[p] == tensor["bf16"]]
    return [
        ("NeuronCores per chip", f"{hw.CORES_PER_CHIP} × NeuronCore-v2", f"`cores_per_chip` = {hw.CORES_PER_CHIP}",
         src["cores_per_chip"]),
        ("tensor engine, dense", f"{_tflops(tensor['bf16'])} TFLOPS {' / '.join(same_as_bf16)}; "
                                 f"{_tflops(tensor['fp32'])} TFLOPS FP32",
         " = ".join(f"`tensor_{p}_flops`" for p in ("bf16", "fp16", "tf32")) + f" = {_peak(per_core['tensor_bf16_flops'])}; "
         f"`tensor_fp32_flops` = {_peak(per_core['tensor_fp32_flops'])}", src["tensor"]),
        ("FP8 on Trn1", "no speed-up over BF16", f"`tensor_fp8_flops` = {_peak(per_core['tensor_fp8_flops'])}", src["fp8"]),
        ("vector / scalar engines", f"~{_tflops(hw.CORE_VECTOR_FLOPS)} / ~{_tflops(hw.CORE_SCALAR_FLOPS)} TFLOPS FP32 "
                                    "per core",
         f"`vector_fp32_flops` = {_peak(hw.CORE_VECTOR_FLOPS)}; `scalar_fp32_flops` = {_peak(hw.CORE_SCALAR_FLOPS)}",
         src["vector_scalar"]),
        ("HBM", f"{hw.CHIP_HBM_BYTES // GIB} GiB at {hw.CHIP_HBM_BYTES_PER_S / GIB:g} GiB/s per chip",
         f"`hbm_bytes_per_core` = {per_core['hbm_bytes_per_core'] // GIB} GiB; "
         f"`hbm_bytes_per_s_per_core` = {per_core['hbm_bytes_per_s_per_core'] / GIB:g} GiB/s", src["hbm"]),
        ("DMA", f"~{hw.CHIP_DMA_BYTES_PER_S / 1e12:g} TB/s per chip",
         f"`chip_link_bytes_per_s` = {per_core['chip_link_bytes_per_s'] / GB:g} GB/s", src["dma"]),
        ("older published compute", f"{_tflops(hw.OLDER_CHIP_TENSOR_FLOPS['bf16'])} BF16 / "
                                    f"{_tflops(hw.OLDER_CHIP_TENSOR_FLOPS['fp32'])} FP32 TFLOPS per chip (SDK 2.3 era) "
                                    "(uncertain; not used)", "", src["older"]),
    ]


def _per_instance(label: str, value, source: str) -> tuple:
    return (label, *[value(t) for t in hw.INSTANCE_TYPES.values()], source)


def _link(bytes_per_s: float | None, missing: str) -> str:
    return missing if bytes_per_s is None else f"{bytes_per_s / GIB:g} GiB/s"


def _instance_rows() -> list[tuple]:
    src = hw.SOURCES
    return [
        _per_instance("chips / NeuronCores (`chips` / `cores`)", lambda t: f"{t.chips} / {t.cores}", src["instances"]),
        _per_instance("vCPUs", lambda t: str(t.vcpus), "same"),
        _per_instance("NeuronLink-v2 per chip (uncertain)", lambda t: _link(t.neuronlink_bytes_per_s, "n/a"),
                      src["neuronlink"]),
        _per_instance("`node_link_bytes_per_s` (per core)",
                      lambda t: _link(hw.row(t)["node_link_bytes_per_s"], "null"), "the above, halved"),
        _per_instance("network per node (`network_bytes_per_s`; EFA, ENA on trn1.2xlarge)",
                      lambda t: f"{t.network_bytes_per_s * 8 / GB:,g} Gbps ({t.network_bytes_per_s / GB:g} GB/s)",
                      src["network"]),
        _per_instance("intra-node topology", lambda t: "n/a" if t.chips == 1 else "4×4 2D torus of chips",
                      src["topology"]),
    ]


def hardware_md(header: str) -> str:
    lines = [header, *INTRO, "## Trainium1 chip and NeuronCore-v2", ""]
    lines += _table(_chip_rows(), ("fact", "value", "per NeuronCore (table column)", "source"))
    lines += ["", "## Instance types", ""]
    lines += _table(_instance_rows(), ("", *hw.INSTANCE_TYPES, "source"))
    lines += ["", *PROSE]
    return "\n".join(lines)
