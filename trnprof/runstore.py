"""Write runs atomically: a temporary sibling folder, renamed into place only when complete.

    with write_run("out/run1", manifest) as run:
        run.write_events(events)      # pyarrow Table, pandas DataFrame or dict of columns
        run.write_counters(counters)  # may be called many times (e.g. once per rank)
        run.write_ranks(ranks)

A writer that crashes or is killed leaves at most a hidden `.NAME.tmp-PID-…` folder without a
manifest (its scratch files, e.g. an ingest's spill, live inside it), which no reader takes for a
run and the next writer of NAME removes. A `--force` commit renames the old run to
`.NAME.old-PID-…`, the new one into place, then removes the old one; a crash between the two
renames leaves the old run aside, which the next writer (or `trnprof check NAME --repair`) puts
back. The manifest records every Parquet file's rows and bytes (`parts`) for the integrity check
(`trnprof.integrity`).

trnprof removes only what it made: each such folder carries an owner marker (`.trnprof-owner`:
its purpose, host, PID and the process's start time, so a recycled PID is not taken for a live
owner). A folder of those names without the marker (a user's `.run.old-2024` backup) is left
alone and named in one warning line. A commit never replaces a run that appeared while it was
written (another writer's) unless the writer was told to overwrite (`--force`).
"""

from __future__ import annotations

import errno
import glob
import json
import os
import shutil
import socket
import sys
import uuid
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from .errors import TrnprofError
from .integrity import problems_with_files
from .manifest import read_manifest
from .processes import start_time
from .schema import EVENT_KINDS, MANIFEST_FILE, PARTITIONED_TABLES, TABLES

MAX_TIME_NS = 1 << 62
SCRATCH = ".scratch"
OWNER = ".trnprof-owner"  # the owner marker inside a temporary or old-run folder trnprof made
TMP, OLD = "tmp", "old"  # the marker's purposes, also the folders' name parts (.NAME.tmp-PID-…)
_PARTITIONING = ds.partitioning(pa.schema([("rank", pa.int32())]), flavor="hive")
# Events are written in row groups that start where the step changes (runs of consecutive rows of
# one step, merged up to this many rows): a reader of some steps skips the others' row groups by
# the step column's statistics (the critical path reads a run a few steps at a time).
STEP_GROUP_ROWS = 4096


def conform(data, table: str) -> pa.Table:
    """`data` as a table of the canonical schema: missing nullable columns become nulls,
    types are cast safely, and values the schema forbids are one clear error."""
    schema = TABLES[table]
    if not isinstance(data, pa.Table):
        data = pa.Table.from_pandas(data, preserve_index=False) if hasattr(data, "to_numpy") else pa.table(data)
    unknown = set(data.column_names) - set(schema.names)
    if unknown:
        raise TrnprofError(
            f"{table}: unknown column(s) {sorted(unknown)}; allowed: {schema.names} "
            "(put source fields without a column into args as JSON)"
        )
    columns = []
    for field in schema:
        if field.name in data.column_names:
            column = data.column(field.name)
            try:
                column = column.cast(field.type)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
                raise TrnprofError(f"{table}.{field.name}: cannot store as {field.type}: {exc}") from None
        elif field.nullable:
            column = pa.nulls(data.num_rows, field.type)
        else:
            raise TrnprofError(f"{table}: required column {field.name!r} is missing")
        if not field.nullable and column.null_count:
            raise TrnprofError(f"{table}.{field.name}: {column.null_count} null value(s) in a required column")
        columns.append(column)
    result = pa.Table.from_arrays(columns, schema=schema)
    if table == "events":
        _check_events(result)
    elif table == "counters" and result.num_rows:
        finite = pc.is_finite(result["value"])
        if not pc.all(finite).as_py():
            raise TrnprofError("counters.value: NaN or infinite samples are not allowed (drop or quarantine them)")
    return result


def _check_events(events: pa.Table) -> None:
    if events.num_rows == 0:
        return
    if pc.min(events["dur"]).as_py() < 0:
        raise TrnprofError("events.dur: negative durations are not allowed")
    # ts + dur must fit in int64 with room for sums over a step
    if (
        pc.max(events["dur"]).as_py() > MAX_TIME_NS
        or max(abs(pc.min(events["ts"]).as_py()), abs(pc.max(events["ts"]).as_py())) > MAX_TIME_NS
    ):
        raise TrnprofError(f"events.ts/dur: times beyond +-{MAX_TIME_NS} ns (~146 years) are not allowed")
    lowest_step = pc.min(events["step"]).as_py()
    if lowest_step is not None and lowest_step < 0:
        raise TrnprofError(f"events.step: negative step number {lowest_step}; steps are numbered from 0")
    bad = pc.filter(events["kind"], pc.invert(pc.is_in(events["kind"], pa.array(EVENT_KINDS))))
    if len(bad):
        raise TrnprofError(f"events.kind: unknown kind {bad[0].as_py()!r}; allowed: {', '.join(EVENT_KINDS)}")


def step_row_groups(rows: pa.Table, least: int | None = None) -> pa.Table:
    """`rows` in their order, as one record batch per row group to write: cut where the step
    changes, consecutive cuts merged until a batch holds `least` rows (the dataset writer makes a
    row group of each batch, and splits only batches over its own size; a chunk boundary of
    `rows` also ends a batch)."""
    least = STEP_GROUP_ROWS if least is None else least
    if rows.num_rows <= least:
        return rows
    step = pc.fill_null(rows["step"], -1).to_numpy()  # rows outside any step: a run of their own
    changes = np.flatnonzero(step[1:] != step[:-1]) + 1
    cuts, last = [0], 0
    for at in changes.tolist():
        if at - last >= least:
            cuts.append(at)
            last = at
    cuts.append(rows.num_rows)
    return pa.Table.from_batches(
        [batch for a, b in zip(cuts[:-1], cuts[1:]) for batch in rows.slice(a, b - a).to_batches()], schema=rows.schema
    )


class RunStats:
    """Counts by event kind and counter name and the time span, gathered while writing so that
    `trnprof info` needs no scan of a large run."""

    def __init__(self):
        self.by_kind: dict[str, int] = {}
        self.by_counter: dict[str, int] = {}
        self.start: int | None = None
        self.end: int | None = None

    def add(self, table: str, rows: pa.Table) -> None:
        key = "kind" if table == "events" else "name"
        counts = self.by_kind if table == "events" else self.by_counter
        for item in pc.value_counts(rows[key]).to_pylist():
            counts[item["values"]] = counts.get(item["values"], 0) + item["counts"]
        ends = pc.add(rows["ts"], rows["dur"]) if table == "events" else rows["ts"]
        start, end = pc.min(rows["ts"]).as_py(), pc.max(ends).as_py()
        self.start = start if self.start is None else min(self.start, start)
        self.end = end if self.end is None else max(self.end, end)

    def as_dict(self) -> dict:
        return {
            "events_by_kind": dict(sorted(self.by_kind.items())),
            "counters_by_name": dict(sorted(self.by_counter.items())),
            "start_ns": self.start,
            "end_ns": self.end,
        }


class RunWriter:
    """Collects a run's tables in a temporary folder; `commit()` renames it into place."""

    def __init__(self, path: str | Path, manifest: dict, *, overwrite: bool = False):
        self.path = Path(path)
        self.manifest = manifest
        self.overwrite = overwrite
        recover(self.path)
        self._check_target()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.tmp = _sibling(self.path, TMP)
        self.tmp.mkdir()
        mark_owner(self.tmp, TMP)
        self._parts = {name: 0 for name in PARTITIONED_TABLES}
        self._rows = {name: 0 for name in PARTITIONED_TABLES}
        self._stats = RunStats()
        self._ranks_written = False
        self._files: dict[str, list[int]] = {}  # relative path -> [rows, bytes], for the manifest

    def _check_target(self, why: str = "") -> None:
        if not (self.path.exists() or self.path.is_symlink()):
            return
        if not self.overwrite:
            raise TrnprofError(f"output exists: {self.path}{why} (choose another path or pass --force to replace it)")
        if self.path.is_symlink():
            raise TrnprofError(
                f"output {self.path} is a symbolic link: --force replaces only a run folder "
                "(remove the link or choose another path)"
            )
        read_manifest(
            self.path, check_files=False, validate=False
        )  # replace a run (even a damaged one), never another folder

    @property
    def scratch(self) -> Path:
        """A folder for the writer's temporary files (inside the run's temporary folder, removed
        before the commit): a crash leaves nothing outside that folder."""
        folder = self.tmp / SCRATCH
        folder.mkdir(exist_ok=True)
        return folder

    def write_events(self, data) -> None:
        self._write_partitioned("events", data)

    def write_counters(self, data) -> None:
        self._write_partitioned("counters", data)

    def _write_partitioned(self, table: str, data) -> None:
        rows = conform(data, table)
        if rows.num_rows == 0:
            return
        part = self._parts[table]
        self._parts[table] += 1
        batches = step_row_groups(rows) if table == "events" else rows
        self._rows[table] += rows.num_rows
        self._stats.add(table, rows)
        ranks = pc.min_max(rows["rank"])
        if ranks["min"] == ranks["max"]:  # one trace is one rank: skip the dataset writer's setup
            self._write_one_rank(table, batches, ranks["min"].as_py(), part)
            return
        ds.write_dataset(
            batches,
            self.tmp / table,
            format="parquet",
            partitioning=_PARTITIONING,
            basename_template=f"part-{part}-{{i}}.parquet",
            existing_data_behavior="overwrite_or_ignore",
            max_partitions=1 << 20,
            max_open_files=4096,
            file_visitor=self._record_part,
            preserve_order=True,
            file_options=ds.ParquetFileFormat().make_write_options(compression="zstd", write_page_checksum=True),
        )

    def _write_one_rank(self, table: str, batches: pa.Table, rank: int, part: int) -> None:
        """The file the dataset writer would make of rows of one rank (`rank=R/part-P-0.parquet`,
        the rank in the folder's name only, a row group per batch), at a fiftieth of its fixed
        cost (about 50 ms a call: a one-rank trace is one call)."""
        relative = f"{table}/rank={rank}/part-{part}-0.parquet"
        target = self.tmp / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        rows = batches.drop_columns(["rank"])
        with pq.ParquetWriter(target, rows.schema, compression="zstd", write_page_checksum=True) as writer:
            for batch in rows.to_batches():
                writer.write_batch(batch)
        self._files[relative] = [rows.num_rows, target.stat().st_size]

    def _record_part(self, written) -> None:
        relative = Path(written.path).relative_to(self.tmp).as_posix()
        self._files[relative] = [written.metadata.num_rows, written.size]

    def _write_file(self, table: pa.Table, relative: str) -> None:
        target = self.tmp / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(table, target, compression="zstd", write_page_checksum=True)
        self._files[relative] = [table.num_rows, target.stat().st_size]

    def write_ranks(self, data) -> None:
        ranks = conform(data, "ranks")
        if len(set(ranks["rank"].to_pylist())) != ranks.num_rows:
            raise TrnprofError("ranks: each rank must appear exactly once")
        self._write_file(ranks, "ranks.parquet")
        self._ranks_written = True
        if self.manifest.get("world_size") is None:
            self.manifest["world_size"] = ranks.num_rows

    def write_table(self, name: str, data) -> None:
        """An extra, non-partitioned table `NAME.parquet` beside the canonical ones (a collector's
        metadata, flows, quarantine ...); `name` may hold one folder (`meta/flows`). One call per
        name; its row count is recorded in the manifest under `extra_tables`."""
        parts = name.split("/")
        if len(parts) > 2 or name in TABLES or not all(p.isidentifier() and p.islower() for p in parts):
            raise TrnprofError(
                f"extra table name {name!r}: use lower_case words, at most one folder, not one of {sorted(TABLES)}"
            )
        table = (
            data
            if isinstance(data, pa.Table)
            else (pa.Table.from_pandas(data, preserve_index=False) if hasattr(data, "to_numpy") else pa.table(data))
        )
        self._write_file(table, f"{name}.parquet")
        self.manifest.setdefault("extra_tables", {})[name] = table.num_rows

    def commit(self) -> Path:
        if not self._ranks_written:
            raise TrnprofError("a run needs its ranks table (write_ranks) before it is complete")
        shutil.rmtree(self.tmp / SCRATCH, ignore_errors=True)
        self.manifest["counts"] = dict(self._rows)
        self.manifest["stats"] = self._stats.as_dict()
        self.manifest["parts"] = dict(sorted(self._files.items()))
        manifest_path = self.tmp / MANIFEST_FILE
        manifest_path.write_text(json.dumps(self.manifest, indent=2, default=str) + "\n", encoding="utf-8")
        self._place()
        (self.path / OWNER).unlink(missing_ok=True)  # the marker was the temporary folder's
        return self.path

    def _place(self) -> None:
        """Rename the finished run into place. A run there now (even one another writer committed
        while this one wrote) is replaced only when overwriting, through an old copy aside."""
        appeared = ": another writer committed a run there while this one was written; this run is not kept"
        self._check_target(appeared)
        if not self.path.exists():
            try:
                os.rename(self.tmp, self.path)  # fails when a (non-empty) folder appeared since the check
            except OSError as exc:
                if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST, errno.ENOTDIR):
                    raise
                raise TrnprofError(
                    f"output exists: {self.path}{appeared} (choose another path or pass --force to replace it)"
                ) from None
            return
        old = _sibling(self.path, OLD)
        try:
            mark_owner(self.path, OLD)  # before the rename: an old copy aside is always marked
        except OSError as exc:
            raise TrnprofError(
                f"cannot replace {self.path}: cannot write into it ({exc.strerror or exc}); this run is not kept"
            ) from None
        self.path.rename(old)
        self.tmp.rename(self.path)
        shutil.rmtree(old, ignore_errors=True)

    def abort(self) -> None:
        shutil.rmtree(self.tmp, ignore_errors=True)

    def __enter__(self) -> "RunWriter":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            try:
                self.commit()
            except BaseException:
                self.abort()
                raise
        else:
            self.abort()


def write_run(path: str | Path, manifest: dict, *, overwrite: bool = False) -> RunWriter:
    """Start writing a run at `path`; use as a context manager (see the module doc)."""
    return RunWriter(path, manifest, overwrite=overwrite)


def recover(path: str | Path) -> list[str]:
    """Undo what dead writers of `path` left: put back a run an interrupted `--force` commit
    moved aside, remove old runs a finished commit did not get to delete, and remove temporary
    folders of dead writers (of any run in the folder). Only folders with trnprof's owner marker
    are touched; the others are named in one warning line. Returns what was done, one line each."""
    path = Path(path)
    if not path.parent.is_dir():
        return []
    done, foreign = [], []
    olds = sorted(
        _leftovers(path.parent.glob(f".{glob.escape(path.name)}.old-*"), OLD, foreign),
        key=lambda p: p.stat().st_mtime,
        reverse=True,
    )
    if not path.exists():
        for old in olds:
            if (old / MANIFEST_FILE).is_file():
                old.rename(path)
                (path / OWNER).unlink(missing_ok=True)
                olds.remove(old)
                done.append(f"restored {path} from {old.name} (an interrupted --force commit)")
                break
    why_not_whole = _not_whole(path) if olds else None
    for leftover in olds:
        if why_not_whole:
            done.append(
                f"kept {leftover} ({why_not_whole}; this copy may hold the only data): to restore "
                f"it, move {path} aside and rename {leftover.name} to {path.name}"
            )
            continue
        shutil.rmtree(leftover, ignore_errors=True)
        done.append(f"removed {leftover.name} (a replaced run a finished commit left behind)")
    for tmp in _leftovers(path.parent.glob(".*.tmp-*"), TMP, foreign):
        shutil.rmtree(tmp, ignore_errors=True)
        done.append(f"removed {tmp.name} (the temporary folder of a writer that died)")
    if foreign:
        names = ", ".join(sorted(p.name for p in foreign)[:3]) + (
            f" and {len(foreign) - 3} more" if len(foreign) > 3 else ""
        )
        print(
            f"warning: left {names} in {path.parent} alone: named like trnprof's leftovers, but without "
            f"its owner marker ({OWNER}), so not made by trnprof",
            file=sys.stderr,
        )
    return done


def _sibling(path: Path, purpose: str) -> Path:
    return path.parent / f".{path.name}.{purpose}-{os.getpid()}-{uuid.uuid4().hex[:8]}"


def _leftovers(candidates, purpose: str, foreign: list[Path]) -> list[Path]:
    """The folders among `candidates` that trnprof made for `purpose` and whose writer died;
    folders without the marker go to `foreign`."""
    dead = []
    for folder in candidates:
        if folder.is_symlink() or not folder.is_dir():
            foreign.append(folder)
            continue
        owner = read_owner(folder)
        if owner is None or owner.get("purpose") != purpose:
            foreign.append(folder)
        elif not _owner_alive(owner):
            dead.append(folder)
    return dead


def mark_owner(folder: Path, purpose: str, *, pid: int | None = None, started: float | None = None) -> None:
    """Write the owner marker into `folder`: this process (or `pid` started at `started`)."""
    pid = os.getpid() if pid is None else pid
    started = start_time(pid) if started is None else started
    marker = {"made_by": "trnprof", "purpose": purpose, "host": socket.gethostname(), "pid": pid, "started": started}
    (folder / OWNER).write_text(json.dumps(marker) + "\n", encoding="utf-8")


def read_owner(folder: Path) -> dict | None:
    """The owner marker of `folder`, None when it has none (or not a regular, small, valid one)."""
    marker = folder / OWNER
    try:
        if marker.is_symlink() or not marker.is_file() or marker.stat().st_size > 4096:
            return None
        owner = json.loads(marker.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    valid = (
        isinstance(owner, dict)
        and owner.get("made_by") == "trnprof"
        and isinstance(owner.get("pid"), int)
        and isinstance(owner.get("started"), (int, float, type(None)))
        and isinstance(owner.get("host"), str)
    )
    return owner if valid else None


def _owner_alive(owner: dict) -> bool:
    """Whether the process that made a folder may still be running: its PID runs and started when
    the marker says (a recycled PID did not). A folder made on another host (a shared file
    system) counts as alive: its PID says nothing here."""
    if owner["host"] != socket.gethostname():
        return True
    started = start_time(owner["pid"])
    if started is None:
        return False
    return started < 0 or owner["started"] is None or abs(started - owner["started"]) < 0.05


def _not_whole(path: Path) -> str | None:
    """Why `path` is not a whole run (None when it is): only beside a whole run is an old copy
    of it a leftover."""
    try:
        manifest = read_manifest(path, check_files=False)
        problems = problems_with_files(path, manifest)
    except (TrnprofError, OSError) as exc:
        return f"{path} is not a whole run: {exc}"
    return f"{path} is damaged: {'; '.join(problems)}" if problems else None
