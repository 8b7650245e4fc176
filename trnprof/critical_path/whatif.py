"""What-if by replay: `trnprof whatif RUN --scale SELECTOR=FACTOR`, and the price of a finding's
fix on a run the Trn1 model cannot describe. Same document shape as the model's whatif
(trnprof/whatif/document.py), with `fit.method` = "replay"."""

from __future__ import annotations

import time

import numpy as np
import pandas as pd

from trnprof.errors import TrnprofError
from trnprof.units import S_PER_NS

from . import scale as S
from .compute import Replayer
from .graph import CATEGORIES

METHOD = "replay"
NOTES = ["durations scaled along the run's own dependency graph (docs/critical-path.md); the replay cannot "
         "know contention a change would remove or add, nor work the change would make appear"]


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
        self.measured_s = float(run.sql("SELECT step, dur FROM step_times").set_index("step")["dur"]
                                .reindex(base.measured["step"]).median()) * S_PER_NS
        self.base_s = float(base.measured["dur"].median()) * S_PER_NS
        self.base_breakdown = _per_step(base.segments) if breakdown else None
        self.steps = len(base.measured)

    def predict(self, scales, path: bool = True) -> tuple[float, dict | None]:
        """Median replayed step time (s) with `scales`, and its critical path by category per
        step (None without `path`). The unchanged graphs and their replay are reused."""
        result = self.replayer.replay(scales, path=path)
        return float(result.replayed["dur"].median()) * S_PER_NS, _per_step(result.segments) if path else None


def document(run, specs, started: float) -> dict:
    """The whatif document of `run` replayed with the `--scale` specs."""
    scales = [S.parse(s) for s in specs]
    S.check_matches(run, scales)
    priced = Priced(run)
    predicted, breakdown = priced.predict(scales)
    job = run.sql("SELECT * FROM run_job").iloc[0].to_dict()
    job = {k: (None if isinstance(v, float) and np.isnan(v) else v) for k, v in job.items()}
    residual = priced.base_s / priced.measured_s - 1 if priced.measured_s else None
    return {
        "schema": "trnprof.whatif/1", "run": str(run.path), "change": {"scale": [s.text for s in scales]},
        "job": None,
        "baseline": {**_numbers(priced.measured_s, job), "steps": priced.steps},
        "fit": {"method": METHOD, "params": {}, "identified": [], "fixed": [],
                "residual": {"classes_rms": None, "step": residual}, "classes": 0, "sampled_ranks": None,
                "fits": True, "reason": None, "notes": NOTES},
        "fitted": _numbers(priced.base_s, job),
        "predicted": {**_numbers(predicted, job), "fits": None, "band": None,
                      "change_fraction": predicted / priced.base_s - 1 if priced.base_s else None},
        "breakdown": {c: {"baseline_s": priced.base_breakdown[c], "fitted_s": priced.base_breakdown[c],
                          "predicted_s": breakdown[c], "delta_s": breakdown[c] - priced.base_breakdown[c]}
                      for c in CATEGORIES},
        "seconds": time.perf_counter() - started,
    }


def to_text(doc: dict) -> str:
    from trnprof.textfmt import duration

    base, fitted, pred = doc["baseline"], doc["fitted"], doc["predicted"]
    lines = [f"run        {doc['run']}",
             f"change     {', '.join(doc['change']['scale'])}",
             f"method     replay of the run's dependency graph over {base['steps']} steady steps "
             f"(unchanged replay {doc['fit']['residual']['step']:+.2%} vs measured)",
             "", f"baseline   {duration(base['step_time_s'])} per step (measured)",
             f"replayed   {duration(fitted['step_time_s'])} per step (unchanged graph)",
             f"predicted  {duration(pred['step_time_s'])} per step ({pred['change_fraction']:+.1%} vs replayed)",
             "", "critical path per step, by category:",
             f"{'category':<14} {'baseline':>10} {'predicted':>10} {'delta':>10}"]
    for cat, row in doc["breakdown"].items():
        if row["baseline_s"] or row["predicted_s"]:
            sign = "+" if row["delta_s"] >= 0 else "-"
            lines.append(f"{cat:<14} {duration(row['baseline_s']):>10} {duration(row['predicted_s']):>10} "
                         f"{sign}{duration(abs(row['delta_s'])):>9}")
    lines += ["", "note       " + doc["fit"]["notes"][0]]
    return "\n".join(lines)


# Rule name -> the replay of its fix: scale specs from the finding (None: no replay prices it).
def _ranks_to_peers(finding) -> list[str] | None:
    return [f"rank:{r}=peers" for r in finding.ranks] or None


REPLAY_FIXES = {
    "input.starvation": lambda f: ["input=0"],
    "overlap.exposed_communication": lambda f: ["communication=0"],
    "overlap.low_overlap_ratio": lambda f: ["communication=0"],
    "scale.straggler": _ranks_to_peers,
    "scale.slow_link": lambda f: [f"communication,rank:{r}=peers" for r in f.ranks] or None,
    "compile.recompilation": lambda f: ["compile=0"],
}
WHAT = {"input=0": "input waits removed", "communication=0": "communication fully hidden (upper bound)",
        "compile=0": "recompiles removed"}


def project_by_replay(run, findings, reason: str) -> None:
    """Set `projected` on `findings` (whose rule has a fix) by replaying the run's graph, for a
    run the Trn1 model cannot describe (`reason` says why). Findings no replay prices keep the
    model's reason."""
    wanted = [f for f in findings if REPLAY_FIXES.get(f.name) and REPLAY_FIXES[f.name](f)]
    for finding in findings:
        if finding not in wanted:
            finding.projected = _unpriced(f"no what-if for this run: {reason}")
    if not wanted:
        return
    try:
        priced = Priced(run, breakdown=False)
    except TrnprofError as exc:
        for finding in wanted:
            finding.projected = _unpriced(f"no what-if for this run: {reason}; no replay either: {exc}")
        return
    steps = {}   # findings with the same fix (exposed communication, low overlap) share a replay
    for finding in wanted:
        specs = REPLAY_FIXES[finding.name](finding)
        if tuple(specs) not in steps:
            steps[tuple(specs)] = priced.predict([S.parse(s) for s in specs], path=False)[0]
        step = steps[tuple(specs)]
        finding.projected = {"change": {"scale": specs}, "step_time_s": step,
                             "gain_fraction": 1 - step / priced.base_s if priced.base_s else None,
                             "band": None, "reason": None, "method": METHOD}


def _unpriced(reason: str) -> dict:
    return {"change": None, "step_time_s": None, "gain_fraction": None, "band": None, "reason": reason}
