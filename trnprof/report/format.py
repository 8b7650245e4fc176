"""Human formats for the page's text: durations, shares, bandwidths, rank lists, job values."""

from __future__ import annotations

from ..textfmt import compact, duration  # noqa: F401 - the report's duration format is the one of textfmt


def share(fraction: float | None) -> str:
    return "n/a" if fraction is None else f"{fraction:.1%}"


def job_value(value) -> str:
    """A manifest job value: dicts as `key value` pairs, lists comma-separated."""
    if value is None or value == "":
        return "n/a"
    if isinstance(value, dict):
        return ", ".join(f"{k} {job_value(v)}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return ", ".join(job_value(v) for v in value)
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:,.4g}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def index_list(values) -> str:
    """Ranks or steps as ranges: '0-7, 12'."""
    return compact([int(v) for v in values])
