"""The Python API, and the one layer that composes the others: open runs and query them (every
result a pandas DataFrame or a dict), and every command of the CLI as a call.

    from trnprof import api
    with api.open_run("runs/a") as run:
        run.steps, run.sql("SELECT * FROM step_breakdown")
    api.analyze("runs/a")              # findings, each priced by its fix (model, replay or bound)
    api.diff("runs/a", "runs/b"), api.whatif("runs/a", ["tp=16"]), api.report("runs/a", "r.html")

The rule engine, the what-if model, diff and the report do not import one another's engines:
`analyze` here runs the rules then prices their fixes (`whatif.projections`) and makes each price
its finding's headline (`rules_engine.pricing`), `report` gathers
the findings and the comparison and hands the documents to the page.
"""

from __future__ import annotations

import contextlib
import importlib
from pathlib import Path
from typing import TYPE_CHECKING

from .errors import TrnprofError
from .schema import MANIFEST_FILE

if TYPE_CHECKING:
    from .integrity import Verdict
    from .rules_engine import engine
    from .rules_engine.document import Document
    from .run import Run

# Names this module re-exports, loaded on first use (PEP 562): `trnprof analyze` pays for the
# rules, the query layer and the what-if pricing, not for ingest, the simulator, diff or the report.
_EXPORTS = {
    "Document": "trnprof.rules_engine.document",
    "Run": "trnprof.run", "RunSet": "trnprof.run", "open_runs": "trnprof.run",
    "ingest": "trnprof.collectors.ingest",
    "load_config": "trnprof.collectors.trn1", "simulate": "trnprof.collectors.trn1",
    "open_run": "trnprof.engines",
}

__all__ = ["Document", "Run", "RunSet", "analyze", "check", "diff", "ingest", "load_config", "open_run", "open_runs",
           "priced", "query", "report", "run_or_traces", "run_plan", "simulate", "whatif"]


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value
    return value


def check(run: str | Path, *, repair: bool = False, on_repair=None) -> Verdict:
    """Verify a run in full, its derived/ cache included (`trnprof check`). repair: first undo
    what an interrupted writer left (an old copy is removed only beside a whole run) and remove
    the cache's bad entries and links. Each repair line goes to `on_repair` as it happens, so a
    kept copy is named before anything can fail; without it, the kept copies join the error."""
    from . import derived
    from .integrity import verify
    from .manifest import read_manifest
    from .runstore import recover
    run = Path(run)
    repaired = recover(run) if repair else []
    for line in repaired:
        (on_repair or (lambda _: None))(line)
    try:
        manifest = read_manifest(run, check_files=False)
    except TrnprofError as exc:
        kept = [] if on_repair else [line for line in repaired if line.startswith("kept ")]
        raise TrnprofError("; ".join([str(exc)] + kept)) from None
    if repair:
        for line in _repair_cache(run):
            repaired.append(line)
            (on_repair or (lambda _: None))(line)
    verdict = verify(run, manifest)
    verdict.problems += [problem for problem, _ in derived.cache_problems(run)]
    verdict.repaired = repaired
    return verdict


def _repair_cache(run: Path) -> list[str]:
    """Remove the cache's bad entries and links (never what a link points to)."""
    from . import derived
    done = []
    for problem, path in derived.cache_problems(run):
        derived.remove(path)
        done.append(f"removed {path.relative_to(run)} from the cache: {problem}")
    return done


def query(run: str | Path, sql: str, *, unsafe: bool = False, timeout: float | None = None,
          threads: int | None = None):
    """The result of `sql` over the run at `run` as a DataFrame (`trnprof query`): in the rule
    sandbox (one SELECT over the run's tables and views, no file, setting or extension, at most
    `timeout` seconds, default the rules' 60; Ctrl-C stops it). unsafe: any SQL on the run's
    session, limited only by `timeout` when given."""
    from .engines import open_run
    from .rules_engine.engine import DEFAULT_TIMEOUT_S
    from .rules_engine.sandbox import SandboxError, interruptible, query_run
    with open_run(run, threads=threads) as opened:
        try:
            limit = DEFAULT_TIMEOUT_S if timeout is None else timeout
            if not unsafe and opened.engine == "spark":
                from .rules_engine.catalog import readable_tables
                from .rules_engine.spark_sandbox import SparkSandbox  # the optional extra
                return SparkSandbox(opened, set(readable_tables()), cache=[]).query(sql, timeout=limit)
            if not unsafe:
                return query_run(opened, sql, timeout=limit)
            if opened.engine == "duckdb":
                return interruptible(opened.con, lambda: opened.sql(sql), timeout)
            return opened.sql(sql)
        except SandboxError as exc:
            refused = str(exc).startswith("refused") or "Permission Error" in str(exc) or "locked" in str(exc)
            raise TrnprofError(f"query failed: {exc}" + (" (trnprof query runs one SELECT over the run in the "
                                                         "sandbox; --unsafe lifts it)" if refused else "")) from None


def diff(base: str | Path | Run, new: str | Path | Run, **options) -> dict:
    """Compare run `new` against run `base` (`trnprof diff`): the diff document, each side's
    findings priced as `analyze` prices them (one number per finding). Options: those of
    `trnprof.diff.document.diff` (alpha, top, base_findings, new_findings, analyze_options, threads)."""
    from .diff.document import diff as compare
    return compare(base, new, price=priced, **options)


def whatif(run: str | Path | Run, overrides=(), *, job=None, threads: int | None = None) -> dict:
    """Fit the execution model to `run` (a path or an open run) and predict the job with
    `overrides` ("tp=16", "parallel.tp=16", ... or a mapping): the `trnprof whatif --format json`
    document. job: a YAML job description over the run's recorded job (`whatif --job`)."""
    from .whatif import document as whatif_document
    return whatif_document.whatif(run, overrides, config=job, threads=threads)


def priced(run: Run, document: Document, chosen: engine.Plan | None = None) -> Document:
    """`document` with one number per finding: its recommended fix, as its rule declares it,
    priced on `run` (by the execution model, by replay of the run's graph, else the measured
    bound: `whatif.projections`), made the finding's headline impact and severity
    (`rules_engine.pricing`), the findings sorted again (severity, then price). chosen: the plan
    whose rules and parameters made `document` (else the built-in rules with their defaults)."""
    if not document.findings:  # nothing to price: the model and the replay need not even load
        return document
    from .rules_engine import engine, findings as findings_mod, pricing
    from .whatif.projections import project
    chosen = chosen or engine.plan()
    rules = {rule.name: rule for rule in chosen.rules}
    fixes = {name: rule.spec.fix for name, rule in rules.items()}
    project(run, document.findings, fixes)
    document.findings = sorted((pricing.headline(f, fixes.get(f.name), chosen.params.get(f.name, {}),
                                                 document.mean_step_s, rules[f.name].severity if f.name in rules
                                                 else "high") for f in document.findings),
                               key=findings_mod.sort_key)
    return document


def run_plan(run: str | Path | Run, chosen: engine.Plan, *, threads: int | None = None) -> Document:
    """The findings of the rules `chosen` (`rules_engine.engine.plan`) over a run, fixes priced."""
    from .engines import open_run
    from .rules_engine import engine
    from .run import Run
    if isinstance(run, Run):
        return priced(run, engine.run_plan(run, chosen, threads=threads), chosen)
    with open_run(run, threads=threads) as opened:
        return priced(opened, engine.run_plan(opened, chosen, threads=threads), chosen)


@contextlib.contextmanager
def run_or_traces(path: str | Path, *, into: str | Path | None = None):
    """Yield (run folder, lines for the user) for `path`: a run as it is, or a trace file (a folder
    of per-rank traces) ingested here, into the folder `into` or else a run in the user's cache
    that the next command finds again (`collectors.ingest.traces`). `into` is for traces only."""
    path = Path(path)
    if (path / MANIFEST_FILE).is_file():
        if into is not None:
            raise TrnprofError(f"{path} is a run: the run folder option is for a trace given instead of a run")
        yield path, []
        return
    if not path.exists():  # the run reader says what is missing
        yield path, []
        return
    from .collectors.ingest.traces import is_trace_input, run_of_traces  # the ingest loads only for a trace
    if not is_trace_input(path):
        yield path, []
        return
    with run_of_traces([path], run=into) as traced:
        from .heap import trim
        trim()  # the trace's objects are gone: their pages need not sit under the analysis's peak
        lines = [f"ingested {path} into {traced.path}"] if traced.ingested else []
        yield traced.path, lines + ([f"warning: {traced.note}"] if traced.note else [])


def analyze(run: str | Path | Run, *, threads: int | None = None, **options) -> Document:
    """Analyze a run (a path or an open `Run`): the findings document, each fix priced by the
    what-if model. Options: those of `trnprof.rules_engine.engine.analyze` (select, ignore, set, rules,
    config, timeout, builtin, memory_limit)."""
    from .rules_engine import engine
    return run_plan(run, engine.plan(**options), threads=threads)


def _findings(run: Run, findings, analyze_rules: bool, config) -> tuple[Document | None, str]:
    """The report's findings document and a line saying where it came from."""
    from .report.findings import read_findings
    if findings is not None:
        document = read_findings(findings)
        analyzed = f" (analyzed run: {document.run})"
        if Path(document.run).resolve() != Path(run.path).resolve():
            analyzed += " WARNING: that is not the run this report shows; re-run `trnprof analyze` on it."
        return document, f"Findings loaded from {findings}{analyzed}."
    if analyze_rules:
        return analyze(run, config=config), "Findings of the built-in rule packs, computed for this report."
    return None, ""


def report(run: str | Path, out, *, findings=None, analyze: bool = True, png_dir=None, threads: int | None = None,
           baseline=None, config=None, overwrite: bool = True) -> dict:
    """Write the HTML report of `run` to `out` (`trnprof report`); overwrite=False: refuse a file
    there, before any work and when the page is written.

    findings: a saved `trnprof analyze --format json` file to use instead of running the rules;
    analyze=False with no file: no findings (the page says so). png_dir: also write every chart
    there as PNG and SVG. baseline: a run to compare with (adds the comparison section of
    `trnprof diff`). config: a rules config file for the findings. Returns what was written:
    path, bytes, charts, sections without data."""
    from .diff.document import diff
    from .engines import open_run
    from .report.build import build_report, check_destination
    from .atomic import check_replaceable
    check_destination(Path(out))
    check_replaceable(out, overwrite)
    with open_run(run, threads=threads) as opened:
        opened.materialize()  # the views the report and the rules share, computed once
        document, origin = _findings(opened, findings, analyze, config)
        comparison = None if baseline is None else diff(baseline, opened, new_findings=document, price=priced)
        return build_report(opened, out, findings=document, origin=origin, comparison=comparison, png_dir=png_dir,
                            overwrite=overwrite)
