"""The Python API, and the one layer that composes the others: open runs and query them (every
result a pandas DataFrame or a dict), and every command of the CLI as one call.

    from trnprof import api
    with api.open_run("runs/a") as run:
        run.steps, run.sql("SELECT * FROM step_breakdown")
    api.analyze("runs/a")              # findings, each priced by its fix (model, replay or bound)
    api.diff("runs/a", "runs/b"), api.whatif("runs/a", ["tp=16"]), api.report("runs/a", "r.html")

One module per family of commands: `runs` (check, info, query), `findings` (analyze: the rules,
their fixes priced), `rulepacks` (rules list/show/test/new/docs), `comparison` (diff),
`prediction` (whatif), `reporting` (report), `traces` (ingest), `simulation` (simulate),
`exports` (export), `recording` (record), `demo_job` (demo). The rule engine, the what-if model,
diff and the report do not import one another's engines: these modules compose them.

Every name loads on first use (PEP 562): `trnprof analyze` pays for the rules, the query layer
and the what-if pricing, not for ingest, the simulator, diff or the report.
"""

from __future__ import annotations

import importlib

# public name -> "module" that defines it, or "module:attribute" when the API names it otherwise
_EXPORTS = {
    # runs and their documents
    "Document": "trnprof.rules_engine.document",
    "Run": "trnprof.run",
    "RunSet": "trnprof.run",
    "open_runs": "trnprof.run",
    "open_run": "trnprof.engines",
    "check": "trnprof.api.runs",
    "query": "trnprof.api.runs",
    "run_info": "trnprof.api.runs",
    # settings every command that opens a run shares: the engine, the rules config file
    "ENGINES": "trnprof.engines",
    "ENGINE_ENV": "trnprof.engines:ENV",
    "using_engine": "trnprof.engines:using",
    "read_config": "trnprof.rules_engine.config",
    # findings and rules
    "analyze": "trnprof.api.findings",
    "analyze_input": "trnprof.api.findings",
    "priced": "trnprof.api.findings",
    "run_plan": "trnprof.api.findings",
    "list_rules": "trnprof.api.rulepacks",
    "rule_reference": "trnprof.api.rulepacks",
    "run_rule_cases": "trnprof.api.rulepacks",
    "rule_tests": "trnprof.api.rulepacks",
    "new_rule": "trnprof.api.rulepacks",
    "rule_docs": "trnprof.api.rulepacks",
    # comparison, prediction, report, export
    "diff": "trnprof.api.comparison",
    "DEFAULT_ALPHA": "trnprof.diff.stats",
    "whatif": "trnprof.api.prediction",
    "WHATIF_ALIASES": "trnprof.whatif.describe:ALIASES",
    "report": "trnprof.api.reporting",
    "export": "trnprof.api.exports",
    # making runs: ingest, simulate, record, demo
    "ingest": "trnprof.collectors.ingest",
    "ingest_traces": "trnprof.api.traces",
    "ingest_ahead": "trnprof.api.ahead:start",
    "input_formats": "trnprof.collectors.ingest.formats:names",
    "run_or_traces": "trnprof.api.traces",
    "load_config": "trnprof.collectors.trn1",
    "simulate": "trnprof.collectors.trn1",
    "presets": "trnprof.api.simulation",
    "predict": "trnprof.api.simulation",
    "simulate_job": "trnprof.api.simulation",
    "FAULT_KINDS": "trnprof.model.faults",
    "CALIBRATION_PARAMS": "trnprof.model.params:DESCRIPTIONS",
    "record": "trnprof.api.recording",
    "demo": "trnprof.api.demo_job",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, _, attribute = _EXPORTS[name].partition(":")
    value = getattr(importlib.import_module(module), attribute or name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_EXPORTS))
