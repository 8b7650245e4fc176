"""The diff document: two runs compared, the `trnprof diff --format json` contract
(schema `trnprof.diff/1`)."""

from __future__ import annotations

from pathlib import Path

from ..errors import TrnprofError
from ..rules_engine.document import Document
from ..run import Run
from . import comparable, findings, headline, match
from .load import Side, load_sides
from .stats import DEFAULT_ALPHA

SCHEMA = "trnprof.diff/1"

TOP_OPS = 10


def build(base: Side, new: Side, *, alpha: float = DEFAULT_ALPHA, top: int = TOP_OPS) -> dict:
    """Compare two loaded runs."""
    step = headline.step_time(base, new, alpha)
    throughput, mfu = headline.rates(base, new, step)
    breakdown = headline.breakdown(base, new, alpha)
    regressions, improvements = match.ops(base, new, alpha, top, step["noise_floor_s"])
    return {
        "schema": SCHEMA,
        "base": base.path,
        "new": new.path,
        "alpha": alpha,
        "test": "Mann-Whitney U, two-sided, over steady-state steps; effective step: permutation test on means "
        "of the steps' wall slots, or Welch's t on the bulk noise",
        **comparable.check(base, new),
        "world_size": {"base": base.world_size, "new": new.world_size},
        "warmup_steps": {"base": base.warmup_steps, "new": new.warmup_steps},
        "step_time": step,
        "throughput": throughput,
        "mfu": mfu,
        "breakdown": breakdown,
        "moved_by": headline.mover(breakdown, step),
        "top_regressions": regressions,
        "top_improvements": improvements,
        "collectives": match.collectives(base, new),
        "memory": match.memory(base, new),
        "findings": findings.compare(base.findings, new.findings, breakdown),
        "step_times_s": {"base": [t / 1e9 for t in base.step_times], "new": [t / 1e9 for t in new.step_times]},
    }


def diff(
    base: str | Path | Run,
    new: str | Path | Run,
    *,
    alpha: float = DEFAULT_ALPHA,
    top: int = TOP_OPS,
    base_findings: Document | None = None,
    new_findings: Document | None = None,
    analyze_options: dict | None = None,
    threads: int | None = None,
    price=None,
) -> dict:
    """Compare run `new` against run `base` (paths or open runs) and return the diff document.

    alpha: significance level of the Mann-Whitney test; top: ops listed per direction;
    base_findings / new_findings: `analyze` documents already computed (the rules are not run
    again); analyze_options: keyword arguments for `rules_engine.engine.plan` (select, ignore, set,
    config ...), the rules chosen once for both runs; price: `trnprof.api.priced`, to compare the
    findings by their fixes' prices (`trnprof.api.diff` passes it)."""
    if not 0 < alpha < 1:
        raise TrnprofError(f"alpha {alpha}: give a significance level between 0 and 1, e.g. 0.01")
    sides = load_sides(
        base,
        new,
        base_findings=base_findings,
        new_findings=new_findings,
        analyze_options=analyze_options,
        threads=threads,
        price=price,
    )
    return build(*sides, alpha=alpha, top=top)
