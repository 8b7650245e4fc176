"""`host_metrics.jsonl` (written by `trnprof.record.hostmetrics`) -> counters.

Line 1 is the header (`trnprof_host_metrics`, interval, host name, CPU count: kept in
`ingest/meta`); a header's `job` object (the software stack `trnprof record`'s runtime detected
in the job's process: `framework`, `neuron_sdk`, `device_kind`, `stack_packages`) becomes job facts of the run,
each kept only when it is a short string (a map of short strings for `stack_packages`); every other
line is one sample time with its `[rank, name, value, unit]` rows.
A line that is not of that shape, or a row whose rank, value or time the tables cannot hold, is
quarantined (`malformed_event`, `bad_counter_value`, `bad_time`, `rank_out_of_range`).
**Accounting:** a source record is one line: to counters, meta or quarantine.
"""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pyarrow as pa

from trnprof.collectors.common.limits import MAX_RANK, MAX_TIME_NS, finite_number
from trnprof.collectors.common.source import Source
from trnprof.collectors.common.tables import meta_rows, quarantine_table
from trnprof.collectors.neuron.util import open_text
from trnprof.runstore import conform
from trnprof.schema import COUNTERS

from .format import FORMAT, HEADER_KEY

STACK_KEYS = ("framework", "neuron_sdk", "device_kind")
MAX_FACT = 64  # characters of a stack fact; longer is not one
MAX_PACKAGES = 32


def _fact(value) -> bool:
    return isinstance(value, str) and 0 < len(value) <= MAX_FACT


def _header(meta: list[str]) -> dict:
    try:
        header = json.loads(meta[0]) if meta else {}
    except ValueError:
        return {}
    return header if isinstance(header, dict) else {}


def stack_job(header: dict) -> dict:
    """The header's stack facts that have the documented shape; the rest is left out."""
    given = header.get("job") if isinstance(header.get("job"), dict) else {}
    job = {key: given[key] for key in STACK_KEYS if _fact(given.get(key))}
    packages = given.get("stack_packages")
    if isinstance(packages, dict) and len(packages) <= MAX_PACKAGES:
        kept = {k: v for k, v in packages.items() if _fact(k) and _fact(v)}
        if kept:
            job["stack_packages"] = kept
    return job


class Sample(msgspec.Struct, forbid_unknown_fields=True):
    ts: int
    samples: list[tuple[int, str, float, str]]


def _problem(row, ts: int) -> tuple[str, str] | None:
    rank, _, value, _ = row
    if not 0 <= rank <= MAX_RANK:
        return "rank_out_of_range", f"rank {rank}"
    if finite_number(value) is None:
        return "bad_counter_value", f"value {value!r}"
    if not 0 <= ts <= MAX_TIME_NS:
        return "bad_time", f"ts {ts}"
    return None


def read_host_metrics(path: Path, rank: int | None = None) -> Source:
    """`rank` is ignored: every row names its rank."""
    lines = [line for line in open_text(path).splitlines() if line.strip()]
    rows = {name: [] for name in ("rank", "ts", "name", "value", "unit")}
    quarantine, meta, ranks = [], [], set()
    decoder = msgspec.json.Decoder(Sample)
    for index, line in enumerate(lines):
        if index == 0 and HEADER_KEY in line:
            meta.append(line)
            continue
        try:
            sample = decoder.decode(line)
        except msgspec.DecodeError as exc:
            quarantine.append((index, "malformed_event", str(exc), line))
            continue
        bad = next((p for p in (_problem(row, sample.ts) for row in sample.samples) if p), None)
        if bad:
            quarantine.append((index, bad[0], bad[1], line))
            continue
        for r, name, value, unit in sample.samples:
            for key, v in zip(rows, (r, sample.ts, name, value, unit)):
                rows[key].append(v)
            ranks.add(r)
    counters = conform(pa.table({k: pa.array(v, COUNTERS.field(k).type) for k, v in rows.items()}), "counters")
    sampled = len(lines) - len(meta) - len(quarantine)
    reasons: dict[str, int] = {}
    for _, reason, _, _ in quarantine:
        reasons[reason] = reasons.get(reason, 0) + 1
    counts = {
        "source_entries": len(lines),
        "to": {"counters": sampled, "meta": len(meta), "quarantine": len(quarantine)},
        "counter_rows": counters.num_rows,
        "quarantine_reasons": dict(sorted(reasons.items())),
    }
    header = _header(meta)
    return Source(
        path=path,
        format=FORMAT,
        counters=counters,
        extra={
            "ingest/meta": meta_rows(
                [HEADER_KEY] * len(meta), [None] * len(meta), [None] * len(meta), meta, FORMAT, None, path.name
            )
        },
        quarantine=quarantine_table(quarantine, None, path.name),
        ranks=[
            {"rank": r, "host": header.get("host") if isinstance(header.get("host"), str) else None}
            for r in sorted(ranks)
        ],
        counts=counts,
        rank_from="each sample row",
        job=stack_job(header),
    )
