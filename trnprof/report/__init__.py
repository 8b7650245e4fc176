"""The HTML report: one self-contained page (Vega libraries inlined, no network) drawn from the
stdlib views and a findings document, plus PNG/SVG exports of its charts.

    from trnprof.api import report
    report("runs/job1", "report.html")                       # runs the rule engine
    report("runs/job1", "report.html", findings="analyze.json", png_dir="charts/")

Layout: `queries` reads the views (the only SQL), `sections/` turn frames into Altair charts or
HTML, `page` assembles and escapes, `vega` supplies the offline JavaScript, `export` renders
PNG/SVG, `build` ties them together. The report imports views and documents only: the API
(`trnprof.api.report`) opens the run and runs the rules and the comparison.
"""

from .build import build_report, check_destination

__all__ = ["build_report", "check_destination"]
