"""The report in a real browser: Debian's headless Chromium, driven by Playwright (which never
downloads a browser of its own here). The page must load from file:// with no console error and
no other request, every chart must draw marks, and hostile trace names must show as text and
never run. Screenshots are kept under artifacts/ (gitignored) for a person to look at.

Chromium is installed by `bash dev.sh test`; without it these tests fail, they never skip."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from playwright.sync_api import sync_playwright

from tests.conftest import REPO
from tests.report.test_report_page import HOSTILE, hostile_findings, write_hostile_run
from trnprof.api import report

CHROMIUM = "/usr/bin/chromium"
# root needs --no-sandbox; the rest keeps Chromium from calling Google services on a closed network
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ARTIFACTS = REPO / "artifacts"

# Data marks drawn per chart (scenegraph items of role "mark"), and every text item drawn.
COUNT_MARKS = """(id) => {
  const count = (mark) => {
    let n = mark.marktype !== "group" && mark.role === "mark" ? mark.items.length : 0;
    for (const item of mark.items || []) for (const child of item.items || []) n += count(child);
    return n;
  };
  return count(window.trnprofViews[id].scenegraph().root);
}"""
TEXTS = """(id) => {
  const texts = [];
  const walk = (mark) => {
    for (const item of mark.items || []) {
      if (mark.marktype === "text") texts.push([].concat(item.text).join(" "));
      for (const child of item.items || []) walk(child);
    }
  };
  walk(window.trnprofViews[id].scenegraph().root);
  return texts;
}"""

# Page coordinates of the centre of the first compute bar of a chart (to hover it).
COMPUTE_BAR = """(id) => {
  const view = window.trnprofViews[id];
  let found = null;
  const walk = (mark, ox, oy) => {
    for (const item of mark.items || []) {
      if (!found && mark.role === "mark" && item.datum && item.datum.kind === "compute") {
        found = [ox + (item.bounds.x1 + item.bounds.x2) / 2, oy + (item.bounds.y1 + item.bounds.y2) / 2];
      }
      for (const child of item.items || []) walk(child, ox + (item.x || 0), oy + (item.y || 0));
    }
  };
  walk(view.scenegraph().root, 0, 0);
  const box = view.container().querySelector("canvas").getBoundingClientRect();
  const [x0, y0] = view.origin();
  return [box.left + x0 + found[0], box.top + y0 + found[1]];
}"""


@pytest.fixture(scope="module")
def browser():
    assert Path(CHROMIUM).exists(), f"{CHROMIUM} is missing: `bash dev.sh test` installs Debian's chromium"
    with sync_playwright() as playwright, tempfile.TemporaryDirectory() as profile:
        context = playwright.chromium.launch_persistent_context(
            profile, executable_path=CHROMIUM, headless=True, args=FLAGS, viewport={"width": 1280, "height": 900}
        )
        yield context
        context.close()


def open_page(browser, path: Path) -> dict:
    """Load the page, wait for every chart; what the console said, every request, every dialog."""
    page = browser.new_page()
    seen = {"page": page, "console": [], "requests": [], "dialogs": []}
    page.on("console", lambda m: seen["console"].append(f"{m.type}: {m.text}"))
    page.on("pageerror", lambda e: seen["console"].append(f"pageerror: {e}"))
    page.on("dialog", lambda d: (seen["dialogs"].append(d.message), d.dismiss()))
    page.route("**/*", lambda route: (seen["requests"].append(route.request.url), route.continue_()))
    page.goto(path.resolve().as_uri())
    seen["charts"] = page.evaluate("() => window.trnprofReady")
    return seen


def test_report_loads_offline_and_every_chart_draws(browser, sample_run, tmp_path):
    out = tmp_path / "report.html"
    report(sample_run, out)
    seen = open_page(browser, out)
    page = seen["page"]
    assert seen["console"] == []
    assert seen["requests"] == [out.resolve().as_uri()]
    views = page.evaluate("() => Object.keys(window.trnprofViews)")
    assert seen["charts"] == 7 and sorted(views) == sorted(
        f"chart-{s}" for s in ("breakdown", "timeline", "critical_path", "collectives", "memory", "stragglers", "input")
    )
    marks = {view: page.evaluate(COUNT_MARKS, view) for view in views}
    assert all(n > 0 for n in marks.values()), marks
    assert marks["chart-stragglers"] >= 2 * 8 * 4  # two heatmaps, 8 ranks x 4 steps each
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=ARTIFACTS / "report.png", full_page=True)
    page.close()


def assert_inert(seen: dict, out: Path, charts: int) -> None:
    """Nothing of the trace ran or loaded: no dialog, no script, no element, no request."""
    page = seen["page"]
    assert seen["charts"] == charts and seen["console"] == [] and seen["dialogs"] == []
    assert seen["requests"] == [out.resolve().as_uri()]  # no <img src=x> was ever loaded
    assert page.evaluate("() => window.__xss") is None
    assert page.evaluate("() => document.querySelectorAll('img, iframe, object, embed').length") == 0
    assert page.evaluate("() => document.scripts.length") == 2 + charts  # the page's two, one spec per chart


def test_hostile_names_show_as_text_and_never_run(browser, tmp_path):
    run = write_hostile_run(tmp_path / "run")
    out = tmp_path / "report.html"
    report(run, out, findings=hostile_findings(tmp_path / "analyze.json"))
    seen = open_page(browser, out)
    page = seen["page"]
    assert_inert(seen, out, 7)
    script, img, quoted = HOSTILE
    assert page.title().endswith(f"({script})")
    findings = page.inner_text("#findings")
    assert script in findings and img in findings and quoted in findings
    assert img in page.inner_text("#summary")  # the instance type, shown as text
    page.click("#timeline > details > summary")  # the ops table, not the chart's menu
    assert all(h in page.inner_text("#timeline") for h in HOSTILE)  # op, kernel and annotation names
    lanes = " ".join(page.evaluate(TEXTS, "chart-timeline"))
    assert f"host/{img}" in lanes  # drawn as a text mark (an axis label), not parsed
    page.locator("#chart-timeline").scroll_into_view_if_needed()
    page.mouse.move(*page.evaluate(COMPUTE_BAR, "chart-timeline"))
    tooltip = page.wait_for_selector("#vg-tooltip-element.visible")
    assert img in tooltip.inner_text() and script in tooltip.inner_text()  # name and phase, as text
    assert_inert(seen, out, 7)
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=ARTIFACTS / "report-hostile.png", full_page=True)
    page.close()


def test_hostile_kineto_trace_ingested_and_reported(browser, tmp_path, cli):
    """The same through `trnprof ingest` of a PyTorch-profiler trace: a kernel, a CPU op and
    annotations (host and GPU side) named with hostile strings."""
    script, img, quoted = HOSTILE
    events = []
    for step in range(2):
        t = step * 1000  # Kineto times are microseconds
        events += [
            {
                "ph": "X",
                "cat": "user_annotation",
                "name": f"ProfilerStep#{step}",
                "pid": 1,
                "tid": 1,
                "ts": t,
                "dur": 900,
            },
            {"ph": "X", "cat": "user_annotation", "name": script, "pid": 1, "tid": 1, "ts": t + 10, "dur": 300},
            {"ph": "X", "cat": "cpu_op", "name": quoted, "pid": 1, "tid": 1, "ts": t + 20, "dur": 200},
            {
                "ph": "X",
                "cat": "kernel",
                "name": img,
                "pid": 0,
                "tid": 7,
                "ts": t + 100,
                "dur": 500,
                "args": {"device": 0, "stream": 7},
            },
            {
                "ph": "X",
                "cat": "gpu_user_annotation",
                "name": quoted + script,
                "pid": 0,
                "tid": 7,
                "ts": t + 100,
                "dur": 600,
                "args": {"device": 0, "stream": 7},
            },
        ]
    trace = tmp_path / "rank0.json"
    trace.write_text(
        json.dumps({"schemaVersion": 1, "distributedInfo": {"rank": 0, "world_size": 1}, "traceEvents": events})
    )
    assert cli("ingest", trace, "-o", tmp_path / "run").exit_code == 0
    out = tmp_path / "report.html"
    assert cli("report", tmp_path / "run", "-o", out).exit_code == 0
    seen = open_page(browser, out)
    page = seen["page"]
    assert_inert(seen, out, 4)  # breakdown, timeline, critical path, stragglers: no collectives, memory or input
    page.click("#timeline > details > summary")
    ops = page.inner_text("#timeline")
    assert script in ops and img in ops and quoted + script in ops and quoted in ops
    page.close()
