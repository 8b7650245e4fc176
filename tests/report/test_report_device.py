"""The report's device section (issue 36, item 5): on a run with a device profile it shows the
numbers the device views return (each a mean per rank-step, recomputed here from the views
with pandas), links the device pack's findings to their rows, and is absent, not empty, on a
run without a profile; strings of the profile reach the page escaped."""

from __future__ import annotations

import html
import re
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from trnprof.api import open_run, report
from trnprof.collectors.ingest import ingest
from trnprof.collectors.trn1 import load_config, simulate
from trnprof.textfmt import duration, share_text, size

ROOT = Path(__file__).resolve().parents[2]
EXPLORER_SAMPLE = ROOT / "tests" / "data" / "neuron" / "explorer"
FAULTS = [{"kind": "sbuf_spill", "fraction": 0.5}, {"kind": "throttle", "utilization": 0.6}]


def _section(page: str, section_id: str) -> str | None:
    start = page.find(f'<section id="{section_id}">')
    return None if start < 0 else page[start : page.index("</section>", start)]


def _text(fragment: str) -> str:
    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", fragment)))


@pytest.fixture(scope="module")
def faulty(tmp_path_factory):
    """A simulated job with an SBUF spill and a throttle, its device profile, and its report."""
    folder = tmp_path_factory.mktemp("device")
    simulate(
        load_config(preset="tiny", faults=FAULTS), folder / "run", steps=5, seed=0, overwrite=True, device_profile=True
    )
    report(folder / "run", folder / "report.html")
    return folder / "run", (folder / "report.html").read_text(encoding="utf-8")


def test_the_section_shows_what_the_views_return(faulty):
    run_path, page = faulty
    section = _section(page, "device")
    assert section is not None
    text = _text(section)
    with open_run(run_path) as run:
        engines = run.sql("SELECT * FROM engine_activity")
        spill = run.sql("SELECT * FROM device_spill")
        throttling = run.sql("SELECT * FROM throttling")
        utilization = run.sql("SELECT * FROM device_utilization")
        agreement = run.sql("SELECT * FROM explorer_agreement")
    tensor = engines[engines["engine"] == "tensor"]
    row = re.search(r"tensor (\S+ \S+) (\S+%) (\S+%) ([\d,]+) ([\d,.]+ GFLOP)", text)
    assert row, text
    assert row.group(1) == duration(tensor["active_ns"].mean() / 1e9)
    assert row.group(2) == share_text(tensor["active_share"].mean())
    assert row.group(3) == share_text(tensor["active_share"].max())
    assert row.group(5) == f"{tensor['adjusted_flops'].mean() / 1e9:,.2f} GFLOP"
    assert f"HFU {share_text(utilization['hfu'].mean())}" in text
    assert f"MBU {share_text(utilization['mbu'].mean())}" in text
    assert (
        f"{size(spill['spill_save_bytes'].mean())} saved to HBM and {size(spill['spill_reload_bytes'].mean())} "
        f"reloaded ({share_text(spill['reload_share'].mean())} of the HBM reads)"
    ) in text
    lost = throttling["lost_ns"].mean() / 1e9
    assert f"{duration(lost)} of tensor-engine time lost" in text
    assert f"allowed {share_text(throttling['mean_allowed'].mean())} of its issue slots" in text
    agreeing = agreement[agreement["metric"] == "spill_save_bytes"]
    assert f"spill_save_bytes {int(agreeing['within_tolerance'].sum())} of {len(agreeing)}" in text
    assert "qSpillSave0 (spill)" in text


def test_the_device_findings_link_to_their_rows(faulty):
    _, page = faulty
    links = re.findall(r'<a href="#(finding-\d+)"><code>(DV\d+ device\.\w+)</code></a>', _section(page, "device"))
    names = {name for _, name in links}
    assert {"DV004 device.sbuf_spill", "DV005 device.throttling"} <= names, links
    for anchor, name in links:
        row = page[page.index(f'<tr id="{anchor}">') :]
        assert name in row[: row.index("</tr>")], (anchor, name)


def test_no_profile_no_section(sample_run, tmp_path):
    report(sample_run, tmp_path / "r.html", analyze=False)
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert _section(page, "device") is None
    assert 'href="#device"' not in page


HOSTILE = '<script>alert("q")</script><img src=x onerror=alert(1)>'


def test_hostile_profile_strings_are_escaped(tmp_path):
    """An ingested Explorer profile whose DMA queue is named with markup: shown as text."""
    folder = tmp_path / "profile"
    shutil.copytree(EXPLORER_SAMPLE, folder)
    pq.write_table(
        pa.table(
            {
                "start_ts": pa.array([1_000, 5_000], pa.int64()),
                "end_ts": pa.array([3_000, 9_000], pa.int64()),
                "duration_ns": pa.array([2_000, 4_000], pa.int64()),
                "queue_name": [HOSTILE, HOSTILE],
                "queue_type": ["data", "data"],
                "transfer_bytes": pa.array([4096, 256], pa.int64()),
            }
        ),
        folder / "DmaPacket.parquet",
    )
    ingest([folder], tmp_path / "run")
    report(tmp_path / "run", tmp_path / "r.html", analyze=False)
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    section = _section(page, "device")
    assert section is not None
    assert HOSTILE not in page and "<img" not in section
    assert HOSTILE in _text(section)  # shown as text: escaped in the markup, whole once unescaped
