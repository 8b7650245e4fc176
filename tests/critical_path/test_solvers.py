"""The two runs of the replay's wavefront (replay.solve: `numpy`, vectorised over sequences, and
`python`, node by node in rounds.py) give identical solutions on graphs from real traces and
simulated runs, unchanged and with random per-node scales; `auto` picks the Python rounds on a
single-rank trace, where each numpy round would start one node, unless the batch is over their
memory cap."""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import DATA, KINETO
from trnprof.api import open_run
from trnprof.collectors.ingest import ingest
from trnprof.collectors.trn1 import simulate
from trnprof.critical_path import replay, scale
from trnprof.critical_path.compute import Replayer
from trnprof.model import config as trn1_config

SINGLE_RANK = KINETO / "negative_queue_length_values_check"
TRACES = [SINGLE_RANK, KINETO / "ns_resolution_trace", DATA / "kineto_ddp" / "slow"]
FAULTS = "[{kind: straggler, rank: 1, slowdown: 1.5}, {kind: slow_loader, factor: 8}, {kind: recompile, every: 2}]"


def _same(a: replay.Solution, b: replay.Solution) -> None:
    assert np.array_equal(a.start, b.start) and np.array_equal(a.end, b.end)
    assert np.array_equal(a.start_by, b.start_by) and np.array_equal(a.end_by, b.end_by)
    assert np.array_equal(a.via_launch, b.via_launch)
    assert a.steps.equals(b.steps)


def _scalings(graph, seed: int):
    """Unchanged, selector scales, and random factors per node (0 included: removed work)."""
    yield None, None
    yield scale.factors(graph.nodes, graph.work, [scale.parse(s) for s in ("compute=0.37", "gap=0.3")])
    rng = np.random.default_rng(seed)
    n = len(graph.nodes)
    work = rng.choice([0.0, 0.5, 1.0, 1.7], n) * rng.uniform(0.5, 1.5, n)
    yield work, rng.uniform(0, 2, n)


def _check(run_dir, seed: int) -> dict:
    edges = {"joins": 0, "syncs": 0, "launches": 0, "nodes": 0}
    with open_run(run_dir) as run:
        for graph in Replayer(run).graphs():
            edges["joins"] += int((graph.join >= 0).sum())
            edges["syncs"] += int((graph.sync_on >= 0).sum())
            edges["launches"] += int((graph.launch_by >= 0).sum())
            edges["nodes"] += len(graph.nodes)
            for work, gap in _scalings(graph, seed):
                _same(replay.solve(graph, work, gap, method="numpy"), replay.solve(graph, work, gap, method="python"))
            _same(replay.solve_unchanged(graph), replay.solve(graph, method="numpy"))
    return edges


@pytest.mark.parametrize("trace", TRACES, ids=[p.name for p in TRACES])
def test_python_rounds_agree_with_numpy_rounds_on_real_traces(tmp_path, trace):
    ingest([trace], tmp_path / "run", rank=None)
    edges = _check(tmp_path / "run", seed=len(trace.name))
    assert edges["nodes"] > 0 and (edges["syncs"] or edges["launches"] or edges["joins"])


def test_python_rounds_agree_with_numpy_rounds_on_simulated_runs(tmp_path):
    config = trn1_config.load_config(preset="tiny", overrides=[f"faults={FAULTS}", "run.steps=6", "input.workers=1"])
    edges = _check(simulate(config, tmp_path / "faults"), seed=7)
    assert edges["joins"] > 0  # collectives joined across ranks


def test_unchanged_replay_is_the_measured_timeline_without_rounds(tmp_path, monkeypatch):
    """The replay with nothing scaled evaluates each node once on its predecessors' measured
    times: no wavefront round runs, and every node starts and ends when it was measured to."""
    ingest([DATA / "kineto_ddp" / "slow"], tmp_path / "run", rank=None)
    monkeypatch.setattr(replay, "solve", lambda *a, **k: pytest.fail("the unchanged replay ran the rounds"))
    with open_run(tmp_path / "run") as run:
        for graph in Replayer(run).graphs():
            solution = replay.solve_unchanged(graph)
            assert np.array_equal(solution.start, graph.nodes["ts"].to_numpy(float))
            assert np.array_equal(solution.end, graph.nodes["end"].to_numpy(float))
            assert (solution.end_by >= 0).any() and (solution.start_by >= 0).any()


def test_auto_runs_a_single_rank_trace_in_python_rounds(tmp_path, monkeypatch):
    ingest([SINGLE_RANK], tmp_path / "run", rank=None)
    taken = []
    real = replay.Rounds
    monkeypatch.setattr(replay, "Rounds", lambda wave: taken.append(wave) or real(wave))
    with open_run(tmp_path / "run") as run:
        graph = next(Replayer(run).graphs())
        _same(replay.solve(graph), replay.solve(graph, method="numpy"))
    assert len(taken) == 1 and np.bincount(graph.group).max() * replay.NARROW >= len(graph.nodes)
    # a batch over the Python rounds' memory cap stays in numpy
    monkeypatch.setattr(replay, "PYTHON_NODES", len(graph.nodes) - 1)
    replay.solve(graph)
    assert len(taken) == 1
