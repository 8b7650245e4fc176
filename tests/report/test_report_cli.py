"""`trnprof report`: the page, saved or computed findings, PNG/SVG exports, and one-line errors
that leave no file behind."""

from __future__ import annotations

import json

import pytest

SAVED = {
    "schema": "trnprof.findings/1",
    "run": "elsewhere",
    "findings": [
        {
            "code": "HW001",
            "name": "hand.written",
            "pack": "hand",
            "severity": "low",
            "title": "A hand-written finding",
            "message": "written by the test",
            "recommendation": "none",
            "ranks": [1],
            "steps": [2],
            "evidence": [],
            "impact": {"seconds_per_step": 0.5, "fraction_of_step": 0.25},
        }
    ],
}


def test_report_runs_the_rules_and_writes_one_page(sample_run, tmp_path, cli):
    out = tmp_path / "report.html"
    result = cli("report", sample_run, "-o", out)
    assert result.exit_code == 0, result.output
    assert (
        result.output.startswith(f"wrote {out} (") and "7 charts, " in result.output and " findings)" in result.output
    )
    page = out.read_text(encoding="utf-8")
    assert page.count('class="vega-spec"') == 7
    assert "Findings of the built-in rule packs, computed for this report." in page
    assert [p.name for p in tmp_path.iterdir()] == ["report.html"]  # no temporary file left


def test_report_uses_a_saved_findings_file(sample_run, tmp_path, cli):
    saved = tmp_path / "analyze.json"
    saved.write_text(json.dumps(SAVED))
    result = cli("report", sample_run, "-o", tmp_path / "r.html", "--findings", saved)
    assert result.exit_code == 0 and "1 findings)" in result.output
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert "A hand-written finding" in page and f"Findings loaded from {saved} (analyzed run: elsewhere)" in page
    assert "WARNING: that is not the run this report shows" in page  # saved for another run
    assert "500.00 ms/step, 25.0% of step" in page  # the cost in its own units, as the findings table states it


def test_saved_findings_of_the_same_run_carry_no_warning(sample_run, tmp_path, cli):
    saved = tmp_path / "analyze.json"
    saved.write_text(json.dumps({**SAVED, "run": str(sample_run)}))
    assert cli("report", sample_run, "-o", tmp_path / "r.html", "--findings", saved).exit_code == 0
    assert "WARNING" not in (tmp_path / "r.html").read_text(encoding="utf-8")


def test_report_without_findings_and_with_chart_files(sample_run, tmp_path, cli):
    result = cli("report", sample_run, "-o", tmp_path / "r.html", "--no-analyze", "--png", tmp_path / "charts")
    assert result.exit_code == 0 and "findings not computed" in result.output
    assert "wrote 14 chart files to" in result.output
    assert "Findings were not computed" in (tmp_path / "r.html").read_text(encoding="utf-8")
    files = sorted(p.name for p in (tmp_path / "charts").iterdir())
    sections = ["breakdown", "collectives", "critical_path", "input", "memory", "stragglers", "timeline"]
    assert files == sorted(f"{s}.{ext}" for s in sections for ext in ("png", "svg"))
    for section in sections:
        assert (tmp_path / "charts" / f"{section}.png").read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
        svg = (tmp_path / "charts" / f"{section}.svg").read_text()
        assert svg.startswith("<svg") and "<text" in svg


@pytest.mark.parametrize(
    "args, message",
    [
        (["--findings", "{tmp}/missing.json"], "error: cannot read findings file"),
        (["--findings", "{tmp}/bad.json"], "error: findings file {tmp}/bad.json: schema is 'x/1'"),
        (["-o", "{tmp}"], "error: output {tmp} is a folder"),
        (["--findings", "{tmp}/bad.json", "--no-analyze"], "--findings and --no-analyze exclude each other"),
    ],
)
def test_bad_arguments_are_one_line_and_write_nothing(sample_run, tmp_path, cli, args, message):
    (tmp_path / "bad.json").write_text(json.dumps({"schema": "x/1", "findings": []}))
    args = [a.format(tmp=tmp_path) for a in args]
    if "-o" not in args:
        args += ["-o", str(tmp_path / "r.html")]
    result = cli("report", sample_run, *args)
    assert result.exit_code == 2 and message.format(tmp=tmp_path) in result.output
    assert not (tmp_path / "r.html").exists()


def test_missing_run(tmp_path, cli):
    result = cli("report", tmp_path / "nope", "-o", tmp_path / "r.html")
    assert result.exit_code == 2 and result.output.startswith("error: run not found")
    assert not (tmp_path / "r.html").exists()
