"""Names reach the charts as data only, never inside a Vega expression (a U+2028 there stops
Vega from parsing it); `--png` writes every chart or none."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import vl_convert

from tests.conftest import write_inline_run
from trnprof.api import report
from trnprof.errors import TrnprofError
from trnprof.report import export

NAMES = ["lane\u2028break", "para\u2029graph", "quote' \" \\ ${x} `tick`", "');alert(1);//"]
EXPRESSION_KEYS = {"expr", "calculate", "filter", "test", "signal", "update", "labelExpr", "sort"}


def write_named_run(path: Path) -> Path:
    events = []
    for rank in range(2):
        for step in range(2):
            t0 = step * 1_000_000
            events.append(dict(rank=rank, ts=t0, dur=900_000, kind="step", name=NAMES[0], lane="host/main", step=step))
            for i, name in enumerate(NAMES):
                events.append(
                    dict(
                        rank=rank,
                        ts=t0 + i * 200_000,
                        dur=150_000,
                        kind="compute",
                        name=name,
                        lane=f"nc/{name}",
                        step=step,
                        phase=name,
                    )
                )
    return write_inline_run(path, events)


def strings_under(node, keys, inside=False):
    """Every string under any of `keys` in a spec."""
    if isinstance(node, dict):
        for key, value in node.items():
            yield from strings_under(value, keys, inside or key in keys)
    elif isinstance(node, list):
        for item in node:
            yield from strings_under(item, keys, inside)
    elif isinstance(node, str) and inside:
        yield node


def test_hostile_lane_names_are_data_and_every_chart_renders(tmp_path):
    run = write_named_run(tmp_path / "run")
    result = report(run, tmp_path / "r.html", analyze=False, png_dir=tmp_path / "charts")
    assert "timeline" in result["charts"]
    svg = (tmp_path / "charts" / "timeline.svg").read_text(encoding="utf-8")
    assert "<svg" in svg and "rect" in svg  # Vega parsed every expression and drew the bars
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    specs = [json.loads(s) for s in _embedded_specs(page)]
    for spec in specs:
        for text in strings_under(spec, EXPRESSION_KEYS):
            assert not any(name in text for name in NAMES), text


def _embedded_specs(page: str) -> list[str]:
    """The JSON of every spec in the page (script elements of type application/json)."""
    import re

    return [m.group(1) for m in re.finditer(r'<script type="application/json"[^>]*>(.*?)</script>', page, re.S)]


def test_png_export_is_all_or_nothing_when_a_chart_fails_to_render(tmp_path, monkeypatch):
    folder = tmp_path / "charts"
    folder.mkdir()
    (folder / "keep.txt").write_text("mine")
    calls = []

    def fail_second(spec, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise ValueError("boom\nmore")
        return "<svg></svg>"

    monkeypatch.setattr(vl_convert, "vegalite_to_svg", fail_second)
    monkeypatch.setattr(vl_convert, "vegalite_to_png", lambda spec, **kwargs: b"\x89PNG")
    specs = {"a": {"mark": "bar"}, "b": {"mark": "bar"}, "c": {"mark": "bar"}}
    with pytest.raises(TrnprofError, match=r"cannot render chart b: boom; no chart was written"):
        export.export_charts(specs, folder)
    assert sorted(p.name for p in folder.iterdir()) == ["keep.txt"]


def test_png_export_removes_what_it_wrote_when_a_write_fails(tmp_path, monkeypatch):
    monkeypatch.setattr(vl_convert, "vegalite_to_svg", lambda spec, **kwargs: "<svg></svg>")
    monkeypatch.setattr(vl_convert, "vegalite_to_png", lambda spec, **kwargs: b"\x89PNG")
    original, writes = Path.write_bytes, []

    def full_disk(self, data):
        writes.append(self.name)
        if len(writes) == 4:
            raise OSError(28, "No space left on device")
        return original(self, data)

    monkeypatch.setattr(Path, "write_bytes", full_disk)
    with pytest.raises(TrnprofError, match="No space left on device; no chart was kept"):
        export.export_charts({"a": {}, "b": {}, "c": {}}, tmp_path / "charts")
    assert list((tmp_path / "charts").iterdir()) == []
