"""Is a change beyond run-to-run noise? The Mann-Whitney U test (Wilcoxon rank-sum) over the
per-step values of two runs: no assumption about the shape of the step-time distribution, robust
to the odd slow step, and exact for the step counts profiles usually hold.

Two-sided. Exact null distribution when neither sample has ties and n1 x n2 <= EXACT_MAX_CELLS;
otherwise the normal approximation with tie correction and continuity correction (as
scipy.stats.mannwhitneyu computes them).
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from ..robuststats import bulk_sd

EXACT_MAX_CELLS = 10_000
DEFAULT_ALPHA = 0.01


@lru_cache(maxsize=256)
def _u_counts(n1: int, n2: int) -> tuple[int, ...]:
    """Number of orderings of n1 + n2 values giving each U = 0 .. n1*n2: the coefficients of
    the Gaussian binomial [n1+n2 choose n1]_q = prod_{i=1..n1} (1 - q^(n2+i)) / (1 - q^i)."""
    size = n1 * n2 + 1
    coeffs = [1] + [0] * (size - 1)
    for i in range(1, n1 + 1):
        top = n2 + i
        for k in range(size - 1, top - 1, -1):  # multiply by (1 - q^top)
            coeffs[k] -= coeffs[k - top]
        for k in range(i, size):  # divide by (1 - q^i)
            coeffs[k] += coeffs[k - i]
    return tuple(coeffs)


def _ranks(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mid-ranks (1-based) of `values` and the sizes of their tie groups."""
    order = np.argsort(values, kind="mergesort")
    sorted_values = values[order]
    _, starts, counts = np.unique(sorted_values, return_index=True, return_counts=True)
    mid = starts + (counts + 1) / 2.0
    ranks = np.empty(len(values))
    ranks[order] = np.repeat(mid, counts)
    return ranks, counts


def mann_whitney(base, new) -> dict:
    """U of `new` against `base` and the two-sided p-value; p is 1.0 when a sample has fewer than
    two values (nothing can be told)."""
    x, y = np.asarray(base, dtype=float), np.asarray(new, dtype=float)
    n1, n2 = len(x), len(y)
    if n1 < 2 or n2 < 2:
        return {"u": None, "p_value": 1.0, "method": "too few values"}
    ranks, ties = _ranks(np.concatenate([x, y]))
    u_new = float(ranks[n1:].sum() - n2 * (n2 + 1) / 2.0)
    if (ties == 1).all() and n1 * n2 <= EXACT_MAX_CELLS:
        counts = _u_counts(n1, n2)
        total = sum(counts)
        u = int(round(u_new))
        lower, upper = sum(counts[: u + 1]), sum(counts[u:])
        return {"u": u_new, "p_value": min(1.0, 2.0 * min(lower, upper) / total), "method": "exact"}
    n = n1 + n2
    variance = n1 * n2 / 12.0 * ((n + 1) - float((ties**3 - ties).sum()) / (n * (n - 1)))
    if variance <= 0:  # every value equal: no difference at all
        return {"u": u_new, "p_value": 1.0, "method": "normal"}
    z = (abs(u_new - n1 * n2 / 2.0) - 0.5) / math.sqrt(variance)
    return {"u": u_new, "p_value": min(1.0, math.erfc(max(z, 0.0) / math.sqrt(2.0))), "method": "normal"}


def min_p_value(n1: int, n2: int) -> float:
    """The smallest two-sided p-value samples of these sizes can reach (fully separated)."""
    if n1 < 2 or n2 < 2:
        return 1.0
    return min(1.0, 2.0 / math.comb(n1 + n2, n1))


def compare(base, new, *, alpha: float = DEFAULT_ALPHA) -> dict:
    """Medians of two samples, the relative change of the median, and whether the samples differ
    beyond noise (Mann-Whitney p < alpha)."""
    x, y = np.asarray(base, dtype=float), np.asarray(new, dtype=float)
    base_median = float(np.median(x)) if len(x) else None
    new_median = float(np.median(y)) if len(y) else None
    test = mann_whitney(x, y)
    change = (new_median / base_median - 1.0) if base_median and new_median is not None else None
    return {
        "base": base_median,
        "new": new_median,
        "change": change,
        "p_value": test["p_value"],
        "significant": bool(test["p_value"] < alpha),
    }


PERMUTATIONS = 20_000


def permutation_means(base, new, *, rounds: int = PERMUTATIONS, seed: int = 0) -> float:
    """Two-sided permutation test on the difference of means: the share of random relabellings
    of the pooled values whose difference of means is at least the observed one (with the
    observed labelling counted, so p >= 1 / (rounds + 1)). Exact over every labelling when there
    are fewer than `rounds`."""
    x, y = np.asarray(base, dtype=float), np.asarray(new, dtype=float)
    n1, n2 = len(x), len(y)
    if n1 < 2 or n2 < 2:
        return 1.0
    pooled = np.concatenate([x, y])
    observed = abs(y.mean() - x.mean())
    total = pooled.sum()
    if math.comb(n1 + n2, n1) <= rounds:
        from itertools import combinations

        sums = np.array([pooled[list(pick)].sum() for pick in combinations(range(n1 + n2), n1)])
    else:
        rng = np.random.default_rng(seed)
        picks = np.argsort(rng.random((rounds, n1 + n2)), axis=1)[:, :n1]
        sums = pooled[picks].sum(axis=1)
    diffs = np.abs((total - sums) / n2 - sums / n1)
    hits = int(np.sum(diffs >= observed * (1 - 1e-12)))
    if math.comb(n1 + n2, n1) <= rounds:
        return hits / len(sums)
    return (hits + 1) / (rounds + 1)


def bulk_noise_test(base, new) -> float:
    """Two-sided p-value of the difference of means against the noise of the bulk of the steps:
    Welch's t = (mean new - mean base) / sqrt(sd_b^2 / n_b + sd_n^2 / n_n) with the bulk standard
    deviations (`trnprof.robuststats.bulk_sd`) and the smaller sample's degrees of freedom. Under
    steady noise it is the usual test on means; a few very long steps move the means but not the
    noise, so they cannot hide behind their own spread (as they do in a permutation test, which may
    hand them to either run)."""
    from scipy.special import stdtr  # Student's t CDF; scipy.special loads in a third of scipy.stats' time

    x, y = np.asarray(base, dtype=float), np.asarray(new, dtype=float)
    if len(x) < 2 or len(y) < 2:
        return 1.0
    spread = math.sqrt(bulk_sd(x) ** 2 / len(x) + bulk_sd(y) ** 2 / len(y))
    gap = abs(y.mean() - x.mean())
    if spread == 0:
        return 1.0 if gap == 0 else 0.0
    return float(min(1.0, 2 * stdtr(min(len(x), len(y)) - 1, -gap / spread)))


def compare_means(base, new, *, alpha: float = DEFAULT_ALPHA) -> dict:
    """Means of two samples (e.g. each step's wall slot: the mean is the effective step), their
    relative change and whether they differ beyond noise: the permutation test on means, or the
    bulk-noise test (a few long steps in one run only)."""
    x, y = np.asarray(base, dtype=float), np.asarray(new, dtype=float)
    base_mean = float(x.mean()) if len(x) else None
    new_mean = float(y.mean()) if len(y) else None
    permutation, bulk = permutation_means(x, y), bulk_noise_test(x, y)
    change = (new_mean / base_mean - 1.0) if base_mean and new_mean is not None else None
    return {
        "base": base_mean,
        "new": new_mean,
        "change": change,
        "p_value": permutation,
        "bulk_p_value": bulk,
        "significant": bool(permutation < alpha or bulk < alpha),
    }
