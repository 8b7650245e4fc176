"""Collective message sizes from a collective's own args on CPU (gloo) traces: `record_param_comms`
records (`In msg nelems` x `dtype`, `Seq`, `Process Group Name`, `Group size`) and `Input Dims` x
`Input type`; impossible sizes are refused and counted, never a crash or a wrong byte count.
(Real gloo traces with `Input Dims`: tests/rules/test_rules_real_traces.py.)"""

from __future__ import annotations

import json

import pytest

from trnprof.api import open_run
from trnprof.collectors.ingest import ingest

MIB = 1 << 20


def X(name, cat, ts, dur, tid=100, **args):
    return {"ph": "X", "cat": cat, "name": name, "pid": 100, "tid": tid, "ts": ts, "dur": dur, "args": args}


def comms(seq, **size):
    return {"Collective name": "allreduce", "Group size": 2, "Process Group Name": "0", "Seq": seq, **size}


def rank_trace(rank, late_us, sizes):
    """Two steps on a CPU-only rank: compute, then one record_param_comms all-reduce per size."""
    events = []
    for step, start in ((1, 0), (2, 10_000)):
        events += [
            X(f"ProfilerStep#{step}", "user_annotation", start, 9_000),
            X("aten::mm", "cpu_op", start + 10, 3_000 + late_us),
        ]
        for i, size in enumerate(sizes):
            ts = start + 4_000 + late_us + i * 1_000
            events.append(X("record_param_comms", "cpu_op", ts, 900 - late_us, **comms(step * 10 + i, **size)))
    return {"distributedInfo": {"backend": "gloo", "rank": rank, "world_size": 2}, "traceEvents": events}


def ingested(tmp_path, sizes):
    paths = []
    for rank, late in ((0, 0), (1, 200)):
        path = tmp_path / f"rank{rank}.json"
        path.write_text(json.dumps(rank_trace(rank, late, sizes)))
        paths.append(path)
    ingest(paths, tmp_path / "run")
    return open_run(tmp_path / "run")


def test_record_param_comms_gives_size_group_and_sequence(tmp_path):
    with ingested(tmp_path, [{"In msg nelems": MIB, "Out msg nelems": MIB, "dtype": "Float"}]) as run:
        rows = run.sql("SELECT * FROM collectives ORDER BY coll_seq")
        kinds = run.sql("SELECT DISTINCT kind FROM events WHERE name = 'record_param_comms'")["kind"].tolist()
    assert kinds == ["collective"]  # not compute on a CPU-only trace
    assert rows["coll_seq"].tolist() == [10, 20] and set(rows["ranks_seen"]) == {2}
    assert set(rows["bytes"]) == {4 * MIB} and set(rows["group_size"]) == {2}
    assert rows["busbw"].notna().all()  # 2(n-1)/n x bytes / the shortest rank's time
    assert rows["arrival_skew"].tolist() == [200_000, 200_000]  # rank 1 arrives 200 us late


def test_input_dims_give_the_size_without_nelems(tmp_path):
    with ingested(tmp_path, [{"Input Dims": [[512, 1024]], "Input type": ["c10::BFloat16"]}]) as run:
        assert set(run.sql("SELECT bytes FROM collectives")["bytes"]) == {512 * 1024 * 2}


HOSTILE = [
    {"In msg nelems": -5, "dtype": "Float"},  # negative count
    {"In msg nelems": 1 << 62, "dtype": "Double"},  # 32 EiB: no such message
    {"Input Dims": [[-1, 4]], "Input type": ["float"]},  # negative dimension
    {"Input Dims": [[1 << 40, 1 << 40]], "Input type": ["float"]},  # overflows int64 as a product
    {"Input Dims": [[2.5, 4]], "Input type": ["float"]},  # fractional dimension
    {"Input Dims": [[True, 4]], "Input type": ["float"]},  # not a number
]


def test_impossible_sizes_are_refused_and_counted(tmp_path):
    good = {"In msg nelems": 256, "Out msg nelems": 256, "dtype": "Float"}
    with ingested(tmp_path, [good] + HOSTILE) as run:
        sizes = run.sql("SELECT coll_seq, bytes FROM collectives ORDER BY coll_seq")
        files = run.manifest["ingest"]["files"]
    assert len(sizes) == 2 * (1 + len(HOSTILE))  # every collective kept, matched across ranks
    assert sizes.set_index("coll_seq")["bytes"].dropna().to_dict() == {10: 1024, 20: 1024}
    assert [f["ignored_args"] for f in files] == [{"collective_payload": 2 * len(HOSTILE)}] * 2


@pytest.mark.parametrize(
    "size",
    [
        {"In msg nelems": "many", "dtype": "Float"},
        {"Input Dims": "[[4, 4]", "Input type": ["float"]},
        {"Input Dims": [[4, 4]], "Input type": [7]},
    ],
)
def test_wrongly_typed_size_args_leave_the_size_unknown(tmp_path, size):
    with ingested(tmp_path, [size]) as run:
        assert run.sql("SELECT bytes FROM events WHERE kind = 'collective'")["bytes"].isna().all()
        assert run.sql("SELECT COUNT(*) AS n FROM events WHERE kind = 'collective'")["n"][0] == 4
