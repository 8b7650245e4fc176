"""Launch edges from correlation ids (trnprof/critical_path/edges_launch.py): two hand-built
Kineto traces in which a kernel starts long after the host op that launches it began, once
because its stream was busy and once because the launch itself was late. A background thread's
nested call ends just before the kernel starts in both, which is what the inference from time
alone would take for the launch. The expected blame follows from the raw events."""

from __future__ import annotations

import json

import pytest

from trnprof.api import open_run
from trnprof.collectors.ingest import ingest
from trnprof.critical_path.compute import analyse

US = 1_000


def X(name, cat, ts, dur, pid=100, tid=100, **args):
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": args}


def _trace(kernel1_dur: int, launch2_at: int) -> list[dict]:
    """One step (0-1000 us). Main thread: aten::mm launches kernel1; aten::add (70-700) launches
    kernel2 at `launch2_at`; cudaDeviceSynchronize waits for the device. A pinning thread runs
    throughout, its nested copy ending 1 us before kernel2 starts. kernel2 starts 2 us after
    the later of kernel1's end and its own launch's end."""
    kernel2_ts = max(30 + kernel1_dur, launch2_at + 5) + 2
    return [
        X("ProfilerStep#1", "user_annotation", 0, 1000),
        X("aten::mm", "cpu_op", 10, 50),
        X("cudaLaunchKernel", "cuda_runtime", 20, 5, correlation=1),
        X("aten::add", "cpu_op", 70, 630),
        X("cudaLaunchKernel", "cuda_runtime", launch2_at, 5, correlation=2),
        X("cudaDeviceSynchronize", "cuda_runtime", 710, kernel2_ts + 300 + 10 - 710, correlation=3),
        X("pin_memory_loop", "cpu_op", 5, kernel2_ts, tid=200),
        X("aten::copy_", "cpu_op", kernel2_ts - 30, 29, tid=200),
        X("kernel1", "kernel", 30, kernel1_dur, pid=0, tid=7, correlation=1),
        X("kernel2", "kernel", kernel2_ts, 300, pid=0, tid=7, correlation=2),
        {"ph": "f", "id": 2, "pid": 0, "tid": 7, "ts": kernel2_ts, "cat": "ac2g", "name": "ac2g", "bp": "e"},
        {"ph": "s", "id": 2, "pid": 100, "tid": 100, "ts": launch2_at, "cat": "ac2g", "name": "ac2g"},
    ]


@pytest.fixture(scope="module", params=["busy_stream", "late_launch"])
def case(request, tmp_path_factory):
    events = _trace(570, 80) if request.param == "busy_stream" else _trace(170, 640)
    folder = tmp_path_factory.mktemp(request.param)
    trace = folder / "rank-0.json"
    trace.write_text(json.dumps({"traceEvents": events}))
    ingest([trace], folder / "run", rank=None)
    return request.param, folder / "run"


def _raw(run):
    """kernel1, kernel2 and kernel2's launch call (by correlation id), from the events."""
    rows = run.sql("SELECT name, lane, ts, dur, args FROM events WHERE kind IN ('compute', 'host') ORDER BY ts")
    by_name = {r["name"]: r for r in rows.to_dict("records") if r["name"] != "cudaLaunchKernel"}
    launch2 = next(
        r
        for r in rows.to_dict("records")
        if r["name"] == "cudaLaunchKernel" and json.loads(r["args"])["args"]["correlation"] == 2
    )
    return by_name["kernel1"], by_name["kernel2"], launch2


def test_path_blames_the_busy_stream_or_the_late_launch(case):
    name, run_dir = case
    with open_run(run_dir) as run:
        k1, k2, launch = _raw(run)
        path = run.sql("SELECT rank, category, name, ts, dur FROM critical_path ORDER BY seq")
    before = path.iloc[path.index[path["name"] == "kernel2"][0] - 1]  # what kernel2 waited for
    stream_free, launched = k1["ts"] + k1["dur"], launch["ts"] + launch["dur"]
    if stream_free > launched:  # busy stream: kernel2 waited for kernel1, launched long before
        assert name == "busy_stream"
        assert before["name"] == "(gap)" and path.iloc[before.name - 1]["name"] == "kernel1"
        assert (path["name"] == "kernel1").any() and not (path["name"] == "aten::add").any()
        assert path.loc[path["name"] == "kernel1", "dur"].sum() == k1["dur"]
    else:  # late launch: the stream was idle; kernel2 waited for aten::add
        assert name == "late_launch"
        assert before["name"] == "(gap)" and path.iloc[before.name - 1]["name"] == "aten::add"
        add = path[path["name"] == "aten::add"].iloc[0]
        assert add["ts"] + add["dur"] == launched  # aten::add up to the launch call's end
        assert not (path["name"] == "kernel1").any()
    assert not path["name"].isin(["pin_memory_loop", "aten::copy_"]).any()  # never the other thread
    assert path["dur"].sum() == 1000 * US


def test_replay_moves_the_kernel_with_what_held_it(case):
    """Halving kernel1 moves kernel2 only when the stream held it; halving aten::add only when
    the launch did. Expected step ends from the raw events: kernel2 starts `lag` after what held
    it; the host's sync returns its measured tail after kernel2 ends (not before the sync was
    called); the step ends its measured gap after the sync, or after the pinning thread."""
    name, run_dir = case
    with open_run(run_dir) as run:
        k1, k2, launch = _raw(run)
        add = run.sql("SELECT ts, dur FROM events WHERE name = 'aten::add'").iloc[0]
        sync = run.sql("SELECT ts, ts + dur AS end_ts FROM events WHERE name = 'cudaDeviceSynchronize'").iloc[0]
        pinning = run.sql("SELECT ts + dur AS end_ts FROM events WHERE name = 'pin_memory_loop'")["end_ts"][0]
        step = run.sql("SELECT ts, end_ts FROM steps").iloc[0]
        lag = k2["ts"] - max(k1["ts"] + k1["dur"], launch["ts"] + launch["dur"])  # 2 us
        sync_tail = sync["end_ts"] - (k2["ts"] + k2["dur"])
        end_gap = step["end_ts"] - max(sync["end_ts"], pinning)

        def step_after(new_stream_free, new_launched, add_scale):
            k2_end = max(new_stream_free, new_launched) + lag + k2["dur"]
            sync_start = add["ts"] + add["dur"] * add_scale + (sync["ts"] - add["ts"] - add["dur"])
            return max(max(sync_start, k2_end) + sync_tail, pinning) + end_gap - step["ts"]

        half_k1 = k1["ts"] + k1["dur"] / 2
        launched = launch["ts"] + launch["dur"]
        half_launch = add["ts"] + (launched - add["ts"]) / 2  # the call sits as far into the op
        for scale, stream_free, launch_end, add_scale in (
            ("name:kernel1=0.5", half_k1, launched, 1),
            ("name:aten::add=0.5", k1["ts"] + k1["dur"], half_launch, 0.5),
        ):
            got = float(analyse(run, [scale]).replayed["dur"].iloc[0])
            assert got == pytest.approx(step_after(stream_free, launch_end, add_scale), abs=1), (name, scale)
