"""The significance tests: Mann-Whitney U as scipy computes it, exact and with ties; the bulk-noise
test as Student's t."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as scipy_stats

from trnprof.diff.stats import bulk_noise_test, compare, mann_whitney, min_p_value
from trnprof.robuststats import bulk_sd


@pytest.mark.parametrize("n1,n2,shift", [(3, 4, 0.0), (8, 8, 0.5), (11, 11, 2.0), (30, 40, 0.3), (2, 9, 1.0)])
def test_exact_p_values_match_scipy(n1, n2, shift):
    rng = np.random.default_rng(n1 * 100 + n2)
    base, new = rng.normal(0, 1, n1), rng.normal(shift, 1, n2)
    ours = mann_whitney(base, new)
    assert ours["method"] == "exact"
    assert ours["p_value"] == pytest.approx(scipy_stats.mannwhitneyu(new, base, method="exact").pvalue, rel=1e-9)


def test_ties_use_the_normal_approximation_as_scipy():
    rng = np.random.default_rng(7)
    base, new = np.round(rng.normal(0, 1, 20)), np.round(rng.normal(0.7, 1, 25))
    ours = mann_whitney(base, new)
    assert ours["method"] == "normal"
    assert ours["p_value"] == pytest.approx(scipy_stats.mannwhitneyu(new, base, method="asymptotic").pvalue, rel=1e-9)


def test_identical_samples_and_too_few_values_are_never_significant():
    assert mann_whitney([5.0] * 6, [5.0] * 6)["p_value"] == 1.0
    assert mann_whitney([1.0], [2.0, 3.0])["p_value"] == 1.0
    assert not compare([1.0, 1.1], [9.0, 9.1])["significant"]  # 2 vs 2 values: p >= 1/3
    assert min_p_value(2, 2) == pytest.approx(2 / 6)


def test_a_clear_shift_is_significant_and_its_change_has_the_right_sign():
    base, new = [100.0 + i * 0.01 for i in range(10)], [110.0 + i * 0.01 for i in range(10)]
    up, down = compare(base, new), compare(new, base)
    assert up["significant"] and down["significant"]
    assert up["change"] == pytest.approx(0.1, abs=1e-3) and down["change"] < 0
    assert up["p_value"] == pytest.approx(min_p_value(10, 10))


@pytest.mark.parametrize("shift", [0.0, 0.3, 2.0])
def test_bulk_noise_p_value_is_students_t_on_the_bulk(shift):
    rng = np.random.default_rng(7)
    base, new = rng.normal(10, 1, 12), rng.normal(10 + shift, 1, 9)
    spread = np.sqrt(bulk_sd(base) ** 2 / len(base) + bulk_sd(new) ** 2 / len(new))
    expected = 2 * scipy_stats.t.sf(abs(new.mean() - base.mean()) / spread, len(new) - 1)
    assert bulk_noise_test(base, new) == pytest.approx(min(1.0, expected), rel=1e-9)
