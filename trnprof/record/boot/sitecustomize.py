"""Put on PYTHONPATH by `trnprof record`: every Python process of the recorded command runs
this at start-up. In a process that imports torch.optim, it loads trnprof's record runtime (by
path, so the training interpreter needs none of trnprof's dependencies) and hooks the optimizer
steps; other processes (torchrun itself, helpers) are left as they were. Any sitecustomize that
this one shadows is run afterwards."""

import importlib.abc
import importlib.util
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
_RUNTIME_NAME = "_trnprof_record_runtime"
_WATCHED = "torch.optim.optimizer"


def _load_runtime():
    path = os.path.join(os.path.dirname(_HERE), "runtime.py")
    spec = importlib.util.spec_from_file_location(_RUNTIME_NAME, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[_RUNTIME_NAME] = module
    spec.loader.exec_module(module)
    return module


class _AfterImport(importlib.abc.MetaPathFinder):
    """Calls the runtime once torch.optim.optimizer has been executed."""

    def find_spec(self, name, path, target=None):
        if name != _WATCHED:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        run_module = spec.loader.exec_module

        def exec_module(module):
            run_module(module)
            try:
                runtime = _load_runtime()
                runtime.install_auto(runtime.Settings.from_env())
            except Exception as exc:  # never break the training job
                print(f"trnprof record: profiling disabled in pid {os.getpid()}: {exc}", file=sys.stderr)

        spec.loader.exec_module = exec_module
        return spec


def _chain():
    """Run the sitecustomize this module shadows (e.g. a distribution's own)."""
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]
    mine = sys.modules.pop("sitecustomize", None)
    try:
        importlib.import_module("sitecustomize")
    except ImportError:
        sys.modules["sitecustomize"] = mine
    except Exception as exc:
        print(f"trnprof record: the shadowed sitecustomize failed: {exc}", file=sys.stderr)


if os.environ.get("TRNPROF_RECORD"):
    sys.meta_path.insert(0, _AfterImport())
_chain()
