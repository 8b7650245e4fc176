"""The extra tables a trace ingest writes beside events and counters (documented in
docs/ingest.md): `flows` (Kineto flow arrows), `meta` (metadata events and the trace's
top-level keys) and `quarantine` (entries that could not be used, with the reason)."""

from __future__ import annotations

import json

import pyarrow as pa

from .limits import bounded_source

FLOWS = pa.schema(
    [
        ("rank", pa.int32()),
        ("ph", pa.string()),
        ("cat", pa.string()),
        ("name", pa.string()),
        ("id", pa.string()),
        ("bp", pa.string()),
        ("ts", pa.int64()),
        ("pid", pa.string()),
        ("tid", pa.string()),
        ("args", pa.string()),
    ]
)
META = pa.schema(
    [
        ("rank", pa.int32()),
        ("source", pa.string()),
        ("kind", pa.string()),
        ("name", pa.string()),
        ("pid", pa.string()),
        ("tid", pa.string()),
        ("value", pa.string()),
    ]
)
QUARANTINE = pa.schema(
    [
        ("rank", pa.int32()),
        ("source", pa.string()),
        ("index", pa.int64()),
        ("reason", pa.string()),
        ("detail", pa.string()),
        ("event", pa.string()),
    ]
)


def quarantine_table(rows: list[tuple], rank: int | None, source: str) -> pa.Table:
    """rows: (index, reason, detail, event JSON text)."""
    n = len(rows)
    columns = list(zip(*rows)) if rows else [[], [], [], []]
    columns[3] = [bounded_source(text) for text in columns[3]]
    return pa.table(
        {
            "rank": pa.array([rank] * n, pa.int32()),
            "source": pa.array([source] * n, pa.string()),
            "index": pa.array(columns[0], pa.int64()),
            "reason": pa.array(columns[1], pa.string()),
            "detail": pa.array(columns[2], pa.string()),
            "event": pa.array(columns[3], pa.string()),
        },
        schema=QUARANTINE,
    )


def _column(values, type_: pa.DataType):
    """A column from a list, or an Arrow column as it is (no round trip through Python objects)."""
    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        return values.cast(type_)
    return pa.array(values, type_)


def meta_rows(names, pids, tids, values, kind: str, rank: int | None, source: str) -> pa.Table:
    """Metadata rows; names, pids, tids and values are lists or Arrow columns of one length."""
    n = len(names)
    return pa.table(
        {
            "rank": pa.repeat(pa.scalar(rank, pa.int32()), n),
            "source": pa.repeat(pa.scalar(source, pa.string()), n),
            "kind": pa.repeat(pa.scalar(kind, pa.string()), n),
            "name": _column(names, pa.string()),
            "pid": _column(pids, pa.string()),
            "tid": _column(tids, pa.string()),
            "value": _column(values, pa.string()),
        },
        schema=META,
    )


def us_text(ns: int) -> str:
    """ns as exact decimal µs text."""
    sign = "-" if ns < 0 else ""
    whole, frac = divmod(abs(ns), 1000)
    return f"{sign}{whole}.{frac:03d}"


def rebuild_event(ph, name, ts, dur, args_json: str) -> str:
    """A source entry rebuilt from staged columns: `args_json` holds cat, pid, tid, args;
    times go back to µs as exact decimal numbers."""
    head = [f'"ph":{json.dumps(ph)}', f'"name":{json.dumps(name, ensure_ascii=False)}']
    head += [f'"{key}":{us_text(ns)}' for key, ns in (("ts", ts), ("dur", dur)) if ns is not None]
    rest = args_json.strip()[1:]
    return "{" + ",".join(head) + ("," + rest if rest.strip() != "}" else "}")
