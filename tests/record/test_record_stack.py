"""`trnprof record` detects the software stack in the job's own process (issue 36, item 2): the
framework from the modules it imported, the Neuron SDK release from the installed distributions,
the device from the Neuron modules; the run's platform (view run_platform) carries them, and the
stack-aware advice follows what was detected."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

from trnprof import open_run
from trnprof.collectors.host.metrics import read_host_metrics
from trnprof.record import stack
from trnprof.rules_engine.engine import evaluate
from trnprof.rules_engine.loader import load_rules
from trnprof.rules_engine.testing import write_inline

TIMEOUT = 300


@pytest.mark.parametrize(
    "modules, expected",
    [
        ({"torch", "torch_xla", "torch_neuronx", "libneuronxla"}, "torch-xla"),
        ({"torch", "torch_neuronx"}, "torchneuron"),
        ({"torch", "torch_neuronx", "torchtitan"}, "torchtitan"),
        ({"jax", "jax_neuronx"}, "jax"),
        ({"torch"}, "pytorch"),
        ({"numpy"}, None),
    ],
)
def test_the_framework_is_what_the_process_imported(modules, expected):
    assert stack.framework(modules) == expected


@pytest.mark.parametrize(
    "packages, release",
    [
        ({"nki-library": "2.31.0"}, "2.31.0"),
        ({"nki-library": "2.33"}, "2.33.0"),
        ({"nki-library": "0.7.0"}, None),  # a version before the library followed the release
        ({"nki-library": "2.31.0rc1"}, None),  # not three whole numbers: not read as a release
        ({"torch-neuronx": "2.9.0.2.15.32035", "neuronx-cc": "2.28.7631.0"}, None),  # their own versions
        ({}, None),
    ],
)
def test_the_sdk_release_is_read_only_where_a_package_names_it(packages, release):
    assert stack.sdk_release(packages) == release


def test_detect_keeps_the_evidence_and_only_known_facts():
    facts = stack.detect(modules={"torch", "torch_neuronx"}, packages={"nki-library": "2.31.0", "torch": "2.9.0"})
    assert facts == {
        "framework": "torchneuron",
        "neuron_sdk": "2.31.0",
        "device_kind": "trainium",
        "stack_packages": {"nki-library": "2.31.0", "torch": "2.9.0"},
    }
    assert stack.detect(modules={"torch"}, packages={}) == {"framework": "pytorch"}


def _fake_site(root: Path) -> Path:
    """A site folder with a `torch_neuronx` module and the `nki-library` 2.31.0 distribution."""
    site = root / "site"
    (site / "torch_neuronx").mkdir(parents=True)
    (site / "torch_neuronx" / "__init__.py").write_text("")
    info = site / "nki_library-2.31.0.dist-info"
    info.mkdir()
    info.joinpath("METADATA").write_text("Metadata-Version: 2.1\nName: nki-library\nVersion: 2.31.0\n")
    return site


def test_installed_reads_the_distributions_of_the_interpreter(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(_fake_site(tmp_path)))
    found = stack.installed(("nki-library", "no-such-distribution"))
    assert found == {"nki-library": "2.31.0"}


def test_the_host_metrics_header_keeps_only_well_formed_stack_facts(tmp_path):
    header = {
        "trnprof_host_metrics": 1,
        "job": {
            "framework": "torchneuron",
            "neuron_sdk": "x" * 65,
            "device_kind": ["trainium"],
            "stack_packages": {"torch": "2.9.0", "bad": 3, "<script>": "y" * 100},
            "world_size": 4,
        },
    }
    path = tmp_path / "job_rank0.jsonl"
    path.write_text(
        json.dumps(header) + "\n" + json.dumps({"ts": 1, "samples": [[0, "job.step", 1.0, "count"]]}) + "\n"
    )
    assert read_host_metrics(path).job == {"framework": "torchneuron", "stack_packages": {"torch": "2.9.0"}}


JOB = """import torch
import torch_neuronx
model = torch.nn.Linear(4, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(5):
    loss = model(torch.randn(8, 4)).square().mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
"""


def test_a_recorded_run_carries_the_stack_its_job_ran(tmp_path):
    job = tmp_path / "job.py"
    job.write_text(JOB)
    env = {**os.environ, "PYTHONPATH": str(_fake_site(tmp_path))}
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "trnprof",
            "record",
            "--neuron",
            "off",
            "-o",
            "run",
            "--wait",
            "0",
            "--warmup",
            "0",
            "--active",
            "2",
            "--",
            sys.executable,
            str(job),
        ],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        cwd=tmp_path,
        env=env,
    )
    assert result.returncode == 0, result.stderr
    with open_run(tmp_path / "run") as run:
        platform = run.sql("SELECT device_kind, framework, neuron_sdk, stack_assumed, stack FROM run_platform")
        job_facts = run.manifest["job"]
    row = platform.iloc[0]
    assert (row["device_kind"], row["framework"], row["neuron_sdk"]) == ("trainium", "torchneuron", "2.31.0")
    assert not row["stack_assumed"]
    assert row["stack"] == "TorchNeuron (native PyTorch on Neuron) on Neuron 2.31.0"
    assert job_facts["stack_packages"]["nki-library"] == "2.31.0"


def _host_bound_firing_case():
    rule = next(r for r in load_rules() if r.name == "compute.host_bound")
    case = next(c for c in rule.spec.tests if c.run.inline is not None and c.expect and c.expect != "not_evaluated")
    return rule, case.run.inline


@pytest.mark.parametrize(
    "modules, packages, said, unsaid",
    [
        (
            {"torch", "torch_neuronx"},
            {"nki-library": "2.31.0"},
            "TorchNeuron (native PyTorch on Neuron) on Neuron 2.31.0",
            "MpDeviceLoader",
        ),
        (
            {"torch", "torch_xla", "torch_neuronx", "libneuronxla"},
            {},
            "torch-xla (PyTorch/XLA) on Neuron",
            "torch.compile",
        ),
    ],
)
def test_the_advice_follows_the_detected_stack(tmp_path, modules, packages, said, unsaid):
    rule, inline = _host_bound_firing_case()
    facts = stack.detect(modules=modules, packages=packages)
    path = write_inline(msgspec.structs.replace(inline, job={**inline.job, **facts}), tmp_path / "run")
    with open_run(path) as run:
        document = evaluate(run, [rule], {rule.name: rule.defaults()}, timeout=60)
    advice = next(f.recommendation for f in document.findings if f.name == rule.name)
    assert said in advice and unsaid not in advice, advice
