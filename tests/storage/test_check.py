"""Run integrity: a run whose files differ from its manifest is refused on open with one line,
`trnprof check` verifies every file, `--repair` undoes what an interrupted writer left."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.conftest import REPO
from trnprof.api import open_run
from trnprof.collectors.synthetic import synthetic_run
from trnprof.errors import NotARunError
from trnprof.runstore import mark_owner, recover


@pytest.fixture
def run(tmp_path) -> Path:
    return synthetic_run(tmp_path / "run", ranks=4, steps=3, ops_per_step=8)


def first_part(run: Path, table: str = "events") -> Path:
    return sorted((run / table).glob("rank=*/*.parquet"))[0]


def edit_manifest(run: Path, change) -> None:
    manifest = json.loads((run / "trnprof.json").read_text())
    change(manifest)
    (run / "trnprof.json").write_text(json.dumps(manifest))


def test_the_manifest_lists_every_parquet_file_with_rows_and_bytes(run):
    parts = json.loads((run / "trnprof.json").read_text())["parts"]
    on_disk = {p.relative_to(run).as_posix(): p.stat().st_size for p in run.rglob("*.parquet")}
    assert {path: size for path, (_, size) in parts.items()} == on_disk
    manifest = json.loads((run / "trnprof.json").read_text())
    assert sum(rows for path, (rows, _) in parts.items() if path.startswith("events/")) == manifest["counts"]["events"]


@pytest.mark.parametrize(
    "damage, message",
    [
        (lambda run: first_part(run).unlink(), r"1 file\(s\) missing \(events/rank=0/"),
        (
            lambda run: shutil.copy(first_part(run), first_part(run).with_name("copy.parquet")),
            r"1 file\(s\) not written with the run \(events/rank=0/copy.parquet\)",
        ),
        (lambda run: shutil.rmtree(run / "events"), r"4 file\(s\) missing"),
        (lambda run: (run / "ranks.parquet").unlink(), r"missing \(ranks.parquet\)"),
        (
            lambda run: first_part(run, "counters").write_bytes(first_part(run, "counters").read_bytes()[:-100]),
            r"1 file\(s\) changed size",
        ),
    ],
)
def test_a_damaged_run_is_refused_on_open_with_one_line(run, cli, damage, message):
    damage(run)
    with pytest.raises(NotARunError, match=message):
        open_run(run)
    for command in (["info", run], ["query", run, "SELECT 1"], ["analyze", run]):
        result = cli(*command)
        assert result.exit_code == 2 and len(result.stderr.strip().splitlines()) == 1, command
        assert "damaged run" in result.stderr


def test_a_derived_folder_inside_a_run_is_not_part_of_it(run, cli):
    (run / "derived").mkdir()
    shutil.copy(run / "ranks.parquet", run / "derived" / "cache.parquet")
    open_run(run).close()
    assert cli("check", run).exit_code == 0


def test_check_reads_every_file_and_finds_a_same_size_corruption(run, cli):
    assert cli("check", run).exit_code == 0
    part = first_part(run, "counters")
    data = bytearray(part.read_bytes())
    data[8:40] = bytes(32)  # same size: the open check cannot see it, the full check must
    part.write_bytes(bytes(data))
    result = cli("check", run)
    assert result.exit_code == 2
    assert "counters/rank=0/" in result.stderr and "unreadable" in result.stderr


def test_check_reports_json(run, cli):
    first_part(run).unlink()
    result = cli("check", run, "--format", "json")
    document = json.loads(result.stdout)
    assert result.exit_code == 2 and not document["ok"]
    assert any("missing" in p for p in document["problems"])


@pytest.mark.parametrize(
    "change, field",
    [
        (lambda m: m.__setitem__("job", [1]), "job"),
        (lambda m: m.__setitem__("stats", "x"), "stats"),
        (lambda m: m["stats"].__setitem__("events_by_kind", {"compute": "many"}), "stats.events_by_kind"),
        (lambda m: m.__setitem__("world_size", -3), "world_size"),
        (lambda m: m["source"].pop("collector"), "source"),
        (lambda m: m["parts"].__setitem__("ranks.parquet", "big"), "parts"),
    ],
)
def test_a_manifest_of_the_wrong_shape_is_one_error(run, cli, change, field):
    edit_manifest(run, change)
    with pytest.raises(NotARunError, match=rf"damaged manifest .*trnprof.json: {field}"):
        open_run(run)
    result = cli("info", run)
    assert result.exit_code == 2 and result.stderr.startswith("error: damaged manifest")


def test_an_interrupted_force_commit_is_restored(run, cli, tmp_path):
    aside = tmp_path / ".run.old-999999999-abcd1234"  # a pid no process has
    run.rename(aside)
    mark_owner(aside, "old", pid=999999999, started=0.0)
    result = cli("info", run)
    assert result.exit_code == 2 and "trnprof check" in result.stderr and "--repair" in result.stderr
    result = cli("check", run, "--repair")
    assert result.exit_code == 0 and "restored" in result.stdout
    assert not aside.exists()
    open_run(run).close()


def test_the_next_writer_restores_an_interrupted_commit_before_anything_else(run, tmp_path):
    aside = tmp_path / ".run.old-999999999-abcd1234"
    run.rename(aside)
    mark_owner(aside, "old", pid=999999999, started=0.0)
    with pytest.raises(Exception, match="output exists"):  # restored, so not silently replaced
        synthetic_run(run, ranks=2, steps=2, ops_per_step=4)
    assert open_run(run).manifest["world_size"] == 4


def test_leftovers_of_dead_writers_are_removed(run, tmp_path):
    stale_tmp = tmp_path / ".other.tmp-999999999-abcd1234"
    stale_tmp.mkdir()
    mark_owner(stale_tmp, "tmp", pid=999999999, started=0.0)
    (stale_tmp / ".scratch").mkdir()
    (stale_tmp / ".scratch" / ".trnprof-spill-x.arrows").write_bytes(b"x" * 10)
    live_tmp = tmp_path / f".other.tmp-{os.getpid()}-abcd1234"
    live_tmp.mkdir()
    mark_owner(live_tmp, "tmp")
    other_host = tmp_path / ".other.tmp-999999998-abcd1234"
    other_host.mkdir()
    mark_owner(other_host, "tmp", pid=999999998, started=0.0)
    marker = json.loads((other_host / ".trnprof-owner").read_text())
    (other_host / ".trnprof-owner").write_text(json.dumps({**marker, "host": "another-host.example"}))
    old = tmp_path / ".run.old-999999999-abcd1234"
    old.mkdir()
    mark_owner(old, "old", pid=999999999, started=0.0)
    done = recover(run)
    assert not stale_tmp.exists() and not old.exists() and run.exists()
    assert live_tmp.exists() and other_host.exists()  # alive, or not ours to judge
    assert len(done) == 2


def test_a_killed_force_commit_between_the_renames_leaves_a_recoverable_run(tmp_path):
    """The writer is killed right after moving the old run aside: the run is restored whole."""
    run = synthetic_run(tmp_path / "run", ranks=2, steps=2, ops_per_step=4)
    script = textwrap.dedent(f"""
        import os, signal
        from pathlib import Path
        import trnprof.runstore as rs
        from trnprof.collectors.synthetic import synthetic_run
        original = Path.rename
        def rename(self, target):
            result = original(self, target)
            if ".old-" in str(target):
                os.kill(os.getpid(), signal.SIGKILL)
            return result
        Path.rename = rename
        synthetic_run({str(run)!r}, ranks=3, steps=2, ops_per_step=4, overwrite=True)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True)
    assert done.returncode == -9 and not run.exists()
    assert recover(run)[0].startswith("restored")
    with open_run(run) as opened:
        assert opened.manifest["world_size"] == 2
    assert [p.name for p in tmp_path.iterdir()] == ["run"]


def test_check_accepts_files_without_later_nullable_columns_but_not_without_required_ones(run, cli):
    import pyarrow.parquet as pq

    part = first_part(run)
    pq.write_table(pq.read_table(part).drop_columns(["coll_ranks"]), part)
    edit_manifest(run, lambda m: m.pop("parts"))  # as a run written before parts were kept
    assert cli("check", run).exit_code == 0
    pq.write_table(pq.read_table(part).drop_columns(["kind"]), part)
    result = cli("check", run)
    assert result.exit_code == 2 and "lacks required column(s) kind" in result.stderr


def test_the_shipped_sample_runs_are_whole(cli):
    for name in ("synthetic-8rank", "tiny-slow-loader"):
        result = cli("check", REPO / "sample_traces" / name)
        assert result.exit_code == 0, result.stderr


def test_force_replaces_a_damaged_run(run):
    first_part(run).unlink()
    edit_manifest(run, lambda m: m.__setitem__("job", [1]))
    synthetic_run(run, ranks=2, steps=2, ops_per_step=4, overwrite=True)
    with open_run(run) as opened:
        assert opened.manifest["world_size"] == 2


def test_check_finds_a_flipped_bit_in_page_data(run, cli):
    import pyarrow.parquet as pq

    part = first_part(run)
    data = bytearray(part.read_bytes())
    column = pq.ParquetFile(part).metadata.row_group(0).column(1)  # ts
    data[column.data_page_offset + column.total_compressed_size - 3] ^= 0x01  # inside the page data
    part.write_bytes(bytes(data))
    result = cli("check", run)
    assert result.exit_code == 2 and "events/rank=0/" in result.stderr
