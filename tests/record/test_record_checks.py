"""What `trnprof record` checks before the job starts (no job runs when a check fails), and how
it ends when the command gives it nothing to profile: no torch job here, and the CLI runs in
this process, so these are fast."""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

import pytest

from trnprof import open_run


@pytest.fixture
def trnprof_record(cli, tmp_path, monkeypatch):
    """`trnprof record --neuron off ARGS` in tmp_path, in this process: (returncode, stderr)."""
    monkeypatch.chdir(tmp_path)

    def run(*args):
        result = cli("record", "--neuron", "off", *args)
        result.returncode = result.exit_code
        return result

    return run


def marker_command(tmp_path) -> list[str]:
    """A command that leaves a file behind when it runs: a refused recording never runs it."""
    return [sys.executable, "-c", f"open({str(tmp_path / 'ran')!r}, 'w')"]


def one_error_line(result, *parts) -> str:
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    for part in parts:
        assert part in lines[0], lines[0]
    return lines[0]


def a_run(path: Path) -> Path:
    """A small real run (host metrics ingested), to stand for an earlier recording."""
    from trnprof.collectors.ingest import ingest

    source = path.parent / f"{path.name}.jsonl"
    source.write_text(
        json.dumps({"trnprof_host_metrics": 1})
        + "\n"
        + json.dumps({"ts": 1_700_000_000_000_000_000, "samples": [[0, "host.cpu.0.util", 1.0, "percent"]]})
        + "\n"
    )
    ingest([source], path)
    source.unlink()
    return path


def test_capture_and_run_in_one_place_are_refused_and_nothing_is_deleted(tmp_path, trnprof_record):
    one_error_line(trnprof_record("--capture", "same", "-o", "same", "--", *marker_command(tmp_path)), "overlap")
    run = a_run(tmp_path / "run")
    (run / "cap").mkdir()
    (run / "cap" / "keep.txt").write_text("mine")
    # --force would replace RUN, and the capture inside it with it
    one_error_line(
        trnprof_record("--force", "--capture", "run/cap", "-o", "run", "--", *marker_command(tmp_path)),
        "--capture run/cap",
        "overlap",
    )
    assert (run / "cap" / "keep.txt").read_text() == "mine"
    one_error_line(trnprof_record("--capture", "cap2", "-o", "cap2/run", "--", *marker_command(tmp_path)), "overlap")
    assert not (tmp_path / "ran").exists()


def test_unwritable_or_impossible_paths_are_refused_before_the_job(tmp_path, trnprof_record):
    (tmp_path / "a_file").write_text("x")
    one_error_line(
        trnprof_record("--capture", "cap", "-o", "a_file/run", "--", *marker_command(tmp_path)),
        "output a_file/run",
        "not a folder",
    )
    one_error_line(
        trnprof_record("-o", "run", "--report", "a_file/r.html", "--", *marker_command(tmp_path)),
        "--report a_file/r.html",
        "not a folder",
    )
    one_error_line(
        trnprof_record("-o", "run", "--capture", "a_file/cap", "--", *marker_command(tmp_path)),
        "--capture",
        "not a folder",
    )
    one_error_line(
        trnprof_record("-o", "run", "--report", "run/r.html", "--", *marker_command(tmp_path)), "inside the run"
    )
    assert not (tmp_path / "ran").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a_file"]  # nothing made


def test_an_existing_report_file_is_never_replaced_unless_it_is_a_page_and_force_is_given(tmp_path, trnprof_record):
    script = tmp_path / "train.py"
    script.write_text("print('my training script')\n")
    for force in ([], ["--force"]):
        line = one_error_line(
            trnprof_record(*force, "-o", "run", "--report", "train.py", "--", *marker_command(tmp_path)),
            "--report train.py",
        )
        assert ("not an HTML page" in line) if force else ("--force" in line)
    assert script.read_text() == "print('my training script')\n"
    assert not (tmp_path / "ran").exists()


@pytest.mark.parametrize(
    "env, part",
    [
        ({"RANK": "x1"}, "RANK='x1'"),
        ({"RANK": "99999999999"}, "RANK="),
        ({"RANK": "3", "WORLD_SIZE": "2"}, "RANK=3 is not below WORLD_SIZE=2"),
        ({"WORLD_SIZE": "0"}, "WORLD_SIZE=0"),
    ],
)
def test_ranks_out_of_range_are_refused_before_the_job(tmp_path, trnprof_record, monkeypatch, env, part):
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    result = trnprof_record("-o", "run", "--", *marker_command(tmp_path))
    one_error_line(result, part)
    assert not (tmp_path / "ran").exists()


@pytest.mark.parametrize(
    "option, value",
    [
        ("--interval", "nan"),
        ("--interval", "inf"),
        ("--interval", "-1"),
        ("--interval", "0"),
        ("--max-size", "nan"),
        ("--max-size", "inf"),
        ("--max-size", "0"),
        ("--active", "0"),
        ("--wait", "-1"),
    ],
)
def test_numbers_are_finite_and_in_range(tmp_path, trnprof_record, option, value):
    result = trnprof_record(option, value, "-o", "run", "--", *marker_command(tmp_path))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert f"Invalid value for '{option}'" in result.stderr
    assert not (tmp_path / "ran").exists()


def test_no_step_seen_says_why_keeps_the_exit_code_and_leaves_no_hidden_folder(tmp_path, trnprof_record):
    result = trnprof_record("--interval", "30", "-o", "run", "--", sys.executable, "-c", "import sys; sys.exit(0)")
    assert result.returncode == 0, result.stderr  # the command's code, not trnprof's 2
    assert "no step seen" in result.stderr and "Try:" in result.stderr
    assert "no run written: nothing was captured" in result.stderr
    assert list(tmp_path.iterdir()) == []  # no `.run.capture-*` left behind


def test_a_detached_child_does_not_change_the_exit_code(tmp_path, trnprof_record):
    detach = f"{sys.executable} -c 'import time; time.sleep(2)' > /dev/null 2>&1 &"
    result = trnprof_record("--interval", "0.05", "-o", "run", "--", "sh", "-c", f"{detach} sleep 0.3; exit 0")
    assert result.returncode == 0, result.stderr
    assert "still run after it ended" in result.stderr
    assert (tmp_path / "run" / "trnprof.json").is_file()  # its host metrics


def test_a_trace_cut_short_is_left_out_and_the_rest_ingested(tmp_path):
    """A rank killed while it wrote its trace: the other inputs (host metrics) still make the run."""
    from trnprof.record.capture import Capture
    from trnprof.record.recorder import _ingest

    cut = tmp_path / "trace_rank0.json.gz"
    cut.write_bytes(gzip.compress(b'{"traceEvents": [{"ph": "X", "na'))
    host = tmp_path / "host_metrics.jsonl"
    host.write_text(
        json.dumps({"trnprof_host_metrics": 1})
        + "\n"
        + json.dumps({"ts": 1_700_000_000_000_000_000, "samples": [[0, "host.cpu.0.util", 5.0, "percent"]]})
        + "\n"
    )
    captured = Capture(folder=tmp_path, returncode=130, traces=[cut], inputs=[cut, host])
    summary, error, dropped = _ingest(captured, tmp_path / "run", force=False)
    assert error is None and dropped == [cut]
    with open_run(tmp_path / "run") as run:
        assert run.sql("SELECT COUNT(*) AS n FROM counters")["n"][0] == 1


def test_a_stop_during_the_ingest_keeps_the_capture_and_says_where(tmp_path, trnprof_record, monkeypatch):
    from trnprof.record import recorder

    def interrupted(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr(recorder, "_ingest", interrupted)
    result = trnprof_record(
        "--interval", "0.05", "-o", "run", "--", sys.executable, "-c", "import time; time.sleep(0.3)"
    )
    assert result.exit_code == 130 and "interrupted" in result.stderr
    kept = [p for p in tmp_path.iterdir() if p.name.startswith(".run.capture-")]
    assert len(kept) == 1 and (kept[0] / "host_metrics.jsonl").is_file()
    assert f"the capture is kept in {kept[0].name}" in result.stderr


KILLED_WHILE_WRITING = """
import json, os, signal, time
capture = json.loads(os.environ["TRNPROF_RECORD"])["capture"]
open(os.path.join(capture, "trace_rank0.json.gz"), "wb").close()  # claimed, as the runtime does
open(os.path.join(capture, ".trace_rank0.partial.json.gz"), "wb").write(b"half a trace")
time.sleep(0.3)
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_rank_killed_while_writing_its_trace_is_said_and_the_rest_kept(tmp_path, trnprof_record):
    result = trnprof_record("--interval", "0.05", "-o", "run", "--", sys.executable, "-c", KILLED_WHILE_WRITING)
    assert result.exit_code == 128 + 9, result.stderr
    kept = [p for p in tmp_path.iterdir() if p.name.startswith(".run.capture-")]
    assert len(kept) == 1 and (kept[0] / ".trace_rank0.partial.json.gz").read_bytes() == b"half a trace"
    assert "trace_rank0.json.gz was not finished" in result.stderr and kept[0].name in result.stderr
    assert "no step seen" not in result.stderr
    with open_run(tmp_path / "run") as run:  # the host metrics still make a run
        assert run.sql("SELECT COUNT(*) AS n FROM counters WHERE name = 'host.memory.used'")["n"][0] >= 1
