"""The attention core (scores, softmax, values) as the training stacks run it on Trn1.

`flash` (NeuronX-Distributed's default): the NKI flash-attention kernels (aws-neuron/nki-samples,
src/nki_samples/reference/attention.py, `flash_fwd` / `flash_attn_bwd`) keep the scores on chip.
With a causal mask they skip work tile by tile, but at three granularities:
  - forward QK^T: 128 query rows x 512 keys, skipped when the key tile starts after the query tile;
  - forward exp and PV: whole 2048-key tiles (FlashConfig.seq_tile_size), computed for every query
    tile that starts at or after the large tile's start;
  - backward: 128 x 512 tiles as the forward QK^T; per computed tile it recomputes QK^T and runs
    dV, dP, dK and dQ (five score-sized matmuls), whatever the activation checkpointing.
`eager` (NeMo-Megatron without fused softmax, HuggingFace eager attention): every score is
computed and masked afterwards, and the scores go through HBM between the matmuls and a
separate softmax op (compute.softmax_work).
"""

from __future__ import annotations

import math

from .job import Job
from .matmul import Matmul

QUERY_TILE = 128  # B_P_SIZE: query rows per tile
KEY_TILE = 512  # B_F_SIZE: keys per QK^T tile (forward) and per backward tile
LARGE_KEY_TILE = 2048  # FlashConfig.seq_tile_size: keys per exp / PV tile in the forward
FLASH_BACKWARD_MATMULS = 5  # QK^T (recomputed), dV, dP, dK, dQ
SOFTMAX_FLOPS = 5  # per score: scale, max, subtract, exp, sum


def causal_fraction(seq: int, key_tile: int) -> float:
    """Share of the seq x seq scores computed when whole key tiles above the diagonal are skipped
    (query tiles of QUERY_TILE rows): the mean over query tiles of the key tiles started by then."""
    key_tiles = max(math.ceil(seq / key_tile), 1)
    query_tiles = max(math.ceil(seq / QUERY_TILE), 1)
    started = sum(min(i * QUERY_TILE // key_tile + 1, key_tiles) for i in range(query_tiles))
    return started / (query_tiles * key_tiles)


def _flash(job: Job) -> bool:
    return job.arch.attention == "flash"


def _causal(job: Job) -> bool:
    return job.arch.kind == "decoder" and _flash(job)


def score_pairs(job: Job) -> float:
    """(batch x head) score matrices per rank and microbatch."""
    return job.micro * job.arch.heads / job.tp


def core_forward(job: Job) -> tuple[list[Matmul], float]:
    """Forward core on one rank: (QK^T and PV matmuls, softmax scalar FLOPs)."""
    s, d, pairs = job.arch.seq_len, job.arch.head_dim, score_pairs(job)
    qk = causal_fraction(s, KEY_TILE) if _causal(job) else 1.0
    pv = causal_fraction(s, LARGE_KEY_TILE) if _causal(job) else 1.0
    return [Matmul(d, s, s, pairs * qk), Matmul(s, s, d, pairs * pv)], SOFTMAX_FLOPS * pairs * s * s * pv


def core_backward(job: Job, selective: bool) -> tuple[list[Matmul], float]:
    """Backward core on one rank: (matmuls, scalar FLOPs). Flash recomputes the scores inside its
    backward kernel; eager recomputes the forward core only under selective checkpointing."""
    s, d, pairs = job.arch.seq_len, job.arch.head_dim, score_pairs(job)
    if _flash(job):
        share = causal_fraction(s, KEY_TILE) if _causal(job) else 1.0
        return [Matmul(d, s, s, pairs * share)] * FLASH_BACKWARD_MATMULS, 2 * SOFTMAX_FLOPS * pairs * s * s * share
    fwd, softmax = core_forward(job)
    grads = [g for mm in fwd for g in mm.backward()]
    return grads + (fwd if selective else []), 2 * softmax + (softmax if selective else 0.0)
