"""Step time, throughput, MFU and the step breakdown of two runs, each with its significance."""

from __future__ import annotations

import numpy as np

from ..units import NS_PER_S

from .load import BUCKETS, Side
from .stats import compare, min_p_value



def _rate_change(base, new) -> float | None:
    return new / base - 1.0 if base and new is not None else None


def step_time(base: Side, new: Side, alpha: float) -> dict:
    """Median steady-state step time (slowest rank per step), seconds."""
    result = compare(base.step_times / NS_PER_S, new.step_times / NS_PER_S, alpha=alpha)
    return {"base_s": result["base"], "new_s": result["new"], "change": result["change"],
            "p_value": result["p_value"], "significant": result["significant"],
            "base_steps": len(base.step_times), "new_steps": len(new.step_times),
            "min_p_value": min_p_value(len(base.step_times), len(new.step_times))}


def rates(base: Side, new: Side, step: dict) -> tuple[dict | None, dict | None]:
    """Throughput from each job's samples per step over the median step time, and MFU as the
    stdlib's `mfu` view states it (info's definitions); both move with the step time, so they
    share its significance."""
    base_tp, new_tp = base.throughput(step["base_s"]), new.throughput(step["new_s"])
    throughput = None
    if base_tp and new_tp:
        throughput = {"base": base_tp["value"], "new": new_tp["value"], "unit": new_tp["unit"],
                      "change": _rate_change(base_tp["value"], new_tp["value"]),
                      "significant": step["significant"]}
    base_mfu, new_mfu = base.mfu, new.mfu
    mfu = None
    if base_mfu is not None and new_mfu is not None:
        mfu = {"base": base_mfu, "new": new_mfu, "change": _rate_change(base_mfu, new_mfu),
               "significant": step["significant"]}
    return throughput, mfu


def breakdown(base: Side, new: Side, alpha: float) -> list[dict]:
    """Per bucket: median per step of the ranks' mean time, its change (seconds per step and
    fraction) and significance over the steady steps."""
    rows = []
    for bucket in BUCKETS:
        b = base.breakdown[bucket].astype(float) / NS_PER_S if len(base.breakdown) else np.array([])
        n = new.breakdown[bucket].astype(float) / NS_PER_S if len(new.breakdown) else np.array([])
        result = compare(b, n, alpha=alpha)
        delta = None if result["base"] is None or result["new"] is None else result["new"] - result["base"]
        rows.append({"category": bucket, "base_s": result["base"], "new_s": result["new"], "delta_s": delta,
                     "change": result["change"], "p_value": result["p_value"],
                     "significant": result["significant"]})
    return rows


def mover(rows: list[dict], step: dict) -> str | None:
    """The bucket that moved the step time: the largest change in the step time's direction,
    preferring the significant ones; None when the step time did not change significantly."""
    if not step["significant"] or not step["base_s"] or step["new_s"] is None:
        return None
    sign = 1.0 if step["new_s"] > step["base_s"] else -1.0
    moved = [r for r in rows if r["delta_s"] is not None and sign * r["delta_s"] > 0]
    if not moved:
        return None
    best = max(moved, key=lambda r: (r["significant"], sign * r["delta_s"]))
    return best["category"]
