"""Precision as neuronx-cc applies it: the data types the compiled graph runs in.

The job states the framework's dtype (`precision.compute`), the compiler flags
(`precision.auto_cast`, `precision.auto_cast_type`) and the Neuron SDK release it is compiled
with (`precision.neuron_sdk`). neuronx-cc (Neuron compiler CLI reference, `--auto-cast` /
`--auto-cast-type`) casts FP32 operations of the graph: `matmult` only the matrix multiplies, `all`
every operation, `none` nothing. `auto_cast: default` is the compiler's default for the release:
`none` from Neuron 2.27 (compiler 2.15.54.0 release notes: "The --auto-cast flag now defaults to
none (previously matmul)"), `matmult` before; so an FP32 model compiled with 2.27's defaults
multiplies in FP32 at a quarter of the BF16 rate, the same model on 2.26 in BF16.
`precision.framework` names the training stack (torch-xla
before Neuron 2.30, TorchNeuron from 2.30: `resolve_stack`), which the rules' advice follows.
A model already in BF16/FP16/FP8 (torch.autocast, XLA_USE_BF16) runs
as written. Whatever the compute dtype, the matmul accumulates in FP32 in PSUM (nki.isa.nc_matmul).
Master weights and gradients stay FP32 unless the optimizer state is BF16 (then stochastic
rounding keeps BF16 weights trainable: rounding-modes.rst); stochastic rounding is a rounding
mode of the engines' write-back and costs no time.
"""

from __future__ import annotations

from dataclasses import dataclass

import msgspec

from trnprof.errors import TrnprofError

from .config import Precision
from .hardware import DTYPE_BYTES


@dataclass(frozen=True)
class Compiled:
    matmul: str  # dtype the tensor engine multiplies in
    vector: str  # dtype of elementwise work and stored activations
    master: str  # dtype of stored parameters and gradients

    @property
    def act_bytes(self) -> int:
        return DTYPE_BYTES[self.vector]

    @property
    def param_bytes(self) -> int:
        return DTYPE_BYTES[self.master]


# First Neuron SDK release whose compiler defaults to --auto-cast none (Neuron 2.27.0 release notes).
AUTO_CAST_NONE_SINCE = (2, 27)


def sdk_version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split("."))


# The SDK a job is compiled with when the config names none: the calibrated Trn1 default, and on
# Trn2 the release the public TorchTitan Neuron recipes are written for (TorchTitan Neuron
# support matrix: Neuron SDK 2.33.0, TorchNeuron public beta).
DEFAULT_SDK = {"Trainium1": "2.27.0", "Trainium2": "2.33.0"}
# Neuron 2.30 ended PyTorch/XLA support for training: TorchNeuron (native PyTorch) from then on.
TORCH_XLA_UNTIL = (2, 30)


def default_framework(neuron_sdk: str) -> str:
    return "torch-xla" if sdk_version(neuron_sdk) < TORCH_XLA_UNTIL else "torchneuron"


def resolve_stack(prec: Precision, chip: str) -> Precision:
    """The precision settings with the Neuron SDK and framework filled in for `chip`; a torch-xla
    job on Neuron 2.30 or later is one error (no PyTorch/XLA training there)."""
    sdk = prec.neuron_sdk or DEFAULT_SDK[chip]
    framework = prec.framework or default_framework(sdk)
    if framework == "torch-xla" and sdk_version(sdk) >= TORCH_XLA_UNTIL:
        raise TrnprofError(
            f"config precision.framework: torch-xla does not train on Neuron {sdk} (Neuron 2.30 "
            "ended PyTorch/XLA support for training); use torchneuron or torchtitan, or "
            "precision.neuron_sdk before 2.30"
        )
    return msgspec.structs.replace(prec, neuron_sdk=sdk, framework=framework)


def auto_cast(prec: Precision) -> str:
    """The --auto-cast the compiler applies: the configured one, or the release's default."""
    if prec.auto_cast != "default":
        return prec.auto_cast
    return "none" if sdk_version(prec.neuron_sdk) >= AUTO_CAST_NONE_SINCE else "matmult"


def compiled(prec: Precision) -> Compiled:
    if prec.compute == "fp32":
        cast = auto_cast(prec)
        matmul = prec.auto_cast_type if cast in ("matmult", "all") else "fp32"
        vector = prec.auto_cast_type if cast == "all" else "fp32"
        vector = "bf16" if vector == "fp8" else vector  # FP8 is a matmul input type only
    else:
        matmul = prec.compute
        vector = "bf16" if prec.compute == "fp8" else prec.compute
    master = "fp32" if prec.optimizer_state == "fp32" or prec.compute == "fp32" else "bf16"
    return Compiled(matmul=matmul, vector=vector, master=master)


def manifest_precision(prec: Precision) -> dict:
    """What the manifest records: the settings and the dtypes the compiler runs them in."""
    c = compiled(prec)
    return {
        "compute": prec.compute,
        "auto_cast": auto_cast(prec),
        "auto_cast_type": prec.auto_cast_type,
        "neuron_sdk": prec.neuron_sdk,
        "framework": prec.framework,
        "matmul_dtype": c.matmul,
        "vector_dtype": c.vector,
        "master_weights": c.master,
        "optimizer_state": prec.optimizer_state,
        "stochastic_rounding": prec.stochastic_rounding,
    }
