"""Projected gains on findings: the fix its rule declares, priced by the what-if model (or by
replay, else a bound), as the finding's one number in analyze's JSON, text and Markdown, and the
report's "What the fixes are worth" section."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import DATA, REPO
from trnprof.api import analyze, open_run, report
from trnprof.collectors.trn1.simulate import simulate
from trnprof.critical_path.scale import parse
from trnprof.model.config import load_config
from trnprof.whatif.measure import steady_step
from trnprof.whatif.replay import Priced, document

SAMPLE = REPO / "sample_traces" / "tiny-slow-loader"


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """A copy of the demo run: analysing it stores derived views in the run folder."""
    return Path(shutil.copytree(SAMPLE, tmp_path_factory.mktemp("demo") / "run"))


@pytest.fixture(scope="module")
def demo_doc(demo):
    return analyze(demo)


def _finding(document, name):
    return next(f for f in document.findings if f.name == name)


def test_starvation_fix_is_priced_and_the_price_is_right(demo, demo_doc, tmp_path):
    projected = _finding(demo_doc, "input.starvation").projected
    assert projected["reason"] is None
    assert projected["change"] == {"input": {"workers": 2}}
    assert 0 < projected["gain_fraction"] < 1
    # the simulator, running the fixed job, agrees within the validation tolerance
    config = load_config(
        path=json.loads((demo / "trnprof.json").read_text())["config"], overrides=["input.workers=2", "run.steps=5"]
    )
    simulate(config, tmp_path / "fixed")
    with open_run(tmp_path / "fixed") as run:
        truth = steady_step(run)[0]
    assert projected["step_time_s"] == pytest.approx(truth, rel=0.05)
    assert projected["band"]["low_s"] < projected["step_time_s"] < projected["band"]["high_s"]


def test_a_fix_that_is_not_a_config_change_says_why(demo_doc):
    projected = _finding(demo_doc, "compile.slow_first_step").projected
    assert projected["method"] == "bound"
    assert projected["gain_fraction"] is None and projected["step_time_s"] is None
    assert "one-time" in projected["assumes"]


def test_a_fix_no_method_prices_carries_its_bound_marked_as_one(demo_doc):
    finding = _finding(demo_doc, "compute.low_mfu")
    assert finding.projected["method"] == "bound" and "MFU" in finding.projected["assumes"]
    assert finding.impact.basis == "bound"
    assert finding.impact.fraction_of_step == pytest.approx(finding.impact.claimed_fraction_of_step)


def test_analyze_outputs_carry_the_projection(cli, demo):
    doc = json.loads(cli("analyze", str(demo), "--format", "json").output)
    starved = next(f for f in doc["findings"] if f["name"] == "input.starvation")
    assert set(starved["projected"]) == {
        "change",
        "step_time_s",
        "effective_step_s",
        "gain_fraction",
        "band",
        "gain_band",
        "reason",
        "method",
        "note",
    }
    assert starved["projected"]["method"] == "execution model"
    assert starved["impact"]["basis"] == "execution model"
    assert starved["impact"]["fraction_of_step"] == pytest.approx(
        max(starved["projected"]["gain_fraction"], 0), abs=1e-6
    )
    text = cli("analyze", str(demo)).output
    assert "price: the execution model with input.workers=2" in text
    assert f"{starved['impact']['fraction_of_step']:.1%} of step, by execution model" in text
    markdown = cli("analyze", str(demo), "--format", "markdown").output
    assert "**How the fix is priced:** price: the execution model with input.workers=2" in markdown


def test_ingested_run_without_a_description_is_priced_by_replay(cli, tmp_path):
    """No job description: the model cannot price the fixes, the replay of the trace does
    (docs/critical-path.md), and says so."""
    result = cli("ingest", str(DATA / "kineto_ddp" / "base"), "-o", str(tmp_path / "ddp"))
    assert result.exit_code == 0
    doc = analyze(tmp_path / "ddp")
    replayed = [f for f in doc.findings if f.projected and f.projected["method"] == "replay"]
    assert replayed  # its exposed communication findings have a fix (communication hidden)
    assert all(f.projected["method"] != "execution model" for f in doc.findings if f.projected)
    with open_run(tmp_path / "ddp") as run:
        hidden = document(run, ["communication=0"], 0.0)["predicted"]["step_time_s"]
        replayed_steps = (
            Priced(run, breakdown=False).replayer.replay([parse("communication=0")], path=False).replayed["dur"] * 1e-9
        )
    # the whatif document shows the median replayed step; a price is the mean (a fix's share of the
    # wall time): with communication gone the last step's path is still ~8.2 ms (rank 0's 6.5 ms of
    # compute and host work, and 1.7 ms waiting for rank 1 at the collective, `late_rank`, since
    # the physics merge), where the others take 3.9-4.7 ms: the mean is ~8 % above the median
    assert hidden == pytest.approx(float(replayed_steps.median()), rel=1e-6)
    for f in replayed:
        p = f.projected
        assert p["change"] == {"scale": ["communication=0"]} and p["band"] is None
        assert p["step_time_s"] == pytest.approx(float(replayed_steps.mean()), rel=1e-6)
        assert hidden <= p["step_time_s"] <= 1.1 * hidden
        assert f.impact.basis == "replay" and f.impact.fraction_of_step <= f.impact.claimed_fraction_of_step + 1e-6
    # both findings share the fix: one carries its price, the other is worth 0 and says whose it shares
    gains = sorted(f.projected["gain_fraction"] for f in replayed)
    assert gains[-1] > 0 and all(g == 0 for g in gains[:-1])


def test_pricing_by_replay_loads_no_execution_model(cli, tmp_path):
    """A run with no job to model is priced by replay without loading the model, its fit and its
    measures (about 30 ms of imports every `analyze` of a trace would pay)."""
    assert cli("ingest", str(DATA / "kineto_ddp" / "base"), "-o", str(tmp_path / "ddp")).exit_code == 0
    probe = (
        "import sys\nfrom trnprof.api import analyze\n"
        "doc = analyze(sys.argv[1])\n"
        "print('PRICED', sorted({f.projected['method'] for f in doc.findings if f.projected}))\n"
        "print('MODEL', 'trnprof.whatif.document' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, str(tmp_path / "ddp")], capture_output=True, text=True, check=True
    )
    priced_line, model_line = done.stdout.strip().splitlines()[-2:]
    assert "'replay'" in priced_line and "'execution model'" not in priced_line and model_line == "MODEL False"


def test_report_section_draws_the_priced_fixes(demo, tmp_path):
    report(demo, tmp_path / "r.html")
    page = (tmp_path / "r.html").read_text()
    start = page.index('id="fixes"')
    section = page[start : page.index("</section>", start)]
    assert "What the fixes are worth" in section
    assert "input.workers=2" in section and "&minus;" in section
    assert "compile.slow_first_step" in section  # listed as not priced, with its reason
