"""What-if from a measured run: fit the Trn1 execution model's free parameters to the run's
steady-state steps, then predict the step of the same job changed (docs/whatif.md).

    import trnprof
    document = trnprof.whatif("runs/a", ["tp=16"])      # or {"parallel.tp": 16}
    document["predicted"]["step_time_s"], document["predicted"]["band"]

Layout: `describe` the job (manifest, --config, --set), `measure` the run's steady state,
`model` the execution model's side, `fit` the least squares, `document` assembles the answer,
`render` writes text, `projections` prices the findings' fixes, `validate` the ground-truth
check. This module imports nothing heavy, since `import trnprof` loads it: the package is
itself callable, so `trnprof.whatif(run, overrides)` works while `trnprof.whatif.fit` stays a
module.
"""

import sys
import types

SCHEMA = "trnprof.whatif/1"


def whatif(run, overrides=(), **options) -> dict:
    """Fit the model to `run` and predict it with `overrides`; see `trnprof.whatif.document.whatif`."""
    from .document import whatif as run_whatif
    return run_whatif(run, overrides, **options)


class _CallableModule(types.ModuleType):
    def __call__(self, run, overrides=(), **options) -> dict:
        return whatif(run, overrides, **options)


sys.modules[__name__].__class__ = _CallableModule

__all__ = ["SCHEMA", "whatif"]
