"""Fit the model's free parameters (the `calibration:` section) to a measured run.

Least squares on log ratios (model / measured) with a small Levenberg-Marquardt in log-parameter
space (numpy only): each residual is one event class — a compute op per stage and phase, a
tensor-parallel collective, a gradient bucket — its median steady-state duration against the
model's. A parameter the run cannot see (its Jacobian column is flat: no inter-node traffic
says nothing of the network) keeps its shipped value and is listed as not identified.
A run whose op names the model does not know (an ingested trace) is fitted on its step
breakdown instead: compute and exposed communication seconds per step.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from trnprof.model.params import NAMES, Params

# Wider than the calibration's plausible ranges: a measured run may sit anywhere physical.
FIT_BOUNDS = {
    "tensor_efficiency": (0.02, 1.0),
    "op_overhead_us": (0.1, 5000.0),
    "hbm_efficiency": (0.02, 1.0),
    "network_efficiency": (0.02, 1.0),
}
FLAT = 1e-3  # |d residual / d log param| below this on every class: not identified
STEP = 0.02  # finite-difference step in log parameter
MAX_ITER = 30


@dataclass
class FitResult:
    params: Params
    identified: list[str]
    at_bound: list[str]
    residuals: np.ndarray  # log(model / measured) per class at the optimum
    weights: np.ndarray
    iterations: int
    notes: list[str] = field(default_factory=list)

    @property
    def rms(self) -> float:
        """Weighted RMS of the log residuals (~ relative error of a class)."""
        if not len(self.residuals):
            return 0.0
        return float(np.sqrt(np.sum(self.weights * self.residuals**2) / np.sum(self.weights)))


def _with(start: Params, names, x) -> Params:
    return start.replace(**{n: float(np.exp(v)) for n, v in zip(names, x)})


def _clip(names, x):
    lo = np.log([FIT_BOUNDS[n][0] for n in names])
    hi = np.log([FIT_BOUNDS[n][1] for n in names])
    return np.clip(x, lo, hi)


def _jacobian(residual_fn, start, names, x, r0):
    cols = []
    for i in range(len(names)):
        xs = x.copy()
        xs[i] += STEP
        cols.append((residual_fn(_with(start, names, xs)) - r0) / STEP)
    return np.stack(cols, axis=1) if cols else np.zeros((len(r0), 0))


def least_squares(
    residual_fn: Callable[[Params], np.ndarray], start: Params, weights: np.ndarray, names=NAMES
) -> FitResult:
    """Minimise sum(w r^2) over the parameters in `names` that the residuals can see."""
    sw = np.sqrt(weights)
    x0 = np.log([getattr(start, n) for n in NAMES])
    r = residual_fn(start)
    jac = _jacobian(residual_fn, start, NAMES, x0, r)
    identified = [n for i, n in enumerate(NAMES) if n in names and np.max(np.abs(jac[:, i])) > FLAT]
    idx = [NAMES.index(n) for n in identified]
    x = x0[idx]
    lam, it = 1e-2, 0
    cost = float(np.sum(weights * r**2))
    for it in range(1, MAX_ITER + 1):
        if not idx:
            break
        J = jac[:, idx] * sw[:, None]
        step = np.linalg.solve(J.T @ J + lam * np.diag(np.diag(J.T @ J) + 1e-12), -J.T @ (sw * r))
        trial = _clip(identified, x + step)
        r_trial = residual_fn(_with(start, identified, trial))
        cost_trial = float(np.sum(weights * r_trial**2))
        if cost_trial < cost:
            improvement = cost - cost_trial
            x, r, cost, lam = trial, r_trial, cost_trial, max(lam / 3, 1e-6)
            if improvement < 1e-10 * max(cost, 1e-12) or np.max(np.abs(step)) < 1e-5:
                break
            full = x0.copy()
            full[idx] = x
            jac = _jacobian(residual_fn, start, NAMES, full, r)
        else:
            lam *= 4
            if lam > 1e6:
                break
    params = _with(start, identified, x)
    at_bound = [
        n
        for n in identified
        if np.isclose(getattr(params, n), FIT_BOUNDS[n][0], rtol=1e-3)
        or np.isclose(getattr(params, n), FIT_BOUNDS[n][1], rtol=1e-3)
    ]
    return FitResult(params, identified, at_bound, r, weights, it)
