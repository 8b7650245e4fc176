"""The shipped parameters reproduce every calibration row within 10 %."""

import csv

import pytest

from trnprof.collectors.trn1 import load_config, summary
from trnprof.collectors.trn1.calibration import calibration_rows
from trnprof.collectors.trn1.config import job_presets

from .conftest import DATA

CALIBRATION_CSV = DATA / "trn1" / "calibration.csv"


def calibration_presets():
    return [(name, p["calibration"]["throughput"]) for name, p in job_presets().items() if "calibration" in p]


@pytest.mark.parametrize("preset, published", calibration_presets())
def test_calibration_rows_within_ten_percent(preset, published):
    predicted = summary(load_config(preset=preset))["throughput"]["value"]
    assert abs(predicted / published - 1) < 0.10


def test_job_presets_mirror_calibration_csv():
    rows = list(csv.DictReader(CALIBRATION_CSV.open()))
    presets = dict(calibration_presets())
    assert len(rows) == len(presets) == 3
    for row in rows:
        match = [n for n in presets if abs(presets[n] - float(row["throughput"])) < 1e-9]
        assert match, row["model"]
        cfg = job_presets()[match[0]]["config"]
        assert cfg["cluster"]["nodes"] == int(row["nodes"]) and cfg["parallel"]["tp"] == int(row["tp"])
        assert cfg["parallel"]["pp"] == int(row["pp"]) and cfg["batch"]["global"] == int(row["global_batch"])
        assert cfg["batch"]["micro"] == int(row["micro_batch"]) and cfg["model"]["seq_len"] == int(row["seq_len"])


def test_shipped_parameters_are_the_fit():
    from trnprof.collectors.trn1.calibration import fit
    from trnprof.collectors.trn1.params import FITTED, default_params
    fitted, _ = fit(calibration_rows(CALIBRATION_CSV))
    for name in FITTED:
        assert getattr(fitted, name) == pytest.approx(getattr(default_params(), name), rel=2e-3), name
