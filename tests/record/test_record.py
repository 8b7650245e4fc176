"""`trnprof record -- CMD` on real PyTorch jobs (CPU build of torch): the verdicts are checked
against the raw traces the job wrote, or against the same job without the fault."""

from __future__ import annotations

import gzip
import json
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from trnprof import open_run

ROOT = Path(__file__).resolve().parents[2]
SLOW_LOADER = ROOT / "examples" / "train_slow_loader.py"
DDP = Path(__file__).resolve().parent / "record_jobs" / "ddp_gloo.py"
TIMEOUT = 300


def record_cmd(options, command):
    return [sys.executable, "-m", "trnprof", "record", "--neuron", "off", *map(str, options), "--", *map(str, command)]


def record(tmp_path, options, command, env=None):
    return subprocess.run(
        record_cmd(options, command), capture_output=True, text=True, timeout=TIMEOUT, cwd=tmp_path, env=env
    )


def trace_events(path: Path) -> list[dict]:
    with gzip.open(path) as handle:
        return json.load(handle)["traceEvents"]


def loader_share(events: list[dict]) -> float:
    """Share of the ProfilerStep windows spent inside the DataLoader's __next__, from the raw trace."""
    steps = [e for e in events if str(e.get("name", "")).startswith("ProfilerStep#")]
    loads = [e for e in events if "DataLoader" in str(e.get("name", "")) and str(e.get("name")).endswith("__next__")]
    inside = 0.0
    for s in steps:
        start, end = s["ts"], s["ts"] + s["dur"]
        inside += sum(max(0.0, min(end, e["ts"] + e["dur"]) - max(start, e["ts"])) for e in loads)
    return inside / sum(s["dur"] for s in steps)


def steady_input_share(run: Path) -> float:
    with open_run(run) as r:
        return float(r.sql("SELECT SUM(input_wait) / SUM(dur) AS share FROM steady_breakdown")["share"][0])


def findings(run: Path) -> dict:
    """The input pack's findings (the verdicts these jobs are about), by rule name."""
    from trnprof.api import analyze

    return {f.name: f for f in analyze(run, select=["input"]).findings}


def test_slow_loader_recording_gives_input_starvation(tmp_path):
    capture = tmp_path / "capture"
    result = record(
        tmp_path,
        ["-o", "run", "--capture", capture, "--wait", 0, "--warmup", 1, "--active", 4, "--analyze"],
        [sys.executable, SLOW_LOADER, "--steps", 8, "--load-ms", 100],
    )
    assert result.returncode == 0, result.stderr
    assert "IN001 input.starvation" in result.stdout
    assert "captured 1 trace(s)" in result.stdout
    # physics: the loader's own spans in the raw trace set the share of each step spent waiting
    expected = loader_share(trace_events(capture / "trace_rank0.json.gz"))
    measured = steady_input_share(tmp_path / "run")
    assert expected > 0.05  # 100 ms of sleep per batch against a step of a few ms of compute
    assert expected * 0.8 <= measured <= expected + 0.01  # collate ops inside __next__ count as compute
    # the rule's bands (5 %, 20 % of the step) applied to the share the raw trace shows
    line = next(line for line in result.stdout.splitlines() if "IN001 input.starvation" in line)
    assert line.split()[0] == ("HIGH" if measured >= 0.2 else "MEDIUM")
    with open_run(tmp_path / "run") as r:  # host metrics sampled beside the trace
        names = set(r.sql("SELECT DISTINCT name FROM counters")["name"])
    assert {"host.cpu.0.util", "host.process.rss", "host.memory.used"} <= names


def _profile_job(run: Path, load_ms: float) -> None:
    """The example's job through the Python API in this process."""
    import torch

    import trnprof

    sys.path.insert(0, str(SLOW_LOADER.parent))
    try:
        from train_slow_loader import SlowDataset
    finally:
        sys.path.pop(0)
    loader = torch.utils.data.DataLoader(SlowDataset(7 * 16, 32, 16, load_ms), batch_size=16)
    model = torch.nn.Sequential(torch.nn.Linear(32, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    with trnprof.profile(run, wait=0, warmup=1, active=5) as captured:
        for x, y in loader:
            torch.nn.functional.cross_entropy(model(x), y).backward()
            optimizer.step()
            trnprof.step()
    assert captured.summary["ranks"] == 1 and captured.trace is not None


def _verdict(share: float) -> str | None:
    """input.starvation's bands: medium from 5 % of the step, high from 20 %."""
    return "high" if share >= 0.2 else "medium" if share >= 0.05 else None


def test_profile_api_slow_loader_against_the_same_job_without_it(tmp_path):
    """The Python API on the example's job with and without 60 ms of loading per batch: the
    input wait per step grows by the injected time, and each verdict follows its share."""
    _profile_job(tmp_path / "fast", 0.0)
    _profile_job(tmp_path / "slow", 60.0)
    assert not any(".capture" in p.name for p in tmp_path.iterdir())  # profile()'s temp folders, removed
    waits, loads = {}, {}
    for name in ("fast", "slow"):
        with open_run(tmp_path / name) as r:
            waits[name] = float(r.sql("SELECT AVG(input_wait) AS w FROM steady_breakdown")["w"][0]) / 1e6
            loads[name] = (
                float(
                    r.sql(
                        "SELECT SUM(e.dur) / COUNT(DISTINCT b.step) AS l FROM steady_breakdown b "
                        "JOIN steps s ON s.rank = b.rank AND s.step = b.step JOIN events e ON "
                        "e.rank = b.rank AND e.kind = 'input' AND e.ts >= s.ts AND e.ts < s.end_ts"
                    )["l"][0]
                )
                / 1e6
            )
        share = steady_input_share(tmp_path / name)
        assert share <= loader_share(_steps_only(tmp_path / name)) + 0.01  # waiting happens inside the loader
        found = findings(tmp_path / name).get("input.starvation")
        assert (found.severity if found else None) == _verdict(share)
    # ms per step: at least the injected sleep (a sleep never ends early), and no more than what
    # the loader itself took in the same runs (the same-run baseline: a loaded box oversleeps,
    # by however much, in both)
    grown = waits["slow"] - waits["fast"]
    assert 0.95 * 60 <= grown <= 1.05 * (loads["slow"] - loads["fast"]) + 1.0, (waits, loads)


def _steps_only(run: Path) -> list[dict]:
    """The run's step and input events as raw-trace-like dicts (µs), for loader_share."""
    with open_run(run) as r:
        rows = r.sql("SELECT name, ts / 1e3 AS ts, dur / 1e3 AS dur FROM events WHERE kind IN ('step', 'input')")
    return rows.to_dict("records")


def test_exit_code_of_the_command_is_passed_through(tmp_path):
    result = record(
        tmp_path,
        ["-o", "run", "--interval", 0.1],
        [sys.executable, "-c", "import sys, time; time.sleep(0.5); sys.exit(3)"],
    )
    assert result.returncode == 3
    assert "no step seen" in result.stderr  # a run of host metrics only, said so, and why
    assert (tmp_path / "run" / "trnprof.json").is_file()


def test_a_crash_leaves_an_analysable_run_of_the_steps_captured(tmp_path):
    capture = tmp_path / "capture"
    result = record(
        tmp_path,
        ["-o", "run", "--capture", capture, "--wait", 0, "--warmup", 0, "--active", 20],
        [sys.executable, SLOW_LOADER, "--steps", 20, "--load-ms", 20, "--crash-at", 6],
    )
    assert result.returncode == 1
    assert "crash requested at step 6" in result.stderr
    events = trace_events(capture / "trace_rank0.json.gz")
    raw = [e for e in events if str(e.get("name")).startswith("ProfilerStep#")]
    recorded = _recorded(tmp_path / "run")
    assert len(recorded) == len(raw) >= 6  # steps 0..5 ran before the crash
    _interior_whole(recorded)
    assert loader_share(events) >= 0.05  # 20 ms of loading per batch: input bound by the raw trace
    assert "input.starvation" in findings(tmp_path / "run")  # and the run is analysable


def _recorded(run: Path) -> list[bool]:
    """Each recorded step's `partial` flag (view recorded_steps), in time order."""
    with open_run(run) as r:
        return r.sql("SELECT partial FROM recorded_steps ORDER BY ts")["partial"].tolist()


def _interior_whole(partial: list[bool]) -> None:
    """A crash or a stop may cut the step it lands in, which is then left out as partial (so may
    the first, on a loaded machine whose steps vary tenfold); every interior step is whole."""
    assert not any(partial[1:-1]) and partial.count(False) >= 4, partial


def _stop_while_running(tmp_path, sig, target):
    capture = tmp_path / "capture"
    process = subprocess.Popen(
        record_cmd(
            ["-o", "run", "--capture", capture, "--wait", 0, "--warmup", 0, "--active", 50],
            [sys.executable, SLOW_LOADER, "--steps", 400, "--load-ms", 20, "--log-steps"],
        ),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        start_new_session=True,
    )
    for line in process.stdout:
        if line.strip() == "step 5":
            break
    (os.killpg if target == "group" else os.kill)(process.pid, sig)
    out, err = process.communicate(timeout=TIMEOUT)
    return process.returncode, out, err, capture


@pytest.mark.parametrize("sig, target", [(signal.SIGINT, "process"), (signal.SIGTERM, "group")])
def test_stopping_record_keeps_and_ingests_what_was_captured(tmp_path, sig, target):
    code, out, err, capture = _stop_while_running(tmp_path, sig, target)
    assert code == 128 + sig, err
    assert f"stopped by {signal.Signals(sig).name}" in err
    raw = [e for e in trace_events(capture / "trace_rank0.json.gz") if str(e.get("name")).startswith("ProfilerStep#")]
    recorded = _recorded(tmp_path / "run")
    assert len(recorded) == len(raw) < 50  # the steps run before the stop, not a full window
    _interior_whole(recorded)
    assert "input.starvation" in findings(tmp_path / "run")


def test_two_rank_gloo_ddp_under_torchrun(tmp_path):
    result = record(
        tmp_path,
        ["-o", "run", "--wait", 0, "--warmup", 1, "--active", 3],
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--nproc-per-node",
            2,
            "--master-addr",
            "127.0.0.1",
            "--master-port",
            _free_port(),
            DDP,
            "--steps",
            6,
        ],
    )
    assert result.returncode == 0, result.stderr
    assert "captured 2 trace(s)" in result.stdout
    with open_run(tmp_path / "run") as r:
        assert r.info()["world_size"] == 2
        # the active window's 3 steps, the interior one whole (a loaded machine's tenfold step
        # spread may mark either edge one partial, see _interior_whole)
        per_rank = r.sql(
            "SELECT rank, COUNT(*) AS n, list(partial ORDER BY step) AS partial "
            "FROM recorded_steps GROUP BY rank ORDER BY rank"
        )
        matched = r.sql(
            "SELECT MIN(ranks_seen) AS seen FROM collectives WHERE coll_op = 'all_reduce' AND coll_group IS NOT NULL"
        )["seen"][0]
        rss = r.sql("SELECT DISTINCT rank FROM counters WHERE name = 'host.process.rss' ORDER BY rank")
    assert list(per_rank["rank"]) == [0, 1] and list(per_rank["n"]) == [3, 3]
    assert [bool(flags[1]) for flags in per_rank["partial"]] == [False, False], list(per_rank["partial"])
    assert matched == 2  # DDP's gradient all-reduce matched across both ranks
    assert list(rss["rank"]) == [0, 1]  # each rank's own process, found by its RANK


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


FAKE_MONITOR = """#!{python}
import json, sys, time
sys.path.insert(0, {samples!r})
from make_samples import monitor_report
for k in range(1000):
    print(json.dumps(monitor_report(k)), flush=True)
    time.sleep(0.2)
"""


def test_neuron_sidecar_and_environment(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "neuron-monitor"
    fake.write_text(FAKE_MONITOR.format(python=sys.executable, samples=str(ROOT / "tests" / "data" / "neuron")))
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    dump = tmp_path / "env.json"
    child = f"import json, os, time; time.sleep(1.5); json.dump(dict(os.environ), open({str(dump)!r}, 'w'))"
    started = time.time_ns()
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "trnprof",
            "record",
            "--neuron",
            "on",
            "-o",
            "run",
            "--interval",
            "0.2",
            "--",
            sys.executable,
            "-c",
            child,
        ],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        cwd=tmp_path,
        env=env,
    )
    ended = time.time_ns()
    assert result.returncode == 0, result.stderr
    seen = json.loads(dump.read_text())
    assert seen["NEURON_RT_INSPECT_ENABLE"] == "1" and seen["NEURON_RT_INSPECT_SYSTEM_PROFILE"] == "1"
    assert Path(seen["NEURON_RT_INSPECT_OUTPUT_DIR"]).name == "neuron-inspect"
    with open_run(tmp_path / "run") as r:
        utilization = r.sql("SELECT rank, ts, value FROM counters WHERE name = 'nc.utilization' ORDER BY ts, rank")
    assert set(utilization["rank"]) == {0, 1}  # one rank per NeuronCore of the report
    assert len(utilization) >= 4
    # the reports are on the same clock as the traces: inside the recording
    assert started <= utilization["ts"].min() and utilization["ts"].max() <= ended
    assert list(utilization["value"][:2]) == [40.0, 50.0]  # report 0, cores 0 and 1, as the fake printed them
