"""Profiler 2.0 `system_profile.json` (`neuron-profile view --output-format json`) -> events and
counters (docs/ingest.md, "Neuron system profile").

Shape, from the Neuron docs (aws-neuron/aws-neuron-sdk archive/profiler/neuron-profiler-2-0-beta-user-guide.rst
.txt): `trace_events` (runtime API and framework events: `name`, `timestamp` and `duration` in
ns, `thread_id`, `process_id`, `lnc_idx`, `group`, `type`, ...), `mem_usage` (host memory
samples) and `cpu_util` (per-CPU utilisation samples). An event may also come wrapped in its
type (`{"Neuron_Runtime_API_Event": {...}}`), as the docs print it. No real file was available:
the tests use inputs built from these documented fields.

Rank = `--rank` (default 0) + `lnc_idx`; events without `lnc_idx` (framework events) take the
NeuronCore of their process when it ran on exactly one, else `--rank`. Kinds and lanes:
`names.py`. `mem_usage` -> `host.memory.used` (bytes) and `host.memory.used_percent`;
`cpu_util` -> `host.cpu.<cpu_id>.util` (percent), both on the first rank. Every field without a
column stays in `args` (of events and of counter samples); other top-level keys go to the meta
table.

Accounting: a source record is one trace event, one sample or one other top-level key; each goes
to events, counters, meta or quarantine (reasons: `malformed_event`, `missing_time`, `bad_time`
(not an integer, or beyond +-2^62 ns), `missing_duration`, `bad_duration`, `negative_time`,
`negative_duration`, `rank_out_of_range`, `bad_counter_value` (a sample whose timestamp or value
is missing or not a number, named in the detail)). A section that is not an array is one error.
"""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pyarrow as pa

from trnprof.collectors.common.limits import MAX_RANK, MAX_TIME_NS, in_int64
from trnprof.collectors.common.source import Source
from trnprof.collectors.common.tables import meta_rows, quarantine_table
from trnprof.errors import TrnprofError
from trnprof.schema import COUNTERS, EVENTS

from .names import classify
from .system_samples import samples
from .util import open_text

SECTIONS = ("trace_events", "mem_usage", "cpu_util")
MAPPED = ("name", "timestamp", "duration")


def _int(value):
    """An integer field (the docs print some as strings: `"lnc_idx": "0"`), within int64."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str) and value.strip().lstrip("-").isdigit() and len(value) < 40:
        value = int(value)
    return value if isinstance(value, int) and in_int64(value) else None


def _unwrap(entry):
    """An event object, and the type name it was wrapped in (if any)."""
    if isinstance(entry, dict) and len(entry) == 1:
        ((kind, inner),) = entry.items()
        if isinstance(inner, dict) and "timestamp" in inner:
            return inner, kind
    return entry, None


def read_system_profile(path: Path, rank: int | None = None) -> Source:
    try:
        document = msgspec.json.decode(open_text(path))
    except msgspec.DecodeError as exc:
        raise TrnprofError(f"{path}: invalid JSON: {exc}") from None
    if not isinstance(document, dict) or not any(k in document for k in SECTIONS):
        raise TrnprofError(f"{path}: not a Neuron system profile (expected {', '.join(SECTIONS)})")
    for section in SECTIONS:
        if document.get(section) is not None and not isinstance(document[section], list):
            raise TrnprofError(f"{path}: {section} is not an array (got {type(document[section]).__name__})")
    base = rank or 0
    entries = document.get("trace_events") or []
    events = [_unwrap(e) for e in entries]
    cores_of_process: dict = {}
    for event, _ in events:
        if isinstance(event, dict) and _int(event.get("lnc_idx")) is not None:
            cores_of_process.setdefault(str(event.get("process_id")), set()).add(_int(event["lnc_idx"]))
    rows, quarantine = [], []
    for index, (event, wrapper) in enumerate(events):
        row, problem = _event(event, wrapper, base, cores_of_process)
        if problem:
            quarantine.append((index, problem, None, json.dumps(entries[index], ensure_ascii=False)))
        else:
            rows.append(row)
    ranks = sorted({r["rank"] for r in rows} | {base})
    counter_rows, used, sample_problems = samples(document, ranks[0])
    quarantine += sample_problems
    other = {k: v for k, v in document.items() if k not in SECTIONS}
    meta = meta_rows(
        list(other),
        [None] * len(other),
        [None] * len(other),
        [json.dumps(v, ensure_ascii=False) for v in other.values()],
        "neuron-system-profile",
        None,
        path.name,
    )
    events_table = pa.Table.from_pylist(rows, schema=EVENTS) if rows else EVENTS.empty_table()
    counters = pa.Table.from_pylist(counter_rows, schema=COUNTERS) if counter_rows else COUNTERS.empty_table()
    reasons = {}
    for _, reason, _, _ in quarantine:
        reasons[reason] = reasons.get(reason, 0) + 1
    counts = {
        "source_entries": len(entries) + used + len(sample_problems) + len(other),
        "to": {"events": len(rows), "counters": used, "meta": len(other), "quarantine": len(quarantine)},
        "counter_rows": counters.num_rows,
        "quarantine_reasons": dict(sorted(reasons.items())),
    }
    return Source(
        path=path,
        format="neuron-system-profile",
        events=events_table,
        counters=counters,
        extra={"ingest/meta": meta},
        quarantine=quarantine_table(quarantine, None, path.name),
        ranks=[{"rank": r} for r in ranks],
        counts=counts,
        rank_from="--rank + lnc_idx" if rank is not None else "lnc_idx",
    )


def _event(event, wrapper, base: int, cores_of_process: dict):
    if not isinstance(event, dict):
        return None, "malformed_event"
    ts, dur = _int(event.get("timestamp")), _int(event.get("duration"))
    if ts is None or abs(ts) > MAX_TIME_NS:
        return None, "missing_time" if event.get("timestamp") is None else "bad_time"
    if dur is None or dur > MAX_TIME_NS:
        return None, "missing_duration" if event.get("duration") is None else "bad_duration"
    if ts < 0:
        return None, "negative_time"
    if dur < 0:
        return None, "negative_duration"
    name = event.get("name")
    if not isinstance(name, str):
        return None, "malformed_event"
    core = _int(event.get("lnc_idx"))
    if core is None:
        cores = cores_of_process.get(str(event.get("process_id")), set())
        core = next(iter(cores)) if len(cores) == 1 else 0
    if not 0 <= base + core <= MAX_RANK:
        return None, "rank_out_of_range"
    origin, group = event.get("trace_event_source"), event.get("group")
    kind, lane = classify(name, origin if isinstance(origin, str) else None, group if isinstance(group, str) else None)
    args = {k: v for k, v in event.items() if k not in MAPPED}
    if wrapper:
        args["event_type"] = wrapper
    bytes_ = _int(event.get("size")) if kind == "transfer" else None
    return {
        "rank": base + core,
        "ts": ts,
        "dur": dur,
        "kind": kind,
        "name": name,
        "lane": lane or f"host/tid-{_lane_id(event.get('thread_id'))}",
        "bytes": bytes_,
        "args": json.dumps(args, ensure_ascii=False),
    }, None


def _lane_id(thread) -> str:
    return str(thread) if isinstance(thread, (int, str)) and not isinstance(thread, bool) else "unknown"
