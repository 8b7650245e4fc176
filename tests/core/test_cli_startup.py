"""What `trnprof` costs before a command starts: `--version` and `--help` load no heavy library
(duckdb, pandas, pyarrow), the help they list is the help each command prints itself, and a
command loads only what it uses (a Kineto ingest: no duckdb)."""

from __future__ import annotations

import json
import subprocess
import sys

import click
import pytest

from tests.conftest import REPO
from trnprof.cli import _listing, main

HEAVY = ("duckdb", "pandas", "pyarrow", "numpy")

# runs the CLI in a fresh interpreter, then prints which heavy modules it loaded
PROBE = """
import json
import sys
from trnprof.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print("LOADED", json.dumps(sorted(m for m in {heavy!r} if m in sys.modules)))
"""


def _loaded(*args: str) -> tuple[list[str], str]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE.format(heavy=HEAVY), *args], capture_output=True, text=True, check=True
    )
    last = done.stdout.strip().splitlines()[-1]
    assert last.startswith("LOADED"), done.stdout
    return json.loads(last.removeprefix("LOADED")), done.stdout


@pytest.mark.parametrize("args", [("--version",), ("--help",), ("-h",), ("no-such-command",)])
def test_startup_loads_no_heavy_library(args):
    loaded, output = _loaded(*args)
    assert loaded == [], f"trnprof {' '.join(args)} imported {loaded}"
    if args == ("--help",):
        assert all(name in output for name in _listing.names())


def test_the_listing_shows_each_commands_own_help():
    """`trnprof --help` reads the help from the source; it must match what the command says."""
    ctx = main.make_context("trnprof", [], resilient_parsing=True)
    names = main.list_commands(ctx)
    assert {"analyze", "ingest", "report", "rules"} <= set(names)
    for name in names:
        command = main.get_command(ctx, name)
        assert isinstance(command, click.Command) and command.name == name
        for limit in (30, 45, 90):
            assert _listing.short_help(name, limit) == command.get_short_help_str(limit), name


def test_an_unknown_command_is_one_line_and_exit_2(cli):
    result = cli("no-such-command")
    assert result.exit_code == 2 and "No such command" in result.output


def test_a_duckdb_error_in_a_command_is_one_line_and_exit_2(cli, sample_run, monkeypatch):
    """The group catches duckdb.Error without importing duckdb itself: once a command has."""
    import duckdb

    import trnprof.cli.info as info

    def unreadable(*args, **kwargs):
        raise duckdb.IOException("IO Error: no magic bytes\nsecond line")

    monkeypatch.setattr(info, "run_info", unreadable)
    result = cli("info", str(sample_run))
    assert result.exit_code == 2
    assert result.output.strip() == "error: reading the run failed: IO Error: no magic bytes"


def test_ingesting_a_kineto_trace_loads_no_duckdb(tmp_path):
    """A command imports only what it uses: a Kineto ingest needs Arrow, not the query engine
    (nor the Neuron readers, which do)."""
    trace = REPO / "tests" / "data" / "kineto" / "critical_path" / "alexnet"
    source = next(trace.glob("*.json.gz"))
    loaded, output = _loaded("ingest", str(source), "-o", str(tmp_path / "run"))
    assert "1 rank(s) from 1 input(s)" in output
    assert "duckdb" not in loaded and "pyarrow" in loaded


def test_analyze_of_a_run_loads_only_what_it_uses(sample_run, tmp_path):
    """`trnprof analyze RUN` is one call into `trnprof.api`, whose names load on first use: no
    ingest, simulator, diff or report code, and of the API only its findings module."""
    prefixes = (
        "trnprof.collectors.ingest",
        "trnprof.collectors.trn1",
        "trnprof.diff",
        "trnprof.report",
        "trnprof.api.",
    )
    probe = PROBE.replace(
        "m for m in {heavy!r} if m in sys.modules", "m for m in sys.modules if m.startswith({heavy!r})"
    )
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            probe.format(heavy=prefixes),
            "analyze",
            str(sample_run),
            "-o",
            str(tmp_path / "findings.txt"),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert (tmp_path / "findings.txt").read_text()
    loaded = json.loads(done.stdout.strip().splitlines()[-1].removeprefix("LOADED"))
    assert loaded == ["trnprof.api.ahead", "trnprof.api.findings", "trnprof.api.traces"]  # ahead: stdlib only
