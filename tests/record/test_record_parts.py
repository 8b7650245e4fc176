"""The parts of `trnprof record` that need no training job: the host-metrics file through the
ingest, the neuron-monitor report stamp, errors caught before the command runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from trnprof import open_run
from trnprof.collectors.ingest import ingest
from trnprof.record.neuron import stamp


def test_host_metrics_file_to_counters_with_every_line_accounted(tmp_path):
    path = tmp_path / "host_metrics.jsonl"
    lines = [
        {"trnprof_host_metrics": 1, "interval_s": 0.5, "host": "node-a", "cpus": 2},
        {
            "ts": 1_700_000_000_000_000_000,
            "samples": [[0, "host.cpu.0.util", 12.5, "percent"], [1, "host.process.rss", 1e9, "bytes"]],
        },
        {"ts": 1_700_000_000_500_000_000, "samples": [[0, "host.cpu.0.util", 50.0, "percent"]]},
        {"ts": "soon", "samples": []},
        {"ts": 1_700_000_001_000_000_000, "samples": [[-1, "host.cpu.0.util", 1.0, "percent"]]},
    ]
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    summary = ingest([path], tmp_path / "run")
    assert summary["counters"] == 3 and summary["quarantine_reasons"] == {"malformed_event": 1, "rank_out_of_range": 1}
    with open_run(tmp_path / "run") as run:
        counters = run.sql("SELECT rank, ts, name, value, unit FROM counters ORDER BY ts, rank")
        ranks = run.sql("SELECT rank, host FROM ranks ORDER BY rank")
        manifest = run.manifest["ingest"]["files"][0]
    assert counters.values.tolist() == [
        [0, 1_700_000_000_000_000_000, "host.cpu.0.util", 12.5, "percent"],
        [1, 1_700_000_000_000_000_000, "host.process.rss", 1e9, "bytes"],
        [0, 1_700_000_000_500_000_000, "host.cpu.0.util", 50.0, "percent"],
    ]
    assert ranks.values.tolist() == [[0, "node-a"], [1, "node-a"]]
    assert manifest["format"] == "trnprof-host-metrics"
    assert manifest["source_entries"] == sum(manifest["to"].values()) == len(lines)


def test_monitor_reports_are_stamped_with_their_arrival():
    assert json.loads(stamp('{"a": 1}\n', 7)) == {"a": 1, "trnprof_received_ns": 7}
    assert json.loads(stamp("{}", 7)) == {"trnprof_received_ns": 7}
    assert stamp("not json", 7) == "not json"  # left for the reader to quarantine


def test_an_existing_output_is_refused_before_the_command_runs(tmp_path):
    (tmp_path / "run").mkdir()
    marker = tmp_path / "ran"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "trnprof",
            "record",
            "-o",
            "run",
            "--",
            sys.executable,
            "-c",
            f"open({str(marker)!r}, 'w')",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert result.returncode == 2 and result.stderr.count("\n") == 1 and "output exists" in result.stderr
    assert not marker.exists()
    missing = subprocess.run(
        [sys.executable, "-m", "trnprof", "record", "-o", "run2", "--", "no-such-command-x"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert (
        missing.returncode == 2
        and missing.stderr.strip().splitlines()[-1] == "error: command not found: no-such-command-x"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]  # no capture folder left behind


def test_host_metrics_sampler_stops_at_the_size_cap(tmp_path):
    import time

    from trnprof.record.hostmetrics import Sampler

    header_and_one = 2_500  # the header and about one sample of this 2-core-or-more host
    sampler = Sampler(tmp_path, os.getpid(), 0.05, max_bytes=header_and_one)
    sampler.start()
    deadline = time.monotonic() + 30
    while not sampler.full and time.monotonic() < deadline:
        time.sleep(0.05)
    sampler.stop()
    assert sampler.full and (tmp_path / "host_metrics.jsonl").stat().st_size <= header_and_one
    rows = [json.loads(line) for line in (tmp_path / "host_metrics.jsonl").read_text().splitlines()[1:]]
    assert len(rows) == sampler.samples >= 1
    for row in rows:  # this process is rank 0's main process: no RANK, the first Python process
        names = {name for rank, name, _, _ in row["samples"] if rank == 0}
        assert {"host.process.rss", "host.cpu.0.util", "host.memory.used"} <= names


def test_a_rank_read_before_its_exec_is_read_again(monkeypatch):
    """torchrun forks each rank before exec sets its RANK; a listing in between must not hide that
    rank for the rest of the job, and the sampler lists again until the node's ranks are all found."""
    import psutil

    from trnprof.record import hostmetrics

    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        reads = iter([None, (1, 2)])  # the child is first seen with its parent's environment
        monkeypatch.setattr(
            hostmetrics,
            "_rank_of",
            lambda p: (0, 2) if p.pid == os.getpid() else next(reads, (1, 2)) if p.pid == child.pid else None,
        )
        known: dict = {}
        first = hostmetrics.rank_processes(psutil.Process(), known)
        assert sorted(first) == [0] and first[0][1] == []  # no RANK yet: not counted as anyone's
        again = hostmetrics.rank_processes(psutil.Process(), known)
        assert sorted(again) == [0, 1] and again[1][0].pid == child.pid
    finally:
        child.kill()
        child.wait()


def test_the_ranks_are_looked_for_at_every_sample_until_one_is_found(tmp_path, monkeypatch):
    """torchrun may take seconds (importing torch, meeting its peers) before it starts the ranks:
    until a process with a RANK is found, the tree is listed at every sample, not every 5 s."""
    from trnprof.record import hostmetrics

    listings = []
    monkeypatch.setattr(hostmetrics, "rank_processes", lambda root, known: listings.append(1) or {})
    sampler = hostmetrics.Sampler(tmp_path, os.getpid(), 0.05)
    for sample in range(4):
        sampler.samples = sample
        sampler._per_rank()
    assert len(listings) == 4


def test_the_job_memory_log_reads_every_early_step_then_thins(tmp_path):
    """A short job of fast steps still gets a reading per step (a trend needs several); a long
    one is read at most every MARK_GAP_NS and thinned past MAX_MARKS, so the log stays bounded."""
    from trnprof.record.runtime import JobLog

    log = JobLog(str(tmp_path))
    for _ in range(30):
        log.step()  # microseconds apart
    assert [n for _, n, _ in log.marks] == list(range(1, 31)) and all(rss > 0 for _, _, rss in log.marks)
    log.MAX_MARKS, log.steps, log.last = 40, 10**6, 0
    for _ in range(12):
        log.last = 0  # as if MARK_GAP_NS had passed each time
        log.step()
    assert len(log.marks) <= 40 and log.gap == 2 * JobLog.MARK_GAP_NS
    log.profiling(True)
    log.profiling(False)
    written = log.write()
    assert written == tmp_path / "job_rank0.jsonl"
    lines = [json.loads(line) for line in written.read_text().splitlines()]
    assert lines[0]["trnprof_host_metrics"] == 1
    names = [name for line in lines[1:] for _, name, _, _ in line["samples"]]
    assert names.count("job.profiler") == 2 and names.count("job.rss") == len(log.marks)
