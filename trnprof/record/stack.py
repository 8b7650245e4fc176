"""The software stack a recorded process trains with: the framework and the Neuron SDK release,
from what the process itself can tell. Standard library only: the record runtime loads this file
by path inside the training interpreter (which need not have trnprof's dependencies).

- **Framework**, from the modules the process imported (what it ran, not merely what is
  installed), first match: `torchtitan`; `torch_xla` (torch-xla, PyTorch/XLA); `jax` without
  torch (jax); `torch_neuronx` without torch_xla (torchneuron: native PyTorch on Neuron, the
  training stack from Neuron 2.30 on); torch alone (pytorch: CPU / CUDA, or TorchNeuron when
  the run turns out to be on Trainium, as the `run_platform` view reads it). Nothing of these
  imported: none (an unknown stack; `run_platform` states its assumption).
- **Device**: `trainium` when the process imported a Neuron module (`torch_neuronx`,
  `libneuronxla`, `jax_neuronx`, `neuronx_distributed`): its PyTorch trace shows no device work
  (Neuron is not a Kineto device), which alone would read as a CPU-only job.
- **Neuron SDK release**: the `nki-library` distribution's version when it is 2.28 or later (the
  Neuron component release notes, releases 2.28-2.33, list the NKI Library at the SDK's own
  release number); otherwise unknown. The other Neuron distributions (torch-neuronx, neuronx-cc,
  libneuronxla ...) have versions of their own that do not name the release; they are kept as
  evidence (`stack_packages`), not read as the release.
"""

from __future__ import annotations

import sys

# distributions kept as evidence (name as pip spells it)
DISTRIBUTIONS = (
    "torch",
    "torch-neuronx",
    "torch-xla",
    "torchtitan",
    "neuronx-distributed",
    "neuronx-distributed-training",
    "jax",
    "jax-neuronx",
    "libneuronxla",
    "neuronx-cc",
    "nki-library",
)
NEURON_MODULES = ("torch_neuronx", "libneuronxla", "jax_neuronx", "neuronx_distributed")
RELEASE_DISTRIBUTION = "nki-library"
RELEASE_SINCE = (2, 28)  # the first release whose notes list the NKI Library at the SDK's number


def installed(names=DISTRIBUTIONS) -> dict[str, str]:
    """{distribution: version} of those installed in this interpreter."""
    from importlib import metadata

    found = {}
    for name in names:
        try:
            found[name] = metadata.version(name)
        except Exception:  # not installed, or a broken install: not evidence
            continue
    return found


def framework(modules) -> str | None:
    """The framework the process ran, from the names of its imported modules."""
    if "torchtitan" in modules:
        return "torchtitan"
    if "torch_xla" in modules:
        return "torch-xla"
    if "jax" in modules and "torch" not in modules:
        return "jax"
    if "torch_neuronx" in modules:
        return "torchneuron"
    if "torch" in modules:
        return "pytorch"
    return None


def sdk_release(packages: dict[str, str]) -> str | None:
    """The Neuron SDK release (major.minor.patch) when the packages name it; None otherwise."""
    parts = packages.get(RELEASE_DISTRIBUTION, "").split(".")
    try:
        numbers = [int(p) for p in parts[:3]]
    except ValueError:
        return None
    if len(numbers) < 2 or tuple(numbers[:2]) < RELEASE_SINCE:
        return None
    return ".".join(str(n) for n in numbers + [0] * (3 - len(numbers)))


def detect(modules=None, packages: dict[str, str] | None = None) -> dict:
    """The job facts of the stack: `framework`, `neuron_sdk`, `device_kind` (each only when
    known) and `stack_packages` (the evidence), as the run's manifest keeps them."""
    modules = set(sys.modules) if modules is None else set(modules)
    packages = installed() if packages is None else packages
    on_neuron = any(name in modules for name in NEURON_MODULES)
    facts = {
        "framework": framework(modules),
        "neuron_sdk": sdk_release(packages),
        "device_kind": "trainium" if on_neuron else None,
        "stack_packages": dict(sorted(packages.items())),
    }
    return {key: value for key, value in facts.items() if value}
