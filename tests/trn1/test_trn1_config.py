"""Config loading and validation of the Trn1 execution model."""

import pytest

from trnprof.errors import TrnprofError
from trnprof.model.config import list_presets, load_config, parse_override
from trnprof.model.job import resolve


def error(**kwargs) -> str:
    with pytest.raises(TrnprofError) as info:
        resolve(load_config(**kwargs))
    message = str(info.value)
    assert "\n" not in message
    return message


def test_model_preset_brings_its_default_job_and_takes_overrides():
    job = resolve(load_config(preset="llama2-7b", overrides=["model.seq_len=2048", "cluster.nodes=32"]))
    assert job.arch.seq_len == 2048 and job.arch.hidden == 4096
    assert job.nodes == 32 and job.tp == 8 and job.dp == 32 * 32 // 8
    assert job.microbatches == 1024 // job.dp
    assert job.arch.name == "llama2-7b*"  # a changed preset is marked


def test_job_preset_is_a_full_config():
    job = resolve(load_config(preset="gpt3-23b-32node"))
    assert (job.tp, job.pp, job.dp, job.microbatches) == (8, 4, 32, 32)
    assert job.config.precision.optimizer_state == "bf16"


def test_file_then_overrides_then_faults(tmp_path):
    path = tmp_path / "job.yaml"
    path.write_text("model: tiny\ncluster: {nodes: 1, instance: trn1.2xlarge}\nbatch: {global: 8, micro: 2}\n")
    cfg = load_config(path=path, overrides=["run.steps=3"], faults=[{"kind": "no_overlap"}])
    assert cfg.run.steps == 3 and cfg.batch.global_ == 8 and cfg.model.preset == "tiny"
    assert [type(f).__name__ for f in cfg.faults] == ["NoOverlap"]


def test_override_values_are_yaml():
    assert parse_override("faults=[{kind: straggler, rank: 5, slowdown: 1.3}]") == {
        "faults": [{"kind": "straggler", "rank": 5, "slowdown": 1.3}]
    }
    assert parse_override("comm.overlap_dp=false") == {"comm": {"overlap_dp": False}}
    with pytest.raises(TrnprofError, match="dotted.key=value"):
        parse_override("cluster.nodes")


@pytest.mark.parametrize(
    "overrides, expected",
    [
        (
            ["parallel.foo=1"],
            "unknown key 'parallel.foo'; allowed keys here: tp, pp, sequence_parallel, zero1, microbatches",
        ),
        (["colour=red"], "unknown key 'colour'; allowed keys here: cluster, model"),
        (
            ["memory.activation_checkpointing=most"],
            "memory.activation_checkpointing: invalid value 'most'; allowed: none, selective, full",
        ),
        (
            ["cluster.instance=trn3.48xlarge"],
            "allowed: trn1.2xlarge, trn1.32xlarge, trn1n.32xlarge, trn2.48xlarge, trn2u.48xlarge",
        ),
        (["cluster.nodes=0"], "cluster.nodes: invalid value 0; allowed: an integer >= 1 and <= 4096"),
        (["precision.compute=int4"], "allowed: bf16, fp16, fp8, fp32"),
        (["input.per_sample_ms=fast"], "input.per_sample_ms: invalid value 'fast'; allowed: a number >= 0"),
        (["faults=[{kind: meteor}]"], "faults[0].kind: 'meteor' is not a fault kind; allowed: straggler, slow_loader"),
        (["faults=[{kind: straggler}]"], "faults[0].rank: required key is missing"),
        (
            ["faults=[{kind: straggler, rank: 1, speed: 2}]"],
            "unknown key 'faults[0].speed'; allowed keys here: kind, rank, slowdown",
        ),
        (["model.preset=gpt5"], "model.preset: unknown model 'gpt5'; allowed: bert-large"),
        (["model.image_size=224"], "model.image_size: not used by a decoder model"),
    ],
)
def test_bad_keys_and_values_name_the_key_and_allowed_values(overrides, expected):
    assert expected in error(preset="tiny", overrides=overrides)


@pytest.mark.parametrize(
    "overrides, expected",
    [
        (["parallel.tp=4"], "parallel.tp: 4 must divide the 2 NeuronCores of a trn1.2xlarge node"),
        (["batch.global=30"], "batch.global: 30 must be a multiple of batch.micro x dp = 4 x 2 = 8"),
        (["parallel.microbatches=3"], "parallel.microbatches: 3 does not match batch.global / (batch.micro x dp) = 4"),
        (["parallel.pp=2", "model.layers=3"], "parallel.pp: 2 must divide the model's 3 layers"),
        (["faults=[{kind: straggler, rank: 9}]"], "straggler rank 9 is outside the world of 2 ranks"),
        (["cluster.nodes=2", "faults=[{kind: slow_link, node: 2}]"], "slow_link node 2 is outside the 2 node(s)"),
        # faults that cannot act in the configured job
        (["faults=[{kind: slow_link, node: 0}]"], "slow_link slows inter-node traffic, and the job runs on one node"),
        (["run.steps=3", "faults=[{kind: recompile, every: 5}]"], "recompile every 5 steps never recompiles"),
        (["run.steps=1", "faults=[{kind: memory_leak}]"], "memory_leak needs bytes_per_step > 0"),
        (["batch.global=4", "parallel.tp=2", "faults=[{kind: no_overlap}]"], "no_overlap delays gradient collectives"),
    ],
)
def test_settings_that_contradict_each_other_are_one_clear_error(overrides, expected):
    assert expected in error(preset="tiny", overrides=overrides)


def test_unknown_preset_lists_both_kinds():
    message = error(preset="llama9")
    job_part, model_part = message.split("model presets:")
    assert "job presets: " in job_part and "bert-large-phase1" in job_part and "tiny-slow-loader" in job_part
    assert "bert-large" in model_part and "bert-large-phase1" not in model_part


def test_presets_cover_the_issue_list():
    presets = list_presets()
    for name in (
        "tiny",
        "bert-large",
        "vit-base",
        "llama2-7b",
        "llama2-13b",
        "llama2-70b",
        "llama3.1-8b",
        "llama3.1-70b",
        "gpt3-23b",
        "gpt3-46b",
        "gpt3-175b",
    ):
        assert name in presets["model"]
    assert {"bert-large-phase1", "llama2-7b-16node", "gpt3-23b-32node"} <= set(presets["job"])
    for name in presets["model"] + presets["job"]:
        resolve(load_config(preset=name))  # every preset is a valid job


def test_config_file_errors_are_one_line(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("cluster: [1, 2\n")
    assert "is not valid YAML" in error(path=bad)
    assert "cannot read config" in error(path=tmp_path / "missing.yaml")
    scalar = tmp_path / "scalar.yaml"
    scalar.write_text("42\n")
    assert "a config is a mapping" in error(path=scalar)
