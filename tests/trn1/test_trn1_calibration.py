"""The shipped parameters are the fit on the in-repository calibration rows, reproduce every
row, stay inside their plausible ranges, and the docs report them."""

import csv
import re
from pathlib import Path

import pytest

from trnprof.collectors.trn1 import load_config, summary
from trnprof.collectors.trn1.calibration import calibration_csv, calibration_rows, fit
from trnprof.model.config import job_presets
from trnprof.model.params import BOUNDS, FITTED, NAMES, default_params
from tests.conftest import REPO

DOCS = REPO / "docs" / "execution-model.md"


def calibration_presets():
    return [(name, p["calibration"]["throughput"]) for name, p in job_presets().items() if "calibration" in p]


@pytest.mark.parametrize("preset, published", calibration_presets())
def test_calibration_rows_within_ten_percent(preset, published):
    predicted = summary(load_config(preset=preset))["throughput"]["value"]
    assert abs(predicted / published - 1) < 0.10


def test_job_presets_mirror_the_calibration_csv_shipped_in_the_package():
    path = calibration_csv()
    assert path.is_file() and "trn1" in path.parts and (path.parent / "README.md").is_file()
    with path.open() as handle:
        rows = list(csv.DictReader(handle))
    presets = dict(calibration_presets())
    assert len(rows) == len(presets) == 3
    for row in rows:
        assert row["source"]
        match = [n for n in presets if abs(presets[n] - float(row["throughput"])) < 1e-9]
        assert match, row["model"]
        cfg = job_presets()[match[0]]["config"]
        assert cfg["cluster"]["nodes"] == int(row["nodes"]) and cfg["parallel"]["tp"] == int(row["tp"])
        assert cfg["parallel"]["pp"] == int(row["pp"]) and cfg["batch"]["global"] == int(row["global_batch"])
        assert cfg["batch"]["micro"] == int(row["micro_batch"]) and cfg["model"]["seq_len"] == int(row["seq_len"])


def test_at_most_four_free_parameters_each_in_its_range():
    shipped = default_params()
    assert len(NAMES) <= 4 and set(FITTED) <= set(NAMES) == set(BOUNDS)
    for name in NAMES:
        lo, hi = BOUNDS[name]
        assert lo <= getattr(shipped, name) <= hi, name


def test_shipped_parameters_are_the_fit():
    fitted, _ = fit(calibration_rows())
    for name in FITTED:
        assert getattr(fitted, name) == pytest.approx(getattr(default_params(), name), rel=2e-3), name


def test_docs_report_the_shipped_values():
    text = DOCS.read_text(encoding="utf-8")
    for name in NAMES:
        match = re.search(rf"\| `{name}` \| ([0-9.]+) \|", text)
        assert match, name
        assert float(match.group(1)) == pytest.approx(getattr(default_params(), name), rel=1e-3), name
