"""One staged chunk mapped: where each row goes (`route`), the meta, counter and flow rows, the
partial event rows with their side facts, the quarantined entries and the per-source counts.
A chunk of a Kineto trace maps on its own (so a worker process may map it: workers.py); one of a
trnprof export reads the thread names of the chunks before it (`lanes`). trace.py gathers the
chunks' results in file order.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import msgspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from trnprof.collectors.common.tables import meta_rows, rebuild_event
from trnprof.errors import TrnprofError

from . import classify
from .columns import Staged
from .counters import memory_counters, series_counters
from .partial import exported_events, partial_events, rows_where
from .route import (
    COUNTERS,
    DESTINATIONS,
    EVENTS,
    FLOWS,
    MALFORMED,
    META,
    QUARANTINE,
    REASONS,
    destinations,
    problem_detail,
    reason_codes,
)


@dataclass
class Mapped:
    entries: int  # source entries in the chunk, malformed ones included
    truncated_args: int
    lanes: dict = field(default_factory=dict)  # (pid, tid) -> thread name, from its meta rows
    meta: pa.Table | None = None
    samples: list = field(default_factory=list)  # counter samples (counters.counters_table)
    flows: pa.Table | None = None
    partial: pa.Table | None = None  # event rows, spilled as they come
    side: dict | None = None  # partial.partial_events' facts, `margs` the args kept for the end
    quarantine: list = field(default_factory=list)  # (idx, reason, detail, source JSON)
    by_source: Counter = field(default_factory=Counter)  # (source key, destination) -> entries


def map_chunk(staged: Staged, source: str, lanes: dict | None = None) -> Mapped:
    """`staged`'s rows mapped. `lanes`: for a trnprof export, the thread names of the chunks
    before this one (None: a Kineto trace). `source` names the file in meta rows."""
    rows = staged.rows
    mapped = Mapped(rows.num_rows + len(staged.bad), staged.truncated_args)
    code = reason_codes(rows)
    dest, memory = destinations(rows, code)
    if (dest == META).any():
        mapped.meta = _meta(rows.filter(dest == META), source, mapped.lanes)
    counter_rows = dest == COUNTERS
    if counter_rows.any():
        bad = _counters(mapped, rows, staged.args, memory & counter_rows, counter_rows & ~memory, lanes is not None)
        if bad:
            flagged = pc.is_in(rows["idx"], pa.array(bad, pa.int64())).to_numpy(zero_copy_only=False)
            code[flagged] = [REASONS.index(r) + 1 for r in _bad_reasons(memory[flagged])]
            dest[flagged] = QUARANTINE
    if (dest == FLOWS).any():
        mapped.flows = _flows(rows.filter(dest == FLOWS), staged.flows)
    events = rows_where(rows, dest == EVENTS)
    if events.num_rows:
        if lanes is not None:
            _exported(mapped, events, {**lanes, **mapped.lanes})
        else:
            _kineto(mapped, events, staged.args)
    mapped.quarantine = _quarantined(rows, code, dest, staged)
    _count_sources(mapped, rows, dest, len(staged.bad))
    return mapped


def _row_ranks(rows: pa.Table, export: bool) -> np.ndarray:
    if not export:
        return np.full(rows.num_rows, -1, dtype=np.int64)
    pids = rows["pid"].to_pylist()
    return np.array([int(p) if p and p.lstrip("-").isdigit() else -1 for p in pids], dtype=np.int64)


def _bad_reasons(memory: np.ndarray) -> list[str]:
    return ["bad_memory_event" if m else "bad_counter_value" for m in memory]


def _counters(mapped: Mapped, rows, margs, memory, series, export: bool) -> list[int]:
    bad = []
    ranks = _row_ranks(rows, export)
    if memory.any():
        samples, wrong = memory_counters(rows.filter(memory), margs, ranks[memory])
        mapped.samples.append(samples)
        bad += wrong
    if series.any():
        samples, wrong = series_counters(rows.filter(series), ranks[series], export)
        mapped.samples.append(samples)
        bad += wrong
    return bad


def _meta(rows: pa.Table, source: str, lanes: dict) -> pa.Table:
    """The meta rows as kept; the lanes' names gathered into `lanes`."""
    threads = rows.filter(pc.equal(rows["name"], "thread_name"))
    for pid, tid, value in zip(*(threads[c].to_pylist() for c in ("pid", "tid", "args"))):
        inner = msgspec.json.decode(value.encode()).get("args")
        lane = inner.get("name") if isinstance(inner, dict) else None
        if isinstance(lane, str):
            lanes[(pid, tid)] = lane
    return meta_rows(rows["name"], rows["pid"], rows["tid"], rows["args"], "M", None, source)


def _flows(rows: pa.Table, ids: pa.Table) -> pa.Table:
    found = pc.index_in(rows["idx"], ids["idx"])
    return pa.table(
        {
            "rank": pa.nulls(rows.num_rows, pa.int32()),
            "ph": rows["ph"],
            "cat": rows["cat"],
            "name": rows["name"],
            "id": pc.take(ids["id"], found),
            "bp": pc.take(ids["bp"], found),
            "ts": rows["ts"],
            "pid": rows["pid"],
            "tid": rows["tid"],
            "args": rows["args"],
        }
    )


def _exported(mapped: Mapped, events: pa.Table, lanes: dict) -> None:
    try:
        mapped.partial = exported_events(events, lanes)
    except msgspec.ValidationError as exc:
        raise TrnprofError(f"not a valid trnprof export: {exc}") from None


def _kineto(mapped: Mapped, events: pa.Table, margs: pa.Table) -> None:
    mapped.partial, side = partial_events(events, margs)
    wanted = pc.is_in(
        margs["idx"],
        pa.concat_arrays([side["held"]["idx"].combine_chunks(), side["records"]["idx"].combine_chunks()]),
    )
    side["margs"] = margs.filter(wanted).to_pandas()  # per chunk: its args' types vary between chunks
    mapped.side = side


def _quarantined(rows: pa.Table, code, dest, staged: Staged) -> list:
    kept = []
    flagged = dest == QUARANTINE
    if flagged.any():
        q = rows.filter(flagged)
        for idx, c, ph, name, ts, dur, ts_problem, dur_problem, args in zip(
            q["idx"].to_pylist(),
            code[flagged].tolist(),
            q["ph"].to_pylist(),
            q["name"].to_pylist(),
            q["ts"].to_pylist(),
            q["dur"].to_pylist(),
            q["ts_problem"].to_pylist(),
            q["dur_problem"].to_pylist(),
            q["args"].to_pylist(),
        ):
            original = staged.originals.get(idx)
            event = original.decode("utf-8", "replace") if original else rebuild_event(ph, name, ts, dur, args)
            kept.append((idx, REASONS[c - 1], problem_detail(ts_problem, dur_problem), event))
    for idx, error, raw in staged.bad:
        kept.append((idx, MALFORMED, error, raw.decode("utf-8", "replace")))
    return kept


def _count_sources(mapped: Mapped, rows: pa.Table, dest: np.ndarray, malformed: int) -> None:
    (phs, cats, dests), inverse = classify.distinct_rows(rows["ph"], rows["cat"], pa.array(dest))
    counts = np.bincount(inverse.to_numpy(), minlength=len(phs))
    for ph, cat, d, n in zip(phs.to_pylist(), cats.to_pylist(), dests.to_pylist(), counts.tolist()):
        mapped.by_source[(f"{ph}/{cat or '-'}", DESTINATIONS[d])] += n
    if malformed:
        mapped.by_source[("malformed", "quarantine")] += malformed
