"""A name with bytes that are not UTF-8 (a file named b'run\\xff') is one error line, never a
traceback: on the command line (input or output), or found inside an input folder."""

from __future__ import annotations

import os
import shutil

import pytest

from tests.conftest import DATA

BAD = os.fsdecode(b"run\xff")  # how Python hands such a name over: surrogate-escaped


@pytest.mark.parametrize(
    "args",
    [
        ["info", BAD],
        ["check", BAD],
        ["analyze", BAD],
        ["whatif", BAD, "--scale", "compute=2"],
        ["ingest", BAD, "-o", "out"],
        ["simulate", "--preset", "tiny", "-o", BAD],
        ["info", "{run}", "-o", BAD],
        ["export", "{run}", "-o", BAD],
    ],
)
def test_a_non_utf8_argument_is_one_error_line(args, cli, sample_run, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = cli(*[str(sample_run) if a == "{run}" else a for a in args])
    assert result.exit_code == 2 and result.stderr.strip().splitlines() == [
        "error: argument 'run\\xff' is not UTF-8 text: trnprof reads and writes UTF-8 names only "
        "(rename the file or folder)"
    ]
    assert not list(tmp_path.iterdir())  # nothing written


def test_a_non_utf8_name_inside_an_input_folder_is_one_error_line(cli, tmp_path):
    folder = tmp_path / "traces"
    folder.mkdir()
    shutil.copy(DATA / "kineto_ddp" / "base" / "rank1.json.gz", folder)
    shutil.copy(DATA / "kineto_ddp" / "base" / "rank0.json.gz", os.path.join(folder, os.fsdecode(b"rank0\xff.json.gz")))
    result = cli("ingest", folder, "-o", tmp_path / "run")
    assert result.exit_code == 2 and result.stderr.strip().splitlines() == [
        "error: a name is not UTF-8 text ('rank0\\xff.json.gz'): trnprof reads and writes UTF-8 names only "
        "(rename the file or folder)"
    ]
