"""The run's timeline: when every block, collective and optimizer step happens on every rank.

Steps are simulated one after another. Inside a step each pipeline stage runs the 1F1B
schedule; blocks wait for their inputs (the data loader on the first and last stage, the
neighbour stage's activations or gradients otherwise). A block's tensor-parallel group runs in
lock step at the pace of its slowest member. After the last backward, gradient buckets are
reduced over the data-parallel group (launched during that backward when overlap is on): each
bucket completes when the last member has produced it plus its transfer time, so a slow rank
makes every peer wait inside the collective. Then the optimizer (and under ZeRO-1 the parameter
all-gather). Arrays are vectorised over data-parallel groups and tensor-parallel ranks; Python
loops only run over the schedule's blocks and the gradient buckets.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .inputs import Loader
from .plan import Plan


def schedule(pp: int, stage: int, microbatches: int) -> list[tuple[str, int]]:
    """1F1B: warm-up forwards, then one forward / one backward, then the remaining backwards."""
    warm = min(pp - stage - 1, microbatches)
    ops = [("F", m) for m in range(warm)]
    for i in range(microbatches - warm):
        ops += [("F", warm + i), ("B", i)]
    return ops + [("B", m) for m in range(microbatches - warm, microbatches)]


def processing_order(pp: int, microbatches: int) -> list[tuple[int, int]]:
    """(stage, block index) in an order where every block comes after the blocks it needs."""
    seqs = [schedule(pp, s, microbatches) for s in range(pp)]
    done, ptr, order = set(), [0] * pp, []
    while len(order) < pp * 2 * microbatches:
        moved = False
        for s in range(pp):
            while ptr[s] < len(seqs[s]):
                typ, m = seqs[s][ptr[s]]
                dep = ("F", s - 1, m) if typ == "F" and s > 0 else ("B", s + 1, m) if typ == "B" and s < pp - 1 else None
                if dep is not None and dep not in done:
                    break
                done.add((typ, s, m))
                order.append((s, ptr[s]))
                ptr[s] += 1
                moved = True
        if not moved:
            raise RuntimeError("1F1B schedule has a dependency cycle")
    return order


@dataclass
class StageTimes:
    """Times of one stage; g = data-parallel index, t = tensor-parallel rank, k = block."""
    step_start: np.ndarray     # (S, dp)
    step_end: np.ndarray       # (S, dp, tp)
    ready: np.ndarray          # (S, K, dp)  stage free for the block (request time)
    got: np.ndarray            # (S, K, dp)  batch in hand (F blocks of data stages), else ready
    launch: np.ndarray         # (S, K, dp)  host launch starts (F blocks)
    body: np.ndarray           # (S, K, dp)  block compute starts
    recv_end: np.ndarray       # (S, K, dp, tp) data from the neighbour stage arrived
    dp_arrive: np.ndarray      # (S, dp, tp, n_buckets)
    dp_end: np.ndarray         # (S, dp, tp, n_buckets)
    opt_start: np.ndarray      # (S, dp, tp)
    ag_arrive: np.ndarray      # (S, dp, tp, n_ag)
    ag_end: np.ndarray         # (S, dp, tp, n_ag)
    compile_start: np.ndarray  # (S, dp)


@dataclass
class Timeline:
    plan: Plan
    steps: int
    f: np.ndarray              # (world, S, K + 1) per-rank speed factors (1 = nominal)
    group: np.ndarray          # (pp, dp, S, K + 1) factor of each TP group: its slowest member
    stages: list[StageTimes]
    compile_steps: np.ndarray  # (S,) bool
    loaders: dict = field(default_factory=dict)   # stage -> Loader
    seqs: list = field(default_factory=list)      # per stage: 1F1B block list


def simulate_timeline(plan: Plan, steps: int, f: np.ndarray, loader_costs: dict,
                      compile_steps: np.ndarray, overlap_dp: bool, dp: int | None = None) -> Timeline:
    """Times of every rank (dp collapses data parallelism to that many groups per stage)."""
    job = plan.job
    pp, tp, M = job.pp, job.tp, job.microbatches
    dp = job.dp if dp is None else dp
    K = 2 * M
    grid = f.reshape(pp, dp, tp, steps, K + 1)
    group = grid.max(axis=2)                                  # (pp, dp, S, K+1): F of each TP group
    seqs = [schedule(pp, s, M) for s in range(pp)]
    order = processing_order(pp, M)
    cfg_in = job.config.input
    loaders = {s: Loader(loader_costs[s], cfg_in.workers, cfg_in.prefetch)
               for s, st in enumerate(plan.stages) if st.consumes_data}
    n_b = plan.dp_cost.shape[2]
    n_ag = plan.ag_cost.shape[2]
    z = lambda *shape: np.zeros(shape)
    out = [StageTimes(z(steps, dp), z(steps, dp, tp), z(steps, K, dp), z(steps, K, dp), z(steps, K, dp),
                      z(steps, K, dp), z(steps, K, dp, tp), z(steps, dp, tp, n_b), z(steps, dp, tp, n_b),
                      z(steps, dp, tp), z(steps, dp, tp, n_ag), z(steps, dp, tp, n_ag), z(steps, dp))
           for _ in range(pp)]
    start = np.zeros((pp, dp))
    for i in range(steps):
        free = start.copy()
        for s in range(pp):
            out[s].step_start[i] = start[s]
            out[s].compile_start[i] = start[s]
            if compile_steps[i]:
                free[s] = start[s] + plan.compile_s
        f_end, b_end = {}, {}
        for s, k in order:
            typ, m = seqs[s][k]
            times, plan_s = out[s], plan.stages[s]
            F = group[s, :, i, k]
            ready = free[s].copy()  # a copy: free[s] is overwritten below
            times.ready[i, k] = ready
            arrived = ready
            if typ == "F" and s > 0:
                recv = np.maximum(ready[:, None], f_end[(s - 1, m)][:, None] + plan.p2p_cost[s - 1])
                times.recv_end[i, k] = recv
                arrived = recv.max(axis=1)
            elif typ == "B" and s < pp - 1:
                recv = np.maximum(ready[:, None], b_end[(s + 1, m)][:, None] + plan.p2p_cost[s])
                times.recv_end[i, k] = recv
                arrived = recv.max(axis=1)
            else:
                times.recv_end[i, k] = ready[:, None]
            if typ == "F":
                if s in loaders:
                    got = loaders[s].consume(i * M + m, ready)
                    launch = np.maximum(got + plan.h2d, arrived)
                else:
                    got, launch = ready, arrived
                times.got[i, k], times.launch[i, k] = got, launch
                body = launch + plan.launch
                end = body + (plan_s.fwd.compute * F + plan_s.fwd.transfer)
                f_end[(s, m)] = end
            else:
                times.got[i, k], times.launch[i, k] = ready, arrived
                body = arrived
                end = body + (plan_s.bwd.compute * F + plan_s.bwd.transfer)
                b_end[(s, m)] = end
            times.body[i, k] = body
            free[s] = end
            if k == K - 1:
                _finish_step(plan, s, i, times, body, F, grid[s, :, :, i, k], grid[s, :, :, i, K], end, overlap_dp)
        for s in range(pp):
            start[s] = out[s].step_end[i].max(axis=1)
    return Timeline(plan=plan, steps=steps, f=f, group=group, stages=out, compile_steps=compile_steps,
                    loaders=loaders, seqs=seqs)


def _chain(ready: np.ndarray, cost: np.ndarray):
    """Collectives issued one after another over the data-parallel axis (axis 0): each starts
    on a rank when its data is ready and the previous one is done, and ends when the last
    member has started plus its transfer time. ready (dp, tp, n), cost (tp, n)."""
    arrive, end = np.empty_like(ready), np.empty_like(ready)
    prev = np.full(ready.shape[:2], -np.inf)
    for j in range(ready.shape[2]):
        arrive[:, :, j] = np.maximum(ready[:, :, j], prev)
        end[:, :, j] = arrive[:, :, j].max(axis=0) + cost[:, j]
        prev = end[:, :, j]
    return arrive, end


def _finish_step(plan: Plan, s: int, i: int, times: StageTimes, body, F, f_last, f_opt, b_end, overlap_dp):
    """Gradient reduction, optimizer and ZeRO-1 all-gather after the stage's last backward."""
    st = plan.stages[s]
    dp, tp = f_last.shape
    n = len(st.buckets)
    ready = np.empty((dp, tp, plan.dp_cost.shape[2]))
    if n:
        coef = np.array([b.ready for b in st.buckets])          # (n, 3)
        if overlap_dp:
            ready[:, :, :n] = (body[:, None, None] + coef[None, None, :, 0] + coef[None, None, :, 1] * F[:, None, None]
                               + coef[None, None, :, 2] * f_last[:, :, None])
        else:
            ready[:, :, :n] = b_end[:, None, None]
    ready[:, :, n:] = -np.inf  # stages with fewer buckets than the widest: empty slots
    arrive, end = _chain(ready, plan.dp_cost[s])
    times.dp_arrive[i], times.dp_end[i] = arrive, end
    opt_start = np.maximum(b_end[:, None], end[:, :, n - 1] if n else -np.inf)
    times.opt_start[i] = opt_start
    opt_end = opt_start + sum(op.dur for op in st.opt) * f_opt
    if plan.ag_cost.shape[2]:
        ag_ready = np.repeat(opt_end[:, :, None], plan.ag_cost.shape[2], axis=2)
        ag_ready[:, :, np.count_nonzero(plan.ag_bytes[s]):] = -np.inf
        ag_arrive, ag_end = _chain(ag_ready, plan.ag_cost[s])
        times.ag_arrive[i], times.ag_end[i] = ag_arrive, ag_end
        last = np.count_nonzero(plan.ag_bytes[s]) - 1
        opt_end = np.maximum(opt_end, ag_end[:, :, last])
    times.step_end[i] = opt_end
