"""`trnprof whatif`: the JSON document, text, -o, and one error line (exit 2) for bad input."""

import json

import pytest

import trnprof

KEYS = {
    "baseline": {"step_time_s", "throughput"},
    "fit": {"params", "residual"},
    "predicted": {"step_time_s", "throughput", "mfu", "hbm_peak_bytes", "fits", "band"},
}


def test_json_document_has_the_issue_shape(cli, run_a):
    result = cli("whatif", run_a, "--set", "tp=2", "--format", "json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert doc["schema"] == "trnprof.whatif/1"
    for section, keys in KEYS.items():
        assert keys <= set(doc[section]), section
    assert set(doc["predicted"]["band"]) == {"low_s", "high_s"}
    assert set(doc["baseline"]["throughput"]) == {"value", "unit"}
    assert doc["change"] == {"parallel": {"tp": 2}}


def test_api_returns_the_cli_document(cli, run_a):
    doc = trnprof.api.whatif(run_a, ["tp=2"])
    shown = json.loads(cli("whatif", run_a, "--set", "parallel.tp=2", "--format", "json").output)
    assert doc["predicted"]["step_time_s"] == pytest.approx(shown["predicted"]["step_time_s"])
    assert trnprof.api.whatif(run_a, {"parallel.tp": 2})["change"] == doc["change"]


def test_text_output_and_output_file(cli, run_a, tmp_path):
    result = cli("whatif", run_a, "--set", "zero1=true")
    assert result.exit_code == 0
    for word in ("baseline", "fitted", "predicted", "band", "tensor_efficiency", "communication"):
        assert word in result.output
    out = tmp_path / "w.json"
    result = cli("whatif", run_a, "--set", "zero1=true", "--format", "json", "-o", out)
    assert result.exit_code == 0 and result.output == ""
    assert json.loads(out.read_text())["change"] == {"parallel": {"zero1": True}}


@pytest.mark.parametrize(
    "setting, words",
    [
        ("bogus=1", "'bogus' cannot be changed"),
        ("parallel.tpx=2", "unknown key 'parallel.tpx'"),
        ("nodes=-1", "cluster.nodes: invalid value -1"),
        ("nodes=5000", "cluster.nodes: invalid value 5000"),
        ("tp=abc", "parallel.tp: invalid value 'abc'"),
        ("tp=3", "must divide the 2 NeuronCores"),
        ("calibration.tensor_efficiency=0.5", "the fit finds the free parameters"),
        ("run.steps=3", "cannot be changed by a what-if"),
        ("nodes", "expected dotted.key=value"),
        ("faults=[{kind: straggler, rank: 99}]", "outside the world"),
        ("precision=fp64", "precision.compute: invalid value 'fp64'"),
    ],
)
def test_bad_settings_are_one_line_exit_2(cli, run_a, setting, words):
    result = cli("whatif", run_a, "--set", setting)
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and words in lines[0], result.output
    assert "Traceback" not in result.output


def test_missing_run_and_config_are_one_line(cli, tmp_path, run_a):
    for args in ([tmp_path / "nope"], [run_a, "--job", tmp_path / "missing.yaml"]):
        result = cli("whatif", *args)
        assert result.exit_code == 2 and len(result.output.strip().splitlines()) == 1, result.output


def test_config_cannot_set_the_calibration(cli, run_a, tmp_path):
    config = tmp_path / "c.yaml"
    config.write_text("calibration: {tensor_efficiency: 0.9}\n")
    result = cli("whatif", run_a, "--job", config)
    assert result.exit_code == 2 and "cannot be given" in result.output


def test_output_into_a_missing_folder_is_one_line(cli, run_a, tmp_path):
    result = cli("whatif", run_a, "--set", "tp=2", "-o", tmp_path / "no" / "w.json")
    assert result.exit_code == 2 and "does not exist" in result.output
    assert not (tmp_path / "no").exists()
