"""The HTML report: one self-contained page (Vega libraries inlined, no network) drawn from the
stdlib views and a findings document, plus PNG/SVG exports of its charts.

    from trnprof.report import write_report
    write_report("runs/job1", "report.html")                       # runs the rule engine
    write_report("runs/job1", "report.html", findings="analyze.json", png_dir="charts/")

Layout: `queries` reads the views (the only SQL), `sections/` turn frames into Altair charts or
HTML, `page` assembles and escapes, `vega` supplies the offline JavaScript, `export` renders
PNG/SVG, `build` ties them together.
"""

from .build import write_report

__all__ = ["write_report"]
