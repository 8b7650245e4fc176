"""Launched but unstarted device work (stdlib view launch_pending, issue 35): a CUDA-graph step
whose replayed kernels the trace does not record is device work not recorded, not a host-bound
step (rule compute.host_bound). Hand-built Kineto traces; expected values from their events."""

from __future__ import annotations

import json

import pytest

from trnprof.api import analyze, open_run
from trnprof.collectors.ingest import ingest


def X(name, cat, ts, dur, pid=100, tid=100, **args):
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": args}


def _trace(graph_kernels: bool) -> list[dict]:
    """Four 10 ms steps. Each: cudaGraphLaunch (0-0.1 ms); a recorded kernel launched at
    0.2-0.25 ms runs 0.3-0.5 ms; 8 ms of host work (1-9 ms); cudaStreamSynchronize (9-9.9 ms).
    With `graph_kernels`, the graph's kernel is recorded too (0.1-0.6 ms): the device is idle
    while the host works; without, the graph's work runs unrecorded until the sync returns."""
    events = []
    for k in range(4):
        t = 10_000 * k
        events += [
            X(f"ProfilerStep#{k + 1}", "user_annotation", t, 10_000),
            X("cudaGraphLaunch", "cuda_runtime", t, 100, correlation=10 * k + 1),
            X("cudaLaunchKernel", "cuda_runtime", t + 200, 50, correlation=10 * k + 3),
            X("fill_kernel", "kernel", t + 300, 200, pid=0, tid=7, correlation=10 * k + 3),
            X("python_work", "cpu_op", t + 1_000, 8_000),
            X("cudaStreamSynchronize", "cuda_runtime", t + 9_000, 900, correlation=10 * k + 2),
        ]
        if graph_kernels:
            events.append(X("graph_kernel", "kernel", t + 100, 500, pid=0, tid=8, correlation=10 * k + 1))
    return events


@pytest.fixture(scope="module", params=[False, True], ids=["graph-unrecorded", "graph-recorded"])
def case(request, tmp_path_factory):
    folder = tmp_path_factory.mktemp("pending")
    trace = folder / "rank-0.json"
    trace.write_text(json.dumps({"traceEvents": _trace(request.param)}))
    ingest([trace], folder / "run", rank=None)
    return request.param, folder / "run"


def test_launch_pending_reads_the_queue_from_the_launches(case):
    recorded, run = case
    with open_run(run) as opened:
        pending = opened.sql("SELECT * FROM launch_pending ORDER BY step")
    assert list(pending["launches"]) == [2] * 4
    if recorded:
        # graph_kernel starts as its launch call ends (0.1 ms), fill_kernel 50 us after its own:
        # pending 50 us per step; median wait (0 + 50) / 2 us
        assert list(pending["unrecorded"]) == [0] * 4 and list(pending["pending_ns"]) == [50_000] * 4
        assert list(pending["p50_wait_ns"]) == [25_000] * 4
    else:
        # the graph's work is pending from its launch's end (0.1 ms) until the sync returns (9.9 ms)
        assert list(pending["unrecorded"]) == [1] * 4 and list(pending["pending_ns"]) == [9_800_000] * 4
        assert list(pending["p50_wait_ns"]) == [50_000] * 4


def test_unrecorded_device_work_is_not_a_host_bound_step(case):
    recorded, run = case
    names = {f.name: f for f in analyze(run, select=["compute"]).findings}
    if recorded:
        # the device idles while the host works 8 ms (less the 50 us fill_kernel queue)
        assert names["compute.host_bound"].impact.measured_seconds_per_step == pytest.approx(8.1e-3, rel=0.02)
    else:
        assert "compute.host_bound" not in names


def test_a_blocking_call_on_the_path_is_the_host_waiting_for_the_device(case):
    """cudaStreamSynchronize (0.9 ms a step) waits for the graph's work, recorded or not: on the
    critical path it is `sync`, not host work."""
    recorded, run = case
    with open_run(run) as opened:
        path = opened.sql(
            "SELECT category, SUM(dur) AS dur FROM critical_path WHERE name = 'cudaStreamSynchronize' GROUP BY category"
        )
    assert list(path["category"]) == ["sync"] and int(path["dur"].iloc[0]) == 4 * 900_000
