"""Device work per layer and phase: ops on the NeuronCore engines.

An op's time is the largest of its tensor-engine time (its matmuls through the tile model of
matmul.py, in the dtype the compiler multiplies in), its vector- and scalar-engine FLOPs at those
engines' peaks and its HBM traffic at HBM bandwidth x `hbm_efficiency` (the engines and the DMA
queues work concurrently inside an op), plus a fixed `op_overhead_us` (instruction issue,
semaphore waits and DMA setup at the op's boundaries), which dominates small ops. Attention is
one fused op (projections, score and value matmuls on the tensor engine, softmax on the scalar
engine, flash-style with no score traffic to HBM); norms and residual adds are vector ops; the
optimizer is memory-bound. Shapes are per rank and microbatch, after tensor parallelism.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import architecture
from .attention import SOFTMAX_FLOPS, core_backward, core_forward, score_pairs
from .faults import device_effects
from .hardware import Instance
from .job import Job
from .matmul import Matmul, tensor_seconds
from .params import Params


@dataclass(frozen=True)
class Rates:
    matmul_dtype: str
    vector_dtype: str
    tensor_efficiency: float
    hbm: float  # bytes/s
    overhead: float  # s per op
    instance: Instance  # the engines' peaks per rank (its chip and LNC)
    spill: float = 0.0  # fault sbuf_spill: share of a tensor-engine op's HBM bytes saved and reloaded
    throttle: float = 1.0  # fault throttle: allowed tensor-engine utilization

    def time(self, matmuls=(), vector=0.0, scalar=0.0, nbytes=0.0) -> float:
        core = self.instance
        tensor = tensor_seconds(matmuls, self.matmul_dtype, self.tensor_efficiency, core) / self.throttle
        return (
            self.overhead
            + max(tensor, vector / core.core_vector_flops, scalar / core.core_scalar_flops, nbytes / self.hbm)
            + self.spill_seconds(matmuls, nbytes)
        )

    def spill_seconds(self, matmuls, nbytes: float) -> float:
        """Save and reload of the spilled bytes: the engine that consumes a spilled tile waits for
        its reload, so the traffic adds to the op's time (fault sbuf_spill)."""
        return 2 * self.spill * nbytes / self.hbm if matmuls else 0.0


def rates(job: Job, params: Params) -> Rates:
    spill, throttle = device_effects(job.config.faults)
    return Rates(
        matmul_dtype=job.dtypes.matmul,
        vector_dtype=job.dtypes.vector,
        tensor_efficiency=params.tensor_efficiency,
        hbm=job.instance.core_hbm_bw * params.hbm_efficiency,
        overhead=params.op_overhead_us * 1e-6,
        instance=job.instance,
        spill=spill,
        throttle=throttle,
    )


@dataclass(frozen=True)
class Op:
    """One compute op: engine lane, FLOPs, HBM bytes, duration (s) and the dtype it runs in."""

    name: str
    lane: str
    phase: str
    flops: float
    nbytes: float
    dur: float
    dtype: str


def _op(r: Rates, name, lane, phase, matmuls=(), vector=0.0, scalar=0.0, nbytes=0.0) -> Op:
    flops = sum(mm.flops for mm in matmuls) + vector + scalar
    dtype = r.matmul_dtype if lane == "nc/tensor" else r.vector_dtype
    return Op(name, lane, phase, flops, nbytes, r.time(matmuls, vector, scalar, nbytes), dtype)


def _backward(matmuls) -> list[Matmul]:
    return [g for mm in matmuls for g in mm.backward()]


def attention_projections(job: Job) -> list[Matmul]:
    """QKV and output projections of one layer's forward on one rank."""
    arch, t = job.arch, job.tp
    T, h, d = job.micro * arch.seq_len, arch.hidden, arch.head_dim
    kv_width = max(arch.kv_heads / t, 1) * d  # KV heads are replicated when tp exceeds them
    return [Matmul(h, T, h / t + 2 * kv_width), Matmul(h / t, T, h)]


def mlp_matmuls(job: Job) -> list[Matmul]:
    arch, t = job.arch, job.tp
    T, h, f = job.micro * arch.seq_len, arch.hidden, arch.ffn_hidden / t
    return [Matmul(h, T, f * (architecture.mlp_matrices(arch) - 1)), Matmul(f, T, h)]


# Dropout (Srivastava et al. 2014) as the stacks run it: a random keep-mask of 1 byte per element
# (the mask Korthikanti et al. 2022 count in activation memory) written in the forward and read
# in the backward; compare and scale are 2 elementwise FLOPs per element, fused by the compiler
# into the neighbouring elementwise op (the norm after a bias-dropout-add, the softmax).
DROPOUT_FLOPS = 2
MASK_BYTES = 1
# Eager attention's score traffic through HBM, in elements of the score tensor: the forward
# writes the scores (QK^T), the softmax reads them and writes the probabilities, the PV matmul
# reads those (4); the backward writes dP, the softmax backward reads P and dP and writes dS,
# which dQ and dK read (5).
EAGER_SCORE_PASSES_FWD = 4
EAGER_SCORE_PASSES_BWD = 5


def _with_dropout(work: dict, elements: float, backward: bool) -> dict:
    """An elementwise op's work plus a fused dropout over `elements` (mask written or read)."""
    return dict(
        work,
        vector=work.get("vector", 0.0) + (0 if backward else DROPOUT_FLOPS * elements),
        nbytes=work["nbytes"] + MASK_BYTES * elements,
    )


def softmax_work(job: Job) -> tuple[dict, dict]:
    """(forward, backward) work of eager attention's separate softmax op on one rank."""
    arch, ab = job.arch, job.act_bytes
    scores = score_pairs(job) * arch.seq_len**2
    fwd = dict(scalar=SOFTMAX_FLOPS * scores, nbytes=EAGER_SCORE_PASSES_FWD * scores * ab)
    bwd = dict(scalar=2 * SOFTMAX_FLOPS * scores, nbytes=EAGER_SCORE_PASSES_BWD * scores * ab)
    if arch.dropout > 0:
        fwd, bwd = _with_dropout(fwd, scores, False), _with_dropout(bwd, scores, True)
    if job.checkpointing == "selective":  # the attention core is recomputed before its backward
        bwd = dict(
            scalar=bwd["scalar"] + fwd["scalar"],
            vector=bwd.get("vector", 0.0) + fwd.get("vector", 0.0),
            nbytes=bwd["nbytes"] + fwd["nbytes"],
        )
    return fwd, bwd


class LayerCosts:
    """Forward and backward ops of one transformer layer on one rank."""

    def __init__(self, job: Job, r: Rates):
        arch, t = job.arch, job.tp
        self.job, self.r = job, r
        b, s, h, f = job.micro, arch.seq_len, arch.hidden, arch.ffn_hidden
        T, ab, gb = b * s, job.act_bytes, job.param_bytes
        wb = job.act_bytes  # weights are read in the compute dtype
        kv_width = arch.kv_heads * arch.head_dim
        local = T * h / t if job.sp else T * h
        self.norm = dict(vector=8 * local, nbytes=3 * local * ab)
        self.norm_bwd = dict(vector=16 * local, nbytes=5 * local * ab)
        if arch.dropout > 0:  # each norm takes the dropout-add of the sublayer before it
            self.norm, self.norm_bwd = _with_dropout(self.norm, local, False), _with_dropout(self.norm_bwd, local, True)
        wa = architecture.attention_params(arch) / t
        projections = attention_projections(job)
        core, softmax = core_forward(job)
        core_bwd, softmax_bwd = core_backward(job, job.checkpointing == "selective")
        eager = arch.attention == "eager"
        if eager:  # the softmax is its own op (softmax_work); flash keeps it in the attention op
            softmax = softmax_bwd = 0.0
        elif arch.dropout > 0:
            softmax *= 1 + DROPOUT_FLOPS / SOFTMAX_FLOPS
        self.attn = dict(
            matmuls=projections + core,
            scalar=softmax,
            nbytes=wa * wb + T * ab * (h + 2 * (h + 2 * kv_width) / t + 2 * h / t),
        )
        self.attn_bwd = dict(
            matmuls=_backward(projections) + core_bwd, scalar=softmax_bwd, nbytes=2 * self.attn["nbytes"] + 2 * wa * gb
        )
        self.softmax, self.softmax_bwd = softmax_work(job) if eager else (None, None)
        wm = architecture.mlp_params(arch) / t
        act = T * f / t * (6 if arch.mlp == "swiglu" else 8)
        self.mlp = dict(
            matmuls=mlp_matmuls(job),
            scalar=act,
            nbytes=wm * wb + T * ab * (h + (architecture.mlp_matrices(arch) - 1) * f / t + h / t),
        )
        self.mlp_bwd = dict(
            matmuls=_backward(self.mlp["matmuls"]), scalar=2 * act, nbytes=2 * self.mlp["nbytes"] + 2 * wm * gb
        )
        self.tp_bytes = T * h * ab  # gathered activations: all-gather output / reduce-scatter input
        self.grad_bytes = architecture.layer_params(arch) / t * gb

    def forward(self, i: int, phase: str = "fwd", suffix: str = ""):
        """Items of layer i's forward: Ops and ('tp', op, bytes, name) collective markers."""
        r, p = self.r, f"layers.{i}."
        norm1 = _op(r, p + "input_layernorm" + suffix, "nc/vector", phase, **self.norm)
        attn = [_op(r, p + "self_attn" + suffix, "nc/tensor", phase, **self.attn)]
        if self.softmax is not None:
            attn.append(_op(r, p + "self_attn.softmax" + suffix, "nc/vector", phase, **self.softmax))
        norm2 = _op(r, p + "post_attention_layernorm" + suffix, "nc/vector", phase, **self.norm)
        mlp = _op(r, p + "mlp" + suffix, "nc/tensor", phase, **self.mlp)
        if self.job.tp == 1:
            return [norm1, *attn, norm2, mlp]
        n = self.tp_bytes
        if self.job.sp:
            return [
                norm1,
                ("all_gather", n, p + "self_attn.all_gather" + suffix),
                *attn,
                ("reduce_scatter", n, p + "self_attn.reduce_scatter" + suffix),
                norm2,
                ("all_gather", n, p + "mlp.all_gather" + suffix),
                mlp,
                ("reduce_scatter", n, p + "mlp.reduce_scatter" + suffix),
            ]
        return [
            norm1,
            *attn,
            ("all_reduce", n, p + "self_attn.all_reduce" + suffix),
            norm2,
            mlp,
            ("all_reduce", n, p + "mlp.all_reduce" + suffix),
        ]

    def backward(self, i: int):
        r, p = self.r, f"layers.{i}."
        items = self.forward(i, "bwd", ".recompute") if self.job.checkpointing == "full" else []
        norm1 = _op(r, p + "input_layernorm", "nc/vector", "bwd", **self.norm_bwd)
        attn = [_op(r, p + "self_attn", "nc/tensor", "bwd", **self.attn_bwd)]
        if self.softmax_bwd is not None:
            attn.insert(0, _op(r, p + "self_attn.softmax", "nc/vector", "bwd", **self.softmax_bwd))
        norm2 = _op(r, p + "post_attention_layernorm", "nc/vector", "bwd", **self.norm_bwd)
        mlp = _op(r, p + "mlp", "nc/tensor", "bwd", **self.mlp_bwd)
        if self.job.tp == 1:
            return items + [mlp, norm2, *attn, norm1]
        n = self.tp_bytes
        if self.job.sp:  # the backward of an all-gather is a reduce-scatter and vice versa
            return items + [
                ("all_gather", n, p + "mlp.all_gather"),
                mlp,
                ("reduce_scatter", n, p + "mlp.reduce_scatter"),
                norm2,
                ("all_gather", n, p + "self_attn.all_gather"),
                *attn,
                ("reduce_scatter", n, p + "self_attn.reduce_scatter"),
                norm1,
            ]
        return items + [
            mlp,
            ("all_reduce", n, p + "mlp.all_reduce"),
            norm2,
            *attn,
            ("all_reduce", n, p + "self_attn.all_reduce"),
            norm1,
        ]


def embedding_items(job: Job, r: Rates, phase: str):
    arch, t = job.arch, job.tp
    T, ab = job.micro * arch.seq_len, job.act_bytes
    if arch.kind == "vit":
        patches = job.micro * (arch.seq_len - 1)
        pixels = job.micro * 3 * arch.image_size**2
        embed = [Matmul(3 * arch.patch_size**2, patches, arch.hidden)]
        matmuls = [embed[0].backward()[1]] if phase == "bwd" else embed  # no gradient for the pixels
        return [_op(r, "patch_embed", "nc/tensor", phase, matmuls=matmuls, nbytes=pixels * ab + T * arch.hidden * ab)]
    nbytes = 2 * T * arch.hidden * ab * (2 if phase == "bwd" else 1)
    op = _op(r, "embed_tokens", "nc/vector", phase, vector=T * arch.hidden, nbytes=nbytes)
    if t == 1:
        return [op]
    n = T * arch.hidden * ab
    if phase == "fwd":  # vocab-parallel lookup, then combine the partial embeddings
        return [
            op,
            (
                "reduce_scatter" if job.sp else "all_reduce",
                n,
                "embed_tokens." + ("reduce_scatter" if job.sp else "all_reduce"),
            ),
        ]
    return ([("all_gather", n, "embed_tokens.all_gather")] if job.sp else []) + [op]


def head_items(job: Job, r: Rates, phase: str):
    arch, t = job.arch, job.tp
    T = job.micro * arch.seq_len
    Th = architecture.head_tokens(arch, job.micro)
    ab, gb, h, V = job.act_bytes, job.param_bytes, arch.hidden, arch.vocab
    local = T * h / t if job.sp else T * h
    norm = _op(
        r,
        "norm",
        "nc/vector",
        phase,
        vector=8 * local * (2 if phase == "bwd" else 1),
        nbytes=3 * local * ab * (2 if phase == "bwd" else 1),
    )
    weights = (V * h + (h * h if arch.kind == "encoder" else 0)) / t
    head_mm = [Matmul(h, Th, V / t)] + ([Matmul(h, Th, h / t)] if arch.kind == "encoder" else [])
    loss_work = dict(vector=5 * Th * V / t, nbytes=2 * Th * V / t * 4)  # fp32 logits
    loss_coll = ("all_reduce", 2 * Th * 4, "loss.all_reduce") if t > 1 else None
    gather = ("all_gather", T * h * ab, "norm.all_gather") if job.sp else None
    scatter = (
        ("reduce_scatter", T * h * ab, "lm_head.reduce_scatter")
        if job.sp
        else (("all_reduce", T * h * ab, "lm_head.all_reduce") if t > 1 else None)
    )
    if phase == "fwd":
        head = _op(r, "lm_head", "nc/tensor", phase, matmuls=head_mm, nbytes=weights * ab + Th * V / t * ab)
        loss = _op(r, "loss", "nc/vector", phase, **loss_work)
        items = [norm, gather, head, loss, loss_coll]
    else:
        head = _op(
            r,
            "lm_head",
            "nc/tensor",
            phase,
            matmuls=_backward(head_mm),
            nbytes=2 * (weights * ab + Th * V / t * ab) + 2 * weights * gb,
        )
        loss = _op(r, "loss", "nc/vector", phase, **loss_work)
        items = [loss, head, scatter, norm]
    return [i for i in items if i is not None]


def optimizer_ops(job: Job, r: Rates, stage: int) -> list[Op]:
    """AdamW over the rank's parameters (its 1/dp shard under ZeRO-1): memory-bound."""
    params = architecture.stage_params(job, stage)
    shard = params / job.dp if job.zero1 else params
    gb, pb, sb = job.param_bytes, job.param_bytes, job.state_bytes
    return [
        _op(r, "optimizer.clip_grad_norm", "nc/vector", "opt", vector=2 * shard, nbytes=shard * gb),
        _op(r, "optimizer.adamw", "nc/vector", "opt", vector=14 * shard, nbytes=shard * (gb + 2 * pb + 4 * sb)),
        _op(r, "optimizer.zero_grad", "nc/vector", "opt", nbytes=params * gb),
    ]
