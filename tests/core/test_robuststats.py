"""The bulk standard deviation: the spread of the steps without the few very long ones."""

import numpy as np
import pytest

from trnprof.robuststats import bulk_sd


def test_steady_values_give_their_standard_deviation():
    values = np.random.default_rng(3).normal(100.0, 2.0, 200)
    assert bulk_sd(values) == pytest.approx(np.std(values, ddof=1))


def test_a_few_very_long_steps_do_not_inflate_it():
    steady = np.random.default_rng(5).normal(100.0, 2.0, 50)
    with_recompiles = np.concatenate([steady, [5_000.0, 8_000.0]])
    assert bulk_sd(with_recompiles) == pytest.approx(np.std(steady, ddof=1))
    assert np.std(with_recompiles, ddof=1) > 100 * bulk_sd(with_recompiles)


@pytest.mark.parametrize("values", [[], [7.0], [3.0, 3.0, 3.0]])
def test_too_few_or_equal_values_have_no_spread(values):
    assert bulk_sd(values) == 0.0
