"""Compare two runs: step time, throughput, MFU and the step breakdown with their significance,
ops, collectives and memory side by side, findings new and resolved; gates for CI.

    from trnprof.diff import diff, evaluate_gates
    document = diff("runs/base", "runs/new")
    document["step_time"]["change"], document["step_time"]["significant"]

Layout: `load` reads one run (stdlib views, findings), `stats` the significance test,
`headline` / `match` / `findings` / `comparable` the parts of the comparison, `document`
assembles it, `gates` judges --fail-if expressions, `tables` and `render` write text and
Markdown. This module imports nothing heavy, since `import trnprof` loads it: the package is
itself callable, so `trnprof.diff(base, new)` works while `trnprof.diff.gates` stays a module.
"""

import sys
import types

SCHEMA = "trnprof.diff/1"


def diff(base, new, **options) -> dict:
    """Compare run `new` against run `base`; see `trnprof.diff.document.diff`."""
    from .document import diff as run_diff
    return run_diff(base, new, **options)


def evaluate_gates(texts, document: dict, *, strict: bool = False) -> list[dict]:
    """Judge --fail-if expressions against a diff document; see `trnprof.diff.gates`."""
    from .gates import evaluate_gates as judge
    return judge(texts, document, strict=strict)


class _CallableModule(types.ModuleType):
    def __call__(self, base, new, **options) -> dict:
        return diff(base, new, **options)


sys.modules[__name__].__class__ = _CallableModule

__all__ = ["SCHEMA", "diff", "evaluate_gates"]
