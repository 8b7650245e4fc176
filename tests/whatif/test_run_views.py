"""The model's views of a run (trnprof/model/run_views.py) read the run as the stdlib does:
warm-up as step_phases counts it, and the wall time per step of a run longer than the steps it
simulates."""

from __future__ import annotations

import numpy as np
import pytest

from trnprof.api import open_run
from trnprof.collectors.trn1 import load_config, simulate
from trnprof.model.faults import effects
from trnprof.model.job import resolve
from trnprof.model.layout import Layout
from trnprof.model.params import job_params
from trnprof.model.plan import build_plan
from trnprof.model.run_views import MAX_MODELLED, run_views, warmup_steps


def _plan(faults):
    job = resolve(load_config(preset="tiny", faults=faults))
    fx = effects(job.config.faults, job.config.comm.overlap_dp)
    return build_plan(job, job_params(job.config.calibration), Layout(job), fx.slow_nodes, fx.host_factor), fx


@pytest.mark.parametrize("steps,every", [(3, 1), (4, 1), (6, 2), (6, None)])
def test_warm_up_is_counted_as_step_phases_counts_it(tmp_path, steps, every):
    faults = [{"kind": "recompile", "every": every}] if every else []
    config = load_config(preset="tiny", overrides=[f"run.steps={steps}"], faults=faults)
    with open_run(simulate(config, tmp_path / "r")) as run:
        stdlib = int(run.sql("SELECT COUNT(*) FILTER (WHERE warmup) AS n FROM step_phases").iloc[0, 0])
    assert warmup_steps(effects(config.faults, True).compile_steps(steps)) == stdlib


def test_a_run_longer_than_the_simulated_steps_pays_each_recompile():
    """Past MAX_MODELLED steps each step is the typical one and each recompile adds the compile:
    the effective step is (steady steps x typical + recompiles x compile seconds) / steady steps."""
    steps, every = 4 * MAX_MODELLED + 3, 7
    plan, fx = _plan([{"kind": "recompile", "every": every}])
    views = run_views(plan, fx, steps)
    recompiles = len(range(every, steps, every))
    steady = steps - 1
    expected = ((steady - recompiles) * views.typical_s + recompiles * (views.typical_s + plan.compile_s)) / steady
    assert views.steady == steady
    assert views.effective_s == pytest.approx(expected, rel=1e-3)
    clean_plan, clean_fx = _plan([])
    assert run_views(clean_plan, clean_fx, steps).effective_s == pytest.approx(views.typical_s, rel=1e-3)
    assert np.isfinite(views.unwaited_s) and views.unwaited_s == pytest.approx(views.typical_s, rel=1e-9)
