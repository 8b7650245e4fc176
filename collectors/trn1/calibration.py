"""Fit the model's free parameters on tests/data/trn1/calibration.csv (and nothing else).

Each CSV row is simulated through the job preset that mirrors it (same nodes, parallelism,
batch and sequence length); the fit minimises the squared log ratio of predicted to published
throughput with scipy's bounded least squares, starting from the shipped values.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from trnprof.errors import TrnprofError

from .config import job_presets, load_config
from .job import Job, resolve
from .params import FITTED, Params, default_params
from .simulate import summary

BOUNDS = {"matmul_efficiency": (0.05, 1.0), "launch_overhead_ms": (0.0, 500.0),
          "hbm_efficiency": (0.05, 1.0), "network_efficiency": (0.05, 1.0)}


def calibration_rows(path: str | Path) -> list[tuple[str, float, dict]]:
    """(job preset, published throughput, csv row) for each row of calibration.csv."""
    path = Path(path)
    if not path.is_file():
        raise TrnprofError(f"calibration data not found: {path}")
    presets = {name: p for name, p in job_presets().items() if "calibration" in p}
    out = []
    for row in csv.DictReader(path.open(encoding="utf-8")):
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
    result = least_squares(residuals, [getattr(start, n) for n in names], bounds=(lower, upper), x_scale="jac")
    fitted = start.replace(**dict(zip(names, (float(v) for v in result.x))))
    return fitted, np.expm1(np.asarray(result.fun))
