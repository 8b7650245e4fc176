"""The rule engine: rule files, the sandbox their SQL runs in, findings and their formats.

    from trnprof.rules_engine import analyze
    document = analyze("runs/job1", select=["input", "overlap"], set={"input.starvation.high_share": 0.3})
    document.findings[0].impact.fraction_of_step      # a typed `Document` (see document.py)
"""

from .document import SCHEMA, Document, Finding, read_document
from .engine import analyze, evaluate
from .loader import Rule, RuleError, load_rules
from .spec import SEVERITIES

__all__ = ["SCHEMA", "SEVERITIES", "Document", "Finding", "read_document", "Rule", "RuleError", "analyze", "evaluate", "load_rules"]
