"""The page: one file, every script it runs allowed by hash in its Content-Security-Policy,
specs inline as JSON, and trace strings present only escaped."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from tests.conftest import write_inline_run
from trnprof.api import report
from trnprof.report import vega

HOSTILE = [
    "<script>window.__xss=1;alert(1)</script>",
    '</script><img src=x onerror="window.__xss=2">',
    'it\'s "quoted" & <b>bold</b>',
]


def write_hostile_run(path: Path) -> Path:
    """Two ranks, two steps, whose op, kernel, annotation, lane, collective and memory-category
    names and job fields are hostile strings."""
    script, img, quoted = HOSTILE
    events = []
    for rank in range(2):
        for step in range(2):
            t0 = step * 1_000_000
            events += [
                dict(rank=rank, ts=t0, dur=900_000, kind="step", name=script, lane="host/main", step=step),
                dict(rank=rank, ts=t0, dur=100_000, kind="input", name=quoted, lane=f"host/{img}", step=step),
                dict(
                    rank=rank,
                    ts=t0 + 100_000,
                    dur=500_000 + rank * 100_000,
                    kind="compute",
                    name=img,
                    lane="nc/tensor",
                    step=step,
                    phase=script,
                ),
                dict(
                    rank=rank, ts=t0 + 300_000, dur=300_000, kind="annotation", name=script, lane="host/main", step=step
                ),
                dict(
                    rank=rank,
                    ts=t0 + 600_000,
                    dur=200_000,
                    kind="collective",
                    name=quoted,
                    lane="nc/cc",
                    step=step,
                    bytes=1 << 20,
                    coll_op=script,
                    coll_group=img,
                    coll_seq=step,
                    coll_ranks=2,
                ),
            ]
    counters = [
        dict(rank=r, ts=t, name=f"hbm.{script}", value=1e9, unit="bytes") for r in range(2) for t in (0, 500_000)
    ]
    counters += [
        dict(rank=r, ts=t, name="input.queue_depth", value=2.0, unit="count") for r in range(2) for t in (0, 500_000)
    ]
    return write_inline_run(
        path, events, counters=counters, job={"model": script, "instance_type": img, "precision": quoted}
    )


def hostile_findings(path: Path) -> Path:
    script, img, quoted = HOSTILE
    path.write_text(
        json.dumps(
            {
                "schema": "trnprof.findings/1",
                "run": img,
                "findings": [
                    {
                        "code": "XS001",
                        "name": script,
                        "pack": quoted,
                        "severity": "high",
                        "title": script,
                        "message": img,
                        "recommendation": quoted,
                        "ranks": [0, 1],
                        "steps": [0, 1],
                        "impact": {"seconds_per_step": 0.001, "fraction_of_step": 0.1},
                        "evidence": [{"name": script, img: quoted}],
                    }
                ],
                "not_evaluated": [{"name": img, "reason": script}],
                "errors": [{"name": quoted, "error": img}],
            }
        )
    )
    return path


class _Scripts(HTMLParser):
    def __init__(self):
        super().__init__()
        self.scripts, self.csp, self._open = [], None, None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "meta" and attrs.get("http-equiv") == "Content-Security-Policy":
            self.csp = attrs["content"]
        if tag == "script":
            self._open = {"type": attrs.get("type"), "text": ""}

    def handle_data(self, data):
        if self._open is not None:
            self._open["text"] += data

    def handle_endtag(self, tag):
        if tag == "script" and self._open is not None:
            self.scripts.append(self._open)
            self._open = None


@pytest.fixture(scope="module")
def hostile_page(tmp_path_factory):
    folder = tmp_path_factory.mktemp("hostile")
    out = folder / "report.html"
    report(write_hostile_run(folder / "run"), out, findings=hostile_findings(folder / "analyze.json"))
    return out.read_text(encoding="utf-8")


def test_hostile_strings_appear_only_escaped(hostile_page):
    for hostile in HOSTILE:
        assert hostile not in hostile_page
    ours = hostile_page.replace(vega.javascript_bundle(), "")  # vega-tooltip's own code has an <img template
    assert "<img" not in ours and 'onerror="window' not in ours
    assert "&lt;script&gt;window.__xss=1;alert(1)&lt;/script&gt;" in hostile_page  # title, findings table


def test_only_the_pages_own_scripts_may_run(hostile_page):
    parser = _Scripts()
    parser.feed(hostile_page)
    executable = [s["text"] for s in parser.scripts if s["type"] is None]
    specs = [json.loads(s["text"]) for s in parser.scripts if s["type"] == "application/json"]
    assert len(executable) == 2 and len(specs) == 7
    allowed = set(re.findall(r"'sha256-([^']+)'", parser.csp))
    assert allowed == {base64.b64encode(hashlib.sha256(s.encode()).digest()).decode() for s in executable}
    assert "default-src 'none'" in parser.csp and "'unsafe-inline'" not in parser.csp.split("style-src")[0]
    names = json.dumps(specs)
    assert all(json.dumps(h)[1:-1] in names for h in HOSTILE)  # the names are data in the specs
