"""trnprof: a training-pipeline profiler and bottleneck analyzer for AWS Trainium (Trn1/Trn1n)."""

from ._version import __version__
from . import diff  # the package is callable: trnprof.diff(base, new) is trnprof.api.diff
from . import whatif  # callable like diff: trnprof.whatif(run, overrides) is trnprof.api.whatif
from .api import Run, open_run, open_runs
from .errors import TrnprofError
from .manifest import new_manifest
from .runstore import write_run

__all__ = ["Run", "TrnprofError", "__version__", "diff", "new_manifest", "open_run", "open_runs", "profile", "step",
           "whatif", "write_run"]


def __getattr__(name):
    """`trnprof.profile` / `trnprof.step` (live capture, trnprof/record/api.py), loaded on first use."""
    if name in ("profile", "step"):
        from .record import api
        return getattr(api, name)
    raise AttributeError(f"module 'trnprof' has no attribute {name!r}")
