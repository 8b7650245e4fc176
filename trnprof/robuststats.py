"""Robust statistics of step times: how noisy a sample is, measured on its bulk (a few very long
steps do not count). Shared by `diff` (is a change beyond noise?) and `whatif` (the steps'
relative noise), so neither reaches into the other."""

from __future__ import annotations

import numpy as np

ROBUST_SD_PER_MAD = 1.4826  # a normal sample's standard deviation per median absolute deviation
BULK_SDS = 5  # values further than this many robust deviations from the median are outliers


def bulk_sd(values) -> float:
    """Standard deviation of the bulk of the values: those within BULK_SDS robust standard
    deviations (ROBUST_SD_PER_MAD x the median absolute deviation) of the median, which a few
    very long steps do not inflate. 0.0 with fewer than two values in the bulk."""
    x = np.asarray(values, dtype=float)
    if len(x) < 2:
        return 0.0
    middle = np.median(x)
    robust = ROBUST_SD_PER_MAD * np.median(np.abs(x - middle))
    bulk = x[np.abs(x - middle) <= BULK_SDS * robust]
    return float(np.std(bulk, ddof=1)) if len(bulk) >= 2 else 0.0
