"""The shipped parameters are the fit on the in-repository fit rows (never the validation rows),
reproduce every fit row, stay inside their plausible ranges, and the docs report them."""

import csv
import re

import pytest

from tests.conftest import REPO
from trnprof.collectors.trn1 import load_config, summary
from trnprof.collectors.trn1.calibration import calibration_csv, calibration_rows, fit
from trnprof.model.config import job_presets
from trnprof.model.params import BOUNDS, FITTED, NAMES, default_params

DOCS = REPO / "docs" / "execution-model.md"


def calibration_presets(role=None):
    return [
        (name, p["calibration"]["throughput"])
        for name, p in job_presets().items()
        if "calibration" in p and role in (None, p["calibration"]["role"])
    ]


@pytest.mark.parametrize("preset, published", calibration_presets("fit"))
def test_fit_rows_within_ten_percent(preset, published):
    predicted = summary(load_config(preset=preset))["throughput"]["value"]
    assert abs(predicted / published - 1) < 0.10


def test_job_presets_mirror_the_calibration_csv_shipped_in_the_package():
    path = calibration_csv()
    assert path.is_file() and "trn1" in path.parts and (path.parent / "README.md").is_file()
    with path.open() as handle:
        rows = list(csv.DictReader(handle))
    presets = dict(calibration_presets())
    assert len(rows) == len(presets) == 12
    assert sorted(r["role"] for r in rows) == ["excluded"] + ["fit"] * 3 + ["validation"] * 8
    for row in rows:
        assert row["source"] and row["neuron_sdk"]
        preset = job_presets()[row["preset"]]
        assert preset["calibration"]["throughput"] == pytest.approx(float(row["throughput"]), abs=1e-9)
        assert preset["calibration"]["role"] == row["role"]
        # an excluded row says why it cannot test the model; no other row does
        assert bool(preset["calibration"].get("excluded_because")) == (row["role"] == "excluded")
        cfg = preset["config"]
        assert cfg["cluster"]["nodes"] == int(row["nodes"]) and cfg["parallel"]["tp"] == int(row["tp"])
        assert cfg["parallel"]["pp"] == int(row["pp"]) and cfg["batch"]["global"] == int(row["global_batch"])
        assert cfg["batch"]["micro"] == int(row["micro_batch"])
        assert cfg["parallel"]["zero1"] == (row["zero1"] == "true")
        assert cfg["precision"]["neuron_sdk"] == row["neuron_sdk"]
        if "seq_len" in cfg["model"]:
            assert cfg["model"]["seq_len"] == int(row["seq_len"])
        assert (cfg["precision"]["compute"] == "fp32") == (row["precision"] == "fp32")


def test_at_most_four_free_parameters_each_in_its_range():
    shipped = default_params()
    assert len(NAMES) <= 4 and set(FITTED) <= set(NAMES) == set(BOUNDS)
    for name in NAMES:
        lo, hi = BOUNDS[name]
        assert lo <= getattr(shipped, name) <= hi, name


def test_shipped_parameters_are_the_fit_on_the_fit_rows_only():
    fitted, _ = fit(calibration_rows(role="fit"))
    for name in FITTED:
        assert getattr(fitted, name) == pytest.approx(getattr(default_params(), name), rel=2e-3), name


def test_docs_report_the_shipped_values():
    text = DOCS.read_text(encoding="utf-8")
    for name in NAMES:
        match = re.search(rf"\| `{name}` \| ([0-9.]+) \|", text)
        assert match, name
        assert float(match.group(1)) == pytest.approx(getattr(default_params(), name), rel=1e-3), name
