"""Step time, throughput, MFU and the step breakdown of two runs, each with its significance."""

from __future__ import annotations

import numpy as np

from ..robuststats import bulk_sd
from ..units import NS_PER_S
from .load import BUCKETS, Side
from .stats import compare, compare_means, min_p_value


def _rate_change(base, new) -> float | None:
    return new / base - 1.0 if base and new is not None else None


HALVED = 2.0  # a rate halved or doubled is never within noise


def step_time(base: Side, new: Side, alpha: float) -> dict:
    """The two views of the step time: the typical step (median steady step, slowest rank;
    Mann-Whitney over the steps) and under `effective` the effective step (mean of the steps'
    wall slots; permutation test on means, or the bulk-noise test that a few long steps cannot
    hide behind). `noise_floor_s`: the base's step-to-step noise (bulk standard deviation)."""
    result = compare(base.step_times / NS_PER_S, new.step_times / NS_PER_S, alpha=alpha)
    effective = compare_means(base.slots / NS_PER_S, new.slots / NS_PER_S, alpha=alpha)
    return {
        "base_s": result["base"],
        "new_s": result["new"],
        "change": result["change"],
        "p_value": result["p_value"],
        "significant": result["significant"],
        "base_steps": len(base.step_times),
        "new_steps": len(new.step_times),
        "min_p_value": min_p_value(len(base.step_times), len(new.step_times)),
        "noise_floor_s": bulk_sd(base.step_times / NS_PER_S),
        "effective": {
            "base_s": effective["base"],
            "new_s": effective["new"],
            "change": effective["change"],
            "p_value": effective["p_value"],
            "bulk_p_value": effective["bulk_p_value"],
            "significant": effective["significant"],
        },
    }


def _rate(base, new, significant: bool) -> dict | None:
    """A rate of both runs; beyond noise when its step time is, or when it halved or doubled."""
    if base is None or new is None:
        return None
    change = _rate_change(base, new)
    moved = bool(base > 0 and new > 0 and max(new / base, base / new) >= HALVED) or (base > 0) != (new > 0)
    return {"base": base, "new": new, "change": change, "significant": bool(significant or moved)}


def rates(base: Side, new: Side, step: dict) -> tuple[dict | None, dict | None]:
    """Throughput from each job's samples per step over the typical step, and MFU as the
    stdlib's `mfu` view states it (info's definitions), each with `effective`: the same on the
    effective step. They move with their step time, so they share its significance, and a rate
    halved (or doubled) is never within noise."""
    effective = step["effective"]
    base_tp, new_tp = base.throughput(step["base_s"]), new.throughput(step["new_s"])
    throughput = None
    if base_tp and new_tp:
        throughput = {**_rate(base_tp["value"], new_tp["value"], step["significant"]), "unit": new_tp["unit"]}
        base_eff, new_eff = base.throughput(effective["base_s"]), new.throughput(effective["new_s"])
        throughput["effective"] = _rate(
            base_eff and base_eff["value"], new_eff and new_eff["value"], effective["significant"]
        )
    mfu = _rate(base.mfu, new.mfu, step["significant"])
    if mfu is not None:
        mfu["effective"] = _rate(base.effective_mfu, new.effective_mfu, effective["significant"])
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
        rows.append(
            {
                "category": bucket,
                "base_s": result["base"],
                "new_s": result["new"],
                "delta_s": delta,
                "change": result["change"],
                "p_value": result["p_value"],
                "significant": result["significant"],
            }
        )
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
