"""diff on real PyTorch-profiler traces: a 2-process gloo DDP job, once clean and once with rank 1
slowed down (tests/data/kineto_ddp/README.md says how they were recorded)."""

from __future__ import annotations

import pytest

import trnprof
from tests.conftest import DATA
from trnprof.collectors.ingest import ingest

TRACES = DATA / "kineto_ddp"


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("ddp")
    for name in ("base", "slow"):
        ingest(sorted((TRACES / name).glob("rank*.json.gz")), folder / name)
    return {name: folder / name for name in ("base", "slow")}


@pytest.fixture(scope="module")
def slower(runs):
    return trnprof.api.diff(runs["base"], runs["slow"])


def test_the_slow_rank_run_is_told_apart_with_the_right_sign(runs, slower):
    assert slower["comparable"] and slower["world_size"] == {"base": 2, "new": 2}
    assert slower["step_time"]["significant"] and slower["step_time"]["change"] > 1.0  # several times slower
    assert slower["step_time"]["base_steps"] == slower["step_time"]["new_steps"] == 8
    faster = trnprof.api.diff(runs["slow"], runs["base"])
    assert faster["step_time"]["significant"] and faster["step_time"]["change"] < -0.5


def test_the_slow_ranks_extra_work_and_the_wait_for_it_lead_the_regressions(slower):
    top = {row["name"]: row for row in slower["top_regressions"][:3]}
    assert set(top) == {"slow_rank.extra_matmul", "aten::mm", "gloo:all_reduce"}
    assert top["slow_rank.extra_matmul"]["change"] is None  # an op the base run never ran
    assert all(row["lane"] == "host/tid-*" for row in top.values())  # thread ids differ between runs
    assert top["gloo:all_reduce"]["significant"]
    assert "scale.straggler" in slower["findings"]["new"]


def test_an_ingested_run_without_a_model_is_not_comparable_with_a_simulated_one(runs, sample_run):
    document = trnprof.api.diff(sample_run, runs["base"])
    assert not document["comparable"]  # nothing shows the traced job trains the synthetic model
    assert document["reasons"] == [
        "the new run (trnprof.ingest) records no model, the base run is synthetic: nothing shows they are the same job"
    ]
    assert "different sources: trnprof.synthetic vs trnprof.ingest" in document["notes"]
    assert any("world size differs (8 vs 2 ranks)" in note for note in document["notes"])
    assert document["throughput"] is None  # the traces do not say how many samples a step holds
