"""What-if by replay: `trnprof whatif RUN --scale SELECTOR=FACTOR`, and the price of a finding's
fix on a run the Trn1 model cannot describe, both by replaying the run's dependency graph
(trnprof/critical_path). Same document shape as the model's whatif (trnprof/whatif/document.py),
with `fit.method` = "replay"."""

from __future__ import annotations

import time

import numpy as np
import pandas as pd

from trnprof import session
from trnprof.critical_path import scale
from trnprof.critical_path.compute import Replayer
from trnprof.critical_path.graph import CATEGORIES
from trnprof.errors import TrnprofError
from trnprof.run import DuckDBRun
from trnprof.units import S_PER_NS

from . import price_store

METHOD = "replay"
NOTES = [
    "durations scaled along the run's own dependency graph (docs/critical-path.md); the replay cannot "
    "know contention a change would remove or add, nor work the change would make appear"
]


def steady_steps(run) -> pd.DataFrame:
    """(rank, step, ts, end_ts) of the steady steps (all steps when none is past warm-up)."""
    steps = run.sql("SELECT rank, step, ts, end_ts FROM steps")
    steady = run.sql("SELECT step FROM step_phases WHERE NOT warmup")
    kept = steps[steps["step"].isin(steady["step"])]
    return kept if not kept.empty else steps


def _per_step(segments: pd.DataFrame) -> dict:
    steps = max(segments["step"].nunique(), 1) if len(segments) else 1
    sums = segments.groupby("category")["dur"].sum() if len(segments) else pd.Series(dtype=float)
    return {c: float(sums.get(c, 0.0)) / steps * S_PER_NS for c in CATEGORIES}


def _numbers(seconds: float | None, run_job: dict) -> dict:
    samples = run_job.get("samples_per_step")
    throughput = None
    if seconds and samples and samples == samples:
        throughput = {"value": samples / seconds, "unit": "samples/s"}
    return {"step_time_s": seconds, "throughput": throughput, "mfu": None, "hbm_peak_bytes": None}


class Priced:
    """A run's replay set up once: measured step, unchanged replay, then any change. With
    `breakdown`, also the unchanged replay's critical path by category (the whatif document's
    baseline; pricing findings needs step times only)."""

    def __init__(self, run, breakdown: bool = True):
        self.run = run
        self.replayer = Replayer(run, steady_steps(run))
        if not self.replayer.batches:
            raise TrnprofError(f"run {run.path}: no steps with recorded work to replay (the run needs step events)")
        base = self.replayer.replay(path=breakdown)
        if base.measured.empty:
            raise TrnprofError(f"run {run.path}: no steps with recorded work to replay")
        self.measured_s = (
            float(
                run.sql("SELECT step, dur FROM step_times")
                .set_index("step")["dur"]
                .reindex(base.measured["step"])
                .median()
            )
            * S_PER_NS
        )
        self.base_s = float(base.measured["dur"].median()) * S_PER_NS
        self.base_mean_s = float(base.measured["dur"].mean()) * S_PER_NS  # what a fix's share of wall time is of
        self.base_breakdown = _per_step(base.segments) if breakdown else None
        self.steps = len(base.measured)

    def predict(self, scales, path: bool = True) -> tuple[float, dict | None]:
        """Median replayed step time (s) with `scales`, and its critical path by category per
        step (None without `path`). The unchanged graphs and their replay are reused."""
        result = self.replayer.replay(scales, path=path)
        return float(result.replayed["dur"].median()) * S_PER_NS, _per_step(result.segments) if path else None


def document(run, specs, started: float) -> dict:
    """The whatif document of `run` replayed with the `--scale` specs."""
    scales = [scale.parse(s) for s in specs]
    scale.check_matches(run, scales)
    priced = Priced(run)
    predicted, breakdown = priced.predict(scales)
    job = run.sql("SELECT * FROM run_job").iloc[0].to_dict()
    job = {k: (None if isinstance(v, float) and np.isnan(v) else v) for k, v in job.items()}
    residual = priced.base_s / priced.measured_s - 1 if priced.measured_s else None
    return {
        "schema": "trnprof.whatif/1",
        "run": str(run.path),
        "change": {"scale": [s.text for s in scales]},
        "job": None,
        "baseline": {**_numbers(priced.measured_s, job), "steps": priced.steps},
        "fit": {
            "method": METHOD,
            "params": {},
            "identified": [],
            "fixed": [],
            "residual": {"classes_rms": None, "step": residual},
            "classes": 0,
            "sampled_ranks": None,
            "fits": True,
            "reason": None,
            "notes": NOTES,
        },
        "fitted": _numbers(priced.base_s, job),
        "predicted": {
            **_numbers(predicted, job),
            "fits": None,
            "band": None,
            "change_fraction": predicted / priced.base_s - 1 if priced.base_s else None,
        },
        "breakdown": {
            c: {
                "baseline_s": priced.base_breakdown[c],
                "fitted_s": priced.base_breakdown[c],
                "predicted_s": breakdown[c],
                "delta_s": breakdown[c] - priced.base_breakdown[c],
            }
            for c in CATEGORIES
        },
        "seconds": time.perf_counter() - started,
    }


def replay_prices(run, fixes: list[list[str]]) -> list[dict]:
    """Each fix (scale specs, as `--scale` takes them) priced by replaying the run's dependency
    graph: {"change": {"scale": specs}, "step_time_s": mean replayed step, "gain_fraction":
    1 - that / the unchanged replay's mean, "steps": steady steps replayed}. The mean, not the
    median: a fix is worth its share of the wall time, so a cost paid in one step of ten (a
    recompile) counts for a tenth. Fixes with the same specs share a replay; a price an earlier
    command over the run stored is read back (`price_store`). One TrnprofError when the run has
    nothing to replay or a spec is bad."""
    store = session.store_of(run.con) if isinstance(run, DuckDBRun) else None  # Spark's runs: no store
    prices = {tuple(specs): price_store.lookup(store, specs) for specs in fixes}
    missing = [key for key, price in prices.items() if price is None]
    if missing:
        priced = Priced(run, breakdown=False)
        for key in missing:
            result = priced.replayer.replay([scale.parse(s) for s in key], path=False)
            step = float(result.replayed["dur"].mean()) * S_PER_NS
            prices[key] = {"step_time_s": step, "base_mean_s": priced.base_mean_s, "steps": priced.steps}
            price_store.keep(store, list(key), prices[key])
    out = []
    for specs in fixes:
        price = prices[tuple(specs)]
        base = price["base_mean_s"]
        out.append(
            {
                "change": {"scale": list(specs)},
                "step_time_s": price["step_time_s"],
                "gain_fraction": 1 - price["step_time_s"] / base if base else None,
                "steps": price["steps"],
            }
        )
    return out
