"""The report's reads: each matches the stdlib view it draws, and past a budget the aggregation
or sample keeps what matters (the worst value, the peak) and says so."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tests.conftest import write_inline_run
from trnprof.api import open_run
from trnprof.manifest import new_manifest
from trnprof.report import limits, queries
from trnprof.runstore import write_run


@pytest.fixture
def breakdown(run):
    return run.view("step_breakdown")


def test_breakdown_is_the_mean_per_step_of_each_rank(run, breakdown):
    frame, notes = queries.breakdown_by_rank(run)
    expected = (
        breakdown.groupby("rank")[
            ["compute", "exposed_comm", "input_wait", "host", "transfer_exposed", "compile", "idle"]
        ].mean()
        / 1e6
    )
    assert notes == [] and list(frame["rank_lo"]) == list(expected.index)
    for column in expected.columns:
        np.testing.assert_allclose(frame[column], expected[column], atol=1e-4)


def test_breakdown_groups_ranks_past_the_budget(run, breakdown, monkeypatch):
    monkeypatch.setattr(limits, "MAX_RANK_BARS", 3)
    frame, notes = queries.breakdown_by_rank(run)
    assert list(frame["rank_lo"]) == [0, 3, 6] and list(frame["rank_hi"]) == [2, 5, 7]
    np.testing.assert_allclose(
        frame["compute"].iloc[1], breakdown[breakdown["rank"].between(3, 5)]["compute"].mean() / 1e6, atol=1e-4
    )
    assert notes == ["ranks 0-7 shown in groups of 3 (mean over the group)"]


def test_representative_step_is_nearest_the_median(run):
    times = run.view("step_times")
    median = times["dur"].median()
    chosen = queries.representative_step(run)
    nearest = times.assign(d=(times["dur"] - median).abs()).sort_values(["d", "step"]).iloc[0]
    assert chosen["step"] == nearest["step"]
    assert chosen["median_ms"] == pytest.approx(median / 1e6)


def test_timeline_ranks_start_with_the_slowest(run):
    step = queries.representative_step(run)["step"]
    steps = run.view("steps")
    ranks = queries.timeline_ranks(run, step)
    in_step = steps[steps["step"] == step]
    assert ranks[0] == (int(in_step.loc[in_step["dur"].idxmax(), "rank"]), "slowest")
    assert ranks[1] == (int(in_step.loc[in_step["dur"].idxmin(), "rank"]), "fastest")
    assert len({r for r, _ in ranks}) == len(ranks) <= limits.TIMELINE_RANKS


def test_timeline_events_overlap_the_step_and_keep_every_lane(run, monkeypatch):
    step = queries.representative_step(run)["step"]
    ranks = [r for r, _ in queries.timeline_ranks(run, step)]
    everything, notes = queries.timeline_events(run, step, ranks)
    assert notes == [] and set(everything["rank"]) == set(ranks)
    assert (everything["end"] > 0).all() and everything["start"].min() == pytest.approx(0, abs=1e-6)
    monkeypatch.setattr(limits, "MAX_TIMELINE_EVENTS", 10)
    kept, notes = queries.timeline_events(run, step, ranks)
    assert len(kept) == 10
    lanes = everything.groupby(["rank", "lane"])
    # each lane's longest events in turn: every lane (up to the budget) is drawn, with its longest
    assert len(kept.groupby(["rank", "lane"])) == min(10, lanes.ngroups)
    for (rank, lane), mine in kept.groupby(["rank", "lane"]):
        assert mine["dur"].min() >= lanes.get_group((rank, lane))["dur"].nlargest(len(mine)).min()
    assert notes[0].startswith(f"10 of {len(everything):,} events drawn, the longest of each of the")


def test_collective_points_and_their_sample(run, monkeypatch):
    counts = queries.collective_counts(run)
    frame, notes = queries.collective_points(run, counts["with_busbw"])
    view = run.view("collectives")
    assert notes == [] and len(frame) == counts["with_busbw"] == len(view)
    np.testing.assert_allclose(sorted(frame["busbw_gbs"]), sorted(view["busbw"] / 1e9), rtol=1e-4)
    monkeypatch.setattr(limits, "MAX_COLLECTIVE_POINTS", 5)
    sample, notes = queries.collective_points(run, counts["with_busbw"])
    again, _ = queries.collective_points(run, counts["with_busbw"])
    assert len(sample) == 5 and sample.equals(again)
    assert notes == [f"5 of {counts['with_busbw']:,} collective instances drawn (uniform sample)"]


def test_memory_series_keeps_the_peak_when_binned(run, monkeypatch):
    top = queries.memory_rank(run)
    peak = run.view("memory_peak")
    assert top["rank"] == int(peak.sort_values(["peak_bytes", "rank"], ascending=[False, True]).iloc[0]["rank"])
    full, notes = queries.memory_series(run, top["rank"])
    assert notes == []
    monkeypatch.setattr(limits, "MAX_TIME_POINTS", 3)
    binned, notes = queries.memory_series(run, top["rank"])
    totals = binned.groupby("time_s")["gib"].sum()
    assert len(totals) <= 3 and "samples drawn" in notes[0]
    assert totals.max() == pytest.approx(top["peak_gib"], rel=1e-6)
    assert set(binned["category"]) == set(full["category"])


def test_straggler_cells_show_the_slow_rank(run, monkeypatch):
    cells, notes = queries.straggler_cells(run)
    assert notes == [] and len(cells) == 8 * 4
    worst = cells.loc[cells.groupby("step_lo")["compute_dev"].idxmax(), "rank_lo"]
    assert set(worst) == {5}, "sample run: rank 5 computes 1.5x longer in every step"
    monkeypatch.setattr(limits, "MAX_HEATMAP_RANKS", 3)
    grouped, notes = queries.straggler_cells(run)
    assert sorted(grouped["rank_lo"].unique()) == [0, 3, 6]
    middle = grouped[grouped["rank_lo"] == 3].set_index("step_lo")["compute_dev"]
    alone = cells[cells["rank_lo"].between(3, 5)].groupby("step_lo")["compute_dev"].max()
    np.testing.assert_allclose(middle, alone)
    assert "ranks 0-7 shown in groups of 3" in notes[0]


def test_input_wait_by_step(run, breakdown):
    frame, notes = queries.input_wait_by_step(run)
    expected = breakdown.groupby("step")["input_wait"].agg(["mean", "max"]) / 1e6
    assert notes == [] and list(frame["step"]) == list(expected.index)
    np.testing.assert_allclose(frame["mean_wait"], expected["mean"], atol=1e-4)
    np.testing.assert_allclose(frame["worst_rank_wait"], expected["max"], atol=1e-4)


def test_queue_depth_mean_and_lowest(tmp_path, monkeypatch):
    events = [dict(rank=r, ts=0, dur=10, kind="step", name="s", lane="host", step=0) for r in range(2)]
    counters = [
        dict(rank=r, ts=t * 1000, name="input.queue_depth", value=float(r * 2 + t % 2), unit="count")
        for r in range(2)
        for t in range(10)
    ]
    with open_run(write_inline_run(tmp_path / "q", events, counters=counters)) as run:
        assert queries.input_presence(run) == {"input_events": 0, "queue_samples": 20, "rank_steps": 2}
        frame, notes = queries.queue_depth(run)
        assert notes == [] and len(frame) == 10
        assert list(frame["lowest_depth"]) == [0.0, 1.0] * 5 and list(frame["mean_depth"]) == [1.0, 2.0] * 5
        monkeypatch.setattr(limits, "MAX_TIME_POINTS", 2)
        binned, notes = queries.queue_depth(run)
        assert len(binned) == 2 and "2 time bins (of 10 sample times)" in notes[0]
        assert list(binned["lowest_depth"]) == [0.0, 0.0] and list(binned["mean_depth"]) == [
            1.4,
            1.6,
        ]  # samples 0-4, 5-9


def test_instance_type_from_job_else_ranks(tmp_path, run):
    assert queries.instance_type(run) == "trn1.32xlarge"  # the sample run's manifest job
    events = pd.DataFrame([dict(rank=0, ts=0, dur=10, kind="compute", name="op", lane="nc")])
    with open_run(write_inline_run(tmp_path / "bare", events.to_dict("records"))) as bare:
        assert queries.instance_type(bare) is None
    with write_run(tmp_path / "ranks", new_manifest("tests.inline")) as writer:
        writer.write_events(events)
        writer.write_ranks(
            pd.DataFrame({"rank": [0, 1, 2], "instance_type": ["trn1n.32xlarge"] * 2 + ["trn1.2xlarge"]})
        )
    with open_run(tmp_path / "ranks") as from_ranks:
        assert queries.instance_type(from_ranks) == "trn1n.32xlarge"


def test_breakdown_leaves_out_warmup_steps(tmp_path):
    def step(rank, n, compile_ns):
        t0 = n * 10_000
        rows = [
            dict(rank=rank, ts=t0, dur=1_000 + compile_ns, kind="step", name="s", lane="host", step=n),
            dict(rank=rank, ts=t0, dur=1_000, kind="compute", name="op", lane="nc/tensor", step=n),
        ]
        if compile_ns:
            rows.append(dict(rank=rank, ts=t0 + 1_000, dur=compile_ns, kind="compile", name="c", lane="host", step=n))
        return rows

    events = [e for r in range(2) for n in range(3) for e in step(r, n, 5_000 if n == 0 and r == 1 else 0)]
    with open_run(write_inline_run(tmp_path / "c", events)) as run:
        frame, notes = queries.breakdown_by_rank(run)
    assert notes == ["mean over the steady-state steps (1 warm-up step left out: view step_phases)"]
    assert list(frame["compile"]) == [0, 0] and list(frame["step"]) == [0.001, 0.001]
    everything = [e for r in range(2) for n in range(2) for e in step(r, n, 5_000)]
    with open_run(write_inline_run(tmp_path / "all", everything)) as run:
        frame, notes = queries.breakdown_by_rank(run)
    # every step compiles: the last step is never warm-up (step_phases), so it is drawn
    assert len(notes) == 1 and list(frame["compile"]) == [0.005, 0.005]


def test_reads_work_after_the_views_were_materialized_twice(sample_run):
    """The rule engine materialises views before the report does: the second pass finds only
    tables and must leave no unfinished result on the connection."""
    with open_run(sample_run) as run:
        run.materialize()
        run.materialize()
        frame, _ = queries.breakdown_by_rank(run)
    assert len(frame) == 8


def test_input_presence_counts_every_input_event_from_the_stored_totals(tmp_path):
    """Input events inside and outside the steps, on two ranks: the section's count is the
    number of input events written, read from the per-kind totals without scanning events."""
    events = [
        dict(rank=r, ts=s * 100, dur=100, kind="step", name="s", lane="host", step=s)
        for r in range(2)
        for s in range(2)
    ]
    inputs = [
        dict(rank=r, ts=t, dur=5, kind="input", name="next", lane="host", step=t // 100)
        for r in range(2)
        for t in (10, 20, 130)
    ]
    inputs.append(dict(rank=1, ts=500, dur=5, kind="input", name="next", lane="host"))  # after every step
    with open_run(write_inline_run(tmp_path / "i", events + inputs)) as run:
        run.materialize()
        presence = queries.input_presence(run)
        assert run.is_stored("event_stats")
    assert presence == {"input_events": len(inputs), "queue_samples": 0, "rank_steps": 4}
