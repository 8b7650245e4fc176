"""Shared fixtures: tiny runs written through the real run store."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from trnprof import hardware
from trnprof.cli import main as cli_main
from trnprof.collectors.synthetic import synthetic_run
from trnprof.manifest import new_manifest
from trnprof.runstore import write_run

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data"  # real traces and samples, with their origin and licence
KINETO = DATA / "kineto"
TRN1_HBM_PER_CORE = hardware.lookup("trn1.32xlarge")["hbm_bytes_per_core"]


def write_inline_run(
    path: Path, events: list[dict], *, ranks: int | None = None, counters=None, job=None, **manifest_extra
) -> Path:
    """A run from inline event dicts (rank, ts, dur, kind, name, lane, ...)."""
    frame = pd.DataFrame(events)
    world = ranks if ranks is not None else int(frame["rank"].max()) + 1
    manifest = new_manifest("tests.inline", job=job, **manifest_extra)
    with write_run(path, manifest) as run:
        run.write_events(frame)
        if counters is not None:
            run.write_counters(pd.DataFrame(counters))
        run.write_ranks(pd.DataFrame({"rank": range(world), "hbm_capacity_bytes": TRN1_HBM_PER_CORE}))
    return path


def assert_accounted(run, index: int = 0) -> dict:
    """The ingest record of input `index` of an open run, after checking that nothing was lost:
    every source entry went to one destination (events, counters, flows, meta or quarantine),
    and every quarantined entry has its reason."""
    record = run.manifest["ingest"]["files"][index]
    assert record["source_entries"] == sum(record["to"].values()), record
    assert record["to"].get("quarantine", 0) == sum(record.get("quarantine_reasons", {}).values()), record
    return record


@pytest.fixture(scope="session")
def sample_run(tmp_path_factory) -> Path:
    """A small synthetic run: 8 ranks x 4 steps, rank 5 slow."""
    return synthetic_run(
        tmp_path_factory.mktemp("runs") / "sample", ranks=8, steps=4, ops_per_step=20, slow_rank=5, seed=3
    )


@pytest.fixture
def cli():
    """Invoke the trnprof CLI in-process; returns click's Result (exit_code, stdout, stderr). An
    exception other than a command's exit propagates with its traceback (never swallowed)."""
    runner = CliRunner()

    def invoke(*args):
        return runner.invoke(cli_main, [str(a) for a in args], catch_exceptions=False)

    return invoke


# Markers by place, from the repository root: a folder, a file, or one test (`file::name`).
# `bash dev.sh fast` leaves out every marked test; `bash dev.sh test` runs them all.
# tests/core/test_markers.py fails when a file that uses Spark, Chromium or torch is not marked here.
SLOW = ("slow",)
MARKS = {
    # Spark in local mode (each module starts its session; test_spark_transpile.py needs sqlglot only)
    "tests/spark/test_hardening_spark.py": ("spark", "slow"),
    "tests/spark/test_spark_cli.py": ("spark", "slow"),
    "tests/spark/test_spark_device.py": ("spark", "slow"),
    "tests/spark/test_spark_equal.py": ("spark", "slow"),
    "tests/spark/test_spark_sandbox.py": ("spark", "slow"),
    # Chromium
    "tests/report/test_report_browser.py": ("browser", "slow"),
    "tests/diff/test_diff_report.py": ("browser", "slow"),
    # real PyTorch jobs
    "tests/record/test_record.py": ("torch", "slow"),
    "tests/record/test_record_live.py": ("torch", "slow"),
    "tests/record/test_record_stack.py": ("torch", "slow"),
    "tests/critical_path/test_straggler_recorded.py": ("torch", "slow"),
    # uid 0
    "tests/storage/test_hardening_store.py::test_a_group_writable_share_works_for_two_users": ("root",),
    "tests/storage/test_hardening_cache.py::test_a_full_disk_during_the_cache_write_falls_back_with_one_warning": (
        "root",
    ),
}


def _slow_places() -> list[str]:
    """tests/slow.txt: the places `bash dev.sh fast` leaves out for their time, a file or
    file::function a line (made from a timed run of the suite by scripts/mark_slow.py)."""
    lines = (REPO / "tests" / "slow.txt").read_text(encoding="utf-8").splitlines()
    return [place for place in (line.split("#")[0].strip() for line in lines) if place]


for _place in _slow_places():
    MARKS[_place] = tuple(sorted({*MARKS.get(_place, ()), *SLOW}))


def marks_for(path: str, name: str) -> set[str]:
    """The markers MARKS gives test `name` (without its parameters) of file `path` (from the root)."""
    found = set()
    for place, markers in MARKS.items():
        where, _, test = place.partition("::")
        if (path == where or path.startswith(where + "/")) and test in ("", name):
            found.update(markers)
    return found


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects by marker
def pytest_collection_modifyitems(items):
    for item in items:
        path = item.path.resolve().relative_to(REPO).as_posix()
        for marker in sorted(marks_for(path, getattr(item, "originalname", None) or item.name)):
            item.add_marker(marker)
