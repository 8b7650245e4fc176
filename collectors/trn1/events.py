"""Events of a batch of ranks (all in one pipeline stage) from the timeline, as array groups.

Array shapes: (ranks, steps, events per step). Inside a step, the stage's blocks run in 1F1B
order; `block_speed` is a rank's speed factor per block, `group_speed` its TP group's (the
slowest member's), which the template's linear coefficients turn into start times and durations.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np

from trnprof.model.layout import Layout
from trnprof.model.memory import capacity
from trnprof.model.plan import TEMPLATE_COLUMNS, Plan
from trnprof.model.timeline import StageTimes, Timeline

from .emit import EventBatch, Vocabulary


class StageTemplate:
    """The template events of one whole step of a stage: the 1F1B blocks in order."""

    def __init__(self, plan: Plan, stage: int, seq):
        st = plan.stages[stage]
        parts = [st.fwd if typ == "F" else st.bwd for typ, _ in seq]
        self.cols = {c: np.concatenate([p.cols[c] for p in parts]) for c in TEMPLATE_COLUMNS}
        self.block = np.concatenate([np.full(len(p), k) for k, p in enumerate(parts)])
        self.is_tp = self.cols["kind"] == "collective"
        self.tp_index = np.where(self.is_tp, np.cumsum(self.is_tp) - 1, -1)
        self.n_tp = int(self.is_tp.sum())
        self.args = np.array(
            [None if dtype is None else json.dumps({"dtype": dtype}) for dtype in self.cols["dtype"]], dtype=object
        )


@dataclass
class _Batch:
    """The ranks of one batch and where they sit: what every event group needs."""

    tl: Timeline
    layout: Layout
    ranks: np.ndarray
    stage: int
    dp_index: np.ndarray  # (R,)
    tp_index: np.ndarray  # (R,)
    times: StageTimes
    seq: list
    steps: np.ndarray  # (1, S, 1) step numbers

    def per_block(self, arr: np.ndarray, blocks) -> np.ndarray:
        """arr (S, K, dp[, ...]) at `blocks` and the batch's dp indices -> (ranks, S, len(blocks))."""
        return np.moveaxis(arr[:, blocks][:, :, self.dp_index], 2, 0)

    def blocks_of(self, typ: str) -> tuple[np.ndarray, np.ndarray]:
        """Block indices of type F or B in the step, and their microbatch numbers."""
        ks = np.array([k for k, (t, _) in enumerate(self.seq) if t == typ])
        return ks, np.array([self.seq[k][1] for k in ks])


def build_events(
    tl: Timeline, layout: Layout, ranks: np.ndarray, template: StageTemplate, vocab: Vocabulary, oom: dict
) -> EventBatch:
    stage = int(layout.pp_rank[ranks[0]])
    b = _Batch(
        tl,
        layout,
        ranks,
        stage,
        layout.dp_rank[ranks],
        layout.tp_rank[ranks],
        tl.stages[stage],
        tl.seqs[stage],
        np.arange(tl.steps)[None, :, None],
    )
    out = EventBatch(ranks, tl.steps, vocab)
    _add_block_events(out, b, template, vocab)
    _add_input_and_launch(out, b)
    if tl.plan.job.pp > 1:
        _add_pipeline_p2p(out, b, vocab)
    _add_step_and_compile(out, b)
    _add_gradient_sync(out, b, vocab)
    _add_optimizer(out, b, vocab)
    if oom.get(stage) is not None:
        _add_oom(out, b, oom[stage])
    return out


def _add_block_events(out: EventBatch, b: _Batch, template: StageTemplate, vocab: Vocabulary) -> None:
    """Compute ops and tensor-parallel collectives of every block, linear in the speed factors."""
    tl, job = b.tl, b.tl.plan.job
    block, cols, is_tp = template.block, template.cols, template.is_tp
    rank_speed = tl.f[b.ranks][:, :, block]  # (R, S, events)
    group_speed = tl.group[b.stage][b.dp_index][:, :, block]
    block_start = np.moveaxis(b.times.body[:, :, b.dp_index], 2, 0)[:, :, block]
    tp_groups = vocab.ids(b.layout.tp_group_name(b.ranks))
    out.add(
        ts=block_start
        + cols["start_fixed"]
        + cols["start_per_group"] * group_speed
        + cols["start_per_rank"] * rank_speed,
        dur=cols["dur_fixed"] + cols["dur_per_group"] * group_speed + cols["dur_per_rank"] * rank_speed,
        kind=cols["kind"],
        name=cols["name"],
        lane=cols["lane"],
        phase=cols["phase"],
        nbytes=cols["nbytes"],
        flops=np.where(is_tp, -1, cols["flops"]),
        coll_op=cols["coll_op"],
        coll_group=np.where(is_tp, tp_groups[:, None, None], -1),
        coll_seq=np.where(is_tp, b.steps * template.n_tp + template.tp_index, -1),
        coll_ranks=np.where(is_tp, job.tp, -1),
        args=template.args,
    )


def _add_input_and_launch(out: EventBatch, b: _Batch) -> None:
    """Per microbatch: the device's wait for its batch and the batch's copy (data stages), and
    the host's graph launch."""
    plan = b.tl.plan
    fwd_blocks, _ = b.blocks_of("F")
    device_ready = b.per_block(b.times.ready, fwd_blocks)
    if plan.stages[b.stage].consumes_data:
        got = b.per_block(b.times.got, fwd_blocks)
        out.add(
            ts=device_ready,
            dur=got - device_ready,
            kind="input",
            name="dataloader.next",
            lane="nc/wait",
            keep=got - device_ready >= 1e-9,
        )
        out.add(ts=got, dur=plan.h2d, kind="transfer", name="h2d.batch", lane="dma/h2d", nbytes=plan.h2d_bytes)
    name = LAUNCH_EVENT[plan.job.config.precision.framework or "torch-xla"]
    out.add(ts=b.per_block(b.times.launch, fwd_blocks), dur=plan.launch, kind="host", name=name, lane="host/main")


# The host event of one graph launch, by framework: torch-xla's execute call; for the other stacks
# the simulator's own names (their traces' launch events are not modelled event for event).
LAUNCH_EVENT = {
    "torch-xla": "xla.execute",
    "torchneuron": "neuron.execute",
    "torchtitan": "neuron.execute",
    "jax": "jax.execute",
}


def _add_pipeline_p2p(out: EventBatch, b: _Batch, vocab: Vocabulary) -> None:
    """Activations forward and gradients backward between neighbouring stages."""
    plan, job, stage, t, d = b.tl.plan, b.tl.plan.job, b.stage, b.tp_index, b.dp_index
    st, microbatches = plan.stages[stage], job.microbatches
    fwd_blocks, fwd_mb = b.blocks_of("F")
    bwd_blocks, bwd_mb = b.blocks_of("B")
    group_speed = b.tl.group[stage][d]
    seq_base = b.steps * 2 * microbatches
    fwd_end = b.per_block(b.times.body, fwd_blocks) + st.fwd.compute * group_speed[:, :, fwd_blocks] + st.fwd.transfer
    bwd_end = b.per_block(b.times.body, bwd_blocks) + st.bwd.compute * group_speed[:, :, bwd_blocks] + st.bwd.transfer
    p2p = dict(kind="p2p", lane="nc/cc/pp", nbytes=st.p2p_bytes, coll_ranks=2)
    if stage > 0:
        prev = vocab.ids(b.layout.pp_link_name(b.ranks, to_next=False))[:, None, None]
        ready = b.per_block(b.times.ready, fwd_blocks)
        recv = np.moveaxis(b.times.recv_end[:, fwd_blocks][:, :, d, t], 2, 0)
        out.add(
            ts=ready,
            dur=recv - ready,
            name="recv.activations",
            phase="fwd",
            coll_op="recv",
            coll_group=prev,
            coll_seq=seq_base + fwd_mb,
            **p2p,
        )
        out.add(
            ts=bwd_end,
            dur=plan.p2p_cost[stage - 1][d, t][:, None, None],
            name="send.gradients",
            phase="bwd",
            coll_op="send",
            coll_group=prev,
            coll_seq=seq_base + microbatches + bwd_mb,
            **p2p,
        )
    if stage < job.pp - 1:
        nxt = vocab.ids(b.layout.pp_link_name(b.ranks, to_next=True))[:, None, None]
        out.add(
            ts=fwd_end,
            dur=plan.p2p_cost[stage][d, t][:, None, None],
            name="send.activations",
            phase="fwd",
            coll_op="send",
            coll_group=nxt,
            coll_seq=seq_base + fwd_mb,
            **p2p,
        )
        ready = b.per_block(b.times.ready, bwd_blocks)
        recv = np.moveaxis(b.times.recv_end[:, bwd_blocks][:, :, d, t], 2, 0)
        out.add(
            ts=ready,
            dur=recv - ready,
            name="recv.gradients",
            phase="bwd",
            coll_op="recv",
            coll_group=nxt,
            coll_seq=seq_base + microbatches + bwd_mb,
            **p2p,
        )


def _add_step_and_compile(out: EventBatch, b: _Batch) -> None:
    start = b.times.step_start[:, b.dp_index].T[:, :, None]  # (R, S, 1)
    end = np.moveaxis(b.times.step_end[:, b.dp_index, b.tp_index], 1, 0)[:, :, None]
    out.add(ts=start, dur=end - start, kind="step", name="train_step", lane="host/main")
    compile_start = b.times.compile_start[:, b.dp_index].T[:, :, None]
    out.add(
        ts=compile_start,
        dur=b.tl.plan.compile_s,
        kind="compile",
        name="neuronx-cc.compile",
        lane="host/compiler",
        args=json.dumps({"graph": f"train_step.stage{b.stage}"}),
        keep=b.tl.compile_steps[None, :, None],
    )


def _add_gradient_sync(out: EventBatch, b: _Batch, vocab: Vocabulary) -> None:
    """Data-parallel gradient buckets (all-reduce, or reduce-scatter under ZeRO-1)."""
    plan, job = b.tl.plan, b.tl.plan.job
    buckets = plan.stages[b.stage].buckets
    n = len(buckets)
    if job.dp <= 1 or not n:
        return
    _add_dp_collectives(
        out,
        b,
        vocab,
        b.times.dp_arrive,
        b.times.dp_end,
        phase="bwd",
        names=[f"grad_bucket_{j}.{plan.dp_op}" for j in range(n)],
        nbytes=np.array([bucket.nbytes for bucket in buckets]),
        coll_op=plan.dp_op,
    )


def _add_dp_collectives(
    out: EventBatch,
    b: _Batch,
    vocab: Vocabulary,
    arrive_at,
    end_at,
    *,
    phase: str,
    names: list[str],
    nbytes,
    coll_op: str,
) -> None:
    """One data-parallel collective per name and step, from the timeline's arrival and end times."""
    n = len(names)
    arrive = np.moveaxis(arrive_at[:, b.dp_index, b.tp_index, :n], 1, 0)
    done = np.moveaxis(end_at[:, b.dp_index, b.tp_index, :n], 1, 0)
    out.add(
        ts=arrive,
        dur=done - arrive,
        kind="collective",
        lane="nc/cc/dp",
        phase=phase,
        name=np.array(names, dtype=object),
        nbytes=nbytes,
        coll_op=coll_op,
        coll_group=vocab.ids(b.layout.dp_group_name(b.ranks))[:, None, None],
        coll_seq=b.steps * n + np.arange(n),
        coll_ranks=b.tl.plan.job.dp,
    )


def _add_optimizer(out: EventBatch, b: _Batch, vocab: Vocabulary) -> None:
    """Optimizer ops back to back at the rank's optimizer speed, then the ZeRO-1 all-gather."""
    plan, job = b.tl.plan, b.tl.plan.job
    ops = plan.stages[b.stage].opt
    opt_speed = b.tl.f[b.ranks][:, :, 2 * job.microbatches][:, :, None]
    durs = np.array([op.dur for op in ops])
    offsets = np.concatenate([[0.0], np.cumsum(durs)[:-1]])
    opt_start = np.moveaxis(b.times.opt_start[:, b.dp_index, b.tp_index], 1, 0)[:, :, None]
    out.add(
        ts=opt_start + offsets * opt_speed,
        dur=durs * opt_speed,
        kind="compute",
        lane="nc/vector",
        phase="opt",
        name=np.array([op.name for op in ops], dtype=object),
        nbytes=np.array([op.nbytes for op in ops]),
        flops=np.array([op.flops for op in ops]),
        args=np.array([json.dumps({"dtype": op.dtype}) for op in ops], dtype=object),
    )
    n_ag = int(np.count_nonzero(plan.ag_bytes[b.stage])) if plan.ag_bytes.size else 0
    if job.dp <= 1 or not n_ag:
        return
    _add_dp_collectives(
        out,
        b,
        vocab,
        b.times.ag_arrive,
        b.times.ag_end,
        phase="opt",
        names=[f"param_bucket_{j}.all_gather" for j in range(n_ag)],
        nbytes=plan.ag_bytes[b.stage, :n_ag],
        coll_op="all_gather",
    )


def _add_oom(out: EventBatch, b: _Batch, oom) -> None:
    step, ts_peak, peak = oom
    at = np.moveaxis(ts_peak[:, b.dp_index], 1, 0)[:, step : step + 1, None]
    out.add(
        ts=at,
        dur=0,
        kind="memory",
        name="oom_risk",
        lane="hbm",
        nbytes=peak,
        step=np.array([[[step]]]),
        args=json.dumps(
            {
                "peak_bytes": int(peak),
                "capacity_bytes": capacity(b.layout.job.instance),
                "message": "HBM residency exceeds the NeuronCore's capacity",
            }
        ),
    )
