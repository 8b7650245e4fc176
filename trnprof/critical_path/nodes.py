"""The graph's nodes: each lane's top-level work, per step.

Host threads nest events (an op inside an op); a lane's work is its top-level events: an event
inside an earlier one on the same lane is part of it, an event that starts inside one and ends
after it is cut to start where the earlier one ends. Steps and annotations are windows, never
work. An event belongs to the step its collector gave it (Kineto: the ProfilerStep window it
starts in).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

# Host calls that block until the device has finished its queued work.
SYNC_NAME = r"(?i)synchronize|cudaMemcpy(?!Async)|hipMemcpy(?!Async)|nrt_execute_wait"
DEVICE_LANE = r"^(?:gpu|nc/|dma/|mtia|xpu)"
WORK_KINDS = ("compute", "collective", "p2p", "input", "transfer", "memory", "compile", "host")


def events_sql(steps: tuple[int, int]) -> str:
    kinds = ", ".join(f"'{k}'" for k in WORK_KINDS)
    return (f"SELECT rank, step, lane, kind, name, ts, dur, coll_group, coll_seq, bytes FROM events "
            f"WHERE step BETWEEN {int(steps[0])} AND {int(steps[1])} AND kind IN ({kinds}) AND dur >= 0")


def matches(values: pd.Series, pattern: str) -> pd.Series:
    """Regex search per row, evaluated once per distinct value (names and lanes repeat)."""
    distinct = pd.Series(values.dropna().unique())
    hits = set(distinct[distinct.astype(str).str.contains(pattern, regex=True)])
    return values.isin(hits)


def flatten(events: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(nodes, marks). Nodes: top-level work per (rank, step, lane), ordered by start, with `nid`
    (their id here) and `syncs` (the node holds a blocking host sync, itself or a nested call).
    Marks: the ends of host events nested in a node (rank, step, end, owner nid): where inside
    it a launch or a nested call finished, which device work may wait for."""
    ev = events.sort_values(["rank", "step", "lane", "ts", "dur"], ascending=[True, True, True, True, False],
                            kind="stable").reset_index(drop=True)
    ev["end"] = ev["ts"] + ev["dur"]
    keys = [ev["rank"], ev["step"], ev["lane"]]
    first = ~ev.duplicated(["rank", "step", "lane"])
    lowest = np.iinfo(np.int64).min
    reach = ev.groupby(keys, sort=False)["end"].cummax().shift(1, fill_value=lowest)
    reach = reach.where(~first, lowest)   # int64 throughout: floats lose ns at epoch scale
    top = (ev["end"] > reach) | (ev["ts"] >= reach)   # not inside an earlier event of the lane
    ev["ts"] = np.maximum(ev["ts"].to_numpy(), reach.to_numpy())   # cut partial overlaps
    is_sync = matches(ev["name"], SYNC_NAME) & ~matches(ev["lane"], DEVICE_LANE)
    owner = pd.Series(np.where(top, np.arange(len(ev)), np.nan)).groupby(keys, sort=False).ffill()
    synced = owner[is_sync & owner.notna()].astype(np.int64).unique()
    nodes = ev[top].copy()
    nodes["syncs"] = nodes.index.isin(synced)
    nodes["dur"] = nodes["end"] - nodes["ts"]
    nodes["nid"] = nodes.index
    inner = ~top & owner.notna() & ~matches(ev["lane"], DEVICE_LANE)
    marks = pd.DataFrame({"rank": ev["rank"][inner], "step": ev["step"][inner], "end": ev["end"][inner],
                          "owner": owner[inner].astype(np.int64)})
    return nodes.reset_index(drop=True), marks.reset_index(drop=True)
