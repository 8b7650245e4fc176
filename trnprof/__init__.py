"""trnprof: a training-pipeline profiler and bottleneck analyzer for AWS Trainium (Trn1/Trn1n).

    import trnprof
    with trnprof.open_run("runs/a") as run: ...
    trnprof.api.analyze("runs/a"), trnprof.api.diff("runs/a", "runs/b")

The names below load on first use (PEP 562), so `from trnprof.errors import TrnprofError` costs
no duckdb, pandas or pyarrow import.
"""

import importlib

from ._version import __version__

# public name -> the module that defines it
_EXPORTS = {
    "Run": "trnprof.run",
    "TrnprofError": "trnprof.errors",
    "analyze": "trnprof.api",
    "new_manifest": "trnprof.manifest",
    "open_run": "trnprof.engines",
    "open_runs": "trnprof.run",
    "profile": "trnprof.record.api",
    "step": "trnprof.record.api",
    "write_run": "trnprof.runstore",
}

_MODULES = ("api",)  # `import trnprof; trnprof.api.diff(...)`

__all__ = ["__version__", *_EXPORTS, *_MODULES]


def __getattr__(name: str):
    """PEP 562: a public name's module loads when the name is first read."""
    if name in _MODULES:
        return importlib.import_module(f"{__name__}.{name}")
    if name not in _EXPORTS:
        raise AttributeError(f"module 'trnprof' has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value
    return value
