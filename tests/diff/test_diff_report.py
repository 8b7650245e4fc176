"""`trnprof report NEW --baseline BASE`: the comparison section, drawn from the diff document."""

from __future__ import annotations

import re

import pytest

import trnprof
from tests.report.test_report_browser import ARTIFACTS, COUNT_MARKS, browser, open_page  # noqa: F401  (browser: fixture)
from trnprof.api import report
from trnprof.collectors.synthetic import synthetic_run
from trnprof.report.sections import comparison


@pytest.fixture(scope="module")
def baseline(tmp_path_factory):
    """The sample run's job without its slow rank."""
    return synthetic_run(tmp_path_factory.mktemp("base") / "base", ranks=8, steps=4, ops_per_step=20, seed=3)


def test_the_section_shows_both_step_time_distributions_and_the_deltas(baseline, sample_run):
    document = trnprof.api.diff(baseline, sample_run)
    section = comparison.build(document)
    spec = section.chart.to_dict(validate=True)
    values = next(iter(spec["datasets"].values()))
    assert sorted({v["run"] for v in values}) == ["base", "new"]
    assert len(values) == len(document["step_times_s"]["base"]) + len(document["step_times_s"]["new"])
    assert "<h3>Step breakdown per rank and step</h3>" in section.html
    assert "<h3>Top regressions by op</h3>" in section.html
    top = document["top_regressions"][0]["name"]
    assert f"<td>{top}</td>" in section.html


def test_names_reach_the_page_escaped(baseline, sample_run):
    document = trnprof.api.diff(baseline, sample_run)
    document["top_regressions"][0]["name"] = "</script><img src=x onerror=alert(1)>"
    html = comparison.build(document).html
    assert "<img" not in html and "&lt;/script&gt;&lt;img" in html


def test_report_with_a_baseline_adds_the_comparison(baseline, sample_run, tmp_path, cli):
    out = tmp_path / "report.html"
    result = cli("report", sample_run, "--baseline", baseline, "-o", out)
    assert result.exit_code == 0, result.output
    page = out.read_text()
    assert '<section id="comparison">' in page and 'data-target="chart-comparison"' in page
    assert re.search(r"Baseline .*base: typical step", page)
    plain = tmp_path / "plain.html"
    assert cli("report", sample_run, "-o", plain).exit_code == 0
    assert 'id="comparison"' not in plain.read_text()


def test_a_missing_baseline_is_one_line_and_exit_2(sample_run, tmp_path, cli):
    result = cli("report", sample_run, "--baseline", tmp_path / "nope", "-o", tmp_path / "r.html")
    assert result.exit_code == 2 and result.stderr.startswith("error: run not found")
    assert not (tmp_path / "r.html").exists()


# `browser` is the module-scoped fixture imported above from tests/report/test_report_browser.py (not a redefinition)
def test_the_comparison_chart_draws_in_a_browser(browser, baseline, sample_run, tmp_path):  # noqa: F811
    out = tmp_path / "report.html"
    report(sample_run, out, baseline=baseline)
    seen = open_page(browser, out)
    assert seen["console"] == [] and seen["requests"] == [out.resolve().as_uri()]
    document = trnprof.api.diff(baseline, sample_run)
    steps = len(document["step_times_s"]["base"]) + len(document["step_times_s"]["new"])
    # one tick per step plus the two box plots' marks
    assert seen["page"].evaluate(COUNT_MARKS, "chart-comparison") > steps
    ARTIFACTS.mkdir(exist_ok=True)
    seen["page"].locator("#comparison").screenshot(path=str(ARTIFACTS / "diff-comparison.png"))
