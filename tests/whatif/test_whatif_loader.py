"""whatif on a loader-bound job, against the simulator: adding a slow loader is predicted within
3 % of simulating it (the effective step, wall time per step), and removing it within 3 % of the
clean run with a band that holds the clean run's median step; for factors 4, 8 and 16, on the
tiny job (one worker: loader-bound from the first step; four workers over 12 steps: the prefetch
queue hides the loader at first, then each round of batches makes one step wait) and on
BERT-large phase 1 (32 microbatches a step). Truth is another seed's simulation as `trnprof info`
reads it; the one-worker faulty runs are first checked loader-bound from the config's own numbers."""

from __future__ import annotations

import pytest

from trnprof.api import open_run
from trnprof.model.config import load_config
from trnprof.model.faults import effects
from trnprof.model.job import resolve
from trnprof.model.layout import Layout
from trnprof.model.params import job_params
from trnprof.model.plan import build_plan
from trnprof.model.predict import predictions
from trnprof.model.run_views import run_views
from trnprof.whatif import validate
from trnprof.whatif.describe import expand
from trnprof.whatif.document import whatif

JOBS = validate.LOADER_JOBS  # (sets, steps, loader seconds a step at factor 1 with one worker)
CASES = [(job, factor) for job, factors in validate.LOADER_FACTORS.items() for factor in factors]


def _fault(factor: int) -> str:
    return "{kind: slow_loader, factor: %d}" % factor


def _views(path) -> dict:
    with open_run(path) as run:
        row = run.sql("SELECT typical, effective FROM step_time_views").iloc[0]
    return {"typical": float(row["typical"]) / 1e9, "effective": float(row["effective"]) / 1e9}


@pytest.fixture(scope="module")
def simulated(tmp_path_factory):
    """Per job: the clean run and each factor's faulty run, seeds 1 (what whatif reads) and 2 (the truth)."""
    made = {}

    def get(job: str, factor: int | None, seed: int):
        key = (job, factor, seed)
        if key not in made:
            sets, steps, _ = JOBS[job]
            folder = tmp_path_factory.mktemp("loader")
            made[key] = validate.simulate_job(
                sets + [f"run.seed={seed}"], "A", folder / "run", faults=_fault(factor) if factor else None, steps=steps
            )
        return made[key]

    return get


@pytest.mark.parametrize("job,factor", [c for c in CASES if JOBS[c[0]][2]])
def test_the_faulty_step_is_the_loaders_time_per_step(simulated, job, factor):
    """One worker: a step takes microbatches x micro x per-sample ms x factor."""
    assert _views(simulated(job, factor, 2))["typical"] == pytest.approx(JOBS[job][2] * factor, rel=0.02)


@pytest.mark.parametrize("job,factor", CASES)
def test_adding_a_slow_loader_is_predicted_within_3_percent_of_simulating_it(simulated, job, factor):
    predicted = whatif(simulated(job, None, 1), [f"faults=[{_fault(factor)}]"])["predicted"]
    truth = _views(simulated(job, factor, 2))
    assert truth["effective"] > 1.05 * _views(simulated(job, None, 2))["effective"]  # the loader acts
    assert predicted["effective_step_s"] == pytest.approx(truth["effective"], rel=0.03)


@pytest.mark.parametrize("job,factor", CASES)
def test_removing_a_slow_loader_predicts_the_clean_run(simulated, job, factor):
    predicted = whatif(simulated(job, factor, 1), ["faults=[]"])["predicted"]
    truth = _views(simulated(job, None, 2))
    assert predicted["step_time_s"] == pytest.approx(truth["typical"], rel=0.03)
    assert predicted["effective_step_s"] == pytest.approx(truth["effective"], rel=0.03)
    assert predicted["band"]["low_s"] <= truth["typical"] <= predicted["band"]["high_s"]


def test_a_short_run_is_modelled_as_measured_not_as_the_steady_state(tmp_path):
    """Job A at factor 16 over 6 steps: the four workers' queue hides the loader for three steps,
    then one step waits; the model's views of such a run match the simulation's, while the
    loader-bound steady state (after the queue drains) is twice as long."""
    sets = validate.JOB_A + validate.perturbed("A") + [f"faults=[{_fault(16)}]", "run.steps=6", "run.noise=0"]
    job = resolve(load_config(overrides=[expand(s) for s in sets]))
    fx = effects(job.config.faults, job.config.comm.overlap_dp)
    plan = build_plan(job, job_params(job.config.calibration), Layout(job), fx.slow_nodes, fx.host_factor)
    views = run_views(plan, fx, 6)
    truth = _views(
        validate.simulate_job(validate.JOB_A + ["run.seed=2"], "A", tmp_path / "short", faults=_fault(16), steps=6)
    )
    assert views.typical_s == pytest.approx(truth["typical"], rel=0.01)
    assert views.effective_s == pytest.approx(truth["effective"], rel=0.03)
    assert predictions(job, plan, fx)["step_time_s"] > 2 * truth["effective"]
