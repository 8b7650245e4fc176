"""whatif against the simulator, fault by fault: adding each fault the simulator has to a clean
run, and removing it from the faulty run (`faults=[]`), is predicted within 3 % of simulating
it (the effective step, wall time per step, which a recompile every few steps moves); and the
band of every one of these validation cases is measured for how often it holds the truth.

Ground truth is the simulator under perturbed free parameters (whatif.validate), noise included,
read through the stdlib's step_time_views as a user reads it (`trnprof info`)."""

from __future__ import annotations

import json

import pytest

from trnprof.api import open_run
from trnprof.model.faults import FAULT_KINDS
from trnprof.whatif import validate
from trnprof.whatif.document import whatif

STEPS = 6
JOB = validate.JOB_A
# slow_loader at factor 16: the 4 workers' prefetch queue hides it for the first steps of this
# 6-step run, then one step waits for the next round of batches (tests/whatif/test_whatif_loader.py
# covers other factors, longer runs and a bigger job).
FAULTS = {
    "straggler": {"kind": "straggler", "rank": 1, "slowdown": 1.5},
    "slow_link": {"kind": "slow_link", "node": 1, "factor": 4},
    "recompile": {"kind": "recompile", "every": 2},
    "memory_leak": {"kind": "memory_leak", "bytes_per_step": 2.0e8},
    "no_overlap": {"kind": "no_overlap"},
    "slow_host": {"kind": "slow_host", "factor": 8},
    "slow_loader": {"kind": "slow_loader", "factor": 16},
    "sbuf_spill": {"kind": "sbuf_spill", "fraction": 0.5},
    "throttle": {"kind": "throttle", "utilization": 0.6},
}


def _steps(path) -> dict:
    with open_run(path) as run:
        row = run.sql("SELECT typical, effective FROM step_time_views").iloc[0]
    return {"typical": float(row["typical"]) / 1e9, "effective": float(row["effective"]) / 1e9}


def _flow(fault: dict) -> str:
    return json.dumps(fault).replace('"', "")


def _simulated(folder, seed: int) -> dict:
    job = JOB + [f"run.seed={seed}"]
    made = {"clean": validate.simulate_job(job, "A", folder / "clean", steps=STEPS)}
    for kind, fault in FAULTS.items():
        made[kind] = validate.simulate_job(job, "A", folder / kind, faults=_flow(fault), steps=STEPS)
    return made


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The runs whatif reads (seed 1) and the truth, another run of each job as a user would
    measure it (seed 2: its own noise)."""
    return (
        _simulated(tmp_path_factory.mktemp("whatif_seed1"), 1),
        _simulated(tmp_path_factory.mktemp("whatif_seed2"), 2),
    )


@pytest.fixture(scope="module")
def cases(runs):
    """Every validation case: (name, predicted document, truth steps)."""
    runs, other = runs
    truth = {name: _steps(path) for name, path in other.items()}
    out = []
    for kind, fault in FAULTS.items():
        out.append((f"add {kind}", whatif(runs["clean"], [f"faults=[{_flow(fault)}]"]), truth[kind]))
        out.append((f"remove {kind}", whatif(runs[kind], ["faults=[]"]), truth["clean"]))
    return out


def test_every_fault_kind_of_the_simulator_is_validated():
    assert set(FAULTS) == set(FAULT_KINDS)


@pytest.mark.parametrize("kind", sorted(FAULTS))
def test_adding_a_fault_is_predicted_within_3_percent_of_simulating_it(cases, kind):
    [(_, document, truth)] = [c for c in cases if c[0] == f"add {kind}"]
    assert document["predicted"]["effective_step_s"] == pytest.approx(truth["effective"], rel=0.03)


@pytest.mark.parametrize("kind", sorted(FAULTS))
def test_removing_a_fault_predicts_the_clean_run(cases, kind):
    [(_, document, truth)] = [c for c in cases if c[0] == f"remove {kind}"]
    predicted = document["predicted"]
    assert predicted["effective_step_s"] == pytest.approx(truth["effective"], rel=0.03)
    assert predicted["step_time_s"] == pytest.approx(truth["typical"], rel=0.03)
    assert predicted["band"]["low_s"] <= truth["typical"] <= predicted["band"]["high_s"]


def test_the_band_holds_the_truth_in_9_of_10_cases(cases):
    held = [
        c[0]
        for c in cases
        if c[1]["predicted"]["band"]["low_s"] <= c[2]["typical"] <= c[1]["predicted"]["band"]["high_s"]
    ]
    assert len(cases) >= 10
    assert len(held) >= 0.9 * len(cases), sorted({c[0] for c in cases} - set(held))
