"""The attention core as the stacks run it: which scores the NKI flash kernels compute under a
causal mask, eager attention's score traffic through HBM, and dropout's masks. Expected values
are derived here from the kernels' loops and the tensor sizes, not copied from the model."""

from trnprof.collectors.trn1 import load_config
from trnprof.model.compute import LayerCosts, rates
from trnprof.model.job import resolve
from trnprof.model.params import default_params


def layer(preset, *overrides):
    job = resolve(load_config(preset=preset, overrides=list(overrides)))
    costs = LayerCosts(job, rates(job, default_params()))
    ops = {
        op.name: op for op in costs.forward(0) + costs.backward(0) if not isinstance(op, tuple) and op.phase == "fwd"
    }
    bwd = {op.name: op for op in costs.backward(0) if not isinstance(op, tuple)}
    return job, ops, bwd


def kernel_share(seq, key_tile, query_tile=128):
    """Scores the flash kernel computes: query tile i runs key tile j when i*128 >= j*key_tile."""
    done = sum(1 for i in range(seq // query_tile) for j in range(seq // key_tile) if i * query_tile >= j * key_tile)
    return done / ((seq // query_tile) * (seq // key_tile))


def projection_flops(job):
    arch, t = job.arch, job.tp
    T, h, d = job.micro * arch.seq_len, arch.hidden, arch.head_dim
    kv = max(arch.kv_heads / t, 1) * d
    return 2 * h * T * (h / t + 2 * kv) + 2 * (h / t) * T * h


def test_flash_forward_computes_the_scores_the_kernel_tiles_reach():
    job, fwd, _ = layer("llama2-7b-16node")
    s, d, pairs = job.arch.seq_len, job.arch.head_dim, job.micro * job.arch.heads / job.tp
    matmuls = 2 * d * s * s * pairs * (kernel_share(s, 512) + kernel_share(s, 2048))
    softmax = 5 * pairs * s * s * kernel_share(s, 2048)  # exp over the large tiles: scale, max, sub, exp, sum
    assert fwd["layers.0.self_attn"].flops == projection_flops(job) + matmuls + softmax
    assert "layers.0.self_attn.softmax" not in fwd  # scores never leave the chip


def test_eager_attention_computes_every_score_and_moves_them_through_hbm():
    job, fwd, bwd = layer("llama2-7b-16node", "model.attention=eager")
    s, d, pairs = job.arch.seq_len, job.arch.head_dim, job.micro * job.arch.heads / job.tp
    assert fwd["layers.0.self_attn"].flops == projection_flops(job) + 2 * 2 * d * s * s * pairs  # softmax apart
    scores = pairs * s * s
    softmax = fwd["layers.0.self_attn.softmax"]
    # QK^T writes the scores, softmax reads them and writes the probabilities, PV reads those
    assert softmax.lane == "nc/vector" and softmax.nbytes == 4 * scores * job.act_bytes
    assert bwd["layers.0.self_attn.softmax"].nbytes > softmax.nbytes


def test_dropout_adds_its_mask_to_the_norms_and_slows_the_step():
    job, plain, _ = layer("gpt3-23b-32node", "model.dropout=0")
    _, dropped, bwd = layer("gpt3-23b-32node")
    local = job.micro * job.arch.seq_len * job.arch.hidden / job.tp  # sequence-parallel norms
    for name in ("layers.0.input_layernorm", "layers.0.post_attention_layernorm"):
        assert dropped[name].nbytes - plain[name].nbytes == local  # one byte of mask per element
        assert dropped[name].dur > plain[name].dur
    assert job.arch.dropout == 0 and resolve(load_config(preset="gpt3-23b-32node")).arch.dropout == 0.1
