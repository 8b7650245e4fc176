"""Replay prices kept in the run's `derived/` cache. A fix's replayed step time is a fact of the
run (its events and steady steps) and of the replay's code, so the next command over the same
run (`analyze` again, `report` after `analyze`) reads it instead of building and solving the
run's graph again (at 206k events about a third of a warm `analyze`).

Each price is a stored entry of its own (`derived.Store`: written whole under a temporary name,
checksummed, verified before its first read), named by a digest of its scale specs and of the
replay's source code and version, so a price is never read by other code than made it. Whoever
can write the run folder can write such an entry too: it is read as data, never trusted. It must
hold one row for exactly these specs, with finite step times in range, in a file of at most
MAX_ENTRY_BYTES whose footer says as much of its data; an entry that does not is ignored (the
price is computed again), never an error. Nothing is kept where the cache is off or
cannot be written but for the session's own scratch folder.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import os
from glob import glob
from importlib import resources

import pyarrow as pa
import pyarrow.parquet as pq

from trnprof._version import __version__
from trnprof.derived import Store

ENTRY_PREFIX = "_replay_price_"
SCHEMA = pa.schema(
    [("specs", pa.string()), ("step_time_s", pa.float64()), ("base_mean_s", pa.float64()), ("steps", pa.int64())]
)
MAX_STEP_S = 86_400.0  # a replayed step of more than a day is no step trnprof replayed
MAX_STEPS = 10**9
MAX_ENTRY_BYTES = 64 * 2**10  # an entry is a few hundred bytes
_CODE = (("critical_path", None), ("whatif", "replay.py"), ("whatif", "price_store.py"))


@functools.cache
def code_digest() -> str:
    """Hash of the replay's source files and the trnprof version."""
    digest = hashlib.sha256(__version__.encode())
    for package, only in _CODE:
        folder = resources.files("trnprof") / package
        for entry in sorted(folder.iterdir(), key=lambda p: p.name):
            if entry.name.endswith(".py") and only in (None, entry.name):
                digest.update(f"{package}/{entry.name}".encode() + b"\0" + entry.read_bytes())
    return digest.hexdigest()


def entry_name(specs: list[str]) -> str:
    text = json.dumps(list(specs))
    return ENTRY_PREFIX + hashlib.sha256(f"{code_digest()}\0{text}".encode()).hexdigest()[:24]


def lookup(store: Store | None, specs: list[str]) -> dict | None:
    """The stored price of `specs` ({"step_time_s", "base_mean_s", "steps"}), or None."""
    files = store.files(entry_name(specs)) if store is not None else None
    if files is None:
        return None
    try:
        parts = glob(files)
        table = _bounded_read(parts[0]) if len(parts) == 1 else None
    except (OSError, pa.ArrowException):
        return None
    if table is None or table.num_rows != 1 or not table.schema.equals(SCHEMA):
        return None
    row = table.to_pylist()[0]
    if row["specs"] != json.dumps(list(specs)) or not _in_range(row):
        return None
    return {key: row[key] for key in ("step_time_s", "base_mean_s", "steps")}


def _bounded_read(part: str) -> pa.Table | None:
    """The entry's one row, read only when the file and its rows' data are at most
    MAX_ENTRY_BYTES (a part of a few hundred bytes: nothing larger is a price)."""
    if os.lstat(part).st_size > MAX_ENTRY_BYTES:
        return None
    meta = pq.ParquetFile(part).metadata
    if meta.num_rows != 1 or any(
        meta.row_group(i).total_byte_size > MAX_ENTRY_BYTES for i in range(meta.num_row_groups)
    ):
        return None
    return pq.read_table(part)


def keep(store: Store | None, specs: list[str], price: dict) -> None:
    """Store `price` for `specs`; where it cannot be written, nothing is kept (no error)."""
    if store is None or not _in_range(price):
        return
    name = entry_name(specs)
    row = {"specs": [json.dumps(list(specs))], **{key: [price[key]] for key in ("step_time_s", "base_mean_s", "steps")}}
    try:
        staging = store.staging(name)
    except OSError:
        return
    try:
        pq.write_table(pa.table(row, schema=SCHEMA), staging / "price.parquet", compression="zstd")
        store.commit(name, staging)
    except (OSError, pa.ArrowException):
        store.discard(staging)


def _in_range(row: dict) -> bool:
    times = (row.get("step_time_s"), row.get("base_mean_s"))
    steps = row.get("steps")
    return (
        all(isinstance(t, float) and math.isfinite(t) and 0 < t <= MAX_STEP_S for t in times)
        and isinstance(steps, int)
        and 0 < steps <= MAX_STEPS
    )
