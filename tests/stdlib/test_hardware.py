"""The hardware table and the views that read it: the run's instance type, its link peaks, each
replica group's peak bus bandwidth, and MFU over the steady steps."""

from __future__ import annotations

import pandas as pd
import pytest

from tests.conftest import write_inline_run
from trnprof import hardware
from trnprof.api import open_run
from trnprof.manifest import new_manifest
from trnprof.runstore import write_run

GIB = 1 << 30


def _run(tmp_path, instance_type, events=None, job=None, name="r"):
    events = events or [dict(rank=0, ts=0, dur=1_000_000, kind="step", name="s", lane="host/main", step=0)]
    return write_inline_run(tmp_path / name, events, job={"instance_type": instance_type, **(job or {})})


def test_per_core_figures_are_the_chips_halved():
    row = hardware.lookup("trn1.32xlarge")
    assert row["cores"] == 32 and row["hbm_bytes_per_core"] == 16 * GIB
    assert row["tensor_bf16_flops"] == 95e12 and row["tensor_fp32_flops"] == 23.75e12
    assert row["node_link_bytes_per_s"] == 192 * GIB and row["network_bytes_per_s"] == 100e9
    assert hardware.lookup("trn1.2xlarge")["node_link_bytes_per_s"] is None
    assert hardware.lookup("p4d.24xlarge") is None and hardware.lookup(None) is None


def test_hardware_table_in_every_session(sample_run):
    with open_run(sample_run) as run:
        frame = run.sql("SELECT * FROM hardware ORDER BY instance_type")
    assert list(frame["instance_type"]) == sorted(hardware.INSTANCE_TYPES)
    assert list(frame.columns) == [name for name, _, _ in hardware.COLUMNS]


def test_link_peaks_follow_the_instance_type(tmp_path):
    with open_run(_run(tmp_path, "trn1n.32xlarge")) as run:
        peaks = dict(run.sql("SELECT link_class, bytes_per_s FROM link_peaks").itertuples(index=False))
    assert peaks == {"chip": 500e9, "node": 384 * GIB, "network": 200e9}  # 768 GiB/s per chip, 1,600 Gbps
    with open_run(_run(tmp_path, "trn1.2xlarge", name="small")) as run:  # one chip: no NeuronLink
        assert sorted(run.sql("SELECT link_class FROM link_peaks")["link_class"]) == ["chip", "network"]
    with open_run(_run(tmp_path, "p4d.24xlarge", name="gpu")) as run:
        assert run.sql("SELECT * FROM link_peaks").empty
        assert run.sql("SELECT instance_type FROM run_hardware").iloc[0, 0] == "p4d.24xlarge"


def _typed_run(path, events, ranks):
    """A run whose ranks table places each rank: {rank: (node, instance_type)}."""
    with write_run(path, new_manifest("tests.inline")) as out:
        out.write_events(pd.DataFrame(events))
        out.write_ranks(
            pd.DataFrame(
                {
                    "rank": list(ranks),
                    "node": [n for n, _ in ranks.values()],
                    "instance_type": [t for _, t in ranks.values()],
                }
            )
        )
    return path


def _all_reduce(ranks, group="dp"):
    return [
        dict(
            rank=r,
            ts=0,
            dur=1_000_000,
            kind="collective",
            name="ar",
            lane="nc/cc",
            coll_op="all_reduce",
            coll_group=group,
            coll_seq=0,
            bytes=1 << 26,
            coll_ranks=len(ranks),
            step=0,
        )
        for r in ranks
    ]


def test_collective_peaks_by_the_links_a_group_crosses(tmp_path):
    # no nodes in the ranks table, the job names the type: one node, NeuronLink per core
    with open_run(_run(tmp_path, "trn1.32xlarge", events=_all_reduce(range(4)))) as run:
        row = run.sql("SELECT nodes, peak_busbw FROM collective_peaks").iloc[0]
    assert row["nodes"] == 1 and row["peak_busbw"] == 192 * GIB
    # 4 ranks on each of 2 trn1.32xlarge nodes: 4/32 of a node's 100 GB/s EFA each
    ranks = {r: (r // 4, "trn1.32xlarge") for r in range(8)}
    with open_run(_typed_run(tmp_path / "two", _all_reduce(range(8)), ranks)) as run:
        row = run.sql("SELECT nodes, peak_busbw FROM collective_peaks").iloc[0]
    assert row["nodes"] == 2 and row["peak_busbw"] == pytest.approx(100e9 * 4 / 32)


def test_mfu_over_steady_steps_from_the_job(tmp_path):
    # step 0 compiles (warm-up) and takes 10x longer; steps 1-3 reach 10 % of the stated peak
    events = [
        dict(rank=0, ts=0, dur=10_000_000, kind="step", name="s", lane="host/main", step=0),
        dict(rank=0, ts=0, dur=9_000_000, kind="compile", name="c", lane="host/compiler", step=0),
    ]
    events += [
        dict(rank=0, ts=10_000_000 + i * 1_000_000, dur=1_000_000, kind="step", name="s", lane="host/main", step=i)
        for i in range(1, 4)
    ]
    run_dir = _run(
        tmp_path, "trn1.32xlarge", events=events, job={"model_flops_per_step": 1e10, "peak_flops_per_s": 1e14}
    )
    with open_run(run_dir) as run:
        steps = run.sql("SELECT step, mfu, flops_source FROM step_mfu ORDER BY step")
        whole = run.sql("SELECT * FROM mfu").iloc[0]
        info = run.info()
    assert list(steps["step"]) == [1, 2, 3] and set(steps["flops_source"]) == {"job"}
    assert whole["mfu"] == pytest.approx(0.1) and whole["steps"] == 3
    assert info["mfu"] == pytest.approx(0.1)


def test_mfu_from_event_flops_and_the_hardware_peak(tmp_path):
    # one trn1.32xlarge rank: 95 TFLOP/s BF16 peak; 47.5 GFLOP in 1 ms is half of it
    events = [
        dict(rank=0, ts=0, dur=1_000_000, kind="step", name="s", lane="host/main", step=0),
        dict(rank=0, ts=0, dur=1_000_000, kind="compute", name="mm", lane="nc/tensor", step=0, flops=47_500_000_000),
    ]
    with open_run(_typed_run(tmp_path / "trn", events, {0: (0, "trn1.32xlarge")})) as run:
        assert run.sql("SELECT mfu FROM mfu").iloc[0, 0] == pytest.approx(0.5)
    with open_run(_typed_run(tmp_path / "gpu", events, {0: (0, "p4d.24xlarge")})) as run:
        assert run.info()["mfu"] is None  # no peak known for the instance type
