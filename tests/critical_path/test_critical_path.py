"""Critical path and replay (docs/critical-path.md): a hand-built job whose answer follows from
its events, every shipped real trace and simulated runs replayed unchanged, and simulated faults
removed by replay against the same job simulated without them."""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import DATA, KINETO, write_inline_run
from trnprof.api import open_run
from trnprof.collectors.ingest import ingest
from trnprof.collectors.trn1 import simulate
from trnprof.critical_path import compute
from trnprof.critical_path import events as event_reads
from trnprof.critical_path.compute import analyse
from trnprof.model import config as trn1_config
from trnprof.report.sections import critical_path as critical_path_section
from trnprof.whatif.replay import Priced

MS = 1_000_000


def _ev(rank, ts, dur, kind, name, lane, **extra):
    return {"rank": rank, "ts": ts * MS, "dur": dur * MS, "kind": kind, "name": name, "lane": lane, "step": 0, **extra}


@pytest.fixture(scope="module")
def two_ranks(tmp_path_factory):
    """Rank 0 computes 10 ms, rank 1 40 ms, then both all-reduce (5 ms once both arrived) and
    compute 10 ms; the step ends 7 ms later on rank 0, 5 ms on rank 1."""
    coll = {"coll_group": "dp", "coll_seq": 1, "coll_op": "all_reduce"}
    events = []
    for rank, first in ((0, 10), (1, 40)):
        events += [
            _ev(rank, 0, 62 - 2 * rank, "step", "step", "host/main"),
            _ev(rank, 0, first, "compute", f"fwd{rank}", "nc/tensor"),
            _ev(rank, first, 45 - first, "collective", "grads.all_reduce", "nc/cc", **coll),
            _ev(rank, 45, 10, "compute", "opt", "nc/tensor"),
        ]
    return write_inline_run(tmp_path_factory.mktemp("cp") / "two", events)


def test_path_follows_the_late_rank_and_sums_to_the_step(two_ranks):
    with open_run(two_ranks) as run:
        path = run.sql("SELECT rank, category, name, dur FROM critical_path ORDER BY seq")
        summary = run.sql("SELECT * FROM critical_path_steps").iloc[0]
    # rank 0 ends the step; its all-reduce ended when rank 1 arrived (40 ms) plus the 5 ms transfer
    assert list(path.itertuples(index=False)) == [
        (1, "compute", "fwd1", 40 * MS),
        (0, "communication", "grads.all_reduce", 5 * MS),
        (0, "compute", "opt", 10 * MS),
        (0, "host", "(untraced)", 7 * MS),
    ]
    assert summary["dur"] == 62 * MS == path["dur"].sum()
    assert summary["late_rank_wait"] == 30 * MS  # rank 0 arrived at 10 ms, rank 1 at 40 ms
    assert summary["bound_by"] == "compute" and summary["ranks_on_path"] == 2


def test_replay_recomputes_the_step_along_the_graph(two_ranks):
    with open_run(two_ranks) as run:

        def step(*scales):
            return float(analyse(run, scales).replayed["dur"].iloc[0]) / MS

        assert step() == 62
        # no transfer: rank 0's all-reduce ends at rank 1's arrival (40), then opt 10 and 7 ms
        assert step("collective=0") == pytest.approx(57)
        # rank 1's compute (50 ms) brought to rank 0's (20 ms): the 30 ms come off the work rank
        # 0 does not do (fwd1; opt takes 10 ms on both), so fwd1 10 ms, arrival at 10 ms,
        # transfer 5 ms, rank 0's opt 10 ms and its 7 ms tail: 32 ms (a share of every op
        # removed, fwd1 16 and opt 4, gave 38)
        assert step("rank:1=peers") == pytest.approx(32)
        assert step("gap=0") == pytest.approx(55)
        assert step("name:fwd*,rank:1=0.5") == pytest.approx(42)


def _measured(run):
    return run.sql("SELECT step, dur FROM step_times").set_index("step")["dur"]


def _check_exact(run):
    result = analyse(run)
    measured = _measured(run).reindex(result.measured["step"]).to_numpy()
    error = np.abs(result.measured["dur"].to_numpy() - measured) / measured
    assert np.median(error) <= 0.02 and len(error) > 0
    sums = result.segments.groupby("step")["dur"].sum().reindex(result.replayed["step"]).to_numpy()
    assert np.allclose(sums, result.replayed["dur"].to_numpy(), rtol=1e-9, atol=len(result.segments))
    return error


REAL = sorted(p for p in KINETO.iterdir() if p.is_dir() and p.name != "critical_path") + [
    DATA / "kineto_ddp" / "base",
    DATA / "kineto_ddp" / "slow",
]


@pytest.mark.parametrize("trace", REAL, ids=[f"{p.parent.name}/{p.name}" for p in REAL])
def test_unchanged_replay_reproduces_real_traces(tmp_path, trace):
    run_dir = tmp_path / "run"
    ingest([trace], run_dir, rank=None)
    with open_run(run_dir) as run:
        if run.sql("SELECT COUNT(*) AS n FROM steps")["n"][0] == 0:
            pytest.fail(f"{trace} has no steps: pick traces with ProfilerStep windows here")
        _check_exact(run)


def _tiny(faults: str, steps: int = 8):
    return trn1_config.load_config(preset="tiny", overrides=[f"faults={faults}", f"run.steps={steps}"])


@pytest.fixture(scope="module")
def clean(tmp_path_factory):
    return simulate(_tiny("[]"), tmp_path_factory.mktemp("sim") / "clean")


def test_unchanged_replay_reproduces_simulated_runs(clean):
    with open_run(clean) as run:
        assert _check_exact(run).max() < 1e-9


# fault -> the replay that removes the fault's time, from what the fault does (collectors/trn1/faults.py)
FAULTS = {
    # the rank's device work takes 1.5x as long: bring it to its peers' pace
    "straggler": ("[{kind: straggler, rank: 1, slowdown: 1.5}]", ["rank:1=peers"]),
    # loading costs 8x; at 1x the prefetching loader hides under the step: no exposed input wait
    "slow_loader": ("[{kind: slow_loader, factor: 8}]", ["input=0"]),
    # the graph compiles again every 2 steps: no recompiles
    "recompile": ("[{kind: recompile, every: 2}]", ["compile=0"]),
}


def test_fault_removed_by_replay_agrees_with_the_job_simulated_without_it(tmp_path, clean):
    with open_run(clean) as run:
        expected = Priced(run).measured_s
    errors = {}
    for name, (faults, scales) in FAULTS.items():
        with open_run(simulate(_tiny(faults), tmp_path / name)) as run:
            priced = Priced(run)
            predicted, _ = priced.predict(scales)
            assert priced.measured_s > expected * 1.0 or name == "recompile"  # the fault costs time
        errors[name] = abs(predicted / expected - 1)
    assert np.median(list(errors.values())) <= 0.05, errors
    assert max(errors.values()) <= 0.05, errors


@pytest.mark.parametrize(
    "scales",
    [[], ["rank:1=peers"], ["collective=0"], ["compute=0.5", "gap=0.3"]],
    ids=["unchanged", "peers", "no-collectives", "compute-and-gaps"],
)
def test_wavefront_solver_agrees_with_the_one_node_at_a_time_reference(tmp_path, scales):
    from trnprof.critical_path import replay, scale
    from trnprof.critical_path.compute import Replayer

    from .critical_path_reference import solve as reference

    run_dir = tmp_path / "run"
    ingest([DATA / "kineto_ddp" / "slow"], run_dir, rank=None)
    with open_run(run_dir) as run:
        for graph in Replayer(run).graphs():
            work, gap = scale.factors(graph.nodes, graph.work, [scale.parse(s) for s in scales])
            fast, slow = replay.solve(graph, work, gap), reference(graph, work, gap)
            assert np.array_equal(fast.end, slow.end) and np.array_equal(fast.start, slow.start)
            assert np.array_equal(fast.start_by, slow.start_by) and np.array_equal(fast.end_by, slow.end_by)


def test_collective_whose_ranks_disagree_on_the_order_is_left_unjoined(tmp_path):
    """Rank 0's copy of a collective ends before rank 1's starts: the ranks' clocks are offset,
    so no last arrival can be trusted; each keeps its measured length."""
    coll = {"coll_group": "dp", "coll_seq": 7, "coll_op": "all_reduce"}
    events = [
        _ev(0, 0, 20, "step", "step", "host/main"),
        _ev(0, 0, 5, "collective", "ar", "nc/cc", **coll),
        _ev(1, 0, 20, "step", "step", "host/main"),
        _ev(1, 10, 5, "collective", "ar", "nc/cc", **coll),
    ]
    with open_run(write_inline_run(tmp_path / "skew", events)) as run:
        _check_exact(run)
        # without them: rank 0 is its 15 ms tail; rank 1 its 10 ms lead gap and 5 ms tail
        assert float(analyse(run, ["collective=0"]).replayed["dur"].iloc[0]) == 15 * MS


def test_a_step_too_big_for_the_memory_budget_is_one_line_not_a_blown_budget(two_ranks, monkeypatch, cli):
    """A step's graph is built whole: past STEP_EVENTS the report says why it drew no path, a
    query names the step and its size in one line, and fixes are priced otherwise or not at all."""
    monkeypatch.setattr(compute, "STEP_EVENTS", 3)
    with open_run(two_ranks) as run, monkeypatch.context() as scan:
        # the section refuses from the stored per-kind counts, without scanning the events
        scan.setattr(event_reads.Reader, "step_counts", lambda self: pytest.fail("scanned the events"))
        section = critical_path_section.build(run)
    assert section.chart is None and section.empty.startswith("Not drawn: critical path: step 0 has ")
    assert "over the 3 one step's graph holds" in section.empty and "\n" not in section.empty
    result = cli("query", str(two_ranks), "SELECT * FROM critical_path_steps")
    assert result.exit_code == 2 and "step 0 has" in result.output and "Traceback" not in result.output


def test_a_run_too_long_for_the_report_is_not_drawn_but_queried(two_ranks, monkeypatch, cli):
    """Steps within the graph's limit but a run whose path takes past the report's time: the
    report says so in one line and how to get it, without computing it; a query still does."""
    monkeypatch.setattr(compute, "WITHIN_A_MINUTE_EVENTS", 3)
    with open_run(two_ranks) as run, monkeypatch.context() as scan:
        scan.setattr(event_reads.Reader, "step_counts", lambda self: pytest.fail("scanned the events"))
        section = critical_path_section.build(run)
    assert section.chart is None and section.empty.startswith("Not drawn: the run's steps hold ")
    assert "over the 3 whose critical path a command computes" in section.empty and "\n" not in section.empty
    assert "trnprof query RUN" in section.empty
    result = cli("query", str(two_ranks), "SELECT step, dur FROM critical_path_steps")
    assert result.exit_code == 0 and "dur" in result.output
