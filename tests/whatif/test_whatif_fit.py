"""The fit: it recovers free parameters it was not told, says what the run cannot show, and
its band covers the simulated truth."""

import json

import pytest

from trnprof.model.params import default_params
from trnprof.whatif.describe import recorded_config
from trnprof.whatif.document import whatif
from trnprof.whatif.validate import JOB_A, PERTURBATIONS, measured_step, simulate_job, truth_sets


def test_fit_recovers_the_perturbed_parameters(run_a):
    doc = whatif(run_a, [])
    shipped = default_params().as_dict()
    for name, factor in PERTURBATIONS["A"].items():
        assert doc["fit"]["params"][name] == pytest.approx(shipped[name] * factor, rel=0.02), name
    assert sorted(doc["fit"]["identified"]) == sorted(shipped)
    assert doc["fit"]["residual"]["classes_rms"] < 0.01
    assert abs(doc["fit"]["residual"]["step"]) < 0.02
    assert doc["fit"]["fits"] is True and doc["fit"]["reason"] is None


def test_the_fit_is_not_told_the_parameters(run_a):
    """The recorded config the fit starts from has no calibration section: the values in the
    manifest are never read."""
    manifest = json.loads((run_a / "trnprof.json").read_text())
    assert "calibration" in manifest["config"]
    assert "calibration" not in recorded_config(manifest)


def test_without_inter_node_traffic_the_network_is_not_identified(tmp_path):
    job = ["model=tiny", "cluster.instance=trn1.2xlarge", "cluster.nodes=1", "batch.global=32", "batch.micro=4"]
    run = simulate_job(job, "A", tmp_path / "one")
    doc = whatif(run, ["workers=2"])
    assert "network_efficiency" in doc["fit"]["fixed"]
    assert doc["fit"]["params"]["network_efficiency"] == default_params().network_efficiency
    # a change that puts traffic on EFA: the band spans the network's plausible range, and the
    # simulated truth (network efficiency x0.7, unknown to the fit) lies inside it
    doc = whatif(run, ["nodes=2"])
    band = doc["predicted"]["band"]
    truth = measured_step(truth_sets(job, ["nodes=2"], "A", None), tmp_path / "two", 5)
    assert band["low_s"] <= truth <= band["high_s"]
    assert band["high_s"] / band["low_s"] > 1.2  # it says how unsure it is


def test_band_contains_the_simulated_step_and_numbers_agree(run_a, tmp_path):
    doc = whatif(run_a, ["nodes=4"])
    pred = doc["predicted"]
    truth = measured_step(truth_sets(JOB_A, ["nodes=4"], "A", None), tmp_path / "b", 5)
    band = pred["band"]
    assert band["low_s"] < pred["step_time_s"] < band["high_s"]
    assert band["low_s"] * 0.99 <= truth <= band["high_s"] * 1.01
    assert pred["throughput"]["value"] == pytest.approx(32 / pred["step_time_s"])
    # a ratio on the measured step: the change is against it
    assert pred["change_fraction"] == pytest.approx(pred["step_time_s"] / doc["baseline"]["step_time_s"] - 1)
    assert doc["job"]["predicted"]["nodes"] == 4 and doc["job"]["baseline"]["nodes"] == 2
    assert doc["baseline"]["throughput"]["unit"] == "seq/s"


def test_breakdown_delta_is_predicted_minus_fitted(run_a):
    doc = whatif(run_a, ["nodes=4"])
    for row in doc["breakdown"].values():
        assert row["delta_s"] == pytest.approx(row["predicted_s"] - row["fitted_s"])
        assert row["baseline_s"] is not None
    # twice the data-parallel ranks: half the microbatches per rank, gradients over more EFA hops
    assert doc["breakdown"]["compute"]["delta_s"] < 0
    assert doc["breakdown"]["communication"]["delta_s"] > 0
