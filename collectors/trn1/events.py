"""Events of a batch of ranks (all in one pipeline stage) from the timeline, as array groups."""

from __future__ import annotations

import json

import numpy as np

from .emit import EventBatch, Vocabulary
from .layout import Layout
from .memory import capacity
from .plan import TEMPLATE_COLUMNS, Plan
from .timeline import Timeline


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


def _sr(arr: np.ndarray, ks, d) -> np.ndarray:
    """arr (S, K, dp[, ...]) at blocks ks and the batch's dp indices -> (ranks, S, len(ks))."""
    return np.moveaxis(arr[:, ks][:, :, d], 2, 0)


def build_events(tl: Timeline, layout: Layout, ranks: np.ndarray, template: StageTemplate,
                 vocab: Vocabulary, oom: dict) -> EventBatch:
    plan, job = tl.plan, tl.plan.job
    stage = int(layout.pp_rank[ranks[0]])
    times, st, seq = tl.stages[stage], plan.stages[stage], tl.seqs[stage]
    d, t = layout.dp_rank[ranks], layout.tp_rank[ranks]
    S, M = tl.steps, job.microbatches
    K = 2 * M
    batch = EventBatch(ranks, S, vocab)
    f = tl.f[ranks]                                   # (R, S, K+1)
    G = tl.group[stage][d]                            # (R, S, K+1)
    body = np.moveaxis(times.body[:, :, d], 2, 0)     # (R, S, K)

    # compute ops and tensor-parallel collectives, linear in (F, f)
    blk, c = template.block, template.cols
    Gb, fb = G[:, :, blk], f[:, :, blk]
    tp_names = vocab.ids(layout.tp_group_name(ranks))
    steps = np.arange(S)[None, :, None]
    batch.add(ts=body[:, :, blk] + c["A"] + c["B"] * Gb + c["D"] * fb, dur=c["a"] + c["b"] * Gb + c["d"] * fb,
              kind=c["kind"], name=c["name"], lane=c["lane"], phase=c["phase"], nbytes=c["nbytes"],
              flops=np.where(template.is_tp, -1, c["flops"]), coll_op=c["coll_op"],
              coll_group=np.where(template.is_tp, tp_names[:, None, None], -1),
              coll_seq=np.where(template.is_tp, steps * template.n_tp + template.tp_index, -1),
              coll_ranks=np.where(template.is_tp, job.tp, -1))

    kF = np.array([k for k, (typ, _) in enumerate(seq) if typ == "F"])
    kB = np.array([k for k, (typ, _) in enumerate(seq) if typ == "B"])
    mF = np.array([seq[k][1] for k in kF])
    mB = np.array([seq[k][1] for k in kB])
    ready_F, launch_F = _sr(times.ready, kF, d), _sr(times.launch, kF, d)
    if st.consumes_data:
        got = _sr(times.got, kF, d)
        batch.add(ts=ready_F, dur=got - ready_F, kind="input", name="dataloader.next", lane="nc/wait",
                  keep=got - ready_F >= 1e-9)
        batch.add(ts=got, dur=plan.h2d, kind="transfer", name="h2d.batch", lane="dma/h2d", nbytes=plan.h2d_bytes)
    batch.add(ts=launch_F, dur=plan.launch, kind="host", name="xla.execute", lane="host/main")

    # pipeline point-to-point: activations forward, gradients backward
    if job.pp > 1:
        seq_base = steps * 2 * M
        end_F = _sr(times.body, kF, d) + st.fwd.compute * G[:, :, kF] + st.fwd.transfer
        end_B = _sr(times.body, kB, d) + st.bwd.compute * G[:, :, kB] + st.bwd.transfer
        p2p = dict(kind="p2p", lane="nc/cc/pp", nbytes=st.p2p_bytes, coll_ranks=2)
        if stage > 0:
            prev = vocab.ids(layout.pp_link_name(ranks, to_next=False))[:, None, None]
            recv = np.moveaxis(times.recv_end[:, kF][:, :, d, t], 2, 0)
            batch.add(ts=ready_F, dur=recv - ready_F, name="recv.activations", phase="fwd", coll_op="recv",
                      coll_group=prev, coll_seq=seq_base + mF, **p2p)
            cost = plan.p2p_cost[stage - 1][d, t][:, None, None]
            batch.add(ts=end_B, dur=cost, name="send.gradients", phase="bwd", coll_op="send",
                      coll_group=prev, coll_seq=seq_base + M + mB, **p2p)
        if stage < job.pp - 1:
            nxt = vocab.ids(layout.pp_link_name(ranks, to_next=True))[:, None, None]
            cost = plan.p2p_cost[stage][d, t][:, None, None]
            batch.add(ts=end_F, dur=cost, name="send.activations", phase="fwd", coll_op="send",
                      coll_group=nxt, coll_seq=seq_base + mF, **p2p)
            ready_B = _sr(times.ready, kB, d)
            recv = np.moveaxis(times.recv_end[:, kB][:, :, d, t], 2, 0)
            batch.add(ts=ready_B, dur=recv - ready_B, name="recv.gradients", phase="bwd", coll_op="recv",
                      coll_group=nxt, coll_seq=seq_base + M + mB, **p2p)

    # once per step: the step itself, compiles, gradient buckets, optimizer, ZeRO-1 all-gather
    start = times.step_start[:, d].T[:, :, None]                       # (R, S, 1)
    end = np.moveaxis(times.step_end[:, d, t], 1, 0)[:, :, None]
    batch.add(ts=start, dur=end - start, kind="step", name="train_step", lane="host/main")
    compile_start = times.compile_start[:, d].T[:, :, None]
    batch.add(ts=compile_start, dur=plan.compile_s, kind="compile", name="neuronx-cc.compile", lane="host/compiler",
              args=json.dumps({"graph": f"train_step.stage{stage}"}), keep=tl.compile_steps[None, :, None])
    n = len(st.buckets)
    if job.dp > 1 and n:
        dp_names = vocab.ids(layout.dp_group_name(ranks))[:, None, None]
        arrive = np.moveaxis(times.dp_arrive[:, d, t, :n], 1, 0)
        done = np.moveaxis(times.dp_end[:, d, t, :n], 1, 0)
        batch.add(ts=arrive, dur=done - arrive, kind="collective", lane="nc/cc/dp", phase="bwd",
                  name=np.array([f"grad_bucket_{j}.{plan.dp_op}" for j in range(n)], dtype=object),
                  nbytes=np.array([b.nbytes for b in st.buckets]), coll_op=plan.dp_op, coll_group=dp_names,
                  coll_seq=steps * n + np.arange(n), coll_ranks=job.dp)
    f_opt = f[:, :, K][:, :, None]
    durs = np.array([op.dur for op in st.opt])
    offsets = np.concatenate([[0.0], np.cumsum(durs)[:-1]])
    opt_start = np.moveaxis(times.opt_start[:, d, t], 1, 0)[:, :, None]
    batch.add(ts=opt_start + offsets * f_opt, dur=durs * f_opt, kind="compute", lane="nc/vector", phase="opt",
              name=np.array([op.name for op in st.opt], dtype=object), nbytes=np.array([op.nbytes for op in st.opt]),
              flops=np.array([op.flops for op in st.opt]))
    n_ag = int(np.count_nonzero(plan.ag_bytes[stage])) if plan.ag_bytes.size else 0
    if job.dp > 1 and n_ag:
        arrive = np.moveaxis(times.ag_arrive[:, d, t, :n_ag], 1, 0)
        done = np.moveaxis(times.ag_end[:, d, t, :n_ag], 1, 0)
        batch.add(ts=arrive, dur=done - arrive, kind="collective", lane="nc/cc/dp", phase="opt",
                  name=np.array([f"param_bucket_{j}.all_gather" for j in range(n_ag)], dtype=object),
                  nbytes=plan.ag_bytes[stage, :n_ag], coll_op="all_gather",
                  coll_group=vocab.ids(layout.dp_group_name(ranks))[:, None, None],
                  coll_seq=steps * n_ag + np.arange(n_ag), coll_ranks=job.dp)
    if oom.get(stage) is not None:
        step, ts_peak, peak = oom[stage]
        at = np.moveaxis(ts_peak[:, d], 1, 0)[:, step:step + 1, None]
        batch.add(ts=at, dur=0, kind="memory", name="oom_risk", lane="hbm", nbytes=peak,
                  step=np.array([[[step]]]),
                  args=json.dumps({"peak_bytes": int(peak), "capacity_bytes": capacity(),
                                   "message": "HBM residency exceeds the NeuronCore's capacity"}))
    return batch
