"""The replay as the job runs (docs/critical-path.md, issue 35): steps carry over, blocking host
calls end with the device work they wait for (and become launches when the sync is removed),
device queues and launches connect across steps, untraced host time is the rank's work, and the
replay operations of fixes (`early`, `launch`, `matmul`). Every expected step time is derived
by hand in the test from the events written there."""

from __future__ import annotations

import json

import pytest

from tests.conftest import write_inline_run
from trnprof.api import open_run
from trnprof.collectors.ingest import ingest
from trnprof.critical_path import scale
from trnprof.critical_path.compute import analyse
from trnprof.errors import TrnprofError

MS = 1_000_000
US = 1_000


def _ev(rank, step, ts, dur, kind, name, lane, **extra):
    return {
        "rank": rank,
        "step": step,
        "ts": int(ts * MS),
        "dur": int(dur * MS),
        "kind": kind,
        "name": name,
        "lane": lane,
        **extra,
    }


def _steps(run_dir, *scales) -> list[float]:
    """Replayed step times (slowest rank), ms, in step order."""
    with open_run(run_dir) as run:
        replayed = analyse(run, scales).replayed.sort_values("step")
    return [round(float(d) / MS, 6) for d in replayed["dur"]]


@pytest.fixture(scope="module")
def late_finisher(tmp_path_factory):
    """Two ranks, three steps. Each step both compute `a` for 10 ms and all-reduce (1 ms once
    both arrived), then an optimizer op of 1 ms; rank 1 then runs `slow` for 20 ms, so it ends
    each step 20 ms after rank 0 and starts the next one that much later, and rank 0 waits for
    it at the next all-reduce. Rank 0's steps: [0, 12], [12, 44], [44, 76]; rank 1's: [0, 32],
    [32, 64], [64, 96]. Every step takes 32 ms (slowest rank)."""
    events = []
    r0, r1 = (0, 12, 44), (0, 32, 64)
    for step in range(3):
        a0, a1 = r0[step], r1[step]
        arrive = max(a0, a1) + 10
        coll = {"coll_op": "all_reduce", "coll_group": "dp", "coll_seq": step}
        for rank, begin, end in ((0, a0, arrive + 2), (1, a1, arrive + 22)):
            events += [
                _ev(rank, step, begin, end - begin, "step", "step", "host/main"),
                _ev(rank, step, begin, 10, "compute", "a", "nc/tensor"),
                _ev(rank, step, begin + 10, arrive + 1 - (begin + 10), "collective", "all_reduce", "nc/cc", **coll),
                _ev(rank, step, arrive + 1, 1, "compute", "opt", "nc/tensor"),
            ]
        events.append(_ev(1, step, arrive + 2, 20, "compute", "slow", "nc/tensor"))
    return write_inline_run(tmp_path_factory.mktemp("carry") / "run", events)


def test_a_step_ending_earlier_moves_the_steps_after_it(late_finisher):
    assert _steps(late_finisher) == [32, 32, 32]
    # `slow` removed: rank 1 ends step 0 at 12 and, carried over, starts step 1 there (its
    # measured gap to the next step is 0), so both arrive at the all-reduce at 22 and end the
    # step at 24: every step takes 12 ms, the job without `slow`. Replayed from the measured
    # starts instead, rank 0 would still wait from 22 for rank 1's arrival at 42 (32 ms).
    assert _steps(late_finisher, "name:slow=0") == [12, 12, 12]
    # half of it: rank 1 ends step 0 at 22, starts step 1 at 22, arrives at 32; rank 0 (from 12)
    # waits there, ends at 34 (22 ms), rank 1 at 44 (22 ms)
    assert _steps(late_finisher, "name:slow=0.5") == [22, 22, 22]
    # one step per batch: each batch starts where the previous one's replay ended
    with open_run(late_finisher) as run:
        one_by_one = analyse(run, ["name:slow=0"], limit=1).replayed.sort_values("step")["dur"]
    assert [float(d) / MS for d in one_by_one] == [12, 12, 12]


def test_steps_left_out_of_the_replay_break_the_carry(late_finisher):
    """Replaying steps 0 and 2 only: step 2 follows step 1, measured, so it starts where it was
    measured to: rank 1 arrives at 74 ms at the all-reduce again and rank 0 (from 44) waits."""
    with open_run(late_finisher) as run:
        steps = run.sql("SELECT rank, step, ts, end_ts FROM steps WHERE step <> 1")
        replayed = analyse(run, ["name:slow=0"], steps=steps).replayed.sort_values("step")["dur"]
    assert [float(d) / MS for d in replayed] == [12, 32]


def X(name, cat, ts, dur, pid=100, tid=100, **args):
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": args}


def _kineto(tmp_path, events) -> object:
    trace = tmp_path / "rank-0.json"
    trace.write_text(json.dumps({"traceEvents": events}))
    ingest([trace], tmp_path / "run", rank=None)
    return tmp_path / "run"


def test_a_blocking_sync_ends_with_the_device_work_and_becomes_a_launch_when_removed(tmp_path):
    """One step of 13 ms: aten::mm (0-1 ms) launches gemm (its call ends at 0.6 ms); gemm runs
    1-11 ms; cudaStreamSynchronize (2-11.5 ms) blocks until it ends, then takes 0.5 ms; aten::add_
    runs 11.5-12.5 ms; 0.5 ms untraced close the step."""
    run = _kineto(
        tmp_path,
        [
            X("ProfilerStep#1", "user_annotation", 0, 13000),
            X("aten::mm", "cpu_op", 0, 1000),
            X("cudaLaunchKernel", "cuda_runtime", 500, 100, correlation=1),
            X("gemm", "kernel", 1000, 10000, pid=0, tid=7, correlation=1),
            X("cudaStreamSynchronize", "cuda_runtime", 2000, 9500, correlation=2),
            X("aten::add_", "cpu_op", 11500, 1000),
        ],
    )
    assert _steps(run) == [13]
    # gemm 1-6 ms: the sync ends at 6.5, add_ at 7.5, the step 0.5 ms later
    assert _steps(run, "name:gemm=0.5") == [8]
    # gemm 1-21 ms: the sync waits for it (21.5), add_ ends at 22.5, the step at 23
    assert _steps(run, "name:gemm=2") == [23]
    # the sync removed: the call takes its own 0.5 ms (2-2.5) and add_ runs 2.5-3.5, but the
    # device still runs gemm until 11 ms: the device bounds the step (11 + 0.5)
    assert _steps(run, "sync=launch") == [11.5]
    assert _steps(run, "name:cudaStreamSynchronize=launch") == [11.5]


def test_a_sync_called_after_the_device_finished_waits_when_the_device_becomes_later(tmp_path):
    """gemm runs 1-3 ms; cudaDeviceSynchronize (5-5.2 ms) is called after it ended and does not
    block; aten::add_ 5.2-6 ms; the step ends at 6.5 ms. The host ran ahead of the device: no
    host op waits for gemm but the sync."""
    run = _kineto(
        tmp_path,
        [
            X("ProfilerStep#1", "user_annotation", 0, 6500),
            X("aten::mm", "cpu_op", 0, 1000),
            X("cudaLaunchKernel", "cuda_runtime", 500, 100, correlation=1),
            X("gemm", "kernel", 1000, 2000, pid=0, tid=7, correlation=1),
            X("cudaDeviceSynchronize", "cuda_runtime", 5000, 200, correlation=2),
            X("aten::add_", "cpu_op", 5200, 800),
        ],
    )
    assert _steps(run) == [6.5]
    # gemm 1-7 ms: the sync (called at 5) now waits for it and takes its 0.2 ms after: 7.2;
    # add_ 7.2-8; the step 0.5 ms later. (The sync had no edge when it did not block: 7.5.)
    assert _steps(run, "name:gemm=3") == [8.5]
    # the sync's start does not wait for gemm (host work waits for the device only through
    # blocking calls): gemm 1-2 ms changes nothing
    assert _steps(run, "name:gemm=0.5") == [6.5]


def test_a_kernel_queued_behind_the_previous_steps_kernel_moves_with_it(tmp_path):
    """Step 1 (0-1 ms) launches k1 (its call ends at 60 us), which runs 100-1100 us, into step 2.
    Step 2 (1-2 ms) launches k2 (call ends at 1060 us); k2 starts when the stream is free, at
    1100 us, runs 500 us; cudaDeviceSynchronize (1200-1650 us) waits for it and takes 50 us
    after; 350 us untraced close the step."""
    run = _kineto(
        tmp_path,
        [
            X("ProfilerStep#1", "user_annotation", 0, 1000),
            X("aten::mm", "cpu_op", 0, 100),
            X("cudaLaunchKernel", "cuda_runtime", 50, 10, correlation=1),
            X("k1", "kernel", 100, 1000, pid=0, tid=7, correlation=1),
            X("ProfilerStep#2", "user_annotation", 1000, 1000),
            X("aten::mm", "cpu_op", 1000, 100),
            X("cudaLaunchKernel", "cuda_runtime", 1050, 10, correlation=2),
            X("k2", "kernel", 1100, 500, pid=0, tid=7, correlation=2),
            X("cudaDeviceSynchronize", "cuda_runtime", 1200, 450, correlation=3),
        ],
    )
    assert _steps(run) == [1, 1]
    # k1 100-600 us: k2 starts at its launch (1060), ends 1560; the sync at 1610; step 2 ends
    # 350 us later, at 1960 (0.96 ms). Step 1 is unchanged (k1 ended after it).
    assert _steps(run, "name:k1=0.5") == [1, 0.96]
    # k1 100-1600 us: k2 1600-2100, the sync 2150, step 2 ends at 2500 (1.5 ms)
    assert _steps(run, "name:k1=1.5") == [1, 1.5]


@pytest.fixture(scope="module")
def untraced_straggler(tmp_path_factory):
    """Two ranks, four steps every 20 ms. Rank 0 computes 0-10 ms and waits at the all-reduce
    for rank 1, which spends 5 ms on nothing recorded (Python, I/O, sleep) before computing
    5-15 ms; the all-reduce ends 1 ms after rank 1 arrives; both steps end at 16 ms."""
    events = []
    for step in range(4):
        t = 20 * step
        coll = {"coll_op": "all_reduce", "coll_group": "dp", "coll_seq": step}
        events += [
            _ev(0, step, t, 16, "step", "step", "host/main"),
            _ev(1, step, t, 16, "step", "step", "host/main"),
            _ev(0, step, t, 10, "compute", "fwd", "nc/tensor"),
            _ev(0, step, t + 10, 6, "collective", "all_reduce", "nc/cc", **coll),
            _ev(1, step, t + 5, 10, "compute", "fwd", "nc/tensor"),
            _ev(1, step, t + 15, 1, "collective", "all_reduce", "nc/cc", **coll),
        ]
    return write_inline_run(tmp_path_factory.mktemp("untraced") / "run", events)


def test_untraced_time_is_the_ranks_work_at_its_peers_pace(untraced_straggler):
    assert _steps(untraced_straggler) == [16] * 4
    # rank 1's untraced 5 ms per step brought to rank 0's (none): it computes 0-10, both arrive
    # at 10, the all-reduce ends at 11 (compute alone at its peer's pace changed nothing)
    assert _steps(untraced_straggler, "rank:1=peers") == [11] * 4
    assert _steps(untraced_straggler, "gap,rank:1=0") == [11] * 4


def test_collectives_started_early_and_matmuls_at_another_precision(tmp_path):
    """One rank, one step of 18 ms: aten::mm 0-10 ms and relu 10-15 ms on the compute lane, an
    all-reduce 15-18 ms on its own lane, started when relu (the latest finished op) ended."""
    run = write_inline_run(
        tmp_path / "run",
        [
            _ev(0, 0, 0, 18, "step", "step", "host/main"),
            _ev(0, 0, 0, 10, "compute", "aten::mm", "nc/tensor"),
            _ev(0, 0, 10, 5, "compute", "relu", "nc/tensor"),
            _ev(0, 0, 15, 3, "collective", "all_reduce", "nc/cc", coll_op="all_reduce", coll_group="dp", coll_seq=0),
        ],
    )
    assert _steps(run) == [18]
    # the all-reduce bucketed to start during the backward pass: it no longer waits for relu
    # and runs 0-3 ms under the compute, which ends the step at 15
    assert _steps(run, "collective=early") == [15]
    # matmuls at twice the speed: aten::mm 0-5, relu 5-10, the all-reduce 10-13; relu is not a matmul
    assert _steps(run, "matmul=0.5") == [13]


@pytest.mark.parametrize(
    "spec, says",
    [("gap=launch", "rewires nodes"), ("sync=soon", "'launch' or 'early'"), ("matmul:x=1", "not understood")],
)
def test_bad_operations_are_one_error(spec, says):
    with pytest.raises(TrnprofError, match=says):
        scale.parse(spec)


def test_operations_parse():
    assert scale.parse("sync=launch").action == "launch" and scale.parse("sync=launch").terms == (("sync", ""),)
    assert scale.parse("collective,rank:1=early").action == "early"
    assert scale.parse("matmul=0.25").factor == 0.25


def test_a_blocking_send_waits_for_its_receiver(tmp_path):
    """Rank 0 sends from 0 ms; rank 1 computes 0-8 ms, then posts the receive: the send ends at
    10 ms (2 ms after the receive was posted), the receive at 10.5; both steps end at 11."""
    p2p = {"coll_group": "pp", "coll_seq": 0}
    run = write_inline_run(
        tmp_path / "run",
        [
            _ev(0, 0, 0, 11, "step", "step", "host/main"),
            _ev(1, 0, 0, 11, "step", "step", "host/main"),
            _ev(0, 0, 0, 10, "p2p", "send.x", "nc/p2p", coll_op="send", **p2p),
            _ev(1, 0, 0, 8, "compute", "c", "nc/tensor"),
            _ev(1, 0, 8, 2.5, "p2p", "recv.x", "nc/p2p", coll_op="recv", **p2p),
        ],
    )
    assert _steps(run) == [11]
    # c 0-16 ms: the receive is posted at 16, the send ends 2 ms later (18), the receive 0.5 ms
    # after the data (18.5); rank 1's step ends 0.5 ms later, rank 0's 1 ms later: 19. (A send
    # that kept its own length would end at 10 and the step at 17.)
    assert _steps(run, "name:c=2") == [19]
    # c 0-4 ms: the receive is posted at 4 and the send ends 2 ms later (6), the receive at 6.5,
    # the steps at 7
    assert _steps(run, "name:c=0.5") == [7]


def test_mark_step_waits_for_the_device(tmp_path):
    """Trn1-like, no correlation ids: the host launches a graph (0-1 ms), the device runs it 1-9.5
    ms, xm.mark_step (2-10 ms) returns 0.5 ms after it ends, then opt (10-11 ms); 0.5 ms close
    the 11.5 ms step."""
    run = write_inline_run(
        tmp_path / "run",
        [
            _ev(0, 0, 0, 11.5, "step", "step", "host/main"),
            _ev(0, 0, 0, 1, "host", "launch_graph", "host/main"),
            _ev(0, 0, 1, 8.5, "compute", "graph", "nc/tensor"),
            _ev(0, 0, 2, 8, "host", "xm.mark_step", "host/main"),
            _ev(0, 0, 10, 1, "host", "opt", "host/main"),
        ],
    )
    with open_run(run) as opened:
        path = opened.sql("SELECT category, name, dur FROM critical_path ORDER BY seq")
    # the path: the launch, the device's graph, the 0.5 ms mark_step took after it, opt, the tail
    assert list(path.itertuples(index=False)) == [
        ("host", "launch_graph", 1 * MS),
        ("compute", "graph", 8.5 * MS),
        ("sync", "xm.mark_step", 0.5 * MS),
        ("host", "opt", 1 * MS),
        ("host", "(untraced)", 0.5 * MS),
    ]
    # the device twice as slow: mark_step returns at 18.5, opt ends 19.5, the step 0.5 ms later
    assert _steps(run, "name:graph=2") == [20]


def test_tiny_ops_fused_on_a_cpu_thread(tmp_path):
    """One CPU thread, one 10 ms step: `big` 0-4 ms, then 100 ops `add` of 20 us 10 us apart
    (4.00-6.99 ms: 100 x 20 + 99 x 10 = 2,990 us), then `tail` 7-10 ms (its lead gap 10 us).
    Fused (the tiny ops and the short gaps between them gone): 4 + 0.01 + 3 = 7.01 ms (`tail`
    keeps its lead gap: it is no tiny op). The ops alone gone: 4 + 100 x 0.01 + 3 = 8 ms."""
    events = [_ev(0, 0, 0, 10, "step", "step", "host/main"), _ev(0, 0, 0, 4, "compute", "big", "host/main")]
    events += [_ev(0, 0, 4 + i * 0.03, 0.02, "compute", "add", "host/main") for i in range(100)]
    events.append(_ev(0, 0, 7, 3, "compute", "tail", "host/main"))
    run = write_inline_run(tmp_path / "run", events)
    assert _steps(run, "compute,under:25us=0", "compute,under:25us,gap=0") == pytest.approx([7.01])
    assert _steps(run, "compute,under:25us=0") == pytest.approx([8])  # the gaps stay
    assert _steps(run, "compute,under:40us,gap=0") == pytest.approx([10 - 0.99])  # the gaps alone go
    assert _steps(run, "compute,under:5us,gap=0") == [10]  # no op that short


@pytest.mark.parametrize(
    "spec, ns",
    [
        ("compute,under:20us=0", 20_000),
        ("under:1.5ms=0", 1_500_000),
        ("under:7=0", 7),
        ("under:2s,gap=0", 2_000_000_000),
    ],
)
def test_under_takes_a_duration(spec, ns):
    assert dict(scale.parse(spec).terms)["under"] == str(ns)


@pytest.mark.parametrize("spec", ["under:0=0", "under:-1us=0", "under:2h=0", "under:nan=0", "under:=0", "under:1e9s=0"])
def test_under_out_of_range_is_one_error(spec):
    with pytest.raises(TrnprofError, match="not a duration from 1 ns to a day"):
        scale.parse(spec)
