"""`trnprof.api.diff(base, new)`: one entry point in the API; `trnprof.diff` is a plain package."""

from __future__ import annotations

import importlib

import trnprof
from trnprof.api import open_run


def test_the_diff_package_is_a_package_and_its_modules_import():
    gates = importlib.import_module("trnprof.diff.gates")
    import trnprof.diff.stats as stats  # the `import a.b.c as d` form resolves through attributes

    document = importlib.import_module("trnprof.diff.document")
    # trnprof.api.diff is document.diff with the findings priced (one number per finding)
    assert not callable(trnprof.diff) and callable(document.diff)
    assert trnprof.api.diff.__module__.startswith("trnprof.api.")
    assert gates.parse_gate("step_time>+5%").threshold == 0.05
    assert stats.min_p_value(2, 2) > 0.3


def test_a_run_against_itself_changes_nothing(sample_run):
    with open_run(sample_run) as run:  # open runs are accepted too
        document = trnprof.api.diff(sample_run, run)
    assert document == trnprof.api.diff(sample_run, sample_run) | {"new": document["new"]}
    assert document["step_time"]["change"] == 0.0 and not document["step_time"]["significant"]
    assert document["top_regressions"] == [] and document["top_improvements"] == []
    assert document["findings"]["new"] == [] and document["findings"]["resolved"] == []


def test_a_diff_computes_one_run_s_views_at_a_time_each_with_the_whole_budget(sample_run, monkeypatch):
    """Both runs are read at the same time, but their views are computed one run at a time, so
    each session gets the whole budget (TRNPROF_MEMORY_LIMIT, else the default) and the
    comparison still holds to what one `analyze` may use."""
    import threading
    import time

    import trnprof.batches as batches
    import trnprof.diff.load as load

    limits, computing, most, lock = [], [0], [0], threading.Lock()

    def counted(function):
        def compute(*args, **kwargs):
            with lock:
                computing[0] += 1
                most[0] = max(most[0], computing[0])
            time.sleep(0.05)  # a window in which the other side would start computing too
            try:
                return function(*args, **kwargs)
            finally:
                with lock:
                    computing[0] -= 1

        return compute

    for name in ("_store_local", "_store_whole"):
        monkeypatch.setattr(batches, name, counted(getattr(batches, name)))
    read = load._read

    def reading(run, *args):
        limits.append(run.sql("SELECT current_setting('memory_limit') AS m").iloc[0, 0])
        return read(run, *args)

    monkeypatch.setattr(load, "_read", reading)
    monkeypatch.setenv("TRNPROF_MEMORY_LIMIT", "1000MB")
    monkeypatch.setenv("TRNPROF_CACHE", "off")  # both sessions compute every view
    with open_run(sample_run) as alone:
        whole = alone.sql("SELECT current_setting('memory_limit') AS m").iloc[0, 0]
    load.load_sides(sample_run, sample_run)
    assert whole in ("953.6 MiB", "1000.0 MB") and limits == [whole] * 2
    assert most[0] == 1


def test_a_budget_that_is_not_a_size_is_still_one_clear_error_in_a_diff(sample_run, monkeypatch):
    import pytest

    from trnprof.errors import TrnprofError

    monkeypatch.setenv("TRNPROF_MEMORY_LIMIT", "lots")
    with pytest.raises(TrnprofError, match="memory limit 'lots' not understood"):
        trnprof.api.diff(sample_run, sample_run)
