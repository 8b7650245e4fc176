"""The rule engine: rule files, the sandbox their SQL runs in, findings and their formats.

    from trnprof.rules_engine.engine import analyze
    document = analyze("runs/job1", select=["input", "overlap"], set={"input.starvation.high_share": 0.3})
    document.findings[0].impact.fraction_of_step      # a typed `Document` (see document.py)

The package holds no code of its own: import from its modules (`engine.analyze`, the rules
alone) or use `trnprof.api.analyze` (the findings with their fixes priced).
"""
