"""whatif on ingested runs: it says which keys the trace cannot tell, and on the shipped real
Kineto traces it answers with a band, or `fits: false` with a reason."""

import json
import shutil

import pytest

from tests.conftest import DATA, REPO
from trnprof.collectors.ingest import ingest
from trnprof.whatif.document import whatif


@pytest.fixture(scope="module")
def ddp(tmp_path_factory):
    out = tmp_path_factory.mktemp("ingested") / "ddp"
    ingest([DATA / "kineto_ddp" / "base"], out)
    return out


DESCRIPTION = ["model=tiny", "instance=trn1.2xlarge", "cluster.nodes=1", "pp=1", "tp=1", "global=64", "micro=32"]


def test_needed_keys_are_named_in_one_line(cli, ddp):
    result = cli("whatif", str(ddp), "--set", "tp=2")
    assert result.exit_code == 2
    line = result.output.strip()
    assert "\n" not in line and "the trace cannot tell the job" in line
    for key in ("model", "cluster.instance", "cluster.nodes", "parallel.pp", "batch.global", "batch.micro"):
        assert key in line
    assert "parallel.tp" not in line  # given by --set tp=2


def test_described_real_trace_gets_a_band_or_a_reason(ddp):
    doc = whatif(ddp, DESCRIPTION + ["workers=8"])
    fit, pred = doc["fit"], doc["predicted"]
    assert fit["method"] == "breakdown"
    assert pred["band"]["low_s"] < pred["step_time_s"] < pred["band"]["high_s"]
    assert doc["baseline"]["step_time_s"] > 0
    if not fit["fits"]:
        assert fit["reason"]
    # the change is the only --set the description did not take
    assert doc["change"] == {"input": {"workers": 8}}


def test_a_run_recorded_on_other_hardware_needs_a_trn1_description(cli, tmp_path):
    src = REPO / "sample_traces" / "synthetic-8rank"
    run = tmp_path / "gpu"
    shutil.copytree(src, run)
    manifest = json.loads((run / "trnprof.json").read_text())
    manifest["job"]["instance_type"] = "p4d.24xlarge"
    (run / "trnprof.json").write_text(json.dumps(manifest))
    result = cli("whatif", str(run), "--set", "model=tiny")
    assert result.exit_code == 2
    assert "not a Trn1 instance" in result.output and len(result.output.strip().splitlines()) == 1
