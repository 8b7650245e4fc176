"""The execution model's side of the fit: for a job and a set of free parameters, the duration
of every event class the run records (per pipeline stage, op name and phase) and the steady
step's breakdown. Everything comes from the model's own plan and analytic predictor
(trnprof/model/plan.py, predict.py); nothing is simulated rank by rank."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from trnprof.model.faults import effects
from trnprof.model.job import Job
from trnprof.model.layout import Layout
from trnprof.model.params import Params
from trnprof.model.plan import Plan, build_plan
from trnprof.model.predict import predictions
from trnprof.model.run_views import RunViews, run_views

# Key of an event class: (pipeline stage, kind, op name, phase or "").
Key = tuple[int, str, str, str]


@dataclass
class Modelled:
    plan: Plan
    classes: dict[Key, float]  # seconds per event of the class (noise-free)
    predictions: dict  # predict.py's steady-state numbers: step_time_s, hbm_peak_bytes, fits, ...
    breakdown: dict[str, float]  # seconds per steady step: compute, communication, idle
    views: RunViews  # the typical and effective step of a run of the job's length

    @property
    def typical_s(self) -> float:
        """The median steady step of a run of the job's length (run.steps)."""
        return self.views.typical_s

    @property
    def effective_s(self) -> float:
        """Wall time per steady step of that run: recurring costs (recompiles, a drained
        loader's waits) included."""
        return self.views.effective_s


def plan_of(job: Job, params: Params) -> tuple[Plan, object]:
    """The job's plan under its faults: slow links and a slow host (every fault the simulator
    turns into costs; stragglers, loaders, recompiles, overlap and leaks act on its timeline)."""
    fx = effects(job.config.faults, job.config.comm.overlap_dp)
    return build_plan(job, params, Layout(job), fx.slow_nodes, fx.host_factor), fx


def _template_classes(out: dict, stage: int, template, phase: str) -> None:
    cols = template.cols
    # compute runs at the rank's pace (per-rank coefficient); a TP collective's own time is its
    # transfer (fixed coefficient), the rest is waiting for the slowest member
    seconds = np.where(cols["kind"] == "compute", cols["dur_per_rank"], cols["dur_fixed"]).tolist()
    for name, kind, value in zip(cols["name"].tolist(), cols["kind"].tolist(), seconds):
        out.setdefault((stage, kind, name, phase), []).append(value)


def event_classes(plan: Plan) -> dict[Key, float]:
    """Seconds per event of each class the run records: compute ops and TP collectives from the
    block templates, the optimizer's ops, gradient buckets and ZeRO-1 parameter all-gathers."""
    lists: dict[Key, list] = {}
    for s, st in enumerate(plan.stages):
        _template_classes(lists, s, st.fwd, "fwd")
        _template_classes(lists, s, st.bwd, "bwd")
        for op in st.opt:
            lists.setdefault((s, "compute", op.name, "opt"), []).append(op.dur)
        for j in range(plan.dp_cost.shape[-1] if plan.dp_cost.size else 0):
            lists.setdefault((s, "collective", f"grad_bucket_{j}.{plan.dp_op}", "bwd"), []).append(
                float(np.max(plan.dp_cost[s, :, j]))
            )
        for j in range(plan.ag_cost.shape[-1] if plan.ag_cost.size else 0):
            lists.setdefault((s, "collective", f"param_bucket_{j}.all_gather", "opt"), []).append(
                float(np.max(plan.ag_cost[s, :, j]))
            )
    return {key: sum(v) / len(v) for key, v in lists.items()}


def step_breakdown(plan: Plan, preds: dict) -> dict[str, float]:
    """Seconds of the steady step of the busiest stage: compute (its ops), communication not
    hidden under compute, and idle (device_idle_share of the step)."""
    job = plan.job
    step = preds["step_time_s"]
    compute = max(
        job.microbatches * (st.fwd.compute + st.bwd.compute) + sum(op.dur for op in st.opt) for st in plan.stages
    )
    idle = preds["device_idle_share"] * step
    return {"compute": compute, "communication": max(step - compute - idle, 0.0), "idle": idle}


def model(job: Job, params: Params) -> Modelled:
    plan, fx = plan_of(job, params)
    preds = predictions(job, plan, fx)
    views = run_views(plan, fx, int(job.config.run.steps))
    return Modelled(plan, event_classes(plan), preds, step_breakdown(plan, preds), views)


def classes_of(job: Job, params: Params) -> dict[Key, float]:
    """Only the event classes (the fit's residuals need no timeline)."""
    return event_classes(plan_of(job, params)[0])
