"""The model's free parameters: shipped values (params.yaml), their plausible ranges, and the
values a job uses (its `calibration:` config section over the shipped ones)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

import yaml


@dataclass(frozen=True)
class Params:
    tensor_efficiency: float  # achieved fraction of the tensor engine's streaming rate on full tiles
    op_overhead_us: float  # fixed device time per op: instruction issue, semaphore waits, DMA setup
    hbm_efficiency: float  # achieved fraction of HBM bandwidth on memory-bound ops
    network_efficiency: float  # achieved fraction of EFA line rate for inter-node collectives

    def replace(self, **changes) -> "Params":
        return dataclasses.replace(self, **changes)

    def as_dict(self) -> dict[str, float]:
        return {f.name: float(getattr(self, f.name)) for f in dataclasses.fields(self)}


NAMES = tuple(f.name for f in dataclasses.fields(Params))
# What each one means (CLI help, docs).
DESCRIPTIONS = {
    "tensor_efficiency": "achieved fraction of the tensor engine's streaming rate on full tiles",
    "op_overhead_us": "fixed device time per op (us): instruction issue, semaphore waits, DMA setup",
    "hbm_efficiency": "achieved fraction of HBM bandwidth on memory-bound ops",
    "network_efficiency": "achieved fraction of EFA line rate for inter-node collectives",
}
# Fitted on data/calibration.csv; the others are fixed at typical values the three rows cannot
# identify (docs/execution-model.md).
FITTED = ("tensor_efficiency", "op_overhead_us")
# Plausible ranges from public figures (docs/execution-model.md, "Free parameters"); the fit is
# bounded by them.
BOUNDS = {
    "tensor_efficiency": (0.5, 1.0),
    "op_overhead_us": (1.0, 200.0),
    "hbm_efficiency": (0.6, 0.95),
    "network_efficiency": (0.5, 0.95),
}


@lru_cache(maxsize=1)
def default_params() -> Params:
    text = (resources.files("trnprof.model") / "params.yaml").read_text(encoding="utf-8")
    return Params(**{k: float(v) for k, v in yaml.safe_load(text).items()})


def job_params(calibration, base: Params | None = None) -> Params:
    """`base` (the shipped values by default) with the config's `calibration:` values over it."""
    base = base or default_params()
    chosen = {name: getattr(calibration, name) for name in NAMES if getattr(calibration, name) is not None}
    return base.replace(**chosen)
