"""Which canonical kind and lane each Kineto event gets, column-wise (the table in docs/ingest.md).

Kinds: GPU kernels are `compute`, communication kernels `collective` (`p2p` for send/recv);
`gpu_memcpy` is `transfer`, `gpu_memset` `memory`; DataLoader iteration is `input`;
`ProfilerStep#N` is `step`; `gloo:*` collectives (gloo worker threads) are `collective`; host
work (`cpu_op`, `cuda_runtime`, `cuda_driver`, `python_function`, ...) is `host`; annotations,
GPU-side annotations, syncs and unknown host-side categories are `annotation` (never device
time). Device-side categories of other accelerators (`mtia_ccp_events`, `xpu_*`, `hpu_*`,
`privateuse1_*` events other than runtime and driver calls) are device work of a kind the
ingester does not know: `compute` on a `device/...` lane, counted in the ingest report
(`unknown_device_events`), never turned into annotations.
CPU-only traces (no kernel, memcpy or memset at all): the CPU is the device, so `cpu_op` is
`compute` and `c10d::*` collectives and `record_param_comms` (the record around a collective
call, with its `Collective name`, `In msg nelems`, `dtype`, `Seq` args in some PyTorch versions)
are `collective` (`kinds` returns both variants; the file's end decides which applies).
Lanes: `gpu/stream-N` for GPU-side events (`gpuD/stream-N` when a file holds several devices),
`host/tid-N` for host threads, `trace/<pid>` for the profiler's own non-numeric pids.
"""

from __future__ import annotations

import re

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

GPU_CATEGORIES = ("kernel", "gpu_memcpy", "gpu_memset", "gpu_user_annotation", "cuda_sync")
DEVICE_WORK_CATEGORIES = ("kernel", "gpu_memcpy", "gpu_memset")
HOST_CATEGORIES = (
    "cpu_op",
    "cuda_runtime",
    "cuda_driver",
    "python_function",
    "overhead",
    "cpu_instant_event",
    "privateuse1_runtime",
    "privateuse1_driver",
    "mtia_runtime",
    "xpu_runtime",
    "xpu_driver",
)
INPUT_CATEGORIES = ("cpu_op", "user_annotation", "python_function")
# device-side events of accelerators whose event categories this ingester does not know
ACCELERATOR_CATEGORY = r"^(mtia|xpu|hpu|privateuse1)_"
# which platform a trace's categories name: the first that matches wins (ROCm keeps CUDA's
# category names, its runtime calls are `hip*`)
PLATFORM_CATEGORIES = (
    ("mtia", r"^mtia_"),
    ("xpu", r"^xpu_"),
    ("hpu", r"^hpu_"),
    ("cuda", r"^(kernel|gpu_memcpy|gpu_memset|cuda_runtime|cuda_driver)$"),
)

STEP_NAME = r"^ProfilerStep#(\d{1,9})$"  # step is int32: longer numbers stay annotations
# DataLoader iteration as PyTorch's profiler records it: `enumerate(DataLoader)#_MultiProcessing
# DataLoaderIter.__next__`, `DataLoader.__next__`, and torch-xla / torch-neuronx device loaders.
INPUT_NAME = r"enumerate\(DataLoader\)|DataLoader\w*(Iter)?\w*\.__next__|MpDeviceLoader|ParallelLoader"
# NCCL / RCCL (ROCm builds keep the nccl names) / HCCL communication kernels.
COMM_KERNEL = r"(?i)^(void\s+)?(nccl|rccl|hccl)"
GLOO_NAME = r"^gloo:"
C10D_NAME = r"^c10d::|^record_param_comms$"

P2P_OPS = ("send", "recv", "send_recv")

# Collective spellings (Collective name args, record_function names, kernel names) reduced to
# lower-case letters, matched by prefix in this order.
_OP_PREFIXES = (
    ("allreduce", "all_reduce"),
    ("allgather", "all_gather"),
    ("reducescatter", "reduce_scatter"),
    ("alltoall", "all_to_all"),
    ("broadcast", "broadcast"),
    ("bcast", "broadcast"),
    ("sendrecv", "send_recv"),
    ("send", "send"),
    ("isend", "send"),
    ("recv", "recv"),
    ("irecv", "recv"),
    ("reduce", "reduce"),
    ("gather", "gather"),
    ("scatter", "scatter"),
    ("barrier", "barrier"),
)
_KERNEL_OP = re.compile(r"(?i)(?:nccl|rccl|hccl)\w*?Kernel_([A-Za-z]+)")


def normalize_op(text: str | None) -> str | None:
    """`allreduce`, `nccl:_all_gather_base`, `c10d::alltoall_base_`, `ncclKernel_SendRecv_...`
    -> all_reduce, all_gather, all_to_all, send_recv; None when nothing is recognised."""
    if not isinstance(text, str) or not text:
        return None
    kernel = _KERNEL_OP.search(text)
    if kernel:
        text = kernel.group(1)
    else:
        text = re.sub(r"^(nccl|gloo|c10d|hccl|rccl)::?", "", text.strip(), flags=re.IGNORECASE)
    letters = re.sub(r"[^a-z]", "", text.lower())
    for prefix, op in _OP_PREFIXES:
        if letters.startswith(prefix):
            return op
    return None


def per_distinct(values, function) -> pa.Array:
    """`function` applied once per distinct value (names, pids and tids repeat a lot)."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    encoded = pc.dictionary_encode(values)
    return pc.take(function(encoded.dictionary), encoded.indices)


def distinct_rows(*columns: pa.Array) -> tuple[list[pa.Array], pa.Array]:
    """The distinct combinations of `columns` (one array per column) and, per row, the index of
    its combination: kinds and lanes are computed once per combination, not once per event."""
    combined = np.zeros(len(columns[0]), dtype=np.int64)
    parts = []
    for column in columns:
        if isinstance(column, pa.ChunkedArray):
            column = column.combine_chunks()
        encoded = pc.dictionary_encode(column, null_encoding="encode")
        size = max(len(encoded.dictionary), 1)
        combined = combined * size + encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
        parts.append((encoded.dictionary, size))
    groups = pc.dictionary_encode(pa.array(combined))  # hashing, not sorting
    unique = groups.dictionary.to_numpy()
    distinct = []
    for dictionary, size in reversed(parts):
        unique, code = np.divmod(unique, size)
        distinct.append(dictionary.take(pa.array(code)))
    return distinct[::-1], groups.indices


def expand(values: pa.Array, inverse: pa.Array) -> pa.DictionaryArray:
    """Per-combination values back to one per row (as a dictionary array: no copies)."""
    return pa.DictionaryArray.from_arrays(inverse, values)


def matches(values, pattern: str) -> pa.Array:
    """Regex search per row (false for nulls), evaluated once per distinct value."""
    return per_distinct(values, lambda d: pc.match_substring_regex(d, pattern)).fill_null(False)


def kinds(cat: pa.Array, name: pa.Array) -> tuple[pa.Array, pa.Array]:
    """The canonical kind of each X event in a GPU trace, and in a CPU-only trace (collectives
    are refined to p2p later)."""

    def when(mask, value, otherwise):
        return pc.if_else(mask, pa.scalar(value), otherwise)

    cat = cat.fill_null("")
    encoded = pc.dictionary_encode(name)

    def named(pattern):
        return pc.take(pc.match_substring_regex(encoded.dictionary, pattern), encoded.indices).fill_null(False)

    def is_cat(*cats):
        return pc.is_in(cat, pa.array(cats))

    kind = pa.repeat(pa.scalar("annotation"), len(cat))
    kind = when(is_cat(*HOST_CATEGORIES), "host", kind)
    cpu_op = is_cat("cpu_op")
    cpu_kind = when(cpu_op, "compute", kind)
    cpu_kind = when(pc.and_(is_cat("cpu_op", "user_annotation"), named(C10D_NAME)), "collective", cpu_kind)
    unknown_device = unknown_device_work(cat)
    result = []
    for k in (kind, cpu_kind):
        k = when(unknown_device, "compute", k)
        k = when(is_cat("kernel"), "compute", k)
        k = when(pc.and_(is_cat("kernel"), named(COMM_KERNEL)), "collective", k)
        k = when(is_cat("gpu_memcpy"), "transfer", k)
        k = when(is_cat("gpu_memset"), "memory", k)
        k = when(pc.and_(is_cat(*INPUT_CATEGORIES), named(INPUT_NAME)), "input", k)
        k = when(pc.and_(is_cat("cpu_op", "user_annotation"), named(GLOO_NAME)), "collective", k)
        k = when(pc.and_(is_cat("user_annotation"), named(STEP_NAME)), "step", k)
        result.append(k)
    return result[0], result[1]


def step_numbers(step_names: pa.Array) -> pa.Array:
    """N of `ProfilerStep#N`, for the names of step rows."""
    return pc.replace_substring_regex(step_names, STEP_NAME, r"\1").cast(pa.int64())


def lanes(cat: pa.Array, pid: pa.Array, tid: pa.Array, device_qualified: bool = False) -> pa.Array:
    """Lane names from category, pid and tid (pid/tid as JSON text). With `device_qualified`,
    GPU lanes name their device (`gpu0/stream-7`); `single_device_lanes` drops it later."""
    cat = cat.fill_null("")
    gpu = pc.is_in(cat, pa.array(GPU_CATEGORIES))
    unknown_device = unknown_device_work(cat)
    unquote = lambda d: pc.replace_substring_regex(d, r'^"(.*)"$', r"\1")  # noqa: E731
    tid_text = per_distinct(tid.fill_null("null"), unquote)
    pid_text = per_distinct(pid.fill_null("null"), unquote)
    if device_qualified:
        gpu_lane = pc.binary_join_element_wise("gpu", pid_text, "/stream-", tid_text, "")
    else:
        gpu_lane = pc.binary_join_element_wise("gpu/stream-", tid_text, "")
    numeric_pid = matches(pid.fill_null("null"), r"^-?\d+$")
    host_lane = pc.binary_join_element_wise("host/tid-", tid_text, "")
    trace_lane = pc.binary_join_element_wise(
        "trace/", pc.if_else(pc.equal(pid_text, ""), pa.scalar("global"), pid_text), ""
    )
    device_lane = pc.binary_join_element_wise("device/", cat, "/tid-", tid_text, "")
    return pc.if_else(
        gpu, gpu_lane, pc.if_else(unknown_device, device_lane, pc.if_else(numeric_pid, host_lane, trace_lane))
    )


def unknown_device_work(cat: pa.Array) -> pa.Array:
    """Per row: an accelerator's device-side category this ingester has no mapping for (its
    runtime and driver calls are host work)."""
    cat = cat.fill_null("")
    return pc.and_(
        pc.match_substring_regex(cat, ACCELERATOR_CATEGORY), pc.invert(pc.is_in(cat, pa.array(HOST_CATEGORIES)))
    )


def platforms(cat: pa.Array) -> set[str]:
    """The platforms the (distinct) categories of a trace name: mtia, xpu, hpu, cuda."""
    cat = cat.fill_null("")
    return {name for name, pattern in PLATFORM_CATEGORIES if pc.any(pc.match_substring_regex(cat, pattern)).as_py()}


def single_device_lanes(lane: pa.Array) -> pa.Array:
    """`gpuD/stream-N` -> `gpu/stream-N`, for files that hold one GPU."""
    return per_distinct(lane, lambda d: pc.replace_substring_regex(d, r"^gpu[^/]*/stream-", "gpu/stream-"))


def device_index(devices: set) -> int | None:
    """The GPU index of a single-device file (the pid of its GPU-side events), else None."""
    numeric = [d for d in devices if d and re.fullmatch(r"\d+", d)]
    return int(numeric[0]) if len(numeric) == 1 and len(devices) == 1 else None


# Element sizes of PyTorch dtypes as record_param_comms (`dtype`: c10 ScalarType names) and
# `Input type` (C++ type names) spell them; source: c10/core/ScalarType.h.
DTYPE_BYTES = {
    "float": 4,
    "float32": 4,
    "double": 8,
    "float64": 8,
    "half": 2,
    "float16": 2,
    "c10::half": 2,
    "bfloat16": 2,
    "c10::bfloat16": 2,
    "long": 8,
    "int64": 8,
    "long int": 8,
    "int": 4,
    "int32": 4,
    "short": 2,
    "int16": 2,
    "char": 1,
    "signed char": 1,
    "int8": 1,
    "byte": 1,
    "unsigned char": 1,
    "uint8": 1,
    "bool": 1,
    "complexfloat": 8,
    "c10::complex<float>": 8,
    "complexdouble": 16,
    "c10::complex<double>": 16,
    "complexhalf": 4,
    "float8_e4m3fn": 1,
    "float8_e5m2": 1,
    "float8_e4m3fnuz": 1,
    "float8_e5m2fnuz": 1,
    "c10::float8_e4m3fn": 1,
    "c10::float8_e5m2": 1,
    "uint16": 2,
    "uint32": 4,
    "uint64": 8,
    "unsigned short": 2,
    "unsigned int": 4,
    "unsigned long": 8,
    "fp32": 4,
    "fp16": 2,
    "bf16": 2,
    "fp8": 1,
}


def dtype_bytes(dtype) -> int | None:
    if not isinstance(dtype, str):
        return None
    return DTYPE_BYTES.get(dtype.strip().lower())
