"""Transformer arithmetic: parameter counts, model FLOPs and activation memory.

Model FLOPs (the MFU numerator) follow PaLM (Chowdhery et al. 2022, appendix B): per token
6 x N_matmul + 12 x layers x hidden x seq, where N_matmul counts every parameter that takes part
in a matmul (all layer weights and the output head; the input-embedding lookup does no matmul)
and the second term is attention's score and value products (forward + backward, no causal
discount). Recomputation is hardware work, not model work, so MFU excludes it.
"""

from __future__ import annotations

from .job import Arch, Job


def attention_params(arch: Arch) -> int:
    kv_width = arch.kv_heads * arch.head_dim
    return arch.hidden * (arch.hidden + 2 * kv_width) + arch.hidden * arch.hidden


def mlp_matrices(arch: Arch) -> int:
    return 3 if arch.mlp == "swiglu" else 2


def mlp_params(arch: Arch) -> int:
    return mlp_matrices(arch) * arch.hidden * arch.ffn_hidden


def layer_params(arch: Arch) -> int:
    return attention_params(arch) + mlp_params(arch) + 4 * arch.hidden  # + two norms' scale and bias


def embedding_params(arch: Arch) -> int:
    if arch.kind == "vit":
        return 3 * arch.patch_size**2 * arch.hidden + arch.seq_len * arch.hidden
    positions = 0 if arch.mlp == "swiglu" else arch.seq_len * arch.hidden  # learned positions (not RoPE)
    return arch.vocab * arch.hidden + positions


def head_params(arch: Arch) -> int:
    """Output-head weights that are not the (tied) input embedding."""
    if arch.kind == "vit":
        return arch.hidden * arch.vocab
    extra = arch.hidden * arch.hidden if arch.kind == "encoder" else 0  # BERT's MLM transform
    return extra + (0 if arch.tie_embeddings else arch.vocab * arch.hidden)


def total_params(arch: Arch) -> int:
    return arch.layers * layer_params(arch) + embedding_params(arch) + head_params(arch)


def head_tokens(arch: Arch, samples: int) -> int:
    """Tokens the output head runs on: every token for language models, the class token for ViT."""
    return samples if arch.kind == "vit" else samples * arch.seq_len


def model_flops_per_step(job: Job) -> float:
    arch = job.arch
    samples = job.global_batch
    tokens = samples * arch.seq_len
    matmul_params = arch.layers * (attention_params(arch) + mlp_params(arch))
    flops = 6 * matmul_params * tokens + 12 * arch.layers * arch.hidden * arch.seq_len * tokens
    head = arch.vocab * arch.hidden + (arch.hidden * arch.hidden if arch.kind == "encoder" else 0)
    flops += 6 * head * head_tokens(arch, samples)
    if arch.kind == "vit":
        flops += 6 * 3 * arch.patch_size**2 * arch.hidden * samples * (arch.seq_len - 1)
    return float(flops)


def stage_params(job: Job, stage: int) -> float:
    """Parameters held by one rank of pipeline stage `stage` (TP shards every weight)."""
    arch = job.arch
    params = job.layers_per_stage * layer_params(arch)
    if stage == 0:
        params += embedding_params(arch)
    if stage == job.pp - 1:
        params += head_params(arch)
        if arch.tie_embeddings and job.pp > 1:
            params += arch.vocab * arch.hidden  # Megatron keeps a copy for the tied head
    return params / job.tp


def activation_bytes_per_layer(job: Job, checkpointing: str | None = None) -> float:
    """Activation bytes one rank keeps per layer and microbatch for the backward pass.

    Korthikanti et al. 2022 ("Reducing activation recomputation in large transformer models"),
    s*b*h*(34 + 5*a*s/h) for GPT with 2-byte activations, generalised to grouped KV heads
    (attention 7 + 4*kv/heads instead of 11) and SwiGLU (MLP 3*h + 6*f instead of 3*h + 4*f).
    Tensor parallelism divides all of it with sequence parallelism, all but the 10*s*b*h of
    norms, dropout masks and block inputs without; selective checkpointing drops the 5*a*s^2*b
    attention scores; full checkpointing keeps only the 2*s*b*h layer input.
    """
    arch, t = job.arch, job.tp
    s, b, h, a, f = arch.seq_len, job.micro, arch.hidden, arch.heads, arch.ffn_hidden
    mode = checkpointing or job.checkpointing
    scale = job.act_bytes / 2
    if mode == "full":
        return 2 * s * b * h * scale / (t if job.sp else 1)
    attention = s * b * h * (7 + 4 * arch.kv_heads / a)
    mlp = 3 * s * b * h + (6 if arch.mlp == "swiglu" else 4) * s * b * f
    norms = 4 * s * b * h
    scores = 0.0 if mode == "selective" else 5 * a * s * s * b
    total = attention + mlp + norms + scores
    if t > 1 and not job.sp:
        replicated = 10 * s * b * h
        return (replicated + (total - replicated) / t) * scale
    return total / t * scale
