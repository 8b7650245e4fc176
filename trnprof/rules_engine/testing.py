"""A rule's own test cases: the run of an inline case, and what differs from what a case expects.

An inline case's run is a tiny trace written with the run store; a case's other runs are made by
a collector's run factory (`trnprof.collectors.registry`), which `trnprof.api.run_rule_cases`
calls: the rule engine imports no collector. That API function runs the cases (`trnprof rules
test`), each finding priced as `trnprof analyze` prices it, so a case's `min_fraction` /
`max_fraction` bound the fix's price and `priced_by` names how it was priced.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from trnprof import hardware
from trnprof.manifest import new_manifest
from trnprof.runstore import write_run

from .document import Document, Finding
from .loader import Rule
from .spec import Case, Expect, Inline, Table

DEFAULT_INSTANCE = "trn1.32xlarge"
DEFAULT_LANES = {
    "compute": "nc/tensor",
    "collective": "nc/cc",
    "p2p": "nc/cc",
    "input": "host/loader",
    "transfer": "dma/h2d",
    "memory": "dma/mem",
    "compile": "host/compiler",
    "host": "host/main",
    "annotation": "host/main",
    "step": "host/main",
}


@dataclass
class CaseResult:
    rule: Rule
    case: Case
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def default_ranks(n: int) -> pd.DataFrame:
    """Ranks 0..n-1 laid out like trn1.32xlarge (hardware table: cores per node and chip, HBM
    per core), pure data parallel."""
    row = hardware.lookup(DEFAULT_INSTANCE)
    per_node, per_chip = row["cores"], row["cores_per_chip"]
    ranks = list(range(n))
    return pd.DataFrame(
        {
            "rank": ranks,
            "node": [r // per_node for r in ranks],
            "host": [f"node-{r // per_node}" for r in ranks],
            "chip": [(r % per_node) // per_chip for r in ranks],
            "core": [r % per_chip for r in ranks],
            "dp_rank": ranks,
            "tp_rank": 0,
            "pp_rank": 0,
            "instance_type": DEFAULT_INSTANCE,
            "hbm_capacity_bytes": row["hbm_bytes_per_core"],
        }
    )


def _frame(table: Table) -> pd.DataFrame:
    return pd.DataFrame(table.rows, columns=table.columns, dtype=object)


def _tiled(frame: pd.DataFrame, tile) -> pd.DataFrame:
    """Rows without a rank go to every rank, rows without a step to every step (time-shifted)."""
    if tile is None:
        return frame
    for column in ("rank", "step"):
        if column not in frame:
            frame[column] = None
    seq_stride = (
        int(frame["coll_seq"].dropna().max()) + 1 if "coll_seq" in frame and frame["coll_seq"].notna().any() else 0
    )
    pieces = []
    for _, row in frame.iterrows():
        ranks = range(tile.ranks) if row["rank"] is None or pd.isna(row["rank"]) else [row["rank"]]
        steps = range(tile.steps) if row["step"] is None or pd.isna(row["step"]) else [None]
        for rank in ranks:
            for step in steps:
                copy = row.copy()
                copy["rank"] = rank
                if step is not None:
                    copy["ts"] = int(row["ts"]) + step * tile.period_ns
                    copy["step"] = step
                    if seq_stride and not pd.isna(row["coll_seq"]):
                        copy["coll_seq"] = int(row["coll_seq"]) + step * seq_stride
                pieces.append(copy)
    return pd.DataFrame(pieces, columns=frame.columns).reset_index(drop=True)


def write_inline(inline: Inline, path: Path) -> Path:
    """Write an inline test run; missing lanes default by kind, names to the kind."""
    events = _tiled(_frame(inline.events), inline.tile)
    if "rank" not in events:
        events["rank"] = 0
    if "lane" not in events:
        events["lane"] = events["kind"].map(DEFAULT_LANES).fillna("host/main")
    if "name" not in events:
        events["name"] = events["kind"]
    for column in ("args", "coll_op", "coll_group", "phase"):
        if column in events:
            events[column] = events[column].map(lambda v: json.dumps(v) if isinstance(v, (dict, list)) else v)
    if isinstance(inline.ranks, Table):
        ranks = _frame(inline.ranks)
    else:
        n = max(inline.ranks, inline.tile.ranks if inline.tile else 0, int(events["rank"].max()) + 1)
        ranks = default_ranks(n)
    manifest = new_manifest("trnprof.rules_test", job=dict(inline.job), world_size=len(ranks))
    with write_run(path, manifest, overwrite=True) as run:
        run.write_events(events.infer_objects())
        if inline.counters is not None:
            # a counter row may name a step: it is then placed as given, not repeated per step
            counters = _tiled(_frame(inline.counters), inline.tile)
            counters = counters.drop(columns=["step"], errors="ignore")
            if "rank" not in counters:
                counters["rank"] = 0
            if "unit" not in counters:
                counters["unit"] = "bytes"
            run.write_counters(counters.infer_objects())
        run.write_ranks(ranks.infer_objects())
    return path


def _check(expect: Expect, finding: Finding) -> bool:
    fraction = finding.impact.fraction_of_step
    return (
        (expect.severity is None or expect.severity == finding.severity)
        and (expect.pattern is None or expect.pattern == finding.pattern)
        and (expect.ranks is None or expect.ranks == finding.ranks)
        and (expect.steps is None or expect.steps == finding.steps)
        and (expect.min_fraction is None or fraction >= expect.min_fraction)
        and (expect.max_fraction is None or fraction <= expect.max_fraction)
        and (expect.priced_by is None or expect.priced_by == finding.impact.basis)
        and (expect.message_contains is None or expect.message_contains in finding.message)
    )


def _summary(finding: Finding) -> str:
    return (
        f"{finding.severity} pattern={finding.pattern or ''!r} ranks={finding.ranks} "
        f"steps={finding.steps} fraction={finding.impact.fraction_of_step:.3f} "
        f"priced_by={finding.impact.basis} "
        f"message={finding.message!r}"
    )


def compare(case: Case, rule: Rule, document: Document) -> list[str]:
    """What differs between the case's expectation and the rule's result."""
    if document.errors:
        return [f"rule failed: {document.errors[0].error}"]
    skipped = [n for n in document.not_evaluated if n.name == rule.name]
    if case.expect == "not_evaluated":
        return [] if skipped else ["expected the rule not to be evaluated, but it was"]
    if skipped:
        return [f"rule was not evaluated: {skipped[0].reason}"]
    found = [f for f in document.findings if f.name == rule.name]
    problems, unused = [], list(found)
    for expect in case.expect:
        match = next((f for f in unused if _check(expect, f)), None)
        if match is None:
            wanted = {f: getattr(expect, f) for f in expect.__struct_fields__ if getattr(expect, f) is not None}
            problems.append(f"no finding matches {wanted}")
        else:
            unused.remove(match)
    problems += [f"unexpected finding: {_summary(f)}" for f in unused]
    if problems and found:
        problems.append("found: " + "; ".join(_summary(f) for f in found))
    return problems
