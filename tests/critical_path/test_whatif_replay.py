"""`trnprof whatif RUN --scale ...` and findings priced by replay on an ingested run (no job
description): the PyTorch-profiler traces of one 2-rank DDP job, balanced and with rank 1 slowed
by extra matmuls (tests/data/kineto_ddp)."""

from __future__ import annotations

import json

import pytest

from tests.conftest import DATA
from trnprof.api import analyze, open_run
from trnprof.collectors.ingest import ingest


@pytest.fixture(scope="module")
def ddp(tmp_path_factory):
    root = tmp_path_factory.mktemp("ddp")
    for name in ("base", "slow"):
        ingest([DATA / "kineto_ddp" / name], root / name, rank=None)
    return root


def _median_step_s(run_dir) -> float:
    with open_run(run_dir) as run:
        return float(run.sql("SELECT MEDIAN(dur) AS d FROM step_times")["d"][0]) * 1e-9


def test_scale_prints_the_whatif_document_on_an_ingested_run(cli, ddp):
    result = cli("whatif", ddp / "base", "--scale", "collective=0", "--format", "json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert doc["fit"]["method"] == "replay" and doc["change"] == {"scale": ["collective=0"]}
    assert doc["fitted"]["step_time_s"] == pytest.approx(doc["baseline"]["step_time_s"], rel=0.02)
    # the gradient all-reduce is on every step's path: removing it shortens the step
    assert doc["predicted"]["step_time_s"] < doc["baseline"]["step_time_s"]
    assert doc["breakdown"]["communication"]["predicted_s"] == 0
    text = cli("whatif", ddp / "base", "--scale", "collective=0", "--scale", "gap=0.5")
    assert text.exit_code == 0 and "predicted" in text.output and "replay" in text.output


def test_straggler_finding_is_priced_by_replay_against_the_balanced_job(ddp):
    document = analyze(ddp / "slow")
    straggler = next(f for f in document.findings if f.name == "scale.straggler")
    projected = straggler.projected
    assert projected["method"] == "replay" and projected["change"] == {"scale": ["rank:1=peers"]}
    # the same job without the slow rank's extra work, measured in a separate recording: within
    # the 20 % issue 35 sets for job pairs (8.86 ms against 10.47 ms, -15.4 %, since rank 1's
    # untraced time between its extra ops is brought to its peer's too; 9.38 ms for its ops alone)
    balanced = _median_step_s(ddp / "base")
    assert projected["step_time_s"] == pytest.approx(balanced, rel=0.20)
    assert projected["gain_fraction"] > 0.5


@pytest.mark.parametrize(
    "args, says",
    [
        (["--scale", "bogus=0"], "unknown selector"),
        (["--scale", "collective=-1"], "factor -1: not a number >= 0 and <= 1000"),
        (["--scale", "compute=1e308"], "factor 1e308: not a number >= 0 and <= 1000"),
        (["--scale", "compute=nan"], "factor nan: not a number"),
        (["--scale", "compute=inf"], "factor inf: not a number"),
        (["--scale", "compute=1001"], "<= 1000"),
        (["--scale", "compute=100", "--scale", "name:*=100"], "multiply to more than 1000"),
        (["--scale", "rank:-1=peers"], "rank -1 is not a rank of this run (ranks 0-1)"),
        (["--scale", "rank:2=peers"], "rank 2 is not a rank of this run"),
        (["--scale", "compile=0"], "matches no work event of this run"),
        (["--scale", "name:no-such-op*=0"], "matches no work event of this run"),
        (["--scale", "size:large,rank:0=0"], "matches no work event of this run"),
        (["--scale", "compute=peers"], "needs a rank"),
        (["--scale", "size:huge=0"], "size"),
        (["--scale", "collective=0", "--set", "tp=2"], "one or the other"),
    ],
)
def test_bad_scales_are_one_error_line(cli, ddp, args, says):
    result = cli("whatif", ddp / "base", *args)
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and says in lines[0] and "Traceback" not in result.output


def test_query_reads_the_critical_path(cli, ddp):
    result = cli(
        "query",
        ddp / "slow",
        "SELECT step, bound_by, late_rank_wait FROM critical_path_steps ORDER BY step",
        "--format",
        "json",
    )
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)
    assert len(rows) == 8
    # rank 0 waits for rank 1 in every step's all-reduce, or the path ends on rank 1 itself
    assert {r["bound_by"] for r in rows} <= {"compute", "late_rank"}
