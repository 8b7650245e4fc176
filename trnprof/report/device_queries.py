"""The report's reads of the device profile (the stdlib device views, trnprof/stdlib/device.sql),
each aggregated over the profile's ranks and steps: a device profile covers a few ranks and
steps, and the page shows each figure once, as the mean of one rank's step (`cells` says over
how many rank-steps). No analysis here: the views decide what active time, spill and lost time are.
"""

from __future__ import annotations

import pandas as pd

MAX_QUEUES = 12  # DMA queues listed, the busiest first


def has_profile(run) -> bool:
    """Whether the run holds a device profile (the session's device tables are empty otherwise)."""
    frame = run.sql(
        "SELECT (SELECT COUNT(*) FROM device_instructions) + (SELECT COUNT(*) FROM device_dma) "
        "+ (SELECT COUNT(*) FROM device_cc_ops) + (SELECT COUNT(*) FROM device_throttle) AS n"
    )
    return int(frame["n"][0]) > 0


def engines(run) -> pd.DataFrame:
    """Per engine (view engine_activity): mean active time and share of the device span per
    rank-step, the highest share, instructions, BF16-adjusted FLOPs, time active while the
    tensor engine idles."""
    return run.sql("""
        SELECT engine, COUNT(*) AS cells, AVG(active_ns) AS active_ns, AVG(active_share) AS active_share,
               MAX(active_share) AS max_share, AVG(instructions) AS instructions,
               AVG(adjusted_flops) AS adjusted_flops, AVG(tensor_idle_ns) AS tensor_idle_ns
        FROM engine_activity GROUP BY engine ORDER BY active_share DESC, engine""")


def utilization(run) -> dict | None:
    """Mean HFU, MFU, MBU and recompute share per rank-step (view device_utilization)."""
    frame = run.sql("""SELECT COUNT(*) AS cells, AVG(hfu) AS hfu, AVG(mfu) AS mfu, AVG(mbu) AS mbu,
                              AVG(recompute_share) AS recompute_share FROM device_utilization""")
    row = frame.iloc[0].to_dict()
    return None if not row["cells"] else _plain(row)


def dma(run) -> tuple[pd.DataFrame, int]:
    """The busiest DMA queues (view dma_queues), per rank-step means, and how many queues there are."""
    frame = run.sql("""
        SELECT queue_name, ANY_VALUE(queue_type) AS queue_type, BOOL_OR(spill) AS spill, COUNT(*) AS cells,
               AVG(bytes) AS bytes, AVG(busy_ns) AS busy_ns, SUM(bytes) / NULLIF(SUM(packets), 0) AS mean_packet_bytes,
               CAST(SUM(small_packets) AS DOUBLE) / NULLIF(SUM(packets), 0) AS small_share
        FROM dma_queues GROUP BY queue_name ORDER BY busy_ns DESC, queue_name""")
    return frame.head(MAX_QUEUES), len(frame)


def spill(run) -> dict | None:
    """Mean spill per rank-step (view device_spill); None when the profile has no spill."""
    frame = run.sql("""
        SELECT COUNT(*) AS cells, AVG(spill_save_bytes) AS save_bytes, AVG(spill_reload_bytes) AS reload_bytes,
               AVG(reload_share) AS reload_share, AVG(spill_exposed_ns) AS exposed_ns,
               AVG(spill_exposed_ns / NULLIF(device_ns, 0)) AS exposed_share
        FROM device_spill WHERE spill_save_bytes > 0 OR spill_reload_bytes > 0""")
    row = frame.iloc[0].to_dict()
    return None if not row["cells"] else _plain(row)


def throttling(run) -> dict | None:
    """Mean throttling per rank-step with throttle windows (view throttling); None without any."""
    frame = run.sql("""
        SELECT COUNT(*) AS cells, AVG(windows) AS windows, AVG(throttled_ns) AS throttled_ns,
               AVG(mean_allowed) AS mean_allowed, AVG(lost_ns) AS lost_ns,
               AVG(lost_ns / NULLIF(device_ns, 0)) AS lost_share
        FROM throttling WHERE windows > 0""")
    row = frame.iloc[0].to_dict()
    return None if not row["cells"] else _plain(row)


def agreement(run) -> pd.DataFrame:
    """Per Explorer Summary figure (view explorer_agreement): ranks compared, how many agree
    within the view's tolerance, the largest relative difference and the view's note."""
    return run.sql("""
        SELECT metric, COUNT(*) AS ranks, SUM(CASE WHEN within_tolerance THEN 1 ELSE 0 END) AS agree,
               MAX(relative_diff) AS max_diff, MAX(note) AS note
        FROM explorer_agreement GROUP BY metric ORDER BY metric""")


def _plain(row: dict) -> dict:
    """NaN (a mean over nothing) as None, numbers as Python floats."""
    return {k: (None if v is None or pd.isna(v) else float(v)) for k, v in row.items()}
