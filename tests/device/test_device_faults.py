"""Done-when of issue 36's device pack: an injected SBUF spill and an injected throttle are named
as findings at medium or above, each claiming within +-25 % of what the fault costs, the cost
derived from the simulator's own step times (the same job clean and with the fault)."""

from __future__ import annotations

import pytest

import trnprof
from trnprof import api
from trnprof.collectors.trn1 import load_config, simulate

STEPS = 5
TOLERANCE = 0.25


def _run(tmp_path, name, faults):
    path = tmp_path / name
    simulate(load_config(preset="tiny", faults=faults), path, steps=STEPS, seed=0, overwrite=True, device_profile=True)
    return path


def _typical_step_s(path) -> float:
    """The simulator's median steady step time of the run (view step_time_views)."""
    return float(trnprof.open_run(path).sql("SELECT typical FROM step_time_views")["typical"][0]) / 1e9


@pytest.fixture(scope="module")
def clean(tmp_path_factory):
    return _run(tmp_path_factory.mktemp("device"), "clean", [])


@pytest.mark.parametrize(
    "fault, rule",
    [
        ({"kind": "sbuf_spill", "fraction": 0.5}, "device.sbuf_spill"),
        ({"kind": "throttle", "utilization": 0.6}, "device.throttling"),
    ],
)
def test_injected_fault_is_named_and_priced(tmp_path, clean, fault, rule):
    faulty = _run(tmp_path, fault["kind"], [fault])
    cost = _typical_step_s(faulty) - _typical_step_s(clean)
    assert cost > 0
    found = {f.name: f for f in api.analyze(faulty, select=["device"]).findings}
    assert rule in found, sorted(found)
    finding = found[rule]
    assert finding.severity in ("medium", "high", "critical"), finding
    claimed = finding.impact.seconds_per_step
    assert abs(claimed - cost) <= TOLERANCE * cost, (claimed, cost)


def test_clean_job_has_neither(clean):
    names = {f.name for f in api.analyze(clean, select=["device"]).findings}
    assert not names & {"device.sbuf_spill", "device.throttling"}
