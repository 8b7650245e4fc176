"""Ops, collectives and memory of two runs matched side by side.

Ops are matched by kind, name and lane class (steady_op_totals) and normalised per rank and per
step, so runs of different world sizes compare: an op's value in a step is its summed time over
ranks divided by the ranks that recorded the step."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..units import NS_PER_S
from .load import Side
from .stats import compare

OP_KEY = ["kind", "name", "lane"]


def op_series(side: Side) -> pd.DataFrame:
    """Per op (rows) and steady step (columns): seconds per rank; 0 where the op did not run."""
    ranks = side.breakdown.set_index("step")["ranks"].astype(float)
    ops = side.ops[side.ops["step"].isin(ranks.index)]
    if ops.empty:
        return pd.DataFrame(columns=list(ranks.index), index=pd.MultiIndex.from_arrays([[], [], []], names=OP_KEY))
    wide = ops.pivot_table(index=OP_KEY, columns="step", values="dur", aggfunc="sum", fill_value=0.0)
    wide = wide.reindex(columns=ranks.index, fill_value=0.0).astype(float)
    return wide / ranks.to_numpy() / NS_PER_S


def _op_rows(
    frame: pd.DataFrame, base_wide: pd.DataFrame, new_wide: pd.DataFrame, alpha: float, noise_floor_s: float
) -> list[dict]:
    """Rows of `frame`'s ops; an op only one run has (new or gone) that costs more per step than
    the base's step-to-step noise is never within noise."""
    rows = []
    for key, row in frame.iterrows():
        b = base_wide.loc[key].to_numpy() if key in base_wide.index else np.zeros(base_wide.shape[1])
        n = new_wide.loc[key].to_numpy() if key in new_wide.index else np.zeros(new_wide.shape[1])
        test = compare(b, n, alpha=alpha)
        rows.append(
            {
                "name": key[1],
                "kind": key[0],
                "lane": key[2],
                "base_s": float(row["base_s"]),
                "new_s": float(row["new_s"]),
                "delta_s": float(row["delta_s"]),
                "change": float(row["new_s"] / row["base_s"] - 1.0) if row["base_s"] > 0 else None,
                "p_value": test["p_value"],
                "significant": bool(test["significant"] or _alone(row, noise_floor_s)),
            }
        )
    return rows


def _alone(row, noise_floor_s: float) -> bool:
    """An op of one run only whose mean time per step is above the noise floor."""
    return (row["base_s"] == 0) != (row["new_s"] == 0) and abs(row["delta_s"]) > noise_floor_s


def ops(base: Side, new: Side, alpha: float, top: int, noise_floor_s: float = 0.0) -> tuple[list[dict], list[dict]]:
    """The `top` regressions and improvements by op: mean seconds per rank and step in each run,
    the difference, and whether the per-step values differ beyond noise (an op of one run only
    costing more than `noise_floor_s` per step always does)."""
    base_wide, new_wide = op_series(base), op_series(new)
    frame = pd.concat([base_wide.mean(axis=1).rename("base_s"), new_wide.mean(axis=1).rename("new_s")], axis=1).fillna(
        0.0
    )
    frame["delta_s"] = frame["new_s"] - frame["base_s"]
    worse = frame[frame["delta_s"] > 0].sort_values("delta_s", ascending=False).head(top)
    better = frame[frame["delta_s"] < 0].sort_values("delta_s").head(top)
    return (
        _op_rows(worse, base_wide, new_wide, alpha, noise_floor_s),
        _op_rows(better, base_wide, new_wide, alpha, noise_floor_s),
    )


def _per_class(side: Side) -> pd.DataFrame:
    frame = side.collectives.copy()
    steps = max(len(side.step_times), 1)
    frame["size_class"] = frame["size_class"].fillna(-1).astype("int64")
    frame["n_per_step"] = frame["n"].astype(float) / steps
    frame["transfer_s"] = frame["transfer_ns"].astype(float) / frame["n"].astype(float) / NS_PER_S
    return frame.set_index(["coll_op", "size_class"])[["n_per_step", "busbw_median", "transfer_s"]]


def collectives(base: Side, new: Side) -> list[dict]:
    """Per collective op and size class: instances per step, median bus bandwidth and mean
    transfer time per instance in each run, and the bus bandwidth change."""
    b, n = _per_class(base), _per_class(new)
    joined = b.add_suffix("_base").join(n.add_suffix("_new"), how="outer")
    rows = []
    for (op, size), row in joined.sort_index().iterrows():
        bb, nb = row["busbw_median_base"], row["busbw_median_new"]
        rows.append(
            {
                "coll_op": op,
                "size_class": None if size < 0 else int(size),
                "base_per_step": _num(row["n_per_step_base"]),
                "new_per_step": _num(row["n_per_step_new"]),
                "base_busbw": _num(bb),
                "new_busbw": _num(nb),
                "busbw_change": float(nb / bb - 1.0) if _num(bb) and _num(nb) is not None else None,
                "base_transfer_s": _num(row["transfer_s_base"]),
                "new_transfer_s": _num(row["transfer_s_new"]),
            }
        )
    return rows


def memory(base: Side, new: Side) -> list[dict]:
    """Device memory at the peak by category (largest over ranks), and the peak itself."""

    def table(side: Side) -> pd.Series:
        frame = side.memory
        series = frame.set_index("category")["bytes"].astype(float)
        if len(frame):
            series.loc["peak (all categories)"] = float(frame["peak_bytes"].max())
        return series

    joined = pd.concat([table(base).rename("base"), table(new).rename("new")], axis=1)
    return [
        {
            "category": cat,
            "base_bytes": _num(row["base"]),
            "new_bytes": _num(row["new"]),
            "change": float(row["new"] / row["base"] - 1.0)
            if _num(row["base"]) and _num(row["new"]) is not None
            else None,
        }
        for cat, row in joined.iterrows()
    ]


def _num(value) -> float | None:
    return None if value is None or pd.isna(value) else float(value)
