"""The diff document as titled tables of display strings, shared by the text and Markdown
renderers (and the report's comparison section)."""

from __future__ import annotations

LABELS = {"compute": "compute", "exposed_comm": "exposed communication", "input_wait": "input wait",
          "host_sync": "host waits for device", "host": "host (device idle)", "transfer_exposed": "exposed transfer", "compile": "compile",
          "idle": "idle"}


def duration(seconds) -> str:
    if seconds is None:
        return "n/a"
    sign, seconds = ("-" if seconds < 0 else ""), abs(seconds)
    if seconds >= 1:
        return f"{sign}{seconds:.3f} s"
    if seconds >= 1e-3:
        return f"{sign}{seconds * 1e3:.2f} ms"
    return f"{sign}{seconds * 1e6:.1f} us" if seconds else "0"


def signed_duration(seconds) -> str:
    return "n/a" if seconds is None else ("+" if seconds > 0 else "") + duration(seconds)


def percent(change) -> str:
    return "n/a" if change is None else f"{change:+.1%}"


def size(nbytes) -> str:
    if nbytes is None:
        return "unknown"
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if nbytes >= scale:
            return f"{nbytes / scale:.4g} {unit}"
    return f"{nbytes:.0f} B"


def verdict(entry: dict) -> str:
    return "significant" if entry.get("significant") else "within noise"


def headline(document: dict) -> list[dict]:
    step = document["step_time"]
    rows = [{"metric": "step time", "base": duration(step["base_s"]), "new": duration(step["new_s"]),
             "change": percent(step["change"]), "verdict": f"{verdict(step)} (p={step['p_value']:.2g})"}]
    throughput = document.get("throughput")
    if throughput:
        rows.append({"metric": "throughput", "base": f"{throughput['base']:,.1f} {throughput['unit']}",
                     "new": f"{throughput['new']:,.1f} {throughput['unit']}", "change": percent(throughput["change"]),
                     "verdict": verdict(throughput)})
    mfu = document.get("mfu")
    if mfu:
        rows.append({"metric": "MFU", "base": f"{mfu['base']:.2%}", "new": f"{mfu['new']:.2%}",
                     "change": percent(mfu["change"]), "verdict": verdict(mfu)})
    return rows


def breakdown(document: dict) -> list[dict]:
    return [{"category": LABELS[row["category"]], "base": duration(row["base_s"]), "new": duration(row["new_s"]),
             "delta": signed_duration(row["delta_s"]), "change": percent(row["change"]), "verdict": verdict(row)}
            for row in document["breakdown"]]


def ops(rows: list[dict]) -> list[dict]:
    return [{"op": row["name"], "kind": row["kind"], "lane": row["lane"], "base": duration(row["base_s"]),
             "new": duration(row["new_s"]), "delta": signed_duration(row["delta_s"]),
             "change": "new op" if row["change"] is None else percent(row["change"]), "verdict": verdict(row)}
            for row in rows]


def collectives(document: dict) -> list[dict]:
    def bw(value):
        return "n/a" if value is None else f"{value / 1e9:.2f} GB/s"
    return [{"op": row["coll_op"], "size class": size(row["size_class"]),
             "per step": f"{row['base_per_step'] or 0:g} -> {row['new_per_step'] or 0:g}",
             "base busbw": bw(row["base_busbw"]), "new busbw": bw(row["new_busbw"]),
             "busbw change": percent(row["busbw_change"])} for row in document["collectives"]]


def memory(document: dict) -> list[dict]:
    return [{"category": row["category"], "base": size(row["base_bytes"]), "new": size(row["new_bytes"]),
             "change": percent(row["change"])} for row in document["memory"]]


def findings(document: dict) -> list[dict]:
    found = document["findings"]
    rows = [{"status": "new", "rule": f"{d['code']} {d['name']}", "severity": d["severity"],
             "impact": f"{duration(d['seconds_per_step'])}/step"} for d in found["new_details"]]
    rows += [{"status": "resolved", "rule": f"{d['code']} {d['name']}", "severity": d["severity"],
              "impact": f"was {duration(d['seconds_per_step'])}/step"} for d in found["resolved_details"]]
    rows += [{"status": "in both",
              "rule": f"{c['code']} {c['name']}",
              "severity": c["new_severity"] if c["base_severity"] == c["new_severity"]
              else f"{c['base_severity']} -> {c['new_severity']}",
              "impact": f"{duration(c['base_s'])} -> {duration(c['new_s'])}/step"} for c in found["changed"]]
    return rows


def sections(document: dict) -> list[tuple[str, list[dict]]]:
    """(title, rows) in display order; empty tables are kept (the renderers say 'none')."""
    moved = document.get("moved_by")
    return [
        ("Step time, throughput, MFU (median over steady-state steps)", headline(document)),
        ("Step breakdown per rank and step (median over steady steps of the ranks' mean)"
         + (f"; the step time moved with {LABELS[moved]}" if moved else ""), breakdown(document)),
        ("Top regressions by op (mean time per rank and step)", ops(document["top_regressions"])),
        ("Top improvements by op", ops(document["top_improvements"])),
        ("Collectives by op and size class", collectives(document)),
        ("Device memory at the peak, by category (largest rank)", memory(document)),
        ("Findings by rule", findings(document)),
    ]
