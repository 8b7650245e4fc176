"""The vectorised pieces the graph is built from (docs/critical-path.md, Performance): each agrees
with the plain computation it replaces, and the coded event read with the plain SQL read."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import write_inline_run
from trnprof import runstore
from trnprof.api import open_run
from trnprof.collectors.trn1 import simulate
from trnprof.critical_path import compute, graph
from trnprof.critical_path.compute import analyse
from trnprof.critical_path.events import CODED, COLUMNS, Reader, events_sql
from trnprof.critical_path.graph import _latest_end
from trnprof.critical_path.nodes import segment_cummax, stable_order
from trnprof.model import config as trn1_config

MS = 1_000_000
EPOCH = 1_700_000_000 * 1_000_000_000  # epoch-scale ns: packed keys must not lose them


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(-5, 50)), min_size=1, max_size=60))
def test_segment_cummax_is_the_running_maximum_per_segment(rows):
    segment = np.sort(np.array([s for s, _ in rows]))
    values = np.array([v for _, v in rows], np.int64) + EPOCH
    first = np.ones(len(segment), bool)
    first[1:] = segment[1:] != segment[:-1]
    expected = pd.Series(values).groupby(segment).cummax().to_numpy()
    assert np.array_equal(segment_cummax(values, first), expected)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 6), st.integers(-3, 3)), min_size=0, max_size=60))
def test_stable_order_is_the_two_key_lexsort(rows):
    primary = np.array([p for p, _ in rows], np.int64) + EPOCH
    secondary = np.array([s for _, s in rows], np.int64)
    assert np.array_equal(stable_order(primary, secondary), np.lexsort((secondary, primary)))


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 2), st.integers(0, 30)), min_size=1, max_size=40),
    st.lists(st.tuples(st.integers(0, 2), st.integers(0, 30)), min_size=0, max_size=40),
)
def test_latest_end_finds_the_latest_end_at_or_before_each_query_in_its_group(queries, ends):
    q_group = np.array([g for g, _ in queries], np.int64)
    q_time = np.array([t for _, t in queries], np.int64) + EPOCH
    e_group = np.array([g for g, _ in ends], np.int64)
    e_time = np.array([t for _, t in ends], np.int64) + EPOCH
    ids = np.arange(len(ends)) + 100
    found = _latest_end(q_group, q_time, e_group, e_time, ids)
    for k in range(len(queries)):
        # the latest end <= the query in the same group; among equal ends, the last given
        best = [(e_time[i], i) for i in range(len(ends)) if e_group[i] == q_group[k] and e_time[i] <= q_time[k]]
        assert found[k] == (ids[max(best)[1]] if best else -1)


def _events():
    """Two ranks, three steps; names with quotes and commas, nested host ops, a collective."""
    out = []
    for step in range(3):
        base = step * 100
        for rank in (0, 1):
            late = 20 * rank * (step == 1)
            coll = {"coll_group": "dp's", "coll_seq": step, "coll_op": "all_reduce"}
            out += [
                {
                    "rank": rank,
                    "step": step,
                    "ts": (base + 0) * MS,
                    "dur": 90 * MS,
                    "kind": "step",
                    "name": "step",
                    "lane": "host/main",
                },
                {
                    "rank": rank,
                    "step": step,
                    "ts": (base + 1) * MS,
                    "dur": 30 * MS,
                    "kind": "host",
                    "name": "aten::linear(a, 'b')",
                    "lane": "host/main",
                },
                {
                    "rank": rank,
                    "step": step,
                    "ts": (base + 2) * MS,
                    "dur": 5 * MS,
                    "kind": "host",
                    "name": "cudaLaunchKernel",
                    "lane": "host/main",
                },
                {
                    "rank": rank,
                    "step": step,
                    "ts": (base + 8) * MS,
                    "dur": 20 * MS + late * MS,
                    "kind": "compute",
                    "name": 'gemm "fwd"',
                    "lane": "nc/tensor",
                },
                {
                    "rank": rank,
                    "step": step,
                    "ts": (base + 40 + late) * MS,
                    "dur": (30 - late) * MS,
                    "kind": "collective",
                    "name": "grads.all_reduce",
                    "lane": "nc/cc",
                    **coll,
                },
            ]
    return out


def test_coded_read_returns_the_events_the_plain_query_returns(tmp_path):
    run_dir = write_inline_run(tmp_path / "run", _events())
    with open_run(run_dir) as run:
        reader = Reader(run)
        counts = reader.step_counts()
        coded = reader.read((0, 2))
        plain = run.sql(events_sql((0, 2)))
    assert counts.to_dict("list") == {"step": [0, 1, 2], "n": [8, 8, 8]}
    assert isinstance(coded["name"].dtype, pd.CategoricalDtype)
    key = ["rank", "step", "ts", "lane"]
    coded = coded.astype({c: object for c in CODED}).sort_values(key).reset_index(drop=True)
    plain = plain.astype({c: object for c in CODED}).sort_values(key).reset_index(drop=True)
    for column in COLUMNS:
        if column in CODED:
            assert coded[column].fillna("-").tolist() == plain[column].fillna("-").tolist(), column
        else:
            assert np.array_equal(
                coded[column].to_numpy("float64", na_value=np.nan),
                plain[column].to_numpy("float64", na_value=np.nan),
                equal_nan=True,
            ), column


def test_batches_of_one_step_give_the_path_and_replay_of_one_batch(tmp_path):
    run_dir = write_inline_run(tmp_path / "run", _events())
    with open_run(run_dir) as run:
        whole = analyse(run, ["compute=0.5"], limit=1_000_000)
        per_step = analyse(run, ["compute=0.5"], limit=1)
    assert whole.replayed["dur"].tolist() == per_step.replayed["dur"].tolist()
    pd.testing.assert_frame_equal(whole.segments, per_step.segments)
    # the unchanged replay is each step's measured window, 90 ms
    assert whole.measured["dur"].tolist() == per_step.measured["dur"].tolist() == [90 * MS] * 3
    assert whole.walks.to_dict("list") == per_step.walks.to_dict("list")


def test_runs_written_before_step_row_groups_give_the_same_path_and_replay(tmp_path, monkeypatch):
    """The run store cuts events into row groups per step (trnprof/runstore.py); a run written
    before, one row group per file holding every step, reads the same."""
    monkeypatch.setattr(runstore, "STEP_GROUP_ROWS", 64)  # the tiny job's steps are small
    config = trn1_config.load_config(preset="tiny", overrides=["run.steps=4", "cluster.nodes=1"])
    new = simulate(config, tmp_path / "new")
    old = tmp_path / "old"
    shutil.copytree(new, old)
    files = sorted((old / "events").rglob("*.parquet"))
    assert max(pq.ParquetFile(f).metadata.num_row_groups for f in files) > 1  # the new layout is exercised
    for part in files:
        pq.write_table(pq.read_table(part, partitioning=None), part, row_group_size=1 << 30)
        assert pq.ParquetFile(part).metadata.num_row_groups == 1
    manifest = json.loads((old / "trnprof.json").read_text())
    del manifest["parts"]  # as a run written before the manifest listed its files
    (old / "trnprof.json").write_text(json.dumps(manifest))
    results = []
    for run_dir in (new, old):
        with open_run(run_dir) as run:
            results.append(analyse(run, ["collective=0"], limit=1))
    pd.testing.assert_frame_equal(results[0].segments, results[1].segments)
    assert results[0].replayed.equals(results[1].replayed) and results[0].measured.equals(results[1].measured)
    assert len(results[0].segments) and results[0].replayed["step"].nunique() > 1


def test_rank_ranges_cover_every_rank_once_in_about_even_parts():
    ranks = np.array([0, 1, 2, 3, 5, 8, 9])
    assert compute.rank_ranges(ranks, 500, 1_000) == [(None, None)]
    ranges = compute.rank_ranges(ranks, 3_000, 1_000)
    assert ranges == [(None, 3), (3, 8), (8, None)]
    inside = [
        [r for r in range(-5, 20) if (low is None or r >= low) and (stop is None or r < stop)] for low, stop in ranges
    ]
    assert sorted(r for part in inside for r in part) == list(range(-5, 20))  # every rank in one range
    assert len(compute.rank_ranges(ranks, 10**9, 1_000)) == len(ranks)  # at most a rank a range


def _graph_arrays(graph: graph.Graph) -> dict:
    names = (
        "order",
        "lane_prev",
        "near",
        "gap",
        "work",
        "tail",
        "join",
        "sync_on",
        "launch_by",
        "launch_at",
        "group",
        "near_lead",
        "from_start",
        "by_sequence",
    )
    return {name: getattr(graph, name) for name in names} | {"members": graph.members.rows, "ptr": graph.members.ptr}


def test_a_batch_built_by_rank_ranges_is_the_graph_built_whole(tmp_path, monkeypatch):
    """A large step is read, flattened and given its edges within ranks a rank range at a time,
    the edges across ranks (collectives, pipeline pairs) over the whole step: the graph, the
    path and any replay are those of the step built in one piece (pipeline of 2 stages x 2 ranks:
    collectives, sends and receives across ranges)."""
    config = trn1_config.load_config(
        preset="tiny",
        overrides=[
            "run.steps=3",
            "parallel.pp=2",
            "cluster.nodes=2",
            "batch.micro=8",
            "faults=[{kind: straggler, rank: 2, slowdown: 2}]",
        ],
    )
    run_dir = simulate(config, tmp_path / "pp")
    results, graphs = [], []
    for range_events in (10**9, 1):  # one range; a rank a range
        monkeypatch.setattr(compute, "RANGE_EVENTS", range_events)
        with open_run(run_dir) as run:
            replayer = compute.Replayer(run)
            assert len(replayer.ranges[0]) == (1 if range_events > 1 else 4)
            graphs.append(list(replayer.graphs()))
            results.append(replayer.replay(["rank:2=peers", "collective=0.5"], base_path=True))
    for whole, ranged in zip(*graphs):
        for name, array in _graph_arrays(whole).items():
            assert np.array_equal(array, _graph_arrays(ranged)[name]), name
        pd.testing.assert_frame_equal(whole.nodes.drop(columns="nid"), ranged.nodes.drop(columns="nid"))
        # node ids keep their order within each (rank, step) sequence (the path's tie-break)
        assert np.array_equal(
            np.lexsort((whole.nodes["nid"], whole.group)), np.lexsort((ranged.nodes["nid"], ranged.group))
        )
    for field in ("segments", "base_segments", "walks", "measured", "replayed"):
        pd.testing.assert_frame_equal(getattr(results[0], field), getattr(results[1], field))
    assert results[0].replayed["dur"].sum() < results[0].measured["dur"].sum()
