"""The Kineto mapping table (docs/ingest.md), one small hand-built trace per behaviour."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from tests.conftest import assert_accounted
from trnprof.api import open_run
from trnprof.collectors.ingest import ingest
from trnprof.errors import TrnprofError


def write_trace(path, events, **top):
    path.write_text(json.dumps({**top, "traceEvents": events}))
    return path


def run_of(tmp_path, events, name="rank-0.json", rank=None, **top):
    trace = write_trace(tmp_path / name, events, **top)
    ingest([trace], tmp_path / "run", rank=rank)
    return open_run(tmp_path / "run")


def X(name, cat, ts, dur, pid=100, tid=100, **args):
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": args}


NCCL_ARGS = {
    "Collective name": "allreduce",
    "In msg nelems": 100,
    "Out msg nelems": 100,
    "dtype": "Float",
    "Group size": 4,
    "Process Group Name": "pg1",
    "Seq": 12,
    "correlation": 9,
}


def gpu_trace():
    return [
        X("ProfilerStep#7", "user_annotation", 1000, 1000),
        X("aten::mm", "cpu_op", 1010, 50),
        X("cudaLaunchKernel", "cuda_runtime", 1020, 5, correlation=1),
        X("enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__", "user_annotation", 1001, 8),
        X("train.py(12): step", "python_function", 1002, 2),
        X("sgemm_kernel", "kernel", 1100, 200, pid=0, tid=7, correlation=1),
        X("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*)", "kernel", 1300, 300, pid=0, tid=20, **NCCL_ARGS),
        X("Memcpy HtoD (Pageable -> Device)", "gpu_memcpy", 1050, 40, pid=0, tid=7, bytes=4096),
        X("Memset (Device)", "gpu_memset", 1090, 5, pid=0, tid=7, bytes=64),
        X("nccl:all_reduce", "gpu_user_annotation", 1300, 300, pid=0, tid=20),
        X("PyTorch Profiler (0)", "Trace", 900, 3000, pid="Spans", tid="PyTorch Profiler"),
        {"ph": "i", "s": "g", "name": "Iteration Start: PyTorch Profiler", "pid": "Traces", "tid": "x", "ts": 900},
        X("late_kernel", "kernel", 2100, 10, pid=0, tid=7),
    ]


def rows(run, sql="SELECT * FROM events ORDER BY ts, name"):
    """Result rows with SQL NULL as None."""
    return [
        {k: None if pd.isna(v) else v for k, v in r.items()} for r in run.sql(sql).astype(object).to_dict("records")
    ]


def test_kinds_lanes_steps_and_collectives(tmp_path):
    run = run_of(tmp_path, gpu_trace(), distributedInfo={"rank": 3, "world_size": 8})
    got = {r["name"][:20]: r for r in rows(run)}
    expect = {  # name -> (kind, lane, step)
        "ProfilerStep#7": ("step", "host/tid-100", 7),
        "aten::mm": ("host", "host/tid-100", 7),
        "cudaLaunchKernel": ("host", "host/tid-100", 7),
        "enumerate(DataLoader": ("input", "host/tid-100", 7),
        "train.py(12): step": ("host", "host/tid-100", 7),
        "sgemm_kernel": ("compute", "gpu/stream-7", 7),
        "ncclDevKernel_AllRed": ("collective", "gpu/stream-20", 7),
        "Memcpy HtoD (Pageabl": ("transfer", "gpu/stream-7", 7),
        "Memset (Device)": ("memory", "gpu/stream-7", 7),
        "nccl:all_reduce": ("annotation", "gpu/stream-20", 7),
        "PyTorch Profiler (0)": ("annotation", "trace/Spans", None),
        "Iteration Start: PyT": ("annotation", "trace/Traces", None),
        "late_kernel": ("compute", "gpu/stream-7", None),
    }
    assert {k: (r["kind"], r["lane"], r["step"]) for k, r in got.items()} == expect
    assert all(r["rank"] == 3 for r in got.values())
    nccl = got["ncclDevKernel_AllRed"]
    assert (nccl["coll_op"], nccl["coll_group"], nccl["coll_seq"], nccl["coll_ranks"], nccl["bytes"]) == (
        "all_reduce",
        "pg1",
        12,
        4,
        400,
    )
    assert got["Memcpy HtoD (Pageabl"]["bytes"] == 4096 and got["Memset (Device)"]["bytes"] == 64
    assert json.loads(got["sgemm_kernel"]["args"]) == {"cat": "kernel", "pid": 0, "tid": 7, "args": {"correlation": 1}}
    assert json.loads(got["Iteration Start: PyT"]["args"])["extra"] == {"s": "g"}
    breakdown = run.view("step_breakdown").iloc[0]
    assert (breakdown["compute"], breakdown["collective"], breakdown["input_wait"]) == (200_000, 300_000, 8_000)
    assert run.manifest["job"]["world_size_declared"] == 8


def test_bytes_follow_nccl_tests_size(tmp_path):
    gather = dict(
        NCCL_ARGS,
        **{"Collective name": "_allgather_base", "In msg nelems": 25, "Out msg nelems": 100, "dtype": "BFloat16"},
    )
    run = run_of(tmp_path, [X("ncclKernel_AllGather_RING_LL_Sum_bf16", "kernel", 10, 5, pid=0, tid=1, **gather)])
    (row,) = rows(run)
    assert (row["coll_op"], row["bytes"]) == ("all_gather", 200)  # gathered output: 100 x 2 bytes


def test_send_recv_kernels_are_p2p(tmp_path):
    send = dict(NCCL_ARGS, **{"Collective name": "send"})
    run = run_of(
        tmp_path,
        [
            X("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t", "kernel", 10, 5, pid=0, tid=1, **send),
            X("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t", "kernel", 20, 5, pid=0, tid=1),
        ],
    )
    assert [(r["kind"], r["coll_op"]) for r in rows(run)] == [("p2p", "send"), ("p2p", "send_recv")]


def test_cpu_only_trace_makes_the_cpu_the_device(tmp_path):
    events = [
        X("ProfilerStep#1", "user_annotation", 0, 1000, tid=1),
        X("aten::addmm", "cpu_op", 10, 300, tid=1),
        X("c10d::allreduce_", "cpu_op", 400, 20, tid=1),
        X("gloo:all_reduce", "user_annotation", 410, 500, tid=2, **{"Input Dims": [[1000]], "Input type": ["float"]}),
    ]
    run = run_of(tmp_path, events)
    got = {r["name"]: r for r in rows(run)}
    assert [got[n]["kind"] for n in ("aten::addmm", "c10d::allreduce_", "gloo:all_reduce")] == [
        "compute",
        "collective",
        "collective",
    ]
    assert (got["gloo:all_reduce"]["coll_op"], got["gloo:all_reduce"]["bytes"]) == ("all_reduce", 4000)
    assert got["c10d::allreduce_"]["coll_op"] == "all_reduce"


def test_a_listed_gpu_without_traced_device_work_keeps_its_kind(tmp_path):
    """Kineto lists the GPUs torch sees; a trace of such a job that recorded host activities only
    is still a GPU job (its host ops launch kernels), not a job that computed on the CPU."""
    steps = [X("ProfilerStep#1", "user_annotation", 0, 1000, tid=1), X("aten::add_", "cpu_op", 10, 3, tid=1)]
    for folder in ("gpu", "cpu"):
        (tmp_path / folder).mkdir()
    gpu = run_of(tmp_path / "gpu", steps, deviceProperties=[{"id": 0, "name": "NVIDIA A100-SXM4-80GB"}])
    cpu = run_of(tmp_path / "cpu", steps)
    assert gpu.sql("SELECT device_kind, device_model FROM run_platform").values.tolist() == [
        ["cuda", "NVIDIA A100-SXM4-80GB"]
    ]
    assert cpu.sql("SELECT device_kind FROM run_platform").iloc[0, 0] == "cpu"


def test_c10d_ops_in_gpu_traces_stay_host_work(tmp_path):
    run = run_of(tmp_path, [X("c10d::allreduce_", "cpu_op", 0, 10), X("k", "kernel", 5, 5, pid=0, tid=1)])
    assert {r["name"]: r["kind"] for r in rows(run)}["c10d::allreduce_"] == "host"


def test_kernels_without_args_find_the_record_that_launched_them(tmp_path):
    events = [
        X("nccl:all_to_all", "user_annotation", 100, 50, tid=5, **{"Input Dims": [[384]], "Input type": ["long"]}),
        X("cudaLaunchKernel", "cuda_runtime", 120, 5, tid=5, correlation=77),
        X("cudaLaunchKernel", "cuda_runtime", 300, 5, tid=5, correlation=78),
        X("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t", "kernel", 200, 40, pid=0, tid=3, correlation=77),
        X("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t", "kernel", 400, 40, pid=0, tid=3, correlation=78),
    ]
    run = run_of(tmp_path, events)
    kernels = rows(run, "SELECT kind, coll_op, bytes FROM events WHERE name LIKE 'nccl%Kernel%' ORDER BY ts")
    assert kernels == [
        {"kind": "collective", "coll_op": "all_to_all", "bytes": 3072},
        {"kind": "p2p", "coll_op": "send_recv", "bytes": None},
    ]


def test_several_devices_keep_device_lanes(tmp_path):
    run = run_of(tmp_path, [X("a", "kernel", 0, 1, pid=0, tid=7), X("b", "kernel", 0, 1, pid=1, tid=7)])
    assert sorted(r["lane"] for r in rows(run)) == ["gpu0/stream-7", "gpu1/stream-7"]


def test_no_profiler_step_means_no_steps(tmp_path):
    run = run_of(tmp_path, [X("k", "kernel", 0, 10, pid=0, tid=1), X("op", "cpu_op", 0, 10)])
    assert run.view("steps").empty and all(r["step"] is None for r in rows(run))


def test_memory_instants_and_counter_events_become_counters(tmp_path):
    def memory(ts, allocated, reserved, delta, device=1):
        return {
            "ph": "i",
            "s": "t",
            "cat": "cpu_instant_event",
            "name": "[memory]",
            "pid": 100,
            "tid": 100,
            "ts": ts,
            "args": {
                "Total Reserved": reserved,
                "Total Allocated": allocated,
                "Bytes": delta,
                "Addr": 1,
                "Device Type": device,
                "Device Id": 0,
            },
        }

    events = [
        memory(10, 1000, 4096, 1000),
        memory(20, 500, 4096, -500),
        memory(30, 64, 128, 64, device=0),
        {"ph": "i", "name": "[memory]", "pid": 100, "tid": 100, "ts": 40, "args": {"Bytes": 5}},
        {"ph": "C", "name": "queue", "pid": 100, "tid": 100, "ts": 50, "args": {"value": 3}},
        {"ph": "C", "name": "mem", "pid": 100, "tid": 100, "ts": 60, "args": {"a": 1, "b": 2.5}},
        {"ph": "C", "name": "bad", "pid": 100, "tid": 100, "ts": 70, "args": {"x": "high"}},
        {"ph": "C", "name": "big", "pid": 100, "tid": 100, "ts": 80, "args": {"x": 2**64}},  # past int64: a float
        {"ph": "C", "name": "huge", "pid": 100, "tid": 100, "ts": 90, "args": {"x": 10**400}},  # past float64
        X("op", "cpu_op", 0, 100),
    ]
    run = run_of(tmp_path, events)
    got = [(r["ts"], r["name"], r["value"], r["unit"]) for r in rows(run, "SELECT * FROM counters ORDER BY ts, name")]
    assert got == [
        (10_000, "alloc.device_delta", 1000.0, "bytes"),
        (10_000, "hbm.allocated", 1000.0, "bytes"),
        (10_000, "hbm.allocator_cache", 3096.0, "bytes"),
        (20_000, "alloc.device_delta", -500.0, "bytes"),
        (20_000, "hbm.allocated", 500.0, "bytes"),
        (20_000, "hbm.allocator_cache", 3596.0, "bytes"),
        (30_000, "alloc.host_delta", 64.0, "bytes"),
        (30_000, "host.allocated", 64.0, "bytes"),
        (30_000, "host.allocator_cache", 64.0, "bytes"),
        (50_000, "queue", 3.0, None),
        (60_000, "mem.a", 1.0, None),
        (60_000, "mem.b", 2.5, None),
        (80_000, "big.x", float(2**64), None),
    ]
    assert run.view("memory_peak")["peak_bytes"].tolist() == [4096.0]
    record = run.manifest["ingest"]["files"][0]
    assert record["quarantine_reasons"] == {"bad_counter_value": 2, "bad_memory_event": 1}
    assert record["to"] == {"events": 1, "counters": 6, "flows": 0, "meta": 0, "quarantine": 3}
    assert record["counter_rows"] == len(got) == 13


def test_counters_keep_every_unmapped_source_field_in_args(tmp_path):
    memory = {
        "ph": "i",
        "s": "t",
        "cat": "cpu_instant_event",
        "name": "[memory]",
        "pid": 100,
        "tid": 7,
        "ts": 10,
        "args": {
            "Total Reserved": 4096,
            "Total Allocated": 1000,
            "Bytes": 1000,
            "Addr": 94711290540032,
            "Device Type": 1,
            "Device Id": 3,
            "Stream": [0, {"x": None}],
        },
    }
    events = [
        memory,
        {"ph": "C", "name": "mem", "pid": 100, "tid": 7, "ts": 20, "id": 5, "args": {"a": 1, "b": 2}},
        X("op", "cpu_op", 0, 100),
    ]
    run = run_of(tmp_path, events)
    got = {r["name"]: r["args"] for r in rows(run, "SELECT * FROM counters")}
    allocated = json.loads(got.pop("hbm.allocated"))
    assert allocated == {"cat": "cpu_instant_event", "pid": 100, "tid": 7, "args": memory["args"], "extra": {"s": "t"}}
    assert json.loads(got.pop("mem.a")) == {
        "cat": None,
        "pid": 100,
        "tid": 7,
        "args": {"a": 1, "b": 2},
        "extra": {"id": 5},
    }
    assert got == {"hbm.allocator_cache": None, "alloc.device_delta": None, "mem.b": None}  # one copy per entry
    found = run.sql("SELECT name FROM counters WHERE json_extract(args, '$.args.Addr') = 94711290540032")
    assert found["name"].tolist() == ["hbm.allocated"]


def test_flows_metadata_and_unknown_fields_are_kept(tmp_path):
    events = [
        {"ph": "M", "name": "thread_name", "pid": 100, "tid": 100, "args": {"name": "main"}},
        {"ph": "s", "id": 4, "pid": 100, "tid": 100, "ts": 10, "cat": "ac2g", "name": "ac2g"},
        {"ph": "f", "id": 4, "pid": 0, "tid": 7, "ts": 20, "cat": "ac2g", "name": "ac2g", "bp": "e"},
        dict(X("op", "cpu_op", 5, 10), tts=3, cname="good"),
    ]
    run = run_of(tmp_path, events, deviceProperties=[{"id": 0}], traceName="t")
    flows = rows(run, f"SELECT ph, id, bp, ts FROM read_parquet('{tmp_path}/run/ingest/flows.parquet') ORDER BY ts")
    assert flows == [{"ph": "s", "id": "4", "bp": None, "ts": 10_000}, {"ph": "f", "id": "4", "bp": "e", "ts": 20_000}]
    meta = run.sql(
        f"SELECT kind, name, value FROM read_parquet('{tmp_path}/run/ingest/meta.parquet') ORDER BY kind, name"
    )
    assert meta["name"].tolist() == ["thread_name", "deviceProperties", "traceName"]  # "M" sorts first
    assert json.loads(meta["value"][0])["args"] == {"name": "main"} and meta["value"][2] == '"t"'
    assert json.loads(rows(run)[0]["args"])["extra"] == {"tts": 3, "cname": "good"}


def test_unusable_entries_go_to_quarantine_with_their_reason(tmp_path):
    events = [
        X("ok", "cpu_op", 10, 5),
        X("neg", "cpu_op", 10, -5),
        {"ph": "X", "name": "nodur", "ts": 10},
        {"ph": "X", "name": "strts", "ts": "10", "dur": 1},
        {"ph": "B", "name": "begin", "ts": 10, "pid": 1, "tid": 1},
        X("n" * 70_000, "cpu_op", 10, 5),
        X("early", "cpu_op", -2_000_000, 5),
        "not an event",
    ]
    run = run_of(tmp_path, events, baseTimeNanoseconds=1_000_000_000)
    quarantine = run.sql(
        f"SELECT index, reason, event FROM read_parquet('{tmp_path}/run/ingest/quarantine.parquet') ORDER BY index"
    ).astype(object)
    assert dict(zip(quarantine["index"], quarantine["reason"])) == {
        1: "negative_duration",
        2: "missing_duration",
        3: "malformed_event",
        4: "unsupported_phase",
        5: "name_too_long",
        6: "negative_time",
        7: "malformed_event",
    }
    assert json.loads(quarantine["event"][3]) == {"ph": "B", "name": "begin", "ts": 10, "pid": 1, "tid": 1}
    assert json.loads(quarantine["event"][0])["dur"] == -5
    assert assert_accounted(run)["source_entries"] == 8
    assert rows(run, "SELECT name FROM events") == [{"name": "ok"}]


def test_rank_from_file_name_and_option(tmp_path):
    for sub, name, option, rank in (
        ("a", "worker_rank_5.json", None, 5),
        ("b", "trace.json", 9, 9),
        ("c", "trace.json", None, 0),
    ):
        (tmp_path / sub).mkdir()
        run = run_of(tmp_path / sub, [X("op", "cpu_op", 0, 1)], name=name, rank=option)
        assert run.sql("SELECT rank FROM ranks")["rank"].tolist() == [rank]
        origin = run.manifest["ingest"]["files"][0]["rank_from"]
        assert origin == {"a": "file name", "b": "--rank", "c": "default (a single input without rank)"}[sub]


def test_folder_of_ranks_and_its_errors(tmp_path):
    folder = tmp_path / "job"
    folder.mkdir()
    for rank in (0, 1):
        write_trace(
            folder / f"t{rank}.json", [X("op", "cpu_op", rank, 1)], distributedInfo={"rank": rank, "world_size": 2}
        )
    ingest([folder], tmp_path / "run")
    assert open_run(tmp_path / "run").sql("SELECT rank FROM ranks")["rank"].tolist() == [0, 1]
    write_trace(folder / "t2.json", [X("op", "cpu_op", 0, 1)], distributedInfo={"rank": 1, "world_size": 2})
    spill = tmp_path / "spill"
    spill.mkdir()
    with pytest.raises(TrnprofError, match="two traces for rank 1"):
        ingest([folder], tmp_path / "run2", spill_dir=spill)
    assert list(spill.iterdir()) == []  # temporary files are gone too
    write_trace(folder / "t2.json", [X("op", "cpu_op", 0, 1)], distributedInfo={"rank": 2, "world_size": 16})
    with pytest.raises(TrnprofError, match="mismatched world sizes"):
        ingest([folder], tmp_path / "run3")
    write_trace(folder / "t2.json", [X("op", "cpu_op", 0, 1)])
    with pytest.raises(TrnprofError, match="cannot tell its rank"):
        ingest([folder], tmp_path / "run4")
    assert not any(p.name.startswith(("run2", "run3", "run4", ".run")) for p in tmp_path.iterdir())


def test_empty_or_fully_unusable_traces_are_errors(tmp_path):
    with pytest.raises(TrnprofError, match="no events"):
        run_of(tmp_path, [])
    with pytest.raises(TrnprofError, match="nothing to ingest.*1 negative_duration"):
        run_of(tmp_path, [X("neg", "cpu_op", 10, -5)])
    assert not (tmp_path / "run").exists()
