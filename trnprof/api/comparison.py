"""Two runs compared (`trnprof diff`): the diff document, each side's findings priced as
`analyze` prices them, and the `--fail-if` gates judged on it."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import TrnprofError

if TYPE_CHECKING:
    from ..run import Run


def diff(
    base: str | Path | Run,
    new: str | Path | Run,
    *,
    gates=(),
    strict: bool = False,
    gate_incomparable: bool = False,
    **options,
) -> dict:
    """Compare run `new` against run `base` (`trnprof diff`): the diff document (the JSON of
    `trnprof diff --format json`), each side's findings priced as `analyze` prices them (one
    number per finding). gates: `--fail-if` expressions ("step_time>+5%", ...), checked before
    any work and judged under "gates" (each with `tripped`), on a significant change only
    unless `strict`; gates on runs that are not comparable are refused unless
    `gate_incomparable`. Options: those of `trnprof.diff.document.diff` (alpha, top,
    base_findings, new_findings, analyze_options, threads)."""
    from ..diff.document import diff as compare
    from ..diff.gates import evaluate_gates, parse_gate
    from .findings import priced

    parsed = [parse_gate(gate) for gate in gates]  # a bad expression fails before any work
    document = compare(base, new, price=priced, **options)
    if gates:
        _check_gateable(document, [gate.metric for gate in parsed], gate_incomparable)
    return {**document, "gates": evaluate_gates(gates, document, strict=strict), "strict": strict}


def _check_gateable(document: dict, metrics: list[str], gate_incomparable: bool) -> None:
    if not document["comparable"] and not gate_incomparable:
        raise TrnprofError(
            "the runs are not comparable ("
            + "; ".join(document["reasons"])
            + "), so --fail-if cannot judge them (--force gates them anyway)"
        )
    errors = document["findings"]["errors"]
    failed = [e["name"] for side in ("base", "new") for e in errors[side]]
    if failed and "new_findings" in metrics:
        raise TrnprofError(
            f"rule(s) {', '.join(sorted(set(failed)))} failed, so new_findings gates cannot judge the runs"
        )
