"""Replay prices kept in the run's derived/ cache (trnprof/whatif/price_store.py): the next
command over the run reads them instead of replaying, a damaged or tampered entry is ignored and
the price computed again, and a price is read only by the code that made it."""

from __future__ import annotations

import json
import math

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.conftest import KINETO
from trnprof import session
from trnprof.api import open_run
from trnprof.collectors.ingest import ingest
from trnprof.whatif import price_store, replay

TRACE = KINETO / "trace_filter" / "sampled_rank-0.json.gz"  # one rank of an NCCL job: 2 steps
FIXES = [["communication=0"], ["compute=0.5"]]


@pytest.fixture
def run_dir(tmp_path):
    ingest([TRACE], tmp_path / "run")
    return tmp_path / "run"


def _prices(run_dir) -> list[dict]:
    with open_run(run_dir) as run:
        return replay.replay_prices(run, FIXES)


def _no_replay(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("replayed although the prices are stored")

    monkeypatch.setattr(replay, "Priced", refuse)


def _store_row(run_dir, fix: list[str], values: dict) -> None:
    """`fix`'s entry written as trnprof writes one (checksummed), holding `values`."""
    row = {"specs": json.dumps(fix), "step_time_s": 0.5, "base_mean_s": 0.6, "steps": 2, **values}
    with open_run(run_dir) as run:
        store = session.store_of(run.con)
        name = price_store.entry_name(fix)
        staging = store.staging(name)
        table = pa.table({k: [v] for k, v in row.items()}, schema=price_store.SCHEMA)
        pq.write_table(table, staging / "price.parquet")
        store.commit(name, staging)


def test_a_second_command_reads_the_stored_prices(run_dir, monkeypatch):
    first = _prices(run_dir)
    assert all(p["step_time_s"] > 0 and p["steps"] == 2 for p in first)
    assert first[1]["gain_fraction"] > 0  # halving the compute shortens the steps
    _no_replay(monkeypatch)
    assert _prices(run_dir) == first


@pytest.mark.parametrize(
    "values",
    [
        {"step_time_s": math.nan},
        {"step_time_s": -1.0},
        {"base_mean_s": math.inf},
        {"steps": 0},
        {"specs": json.dumps(["compute=0.1"])},  # another fix's price under this one's name
    ],
    ids=["nan", "negative", "infinite", "no-steps", "other-specs"],
)
def test_a_tampered_price_is_ignored_and_computed_again(run_dir, monkeypatch, values):
    expected = _prices(run_dir)
    for specs in FIXES:  # the good entries replaced by bad ones, checksums and all
        entry = next((run_dir / "derived").glob(f"*/{price_store.entry_name(specs)}"))
        for part in entry.iterdir():
            part.unlink()
        entry.rmdir()
        _store_row(run_dir, specs, values)
    with open_run(run_dir) as run:
        assert price_store.lookup(session.store_of(run.con), FIXES[0]) is None
    assert _prices(run_dir) == expected


def test_an_entry_over_its_bound_is_not_read(run_dir, monkeypatch):
    _prices(run_dir)
    monkeypatch.setattr(price_store, "MAX_ENTRY_BYTES", 64)  # below any Parquet file
    with open_run(run_dir) as run:
        assert price_store.lookup(session.store_of(run.con), FIXES[0]) is None


def test_a_price_is_read_only_by_the_code_that_made_it(run_dir, monkeypatch):
    _prices(run_dir)
    monkeypatch.setattr(price_store, "code_digest", lambda: "other replay code")
    with open_run(run_dir) as run:
        assert price_store.lookup(session.store_of(run.con), FIXES[0]) is None


def test_a_damaged_entry_is_removed_and_computed_again(run_dir):
    expected = _prices(run_dir)
    part = next((run_dir / "derived").glob(f"*/{price_store.entry_name(FIXES[0])}/price.parquet"))
    part.write_bytes(b"PAR1 not parquet")
    assert _prices(run_dir) == expected


def test_without_the_cache_prices_are_computed(run_dir, monkeypatch):
    monkeypatch.setenv("TRNPROF_CACHE", "off")
    expected = _prices(run_dir)
    assert not list((run_dir).glob("derived/*/_replay_price_*"))
    assert _prices(run_dir) == expected
