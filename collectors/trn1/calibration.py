"""The calibration evidence (data/calibration.csv) and the fit of the free parameters on it.

Each CSV row is a published Trn1 training throughput with its source, SDK release and role:
`fit` rows are the only ones the free parameters are fitted on; `validation` rows are predicted
with the fitted parameters and never enter the fit (the fixed validation set); `excluded` rows
are published figures that measure something the model does not simulate (their job preset
states what, `excluded_because`): reported, never fitted, not in the validation figures. Each row is
simulated through the job preset named in its `preset` column (same nodes, parallelism, batch,
sequence length and precision as the published run). The fit minimises the squared log ratio of
predicted to published throughput with scipy's bounded least squares within each parameter's
plausible range; the leave-one-out check refits without each fit row in turn and predicts it.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np

from trnprof.errors import TrnprofError
from trnprof.model.config import job_presets, load_config
from trnprof.model.job import Job, resolve
from trnprof.model.params import BOUNDS, FITTED, Params, default_params

from .simulate import summary

ROLES = ("fit", "validation", "excluded")


@dataclass(frozen=True)
class Row:
    """One published throughput and the job preset that mirrors it."""

    name: str
    preset: str
    role: str
    published: float
    unit: str
    fields: dict  # the whole CSV row (source, SDK, framework ...)
    excluded_because: str | None = None  # why an `excluded` row cannot test the model


def calibration_csv() -> Path:
    """The in-repository copy of the published throughputs (data/README.md: sources, licence)."""
    return Path(str(resources.files("trnprof.collectors.trn1") / "data" / "calibration.csv"))


def _row(fields: dict) -> Row:
    name, preset, role = fields.get("row"), fields.get("preset"), fields.get("role")
    if role not in ROLES:
        raise TrnprofError(f"calibration row {name}: role {role!r} is not one of {', '.join(ROLES)}")
    meta = job_presets().get(preset, {}).get("calibration")
    if meta is None:
        raise TrnprofError(f"calibration row {name}: no job preset {preset!r} with a calibration block")
    published = float(fields["throughput"])
    if abs(meta["throughput"] - published) > 1e-9 or meta.get("row") != name or meta.get("role") != role:
        raise TrnprofError(f"calibration row {name}: job preset {preset} states another row, role or throughput")
    reason = meta.get("excluded_because")
    if (role == "excluded") != bool(reason):
        raise TrnprofError(f"calibration row {name}: an excluded row, and only one, states excluded_because")
    return Row(
        name=name,
        preset=preset,
        role=role,
        published=published,
        unit=fields["unit"],
        fields=fields,
        excluded_because=reason,
    )


def calibration_rows(path: str | Path | None = None, role: str | None = None) -> list[Row]:
    """The rows of calibration.csv (only those of `role` when given), in file order."""
    path = Path(path) if path is not None else calibration_csv()
    if not path.is_file():
        raise TrnprofError(f"calibration data not found: {path}")
    with path.open(encoding="utf-8") as handle:
        rows = [_row(fields) for fields in csv.DictReader(handle)]
    return [r for r in rows if role is None or r.role == role]


def row_job(row: Row) -> Job:
    return resolve(load_config(preset=row.preset))


def predicted_throughput(job: Job, params: Params) -> float:
    return summary(job.config, params=params)["throughput"]["value"]


def log_error(row: Row, params: Params) -> float:
    """log(predicted / published) of a row under `params`."""
    return float(np.log(predicted_throughput(row_job(row), params) / row.published))


def fit(rows, names=FITTED, start: Params | None = None) -> tuple[Params, np.ndarray]:
    """Parameters fitted on `rows` and the relative error of each row."""
    from scipy.optimize import least_squares

    start = start or default_params()
    jobs = [(row_job(r), r.published) for r in rows]

    def residuals(x):
        params = start.replace(**dict(zip(names, x)))
        return [np.log(predicted_throughput(job, params) / published) for job, published in jobs]

    lower, upper = zip(*(BOUNDS[n] for n in names))
    x0 = [min(max(getattr(start, n), lo), hi) for n, lo, hi in zip(names, lower, upper)]
    result = least_squares(residuals, x0, bounds=(lower, upper), x_scale="jac", diff_step=1e-3)
    fitted = start.replace(**dict(zip(names, (float(v) for v in result.x))))
    return fitted, np.expm1(np.asarray(result.fun))


def leave_one_out(rows, names=FITTED, start: Params | None = None) -> list[tuple[Row, Params, float]]:
    """For each row: the parameters fitted on the other rows and the held-out row's relative error."""
    out = []
    for i, row in enumerate(rows):
        fitted, _ = fit(rows[:i] + rows[i + 1 :], names, start)
        out.append((row, fitted, float(np.expm1(log_error(row, fitted)))))
    return out


def uncast_fp32_ceiling(row: Row) -> float:
    """The most throughput the row's job could reach if the compiler left its FP32 matmuls in
    FP32: the model with `auto_cast: none` at the FP32 tensor-engine peak (no stalls, no per-op
    overhead; HBM, collectives and the rest as modelled)."""
    cfg = load_config(preset=row.preset, overrides=["precision.auto_cast=none"])
    peak = default_params().replace(tensor_efficiency=1.0, op_overhead_us=0.0)
    return summary(cfg, params=peak)["throughput"]["value"]


def implied_auto_cast(row: Row) -> str | None:
    """For an FP32 row: `matmult` when the published throughput is above what FP32 matmuls allow
    at the tensor engine's peak (so the compiler must have cast them), else `none` (nothing says
    they were cast); None for rows that are not FP32."""
    if load_config(preset=row.preset).precision.compute != "fp32":
        return None
    return "matmult" if row.published > uncast_fp32_ceiling(row) else "none"
