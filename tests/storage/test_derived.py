"""The derived/ cache in the run folder: reused, keyed by content, written atomically."""

import os

import pytest

from trnprof import batches, derived, open_run
from trnprof.collectors.synthetic import synthetic_run
from trnprof.derived import FOLDER


@pytest.fixture
def run_path(tmp_path, monkeypatch):
    monkeypatch.delenv("TRNPROF_CACHE", raising=False)
    return synthetic_run(tmp_path / "run", ranks=4, steps=3, ops_per_step=10, seed=1)


def _entries(run_path):
    """The cache entries (one per key) and the views each holds."""
    root = run_path / FOLDER
    return (
        {key.name: sorted(p.name for p in key.iterdir() if p.is_dir()) for key in root.iterdir()}
        if root.is_dir()
        else {}
    )


def _refuse_to_compute(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("recomputed a view the cache holds")

    monkeypatch.setattr(batches, "_store_local", refuse)
    monkeypatch.setattr(batches, "_store_whole", refuse)


def test_a_second_session_reads_the_stored_views_instead_of_recomputing(run_path, monkeypatch):
    with open_run(run_path) as run:
        first = run.sql("SELECT * FROM rank_summary ORDER BY rank")
    ((key, views),) = _entries(run_path).items()
    assert {"steps", "step_breakdown", "rank_summary"} <= set(views)
    assert all(not v.startswith(".") for v in views)  # no staging folder left behind
    _refuse_to_compute(monkeypatch)
    with open_run(run_path) as run:
        again = run.sql("SELECT * FROM rank_summary ORDER BY rank")
    assert again.equals(first)


def test_a_changed_run_or_stdlib_gets_a_new_entry_and_the_old_one_is_removed(run_path, monkeypatch):
    with open_run(run_path) as run:
        run.sql("SELECT COUNT(*) FROM step_breakdown")
    (old,) = _entries(run_path)
    part = next((run_path / "events").glob("rank=0/*.parquet"))
    os.utime(part, ns=(part.stat().st_atime_ns, part.stat().st_mtime_ns + 1_000_000_000))  # the run changed
    with open_run(run_path) as run:
        run.sql("SELECT COUNT(*) FROM step_breakdown")
    (new,) = _entries(run_path)
    assert new != old
    monkeypatch.setattr(derived, "__version__", "0.0.0-other")  # as after an upgrade
    derived.stdlib_fingerprint.cache_clear()
    try:
        with open_run(run_path) as run:
            run.sql("SELECT COUNT(*) FROM steps")
        (third,) = _entries(run_path)
    finally:
        derived.stdlib_fingerprint.cache_clear()
    assert third not in (old, new)


def test_a_failed_computation_leaves_no_entry_that_looks_whole(run_path, monkeypatch):
    calls = []

    def fail_on_second_batch(con, names, staging, index):
        calls.append(index)
        if index == 1:
            raise KeyboardInterrupt
        original(con, names, staging, index)

    original = batches._compute_batch
    monkeypatch.setattr(batches, "_compute_batch", fail_on_second_batch)
    monkeypatch.setattr(batches, "BATCH_SHARE", 1e-12)  # one rank per batch
    with open_run(run_path) as run, pytest.raises(KeyboardInterrupt):
        run.sql("SELECT COUNT(*) FROM step_breakdown")
    assert calls == [0, 1]
    assert all(views == [] for views in _entries(run_path).values())
    monkeypatch.setattr(batches, "_compute_batch", original)
    with open_run(run_path) as run:  # and the next session computes it
        assert int(run.sql("SELECT COUNT(*) FROM step_breakdown").iloc[0, 0]) == 12


def test_an_unwritable_run_folder_is_analysed_without_a_cache(run_path, monkeypatch):
    (run_path / FOLDER).write_text("not a folder")  # as on read-only media: the cache cannot be made
    with open_run(run_path) as run:
        rows = run.sql("SELECT COUNT(*) AS n FROM step_breakdown").iloc[0, 0]
    assert rows == 12 and (run_path / FOLDER).read_text() == "not a folder"


def test_the_cache_can_be_turned_off(run_path, monkeypatch):
    monkeypatch.setenv("TRNPROF_CACHE", "off")
    with open_run(run_path) as run:
        assert int(run.sql("SELECT COUNT(*) FROM step_breakdown").iloc[0, 0]) == 12
    assert not (run_path / FOLDER).exists()


def test_cli_query_analyze_and_report_share_one_computation(run_path, cli, tmp_path, monkeypatch):
    assert cli("query", run_path, "SELECT COUNT(*) AS n FROM step_breakdown").exit_code == 0
    assert cli("analyze", run_path, "--format", "json").exit_code == 0
    assert cli("report", run_path, "-o", tmp_path / "r.html").exit_code == 0  # adds the header's outlier_steps
    _refuse_to_compute(monkeypatch)
    assert cli("query", run_path, "SELECT COUNT(*) AS n FROM step_breakdown").exit_code == 0
    assert cli("analyze", run_path, "--format", "json").exit_code == 0
    assert cli("report", run_path, "-o", tmp_path / "r2.html").exit_code == 0


@pytest.mark.parametrize("several_batches", [True, False])
def test_a_sweep_over_several_batches_stores_every_rank_local_view_and_a_cheap_query_no_sweep(
    run_path, monkeypatch, several_batches
):
    monkeypatch.setattr(batches, "BATCH_SHARE", 1e-12 if several_batches else 1e6)  # a rank a batch, or one
    with open_run(run_path) as run:
        run.sql("SELECT COUNT(*) FROM steps")
    ((_, views),) = _entries(run_path).items()
    # a query of the steps does not run the interval sweep (steps reads recorded_steps, stored with it)
    assert views == ["recorded_steps", "steps"]
    with open_run(run_path) as run:
        run.sql("SELECT COUNT(*) FROM step_breakdown")
    ((_, views),) = _entries(run_path).items()
    every = batches.local_views() - batches.ROW_LEVEL
    if several_batches:  # the pass read every file again: report and rules find every view stored
        assert set(views) == every
    else:  # one batch: another view later is one more pass over a few files
        assert "step_breakdown" in views and "memory_peak" not in views and set(views) < every


def test_the_staging_folder_of_a_process_that_died_is_removed(run_path):
    with open_run(run_path) as run:
        run.sql("SELECT COUNT(*) FROM steps")
    ((key, _),) = _entries(run_path).items()
    dead = run_path / FOLDER / key / ".step_breakdown.999999999.abc.tmp"  # no such process
    alive = run_path / FOLDER / key / f".step_breakdown.{os.getpid()}.abc.tmp"  # another session's, at work
    dead.mkdir()
    alive.mkdir()
    with open_run(run_path) as run:
        run.sql("SELECT COUNT(*) FROM steps")
    assert not dead.exists() and alive.exists()
