"""The CLI's one convention: a command that produces a document has `--format` and `-o`, a command
that opens a run has `--engine` and `--threads`, and `-o FILE` holds what standard output shows."""

from __future__ import annotations

import json

import click
import pytest

from trnprof.cli import main
from trnprof.exitcodes import Exit

DOCUMENT_COMMANDS = ["analyze", "check", "diff", "export", "info", "query", "whatif", "rules list"]
RUN_OPENING_COMMANDS = ["analyze", "diff", "export", "info", "query", "report", "whatif"]


def _command(path: str) -> click.Command:
    ctx = click.Context(main)
    command = main
    for name in path.split():
        command = command.get_command(ctx, name)
    return command


def _options(path: str) -> set[str]:
    return {
        opt
        for param in _command(path).params
        if isinstance(param, click.Option) and not param.hidden
        for opt in param.opts
    }


@pytest.mark.parametrize("path", DOCUMENT_COMMANDS)
def test_document_commands_have_format_and_output(path):
    assert {"--format", "-o", "--output"} <= _options(path)


@pytest.mark.parametrize("path", RUN_OPENING_COMMANDS)
def test_run_opening_commands_have_engine_and_threads(path):
    assert {"--engine", "--threads"} <= _options(path)


def test_format_names_an_output_format_everywhere():
    assert "--format" not in _options("ingest") and "--input-format" in _options("ingest")
    assert "--job" in _options("whatif")  # --config is the rules and engine config, as elsewhere


@pytest.mark.parametrize(
    "args",
    [["info", "{run}", "--format", "json"], ["query", "{run}", "SELECT COUNT(*) AS n FROM steps", "--format", "json"]],
)
def test_output_file_holds_what_stdout_shows(cli, sample_run, tmp_path, args):
    args = [a.format(run=sample_run) for a in args]
    shown = cli(*args)
    assert shown.exit_code == Exit.OK
    written = cli(*args, "-o", tmp_path / "out.json")
    assert written.exit_code == Exit.OK and written.output == ""
    assert json.loads((tmp_path / "out.json").read_text()) == json.loads(shown.output)


def test_an_output_folder_that_is_missing_fails_before_any_work(cli, sample_run, tmp_path):
    result = cli("info", sample_run, "-o", tmp_path / "nope" / "info.txt")
    assert result.exit_code == Exit.USAGE and "does not exist" in result.output
