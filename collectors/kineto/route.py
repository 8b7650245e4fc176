"""Where each staged entry goes: events, counters, flows, meta or quarantine (with the reason).

- `X` complete events and instants (`i`/`I`, except `[memory]`) -> events;
- `C` counter events and `[memory]` instants -> counters;
- flow events `s`/`t`/`f` -> flows; metadata `M` -> meta;
- anything unusable -> quarantine. Reasons, checked in this order (the first that applies is
  recorded); `malformed_event` is decided earlier, when an entry is not an event object at all.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .columns import FLOW_PHASES, KNOWN_PHASES, MAX_NAME_BYTES
from .times import MISSING, NOT_A_NUMBER, OUT_OF_RANGE, PROBLEMS

REASONS = (
    "unsupported_phase",
    "missing_time",
    "bad_time",
    "time_out_of_range",
    "missing_duration",
    "bad_duration",
    "duration_out_of_range",
    "negative_duration",
    "name_too_long",
    "bad_counter_value",
    "bad_memory_event",
    "negative_time",
)
MALFORMED = "malformed_event"
DESTINATIONS = ("events", "counters", "flows", "meta", "quarantine")
EVENTS, COUNTERS, FLOWS, META, QUARANTINE = range(5)


def np_mask(mask) -> np.ndarray:
    if isinstance(mask, np.ndarray):
        return mask
    return mask.fill_null(False).to_numpy(zero_copy_only=False)


def reason_codes(rows: pa.Table) -> np.ndarray:
    """0 for usable rows, else 1 + index into REASONS (checks that need no time base)."""
    code = np.zeros(rows.num_rows, dtype=np.int8)

    def mark(reason, mask):
        code[(code == 0) & np_mask(mask)] = REASONS.index(reason) + 1

    ph = rows["ph"]
    timed = pc.invert(pc.equal(ph, "M"))
    complete = pc.equal(ph, "X")
    ts_problem, dur_problem = rows["ts_problem"], rows["dur_problem"]
    mark("unsupported_phase", pc.invert(pc.is_in(ph, pa.array(KNOWN_PHASES))))
    mark("missing_time", pc.and_(timed, pc.equal(ts_problem, MISSING)))
    mark("bad_time", pc.and_(timed, pc.equal(ts_problem, NOT_A_NUMBER)))
    mark("time_out_of_range", pc.and_(timed, pc.equal(ts_problem, OUT_OF_RANGE)))
    mark("missing_duration", pc.and_(complete, pc.equal(dur_problem, MISSING)))
    mark("bad_duration", pc.and_(complete, pc.equal(dur_problem, NOT_A_NUMBER)))
    mark("duration_out_of_range", pc.and_(complete, pc.equal(dur_problem, OUT_OF_RANGE)))
    mark("negative_duration", pc.and_(complete, pc.less(rows["dur"], 0)))
    mark("name_too_long", pc.greater(pc.binary_length(rows["name"]), MAX_NAME_BYTES))
    return code


def destinations(rows: pa.Table, code: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(destination per row, mask of `[memory]` instants among the counter rows)."""
    ph = rows["ph"]
    instant = np_mask(pc.is_in(ph, pa.array(["i", "I"])))
    memory = instant & np_mask(pc.equal(rows["name"], "[memory]"))
    dest = np.full(rows.num_rows, QUARANTINE, dtype=np.int8)
    ok = code == 0
    dest[ok & (np_mask(pc.equal(ph, "X")) | (instant & ~memory))] = EVENTS
    dest[ok & (memory | np_mask(pc.equal(ph, "C")))] = COUNTERS
    dest[ok & np_mask(pc.is_in(ph, pa.array(FLOW_PHASES)))] = FLOWS
    dest[ok & np_mask(pc.equal(ph, "M"))] = META
    return dest, memory


def problem_detail(ts_problem: int, dur_problem: int) -> str | None:
    if ts_problem:
        return f"ts: {PROBLEMS[ts_problem]}"
    if dur_problem:
        return f"dur: {PROBLEMS[dur_problem]}"
    return None
