"""The device profile (template `device.html.j2`): per engine active time and utilisation
(view engine_activity) with HFU / MFU / MBU (device_utilization), the busiest DMA queues
(dma_queues), SBUF spill (device_spill), throttling (throttling), trnprof's figures against
Neuron Explorer's own Summary (explorer_agreement), and the device pack's findings, each linked
to its row in the findings table. A run without a device profile has no such section (None),
rather than an empty one: most runs have none, and the page says nothing about what is absent."""

from __future__ import annotations

from ...rules_engine.document import Document
from ...textfmt import duration, share_text, size
from .. import device_queries, templates
from ..section import Section

INTRO = (
    "Neuron Explorer's device profile (ingested, or simulated with --device-profile): each figure is the "
    "mean of one rank's step over the {cells} rank-step(s) the profile covers. Active time is the time at "
    "least one instruction runs on the engine; utilisation is that over the step's device span."
)
PACK = "device"


def _ms(ns) -> str:
    return "n/a" if ns is None else duration(ns / 1e9)


def _share(value) -> str:
    return "n/a" if value is None else share_text(value)


def _flops(value) -> str:
    return "n/a" if value is None else f"{value / 1e9:,.2f} GFLOP"


def _bytes(value) -> str:
    return "n/a" if value is None else size(value)


def _num(value) -> str:
    return "n/a" if value is None else f"{value:,.0f}"


def _none_if_nan(row: dict) -> dict:
    return {k: (None if isinstance(v, float) and v != v else v) for k, v in row.items()}


def engine_rows(run) -> list[dict]:
    rows = []
    for r in map(_none_if_nan, device_queries.engines(run).to_dict("records")):
        rows.append(
            {
                "engine": r["engine"],
                "active": _ms(r["active_ns"]),
                "share": _share(r["active_share"]),
                "max_share": _share(r["max_share"]),
                "instructions": _num(r["instructions"]),
                "flops": _flops(r["adjusted_flops"]),
                "tensor_idle": "–" if r["engine"] == "tensor" else _ms(r["tensor_idle_ns"]),
            }
        )
    return rows


def dma_rows(run) -> tuple[list[dict], int]:
    frame, total = device_queries.dma(run)
    rows = [
        {
            "queue": r["queue_name"],
            "type": r["queue_type"],
            "spill": bool(r["spill"]),
            "bytes": _bytes(r["bytes"]),
            "busy": _ms(r["busy_ns"]),
            "packet": _bytes(r["mean_packet_bytes"]),
            "small": _share(r["small_share"]),
        }
        for r in map(_none_if_nan, frame.to_dict("records"))
    ]
    return rows, total


def spill_text(run) -> dict | None:
    s = device_queries.spill(run)
    if s is None:
        return None
    return {
        "save": _bytes(s["save_bytes"]),
        "reload": _bytes(s["reload_bytes"]),
        "reload_share": _share(s["reload_share"]),
        "exposed": _ms(s["exposed_ns"]),
        "exposed_share": _share(s["exposed_share"]),
    }


def throttling_text(run) -> dict | None:
    t = device_queries.throttling(run)
    if t is None:
        return None
    return {
        "windows": _num(t["windows"]),
        "throttled": _ms(t["throttled_ns"]),
        "allowed": _share(t["mean_allowed"]),
        "lost": _ms(t["lost_ns"]),
        "lost_share": _share(t["lost_share"]),
    }


def agreement_rows(run) -> list[dict]:
    return [
        {
            "metric": r["metric"],
            "agree": f"{int(r['agree'])} of {int(r['ranks'])}",
            "max_diff": _share(r["max_diff"]),
            "note": r["note"] or "",
        }
        for r in map(_none_if_nan, device_queries.agreement(run).to_dict("records"))
    ]


def device_findings(findings: Document | None) -> list[dict]:
    """The device pack's findings with their index in the findings table (its row ids)."""
    if findings is None:
        return []
    return [
        {"anchor": f"finding-{i}", "code": f.code, "name": f.name, "severity": f.severity, "title": f.title}
        for i, f in enumerate(findings.findings)
        if f.pack == PACK
    ]


def build(run, findings: Document | None) -> Section | None:
    if not device_queries.has_profile(run):
        return None
    utilization = device_queries.utilization(run)
    engines = engine_rows(run)
    cells = int(utilization["cells"]) if utilization else 0
    queues, total = dma_rows(run)
    section = Section(
        "device", "Device profile: engines, DMA, spill, throttling", intro=INTRO.format(cells=cells or "the")
    )
    if total > len(queues):
        section.notes.append(f"the {len(queues)} busiest of {total} DMA queues listed")
    util = (
        None if utilization is None else {k: _share(utilization[k]) for k in ("hfu", "mfu", "mbu", "recompute_share")}
    )
    section.html = templates.render(
        "device.html.j2",
        engines=engines,
        util=util,
        queues=queues,
        spill=spill_text(run),
        throttling=throttling_text(run),
        agreement=agreement_rows(run),
        findings=device_findings(findings),
        computed=findings is not None,
    )
    return section
