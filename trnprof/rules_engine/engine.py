"""`analyze()`: run the selected rules over a run, in the sandbox, and return the findings
document (`document.Document`, the `--format json` contract)."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

from trnprof import session, stdlib
from trnprof.derived import data_files
from trnprof.engines import open_run
from trnprof.heap import trim
from trnprof.run import Run
from trnprof.validation import TIMEOUT_S

from . import claims
from . import findings as findings_mod
from .catalog import signal_names
from .config import read_config
from .document import SCHEMA, Document, NotEvaluated, RuleFailure
from .loader import Rule, load_rules
from .params import parse_assignments, resolve
from .sandbox import DEFAULT_MEMORY_LIMIT, Query, Sandbox, SandboxError, parse_size
from .selection import choose, split
from .spec import ConfigFile, Probe

DEFAULT_TIMEOUT_S = 60.0
# the engine reads the steady steps, their mean time and their breakdown (the budgets of claims)
CONTEXT_TABLES = ("step_phases", "steady_breakdown")
# a run of at most this many bytes of files copies its rule tables into an in-memory sandbox
SMALL_RUN_BYTES = 64 * 2**20
# the run's own tables the sandbox reads from their files, not copied: a rule reading the events
# scans what it needs of them (a copy is the whole run: a minute at 44M events, 0.15 s and every
# column's memory at 136k)
READ_IN_PLACE = frozenset({"events", "counters"})
# the most rules evaluated at once over a small run (`_rule_workers`)
RULE_WORKERS = 4


def _dependencies() -> dict[str, set[str]]:
    """Each stdlib view, private helpers included -> the stdlib views it reads (parsed once per
    process, by `trnprof.stdlib.dependencies`)."""
    deps = stdlib.dependencies()
    return {name: {n for n in reads if n in deps} for name, reads in deps.items()}


def _to_materialise(names: set[str]) -> list[str]:
    """The stdlib views to compute once, in load order: those the rules read, and those two or
    more of the views involved read (so they are not computed twice). Views read by a single
    view stay views, and DuckDB fuses them into the query (e.g. the interval sweep)."""
    deps = _dependencies()
    involved, todo = set(), [n for n in names if n in deps]
    while todo:
        name = todo.pop()
        if name not in involved:
            involved.add(name)
            todo += deps[name]
    readers = {name: sum(name in deps[other] for other in involved) for name in involved}
    return [name for name in deps if name in involved and (name in names or readers[name] >= 2)]


def views_computed(chosen: "Plan", run: Run) -> list[str]:
    """The stdlib views `evaluate` computes in `run`'s session for `chosen`'s rules: the flags
    (read now) and what the rules whose flags hold read."""
    signals = _signals(run, chosen.rules)
    return _to_materialise(_needed_tables([rule for rule in chosen.rules if not _unmet_signal(rule, signals)]))


def collect_tables(run: Run, names: set[str]) -> dict:
    """The tables `names` as Arrow, computed in the run's session (see `_to_materialise`)."""
    run.materialize(_to_materialise(names))
    tables = {}
    for name in sorted(names):
        tables[name] = run.con.cursor().sql(f'SELECT * FROM "{name}"').to_arrow_reader()  # streamed into the sandbox
    return tables


def open_sandbox(run: Run, names: set[str], *, threads: int | None, memory_limit: str | int):
    """Where the rules run: DuckDB's sandbox holding `names`, or the run's own Spark session.
    The stored views the rules read and the run's events and counters are read in place from
    their files; the rest is copied in."""
    if run.engine == "spark":
        from .spark_sandbox import SparkSandbox  # the optional extra: sqlglot and pyspark load only here

        return SparkSandbox(run, names, cache=_to_materialise(names))
    run.materialize(_to_materialise(names))
    small = _small(run)
    in_place = {}
    for name in sorted(names):
        source = _source(run, name)
        if source is not None:
            in_place[name] = source
    return Sandbox(
        collect_tables(run, names - set(in_place)),
        threads=threads,
        memory_limit=memory_limit,
        in_memory=small,
        in_place=in_place,
        workers=_rule_workers(small, threads),
    )


def _rule_workers(small: bool, threads: int | None) -> int:
    """How many rules run at once: one per core (up to RULE_WORKERS) over a small run, whose
    rule queries are mostly DuckDB planning them on one core; one over a larger run, where
    each query has every core and the whole memory budget."""
    if not small or threads == 1:
        return 1
    return max(1, min(RULE_WORKERS, os.cpu_count() or 1))


def _source(run: Run, name: str) -> tuple[str, list[str]] | None:
    """How the sandbox reads `name` from the run's files, or None to copy it in."""
    if name in READ_IN_PLACE:
        return session.table_source(run.con, name)
    return session.stored_source(run.con, name)


def _small(run: Run) -> bool:
    """Whether the run's files are at most SMALL_RUN_BYTES: the rule tables, aggregates of its
    events, then fit in memory with room to spare."""
    total = 0
    for path in data_files(Path(run.path)):
        total += path.stat().st_size
        if total > SMALL_RUN_BYTES:
            return False
    return True


def _needed_tables(rules: list[Rule]) -> set[str]:
    names = set(CONTEXT_TABLES)
    for rule in rules:
        names |= rule.tables
    return names


def _signals(run: Run, rules: list[Rule]) -> dict[str, bool]:
    """The run's flags (the stdlib's `signals` view), read in the run's own session before any
    rule table is computed: a rule whose flag is false needs none of its tables. A flag the run
    cannot decide (null) is false."""
    if not any(isinstance(need, str) for rule in rules for need in rule.spec.requires):
        return {}
    frame = run.sql("SELECT * FROM signals")
    return {k: bool(v) for k, v in frame.iloc[0].fillna(False).items()} if len(frame) else {}


def _unmet_signal(rule: Rule, signals: dict[str, bool]) -> str | None:
    """Why `rule` cannot be evaluated for want of a flag, or None."""
    for need in rule.spec.requires:
        if isinstance(need, str) and not signals.get(need):
            return f"needs signal {need} (true when {signal_names()[need]}), which is false for this run"
    return None


def _failed_probe(rule: Rule, query: Query, timeout: float) -> str | None:
    """Why `rule` cannot be evaluated by one of its probes (SQL run in the sandbox), or None."""
    for need in rule.spec.requires:
        if isinstance(need, Probe):
            frame = query(need.sql, timeout=timeout)
            if frame.empty or not bool(frame.iloc[0, 0]):
                return need.reason
    return None


def _context(sandbox: Sandbox) -> tuple[int, float | None, set[int]]:
    """Steady-state steps (warm-up excluded), their mean time, and the warm-up steps."""
    frame = sandbox.query("SELECT step, dur, warmup FROM step_phases")
    steady = frame[~frame["warmup"].astype(bool)]
    warmup = {int(s) for s in frame.loc[frame["warmup"].astype(bool), "step"]}
    return len(steady), (float(steady["dur"].mean()) if len(steady) else None), warmup


def _budgets(sandbox: Sandbox) -> dict[str, float]:
    columns = ", ".join(claims.CATEGORIES)
    return claims.budgets(sandbox.query(f"SELECT step, {columns} FROM steady_breakdown"))


def _settle(drafts: list, budget: dict[str, float], mean_step_ns: float | None, errors: list) -> list:
    """Grant the drafts' time claims exclusively and render them; a rule whose templates fail
    is reported as failed."""
    requests = [draft.claim() for draft in drafts]
    claims.grant(requests, budget, mean_step_ns / 1e9 if mean_step_ns else None)
    found, failed = [], set()
    for draft, request in zip(drafts, requests):
        if draft.rule.name in failed:
            continue
        try:
            found.append(findings_mod.finish(draft, request, mean_step_ns))
        except findings_mod.FindingError as exc:
            failed.add(draft.rule.name)
            errors.append(RuleFailure(name=draft.rule.name, error=str(exc), code=draft.rule.code))
    return [f for f in found if f.name not in failed]


def _bind(rule: Rule, params: dict) -> dict:
    return {name: params[name] for name in rule.sql_params}


@dataclass
class _Outcome:
    """What one rule gave: its draft findings, or why it was not evaluated, or its failure."""

    found: list
    not_evaluated: NotEvaluated | None = None
    error: RuleFailure | None = None
    out_of_memory: bool = False  # the error is DuckDB's memory limit
    seconds: float = 0.0


def _outcome(rule: Rule, query: Query, unmet: str | None, params: dict, context: tuple, timeout: float) -> _Outcome:
    """Evaluate one rule: its probes, its query, its draft findings (`context`: the steady
    steps' count, mean time and the warm-up steps)."""
    started = time.perf_counter()
    outcome = _Outcome(found=[])
    try:
        reason = unmet or _failed_probe(rule, query, timeout)
        if reason:
            outcome.not_evaluated = NotEvaluated(name=rule.name, reason=reason, code=rule.code)
        else:
            frame = query(rule.spec.sql, _bind(rule, params), timeout=timeout)
            outcome.found = findings_mod.build(rule, params, frame, *context)
    except (SandboxError, findings_mod.FindingError) as exc:
        outcome.error = RuleFailure(name=rule.name, error=str(exc), code=rule.code)
        outcome.out_of_memory = getattr(exc, "out_of_memory", False)
    outcome.seconds = round(time.perf_counter() - started, 6)
    return outcome


def evaluate(
    run: Run,
    rules: list[Rule],
    params: dict[str, dict],
    *,
    timeout: float = DEFAULT_TIMEOUT_S,
    threads: int | None = None,
    memory_limit: str | int = DEFAULT_MEMORY_LIMIT,
) -> Document:
    """Run `rules` (already chosen) with their `params` over an open run."""
    started = time.perf_counter()
    signals = _signals(run, rules)
    unmet = {rule.name: reason for rule in rules if (reason := _unmet_signal(rule, signals))}
    runnable = [rule for rule in rules if rule.name not in unmet]
    sandbox = open_sandbox(run, _needed_tables(runnable), threads=threads, memory_limit=memory_limit)
    try:
        n_steps, mean_step_ns, warmup = _context(sandbox)
        budget = _budgets(sandbox)
        context = (n_steps, mean_step_ns, warmup)

        def evaluate_one(query: Query, rule: Rule) -> _Outcome:
            return _outcome(rule, query, unmet.get(rule.name), params[rule.name], context, timeout)

        outcomes = sandbox.map(evaluate_one, rules)
        if sandbox.workers > 1:  # out of the memory limit it shared with other rules: alone now
            outcomes = [
                evaluate_one(sandbox.query, rule) if outcome.out_of_memory else outcome
                for rule, outcome in zip(rules, outcomes)
            ]
    finally:
        sandbox.close()
        trim()  # the sandbox's pages back to the system before the fixes are priced
    found = [finding for outcome in outcomes for finding in outcome.found]
    not_evaluated = [outcome.not_evaluated for outcome in outcomes if outcome.not_evaluated]
    errors = [outcome.error for outcome in outcomes if outcome.error]
    found = _settle(found, budget, mean_step_ns, errors)
    found.sort(key=findings_mod.sort_key)
    return Document(
        schema=SCHEMA,
        run=str(run.path),
        findings=found,
        not_evaluated=not_evaluated,
        errors=errors,
        rules=[rule.name for rule in rules],
        steps=n_steps,
        warmup_steps=sorted(warmup),
        mean_step_s=mean_step_ns / 1e9 if mean_step_ns else None,
        seconds=round(time.perf_counter() - started, 6),
        rule_seconds={rule.name: outcome.seconds for rule, outcome in zip(rules, outcomes)},
    )


@dataclass
class Plan:
    """What an analysis runs: the chosen rules, every rule's parameters, the time and memory limits."""

    rules: list[Rule]
    params: dict[str, dict]
    timeout: float
    memory_limit: str | int = DEFAULT_MEMORY_LIMIT


def plan(
    *,
    select=(),
    ignore=(),
    set=None,
    rules=(),
    config: str | Path | ConfigFile | None = None,
    timeout: float | None = None,
    builtin: bool = True,
    memory_limit: str | int | None = None,
) -> Plan:
    """Load and choose the rules and resolve their parameters; `config` (a YAML file, or one
    already read with `read_config`) gives options the arguments extend."""
    assignments = {}
    if config is not None:
        cfg = config if isinstance(config, ConfigFile) else read_config(config)
        rules = list(cfg.rules) + list(rules)
        select, ignore = split(cfg.select) + split(select), split(cfg.ignore) + split(ignore)
        assignments.update(cfg.set)
        timeout = timeout if timeout is not None else cfg.timeout
        memory_limit = memory_limit if memory_limit is not None else cfg.memory_limit
    assignments.update(parse_assignments(set or {}))
    all_rules = load_rules(rules, builtin=builtin)
    params = resolve(all_rules, assignments)
    memory_limit = DEFAULT_MEMORY_LIMIT if memory_limit is None else memory_limit
    parse_size(memory_limit)  # a bad size or time limit is a usage error before any work
    timeout = TIMEOUT_S.check(DEFAULT_TIMEOUT_S if timeout is None else timeout, "timeout")
    return Plan(choose(all_rules, select, ignore), params, timeout, memory_limit)


def run_plan(run: str | Path | Run, chosen: Plan, *, threads: int | None = None) -> Document:
    """The findings document of `chosen` over a run (a path or an open `Run`)."""
    if isinstance(run, Run):
        return evaluate(
            run, chosen.rules, chosen.params, timeout=chosen.timeout, threads=threads, memory_limit=chosen.memory_limit
        )
    with open_run(run, threads=threads) as opened:
        return evaluate(
            opened,
            chosen.rules,
            chosen.params,
            timeout=chosen.timeout,
            threads=threads,
            memory_limit=chosen.memory_limit,
        )


def analyze(
    run: str | Path | Run,
    *,
    select=(),
    ignore=(),
    set=None,
    rules=(),
    config=None,
    timeout: float | None = None,
    threads: int | None = None,
    builtin: bool = True,
    memory_limit: str | int | None = None,
) -> Document:
    """Analyze a run (a path or an open `Run`) and return the findings document.

    select / ignore: codes, code prefixes, names or packs; set: {"rule.param": value} or
    ["rule.param=value", ...]; rules: extra rule folders; config: a YAML config file whose
    options the arguments extend. Given an open `Run`, the stdlib views the rules need are
    materialised in its session (later queries on it reuse them)."""
    chosen = plan(
        select=select,
        ignore=ignore,
        set=set,
        rules=rules,
        config=config,
        timeout=timeout,
        builtin=builtin,
        memory_limit=memory_limit,
    )
    return run_plan(run, chosen, threads=threads)
