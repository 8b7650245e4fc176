"""`trnprof record` on real (tiny) torch CPU jobs, issue 37: the job's own memory judged over the
whole job, signals around the trace write, processes sharing a RANK, the report's timeline."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from trnprof import open_run

ROOT = Path(__file__).resolve().parents[2]
LEAK = ROOT / "examples" / "train_leak.py"
TIMEOUT = 300


def record_cmd(options, command):
    return [sys.executable, "-m", "trnprof", "record", "--neuron", "off", *map(str, options), "--", *map(str, command)]


def record(tmp_path, options, command):
    return subprocess.run(record_cmd(options, command), capture_output=True, text=True, timeout=TIMEOUT, cwd=tmp_path)


def memory_findings(run: Path):
    from trnprof.api import analyze

    document = analyze(run, select=["memory"])
    assert not document.errors, document.errors
    return [f for f in document.findings if f.name == "memory.growth"], document


def test_a_leak_of_a_few_mib_per_step_is_found_and_sized_with_default_options(tmp_path):
    result = record(tmp_path, ["-o", "run"], [sys.executable, LEAK, "--steps", 30, "--leak-mib", 4])
    assert result.returncode == 0, result.stderr
    found, _ = memory_findings(tmp_path / "run")
    assert [f.pattern for f in found] == ["job.rss"], [f.message for f in found]
    mib = float(re.search(r"grows by ([\d.]+) MiB per step", found[0].message)[1])
    assert 4 * 0.65 <= mib <= 4 * 1.35, found[0].message


@pytest.fixture(scope="module")
def healthy(tmp_path_factory):
    """A job that keeps nothing, profiled over 30 steps (the profiler's buffers grow in them)."""
    where = tmp_path_factory.mktemp("healthy")
    result = record(where, ["-o", "run", "--active", 30], [sys.executable, LEAK, "--steps", 45, "--leak-mib", 0])
    assert result.returncode == 0, result.stderr
    return where / "run"


def test_a_healthy_job_profiled_over_30_steps_has_no_memory_finding(healthy):
    found, document = memory_findings(healthy)
    assert found == [], [f.message for f in found]
    assert "memory.growth" not in {n.name for n in document.not_evaluated}  # judged, not skipped
    with open_run(healthy) as run:
        window = run.sql("SELECT ts, value FROM counters WHERE name = 'job.profiler' ORDER BY ts")
        marks = run.sql("SELECT ts FROM counters WHERE name = 'job.rss'")
        steps = run.sql("SELECT MIN(ts) AS first, MAX(end_ts) AS last FROM steps").iloc[0]
    assert list(window["value"]) == [1.0, 0.0]  # the profiler's window is marked ...
    assert window["ts"][0] <= steps["first"] and steps["last"] <= window["ts"][1]  # ... around its steps
    assert (marks["ts"] > window["ts"][1]).sum() >= 6  # and the job's memory is known after it


def test_the_timeline_of_a_recorded_step_is_scaled_to_the_step(healthy):
    from trnprof.report.sections import timeline

    with open_run(healthy) as run:
        section = timeline.build(run)
    spec = section.chart.to_dict()
    frame = section.chart.data
    step_ms = float(re.search(r"Step \d+ \(([\d,.]+) ms", section.intro)[1].replace(",", ""))
    assert frame["start"].min() < 0 or frame["end"].max() > step_ms  # whole-trace spans reach outside it
    low, high = spec["encoding"]["x"]["scale"]["domain"]
    assert low == 0 and high == pytest.approx(step_ms, rel=1e-3)
    assert frame["x0"].min() >= 0 and frame["x1"].max() <= high
    assert "slowest" not in section.intro and "rank 0;" in section.intro  # one rank: no role among others


@pytest.mark.parametrize("sig, target", [(signal.SIGINT, "process"), (signal.SIGTERM, "group")])
def test_a_stop_while_the_trace_is_written_keeps_the_whole_window(tmp_path, sig, target):
    """The signal lands while the rank writes its trace (the partial file exists): the write
    finishes, the job stops, and the run holds every profiled step and the host metrics."""
    capture = tmp_path / "capture"
    process = subprocess.Popen(
        record_cmd(
            [
                "-o",
                "run",
                "--capture",
                capture,
                "--wait",
                0,
                "--warmup",
                0,
                "--active",
                20,
                "--shapes",
                "--stack",
                "--interval",
                0.1,
            ],
            [sys.executable, LEAK, "--steps", 400, "--leak-mib", 0],
        ),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        start_new_session=True,
    )
    partial = capture / ".trace_rank0.partial.json.gz"
    deadline = time.monotonic() + TIMEOUT
    while not partial.exists() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.001)
    assert partial.exists(), "the trace was not being written when looked for"
    (os.killpg if target == "group" else os.kill)(process.pid, sig)
    out, err = process.communicate(timeout=TIMEOUT)
    assert process.returncode == 128 + sig, err
    assert f"stopped by {signal.Signals(sig).name}: kept 1 trace(s)" in err and "in the run run" in err, err
    with open_run(tmp_path / "run") as run:
        # recorded_steps: every step the trace holds. Under load the job's steps run 1.5-44 ms,
        # and `steps` may judge a short last step cut (its own tests: tests/stdlib/test_whole_steps.py)
        steps = run.sql("SELECT COUNT(*) AS n FROM recorded_steps")["n"][0]
        names = set(run.sql("SELECT DISTINCT name FROM counters")["name"])
    assert steps == 20  # the whole window, written to its end
    assert {"host.process.rss", "host.memory.used", "job.rss"} <= names
    assert not partial.exists()


def test_two_processes_with_the_same_rank_keep_both_traces_apart(tmp_path):
    job = f"{sys.executable} {LEAK} --steps 6 --leak-mib 0"
    result = record(
        tmp_path,
        ["-o", "run", "--capture", "capture", "--wait", 0, "--warmup", 0, "--active", 3],
        ["sh", "-c", f"{job} & {job}; wait"],
    )
    assert result.returncode == 0, result.stderr
    traces = sorted(p.name for p in (tmp_path / "capture").glob("trace_rank0*.json.gz"))
    assert len(traces) == 2 and traces[1].startswith("trace_rank0.pid"), traces  # neither overwrote the other
    assert "captured 1 trace(s)" in result.stdout
    assert "same RANK (rank 0)" in result.stderr and traces[1] in result.stderr
    with open_run(tmp_path / "run") as run:
        # one process's window, not both mixed (recorded_steps: under load an edge step may be partial)
        assert run.sql("SELECT COUNT(*) AS n FROM recorded_steps")["n"][0] == 3
