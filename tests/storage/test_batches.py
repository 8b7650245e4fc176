"""Rank-batched computation of the stdlib views: same rows as one sweep, bounded batches."""

import json

import pandas as pd
import pytest

from tests.conftest import write_inline_run
from trnprof import batches, open_run
from trnprof.collectors.ingest import ingest
from trnprof.collectors.trn1 import load_config, simulate
from trnprof.session import is_stored
from trnprof.stdlib import dependencies

SMALL = ["cluster.instance=trn1.32xlarge", "parallel.tp=2", "batch.global=64", "batch.micro=2", "run.steps=3"]


# an SBUF spill and a throttle, so that the device profile's spill and throttling views have rows
DEVICE_FAULTS = [{"kind": "sbuf_spill", "fraction": 0.5}, {"kind": "throttle", "utilization": 0.6}]


@pytest.fixture(scope="module")
def trn1_run(tmp_path_factory):
    """A small execution-model run: compute, collectives, compiles, memory counters, 32 ranks, and
    the Neuron Explorer device profile of two of them."""
    return simulate(
        load_config(preset="tiny", overrides=SMALL, faults=DEVICE_FAULTS),
        tmp_path_factory.mktemp("runs") / "trn1",
        device_profile=True,
    )


def _kineto_event(name, cat, ts, dur, pid=100, tid=100, **args):
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": args}


@pytest.fixture(scope="module")
def kineto_run(tmp_path_factory):
    """Three ranks of hand-built Kineto traces (4 steps each): a CUDA graph launch whose kernels
    the trace does not record, a recorded kernel starting later on each rank, a sync."""
    folder = tmp_path_factory.mktemp("kineto")
    for rank in range(3):
        events = []
        for k in range(4):
            t = 10_000 * k
            events += [
                _kineto_event(f"ProfilerStep#{k + 1}", "user_annotation", t, 10_000),
                _kineto_event("cudaGraphLaunch", "cuda_runtime", t, 100, correlation=10 * k + 1),
                _kineto_event("cudaLaunchKernel", "cuda_runtime", t + 200, 50, correlation=10 * k + 3),
                _kineto_event("fill_kernel", "kernel", t + 300 + 100 * rank, 200, pid=0, tid=7, correlation=10 * k + 3),
                _kineto_event("cudaStreamSynchronize", "cuda_runtime", t + 9_000, 900, correlation=10 * k + 2),
            ]
        trace = {"traceEvents": events, "distributedInfo": {"rank": rank, "world_size": 3}}
        (folder / f"rank-{rank}.json").write_text(json.dumps(trace))
    ingest([folder], folder / "run")
    return folder / "run"


VIEWS = sorted(set(dependencies()) - batches.ROW_LEVEL)
# views the simulated Trainium run cannot fill (CUDA launch calls and their kernels' correlation
# ids): compared on the Kineto run
ON_KINETO = ("launch_pending", "host_pending")


def _rows(run_path, names, share) -> dict[str, pd.DataFrame]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TRNPROF_CACHE", "off")
        patch.setattr(batches, "BATCH_SHARE", share)
        with open_run(run_path) as run:
            frames = {name: run.view(name) for name in names}
    return {name: f.sort_values(list(f.columns)).reset_index(drop=True) for name, f in frames.items()}


@pytest.fixture(scope="module")
def both_ways(trn1_run, kineto_run):
    # a huge share puts the whole run in one batch; a tiny one makes every rank its own batch
    on_trn1 = [name for name in VIEWS if name not in ON_KINETO]
    one_sweep, per_rank = _rows(trn1_run, on_trn1, 1e6), _rows(trn1_run, on_trn1, 1e-12)
    one_sweep.update(_rows(kineto_run, ON_KINETO, 1e6))
    per_rank.update(_rows(kineto_run, ON_KINETO, 1e-12))
    return one_sweep, per_rank


# views this clean simulated run leaves empty: no pipeline, no long step, no blocking host call
EMPTY_HERE = ("p2p_waits", "outlier_steps", "host_sync_calls")


@pytest.mark.parametrize("name", VIEWS)
def test_every_view_has_the_same_rows_with_one_rank_per_batch(both_ways, name):
    one_sweep, per_rank = both_ways
    assert len(one_sweep[name]) > 0 or name in EMPTY_HERE, f"{name} is empty: the comparison proves nothing"
    pd.testing.assert_frame_equal(one_sweep[name], per_rank[name], check_dtype=False)


def test_a_rank_without_events_is_still_summarised(tmp_path):
    events = [
        {"rank": r, "ts": 0, "dur": 100, "kind": "step", "name": "s", "lane": "host/main", "step": 0} for r in (0, 2)
    ]
    path = write_inline_run(tmp_path / "r", events, ranks=4)  # ranks 1 and 3 recorded nothing
    frame = _rows(path, ["rank_summary"], 1e-12)["rank_summary"]
    assert list(frame["rank"]) == [0, 1, 2, 3]
    assert list(frame["steps"]) == [1, 0, 1, 0]


def test_batches_are_contiguous_cover_every_rank_and_respect_the_budget():
    sizes = {0: 40, 1: 40, 2: 40, 5: 100, 9: 10, 10: 10}
    got = batches.rank_batches(sizes, budget=90)
    assert [sorted(r) for _, _, r in got] == [[0, 1], [2], [5], [9, 10]]
    assert got[0][0] == -(1 << 31) and got[-1][1] == (1 << 31) - 1
    assert all(got[i][1] + 1 == got[i + 1][0] for i in range(len(got) - 1))  # no rank number falls between
    assert all(low <= min(r) and max(r) <= high for low, high, r in got)
    assert batches.rank_batches({}, budget=90) == [(-(1 << 31), (1 << 31) - 1, set())]


def test_rank_local_views_read_only_rank_local_inputs():
    deps = dependencies()
    local = batches.local_views()
    assert {"steps", "step_breakdown", "_op_stats", "rank_summary"} <= local
    assert "collectives" not in local and "step_times" not in local
    for name in local:
        assert deps[name] <= local | {"events", "counters", "ranks"}, name


@pytest.mark.parametrize(
    "text, expected", [("1536MB", 1536 << 20), ("1.5 GiB", 3 << 29), ("4GB", 4 << 30), ("512 KiB", 512 << 10)]
)
def test_memory_limits_in_duckdb_spellings(text, expected):
    assert batches.parse_bytes(text) == expected


def test_the_sweep_is_kept_once_per_batch_for_both_of_its_readers(trn1_run, monkeypatch):
    """step_breakdown and host_self_time read `_swept` through device_segments (a view, never
    stored): the batch pass keeps `_swept` as a table once, before the first of them."""
    kept = []
    original = batches._keep_as_table
    monkeypatch.setattr(batches, "_keep_as_table", lambda con, name: (kept.append(name), original(con, name))[1])
    monkeypatch.setenv("TRNPROF_CACHE", "off")
    with open_run(trn1_run) as run:
        run.sql("SELECT (SELECT COUNT(*) FROM step_breakdown) + (SELECT COUNT(*) FROM host_self_time)")
    assert kept.count("_swept") == 1  # one batch at the default budget
    assert kept.index("_swept") < min(kept.index("step_breakdown"), kept.index("host_self_time"))


@pytest.mark.parametrize("share, every_local_view", [(1e6, False), (1e-12, True)])
def test_a_pass_over_several_batches_stores_every_local_view_one_batch_what_was_asked(
    trn1_run, monkeypatch, share, every_local_view
):
    """A pass over several batches reads every file again: it stores every rank-local view while
    it is there. A run of one batch (a trace) stores what the query reads: a view asked later
    costs another pass over a few files, not a view computed for nothing now."""
    monkeypatch.setenv("TRNPROF_CACHE", "off")
    monkeypatch.setattr(batches, "BATCH_SHARE", share)
    with open_run(trn1_run) as run:
        run.sql("SELECT COUNT(*) FROM step_breakdown")
        left = [name for name in batches.to_store(batches.local_views(), set()) if not is_stored(run.con, name)]
    if every_local_view:
        assert left == []
    else:
        assert "step_breakdown" not in left and "memory_peak" in left
