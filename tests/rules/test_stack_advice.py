"""Advice that follows the stack (view run_platform): a Trn2 run, or any run on Neuron 2.30 or
later, gets no torch-xla advice from any rule that advises on Trainium; a torch-xla run (before
2.30) still does. Checked on simulated runs and on every stack-aware rule's own firing test case
with the job metadata of each stack."""

from __future__ import annotations

import msgspec
import pytest

from trnprof.api import open_run
from trnprof.collectors.trn1 import load_config, simulate
from trnprof.rules_engine.engine import evaluate
from trnprof.rules_engine.loader import load_rules
from trnprof.rules_engine.testing import write_inline

# What only torch-xla (and NxD, built on it) offers: none of it may reach a TorchNeuron run.
TORCH_XLA = (
    "torch-xla",
    "torch_xla",
    "xm.",
    "mark_step",
    "MpDeviceLoader",
    "XLA_",
    "XLA's metrics",
    "neuron_parallel_compile",
    "ALLREDUCE_GRADIENTS_BUCKET_SIZE_MB",
    "NeuronZero1Optimizer",
    "neuronx-distributed",
    'autocast("xla"',
)
NOT_XLA = {  # job metadata of runs that are not torch-xla runs
    "trn2, nothing recorded": {"instance_type": "trn2.48xlarge"},
    "trn1 on Neuron 2.30": {"instance_type": "trn1.32xlarge", "neuron_sdk": "2.30.0"},
    "trn2 TorchTitan on 2.33": {"instance_type": "trn2.48xlarge", "neuron_sdk": "2.33.0", "framework": "torchtitan"},
}
XLA = {"instance_type": "trn1.32xlarge", "neuron_sdk": "2.27.0"}
STACK_RULES = [r for r in load_rules() if "framework" in r.spec.sql]


def _xla_words(text: str) -> list[str]:
    return [w for w in TORCH_XLA if w in text]


def _recommendations(path, rules) -> dict[str, str]:
    with open_run(path) as run:
        document = evaluate(run, rules, {r.name: r.defaults() for r in rules}, timeout=60)
    return {f.name: f.recommendation for f in document.findings}


def test_every_rule_with_trainium_advice_chooses_it_by_the_stack():
    names = {r.name for r in STACK_RULES}
    assert {
        "compute.host_sync",
        "compute.host_bound",
        "compute.low_mfu",
        "compute.fp32_matmul",
        "input.transfer_exposed",
        "overlap.low_overlap_ratio",
        "compile.recompilation",
        "compile.slow_first_step",
        "memory.optimizer_state_unsharded",
        "memory.hbm_pressure",
        "memory.activation_dominated",
    } <= names
    for rule in load_rules():  # a rule that names torch-xla tools does so only by the stack
        if rule.name not in names:
            assert not _xla_words(rule.spec.recommendation), rule.name


def _firing_case(rule, tmp_path):
    """The rule's first own inline test case that yields a finding under the torch-xla stack."""
    for i, case in enumerate(rule.spec.tests):
        if case.run.inline is None or not case.expect or case.expect == "not_evaluated":
            continue
        inline = case.run.inline
        path = write_inline(msgspec.structs.replace(inline, job={**inline.job, **XLA}), tmp_path / f"xla-{i}")
        found = _recommendations(path, [rule])
        if found:
            return inline, found[rule.name]
    return None, None


@pytest.mark.parametrize("rule", STACK_RULES, ids=[r.name for r in STACK_RULES])
def test_no_torch_xla_advice_off_torch_xla(rule, tmp_path):
    inline, xla_advice = _firing_case(rule, tmp_path)
    assert inline is not None, f"{rule.name}: no own test case fires"
    assert _xla_words(xla_advice), f"{rule.name} gives a torch-xla run no torch-xla advice: {xla_advice}"
    for label, job in NOT_XLA.items():
        path = write_inline(
            msgspec.structs.replace(inline, job={**inline.job, **job}), tmp_path / label.replace(" ", "-")
        )
        found = _recommendations(path, [rule])
        assert rule.name in found, f"{rule.name} no longer fires for {label}"
        assert not _xla_words(found[rule.name]), f"{rule.name} advises torch-xla for {label}: {found[rule.name]}"


# One simulated job that trips host_bound, fp32_matmul, low_mfu, slow_first_step and starvation.
FAULTY = [
    "batch.global=256",
    "precision.compute=fp32",
    "comm.overlap_dp=false",
    "run.steps=6",
    "input.workers=1",
    "input.per_sample_ms=8",
    "faults=[{kind: slow_host, factor: 6}]",
]


@pytest.fixture(scope="module")
def simulated(tmp_path_factory):
    folder = tmp_path_factory.mktemp("stack")
    stacks = {
        "trn2": ["cluster.instance=trn2.48xlarge"],
        "trn1-2.31": ["cluster.instance=trn1.32xlarge", "precision.neuron_sdk=2.31.0"],
        "trn1-2.27": ["cluster.instance=trn1.32xlarge", "precision.neuron_sdk=2.27.0"],
    }
    rules = load_rules()
    return {
        name: _recommendations(simulate(load_config(preset="tiny", overrides=FAULTY + extra), folder / name), rules)
        for name, extra in stacks.items()
    }


def test_simulated_runs_get_the_advice_of_their_stack(simulated):
    for name in ("trn2", "trn1-2.31"):
        recs = simulated[name]
        assert {"compute.host_bound", "compute.fp32_matmul", "compute.low_mfu"} <= set(recs), name
        assert {k: _xla_words(v) for k, v in recs.items() if _xla_words(v)} == {}, name
        assert "TorchNeuron" in recs["compute.host_bound"] and "torch.compile" in recs["compute.host_bound"]
    xla = simulated["trn1-2.27"]
    assert "MpDeviceLoader" in xla["compute.host_bound"] and 'autocast("xla"' in xla["compute.fp32_matmul"]


def test_simulated_jobs_record_the_stack(tmp_path):
    run = simulate(load_config(preset="tiny", overrides=["run.steps=2"]), tmp_path / "tiny")
    with open_run(run) as opened:
        platform = opened.sql("SELECT chip, neuron_sdk, framework, stack_assumed, stack FROM run_platform").iloc[0]
    assert (platform["chip"], platform["neuron_sdk"], platform["framework"]) == ("Trainium1", "2.27.0", "torch-xla")
    assert not platform["stack_assumed"] and platform["stack"] == "torch-xla (PyTorch/XLA) on Neuron 2.27.0"
