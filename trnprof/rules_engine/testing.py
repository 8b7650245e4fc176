"""`trnprof rules test`: run every rule's own test cases and compare with what they expect.

Each finding is priced as `trnprof analyze` prices it (its rule's `fix:`, by the execution model,
by replay or as a bound), so a case's `min_fraction`/`max_fraction` bound the fix's price and
`priced_by` names how it was priced. A case's run is either a tiny inline trace (written with the run store) or a run made by a
collector's run factory (`simulate`: the Trn1 execution model, a preset plus overrides and
faults), looked up in the registry of `trnprof.collectors.registry`: the engine imports no
collector. Factory runs are cached per session so rules that share a scenario make it once.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import msgspec
import pandas as pd

from trnprof import hardware
from trnprof.engines import open_run
from trnprof.collectors.registry import run_factory
from trnprof.errors import TrnprofError
from trnprof.manifest import new_manifest
from trnprof.runstore import write_run

from .document import Document, Finding
from .engine import Plan, evaluate
from .loader import Rule
from .params import cast
from .spec import Case, Expect, Factory, Inline, Table

DEFAULT_INSTANCE = "trn1.32xlarge"
DEFAULT_LANES = {"compute": "nc/tensor", "collective": "nc/cc", "p2p": "nc/cc", "input": "host/loader",
                 "transfer": "dma/h2d", "memory": "dma/mem", "compile": "host/compiler",
                 "host": "host/main", "annotation": "host/main", "step": "host/main"}


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
    return pd.DataFrame({"rank": ranks, "node": [r // per_node for r in ranks],
                         "host": [f"node-{r // per_node}" for r in ranks],
                         "chip": [(r % per_node) // per_chip for r in ranks], "core": [r % per_chip for r in ranks],
                         "dp_rank": ranks, "tp_rank": 0, "pp_rank": 0, "instance_type": DEFAULT_INSTANCE,
                         "hbm_capacity_bytes": row["hbm_bytes_per_core"]})


def _frame(table: Table) -> pd.DataFrame:
    return pd.DataFrame(table.rows, columns=table.columns, dtype=object)


def _tiled(frame: pd.DataFrame, tile) -> pd.DataFrame:
    """Rows without a rank go to every rank, rows without a step to every step (time-shifted)."""
    if tile is None:
        return frame
    for column in ("rank", "step"):
        if column not in frame:
            frame[column] = None
    seq_stride = int(frame["coll_seq"].dropna().max()) + 1 if "coll_seq" in frame and frame["coll_seq"].notna().any() else 0
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


def write_from_factory(made: Factory, path: Path) -> Path:
    """The case's run made by a collector's run factory (`simulate`: the Trn1 execution model)."""
    factory = run_factory(made.name)
    if factory is None:
        raise TrnprofError(f"this case needs the run factory {made.name!r}, which no installed collector "
                           f"provides (entry-point group trnprof.run_factories)")
    return factory(dict(made.args), path)


def _check(expect: Expect, finding: Finding) -> bool:
    fraction = finding.impact.fraction_of_step
    return ((expect.severity is None or expect.severity == finding.severity)
            and (expect.pattern is None or expect.pattern == finding.pattern)
            and (expect.ranks is None or expect.ranks == finding.ranks)
            and (expect.steps is None or expect.steps == finding.steps)
            and (expect.min_fraction is None or fraction >= expect.min_fraction)
            and (expect.max_fraction is None or fraction <= expect.max_fraction)
            and (expect.priced_by is None or expect.priced_by == finding.impact.basis)
            and (expect.message_contains is None or expect.message_contains in finding.message))


def _summary(finding: Finding) -> str:
    return (f"{finding.severity} pattern={finding.pattern or ''!r} ranks={finding.ranks} "
            f"steps={finding.steps} fraction={finding.impact.fraction_of_step:.3f} "
            f"priced_by={finding.impact.basis} "
            f"message={finding.message!r}")


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


class _Runs:
    """Case runs written under one folder; simulated runs reused across rules."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.simulated: dict[str, Path] = {}
        self.count = 0

    def path_for(self, case: Case) -> Path:
        if case.run.inline is not None:
            self.count += 1
            return write_inline(case.run.inline, self.folder / f"inline-{self.count}")
        made = case.run.factory or Factory("simulate", msgspec.to_builtins(case.run.simulate))
        key = json.dumps([made.name, made.args], sort_keys=True)
        if key not in self.simulated:
            self.simulated[key] = write_from_factory(made, self.folder / f"sim-{len(self.simulated)}")
        return self.simulated[key]


def run_case(rule: Rule, case: Case, runs: _Runs, timeout: float) -> CaseResult:
    result = CaseResult(rule, case)
    try:
        path = runs.path_for(case)
        params = rule.defaults()
        params.update({k: cast(v, rule.spec.params[k].default, f"{case.name}: set {k}") for k, v in case.set.items()})
        from trnprof.api import priced  # the interface composes: the fix priced as `analyze` prices it
        with open_run(path) as run:
            document = evaluate(run, [rule], {rule.name: params}, timeout=timeout)
            document = priced(run, document, Plan([rule], {rule.name: params}, timeout))
        result.problems = compare(case, rule, document)
    except TrnprofError as exc:
        result.problems = [f"could not run the case: {exc}"]
    return result


def test_rules(rules: list[Rule], *, timeout: float = 60.0, workdir: Path | None = None) -> list[CaseResult]:
    """Run every case of every rule; one result per case."""
    with tempfile.TemporaryDirectory(prefix="trnprof-rules-test-", dir=workdir) as tmp:
        runs = _Runs(Path(tmp))
        return [run_case(rule, case, runs, timeout) for rule in rules for case in rule.spec.tests]


test_rules.__test__ = False  # not a pytest test despite its name
