"""Cross-rank views computed in parts by collective sequence number (trnprof/parts.py): every
sequence number in exactly one part, as many parts as the memory budget asks and no more than
MAX_PARTS, nothing left behind in the session."""

from __future__ import annotations

import random

import duckdb
import pytest

from tests.conftest import write_inline_run
from trnprof import parts
from trnprof.api import open_run

EXTREMES = [-(2**63), -(2**62), -1, 0, 1, 2**39, 2**62, 2**63 - 1]


def _collectives(con, seqs: list[int | None], ranks_seen: int = 1) -> None:
    con.execute("CREATE OR REPLACE TABLE collectives (coll_seq BIGINT, ranks_seen BIGINT)")
    if seqs:
        con.executemany("INSERT INTO collectives VALUES (?, ?)", [(s, ranks_seen) for s in seqs])


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("count", [2, 3, 5, 16])
def test_every_sequence_number_falls_in_exactly_one_part(seed, count):
    rng = random.Random(seed)
    seqs = [rng.choice([rng.randint(-50, 50), rng.choice(EXTREMES)]) for _ in range(40)] + [None]
    con = duckdb.connect()
    _collectives(con, seqs)
    filters = parts.part_filters(con, "main", count)
    assert 2 <= len(filters) <= count
    probes = sorted({s for s in seqs if s is not None} | set(EXTREMES) | set(range(-60, 61)))
    for value in probes:
        probe = f"(SELECT CAST({value} AS BIGINT) AS coll_seq)"
        matched = [f for f in filters if con.execute(f"SELECT {f} FROM {probe}").fetchone()[0]]
        assert len(matched) == 1, (value, filters)


def test_one_sequence_number_everywhere_is_one_cut_and_two_parts():
    con = duckdb.connect()
    _collectives(con, [7] * 10)
    assert parts.part_filters(con, "main", 4) == ["coll_seq < 7", "coll_seq >= 7"]


def test_no_sequenced_instance_is_one_pass():
    con = duckdb.connect()
    _collectives(con, [None, None])
    assert parts.part_filters(con, "main", 3) == ["TRUE"]


def test_parts_keep_each_pass_within_the_budget_and_are_capped():
    con = duckdb.connect()
    _collectives(con, list(range(1000)), ranks_seen=1000)  # a million collective events
    budget = 1000 * 1000 * parts.PART_EVENT_BYTES
    assert parts.part_count(con, "main", budget) == 1
    assert parts.part_count(con, "main", budget // 2) == 2
    assert parts.part_count(con, "main", budget // 3 + 1) == 3
    assert parts.part_count(con, "main", budget // 3) == 4  # a byte short of three passes' worth
    assert parts.part_count(con, "main", 1) == parts.MAX_PARTS
    _collectives(con, [])
    assert parts.part_count(con, "main", 1) == 1


def test_the_part_schema_restricts_the_events_and_is_dropped(tmp_path, monkeypatch):
    monkeypatch.setenv("TRNPROF_CACHE", "off")
    monkeypatch.setattr(parts, "part_count", lambda con, schema, budget: 3)
    base = {"step": 0, "dur": 10, "kind": "collective", "name": "ar", "lane": "cc", "coll_op": "all_reduce"}
    events = [
        {**base, "rank": r, "ts": 100 * s + r, "coll_group": "dp", "coll_seq": s} for s in range(6) for r in range(2)
    ]
    write_inline_run(tmp_path / "run", events)
    with open_run(tmp_path / "run") as run:
        frame = run.sql("SELECT rank, SUM(n) AS n FROM _collective_skew GROUP BY rank ORDER BY rank")
        assert frame["n"].tolist() == [6, 6]
        assert len(run.sql("SELECT * FROM _collective_skew")) == 6  # a row per rank and part
        left = run.sql(f"SELECT schema_name FROM duckdb_schemas() WHERE schema_name = '{parts.PART_SCHEMA}'")
        assert left.empty
