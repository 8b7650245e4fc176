"""Op names of any size cost the critical path their bytes once, never inside its SQL: the
coded columns are joined to dictionaries registered as tables, not cast to ENUM literals (3,000
names of 64 KB in the SQL text took 3.9 GB)."""

from __future__ import annotations

import pytest

from tests.conftest import write_inline_run
from trnprof.api import open_run
from trnprof.critical_path import compute, events

NAME_BYTES = 64 * 1024


@pytest.fixture(scope="module")
def long_names(tmp_path_factory):
    """2 ranks x 1 step: 40 compute events per rank, each with its own 64 KB name (and one with
    a non-ASCII name), then an all-reduce."""
    rows = []
    for rank in range(2):
        rows.append(
            {
                "rank": rank,
                "step": 0,
                "ts": 0,
                "dur": 1_000_000,
                "kind": "step",
                "name": "ProfilerStep#0",
                "lane": "cpu/1",
            }
        )
        for i in range(40):
            name = (f"op{i:03d}é" + "x" * NAME_BYTES)[:NAME_BYTES]
            rows.append(
                {
                    "rank": rank,
                    "step": 0,
                    "ts": 10_000 * i,
                    "dur": 9_000,
                    "kind": "compute",
                    "name": name,
                    "lane": "gpu/0",
                }
            )
        rows.append(
            {
                "rank": rank,
                "step": 0,
                "ts": 500_000,
                "dur": 100_000 * (rank + 1),
                "kind": "collective",
                "name": "allreduce",
                "lane": "gpu/1",
                "coll_op": "all_reduce",
                "coll_group": "dp",
                "coll_seq": 0,
                "bytes": 1 << 20,
            }
        )
    return write_inline_run(tmp_path_factory.mktemp("names") / "run", rows)


def test_no_value_of_the_run_is_written_into_the_sql(long_names, monkeypatch):
    sent = []
    arrow = events.Reader._arrow

    def spy(self, query):
        sent.append(query)
        return arrow(self, query)

    monkeypatch.setattr(events.Reader, "_arrow", spy)
    with open_run(long_names) as run:
        result = compute.analyse(run)
    assert sent and max(len(q) for q in sent) < 4_000  # the old ENUM literal: 40 x 64 KB = 2.6 MB
    assert not any("xxxxxxxx" in q or "allreduce" in q or "gpu/0" in q for q in sent)
    # the names come back whole, in the path
    names = set(result.segments["name"].astype(str))
    assert {n[:6] for n in names if len(n) == NAME_BYTES} <= {f"op{i:03d}é" for i in range(40)}
    assert any(len(n) == NAME_BYTES for n in names) and "allreduce" in names


def test_the_codes_keep_the_strings_order_and_nulls(long_names):
    with open_run(long_names) as run:
        reader = events.Reader(run)
        reader.step_counts()
        frame = reader.read((0, 0))
        plain = run.sql(events.events_sql((0, 0)))
    for column in events.CODED:
        categories = list(frame[column].cat.categories)
        assert categories == sorted(categories)
        expected = plain[column].astype(object).where(plain[column].notna(), None)
        got = frame[column].astype(object).where(frame[column].notna(), None)
        assert sorted(map(str, got)) == sorted(map(str, expected))
    assert frame["coll_group"].isna().sum() == plain["coll_group"].isna().sum() > 0
