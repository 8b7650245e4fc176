"""Compare two runs: step time, throughput, MFU and the step breakdown with their significance,
ops, collectives and memory side by side, findings new and resolved; gates for CI.

    from trnprof.api import diff
    document = diff("runs/base", "runs/new")
    document["step_time"]["change"], document["step_time"]["significant"]

Layout: `load` reads one run (stdlib views, findings), `stats` the significance test,
`headline` / `match` / `findings` / `comparable` the parts of the comparison, `document`
assembles it, `gates` judges --fail-if expressions, `tables` and `render` write text and
Markdown. The package holds no code of its own, so the report can import `tables` without the
rule engine.
"""
