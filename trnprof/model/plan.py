"""The static plan of a step: per pipeline stage, the forward and backward block of one
microbatch as event templates, the gradient buckets, the optimizer and the collective costs.

Inside a block, ranks of a tensor-parallel group run in lock step: compute runs at the rank's
own speed factor f, every TP collective ends when the slowest member (factor F = max f) arrives
plus its transfer time. So each event's start and duration are linear in the group's and the
rank's speed factors:
    ts  = block_start + start_fixed + start_per_group * group_speed + start_per_rank * rank_speed
    dur = dur_fixed + dur_per_group * group_speed + dur_per_rank * rank_speed
with the six coefficients fixed per event (the template). Noise and faults only change the speeds.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from trnprof.units import MIB

from . import architecture
from .collectives import Placement, collective_time, placement
from .compute import LayerCosts, Op, embedding_items, head_items, optimizer_ops, rates
from .hardware import DMA_ENGINE_BW, GRAPH_LAUNCH_S
from .inputs import batch_seconds
from .job import Job
from .layout import Layout
from .params import Params

TEMPLATE_COLUMNS = (
    "name",
    "kind",
    "lane",
    "phase",
    "nbytes",
    "flops",
    "coll_op",
    "dtype",
    "start_fixed",
    "start_per_group",
    "start_per_rank",
    "dur_fixed",
    "dur_per_group",
    "dur_per_rank",
)
_NUMERIC = {
    "nbytes",
    "flops",
    "start_fixed",
    "start_per_group",
    "start_per_rank",
    "dur_fixed",
    "dur_per_group",
    "dur_per_rank",
}


@dataclass
class Template:
    """Events of one block, one entry per event (columns of equal length)."""

    cols: dict
    compute: float  # sum of compute durations (scaled by F at group level)
    transfer: float  # sum of TP collective transfer times
    tp_colls: int

    def __len__(self) -> int:
        return len(self.cols["start_fixed"])


@dataclass
class Bucket:
    ready: tuple  # (start_fixed, start_per_group, start_per_rank) of the moment its last
    # gradient is written, in the backward block
    nbytes: float


@dataclass
class StagePlan:
    stage: int
    fwd: Template
    bwd: Template
    buckets: list[Bucket]
    opt: list[Op]
    p2p_bytes: float  # activation (and gradient) bytes sent between stages per microbatch
    consumes_data: bool  # the stage reads a batch per microbatch (first and last stage)


@dataclass
class Plan:
    job: Job
    params: Params
    stages: list[StagePlan]
    launch: float  # host/runtime time to launch one microbatch graph, s
    h2d_bytes: float  # batch bytes copied host-to-device per microbatch
    h2d: float  # its transfer time, s
    batch_cost: float  # loader seconds to produce one microbatch (one worker)
    dp_cost: np.ndarray  # (pp, tp, n_buckets) transfer time of each gradient bucket
    ag_cost: np.ndarray  # (pp, tp, n_ag) ZeRO-1 parameter all-gather times (empty without)
    ag_bytes: np.ndarray  # (pp, n_ag)
    p2p_cost: np.ndarray  # (pp-1, dp, tp) send time stage s -> s+1
    dp_op: str  # all_reduce, or reduce_scatter under ZeRO-1
    compile_s: float
    tp_place: Placement


def _template(items, phase: str, tp_place: Placement, job: Job, params: Params, marks=()):
    """Linear-coefficient template of a block; `marks` are item indices whose end times are
    returned as (fixed, per group, per rank) triples (gradient-ready points).

    Walking the block: `transfers` is the TP transfer time so far (fixed), `synced` the compute
    before the last TP collective (it ends at the slowest member's pace: per group), `segment`
    the compute since (the rank's own pace: per rank)."""
    rows = {k: [] for k in TEMPLATE_COLUMNS}
    transfers = synced = segment = 0.0
    ends, n_tp = [], 0
    for item in items:
        if isinstance(item, Op):
            vals = (
                item.name,
                "compute",
                item.lane,
                phase,
                item.nbytes,
                item.flops,
                None,
                item.dtype,
                transfers,
                synced,
                segment,
                0.0,
                0.0,
                item.dur,
            )
            segment += item.dur
        else:
            op, nbytes, name = item
            transfer = collective_time(op, nbytes, tp_place, job.instance, params.network_efficiency)
            # starts when this rank arrives; ends when the slowest member arrives plus the transfer
            vals = (
                name,
                "collective",
                "nc/cc/tp",
                phase,
                nbytes,
                0.0,
                op,
                None,
                transfers,
                synced,
                segment,
                transfer,
                segment,
                -segment,
            )
            transfers, synced, segment, n_tp = transfers + transfer, synced + segment, 0.0, n_tp + 1
        for key, value in zip(TEMPLATE_COLUMNS, vals):
            rows[key].append(value)
        ends.append((vals[8] + vals[11], vals[9] + vals[12], vals[10] + vals[13]))
    cols = {k: np.asarray(v, dtype=float if k in _NUMERIC else object) for k, v in rows.items()}
    return Template(cols, synced + segment, transfers, n_tp), [ends[i] for i in marks]


def _buckets(chunks, ends, bucket_bytes: float) -> list[Bucket]:
    """Gradient buckets in backward order: a bucket is ready when its last gradient is."""
    out, pending = [], 0.0
    for grad_bytes, end in zip(chunks, ends):
        pending += grad_bytes
        while pending >= bucket_bytes:
            out.append(Bucket(end, bucket_bytes))
            pending -= bucket_bytes
    if pending > 0:
        out.append(Bucket(ends[-1], pending))
    return out


def _stage(job: Job, params: Params, stage: int, tp_place: Placement) -> StagePlan:
    r = rates(job, params)
    costs = LayerCosts(job, r)
    first_layer = stage * job.layers_per_stage
    layers = range(first_layer, first_layer + job.layers_per_stage)
    first, last = stage == 0, stage == job.pp - 1
    fwd_items = (
        (embedding_items(job, r, "fwd") if first else [])
        + [it for i in layers for it in costs.forward(i)]
        + (head_items(job, r, "fwd") if last else [])
    )
    fwd, _ = _template(fwd_items, "fwd", tp_place, job, params)
    bwd_items, chunks, marks = [], [], []
    gb = job.param_bytes
    if last:
        bwd_items += head_items(job, r, "bwd")
        tied_copy = job.arch.vocab * job.arch.hidden if job.arch.tie_embeddings and job.pp > 1 else 0
        chunks.append((architecture.head_params(job.arch) + tied_copy) / job.tp * gb)
        marks.append(len(bwd_items) - 1)
    for i in reversed(layers):
        bwd_items += costs.backward(i)
        chunks.append(costs.grad_bytes)
        marks.append(len(bwd_items) - 1)
    if first:
        bwd_items += embedding_items(job, r, "bwd")
        chunks.append(architecture.embedding_params(job.arch) / job.tp * gb)
        marks.append(len(bwd_items) - 1)
    bwd, ends = _template(bwd_items, "bwd", tp_place, job, params, marks)
    buckets = _buckets(chunks, ends, job.config.comm.bucket_mb * MIB)
    return StagePlan(
        stage=stage,
        fwd=fwd,
        bwd=bwd,
        buckets=buckets,
        opt=optimizer_ops(job, r, stage),
        p2p_bytes=job.micro * job.arch.seq_len * job.arch.hidden * job.act_bytes / job.tp,
        consumes_data=first or last,
    )


def critical_compute_seconds(job: Job, params: Params) -> float:
    """Device compute seconds on a step's critical path under 1F1B without communication or
    host waits: microbatches + pp - 1 blocks (forward and backward) of the slowest stage, plus
    the slowest stage's optimizer. The only part of a step the free parameters change."""
    tp_place = placement(Layout(job).tp_group_ranks(0, 0), job.cores_per_node, instance=job.instance)
    stages = [_stage(job, params, s, tp_place) for s in range(job.pp)]
    block = max(st.fwd.compute + st.bwd.compute for st in stages)
    optimizer = max(sum(op.dur for op in st.opt) for st in stages)
    return (job.microbatches + job.pp - 1) * block + optimizer


def h2d_bytes(job: Job) -> float:
    """Bytes of one microbatch copied to the device: int64 token ids and labels (and an
    attention mask for encoders), or fp32 pixels and labels for ViT."""
    arch, b = job.arch, job.micro
    if arch.kind == "vit":
        return b * 3 * arch.image_size**2 * 4 + b * 8
    return b * arch.seq_len * 8 * (3 if arch.kind == "encoder" else 2)


def compile_seconds(job: Job) -> float:
    """First-step graph compile: 10 s for a trivial graph (torch-xla CompileTime sample) plus
    20 s per transformer layer in the stage's graph (assumption: minutes for small models, tens
    of minutes for 7B-class, as the Neuron docs say first compiles take minutes to an hour)."""
    return 10.0 + 20.0 * job.layers_per_stage


def build_plan(
    job: Job, params: Params, layout: Layout, slow_nodes: dict[int, float], host_factor: float = 1.0
) -> Plan:
    """The job's costs; `slow_nodes` (node -> factor) slow inter-node links, `host_factor`
    multiplies the host time per graph execution (faults)."""
    cpn = job.cores_per_node
    tp_place = placement(layout.tp_group_ranks(0, 0), cpn, instance=job.instance)
    stages = [_stage(job, params, s, tp_place) for s in range(job.pp)]
    net = params.network_efficiency
    dp_op = "reduce_scatter" if job.zero1 else "all_reduce"
    n_buckets = max(len(st.buckets) for st in stages)
    dp_cost = np.zeros((job.pp, job.tp, n_buckets))
    ag_chunks = []
    for s, st in enumerate(stages):
        total = architecture.stage_params(job, s) * job.param_bytes
        size = job.config.comm.bucket_mb * MIB
        ag_chunks.append([size] * int(total // size) + ([total % size] if total % size else []))
    n_ag = max(len(c) for c in ag_chunks) if job.zero1 else 0
    ag_cost = np.zeros((job.pp, job.tp, n_ag))
    ag_bytes = np.zeros((job.pp, n_ag))
    for s, st in enumerate(stages):
        for t in range(job.tp):
            where = placement(layout.dp_group_ranks(s, t), cpn, slow_nodes, job.instance)
            for j, bucket in enumerate(st.buckets):
                dp_cost[s, t, j] = collective_time(dp_op, bucket.nbytes, where, job.instance, net)
            if job.zero1:
                for j, nbytes in enumerate(ag_chunks[s]):
                    ag_cost[s, t, j] = collective_time("all_gather", nbytes, where, job.instance, net)
                    ag_bytes[s, j] = nbytes
    p2p_cost = np.zeros((max(job.pp - 1, 0), job.dp, job.tp))
    for s in range(job.pp - 1):
        send = layout.rank_grid()[s] // cpn  # (dp, tp) node of each sender
        recv = layout.rank_grid()[s + 1] // cpn
        for same, pair_nodes in ((True, 1), (False, 2)):
            where = Placement(size=2, per_node=2 if same else 1, nodes=pair_nodes, same_chip=False)
            healthy = collective_time("send", stages[s].p2p_bytes, where, job.instance, net)
            p2p_cost[s][(send == recv) == same] = healthy
        for node, factor in slow_nodes.items():  # a slow link slows inter-node sends touching it
            hit = (send != recv) & ((send == node) | (recv == node))
            where = Placement(size=2, per_node=1, nodes=2, same_chip=False, slow=factor)
            p2p_cost[s][hit] = collective_time("send", stages[s].p2p_bytes, where, job.instance, net)
    nbytes = h2d_bytes(job)
    return Plan(
        job=job,
        params=params,
        stages=stages,
        launch=GRAPH_LAUNCH_S * host_factor,
        h2d_bytes=nbytes,
        h2d=nbytes / DMA_ENGINE_BW,
        batch_cost=batch_seconds(job),
        dp_cost=dp_cost,
        ag_cost=ag_cost,
        ag_bytes=ag_bytes,
        p2p_cost=p2p_cost,
        dp_op=dp_op,
        compile_s=compile_seconds(job),
        tp_place=tp_place,
    )
