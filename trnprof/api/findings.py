"""Findings (`trnprof analyze`): the rules run over a run, then each finding's fix priced by the
what-if layer (`whatif.projections`) and made its headline (`rules_engine.pricing`). The rule
engine never reaches the what-if layer: this module composes the two."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from ..rules_engine import engine
    from ..rules_engine.document import Document
    from ..rules_engine.loader import Rule
    from ..run import Run


def priced(run: Run, document: Document, chosen: engine.Plan | None = None) -> Document:
    """`document` with one number per finding: its recommended fix, as its rule declares it,
    priced on `run` (by the execution model, by replay of the run's graph, else the measured
    bound: `whatif.projections`), made the finding's headline impact and severity
    (`rules_engine.pricing`), the findings sorted again (severity, then price). chosen: the plan
    whose rules and parameters made `document` (else the built-in rules with their defaults)."""
    if not document.findings:  # nothing to price: the model and the replay need not even load
        return document
    from ..rules_engine import engine, pricing
    from ..rules_engine import findings as findings_mod
    from ..whatif.projections import project

    chosen = chosen or engine.plan()
    rules = {rule.name: rule for rule in chosen.rules}
    fixes = {name: rule.spec.fix for name, rule in rules.items()}
    project(run, document.findings, fixes)
    document.findings = sorted(
        (
            pricing.headline(
                f,
                fixes.get(f.name),
                chosen.params.get(f.name, {}),
                document.mean_step_s,
                rules[f.name].severity if f.name in rules else "high",
            )
            for f in document.findings
        ),
        key=findings_mod.sort_key,
    )
    return document


def run_plan(run: str | Path | Run, chosen: engine.Plan, *, threads: int | None = None) -> Document:
    """The findings of the rules `chosen` (`rules_engine.engine.plan`) over a run, fixes priced."""
    from ..engines import open_run
    from ..rules_engine import engine
    from ..run import Run

    if isinstance(run, Run):
        return priced(run, engine.run_plan(run, chosen, threads=threads), chosen)
    with open_run(run, threads=threads) as opened:
        return priced(opened, engine.run_plan(opened, chosen, threads=threads), chosen)


def analyze(run: str | Path | Run, *, threads: int | None = None, **options) -> Document:
    """Analyze a run (a path or an open `Run`): the findings document, each fix priced by the
    what-if model. Options: those of `trnprof.rules_engine.engine.analyze` (select, ignore, set, rules,
    config, timeout, builtin, memory_limit)."""
    from ..rules_engine import engine

    return run_plan(run, engine.plan(**options), threads=threads)


@dataclass
class Analysis:
    """What `trnprof analyze` reports: the findings document and the rules that made it (SARIF
    describes each)."""

    document: Document
    rules: list[Rule]


def analyze_input(
    run: str | Path,
    *,
    into: str | Path | None = None,
    note: Callable[[str], None] | None = None,
    threads: int | None = None,
    **options,
) -> Analysis:
    """`trnprof analyze RUN`: RUN is a run folder or a trace (a folder of per-rank traces),
    ingested first into `into` or the user's cache (`traces.run_or_traces`), each line about
    that said to `note`. The rules are chosen (options: as `analyze`) before any trace is read,
    so a bad option fails first."""
    from ..rules_engine import engine
    from .traces import run_or_traces

    chosen = engine.plan(**options)
    with run_or_traces(run, into=into) as (path, notes):
        for line in notes:
            (note or (lambda _: None))(line)
        return Analysis(run_plan(path, chosen, threads=threads), chosen.rules)
