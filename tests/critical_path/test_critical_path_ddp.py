"""Replay against real jobs recorded here: a 2-rank DDP job on CPU over gloo (tests/critical_path/ddp_job.py),
its steps taking turns as balanced, with rank 1 slowed by extra matmuls, and without gradient
all-reduce (DDP no_sync). docs/critical-path.md reports the figures and explains them."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from tests.conftest import REPO
from trnprof.api import open_run
from trnprof.collectors.ingest import ingest
from trnprof.critical_path.compute import analyse

from .ddp_job import SLOW_RANK, phase_of


@pytest.fixture(scope="module")
def job(tmp_path_factory):
    root = tmp_path_factory.mktemp("ddp_job")
    subprocess.run(
        [sys.executable, "-m", "tests.critical_path.ddp_job", str(root / "traces")],
        cwd=REPO,
        check=True,
        capture_output=True,
        timeout=600,
    )
    ingest([root / "traces"], root / "run", rank=None)
    with open_run(root / "run") as run:
        steps = run.sql("SELECT rank, step, ts, end_ts FROM steps")
        measured = run.sql("SELECT step, dur FROM step_times").set_index("step")["dur"]
        yield run, steps, measured


def _of(steps, phase):
    return steps[steps["step"].map(phase_of) == phase]


def _median(measured, steps) -> float:
    return float(np.median(measured.reindex(steps["step"].unique())))


def test_straggler_brought_to_its_peers_pace_recovers_its_cost(job):
    """The replay of the straggler's steps with rank 1 at its peer's pace lands near the balanced
    steps. On the shared 2-core machine the steps' times swing several-fold with the load, so
    what is asserted is the share of the straggler's cost (its steps over the balanced ones)
    that the replay removes; the 15 % comparison runs on the shipped recording of this job
    (test_whatif_replay.py), and docs/critical-path.md lists the figures seen here."""
    run, steps, measured = job
    slow, balanced = _of(steps, "slow"), _of(steps, "balanced")
    slow_ms, expected = _median(measured, slow), _median(measured, balanced)
    assert slow_ms > 1.5 * expected  # the extra work shows
    predicted = float(analyse(run, [f"rank:{SLOW_RANK}=peers"], steps=slow).replayed["dur"].median())
    recovered = (slow_ms - predicted) / (slow_ms - expected)
    print(
        f"straggler: replayed {predicted / 1e6:.2f} ms, balanced steps {expected / 1e6:.2f} ms "
        f"({predicted / expected - 1:+.1%}), straggler steps {slow_ms / 1e6:.2f} ms: {recovered:.0%} of the cost"
    )
    assert 0.75 <= recovered <= 1.25


def test_no_gradient_communication_replayed_against_no_sync_steps(job):
    run, steps, measured = job
    balanced = _of(steps, "balanced")
    result = analyse(run, ["collective=0"], steps=balanced)
    predicted = float(result.replayed["dur"].median())
    no_sync = _median(measured, _of(steps, "no_sync"))
    print(
        f"no gradient communication: replayed {predicted / 1e6:.2f} ms, no_sync steps {no_sync / 1e6:.2f} ms "
        f"({predicted / no_sync - 1:+.1%})"
    )
    # removing work never lengthens a step along the graph, and the all-reduces were on it; how
    # far the replay lands from the no_sync steps is reported, not tuned (docs/critical-path.md:
    # gloo threads share the cores; nine runs of 2026-12-07 landed from -22 % to -57 %)
    assert (result.replayed["dur"].to_numpy() <= result.measured["dur"].to_numpy() + 1).all()
    assert predicted < float(result.measured["dur"].median())
    assert no_sync / 4 < predicted < 2.0 * no_sync
