"""The band of `simulate --summary-only`: what it rests on is current, it brackets the prediction,
it says when a job is outside the calibration evidence, and the FP32 and SDK precision facts."""

import dataclasses
import json
import math

import pytest
from click.testing import CliRunner

from trnprof.cli import main as cli
from trnprof.collectors.trn1 import load_config, summary
from trnprof.collectors.trn1.calibration import (
    calibration_rows,
    implied_auto_cast,
    leave_one_out,
    log_error,
    uncast_fp32_ceiling,
)
from trnprof.collectors.trn1.uncertainty import evidence, loo_params, outside, parameter_spread
from trnprof.model.job import resolve
from trnprof.model.params import FITTED, default_params


def summary_json(*args):
    result = CliRunner().invoke(cli, ["simulate", *args, "--summary-only", "--format", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_stored_validation_errors_are_the_shipped_models():
    stored = {r["row"]: r["log_error"] for r in evidence()["validation"]}
    rows = calibration_rows(role="validation")
    assert set(stored) == {r.name for r in rows}
    for row in rows:
        assert log_error(row, default_params()) == pytest.approx(stored[row.name], abs=2e-3), row.name


def test_stored_leave_one_out_is_a_refit_without_each_fit_row():
    stored = {r["row"]: r for r in evidence()["loo"]}
    for row, params, error in leave_one_out(calibration_rows(role="fit")):
        assert math.log1p(error) == pytest.approx(stored[row.name]["log_error"], abs=2e-3), row.name
        for name in FITTED:
            assert getattr(params, name) == pytest.approx(stored[row.name]["params"][name], rel=1e-2, abs=0.5)


def test_band_brackets_the_prediction_and_is_wider_outside_the_evidence():
    inside = summary_json("--preset", "llama2-7b-16node")
    value, band = inside["throughput"]["value"], inside["band"]
    assert band["low"] < value < band["high"] and band["inside_evidence"] and band["outside_evidence"] == []
    assert math.log(band["high"] / value) == pytest.approx(band["log_half_width"])
    # The same model on a layout no fit row has (tp 32, pp 8) is outside, named, and less sure.
    far = summary_json(
        "--preset", "llama2-7b-16node", "--set", "parallel.tp=32", "--set", "parallel.pp=8", "--set", "cluster.nodes=32"
    )
    reasons = " ".join(far["band"]["outside_evidence"])
    assert "tp 32" in reasons and "pp 8" in reasons and not far["band"]["inside_evidence"]
    assert far["band"]["log_half_width"] > band["log_half_width"]


def test_text_summary_states_the_band_and_the_evidence():
    result = CliRunner().invoke(cli, ["simulate", "--preset", "vit-base-1node", "--summary-only"])
    assert result.exit_code == 0, result.output
    band_line = next(line for line in result.output.splitlines() if line.startswith("band"))
    assert "img/s" in band_line and " to " in band_line
    assert "OUTSIDE the calibration evidence" in result.output and "model kind vit" in result.output


def test_evidence_range_is_what_the_fit_rows_span():
    for row in calibration_rows(role="fit"):
        assert outside(resolve(load_config(preset=row.preset))) == []
    fp32 = resolve(load_config(preset="bert-large-16node-fp32"))
    assert any("elementwise work in fp32" in r for r in outside(fp32))
    # no fit row runs ZeRO-1 or full checkpointing: the same fit job with either is outside
    for change, named in (
        ("parallel.zero1=true", "ZeRO-1 on"),
        ("memory.activation_checkpointing=full", "activation checkpointing full"),
    ):
        reasons = outside(resolve(load_config(preset="llama2-7b-16node", overrides=[change])))
        assert len(reasons) == 1 and reasons[0].startswith(named)


def test_fp32_row_casting_is_read_from_its_throughput_against_the_fp32_peak():
    """The FP32 BERT row (SDK 2.27, default --auto-cast none) is below what uncast FP32 matmuls
    allow at the tensor engine's peak, so nothing says its matmuls were cast and the release's
    default stands; the same job published at twice the throughput could only have been cast."""
    rows = {r.name: r for r in calibration_rows()}
    fp32 = rows["bert-large-16node-fp32"]
    ceiling = uncast_fp32_ceiling(fp32)
    assert fp32.published < ceiling
    assert (
        implied_auto_cast(fp32)
        == "none"
        == resolve(load_config(preset=fp32.preset)).config.precision.auto_cast.replace("default", "none")
    )
    assert resolve(load_config(preset=fp32.preset)).dtypes.matmul == "fp32"
    faster = dataclasses.replace(fp32, published=2 * ceiling)
    assert implied_auto_cast(faster) == "matmult"
    assert implied_auto_cast(rows["bert-large-16node"]) is None


@pytest.mark.parametrize("sdk, cast", [("2.26.0", "matmult"), ("2.27.0", "none"), ("2.29.1", "none")])
def test_auto_cast_default_follows_the_neuron_release(sdk, cast):
    base = ["precision.compute=fp32", "run.steps=2", f"precision.neuron_sdk={sdk}"]
    default = summary(load_config(preset="tiny", overrides=base))
    explicit = summary(load_config(preset="tiny", overrides=base + [f"precision.auto_cast={cast}"]))
    assert default["step_time_s"] == explicit["step_time_s"]
    assert resolve(load_config(preset="tiny", overrides=base)).dtypes.matmul == (
        "bf16" if cast == "matmult" else "fp32"
    )


def test_bad_sdk_version_is_one_error_line():
    result = CliRunner().invoke(
        cli, ["simulate", "--preset", "tiny", "--summary-only", "--set", "precision.neuron_sdk=latest"]
    )
    assert result.exit_code == 2 and result.output.count("\n") == 1 and "precision.neuron_sdk" in result.output


def _spread_by_full_runs(cfg) -> float:
    """The parameter spread the slow way: the whole model run under each leave-one-out set."""
    value = summary(cfg)["throughput"]["value"]
    return max(abs(math.log(summary(cfg, params=p)["throughput"]["value"] / value)) for p in loo_params())


@pytest.mark.parametrize("preset", ["bert-large-phase1", "llama2-7b-16node", "bert-large-16node-fp32"])
def test_first_order_spread_matches_full_runs_on_compute_bound_jobs(preset):
    cfg = load_config(preset=preset)
    job = resolve(cfg)
    first_order = parameter_spread(job, summary(cfg)["step_time_s"])
    assert first_order == pytest.approx(_spread_by_full_runs(cfg), abs=2e-3)


@pytest.mark.parametrize("preset", ["tiny", "tiny-slow-loader"])
def test_first_order_spread_is_never_narrower_when_host_or_input_work_hides_compute(preset):
    """Small ops and a slow loader overlap the compute the parameters change: the first-order
    spread then overstates the change (wider band), never understates it."""
    cfg = load_config(preset=preset)
    first_order = parameter_spread(resolve(cfg), summary(cfg)["step_time_s"])
    assert first_order >= _spread_by_full_runs(cfg) - 1e-9
