"""The run's timeline: when every block, collective and optimizer step happens on every rank.

Steps are simulated one after another. Inside a step each pipeline stage runs the 1F1B
schedule; blocks wait for their inputs (the data loader on the first and last stage, the
neighbour stage's activations or gradients otherwise). Each microbatch's graph is launched by
the host (torch-xla executes asynchronously: the host fetches the next batch and launches the
next graph while the device runs the current one, one graph ahead), so the host is on the
critical path only when it is slower than the device. A block's tensor-parallel group runs in
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
                dep = (
                    ("F", s - 1, m) if typ == "F" and s > 0 else ("B", s + 1, m) if typ == "B" and s < pp - 1 else None
                )
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

    step_start: np.ndarray  # (S, dp)
    step_end: np.ndarray  # (S, dp, tp)
    ready: np.ndarray  # (S, K, dp)  device free for the block
    got: np.ndarray  # (S, K, dp)  batch in hand (F blocks of data stages), else ready
    launch: np.ndarray  # (S, K, dp)  host starts launching the block's graph (F blocks)
    body: np.ndarray  # (S, K, dp)  block compute starts
    recv_end: np.ndarray  # (S, K, dp, tp) data from the neighbour stage arrived
    dp_arrive: np.ndarray  # (S, dp, tp, n_buckets)
    dp_end: np.ndarray  # (S, dp, tp, n_buckets)
    opt_start: np.ndarray  # (S, dp, tp)
    ag_arrive: np.ndarray  # (S, dp, tp, n_ag)
    ag_end: np.ndarray  # (S, dp, tp, n_ag)
    compile_start: np.ndarray  # (S, dp)


def _stage_times(steps: int, blocks: int, dp: int, tp: int, n_buckets: int, n_ag: int) -> StageTimes:
    z = np.zeros
    return StageTimes(
        step_start=z((steps, dp)),
        step_end=z((steps, dp, tp)),
        ready=z((steps, blocks, dp)),
        got=z((steps, blocks, dp)),
        launch=z((steps, blocks, dp)),
        body=z((steps, blocks, dp)),
        recv_end=z((steps, blocks, dp, tp)),
        dp_arrive=z((steps, dp, tp, n_buckets)),
        dp_end=z((steps, dp, tp, n_buckets)),
        opt_start=z((steps, dp, tp)),
        ag_arrive=z((steps, dp, tp, n_ag)),
        ag_end=z((steps, dp, tp, n_ag)),
        compile_start=z((steps, dp)),
    )


@dataclass
class Timeline:
    plan: Plan
    steps: int
    f: np.ndarray  # (world, S, K + 1) per-rank speed factors (1 = nominal)
    group: np.ndarray  # (pp, dp, S, K + 1) factor of each TP group: its slowest member
    stages: list[StageTimes]
    compile_steps: np.ndarray  # (S,) bool
    loaders: dict = field(default_factory=dict)  # stage -> Loader
    seqs: list = field(default_factory=list)  # per stage: 1F1B block list


@dataclass
class _Clocks:
    """Per stage and data-parallel group: when the device and the host are next free, and when
    the device started its latest block (the runtime queues one graph behind the running one)."""

    device_free: np.ndarray  # (pp, dp)
    host_free: np.ndarray  # (pp, dp)
    last_body: np.ndarray  # (pp, dp)


@dataclass
class _Step:
    """What one step's blocks hand to each other: block ends per (stage, microbatch)."""

    index: int
    fwd_end: dict = field(default_factory=dict)
    bwd_end: dict = field(default_factory=dict)


def simulate_timeline(
    plan: Plan,
    steps: int,
    f: np.ndarray,
    loader_costs: dict,
    compile_steps: np.ndarray,
    overlap_dp: bool,
    dp: int | None = None,
) -> Timeline:
    """Times of every rank (dp collapses data parallelism to that many groups per stage)."""
    job = plan.job
    pp, tp, microbatches = job.pp, job.tp, job.microbatches
    dp = job.dp if dp is None else dp
    blocks = 2 * microbatches
    rank_speed = f.reshape(pp, dp, tp, steps, blocks + 1)
    group_speed = rank_speed.max(axis=2)  # a TP group runs at its slowest member's pace
    seqs = [schedule(pp, s, microbatches) for s in range(pp)]
    inputs = job.config.input
    loaders = {
        s: Loader(loader_costs[s], inputs.workers, inputs.prefetch)
        for s, st in enumerate(plan.stages)
        if st.consumes_data
    }
    stages = [_stage_times(steps, blocks, dp, tp, plan.dp_cost.shape[2], plan.ag_cost.shape[2]) for _ in range(pp)]
    clocks = _Clocks(np.zeros((pp, dp)), np.zeros((pp, dp)), np.zeros((pp, dp)))
    tl = Timeline(
        plan=plan,
        steps=steps,
        f=f,
        group=group_speed,
        stages=stages,
        compile_steps=compile_steps,
        loaders=loaders,
        seqs=seqs,
    )
    order = processing_order(pp, microbatches)
    for i in range(steps):
        _start_step(tl, clocks, i)
        step = _Step(i)
        for s, k in order:
            _run_block(tl, clocks, step, s, k)
            if k == blocks - 1:
                body = stages[s].body[i, k]
                _finish_step(
                    plan,
                    s,
                    i,
                    stages[s],
                    body,
                    group_speed[s, :, i, k],
                    rank_speed[s, :, :, i, k],
                    rank_speed[s, :, :, i, blocks],
                    clocks.device_free[s],
                    overlap_dp,
                )
        for s in range(pp):
            clocks.device_free[s] = stages[s].step_end[i].max(axis=1)
    return tl


def _start_step(tl: Timeline, clocks: _Clocks, i: int) -> None:
    """A step starts when the previous one ended (the host syncs on its loss); a compile step
    first compiles the stage's graph on the host."""
    for s, times in enumerate(tl.stages):
        start = clocks.device_free[s].copy()
        times.step_start[i] = times.compile_start[i] = start
        if tl.compile_steps[i]:
            start = start + tl.plan.compile_s
        clocks.device_free[s] = clocks.host_free[s] = clocks.last_body[s] = start


def _neighbour_arrival(tl: Timeline, step: _Step, s: int, typ: str, m: int, ready: np.ndarray):
    """(dp, tp) time the block's input from the neighbour stage is there, or None without one."""
    plan = tl.plan
    if typ == "F" and s > 0:
        return np.maximum(ready[:, None], step.fwd_end[(s - 1, m)][:, None] + plan.p2p_cost[s - 1])
    if typ == "B" and s < plan.job.pp - 1:
        return np.maximum(ready[:, None], step.bwd_end[(s + 1, m)][:, None] + plan.p2p_cost[s])
    return None


def _run_block(tl: Timeline, clocks: _Clocks, step: _Step, s: int, k: int) -> None:
    """One forward or backward block of stage s. A forward starts a microbatch's graph: the host
    fetches its batch and launches the graph (while the device still runs the previous one);
    the device starts when it is free, the graph is launched, the batch is copied in and the
    neighbour's activations arrived. A backward continues on the device."""
    plan, times, i = tl.plan, tl.stages[s], step.index
    typ, m = tl.seqs[s][k]
    ready = clocks.device_free[s].copy()
    recv = _neighbour_arrival(tl, step, s, typ, m, ready)
    arrived = ready if recv is None else recv.max(axis=1)
    times.ready[i, k] = ready
    times.recv_end[i, k] = ready[:, None] if recv is None else recv
    if typ == "F":
        request = np.maximum(clocks.host_free[s], clocks.last_body[s])
        loader = tl.loaders.get(s)
        if loader is not None:
            got = loader.consume(i * plan.job.microbatches + m, request)
            body = np.maximum(np.maximum(ready, arrived), got + max(plan.launch, plan.h2d))
        else:
            got = request
            body = np.maximum(np.maximum(ready, arrived), got + plan.launch)
        clocks.host_free[s] = got + plan.launch
        times.got[i, k] = got if loader is not None else ready
        times.launch[i, k] = got
        block = plan.stages[s].fwd
    else:
        body = arrived
        times.got[i, k], times.launch[i, k] = ready, arrived
        block = plan.stages[s].bwd
    end = body + block.compute * tl.group[s, :, i, k] + block.transfer
    (step.fwd_end if typ == "F" else step.bwd_end)[(s, m)] = end
    times.body[i, k] = body
    clocks.device_free[s] = end
    clocks.last_body[s] = body


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


def _finish_step(
    plan: Plan, s: int, i: int, times: StageTimes, body, group_speed, rank_speed, opt_speed, backward_end, overlap_dp
):
    """Gradient reduction, optimizer and ZeRO-1 all-gather after the stage's last backward
    (`body`: its start per group; speeds: its TP groups', its ranks' and the optimizer's)."""
    st = plan.stages[s]
    dp, tp = rank_speed.shape
    n = len(st.buckets)
    ready = np.empty((dp, tp, plan.dp_cost.shape[2]))
    if n:
        offset = np.array([b.ready for b in st.buckets])  # (n, 3): fixed, per group, per rank
        if overlap_dp:
            ready[:, :, :n] = (
                body[:, None, None]
                + offset[None, None, :, 0]
                + offset[None, None, :, 1] * group_speed[:, None, None]
                + offset[None, None, :, 2] * rank_speed[:, :, None]
            )
        else:
            ready[:, :, :n] = backward_end[:, None, None]
    ready[:, :, n:] = -np.inf  # stages with fewer buckets than the widest: empty slots
    arrive, end = _chain(ready, plan.dp_cost[s])
    times.dp_arrive[i], times.dp_end[i] = arrive, end
    opt_start = np.maximum(backward_end[:, None], end[:, :, n - 1] if n else -np.inf)
    times.opt_start[i] = opt_start
    opt_end = opt_start + sum(op.dur for op in st.opt) * opt_speed
    n_ag = np.count_nonzero(plan.ag_bytes[s]) if plan.ag_cost.shape[2] else 0
    if plan.ag_cost.shape[2]:
        ag_ready = np.repeat(opt_end[:, :, None], plan.ag_cost.shape[2], axis=2)
        ag_ready[:, :, n_ag:] = -np.inf
        ag_arrive, ag_end = _chain(ag_ready, plan.ag_cost[s])
        times.ag_arrive[i], times.ag_end[i] = ag_arrive, ag_end
        opt_end = np.maximum(opt_end, ag_end[:, :, n_ag - 1])
    times.step_end[i] = opt_end
