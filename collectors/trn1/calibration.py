"""Fit the model's free parameters on data/calibration.csv (and nothing else).

Each CSV row is simulated through the job preset that mirrors it (same nodes, parallelism,
batch and sequence length); the fit minimises the squared log ratio of predicted to published
throughput with scipy's bounded least squares within each parameter's plausible range. The
leave-one-out check refits without each row in turn and predicts that row.
"""

from __future__ import annotations

import csv
from importlib import resources
from pathlib import Path

import numpy as np

from trnprof.errors import TrnprofError

from trnprof.model.config import job_presets, load_config
from trnprof.model.job import Job, resolve
from trnprof.model.params import BOUNDS, FITTED, Params, default_params
from .simulate import summary


def calibration_csv() -> Path:
    """The in-repository copy of the published throughputs (data/README.md: sources, licence)."""
    return Path(str(resources.files("trnprof.collectors.trn1") / "data" / "calibration.csv"))


def calibration_rows(path: str | Path | None = None) -> list[tuple[str, float, dict]]:
    """(job preset, published throughput, csv row) for each row of calibration.csv."""
    path = Path(path) if path is not None else calibration_csv()
    if not path.is_file():
        raise TrnprofError(f"calibration data not found: {path}")
    presets = {name: p for name, p in job_presets().items() if "calibration" in p}
    out = []
    with path.open(encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            published = float(row["throughput"])
            match = [n for n, p in presets.items() if abs(p["calibration"]["throughput"] - published) < 1e-9]
            if not match:
                raise TrnprofError(f"calibration row {row['model']} ({published} {row['unit']}) has no job preset")
            out.append((match[0], published, row))
    return out


def predicted_throughput(job: Job, params: Params) -> float:
    return summary(job.config, params=params)["throughput"]["value"]


def fit(rows, names=FITTED, start: Params | None = None) -> tuple[Params, np.ndarray]:
    """Fitted parameters and the relative error of each row."""
    from scipy.optimize import least_squares
    start = start or default_params()
    jobs = [(resolve(load_config(preset=name)), published) for name, published, _ in rows]

    def residuals(x):
        params = start.replace(**dict(zip(names, x)))
        return [np.log(predicted_throughput(job, params) / published) for job, published in jobs]

    lower, upper = zip(*(BOUNDS[n] for n in names))
    x0 = [min(max(getattr(start, n), lo), hi) for n, lo, hi in zip(names, lower, upper)]
    result = least_squares(residuals, x0, bounds=(lower, upper), x_scale="jac", diff_step=1e-3)
    fitted = start.replace(**dict(zip(names, (float(v) for v in result.x))))
    return fitted, np.expm1(np.asarray(result.fun))


def leave_one_out(rows, names=FITTED, start: Params | None = None) -> list[tuple[str, Params, float]]:
    """For each row: the parameters fitted on the other rows and the held-out row's relative error."""
    out = []
    for i, (name, published, _) in enumerate(rows):
        fitted, _ = fit(rows[:i] + rows[i + 1:], names, start)
        error = predicted_throughput(resolve(load_config(preset=name)), fitted) / published - 1
        out.append((name, fitted, float(error)))
    return out
