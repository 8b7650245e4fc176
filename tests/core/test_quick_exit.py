"""`trnprof analyze` ends its process without tearing the interpreter down (`cli.QUICK_EXIT`):
same exit codes, output written and flushed, exit handlers run (no scratch folder left)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from trnprof.cli import QUICK_EXIT, _quick_exit


def _trnprof(*args, tmp):
    env = dict(os.environ, TMPDIR=str(tmp), TRNPROF_CACHE_DIR=str(tmp / "cache"))
    return subprocess.run([sys.executable, "-m", "trnprof", *map(str, args)], capture_output=True, text=True, env=env)


def test_analyze_quits_at_once_with_its_output_and_exit_code(sample_run, tmp_path):
    assert "analyze" in QUICK_EXIT
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    done = _trnprof("analyze", sample_run, "--format", "json", "--fail-on", "low", tmp=scratch)
    assert done.returncode == 1, done.stderr  # the sample run's straggler is a finding
    assert json.loads(done.stdout)["findings"]
    written = _trnprof("analyze", sample_run, "--format", "json", "-o", tmp_path / "f.json", tmp=scratch)
    assert written.returncode == 0 and json.loads((tmp_path / "f.json").read_text())["findings"]
    assert not [p for p in scratch.iterdir() if p.name.startswith("trnprof-")]  # the sessions' folders removed


def test_a_usage_error_keeps_its_code_and_line(tmp_path):
    done = _trnprof("analyze", tmp_path / "missing", tmp=tmp_path)
    assert done.returncode == 2 and done.stderr.startswith("error:")


def test_no_quick_exit_under_a_tracer_or_a_profiler(monkeypatch):
    """Coverage and cProfile write their results at the interpreter's exit."""
    monkeypatch.setattr(sys, "gettrace", lambda: object())
    assert _quick_exit(0) is None  # returned: the process goes on
