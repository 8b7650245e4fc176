"""docs/hardware.md, generated from the hardware table (`trnprof/hardware.py`): every figure and
its source come from there, so the page cannot state another number than the code uses."""

from __future__ import annotations

from . import hardware as hw
from .textfmt import markdown_table as _table
from .units import GB, GIB

INTRO = [
    "# Hardware facts",
    "",
    "`trnprof/hardware.py` is the one place trnprof states Trainium hardware facts; this page is",
    "generated from it. Every session exposes it as the `hardware` table (one row per instance type,",
    "columns in [stdlib.md](stdlib.md)); the views `run_hardware`, `link_peaks`, `collective_peaks`,",
    "`step_mfu` and `mfu`, the rules and the report read it, the execution model",
    "(`trnprof/model/hardware.py`) derives its per-core figures from it, and nothing else states a",
    "peak (`tests/core/test_one_fact.py` fails when a peak literal appears elsewhere). One rank",
    "drives one (logical) NeuronCore, and per-NeuronCore figures are the chip's divided by the ranks",
    "a chip holds: a Trainium1 chip has 2 NeuronCore-v2; a Trainium2 chip has 8 NeuronCore-v3,",
    "grouped in pairs by the default Logical NeuronCore Configuration (LNC=2): 4 ranks per chip, 64",
    "per trn2.48xlarge. The table states Trn2 at LNC=2; the execution model takes `cluster.lnc=1`",
    "(8 ranks per chip, each with half the per-core figures below).",
    "",
    "Sources are files of the public AWS Neuron documentation repository",
    '(github.com/aws-neuron/aws-neuron-sdk) unless said otherwise; "(uncertain)" marks figures where',
    "public sources disagree.",
    "",
]

PROSE = [
    "## Link classes",
    "",
    "A collective's bus bandwidth (nccl-tests convention, view `collectives`) is bounded by the",
    "links it crosses:",
    "",
    "- `chip`: between the NeuronCores of one chip, data moves by DMA through HBM: the core's",
    "  share of the chip's DMA bandwidth.",
    "- `node`: inside a node, the core's share of its chip's NeuronLink bandwidth (v2 on Trn1, v3 on",
    "  Trn2; the DMA share on trn1.2xlarge, which has no NeuronLink).",
    "- inside a Trn2 UltraServer (4 trn2u.48xlarge), between its instances: the core's share of the",
    "  chip's inter-instance NeuronLink-v3 (`ultraserver_link_bytes_per_s`); chips with the same torus",
    "  coordinates in the 4 instances form a ring. The execution model uses it; the stdlib views",
    "  still bound every inter-node group by EFA.",
    "- `network`: across nodes, the node's EFA bandwidth, shared by its cores; a replica group gets",
    "  its members' share of the node's cores (view `collective_peaks`).",
    "",
    "Collective latency: ~1–2 µs per hop inside a node, ~15 µs across nodes; below ~1 MiB a ring",
    "spends more time in hop latency than in moving data (neuron-runtime/explore/*-collective-comm.rst).",
    "The collectives rules cite this for their `min_bytes` defaults.",
    "",
    "## Software behaviour the rules cite",
    "",
    "- First compiles of a large model take minutes to an hour; `neuron_parallel_compile` and the",
    "  persistent cache (`NEURON_COMPILE_CACHE_URL`) avoid repeating them (neuronx-distributed and",
    "  torch-neuronx developer guides). Cited by `compile.slow_first_step`.",
    "- Mixed precision keeps FP32 master weights and FP32 Adam moments: 8 bytes of optimizer state per",
    "  parameter next to 2 (BF16) or 4 (FP32) bytes of parameters, divided by the data-parallel degree",
    "  when ZeRO-1 (`NeuronZero1Optimizer`) shards it (neuronx-distributed ZeRO-1 docs). Cited by",
    "  `memory.optimizer_state_unsharded`.",
    "",
    "## The execution model's own constants",
    "",
    "The simulator and the what-if model add figures of their own beside the table (systolic-array",
    "geometry, instruction and graph-launch overheads, collective latencies, achieved NeuronLink",
    "fraction, runtime-owned memory): `trnprof/model/hardware.py`, each with its source.",
    "",
    "## MFU",
    "",
    "`step_mfu` and `mfu` divide a step's FLOPs by the dense BF16 tensor-engine peak of every rank",
    "(the hardware table's `tensor_bf16_flops` of its instance type), unless the job metadata states",
    "its own `peak_flops_per_s`. BF16 is the denominator whatever the training precision, so an FP32",
    "model shows a low MFU (see `compute.fp32_matmul`).",
    "",
]


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
        (
            "NeuronCores per chip",
            f"{hw.CORES_PER_CHIP} × NeuronCore-v2",
            f"`cores_per_chip` = {hw.CORES_PER_CHIP}",
            src["cores_per_chip"],
        ),
        (
            "tensor engine, dense",
            f"{_tflops(tensor['bf16'])} TFLOPS {' / '.join(same_as_bf16)}; {_tflops(tensor['fp32'])} TFLOPS FP32",
            " = ".join(f"`tensor_{p}_flops`" for p in ("bf16", "fp16", "tf32"))
            + f" = {_peak(per_core['tensor_bf16_flops'])}; "
            f"`tensor_fp32_flops` = {_peak(per_core['tensor_fp32_flops'])}",
            src["tensor"],
        ),
        (
            "FP8 on Trn1",
            "no speed-up over BF16",
            f"`tensor_fp8_flops` = {_peak(per_core['tensor_fp8_flops'])}",
            src["fp8"],
        ),
        (
            "vector / scalar engines",
            f"~{_tflops(hw.CORE_VECTOR_FLOPS)} / ~{_tflops(hw.CORE_SCALAR_FLOPS)} TFLOPS FP32 per core",
            f"`vector_fp32_flops` = {_peak(hw.CORE_VECTOR_FLOPS)}; `scalar_fp32_flops` = {_peak(hw.CORE_SCALAR_FLOPS)}",
            src["vector_scalar"],
        ),
        (
            "HBM",
            f"{hw.CHIP_HBM_BYTES // GIB} GiB at {hw.CHIP_HBM_BYTES_PER_S / GIB:g} GiB/s per chip",
            f"`hbm_bytes_per_core` = {per_core['hbm_bytes_per_core'] // GIB} GiB; "
            f"`hbm_bytes_per_s_per_core` = {per_core['hbm_bytes_per_s_per_core'] / GIB:g} GiB/s",
            src["hbm"],
        ),
        (
            "DMA",
            f"~{hw.CHIP_DMA_BYTES_PER_S / 1e12:g} TB/s per chip",
            f"`chip_link_bytes_per_s` = {per_core['chip_link_bytes_per_s'] / GB:g} GB/s",
            src["dma"],
        ),
        (
            "older published compute",
            f"{_tflops(hw.OLDER_CHIP_TENSOR_FLOPS['bf16'])} BF16 / "
            f"{_tflops(hw.OLDER_CHIP_TENSOR_FLOPS['fp32'])} FP32 TFLOPS per chip (SDK 2.3 era) "
            "(uncertain; not used)",
            "",
            src["older"],
        ),
    ]


def _trn2_rows() -> list[tuple]:
    chip, src = hw.TRAINIUM2, hw.SOURCES
    per_core = hw.row(hw.INSTANCE_TYPES["trn2.48xlarge"])
    t = chip.tensor_flops
    return [
        (
            "NeuronCores per chip",
            f"{chip.physical_cores} × {chip.neuron_core}; LNC "
            f"{' or '.join(map(str, chip.lncs))}, {chip.default_lnc} by default",
            f"`lnc` = {per_core['lnc']}; `cores_per_chip` = {per_core['cores_per_chip']}",
            src["trn2_cores"] + "; " + src["trn2_lnc"],
        ),
        (
            "tensor engine, dense",
            f"{_tflops(t['bf16'])} TFLOPS BF16 / FP16 / TF32; {t['fp8'] / 1e12:,g} FP8; {_tflops(t['fp32'])} FP32",
            f"`tensor_bf16_flops` = {_peak(per_core['tensor_bf16_flops'])}; `tensor_fp8_flops` = "
            f"{_peak(per_core['tensor_fp8_flops'])}; `tensor_fp32_flops` = {_peak(per_core['tensor_fp32_flops'])}",
            src["trn2_tensor"],
        ),
        (
            "vector / scalar engines",
            f"{_tflops(chip.vector_flops)} / {_tflops(chip.scalar_flops)} TFLOPS FP32 per {chip.neuron_core}",
            f"`vector_fp32_flops` = {_peak(per_core['vector_fp32_flops'])}; `scalar_fp32_flops` = "
            f"{_peak(per_core['scalar_fp32_flops'])} (× LNC)",
            src["trn2_vector_scalar"],
        ),
        (
            "HBM",
            f"{chip.hbm_bytes // GIB} GiB at {chip.hbm_bytes_per_s / 1e12:g} TB/s per chip",
            f"`hbm_bytes_per_core` = {per_core['hbm_bytes_per_core'] // GIB} GiB; "
            f"`hbm_bytes_per_s_per_core` = {per_core['hbm_bytes_per_s_per_core'] / GB:g} GB/s",
            src["trn2_hbm"],
        ),
        (
            "DMA",
            f"{chip.dma_bytes_per_s / 1e12:g} TB/s per chip",
            f"`chip_link_bytes_per_s` = {per_core['chip_link_bytes_per_s'] / GB:g} GB/s",
            src["trn2_dma"],
        ),
        (
            "tensor-engine throttling",
            "throttles (dI/dt) when its utilisation jumps; no published ramp",
            "",
            "issue 36 / Neuron Explorer throttle events; the model's ramp is an assumption "
            "(trnprof/model/hardware.py `THROTTLE_RAMP_S`)",
        ),
    ]


def _per_instance(label: str, value, source: str) -> tuple:
    return (label, *[value(t) for t in hw.INSTANCE_TYPES.values()], source)


def _link(bytes_per_s: float | None, missing: str) -> str:
    if bytes_per_s is None:
        return missing
    return f"{bytes_per_s / GIB:g} GiB/s" if bytes_per_s % GIB == 0 else f"{bytes_per_s / GB:,g} GB/s"


def _instance_rows() -> list[tuple]:
    src = hw.SOURCES
    return [
        _per_instance(
            "chip",
            lambda t: f"{t.chip.name} ({t.chip.neuron_core})",
            "Trn1: " + src["instances"] + "; Trn2: " + src["trn2_instances"],
        ),
        _per_instance("chips / NeuronCores (`chips` / `cores`)", lambda t: f"{t.chips} / {t.cores}", "same"),
        _per_instance("vCPUs", lambda t: str(t.vcpus), "same"),
        _per_instance(
            "NeuronLink per chip (Trn1: v2, uncertain; Trn2: v3)",
            lambda t: _link(t.neuronlink_bytes_per_s, "n/a"),
            "Trn1: " + src["neuronlink"] + "; Trn2: " + src["trn2_neuronlink"],
        ),
        _per_instance(
            "`node_link_bytes_per_s` (per core)",
            lambda t: _link(hw.row(t)["node_link_bytes_per_s"], "null"),
            "the above over `cores_per_chip`",
        ),
        _per_instance(
            "UltraServer: instances / NeuronLink between them per chip",
            lambda t: (
                "n/a"
                if t.ultraserver_nodes == 1
                else f"{t.ultraserver_nodes} ({t.ultraserver_nodes * t.chips} chips) / "
                f"{_link(t.ultraserver_link_bytes_per_s, '')}"
            ),
            src["trn2_neuronlink"],
        ),
        _per_instance(
            "network per node (`network_bytes_per_s`; EFA, EFAv3 on Trn2, ENA on trn1.2xlarge)",
            lambda t: f"{t.network_bytes_per_s * 8 / GB:,g} Gbps ({t.network_bytes_per_s / GB:g} GB/s)",
            "Trn1: " + src["network"] + "; Trn2: " + src["trn2_network"],
        ),
        _per_instance(
            "intra-node topology",
            lambda t: "n/a" if t.chips == 1 else "4×4 2D torus of chips",
            "Trn1: " + src["topology"] + "; Trn2: " + src["trn2_topology"],
        ),
    ]


def hardware_md(header: str) -> str:
    lines = [header, *INTRO, "## Trainium1 chip and NeuronCore-v2", ""]
    lines += _table(_chip_rows(), ("fact", "value", "per NeuronCore (table column)", "source"))
    lines += ["", "## Trainium2 chip and NeuronCore-v3", ""]
    lines += _table(_trn2_rows(), ("fact", "value", "per NeuronCore at LNC=2 (table column)", "source"))
    lines += ["", "## Instance types", ""]
    lines += _table(_instance_rows(), ("", *hw.INSTANCE_TYPES, "source"))
    lines += ["", *PROSE]
    return "\n".join(lines)
