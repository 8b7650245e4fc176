"""trnprof removes only what it made (issue 34): its temporary and old-run folders carry an owner
marker (purpose, host, PID and the process's start time); a folder of those names without it is
left alone and named in one warning line, and a commit never replaces a run that another writer
committed while it wrote, unless told to overwrite."""

from __future__ import annotations

import os
import shutil

import pytest

from tests.conftest import KINETO
from trnprof import open_run
from trnprof.collectors.synthetic import synthetic_run
from trnprof.errors import TrnprofError
from trnprof.manifest import new_manifest
from trnprof.runstore import OWNER, mark_owner, read_owner, recover, write_run

EVENT = {"rank": 0, "ts": 0, "dur": 10, "kind": "compute", "name": "matmul", "lane": "compute", "step": 0}
TRACE = KINETO / "cpu_only" / "rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz"


def _tiny(path, **kwargs):
    return synthetic_run(path, ranks=2, steps=2, ops_per_step=4, **kwargs)


def _folder_with_a_file(path):
    path.mkdir()
    (path / "notes.txt").write_text("mine")
    return path


def test_a_hidden_tmp_folder_without_the_marker_survives_a_write_with_one_warning(tmp_path, capsys):
    foreign = _folder_with_a_file(tmp_path / ".notes.tmp-build")  # no live PID in the name, no marker
    dead_pid = _folder_with_a_file(tmp_path / ".x.tmp-999999999-abcd1234")  # a dead PID, no marker
    _tiny(tmp_path / "run")
    assert (foreign / "notes.txt").read_text() == "mine" and (dead_pid / "notes.txt").is_file()
    warnings = [line for line in capsys.readouterr().err.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and ".notes.tmp-build" in warnings[0] and "alone" in warnings[0]


@pytest.mark.parametrize("how", ["repair", "force", "next write"])
def test_a_manual_old_backup_beside_a_whole_run_survives(tmp_path, cli, how):
    run = _tiny(tmp_path / "run")
    backup = tmp_path / ".run.old-2024"
    shutil.copytree(run, backup)
    if how == "repair":
        result = cli("check", run, "--repair")
        assert result.exit_code == 0 and "left .run.old-2024" in result.stderr
    elif how == "force":
        _tiny(run, overwrite=True)
    else:
        shutil.rmtree(run)
        _tiny(run)
    assert (backup / "trnprof.json").is_file()
    open_run(backup).close()  # whole


def test_a_manual_old_backup_is_not_restored_in_place_of_a_missing_run(tmp_path, cli):
    run = _tiny(tmp_path / "run")
    backup = tmp_path / ".run.old-2024"
    run.rename(backup)
    result = cli("check", run, "--repair")
    assert result.exit_code == 2 and backup.is_dir() and not run.exists()


def test_a_recycled_pid_is_not_a_live_owner(tmp_path):
    run = _tiny(tmp_path / "run")
    recycled = tmp_path / f".run.tmp-{os.getpid()}-abcd1234"  # our PID, but another start time
    recycled.mkdir()
    mark_owner(recycled, "tmp", pid=os.getpid(), started=1.0)
    live = tmp_path / f".run.tmp-{os.getpid()}-live0000"
    live.mkdir()
    mark_owner(live, "tmp")
    done = recover(run)
    assert not recycled.exists() and live.is_dir() and len(done) == 1


def test_a_marker_of_another_purpose_or_damaged_is_not_ours(tmp_path):
    run = _tiny(tmp_path / "run")
    wrong = tmp_path / ".run.old-999999999-abcd1234"
    wrong.mkdir()
    mark_owner(wrong, "tmp", pid=999999999, started=0.0)  # a tmp marker on an old-run name
    damaged = tmp_path / ".run.tmp-999999999-abcd1234"
    damaged.mkdir()
    (damaged / OWNER).write_text("{not json")
    assert recover(run) == [] and wrong.is_dir() and damaged.is_dir()
    assert read_owner(damaged) is None


def test_the_committed_run_keeps_no_marker_and_a_writer_marks_its_folder(tmp_path):
    writer = write_run(tmp_path / "run", new_manifest("tests.inline"))
    owner = read_owner(writer.tmp)
    assert owner["purpose"] == "tmp" and owner["pid"] == os.getpid() and owner["started"] > 0
    writer.write_events({k: [v] for k, v in EVENT.items()})
    writer.write_ranks({"rank": [0]})
    path = writer.commit()
    assert not (path / OWNER).exists()


def _started_writer(path):
    writer = write_run(path, new_manifest("tests.inline"))
    writer.write_events({k: [v] for k, v in EVENT.items()})
    writer.write_ranks({"rank": [0]})
    return writer


def test_a_second_writer_that_started_before_the_first_committed_fails_and_replaces_nothing(tmp_path):
    target = tmp_path / "run"
    first, second = _started_writer(target), _started_writer(target)
    first.commit()
    reader = open_run(target)  # a reader of the first run, mid-read
    inode = target.stat().st_ino
    with pytest.raises(TrnprofError, match=r"output exists: .*another writer committed a run there") as caught:
        with second:
            pass
    assert "\n" not in str(caught.value) and "--force" in str(caught.value)
    assert target.stat().st_ino == inode and reader.sql("SELECT COUNT(*) AS n FROM events")["n"][0] == 1
    reader.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]  # the second's folder is gone too


def test_a_second_writer_told_to_overwrite_replaces_the_first(tmp_path):
    target = tmp_path / "run"
    first = _started_writer(target)
    second = write_run(target, new_manifest("tests.inline"), overwrite=True)
    second.write_events({k: [v, v] for k, v in EVENT.items()})
    second.write_ranks({"rank": [0]})
    first.commit()
    second.commit()
    with open_run(target) as run:
        assert run.sql("SELECT COUNT(*) AS n FROM events")["n"][0] == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]


def test_the_second_writer_never_replaces_a_folder_that_is_not_a_run_even_when_overwriting(tmp_path):
    target = tmp_path / "run"
    writer = write_run(target, new_manifest("tests.inline"), overwrite=True)
    writer.write_events({k: [v] for k, v in EVENT.items()})
    writer.write_ranks({"rank": [0]})
    _folder_with_a_file(target)  # appeared meanwhile
    with pytest.raises(TrnprofError, match="no trnprof.json"):
        writer.commit()
    assert (target / "notes.txt").read_text() == "mine"


def test_a_concurrent_analyze_of_the_same_trace_keeps_the_first_run_and_its_readers(tmp_path, monkeypatch):
    """Two `analyze TRACE` at once: the one that commits second opens the first's run from the
    shared cache instead of replacing it under the first's reader."""
    from trnprof import runstore
    from trnprof.collectors.ingest import ingest
    from trnprof.collectors.ingest.traces import run_of_traces

    monkeypatch.setenv("TRNPROF_CACHE_DIR", str(tmp_path / "cache"))
    place, readers = runstore.RunWriter._place, []

    def other_command_commits_first(self):
        if not readers:  # the other `analyze TRACE`, started later, finished first and reads its run
            monkeypatch.setattr(runstore.RunWriter, "_place", place)
            ingest([TRACE], self.path)
            readers.append(open_run(self.path))
        return place(self)

    monkeypatch.setattr(runstore.RunWriter, "_place", other_command_commits_first)
    with run_of_traces([TRACE]) as traced:
        assert not traced.ingested
        with open_run(traced.path) as run:
            mine = run.sql("SELECT COUNT(*) AS n FROM events")["n"][0]
    assert readers[0].sql("SELECT COUNT(*) AS n FROM events")["n"][0] == mine > 0
    readers[0].close()
    assert [p.name for p in (tmp_path / "cache" / "runs").iterdir()] == [traced.path.name]


@pytest.mark.parametrize("command", [["simulate", "--preset", "tiny", "--steps", "2"], ["ingest", str(TRACE)]])
def test_a_command_writing_a_run_leaves_a_foreign_hidden_folder_alone(tmp_path, cli, command):
    foreign = _folder_with_a_file(tmp_path / ".cache.tmp-1")
    backup = _folder_with_a_file(tmp_path / ".run.old-2024")
    result = cli(*command, "-o", tmp_path / "run")
    assert result.exit_code == 0, result.stderr
    assert (foreign / "notes.txt").is_file() and (backup / "notes.txt").is_file()
    assert [line for line in result.stderr.splitlines() if "alone" in line] == [
        f"warning: left .cache.tmp-1, .run.old-2024 in {tmp_path} alone: named like trnprof's leftovers, "
        "but without its owner marker (.trnprof-owner), so not made by trnprof"
    ]


def test_force_never_replaces_through_a_symbolic_link(tmp_path):
    real = _tiny(tmp_path / "real")
    (tmp_path / "run").symlink_to(real)
    with pytest.raises(TrnprofError, match="symbolic link"):
        _tiny(tmp_path / "run", overwrite=True)
    assert (tmp_path / "run").is_symlink() and not (real / OWNER).exists()
    open_run(real).close()
