"""Exclusive impacts (claims.py): every lost second of a step is granted to one finding, the
most specific first; the others name it and keep what is left."""

from __future__ import annotations

import pandas as pd
import pytest

from trnprof.rules_engine.claims import Claim, budgets, graded, grant


def test_budgets_take_the_worst_rank_per_step_then_the_mean():
    frame = pd.DataFrame(
        {
            "step": [1, 1, 2, 2],
            "compute": [4e6, 6e6, 2e6, 2e6],
            "exposed_comm": [0, 1e6, 3e6, 0],
            "input_wait": 0,
            "host_sync": 0,
            "host": 0,
            "transfer_exposed": 0,
            "compile": 0,
            "idle": 0,
        }
    )
    budget = budgets(frame)
    assert budget["compute"] == pytest.approx((6e6 + 2e6) / 2 / 1e9)
    assert budget["exposed_comm"] == pytest.approx((1e6 + 3e6) / 2 / 1e9)


def test_the_most_specific_claim_is_granted_first_and_named_by_the_others():
    slow_link = Claim("scale.slow_link", 0.6, "exposed_comm", 3, "high")
    exposed = Claim("overlap.exposed_communication", 0.7, "exposed_comm", 1, "high")
    bandwidth = Claim("collectives.low_bus_bandwidth", 0.5, "exposed_comm", 2, "high")
    grant([exposed, bandwidth, slow_link], {"exposed_comm": 0.8}, mean_step_s=2.0)
    assert slow_link.granted == pytest.approx(0.6) and slow_link.related == []
    assert bandwidth.granted == pytest.approx(0.2) and bandwidth.related == ["scale.slow_link"]
    assert exposed.granted == 0 and exposed.related == ["collectives.low_bus_bandwidth", "scale.slow_link"]


def test_categories_do_not_compete_but_the_step_caps_them_all():
    compute = Claim("compute.fp32_matmul", 0.7, "compute", 3, "high")
    host = Claim("compute.host_bound", 0.6, "host", 2, "high")
    grant([compute, host], {"compute": 1.0, "host": 1.0}, mean_step_s=1.0)
    assert compute.granted == pytest.approx(0.7) and host.granted == pytest.approx(0.3)
    assert host.related == ["compute.fp32_matmul"]
    assert compute.granted + host.granted <= 1.0


def test_a_claim_without_category_is_capped_by_the_step_only():
    free = Claim("my.rule", 5.0, None, 1, "medium")
    grant([free], {}, mean_step_s=2.0)
    assert free.granted == pytest.approx(2.0)


@pytest.mark.parametrize(
    "severity, cut_short, fraction, costless, expected",
    [
        ("high", False, 0.01, False, "high"),  # measured in full: the rule's own grading stands
        ("high", True, 0.10, False, "medium"),  # cut short: capped by the share it kept
        ("high", True, 0.01, False, "low"),
        ("medium", True, 0.30, False, "medium"),  # never raised
        ("high", True, 0.0, True, "info"),  # no cost of any kind
        ("low", False, 0.0, True, "info"),
    ],
)
def test_grading(severity, cut_short, fraction, costless, expected):
    assert graded(severity, cut_short, fraction, costless) == expected


def test_a_claim_over_several_categories_takes_from_each_in_turn():
    """Tiny ops on a CPU: their gaps are idle time, the ops themselves compute (`idle+compute`)."""
    tiny = Claim("compute.small_ops", 0.5, "idle+compute", 2, "high")
    unexplained = Claim("compute.unexplained_idle", 0.4, "idle", 1, "low")
    matmul = Claim("compute.fp32_matmul", 0.2, "compute", 3, "high")
    grant([tiny, unexplained, matmul], {"idle": 0.3, "compute": 0.6}, mean_step_s=2.0)
    assert matmul.granted == pytest.approx(0.2)
    assert tiny.granted == pytest.approx(0.5)  # 0.3 of idle, then 0.2 of compute
    assert unexplained.granted == 0 and unexplained.related == ["compute.small_ops"]
    short = Claim("compute.small_ops", 0.9, "idle+compute", 2, "high")
    grant([short, Claim("x.y", 0.5, "compute", 3, "high")], {"idle": 0.3, "compute": 0.6}, mean_step_s=2.0)
    assert short.granted == pytest.approx(0.4) and short.related == ["x.y"]
