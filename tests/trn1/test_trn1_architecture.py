"""Parameter counts, model FLOPs and activation memory of the presets."""

import pytest

from trnprof.model import architecture
from trnprof.model.config import load_config
from trnprof.model.job import resolve
from trnprof.model.memory import residency


def job(preset, *overrides):
    return resolve(load_config(preset=preset, overrides=list(overrides)))


@pytest.mark.parametrize(
    "preset, billions",
    [
        ("llama2-7b", 6.74),
        ("llama2-13b", 13.0),
        ("llama2-70b", 69.0),
        ("llama3.1-8b", 8.03),
        ("llama3.1-70b", 70.6),
        ("gpt3-175b", 175.0),
        ("bert-large", 0.335),
        ("vit-base", 0.086),
    ],
)
def test_parameter_counts_match_the_published_sizes(preset, billions):
    assert architecture.total_params(job(preset).arch) / 1e9 == pytest.approx(billions, rel=0.03)


def test_model_flops_follow_palm():
    j = job("llama2-7b")
    arch = j.arch
    tokens = j.global_batch * arch.seq_len
    params_per_layer = architecture.attention_params(arch) + architecture.mlp_params(arch)
    per_token = (
        6 * (arch.layers * params_per_layer + arch.vocab * arch.hidden) + 12 * arch.layers * arch.hidden * arch.seq_len
    )
    assert architecture.model_flops_per_step(j) == per_token * tokens


def test_stage_params_add_up_to_the_model():
    j = job("gpt3-23b")
    shards = sum(architecture.stage_params(j, s) for s in range(j.pp)) * j.tp
    tied_copy = j.arch.vocab * j.arch.hidden  # the last stage's copy of the tied embedding
    assert shards == pytest.approx(architecture.total_params(j.arch) + tied_copy)


def test_activation_memory_follows_korthikanti():
    # GPT-style layer without tensor parallelism: s*b*h*(34 + 5*a*s/h) bytes
    j = job(
        "gpt3-23b",
        "parallel.tp=1",
        "parallel.pp=1",
        "memory.activation_checkpointing=none",
        "cluster.nodes=1",
        "batch.global=32",
    )
    s, b, h, a = j.arch.seq_len, j.micro, j.arch.hidden, j.arch.heads
    assert architecture.activation_bytes_per_layer(j) == pytest.approx(s * b * h * (34 + 5 * a * s / h))
    tp = job("gpt3-23b", "memory.activation_checkpointing=none")
    assert architecture.activation_bytes_per_layer(tp) == pytest.approx(s * b * h * (34 + 5 * a * s / h) / 8)
    no_sp = job("gpt3-23b", "memory.activation_checkpointing=none", "parallel.sequence_parallel=false")
    assert architecture.activation_bytes_per_layer(no_sp) == pytest.approx(
        s * b * h * (10 + 24 / 8 + 5 * a * s / (h * 8))
    )
    selective = job("gpt3-23b")
    assert architecture.activation_bytes_per_layer(selective) == pytest.approx(s * b * h * 34 / 8)
    full = job("gpt3-23b", "memory.activation_checkpointing=full")
    assert architecture.activation_bytes_per_layer(full) == pytest.approx(2 * s * b * h / 8)


def test_pipeline_first_stage_holds_the_most_microbatches():
    j = job("gpt3-23b")
    assert residency(j, 0).activations > residency(j, 1).activations > residency(j, 2).activations


def test_mixed_precision_is_sixteen_bytes_per_parameter():
    j = job("llama2-7b")
    r = residency(j, 0)
    params = architecture.stage_params(j, 0)
    assert (r.params + r.grads + r.optimizer_state) == pytest.approx(16 * params)
    bf16 = residency(job("llama2-7b", "precision.optimizer_state=bf16"), 0)
    assert (bf16.params + bf16.grads + bf16.optimizer_state) == pytest.approx(8 * params)
