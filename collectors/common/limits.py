"""Integer ranges the canonical tables can hold, checked before any value reaches Arrow, so an
out-of-range number in a source is one clear error (or a quarantine row), never a traceback."""

from __future__ import annotations

from trnprof.errors import TrnprofError

MAX_RANK = (1 << 31) - 1  # ranks are int32 (the hive partition key)
MAX_TIME_NS = 1 << 62  # as trnprof.runstore: ts + dur must fit in int64 with room for sums
MAX_INT64 = (1 << 63) - 1


def check_rank(value: int, where: str) -> int:
    """`value` as a rank, or one error naming where it came from."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TrnprofError(f"{where}: a rank must be an integer, got {value!r}")
    if not 0 <= value <= MAX_RANK:
        raise TrnprofError(f"{where}: rank {value} is out of range (0 .. {MAX_RANK})")
    return value


def in_int64(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and -MAX_INT64 - 1 <= value <= MAX_INT64


def finite_number(value) -> float | None:
    """A JSON number as a finite float, else None (bools, strings, 1e400, NaN are not numbers here)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if number == number and abs(number) != float("inf") else None


# Largest `args` object in the real test traces (tests/data/kineto): 6,720 bytes of JSON. An
# event's args beyond 64 KiB are not metadata but a corrupt or hostile entry: they are replaced
# by {"trnprof_truncated_bytes": N} (the event itself is kept), counted and reported, so every
# value a run holds stays small enough to read within the default memory budget (a single
# 200 MB string made DuckDB run out of memory on every command).
MAX_ARGS_BYTES = 1 << 16
# Source JSON kept per quarantined entry (the `event` column of ingest/quarantine).
MAX_QUARANTINED_BYTES = 1 << 16


def truncated_args(size: int) -> bytes:
    """What replaces an `args` object of `size` bytes over MAX_ARGS_BYTES."""
    return b'{"trnprof_truncated_bytes":%d}' % size


def bounded_source(text: str | None) -> str | None:
    """A quarantined entry's source JSON, cut at MAX_QUARANTINED_BYTES (then no longer JSON)."""
    if text is None or len(text) <= MAX_QUARANTINED_BYTES // 4:
        return text
    data = text.encode("utf-8")
    if len(data) <= MAX_QUARANTINED_BYTES:
        return text
    return data[:MAX_QUARANTINED_BYTES].decode("utf-8", "ignore") + f"... (truncated: {len(data):,} bytes)"
