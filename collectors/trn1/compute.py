"""Device work per layer and phase: ops on the NeuronCore engines timed by a roofline.

An op's time is the largest of its tensor-engine FLOPs at the matmul peak (BF16, or FP32 for
FP32 compute) x matmul efficiency, its vector- and scalar-engine FLOPs at those engines' peaks,
and its HBM traffic at HBM bandwidth x HBM efficiency. Attention is one fused op (score and
value matmuls on the tensor engine, softmax on the scalar engine, flash-style with no score
traffic to HBM); norms and residual adds are vector ops; the optimizer is memory-bound.
Counts are per rank and microbatch, after tensor parallelism divides the work.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import architecture as A
from .hardware import CORE_HBM_BW, CORE_SCALAR_FLOPS, CORE_VECTOR_FLOPS, MATMUL_PEAK
from .job import Job
from .params import Params


@dataclass(frozen=True)
class Rates:
    matmul: float   # FLOP/s
    vector: float
    scalar: float
    hbm: float      # bytes/s

    def time(self, tensor=0.0, vector=0.0, scalar=0.0, nbytes=0.0) -> float:
        return max(tensor / self.matmul, vector / self.vector, scalar / self.scalar, nbytes / self.hbm)


def rates(job: Job, params: Params) -> Rates:
    peak = MATMUL_PEAK[job.config.precision.compute]
    return Rates(matmul=peak * params.matmul_efficiency, vector=CORE_VECTOR_FLOPS,
                 scalar=CORE_SCALAR_FLOPS, hbm=CORE_HBM_BW * params.hbm_efficiency)


@dataclass(frozen=True)
class Op:
    """One compute op: engine lane, FLOPs, HBM bytes and duration (s)."""
    name: str
    lane: str
    phase: str
    flops: float
    nbytes: float
    dur: float


def _op(r: Rates, name, lane, phase, tensor=0.0, vector=0.0, scalar=0.0, nbytes=0.0) -> Op:
    return Op(name, lane, phase, tensor + vector + scalar, nbytes, r.time(tensor, vector, scalar, nbytes))


class LayerCosts:
    """Forward and backward ops of one transformer layer on one rank."""

    def __init__(self, job: Job, r: Rates):
        arch, t = job.arch, job.tp
        self.job, self.r = job, r
        b, s, h, a, f = job.micro, arch.seq_len, arch.hidden, arch.heads, arch.ffn_hidden
        T, ab, gb = b * s, job.act_bytes, job.param_bytes
        wb = job.act_bytes  # weights are read in the compute dtype
        kv_width = arch.kv_heads * arch.head_dim
        local = T * h / t if job.sp else T * h
        self.norm = dict(vector=8 * local, nbytes=3 * local * ab)
        self.norm_bwd = dict(vector=16 * local, nbytes=5 * local * ab)
        wa = A.attention_params(arch) / t
        core = 4 * b * s * s * h / t
        softmax = 5 * b * (a / t) * s * s
        self.attn = dict(tensor=2 * T * wa + core, scalar=softmax,
                         nbytes=wa * wb + T * ab * (h + 2 * (h + 2 * kv_width) / t + 2 * h / t))
        recompute = (core, softmax) if job.checkpointing == "selective" else (0.0, 0.0)
        self.attn_bwd = dict(tensor=2 * self.attn["tensor"] + recompute[0], scalar=2 * softmax + recompute[1],
                             nbytes=2 * self.attn["nbytes"] + 2 * wa * gb)
        wm = A.mlp_params(arch) / t
        act = T * f / t * (6 if arch.mlp == "swiglu" else 8)
        self.mlp = dict(tensor=2 * T * wm, scalar=act,
                        nbytes=wm * wb + T * ab * (h + (A.mlp_matrices(arch) - 1) * f / t + h / t))
        self.mlp_bwd = dict(tensor=4 * T * wm, scalar=2 * act, nbytes=2 * self.mlp["nbytes"] + 2 * wm * gb)
        self.tp_bytes = T * h * ab  # gathered activations: all-gather output / reduce-scatter input
        self.grad_bytes = A.layer_params(arch) / t * gb

    def forward(self, i: int, phase: str = "fwd", suffix: str = ""):
        """Items of layer i's forward: Ops and ('tp', op, bytes, name) collective markers."""
        r, p = self.r, f"layers.{i}."
        norm1 = _op(r, p + "input_layernorm" + suffix, "nc/vector", phase, **self.norm)
        attn = _op(r, p + "self_attn" + suffix, "nc/tensor", phase, **self.attn)
        norm2 = _op(r, p + "post_attention_layernorm" + suffix, "nc/vector", phase, **self.norm)
        mlp = _op(r, p + "mlp" + suffix, "nc/tensor", phase, **self.mlp)
        if self.job.tp == 1:
            return [norm1, attn, norm2, mlp]
        n = self.tp_bytes
        if self.job.sp:
            return [norm1, ("all_gather", n, p + "self_attn.all_gather" + suffix), attn,
                    ("reduce_scatter", n, p + "self_attn.reduce_scatter" + suffix), norm2,
                    ("all_gather", n, p + "mlp.all_gather" + suffix), mlp,
                    ("reduce_scatter", n, p + "mlp.reduce_scatter" + suffix)]
        return [norm1, attn, ("all_reduce", n, p + "self_attn.all_reduce" + suffix), norm2, mlp,
                ("all_reduce", n, p + "mlp.all_reduce" + suffix)]

    def backward(self, i: int):
        r, p = self.r, f"layers.{i}."
        items = self.forward(i, "bwd", ".recompute") if self.job.checkpointing == "full" else []
        norm1 = _op(r, p + "input_layernorm", "nc/vector", "bwd", **self.norm_bwd)
        attn = _op(r, p + "self_attn", "nc/tensor", "bwd", **self.attn_bwd)
        norm2 = _op(r, p + "post_attention_layernorm", "nc/vector", "bwd", **self.norm_bwd)
        mlp = _op(r, p + "mlp", "nc/tensor", "bwd", **self.mlp_bwd)
        if self.job.tp == 1:
            return items + [mlp, norm2, attn, norm1]
        n = self.tp_bytes
        if self.job.sp:  # the backward of an all-gather is a reduce-scatter and vice versa
            return items + [("all_gather", n, p + "mlp.all_gather"), mlp,
                            ("reduce_scatter", n, p + "mlp.reduce_scatter"), norm2,
                            ("all_gather", n, p + "self_attn.all_gather"), attn,
                            ("reduce_scatter", n, p + "self_attn.reduce_scatter"), norm1]
        return items + [mlp, ("all_reduce", n, p + "mlp.all_reduce"), norm2, attn,
                        ("all_reduce", n, p + "self_attn.all_reduce"), norm1]


def embedding_items(job: Job, r: Rates, phase: str):
    arch, t = job.arch, job.tp
    T, ab = job.micro * arch.seq_len, job.act_bytes
    if arch.kind == "vit":
        patches = job.micro * (arch.seq_len - 1)
        pixels = job.micro * 3 * arch.image_size ** 2
        tensor = 2 * patches * 3 * arch.patch_size ** 2 * arch.hidden * (2 if phase == "bwd" else 1)
        return [_op(r, "patch_embed", "nc/tensor", phase, tensor=tensor, nbytes=pixels * ab + T * arch.hidden * ab)]
    nbytes = 2 * T * arch.hidden * ab * (2 if phase == "bwd" else 1)
    op = _op(r, "embed_tokens", "nc/vector", phase, vector=T * arch.hidden, nbytes=nbytes)
    if t == 1:
        return [op]
    n = T * arch.hidden * ab
    if phase == "fwd":  # vocab-parallel lookup, then combine the partial embeddings
        return [op, ("reduce_scatter" if job.sp else "all_reduce", n, "embed_tokens." + ("reduce_scatter" if job.sp else "all_reduce"))]
    return ([("all_gather", n, "embed_tokens.all_gather")] if job.sp else []) + [op]


def head_items(job: Job, r: Rates, phase: str):
    arch, t = job.arch, job.tp
    T = job.micro * arch.seq_len
    Th = A.head_tokens(arch, job.micro)
    ab, gb, h, V = job.act_bytes, job.param_bytes, arch.hidden, arch.vocab
    local = T * h / t if job.sp else T * h
    norm = _op(r, "norm", "nc/vector", phase, vector=8 * local * (2 if phase == "bwd" else 1),
               nbytes=3 * local * ab * (2 if phase == "bwd" else 1))
    weights = (V * h + (h * h if arch.kind == "encoder" else 0)) / t
    head_f = 2 * Th * weights
    loss_work = dict(vector=5 * Th * V / t, nbytes=2 * Th * V / t * 4)  # fp32 logits
    loss_coll = ("all_reduce", 2 * Th * 4, "loss.all_reduce") if t > 1 else None
    gather = ("all_gather", T * h * ab, "norm.all_gather") if job.sp else None
    scatter = ("reduce_scatter", T * h * ab, "lm_head.reduce_scatter") if job.sp else \
        (("all_reduce", T * h * ab, "lm_head.all_reduce") if t > 1 else None)
    if phase == "fwd":
        head = _op(r, "lm_head", "nc/tensor", phase, tensor=head_f, nbytes=weights * ab + Th * V / t * ab)
        loss = _op(r, "loss", "nc/vector", phase, **loss_work)
        items = [norm, gather, head, loss, loss_coll]
    else:
        head = _op(r, "lm_head", "nc/tensor", phase, tensor=2 * head_f,
                   nbytes=2 * (weights * ab + Th * V / t * ab) + 2 * weights * gb)
        loss = _op(r, "loss", "nc/vector", phase, **loss_work)
        items = [loss, head, scatter, norm]
    return [i for i in items if i is not None]


def optimizer_ops(job: Job, r: Rates, stage: int) -> list[Op]:
    """AdamW over the rank's parameters (its 1/dp shard under ZeRO-1): memory-bound."""
    params = A.stage_params(job, stage)
    shard = params / job.dp if job.zero1 else params
    gb, pb, sb = job.param_bytes, job.param_bytes, job.state_bytes
    return [
        _op(r, "optimizer.clip_grad_norm", "nc/vector", "opt", vector=2 * shard, nbytes=shard * gb),
        _op(r, "optimizer.adamw", "nc/vector", "opt", vector=14 * shard,
            nbytes=shard * (gb + 2 * pb + 4 * sb)),
        _op(r, "optimizer.zero_grad", "nc/vector", "opt", nbytes=params * gb),
    ]
