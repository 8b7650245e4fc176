"""`trnprof whatif`: fit the execution model to a measured run, then predict the run changed.

The document (`--format json`, `trnprof.api.whatif(run, overrides)`):
    schema, run, change            the overrides, as a nested config mapping
    job: {baseline, predicted}     the layout of both jobs (nodes, tp, pp, dp, micro, global, ...)
    baseline: {step_time_s, throughput {value, unit}, mfu, hbm_peak_bytes, steps}   measured
    fit: {method, params {name: value}, identified, fixed, residual {classes_rms, step},
          classes, fits, reason}
    fitted: {step_time_s, throughput, mfu, hbm_peak_bytes}      the model at the fitted values
    predicted: {step_time_s, effective_step_s, throughput, mfu, hbm_peak_bytes, fits,
                band {low_s, high_s}, change_fraction, effective_change_fraction}
                                     step_time_s: the typical step, effective_step_s: wall time per
                                     step (recurring recompiles included); each the measured step
                                     times the model's ratio changed / fitted (the fit's bias
                                     cancels). band: the prediction over the plausible range of
                                     every parameter the run cannot show, widened by the fit's
                                     residual and the steps' noise
    breakdown: {category: {baseline_s, fitted_s, predicted_s, delta_s}}
`predicted.fits` is whether the changed job fits in HBM (as the simulator's `fits`);
`fit.fits` is whether the model fits the run well enough to trust the prediction.
"""

from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np

from trnprof.engines import open_run
from trnprof.errors import TrnprofError
from trnprof.model.job import Job
from trnprof.model.params import BOUNDS, Params, default_params
from trnprof.model.predict import predicted_mfu
from trnprof.run import Run

from . import describe
from .fit import FitResult, least_squares
from .measure import Measured, measure
from .model import Modelled, classes_of, model

SCHEMA = "trnprof.whatif/1"

MIN_CLASSES = 3  # fewer matched event classes: fit the step breakdown instead
TRUST_RMS = 0.15  # a class off by more than ~15 % on average: the model does not fit the run
TRUST_STEP = 0.15  # the fitted step more than ~15 % off the measured one: idem
BAND_SIGMAS = 2.0  # band half-width: 2 x the classes' RMS + the step noise term (log scale)
NOISE_SIGMAS = 3.0  # the noise term: 3 x the spread of the difference of two runs' median steps
MEDIAN_SE = 1.2533  # standard error of a median over that of a mean (normal noise)


def _job_summary(job: Job) -> dict:
    return {
        "instance": job.instance.name,
        "nodes": job.nodes,
        "world": job.world,
        "tp": job.tp,
        "pp": job.pp,
        "dp": job.dp,
        "micro_batch": job.micro,
        "global_batch": job.global_batch,
        "microbatches": job.microbatches,
        "zero1": job.zero1,
        "precision": job.dtypes.matmul,
        "seq_len": job.arch.seq_len,
        "model": job.arch.name,
    }


def _numbers(job: Job, seconds: float, hbm: int | None) -> dict:
    return {
        "step_time_s": seconds,
        "throughput": {"value": job.global_batch / seconds, "unit": job.arch.unit},
        "mfu": predicted_mfu(job, seconds),
        "hbm_peak_bytes": hbm,
    }


def _class_fit(job: Job, measured: Measured, start: Params) -> tuple[FitResult, list] | None:
    keys = [k for k in classes_of(job, start) if measured.classes.get(k, 0) > 0]
    if len(keys) < MIN_CLASSES:
        return None
    seen = np.array([measured.classes[k] for k in keys])

    def residuals(params: Params) -> np.ndarray:
        got = classes_of(job, params)
        return np.log(np.maximum([got.get(k, 0.0) for k in keys], 1e-12) / seen)

    return least_squares(residuals, start, np.ones(len(keys))), keys


def _device_speed(start: Params, params: Params) -> Params:
    """One device-speed knob carried by tensor_efficiency: the per-op overhead shrinks and the
    HBM efficiency grows in the same proportion (capped at 1)."""
    scale = params.tensor_efficiency / start.tensor_efficiency
    return params.replace(
        op_overhead_us=start.op_overhead_us / scale, hbm_efficiency=min(1.0, start.hbm_efficiency * scale)
    )


def _breakdown_fit(job: Job, measured: Measured, start: Params) -> FitResult:
    """Fit on the steady step's compute and exposed communication (measured.breakdown): one
    device-speed scale and the network efficiency (op names unknown to the model say no more)."""
    cats = [c for c in ("compute", "communication") if measured.breakdown[c] > 0]
    seen = np.array([measured.breakdown[c] for c in cats])

    def residuals(params: Params) -> np.ndarray:
        got = model(job, _device_speed(start, params)).breakdown
        return np.log(np.maximum([got[c] for c in cats], 1e-12) / seen)

    result = least_squares(residuals, start, np.ones(len(cats)), names=("tensor_efficiency", "network_efficiency"))
    result.params = _device_speed(start, result.params)
    if "tensor_efficiency" in result.identified:
        result.identified += ["op_overhead_us", "hbm_efficiency"]
    result.notes.append(
        "op names unknown to the model: fitted on compute and exposed communication per step, "
        "with one device-speed scale (tensor efficiency, op overhead and HBM efficiency together)"
    )
    return result


def _trust(result: FitResult, step_residual: float, method: str) -> tuple[bool, str | None]:
    if "tensor_efficiency" in result.at_bound and result.params.tensor_efficiency > 0.5:
        return False, (
            "the run computes faster than the described Trn1 job could at full tensor-engine "
            "efficiency: the description (model, layout, batch) does not match the trace"
        )
    if result.at_bound:
        return False, (
            f"the fit pushed {', '.join(result.at_bound)} to the edge of its physical range: "
            "the run does not behave like the described Trn1 job"
        )
    if result.rms > TRUST_RMS:
        what = "event classes" if method == "event classes" else "compute and communication per step"
        return False, f"{what} differ from the model by {result.rms:.0%} (RMS) after the fit"
    if abs(step_residual) > TRUST_STEP:
        return False, f"the fitted model's step is {np.expm1(step_residual):+.0%} off the measured step"
    if method == "breakdown" and not result.identified:
        return False, "the run's breakdown says nothing the model's parameters can explain"
    return True, None


def _breakdown(measured: Measured, fitted: Modelled, predicted: Modelled) -> dict:
    seen = measured.breakdown or {}
    return {
        cat: {
            "baseline_s": seen.get(cat),
            "fitted_s": fitted.breakdown[cat],
            "predicted_s": predicted.breakdown[cat],
            "delta_s": predicted.breakdown[cat] - fitted.breakdown[cat],
        }
        for cat in ("compute", "communication", "idle")
    }


def _measured_hbm(run: Run) -> int | None:
    df = run.sql("SELECT MAX(peak_bytes) AS peak FROM memory_peak") if _has_counters(run) else None
    if df is None or df.empty or df["peak"].isna().all():
        return None
    return int(df["peak"].iloc[0])


def _has_counters(run: Run) -> bool:
    return int(run.sql("SELECT COUNT(*) AS n FROM counters")["n"].iloc[0]) > 0


class Prepared:
    """A run fitted once: predictions for any number of changes reuse the fit."""

    def __init__(self, run: Run, config_file=None, describe_overrides=None):
        self.run = run
        self.description, self.pending = describe.describe(run.manifest, config_file, describe_overrides or {})
        self.job = describe.job_of(self.description, "the run's job")
        if self.pending:  # a bad change fails before any reading or fitting
            describe.job_of(describe.changed(self.description, self.pending), "the changed job")
        self.measured = measure(run, self.job.tp, self.job.dp)
        start = default_params()
        class_fit = _class_fit(self.job, self.measured, start)
        if class_fit is None and self.measured.breakdown is None:
            self.measured = measure(run, self.job.tp, self.job.dp, need_breakdown=True)
        self.method = "event classes" if class_fit else "breakdown"
        self.result, self.keys = class_fit if class_fit else (_breakdown_fit(self.job, self.measured, start), [])
        self.fitted = model(self.job, self.result.params)
        self.step_residual = float(np.log(self.fitted_step / self.measured_step))
        self.fits, self.reason = _trust(self.result, self.step_residual, self.method)
        world = run.manifest.get("world_size")
        if world and world != self.job.world:
            self.result.notes.append(
                f"the described job has {self.job.world} ranks, the run {world}: the fit compares per-rank step times"
            )
        # predictions are ratios on the fitted model applied to the measured steps: the fit's bias cancels
        self.scale = self.measured_step / self.fitted_step
        self.effective_scale = (
            self.measured.effective_s / self.fitted.effective_s if self.measured.effective_s else self.scale
        )
        self.band = BAND_SIGMAS * self.result.rms + self.noise_term()
        self.baseline_hbm = _measured_hbm(run)

    @property
    def measured_step(self) -> float:
        """The measured step the fit's bias is read on: the median of the steps no rank waited
        for input in (run_views.unwaited) when the run's breakdown is at hand, else the typical
        step. A loader that bounds the step moves the typical step with its noise; not these."""
        return self.measured.unwaited_s if self.measured.unwaited_s else self.measured.step_time_s

    @property
    def fitted_step(self) -> float:
        """The fitted model's counterpart of measured_step on a run of the same length."""
        return self.fitted.views.unwaited_s if self.measured.unwaited_s else self.fitted.typical_s

    def noise_term(self) -> float:
        """How far another run's median step may fall from this one's by noise alone (log scale):
        NOISE_SIGMAS x sqrt(2) x the standard error of a median of the measured steps."""
        steps = max(self.measured.steps, 1)
        return NOISE_SIGMAS * float(np.sqrt(2.0)) * MEDIAN_SE * self.measured.noise / float(np.sqrt(steps))

    def fit_section(self) -> dict:
        r = self.result
        return {
            "method": self.method,
            "params": self.result.params.as_dict(),
            "identified": r.identified,
            "fixed": [n for n in self.result.params.as_dict() if n not in r.identified],
            "residual": {"classes_rms": r.rms, "step": float(np.expm1(self.step_residual))},
            "classes": len(r.residuals),
            "sampled_ranks": self.measured.sampled_ranks,
            "fits": self.fits,
            "reason": self.reason,
            "notes": r.notes,
        }

    def band_of(self, job: Job, step: float) -> dict:
        """The uncertainty band around a predicted (model) step, as measured seconds: the span of
        the prediction over the plausible range (params.BOUNDS) of every parameter the run could
        not show, widened by 2 x the classes' RMS and the steps' noise (log scale), times the
        measured-over-fitted scale. When every measured step waited for input, the scale is the
        loader's: the high edge also allows the slowest rank's compute spread (rank_spread)."""
        low = high = step
        for name in self.fit_section()["fixed"]:
            for bound in BOUNDS[name]:
                seconds = model(job, self.result.params.replace(**{name: bound})).typical_s
                low, high = min(low, seconds), max(high, seconds)
        return {
            "low_s": low * self.scale * float(np.exp(-self.band)),
            "high_s": high * self.scale * float(np.exp(self.band)) * (1 + self.measured.rank_spread),
        }

    def priced(self, job: Job, predicted: Modelled) -> dict:
        """A changed job's typical and effective step as ratios on the fitted model applied to the
        measured steps, with the band and the changes against the measured steps."""
        step = predicted.typical_s * self.scale
        effective = predicted.effective_s * self.effective_scale
        return {
            "step_time_s": step,
            "effective_step_s": effective,
            "band": self.band_of(job, predicted.typical_s),
            "change_fraction": step / self.measured.step_time_s - 1,
            "effective_change_fraction": effective / self.measured.effective_s - 1
            if self.measured.effective_s
            else None,
        }

    def predict(self, changes: dict) -> tuple[Job, Modelled]:
        job = describe.job_of(describe.changed(self.description, changes), "the changed job")
        return job, model(job, self.result.params)


def _document(prep: Prepared, changes: dict, seconds: float) -> dict:
    job, predicted = prep.predict(changes)
    pred = predicted.predictions
    priced = prep.priced(job, predicted)
    step = priced["step_time_s"]
    if not (isinstance(step, (int, float)) and math.isfinite(step) and step > 0):
        raise TrnprofError(
            f"the changed job: the model gives no finite step time ({step}); "
            "check the --set values against their ranges (docs/whatif.md)"
        )
    fitted = prep.fitted.predictions
    return {
        "schema": SCHEMA,
        "run": str(prep.run.path),
        "change": changes,
        "job": {"baseline": _job_summary(prep.job), "predicted": _job_summary(job)},
        "baseline": {
            **_numbers(prep.job, prep.measured.step_time_s, prep.baseline_hbm),
            "steps": prep.measured.steps,
            "effective_step_s": prep.measured.effective_s,
        },
        "fit": prep.fit_section(),
        "fitted": {
            **_numbers(prep.job, prep.fitted.typical_s, fitted["hbm_peak_bytes"]),
            "effective_step_s": prep.fitted.effective_s,
        },
        "predicted": {**_numbers(job, step, pred["hbm_peak_bytes"]), "fits": pred["fits"], **priced},
        "breakdown": _breakdown(prep.measured, prep.fitted, predicted),
        "seconds": time.perf_counter() - seconds,
    }


def whatif(
    run: str | Path | Run, overrides=(), *, config: str | Path | None = None, threads: int | None = None
) -> dict:
    """Fit the model to `run` and predict it with `overrides` (key=value strings such as
    "tp=16" or "parallel.tp=16", or a mapping): the `trnprof whatif --format json` document."""
    started = time.perf_counter()
    changes = describe.parse_overrides(overrides)
    opened = run if isinstance(run, Run) else open_run(run, threads=threads)
    try:
        prep = Prepared(opened, config, changes)
        return _document(prep, prep.pending, started)
    finally:
        if opened is not run:
            opened.close()
