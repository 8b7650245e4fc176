"""Computing stdlib views in bounded memory: per batch of ranks, stored as Parquet.

Step windows and device intervals never cross ranks, so a rank-local view (its rows for a rank
depend only on that rank's events, counters and `ranks` row) is computed for one contiguous
batch of ranks at a time, from only their files, and the batches' rows are appended. The batch
size follows the session's memory budget, so a run that fits in it is one batch: the single
sweep. Cross-rank views (collectives matched across ranks, step times, ...) are computed once
over the whole run, reading the stored rank-local results. Every computed view is written as
Parquet to the run's store (`derived.py`) and the view is replaced by a read of those files.
"""

from __future__ import annotations

import contextlib
import functools
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

import click
import duckdb

from . import parts
from .derived import Store
from .device_tables import TABLES as DEVICE_TABLES
from .errors import first_line
from .schema import PARTITIONED_TABLES, TABLE_COLUMNS
from .stdlib import create_view, dependencies, load_views, upstream
from .tableread import sql_name as _q
from .tableread import table_select

# Views whose rows for a rank depend only on that rank's rows (and on other such views). A view
# not listed is computed over the whole run: correct for any view, bounded only if its SQL
# aggregates or joins with spilling.
RANK_LOCAL = frozenset(
    {
        "recorded_steps",
        "steps",
        "_launch_calls",
        "_launched_ops",
        "launch_pending",
        "copy_exposure",
        "host_pending",
        "device_intervals",
        "_sweep_points",
        "_swept",
        "device_segments",
        "step_breakdown",
        "memory_timeline",
        "memory_totals",
        "memory_peak",
        "rank_summary",
        "_op_stats",
        "event_stats",
        "_comm_events",
        "compute_dtypes",
        "step_memory",
        "memory_at_peak",
        "_host_calls",
        "_host_stack",
        "host_sync_calls",
        "host_self_time",
    }
)
# Views with about a row per event or finer: never stored (as large as the run itself); the
# views computed from them are.
ROW_LEVEL = frozenset(
    {
        "device_intervals",
        "_sweep_points",
        "_swept",
        "device_segments",
        "_comm_events",
        "_host_calls",
        "_launch_calls",
        "_launched_ops",
        "_host_stack",
        "_device_units",
        "_device_islands",
    }
)
# Row-level views kept as a table within a batch while two or more of the batch's stored views
# read them (directly or through other row-level views), so that they are computed once per
# batch: the interval sweep (step_breakdown and host_self_time both read device_segments, which
# unpacks `_swept`: the packed five columns make a cheaper table than the eleven unpacked;
# docs/performance.md "Scale") and the host call stacks (host_sync_calls and host_self_time).
SHARED_IN_BATCH = ("_swept", "_host_stack")
# Parquet bytes of one batch per byte of memory budget (docs/performance.md: the interval sweep
# of a batch takes about 20x its Parquet size at peak).
BATCH_SHARE = 1 / 48
BATCH_SCHEMA = "_trnprof_batch"
_RANK_DIR = re.compile(r"^rank=(-?\d+)$")


@dataclass
class AttachedRun:
    """A run attached to a session: its files by rank, its store, the views already stored."""

    run_dir: Path
    schema: str
    files: list[Path]
    store: Store
    stored: set[str] = field(default_factory=set)

    def table_files(self, table: str, ranks: set[int] | None = None) -> list[Path]:
        if table not in PARTITIONED_TABLES:  # one file, required: a missing one reads as an error
            return [self.run_dir / f"{table}.parquet"]
        return [f for f in self.files if f.parent.parent.name == table and (ranks is None or _rank_of(f) in ranks)]

    def rank_bytes(self) -> dict[int, int]:
        """Bytes of Parquet per rank over the partitioned tables, ranks in order."""
        sizes: dict[int, int] = {}
        for f in self.files:
            if f.parent.parent.name in PARTITIONED_TABLES:
                rank = _rank_of(f)
                sizes[rank] = sizes.get(rank, 0) + f.stat().st_size
        return dict(sorted(sizes.items()))


def _rank_of(path: Path) -> int:
    match = _RANK_DIR.match(path.parent.name)
    return int(match.group(1)) if match else -1


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def local_views() -> set[str]:
    """The rank-local stdlib views: listed in RANK_LOCAL and reading only rank-local inputs."""
    local = set(TABLE_COLUMNS)
    for name, reads in dependencies().items():
        if name in RANK_LOCAL and reads <= local:
            local.add(name)
    return local - set(TABLE_COLUMNS)


def _reads_partitions(deps: dict[str, set[str]]) -> set[str]:
    """The views that read the events, counters or device profile, directly or not: the ones
    worth storing (the others read only small tables such as `ranks` and stay plain views). The
    device views are stored too: each reads the interval unions of `device_units`, which would
    otherwise be recomputed by every view and rule that reads them (docs/performance.md)."""
    found = set()
    for name, reads in deps.items():  # load order: what a view reads comes before it
        if reads & (set(PARTITIONED_TABLES) | set(DEVICE_TABLES) | found):
            found.add(name)
    return found


def to_store(names, stored: set[str]) -> list[str]:
    """`names` and every stdlib view they read, in load order, less row-level, stored and cheap ones."""
    deps = dependencies()
    wanted, todo = set(), [n for n in names if n in deps]
    while todo:
        name = todo.pop()
        if name not in wanted and name not in stored:
            wanted.add(name)
            todo += [d for d in deps[name] if d in deps]
    heavy = _reads_partitions(deps)
    return [n for n in deps if n in wanted and n in heavy and n not in ROW_LEVEL]


def sweeping(local: set[str]) -> set[str]:
    """The rank-local views that read a row-level view (the interval sweep), directly or not."""
    deps, found = dependencies(), set()
    for name in deps:  # load order: what a view reads comes before it
        if name in local and deps[name] & (ROW_LEVEL | found):
            found.add(name)
    return found - ROW_LEVEL


def size_bytes(text: str) -> int | None:
    """'1536MB', '1.5 GiB', '4GB' -> bytes (DuckDB's spellings); None when `text` is not a size."""
    match = re.fullmatch(r"\s*([\d.]+)\s*([KMGT]?)i?B?\s*", text, re.IGNORECASE)
    if not match:
        return None
    scale = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}[match.group(2).upper()]
    try:
        return int(float(match.group(1)) * scale)
    except ValueError:  # '1.2.3', '.'
        return None


def parse_bytes(text: str) -> int:
    """`size_bytes`, or 1536MB when `text` is not a size."""
    found = size_bytes(text)
    return 1536 << 20 if found is None else found


def rank_batches(sizes: dict[int, int], budget: int) -> list[tuple[int, int, set[int]]]:
    """Contiguous batches of ranks of at most `budget` bytes each (at least one rank), as
    (lowest, highest, ranks) where the bounds of neighbours meet, so that every rank number,
    with files or not, falls in exactly one batch."""
    groups, current, size = [], [], 0
    for rank, nbytes in sizes.items():
        if current and size + nbytes > budget:
            groups.append(current)
            current, size = [], 0
        current.append(rank)
        size += nbytes
    if current or not groups:
        groups.append(current)
    low, high = -(1 << 31), (1 << 31) - 1
    bounds = [low] + [g[0] for g in groups[1:]] + [high + 1]
    return [(bounds[i], bounds[i + 1] - 1, set(g)) for i, g in enumerate(groups)]


def read_stored(con: duckdb.DuckDBPyConnection, run: AttachedRun, view: str) -> None:
    """Replace `view` by a read of its stored Parquet files."""
    files = run.store.files(view)
    con.execute(f"CREATE OR REPLACE VIEW {_q(run.schema)}.{_q(view)} AS SELECT * FROM read_parquet({_literal(files)})")
    run.stored.add(view)


def _batch_schema(con, run: AttachedRun, low: int, high: int, ranks: set[int], local: set[str]) -> None:
    """Schema BATCH_SCHEMA: the run's tables restricted to one batch of ranks, and every
    rank-local view over them (stored ones read back for the batch's ranks)."""
    con.execute(f"DROP SCHEMA IF EXISTS {BATCH_SCHEMA} CASCADE")
    con.execute(f"CREATE SCHEMA {BATCH_SCHEMA}")
    where = f"WHERE rank BETWEEN {low} AND {high}"
    for table in TABLE_COLUMNS:
        if table in PARTITIONED_TABLES:
            select = table_select(con, run.run_dir, table, run.table_files(table, ranks))
        else:
            select = f"SELECT * FROM {_q(run.schema)}.{table} {where}"
        con.execute(f"CREATE VIEW {BATCH_SCHEMA}.{table} AS {select}")
    con.execute(f"SET schema = {_literal(BATCH_SCHEMA)}")
    try:
        for view in load_views():
            if view.name not in local:
                continue
            if view.name in run.stored:
                con.execute(f"CREATE VIEW {view.name} AS SELECT * FROM {_q(run.schema)}.{view.name} {where}")
            else:
                create_view(con, view)
    finally:
        con.execute("SET schema = 'main'")


def _keep_as_table(con, name: str) -> None:
    """Replace the batch's view `name` by a table of its rows."""
    table, view = f"{BATCH_SCHEMA}._m_{name}", f"{BATCH_SCHEMA}.{name}"
    con.execute(f"CREATE TABLE {table} AS SELECT * FROM {view}")
    con.execute(f"DROP VIEW {view}")
    con.execute(f"ALTER TABLE {table} RENAME TO {name}")


def _reads_through_row_level(name: str, shared: str, deps: dict[str, frozenset[str]]) -> bool:
    """Whether view `name` reads `shared` directly or through row-level views (computed, never
    stored, so they read it again whenever they are read)."""
    seen, todo = set(), list(deps.get(name, ()))
    while todo:
        read = todo.pop()
        if read == shared:
            return True
        if read in ROW_LEVEL and read not in seen:
            seen.add(read)
            todo += deps.get(read, ())
    return False


def _shared_readers(names: list[str]) -> dict[str, list[str]]:
    """Each SHARED_IN_BATCH view read by two or more of `names` -> those readers."""
    deps = dependencies()
    readers = {shared: [n for n in names if _reads_through_row_level(n, shared, deps)] for shared in SHARED_IN_BATCH}
    return {shared: found for shared, found in readers.items() if len(found) >= 2}


def _compute_batch(con, names: list[str], staging: dict[str, Path], index: int) -> None:
    """Compute `names` (load order) in the batch schema; each is kept as a table for the views
    after it and written as one Parquet part. A shared row-level view is kept as a table from
    its first reader to its last."""
    shared = _shared_readers(names)
    for name in names:
        for view, readers in shared.items():
            if name == readers[0]:
                _keep_as_table(con, view)
        _keep_as_table(con, name)
        part = staging[name] / f"part-{index:05d}.parquet"
        con.execute(f"COPY {BATCH_SCHEMA}.{name} TO {_literal(str(part))} (FORMAT parquet)")
        for view, readers in shared.items():
            if name == readers[-1]:
                con.execute(f"DROP TABLE {BATCH_SCHEMA}.{view}")


def _store_local(con, run: AttachedRun, names: list[str], batches, advance) -> None:
    staging = {name: run.store.staging(name) for name in names}
    local = upstream(names) & local_views()  # the batch schema holds only the views `names` read
    try:
        for index, (low, high, ranks) in enumerate(batches):
            _batch_schema(con, run, low, high, ranks, local)
            _compute_batch(con, names, staging, index)
            advance()
    except BaseException:
        for path in staging.values():
            run.store.discard(path)
        raise
    finally:
        con.execute(f"DROP SCHEMA IF EXISTS {BATCH_SCHEMA} CASCADE")
    for name in names:
        run.store.commit(name, staging[name])
        read_stored(con, run, name)


def _store_whole(con, run: AttachedRun, name: str, budget: int) -> None:
    """Compute a cross-rank view over the whole run, in parts where it is one of
    parts.SEQUENCE_PARTED and its collective events outgrow `budget`, and store it."""
    staging = run.store.staging(name)
    filters = ["TRUE"]
    if name in parts.SEQUENCE_PARTED:
        filters = parts.part_filters(con, run.schema, parts.part_count(con, run.schema, budget))
    try:
        for index, where in enumerate(filters):
            source = f"{_q(run.schema)}.{_q(name)}"
            if len(filters) > 1:
                source = parts.part_schema(con, run.schema, run.stored, name, where)
            part = staging / f"part-{index:05d}.parquet"
            con.execute(f"COPY (SELECT * FROM {source}) TO {_literal(str(part))} (FORMAT parquet)")
    except BaseException:
        run.store.discard(staging)
        raise
    finally:
        if len(filters) > 1:
            parts.drop_part_schema(con)
    run.store.commit(name, staging)
    read_stored(con, run, name)


def _write_failure(exc: BaseException, store: Store) -> str | None:
    """Why writing to the run's cache failed (disk full, quota, permissions, a concurrent
    writer), or None when `exc` is not such a failure."""
    if not store.persistent:
        return None
    if isinstance(exc, OSError):
        return exc.strerror or first_line(exc)
    if isinstance(exc, duckdb.IOException) and str(store.root) in str(exc):
        return first_line(exc).split(": ")[-1]
    return None


def materialize(con, run: AttachedRun, names, *, memory_limit: str, progress: bool = False) -> None:
    """Store `names` and the views they read (`_materialize`); when the run's cache cannot be
    written, warn once and store them in the session's scratch folder instead."""
    try:
        _materialize(con, run, names, memory_limit=memory_limit, progress=progress)
    except (OSError, duckdb.IOException) as exc:
        reason = _write_failure(exc, run.store)
        if reason is None:
            raise
        run.store.fall_back(reason)
        _materialize(con, run, names, memory_limit=memory_limit, progress=progress)


def _materialize(con, run: AttachedRun, names, *, memory_limit: str, progress: bool) -> None:
    """Store `names` and the views they read: rank-local ones per batch of ranks first, then
    cross-rank ones over the whole run, in load order. With `progress`, a bar on stderr counts
    the batches and the cross-rank views when there is more than one batch."""
    todo = to_store(names, run.stored)
    if not todo:
        return
    local = local_views()
    batched = [n for n in todo if n in local]
    whole = [n for n in todo if n not in local]
    sizes = run.rank_bytes()
    batches = rank_batches(sizes, max(1, int(parse_bytes(memory_limit) * BATCH_SHARE))) if batched else []
    if len(batches) > 1 and set(batched) & sweeping(local):
        # a pass over several batches reads every file again: compute every local view in this one
        batched = to_store(local, run.stored)
    steps = len(batches) + len(whole)
    bar = None
    if progress and len(batches) > 1:
        bar = click.progressbar(length=steps, file=sys.stderr, label=f"computing views of {len(sizes):,} ranks")
    with bar if bar is not None else contextlib.nullcontext():
        advance = functools.partial(bar.update, 1) if bar is not None else (lambda: None)
        if batched:
            _store_local(con, run, batched, batches, advance)
        for name in whole:
            _store_whole(con, run, name, parse_bytes(memory_limit))
            advance()
