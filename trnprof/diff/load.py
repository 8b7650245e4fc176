"""What diff needs of one run, read from its stdlib views and the rule engine's findings.

`load_sides` opens both runs (or takes open `Run`s) and reads each in its own session: the views
the rules and the diff read are computed first (step_breakdown, collectives, step_phases ...), then
`analyze` and the diff_support views read them, so the views are computed once per run.
"""

from __future__ import annotations

import contextlib
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ..breakdown import CATEGORIES
from ..engines import open_run
from ..info import mfu_views, throughput
from ..rules_engine.document import Document
from ..rules_engine.engine import Plan, plan, run_plan, views_computed
from ..run import Run

# step_breakdown's exclusive categories, in its order (they sum to the step)
BUCKETS = CATEGORIES
# the stdlib views `_read` reads besides the rules' (computed with them, under the lock)
DIFF_VIEWS = (
    "step_phases",
    "step_slots",
    "mfu",
    "steady_step_means",
    "steady_op_totals",
    "steady_collective_classes",
    "peak_memory_categories",
)


@dataclass
class Side:
    """One run of a comparison: its facts, steady-state per-step series and findings."""

    path: str
    manifest: dict
    world_size: int
    step_times: pd.Series  # steady-state step time (slowest rank), ns, indexed by step
    slots: pd.Series  # steady steps' wall slots (step_slots), ns: their mean is the effective step
    warmup_steps: list[int]
    breakdown: pd.DataFrame  # steady_step_means: per step, buckets averaged over ranks, ns
    ops: pd.DataFrame  # steady_op_totals
    collectives: pd.DataFrame  # steady_collective_classes
    memory: pd.DataFrame  # peak_memory_categories
    mfu: float | None  # the stdlib `mfu` view: MFU on the typical step
    effective_mfu: float | None  # and on the effective step
    findings: Document  # analyze()'s document

    @property
    def job(self) -> dict:
        return self.manifest.get("job") or {}

    def throughput(self, step_s: float | None) -> dict | None:
        return throughput(self.job, step_s)


def _read(
    run: Run, findings: Document | None, chosen: Plan | None, price=None, computing=contextlib.nullcontext()
) -> Side:
    """`price(run, document, plan)`, when given, prices the findings the rules found here (the
    API passes `trnprof.api.priced`: diff itself never reaches the what-if layer). The views
    are computed first, holding `computing` (a lock the other side's reading shares)."""
    with computing:
        run.materialize([*DIFF_VIEWS, *(views_computed(chosen, run) if findings is None else ())])
    document = findings
    if document is None:
        document = run_plan(run, chosen)
        document = price(run, document, chosen) if price is not None else document
    phases = run.sql("SELECT step, dur, warmup FROM step_phases ORDER BY step")
    steady = phases[~phases["warmup"].astype(bool)]
    slots = run.sql("SELECT step, slot FROM step_slots ORDER BY step")
    mfu = mfu_views(run)
    world = run.manifest.get("world_size")
    if world is None:
        world = int(run.sql("SELECT COUNT(*) AS n FROM ranks").iloc[0, 0])
    return Side(
        path=str(run.path),
        manifest=run.manifest,
        world_size=int(world),
        step_times=pd.Series(steady["dur"].astype(float).to_numpy(), index=steady["step"].astype(int).to_numpy()),
        slots=pd.Series(slots["slot"].astype(float).to_numpy(), index=slots["step"].astype(int).to_numpy()),
        warmup_steps=[int(s) for s in phases.loc[phases["warmup"].astype(bool), "step"]],
        breakdown=run.sql("SELECT * FROM steady_step_means ORDER BY step"),
        ops=run.sql("SELECT * FROM steady_op_totals"),
        collectives=run.sql("SELECT * FROM steady_collective_classes"),
        memory=run.sql("SELECT * FROM peak_memory_categories ORDER BY category"),
        mfu=mfu[0],
        effective_mfu=mfu[1],
        findings=document,
    )


def load_sides(
    base: str | Path | Run,
    new: str | Path | Run,
    *,
    base_findings: Document | None = None,
    new_findings: Document | None = None,
    analyze_options: dict | None = None,
    threads: int | None = None,
    price=None,
) -> tuple[Side, Side]:
    """Both sides, read at the same time in two sessions, so that one side's rules (the sandbox,
    Python between rule queries) run while the other computes its views. The views are computed
    one run at a time, each with the whole memory budget: the comparison holds to the budget
    `analyze` holds to, and no run is cut into more batches than `analyze` cuts it (half the
    budget each cost 20 % more work). Both runs are opened first, so an unreadable run fails
    before any work; the rules are loaded and chosen once for both."""
    chosen = plan(**(analyze_options or {})) if base_findings is None or new_findings is None else None
    opened = []
    try:
        for run in (base, new):
            opened.append(run if isinstance(run, Run) else open_run(run, threads=threads))
        if opened[0] is opened[1]:  # one session cannot serve two threads
            side = _read(opened[0], base_findings, chosen, price)
            return side, side
        computing = threading.Lock()
        with ThreadPoolExecutor(max_workers=2) as pool:
            futures = [
                pool.submit(_read, run, found, chosen, price, computing)
                for run, found in zip(opened, (base_findings, new_findings))
            ]
            return futures[0].result(), futures[1].result()
    finally:
        for run, given in zip(opened, (base, new)):
            if run is not given:
                run.close()
