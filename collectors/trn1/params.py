"""The model's free parameters (fitted on calibration.csv; see params.yaml)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

import yaml


@dataclass(frozen=True)
class Params:
    matmul_efficiency: float
    hbm_efficiency: float
    launch_overhead_ms: float
    network_efficiency: float

    def replace(self, **changes) -> "Params":
        return dataclasses.replace(self, **changes)


# Fitted on calibration.csv; the others are fixed assumptions the three rows cannot identify
# (docs/execution-model.md).
FITTED = ("matmul_efficiency", "launch_overhead_ms")


@lru_cache(maxsize=1)
def default_params() -> Params:
    text = (resources.files("trnprof.collectors.trn1") / "params.yaml").read_text(encoding="utf-8")
    return Params(**{k: float(v) for k, v in yaml.safe_load(text).items()})
