"""Every `-o` follows one overwrite contract (issue 34, docs/cli.md): an existing output is replaced
only with --force, the write is whole or nothing, and `trnprof demo -o DIR` replaces only an
earlier demo's outputs."""

from __future__ import annotations

import json
import sys

import pytest

from trnprof import atomic, open_run
from trnprof.collectors.synthetic import synthetic_run
from trnprof.errors import TrnprofError


def _tiny(path):
    return synthetic_run(path, ranks=2, steps=2, ops_per_step=4)


def test_report_refuses_an_existing_file_without_force(sample_run, tmp_path, cli):
    mine = tmp_path / "notes.html"
    mine.write_text("my notes")
    result = cli("report", sample_run, "-o", mine)
    assert result.exit_code == 2 and result.stderr.strip().splitlines() == [
        f"error: output exists: {mine} (choose another path or pass --force to replace it)"
    ]
    assert mine.read_text() == "my notes"


@pytest.mark.parametrize(
    "args",
    [
        ["info", "{run}"],
        ["query", "{run}", "SELECT 1 AS one"],
        ["check", "{run}"],
        ["diff", "{run}", "{run}"],
        ["rules", "list"],
    ],
)
def test_a_document_output_is_replaced_only_with_force(sample_run, tmp_path, cli, args):
    mine = tmp_path / "mine.txt"
    mine.write_text("my notes")
    args = [a.format(run=sample_run) for a in args]
    refused = cli(*args, "-o", mine)
    assert refused.exit_code == 2 and "output exists" in refused.stderr and mine.read_text() == "my notes"
    assert cli(*args, "-o", mine, "--force").exit_code == 0 and mine.read_text() != "my notes"


def test_a_write_without_force_never_replaces_a_file_that_appeared_meanwhile(tmp_path):
    target = tmp_path / "out.html"
    with pytest.raises(TrnprofError, match="output exists"):
        with atomic.replacing(target, overwrite=False) as tmp:
            tmp.write_text("mine")
            target.write_text("another writer's")  # appeared while this one worked
    assert target.read_text() == "another writer's" and [p.name for p in tmp_path.iterdir()] == ["out.html"]
    atomic.write_text(tmp_path / "new.html", "x", overwrite=False)
    assert (tmp_path / "new.html").read_text() == "x"


def test_demo_refuses_a_folder_holding_a_run_it_did_not_write(tmp_path, cli):
    out = tmp_path / "demo"
    run = _tiny(out / "run")
    (out / "report.html").write_text("my report")
    result = cli("demo", "-o", out)
    assert result.exit_code == 2 and "earlier trnprof demo did not write" in result.stderr
    assert open_run(run).manifest["world_size"] == 2 and (out / "report.html").read_text() == "my report"
    assert sorted(p.name for p in out.iterdir()) == ["report.html", "run"]


def test_demo_refuses_a_file(tmp_path, cli):
    (tmp_path / "demo").write_text("x")
    result = cli("demo", "-o", tmp_path / "demo")
    assert result.exit_code == 2 and "not a folder" in result.stderr


def test_demo_replaces_an_earlier_demo_only_and_writes_whole_files(tmp_path, cli):
    out = tmp_path / "demo"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    assert cli("demo", "-o", out, "--force").exit_code == 0  # a folder that is not a demo's: with --force
    first = (out / "analyze.json").stat().st_ino
    with (out / "analyze.json").open("rb") as reader:  # a reader of the first demo's findings
        again = cli("demo", "-o", out)  # now an earlier demo: replaced without --force
        assert again.exit_code == 0, again.stderr
        assert json.loads(reader.read())["findings"]  # read whole
    assert (out / "analyze.json").stat().st_ino != first  # renamed into place, never rewritten in place
    assert (out / "notes.txt").read_text() == "mine"
    assert sorted(p.name for p in out.iterdir()) == [".trnprof-demo", "analyze.json", "notes.txt", "report.html", "run"]
    open_run(out / "run").close()


def test_record_refuses_an_existing_report_file_before_the_job_runs(tmp_path, cli):
    mine, ran = tmp_path / "r.html", tmp_path / "ran"
    mine.write_text("my report")
    result = cli(
        "record", "-o", tmp_path / "run", "--report", mine, "--", sys.executable, "-c", f"open({str(ran)!r}, 'w')"
    )
    assert result.exit_code == 2 and "output exists" in result.stderr
    assert not ran.exists() and mine.read_text() == "my report"


def test_rules_docs_replaces_only_pages_it_wrote(tmp_path, cli):
    mine = tmp_path / "index.md"
    mine.write_text("# my own index\n")
    refused = cli("rules", "docs", "-o", tmp_path)
    assert refused.exit_code == 2 and "output exists" in refused.stderr
    assert [p.name for p in tmp_path.iterdir()] == ["index.md"] and mine.read_text() == "# my own index\n"
    assert cli("rules", "docs", "-o", tmp_path, "--force").exit_code == 0
    assert cli("rules", "docs", "-o", tmp_path).exit_code == 0  # its own pages: replaced
    assert cli("rules", "docs", "--check", "-o", tmp_path).exit_code == 0
