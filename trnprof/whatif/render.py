"""The what-if document as text for the terminal: the model's prediction, or the replay of the
run's dependency graph (`whatif --scale`)."""

from __future__ import annotations

from trnprof.textfmt import change_text, duration, terminal
from trnprof.textfmt import size as _bytes


def _row(label: str, numbers: dict) -> str:
    throughput = numbers["throughput"]
    effective = numbers.get("effective_step_s")
    return (
        f"{label:<10} {duration(numbers['step_time_s']):>10}  {duration(effective) if effective else '-':>10}  "
        f"{throughput['value']:>12,.1f} {throughput['unit']:<6}"
        f" {numbers['mfu']:>6.1%}  {_bytes(numbers['hbm_peak_bytes']):>10}"
    )


def _params(fit: dict) -> str:
    parts = []
    for name, value in fit["params"].items():
        mark = "" if name in fit["identified"] else " (not identified: shipped value)"
        parts.append(f"  {name:<20} {value:.4g}{mark}")
    return "\n".join(parts)


def _replay_text(doc: dict) -> str:
    """A replay's document (`whatif --scale`): the critical path per step, by category."""
    base, fitted, pred = doc["baseline"], doc["fitted"], doc["predicted"]
    lines = [
        f"run        {doc['run']}",
        f"change     {', '.join(doc['change']['scale'])}",
        f"method     replay of the run's dependency graph over {base['steps']} steady steps "
        f"(unchanged replay {doc['fit']['residual']['step']:+.2%} vs measured)",
        "",
        f"baseline   {duration(base['step_time_s'])} per step (measured)",
        f"replayed   {duration(fitted['step_time_s'])} per step (unchanged graph)",
        f"predicted  {duration(pred['step_time_s'])} per step ({pred['change_fraction']:+.1%} vs replayed)",
        "",
        "critical path per step, by category:",
        f"{'category':<14} {'baseline':>10} {'predicted':>10} {'delta':>10}",
    ]
    for cat, row in doc["breakdown"].items():
        if row["baseline_s"] or row["predicted_s"]:
            sign = "+" if row["delta_s"] >= 0 else "-"
            lines.append(
                f"{cat:<14} {duration(row['baseline_s']):>10} {duration(row['predicted_s']):>10} "
                f"{sign}{duration(abs(row['delta_s'])):>9}"
            )
    lines += ["", "note       " + doc["fit"]["notes"][0]]
    return terminal("\n".join(lines))


def to_text(doc: dict) -> str:
    if doc["fit"]["method"] == "replay":
        return _replay_text(doc)
    fit, pred = doc["fit"], doc["predicted"]
    residual = fit["residual"]
    lines = [
        f"run        {doc['run']}",
        f"change     {change_text(doc['change']) or '(none: the fitted baseline)'}",
        f"fit        {fit['method']}: {fit['classes']} classes, residual {residual['classes_rms']:.1%} RMS per "
        f"class, fitted step {residual['step']:+.1%} vs measured (predictions are ratios on the measured step, "
        "so this bias cancels)",
        _params(fit),
    ]
    if fit["fixed"]:
        lines.append(f"           the run cannot show {', '.join(fit['fixed'])}: the band spans its plausible range")
    if not fit["fits"]:
        lines.append(
            f"warning    the model does not fit this run: {fit['reason']}; the prediction is not to be trusted"
        )
    effective = pred.get("effective_change_fraction")
    lines += [
        "",
        f"{'':<10} {'step':>10}  {'effective':>10}  {'throughput':>19} {'MFU':>7}  {'HBM peak':>10}",
        _row("baseline", doc["baseline"]),
        _row("fitted", doc["fitted"]),
        _row("predicted", pred),
        "",
        f"predicted step {duration(pred['step_time_s'])} ({pred['change_fraction']:+.1%} vs measured), "
        f"band {duration(pred['band']['low_s'])} .. {duration(pred['band']['high_s'])}; "
        + (
            f"effective step (wall time per step) {duration(pred['effective_step_s'])} ({effective:+.1%}); "
            if effective is not None
            else ""
        )
        + f"HBM {'fits' if pred['fits'] else 'does NOT fit'}",
        "",
        f"{'category':<14} {'baseline':>10} {'fitted':>10} {'predicted':>10} {'delta':>10}",
    ]
    for cat, row in doc["breakdown"].items():
        base = duration(row["baseline_s"]) if row["baseline_s"] is not None else "-"
        lines.append(
            f"{cat:<14} {base:>10} {duration(row['fitted_s']):>10} {duration(row['predicted_s']):>10} "
            f"{'+' if row['delta_s'] >= 0 else '-'}{duration(abs(row['delta_s'])):>9}"
        )
    return terminal("\n".join(lines))
