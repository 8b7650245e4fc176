"""The device profile of a simulated job, in the Neuron Explorer schema (v7.4.0): the tables
`trnprof simulate --device-profile` writes beside the run (`neuron_explorer/<table>`), the same
ones `trnprof ingest` copies from a real Explorer profile, so the stdlib's device views and the
`device` rule pack read both alike (docs/execution-model.md, "Device profile").

Bounded at any scale: a few ranks (default rank 0 and the last rank) and the last steady steps
are profiled, and each op becomes at most `rows_per_op` instruction rows, each a group of
consecutive 128 x 128 x 512 matmul tiles (its FLOPs summed); the manifest states the choice.

Each compute op of the run (what the execution model times: overhead + max(engine, HBM) + spill)
is laid out as Explorer would show it: the op's fixed overhead on the sync engine (instruction
issue, semaphore waits, DMA setup), then its body: the tensor (or vector) engine busy for its
engine time and the DMA queues for its HBM traffic, both from the body's start; the engine that
bounds the op fills the body. Tensor-engine instructions are shadowed on the scalar engine by a
PSUM-to-SBUF copy of an eighth of their time (an assumption: the evacuation overlaps the matmuls).
Under `sbuf_spill` the spill save and reload follow the body on spill queues; under `throttle`
each tensor-engine body is a Throttle window at k/n = the fault's utilization.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from trnprof.errors import TrnprofError
from trnprof.model import architecture
from trnprof.model.faults import Effects
from trnprof.model.hardware import CORE_DMA_BW, MOVING_MAX, PE_COLS, PE_ROWS

SCHEMA_VERSION = "7.4.0"
TILE_FLOPS = 2 * PE_ROWS * PE_COLS * MOVING_MAX  # one matmul instruction: stationary x moving tile
PACKET_BYTES = 64 * 1024  # DMA packet size of a large transfer
ROWS_PER_OP = 32
MAX_ROWS_PER_STEP = 20_000  # tensor-engine instruction rows per profiled rank and step, at most
SCALAR_SHADOW = 1 / 8
THROTTLE_N = 1000
_CC_NAMES = {
    "all_reduce": "AllReduce",
    "all_gather": "AllGather",
    "reduce_scatter": "ReduceScatter",
    "all_to_all": "AllToAll",
    "send": "Send",
    "recv": "Recv",
}


@dataclass
class _Tables:
    """Column lists of the tables being built."""

    instruction: dict = field(
        default_factory=lambda: {
            k: []
            for k in (
                "rank",
                "step",
                "start_ts",
                "end_ts",
                "duration_ns",
                "engine",
                "opcode",
                "operands",
                "id",
                "pc",
                "bir_id",
                "hlo_name",
                "raw_flops",
                "adjusted_flops",
                "flops_transpose",
                "adjusted_flops_transpose",
                "tensor_instruction_type",
                "hbm_read_bytes",
                "hbm_write_bytes",
                "sbuf_read_bytes",
                "sbuf_write_bytes",
                "spill_save_bytes",
                "spill_reload_bytes",
            )
        }
    )
    dma: dict = field(
        default_factory=lambda: {
            k: []
            for k in (
                "rank",
                "step",
                "start_ts",
                "end_ts",
                "duration_ns",
                "id",
                "packet_idx",
                "packet_aggregation_id",
                "read_bytes",
                "write_bytes",
                "transfer_bytes",
                "throughput",
                "queue_type",
                "queue_name",
                "crc",
            )
        }
    )
    throttle: dict = field(
        default_factory=lambda: {k: [] for k in ("rank", "step", "timestamp", "duration", "k", "n", "type")}
    )
    cc: dict = field(
        default_factory=lambda: {
            k: []
            for k in (
                "rank",
                "step",
                "start_ts",
                "end_ts",
                "duration_ns",
                "operation",
                "algorithm",
                "num_elements",
                "dtype",
                "op_id",
                "stream_id",
                "stream_index",
                "trigger_engine",
                "input_size",
                "output_size",
                "algorithm_bandwidth",
                "bus_bandwidth",
                "replica_group",
            )
        }
    )

    def instr(self, rank, step, start, dur, engine, opcode, hlo, flops=0, adjusted=0, hbm=(0, 0), spill=(0, 0)):
        t = self.instruction
        n = len(t["id"])
        for key, value in (
            ("rank", rank),
            ("step", step),
            ("start_ts", start),
            ("end_ts", start + dur),
            ("duration_ns", dur),
            ("engine", engine),
            ("opcode", opcode),
            ("operands", ""),
            ("id", n),
            ("pc", n),
            ("bir_id", f"sg0000:{n}"),
            ("hlo_name", hlo),
            ("raw_flops", flops),
            ("adjusted_flops", adjusted),
            ("flops_transpose", 0),
            ("adjusted_flops_transpose", 0),
            ("tensor_instruction_type", "REGULAR" if engine == "tensor" else None),
            ("hbm_read_bytes", hbm[0]),
            ("hbm_write_bytes", hbm[1]),
            ("sbuf_read_bytes", hbm[1]),
            ("sbuf_write_bytes", hbm[0]),
            ("spill_save_bytes", spill[0]),
            ("spill_reload_bytes", spill[1]),
        ):
            t[key].append(value)

    def packets(self, rank, step, start, busy, nbytes, queue, queue_type, rows):
        """`nbytes` moved over [start, start + busy) as back-to-back packets (at most `rows`)."""
        if nbytes <= 0 or busy <= 0:
            return
        count = int(max(1, min(rows, math.ceil(nbytes / PACKET_BYTES))))
        t, aggregation = self.dma, len(self.dma["id"])
        size, dur = nbytes // count, busy // count
        for i in range(count):
            begin = start + i * dur
            for key, value in (
                ("rank", rank),
                ("step", step),
                ("start_ts", begin),
                ("end_ts", begin + dur),
                ("duration_ns", dur),
                ("id", len(t["id"])),
                ("packet_idx", i),
                ("packet_aggregation_id", aggregation),
                ("read_bytes", size),
                ("write_bytes", size),
                ("transfer_bytes", size),
                ("throughput", size / (dur / 1e9) if dur else 0.0),
                ("queue_type", queue_type),
                ("queue_name", queue),
                ("crc", 0),
            ):
                t[key].append(value)


class DeviceProfile:
    """Builds the Explorer tables of the profiled ranks and steps from their events."""

    def __init__(self, job, plan, fx: Effects, rows_per_op: int = ROWS_PER_OP):
        self.job, self.params, self.fx = job, plan.params, fx
        self.rows_per_op = rows_per_op
        self.core = job.instance  # the engines' rates of the job's chip and LNC (Trn1 or Trn2)
        self.hbm = self.core.core_hbm_bw * plan.params.hbm_efficiency
        self.overhead_ns = plan.params.op_overhead_us * 1e3
        self.tables = _Tables()
        self.summaries: list[dict] = []

    # --- one rank's events of the profiled steps ---
    def add(self, events: pa.Table, steps) -> None:
        keep = pc.is_in(events["step"], pa.array(list(steps), pa.int32()))
        rows = events.filter(keep).sort_by([("ts", "ascending")]).to_pylist()
        for row in rows:
            if row["kind"] == "compute" and row["lane"] in ("nc/tensor", "nc/vector"):
                self._op(row)
            elif row["kind"] in ("collective", "p2p") and row["coll_op"]:
                self._cc(row)
        for rank, step in sorted({(r["rank"], r["step"]) for r in rows}):
            self.summaries.append(self._summary(rank, step))

    def _op(self, row) -> None:
        rank, step, ts, dur = row["rank"], row["step"], row["ts"], row["dur"]
        flops, nbytes = float(row["flops"] or 0), float(row["bytes"] or 0)
        tensor = row["lane"] == "nc/tensor"
        dtype = _dtype(row["args"])
        spill_ns = 1e9 * 2 * self.fx.spill_fraction * nbytes / self.hbm if tensor else 0.0
        overhead = min(self.overhead_ns, dur)
        body = max(dur - overhead - spill_ns, 0.0)
        if tensor:
            engine_ns = (
                1e9
                * flops
                / (2 * PE_ROWS * PE_COLS * self.core.tensor_cycle_hz)
                * (self.core.matmul_passes(dtype) - 1 + 1 / self.params.tensor_efficiency)
                / self.fx.tensor_utilization
            )
        else:
            engine_ns = 1e9 * flops / self.core.core_vector_flops
        memory_ns = 1e9 * nbytes / self.hbm
        engine_busy = body if engine_ns >= memory_ns else min(engine_ns, body)
        dma_busy = body if memory_ns > engine_ns else min(memory_ns, body)
        t = self.tables
        t.instr(rank, step, ts, int(overhead), "sync", "EVENT_SEMAPHORE", row["name"])
        start = ts + int(overhead)
        engine = "tensor" if tensor else "vector"
        count = int(max(1, min(self.rows_per_op, math.ceil(flops / TILE_FLOPS) if tensor else 1)))
        each = int(engine_busy // count)
        scale = 4 if dtype == "fp32" else 1  # Explorer's adjusted_flops: FP32 x4, BF16/FP16/TF32/FP8 x1 on Trn1
        spill_bytes = int(self.fx.spill_fraction * nbytes) if tensor else 0
        for i in range(count):
            last = i == count - 1
            spill = (spill_bytes, spill_bytes) if last else (0, 0)
            hbm = (int(nbytes / 2 / count) + spill[1], int(nbytes / 2 / count) + spill[0])
            t.instr(
                rank,
                step,
                start + i * each,
                each,
                engine,
                "MATMUL" if tensor else "TENSOR_TENSOR",
                row["name"],
                flops=int(flops / count),
                adjusted=int(flops / count) * scale,
                hbm=hbm,
                spill=spill,
            )
            if tensor:
                t.instr(rank, step, start + i * each, int(each * SCALAR_SHADOW), "scalar", "ACTIVATE", row["name"])
        queue = "qTensorData0" if tensor else "qVectorIO0"
        t.packets(rank, step, start, int(dma_busy), int(nbytes), queue, "data" if tensor else "input", self.rows_per_op)
        if spill_bytes:
            half = int(spill_ns // 2)
            end = start + int(body)
            t.packets(rank, step, end, half, spill_bytes, "qSpillSave0", "data", self.rows_per_op)
            t.packets(rank, step, end + half, half, spill_bytes, "qSpillReload0", "data", self.rows_per_op)
        if tensor and self.fx.tensor_utilization < 1.0 and engine_busy > 0:
            k = int(round(self.fx.tensor_utilization * THROTTLE_N))
            for key, value in (
                ("rank", rank),
                ("step", step),
                ("timestamp", start),
                ("duration", int(engine_busy)),
                ("k", k),
                ("n", THROTTLE_N),
                ("type", "activity_0"),
            ):
                t.throttle[key].append(value)

    def _cc(self, row) -> None:
        n = int(row["coll_ranks"] or 1)
        nbytes, dur = int(row["bytes"] or 0), max(int(row["dur"]), 1)
        algbw = nbytes / (dur / 1e9)
        factor = {"all_reduce": 2 * (n - 1) / n, "all_gather": (n - 1) / n, "reduce_scatter": (n - 1) / n}.get(
            row["coll_op"], 1.0
        )
        for key, value in (
            ("rank", row["rank"]),
            ("step", row["step"]),
            ("start_ts", row["ts"]),
            ("end_ts", row["ts"] + dur),
            ("duration_ns", dur),
            ("operation", _CC_NAMES.get(row["coll_op"], row["coll_op"])),
            ("algorithm", "Ring"),
            ("num_elements", nbytes // 2),
            ("dtype", "bf16"),
            ("op_id", row["coll_seq"] or 0),
            ("stream_id", 0),
            ("stream_index", 0),
            ("trigger_engine", "Pool"),
            ("input_size", nbytes),
            ("output_size", nbytes),
            ("algorithm_bandwidth", algbw),
            ("bus_bandwidth", algbw * factor),
            ("replica_group", f"[{row['coll_group']}]"),
        ):
            self.tables.cc[key].append(value)

    # --- Explorer's Summary, computed from the rows (numpy, apart from the SQL views) ---
    def _summary(self, rank: int, step: int) -> dict:
        t = self.tables
        ins = {k: np.asarray(v) for k, v in t.instruction.items()}
        mine = (ins["rank"] == rank) & (ins["step"] == step) if len(ins["rank"]) else np.zeros(0, bool)
        dma = {k: np.asarray(v) for k, v in t.dma.items()}
        dmine = (dma["rank"] == rank) & (dma["step"] == step) if len(dma["rank"]) else np.zeros(0, bool)
        cc = {k: np.asarray(v) for k, v in t.cc.items()}
        cmine = (cc["rank"] == rank) & (cc["step"] == step) if len(cc["rank"]) else np.zeros(0, bool)
        starts = np.concatenate(
            [
                ins["start_ts"][mine],
                dma["start_ts"][dmine] if dmine.any() else [],
                cc["start_ts"][cmine] if cmine.any() else [],
            ]
        )
        ends = np.concatenate(
            [
                ins["end_ts"][mine],
                dma["end_ts"][dmine] if dmine.any() else [],
                cc["end_ts"][cmine] if cmine.any() else [],
            ]
        )
        total = (ends.max() - starts.min()) / 1e9 if len(starts) else 0.0

        def active(engine):
            sel = mine & (ins["engine"] == engine)
            return _union(ins["start_ts"][sel], ins["end_ts"][sel]) / 1e9

        tensor = mine & (ins["engine"] == "tensor")
        hardware = int(ins["raw_flops"][tensor].sum()) if tensor.any() else 0
        adjusted = int(ins["adjusted_flops"][tensor].sum()) if tensor.any() else 0
        peak = 2 * PE_ROWS * PE_COLS * self.core.tensor_cycle_hz
        model = int(_model_flops(self.job))
        hbm = float(ins["hbm_read_bytes"][mine].sum() + ins["hbm_write_bytes"][mine].sum())
        return {
            "rank": rank,
            "step": step,
            "total_time": total,
            "model_flops": model,
            "hardware_flops": hardware,
            "transpose_flops": 0,
            "adjusted_hardware_flops": adjusted,
            "mfu_estimated_percent": 100 * model / (peak * total) if total else 0.0,
            "hfu_estimated_percent": 100 * adjusted / (peak * total) if total else 0.0,
            "mbu_estimated_percent": 100 * hbm / (self.core.core_hbm_bw * total) if total else 0.0,
            "hbm_read_bytes": int(ins["hbm_read_bytes"][mine].sum()),
            "hbm_write_bytes": int(ins["hbm_write_bytes"][mine].sum()),
            "spill_save_bytes": int(ins["spill_save_bytes"][mine].sum()),
            "spill_reload_bytes": int(ins["spill_reload_bytes"][mine].sum()),
            "dma_active_time": _union(dma["start_ts"][dmine], dma["end_ts"][dmine]) / 1e9 if dmine.any() else 0.0,
            "cc_op_time": float(cc["duration_ns"][cmine].sum()) / 1e9 if cmine.any() else 0.0,
            "cc_op_count": int(cmine.sum()),
            **{f"{e}_engine_active_time": active(e) for e in ("tensor", "vector", "scalar", "gpsimd", "sync")},
            **{
                f"{e}_engine_instruction_count": int((mine & (ins["engine"] == e)).sum())
                for e in ("tensor", "vector", "scalar", "gpsimd", "sync")
            },
        }

    def metadata(self, ranks) -> pa.Table:
        return pa.table(
            {
                "rank": pa.array(list(ranks), pa.int32()),
                "step": pa.nulls(len(ranks), pa.int32()),
                "profile_schema_version": [SCHEMA_VERSION] * len(ranks),
                "num_physical_cores": [1] * len(ranks),
                "vnc_enabled": [False] * len(ranks),
                "tensor_engine_num_rows": [PE_ROWS] * len(ranks),
                "tensor_engine_num_cols": [PE_COLS] * len(ranks),
                "tensor_engine_clock_freq": [self.core.tensor_cycle_hz / 1e9] * len(ranks),
                "hbm_ddr_bandwidth": [self.core.core_hbm_bw] * len(ranks),
                "dma_ddr_bandwidth": [CORE_DMA_BW] * len(ranks),
                "instance_type": [self.job.instance.name] * len(ranks),
                "neuroncore_idx": list(ranks),
                "is_simulation": [True] * len(ranks),
            }
        )

    def tables_out(self, ranks) -> dict[str, pa.Table]:
        t = self.tables
        out = {
            "instruction": _table(t.instruction),
            "dma_packet": _table(t.dma),
            "cc_op": _table(t.cc),
            "throttle": _table(t.throttle),
            "metadata": self.metadata(ranks),
            "summary": pa.Table.from_pylist(self.summaries)
            if self.summaries
            else pa.table({"rank": pa.array([], pa.int32())}),
        }
        for name in ("instruction", "dma_packet", "cc_op", "throttle", "summary"):
            table = out[name]
            if "rank" in table.column_names:
                table = table.set_column(table.column_names.index("rank"), "rank", table["rank"].cast(pa.int32()))
            if "step" in table.column_names:
                table = table.set_column(table.column_names.index("step"), "step", table["step"].cast(pa.int32()))
            out[name] = table
        return out


def _table(columns: dict) -> pa.Table:
    return pa.table(
        {
            k: pa.array(v)
            if v
            else pa.array(
                [],
                pa.int64()
                if k
                not in (
                    "engine",
                    "opcode",
                    "operands",
                    "bir_id",
                    "hlo_name",
                    "tensor_instruction_type",
                    "queue_type",
                    "queue_name",
                    "type",
                    "operation",
                    "algorithm",
                    "dtype",
                    "trigger_engine",
                    "replica_group",
                )
                else pa.string(),
            )
            for k, v in columns.items()
        }
    )


def _union(starts: np.ndarray, ends: np.ndarray) -> float:
    """Length of the union of intervals."""
    if len(starts) == 0:
        return 0.0
    order = np.argsort(starts, kind="stable")
    s, e = starts[order].astype(np.float64), ends[order].astype(np.float64)
    reach = np.maximum.accumulate(e)
    first = np.flatnonzero(np.concatenate([[True], s[1:] > reach[:-1]]))  # each island's first interval
    return float((np.maximum.reduceat(e, first) - s[first]).sum())


def _dtype(args) -> str:
    if not args:
        return "bf16"
    try:
        return str(json.loads(args).get("dtype") or "bf16")
    except (ValueError, AttributeError):
        return "bf16"


def _model_flops(job) -> float:
    return architecture.model_flops_per_step(job) / job.world


def rows_per_op(ops_per_step: int) -> int:
    """Instruction rows per op: ROWS_PER_OP, fewer when the step has so many ops that the rank's
    step would pass MAX_ROWS_PER_STEP."""
    return int(max(1, min(ROWS_PER_OP, MAX_ROWS_PER_STEP // max(ops_per_step, 1))))


def profiled_ranks(job, requested) -> list[int]:
    """The ranks to profile: `requested`, else rank 0 and the last rank."""
    if requested:
        bad = [r for r in requested if not 0 <= r < job.world]
        if bad:
            raise TrnprofError(f"--device-ranks {bad[0]} is outside the world of {job.world} ranks (0-{job.world - 1})")
        return sorted(set(requested))
    return sorted({0, job.world - 1})


def profiled_steps(compile_steps: np.ndarray, count: int = 2) -> list[int]:
    """The last `count` steps that do not compile (all steps of a run without such steps)."""
    steady = [i for i, compiles in enumerate(compile_steps) if not compiles]
    return (steady or list(range(len(compile_steps))))[-count:]
