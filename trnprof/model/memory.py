"""HBM residency per rank by category, in bytes (what neuron-monitor reports per NeuronCore).

params / grads: the stage's weights and their gradients in storage precision (FP32 under
BF16 autocast with an FP32 optimizer, BF16 for all-BF16 training); optimizer_state: Adam's two
moments (sharded over data parallelism by ZeRO-1); activations: what the backward pass keeps,
for the microbatches in flight (1F1B: pp - stage on stage `stage`) plus the loss logits on the
last stage; runtime: model code and constants, a gradient bucket and a gathered activation as
communication buffers. A memory_leak fault grows runtime by its bytes every step.
"""

from __future__ import annotations

from dataclasses import dataclass

from trnprof.units import MIB

from . import architecture
from .hardware import DEFAULT_INSTANCE, RUNTIME_BASE_BYTES, Instance
from .job import Job

CATEGORIES = ("params", "grads", "optimizer_state", "activations", "runtime")


@dataclass(frozen=True)
class Residency:
    params: float
    grads: float
    optimizer_state: float
    activations: float  # at the peak (end of the warm-up forwards)
    runtime: float

    @property
    def peak(self) -> float:
        return self.params + self.grads + self.optimizer_state + self.activations + self.runtime


def residency(job: Job, stage: int) -> Residency:
    params = architecture.stage_params(job, stage)
    in_flight = min(job.pp - stage, job.microbatches)
    arch = job.arch
    acts = architecture.activation_bytes_per_layer(job) * job.layers_per_stage * in_flight
    if job.checkpointing == "full":  # one layer is recomputed in full during its backward
        acts += architecture.activation_bytes_per_layer(job, "none")
    if stage == job.pp - 1:
        acts += architecture.head_tokens(arch, job.micro) * arch.vocab / job.tp * 4  # fp32 logits for the loss
    states = 2 * params * job.state_bytes
    buffers = job.config.comm.bucket_mb * MIB + job.micro * arch.seq_len * arch.hidden * job.act_bytes
    return Residency(
        params=params * job.param_bytes,
        grads=params * job.param_bytes,
        optimizer_state=states / job.dp if job.zero1 else states,
        activations=acts,
        runtime=RUNTIME_BASE_BYTES + buffers,
    )


def capacity(instance: Instance = DEFAULT_INSTANCE) -> int:
    """Device memory of one rank of `instance` (Trn1's when not given)."""
    return instance.core_hbm_bytes
