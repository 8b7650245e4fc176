"""Computing a large cross-rank view in parts, by collective sequence number.

A collective instance is one (op, group, sequence number) across ranks, so a view whose rows sum
per-instance results over events with a sequence number (view _collective_skew) can be computed
over the events of disjoint ranges of `coll_seq`, one range at a time, its rows appended: every
instance falls in one range whole. Its readers add the parts up (a key such as (rank, step) may
have a row in each part). At 1,024 ranks x 30 steps (66M collective events) one pass took a
fifth longer than three over a third each: the grouping and the window over the instances grow
faster than the events (docs/performance.md, "issue 39 round 10").

The parts follow the session's memory budget: as many as keep each part's collective events
within it at PART_EVENT_BYTES an event, so a run that fits is one pass, as before. The ranges
cut the sequence numbers of view `collectives` at its quantiles, and each pass reads only the
row groups its range can match. Only the DuckDB session computes in parts; another engine
computes the view whole: the same sums.
"""

from __future__ import annotations

import math

from .schema import TABLE_COLUMNS
from .stdlib import create_view, load_views, upstream
from .tableread import sql_name as _q

# Views whose rows over disjoint `coll_seq` ranges of the events, appended, are the view: their
# readers aggregate (SUM, MAX) per key, never assume one row per key.
SEQUENCE_PARTED = frozenset({"_collective_skew"})
# Memory per collective event of a pass: its arrival's group and window rows (rank, instance,
# step, start, end, place, count: about 50 bytes) with the hash table's and sort's overhead.
PART_EVENT_BYTES = 64
# More passes than this read the run's files more often than they save (each pass opens every
# rank's files): 3 was the best of 1, 3 and 6 over 66M events.
MAX_PARTS = 16
PART_SCHEMA = "_trnprof_part"


def part_count(con, schema: str, budget: int) -> int:
    """How many passes keep each one's collective events within `budget` bytes."""
    (events,) = con.execute(f"SELECT COALESCE(SUM(ranks_seen), 0) FROM {_q(schema)}.collectives").fetchone()
    return min(MAX_PARTS, max(1, math.ceil(int(events) * PART_EVENT_BYTES / max(1, budget))))


def part_filters(con, schema: str, parts: int) -> list[str]:
    """The `coll_seq` condition of each pass: ranges cut at quantiles of the instances' sequence
    numbers (distinct cuts only). Events without a sequence number match no instance: no pass
    reads them."""
    if parts <= 1:
        return ["TRUE"]
    fractions = ", ".join(str(i / parts) for i in range(1, parts))
    (cuts,) = con.execute(
        f"SELECT quantile_disc(coll_seq, [{fractions}]) FROM {_q(schema)}.collectives WHERE coll_seq IS NOT NULL"
    ).fetchone()
    cuts = sorted({int(c) for c in cuts or []})
    if not cuts:
        return ["TRUE"]
    lows = [f"coll_seq >= {c}" for c in cuts]
    highs = [f"coll_seq < {c}" for c in cuts]
    return [highs[0], *(f"{low} AND {high}" for low, high in zip(lows, highs[1:])), lows[-1]]


def part_schema(con, schema: str, stored: set[str], name: str, where: str) -> str:
    """Schema PART_SCHEMA: the run's tables, the events restricted to `where`, and view `name`
    with every view it reads (stored ones read back from `schema`, the others computed over the
    restricted events). Returns the view's qualified name."""
    con.execute(f"DROP SCHEMA IF EXISTS {PART_SCHEMA} CASCADE")
    con.execute(f"CREATE SCHEMA {PART_SCHEMA}")
    for table in TABLE_COLUMNS:
        condition = f" WHERE {where}" if table == "events" else ""
        con.execute(f"CREATE VIEW {PART_SCHEMA}.{table} AS SELECT * FROM {_q(schema)}.{table}{condition}")
    wanted = upstream([name])
    con.execute(f"SET schema = '{PART_SCHEMA}'")
    try:
        for view in load_views():
            if view.name not in wanted:
                continue
            if view.name in stored:
                con.execute(f"CREATE VIEW {_q(view.name)} AS SELECT * FROM {_q(schema)}.{_q(view.name)}")
            else:
                create_view(con, view)
    finally:
        con.execute("SET schema = 'main'")
    return f"{PART_SCHEMA}.{_q(name)}"


def drop_part_schema(con) -> None:
    con.execute(f"DROP SCHEMA IF EXISTS {PART_SCHEMA} CASCADE")
