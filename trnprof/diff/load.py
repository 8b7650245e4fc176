"""What diff needs of one run, read from its stdlib views and the rule engine's findings.

`load_side` opens the run (or takes an open `Run`), runs `analyze` on it first (which
materialises step_breakdown, collectives, step_phases ... in the run's session), then reads the
diff_support views over those materialised tables, so the views are computed once per run.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ..api import Run, open_run
from ..info import _mfu, _throughput
from ..rules_engine import analyze

BUCKETS = ("compute", "exposed_comm", "input_wait", "other", "idle")


@dataclass
class Side:
    """One run of a comparison: its facts, steady-state per-step series and findings."""
    path: str
    manifest: dict
    world_size: int
    step_times: pd.Series          # steady-state step time (slowest rank), ns, indexed by step
    warmup_steps: list[int]
    breakdown: pd.DataFrame        # steady_step_means: per step, buckets averaged over ranks, ns
    ops: pd.DataFrame              # steady_op_totals
    collectives: pd.DataFrame      # steady_collective_classes
    memory: pd.DataFrame           # peak_memory_categories
    findings: dict                 # analyze()'s document

    @property
    def job(self) -> dict:
        return self.manifest.get("job") or {}

    @property
    def rank_steps(self) -> int:
        """Sum over steady steps of the ranks that recorded them: the per-rank, per-step unit."""
        return int(self.breakdown["ranks"].sum()) if len(self.breakdown) else 0

    def throughput(self, step_s: float | None) -> dict | None:
        return _throughput(self.job, step_s)

    def mfu(self, step_s: float | None) -> float | None:
        return _mfu(self.job, step_s)


def _read(run: Run, findings: dict | None, analyze_options: dict) -> Side:
    document = findings if findings is not None else analyze(run, **analyze_options)
    phases = run.sql("SELECT step, dur, warmup FROM step_phases ORDER BY step")
    steady = phases[~phases["warmup"].astype(bool)]
    world = run.manifest.get("world_size")
    if world is None:
        world = int(run.sql("SELECT COUNT(*) AS n FROM ranks").iloc[0, 0])
    return Side(
        path=str(run.path), manifest=run.manifest, world_size=int(world),
        step_times=pd.Series(steady["dur"].astype(float).to_numpy(), index=steady["step"].astype(int).to_numpy()),
        warmup_steps=[int(s) for s in phases.loc[phases["warmup"].astype(bool), "step"]],
        breakdown=run.sql("SELECT * FROM steady_step_means ORDER BY step"),
        ops=run.sql("SELECT * FROM steady_op_totals"),
        collectives=run.sql("SELECT * FROM steady_collective_classes"),
        memory=run.sql("SELECT * FROM peak_memory_categories ORDER BY category"),
        findings=document)


def load_side(run: str | Path | Run, *, findings: dict | None = None, analyze_options: dict | None = None,
              threads: int | None = None) -> Side:
    """Read one side of a comparison; `findings` skips the rules (a document already computed)."""
    if isinstance(run, Run):
        return _read(run, findings, analyze_options or {})
    with open_run(run, threads=threads) as opened:
        return _read(opened, findings, analyze_options or {})
