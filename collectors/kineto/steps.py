"""Training steps from `ProfilerStep#N` windows: every event of the rank that starts inside a
window gets step N. GPU work is assigned by its own start time, so a kernel launched at the end
of step N that runs after the window closed belongs to step N+1 (or none). A trace without any
ProfilerStep gets no steps: trnprof never invents them."""

from __future__ import annotations

import numpy as np


def assign_steps(ts: np.ndarray, step_ts: np.ndarray, step_end: np.ndarray, step_no: np.ndarray):
    """(step number per event, mask of events inside no window)."""
    if len(step_ts) == 0:
        return np.zeros(len(ts), dtype=np.int64), np.ones(len(ts), dtype=bool)
    order = np.argsort(step_ts, kind="stable")
    starts, ends, numbers = step_ts[order], step_end[order], step_no[order]
    pos = np.searchsorted(starts, ts, side="right") - 1
    safe = np.clip(pos, 0, None)
    inside = (pos >= 0) & (ts < ends[safe])
    return numbers[safe], ~inside
