"""Is a run folder whole? The manifest lists every Parquet file the writer made, with its rows
and bytes (`parts`); a run whose files differ (a part deleted, duplicated, truncated or
replaced, a table folder removed) is refused with one line naming what is missing or extra.

- `check_on_open` (every open): the set of files and their sizes against the manifest (a
  directory listing and a stat per file: no Parquet is read);
- `verify` (`trnprof check RUN`): the same, then every file is read in full: its footer's row
  count and each row group's data must decode, pass its page checksums (CRC-32, written by the
  run store) and agree with the manifest, and the tables' row totals with `counts`.

A `derived/` folder inside a run (caches other commands add after the run was written) is not
part of the run and is ignored. Runs written before `parts` was recorded are checked by their
row totals from the Parquet footers."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from .errors import NotARunError, first_line
from .schema import PARTITIONED_TABLES, TABLES

IGNORED = ("derived",)  # folders inside a run that are not part of it
SHOWN = 3  # file names quoted in the one-line error


def run_files(run_dir: Path) -> dict[str, int]:
    """Relative path -> size of every Parquet file of the run (outside `derived/`); os.scandir
    and plain strings, as this runs on every open of runs with thousands of files."""
    files = {}
    folders = [("", str(run_dir))]
    while folders:
        prefix, folder = folders.pop()
        with os.scandir(folder) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    if prefix or entry.name not in IGNORED:
                        folders.append((f"{prefix}{entry.name}/", entry.path))
                elif entry.name.endswith(".parquet"):
                    files[prefix + entry.name] = entry.stat().st_size
    return files


def _names(paths) -> str:
    paths = sorted(paths)
    more = f" and {len(paths) - SHOWN} more" if len(paths) > SHOWN else ""
    return ", ".join(paths[:SHOWN]) + more


def problems_with_files(run_dir: Path, manifest: dict) -> list[str]:
    """What differs between the run's files and the manifest's `parts` (cheap: no reads)."""
    parts = manifest.get("parts")
    if parts is None:
        return _legacy_totals(run_dir, manifest)
    found = run_files(run_dir)
    missing = set(parts) - set(found)
    extra = set(found) - set(parts)
    resized = {p for p in set(parts) & set(found) if found[p] != parts[p][1]}
    problems = []
    if missing:
        problems.append(f"{len(missing)} file(s) missing ({_names(missing)})")
    if extra:
        problems.append(f"{len(extra)} file(s) not written with the run ({_names(extra)})")
    if resized:
        problems.append(f"{len(resized)} file(s) changed size ({_names(resized)})")
    return problems


def _legacy_totals(run_dir: Path, manifest: dict) -> list[str]:
    problems = []
    for table in PARTITIONED_TABLES:
        expected = (manifest.get("counts") or {}).get(table)
        if expected is None:
            continue
        try:
            rows = sum(pq.ParquetFile(p).metadata.num_rows for p in (run_dir / table).glob("rank=*/*.parquet"))
        except (pa.ArrowException, OSError) as exc:
            return [f"{table}: unreadable Parquet footer ({first_line(exc)})"]
        if rows != expected:
            problems.append(f"{table} holds {rows:,} rows, the manifest says {expected:,}")
    if not (run_dir / "ranks.parquet").is_file():
        problems.append("ranks.parquet missing")
    return problems


def check_on_open(run_dir: Path, manifest: dict) -> None:
    """Refuse a damaged run with one line (see the module doc)."""
    problems = problems_with_files(run_dir, manifest)
    if problems:
        raise NotARunError(
            f"damaged run {run_dir}: {'; '.join(problems)} (`trnprof check {run_dir}` tells more; re-create the run)"
        )


@dataclass
class Verdict:
    run: str
    problems: list[str] = field(default_factory=list)
    repaired: list[str] = field(default_factory=list)
    files: int = 0
    rows: int = 0

    @property
    def ok(self) -> bool:
        return not self.problems


def _read_file(path: Path, relative: str, expected_rows: int | None) -> tuple[int, str | None]:
    """Rows of one Parquet file read in full, and what is wrong with it (or None)."""
    try:
        table = pq.read_table(path, page_checksum_verification=True)  # CRCs written by the run store
    except (pa.ArrowException, OSError) as exc:
        return 0, f"{relative}: unreadable ({first_line(exc)})"
    if expected_rows is not None and table.num_rows != expected_rows:
        return table.num_rows, f"{relative}: {table.num_rows:,} rows, the manifest says {expected_rows:,}"
    name = relative.split("/", 1)[0].removesuffix(".parquet")
    schema = TABLES.get(name)
    if schema is not None:
        # nullable columns added in later versions read as null; required ones must be there
        # (rank is the folder name of a partitioned table)
        missing = [
            f.name
            for f in schema
            if not f.nullable
            and f.name not in table.column_names
            and not (f.name == "rank" and name in PARTITIONED_TABLES)
        ]
        if missing:
            return table.num_rows, f"{relative}: lacks required column(s) {', '.join(missing)}"
    return table.num_rows, None


def verify(run_dir: Path, manifest: dict) -> Verdict:
    """The full check: files against the manifest, then every file read (see the module doc)."""
    verdict = Verdict(str(run_dir), problems=problems_with_files(run_dir, manifest))
    parts = manifest.get("parts") or {}
    totals = {table: 0 for table in PARTITIONED_TABLES}
    for relative in sorted(run_files(run_dir)):
        expected = parts[relative][0] if relative in parts else None
        rows, problem = _read_file(run_dir / relative, relative, expected)
        verdict.files += 1
        verdict.rows += rows
        if problem:
            verdict.problems.append(problem)
        table = relative.split("/", 1)[0]
        if table in totals:
            totals[table] += rows
    for table, rows in totals.items():
        expected = (manifest.get("counts") or {}).get(table)
        if expected is not None and rows != expected:
            verdict.problems.append(f"{table}: {rows:,} rows in its files, the manifest's counts say {expected:,}")
    return verdict
