"""A real straggler under `trnprof record` (issue 35): a 2-rank DDP job on gloo whose rank 1
spends ~100 ms per step in pure Python (or asleep) before each step's work, which no profiler op
records (tests/critical_path/jobs/straggler_gloo.py). The job itself measures that time on the
late rank (perf_counter around it, per step). SC001 must name rank 1 and claim the peers' wait
within 25 % of it, sized by arrival skew at the all-reduce; and the replay of its fix (rank 1 at
its peer's pace, untraced time included) must take most of that delay off the step."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from trnprof.api import analyze, open_run
from trnprof.critical_path import scale
from trnprof.whatif.replay import Priced

JOB = Path(__file__).resolve().parent / "jobs" / "straggler_gloo.py"
# the record skips step 0, warms up on step 1 and keeps steps 2-6: five steady steps, the fewest
# in which a rank late in every one passes SC001's sign test (5 of 5)
STEPS, WARMUP, ACTIVE = 7, 1, 5


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _record(tmp_path: Path, delay: list[str]) -> tuple[Path, float]:
    """The recorded run and the late rank's own mean delay over the recorded steps, ms."""
    report = tmp_path / "delays.json"
    command = [
        sys.executable,
        "-m",
        "trnprof",
        "record",
        "--neuron",
        "off",
        "-o",
        tmp_path / "run",
        "--wait",
        0,
        "--warmup",
        WARMUP,
        "--active",
        ACTIVE,
        "--",
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nproc-per-node",
        2,
        "--master-addr",
        "127.0.0.1",
        "--master-port",
        _free_port(),
        JOB,
        "--steps",
        STEPS,
        *delay,
        "--report",
        report,
    ]
    result = subprocess.run([str(c) for c in command], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    return tmp_path / "run", float(np.mean(json.loads(report.read_text())[1 + WARMUP :]))


@pytest.mark.parametrize("delay", [["--python-ms", "100"], ["--sleep-ms", "100"]], ids=["python", "sleep"])
def test_a_rank_late_by_untraced_time_is_named_and_sized(tmp_path, delay):
    run, late_ms = _record(tmp_path, delay)
    straggler = [f for f in analyze(run, select=["scale"]).findings if f.name == "scale.straggler"]
    assert [f.ranks for f in straggler] == [[1]], [f.message for f in straggler]
    claim_ms = straggler[0].impact.measured_seconds_per_step * 1e3
    print(
        f"{delay[0]}: rank 1 late {late_ms:.1f} ms per step (its own clock), SC001 claims {claim_ms:.1f} ms, "
        f"{straggler[0].severity}"
    )
    assert claim_ms == pytest.approx(late_ms, rel=0.25)
    assert straggler[0].severity in ("medium", "high")
    with open_run(run) as opened:
        priced = Priced(opened, breakdown=False)
        fixed_s = priced.predict([scale.parse("rank:1=peers")], path=False)[0]
    # the fix takes at least 75 % of the delay off the replayed step
    assert priced.base_s - fixed_s >= 0.75 * late_ms / 1e3, (priced.base_s, fixed_s)
