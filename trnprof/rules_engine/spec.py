"""The rule file format: typed structures a rule file (YAML) is decoded into.

One rule per file, `rules/<pack>/<rule>.yaml`. msgspec checks types and unknown fields; the
loader adds the cross-field checks (name vs pack, template fields, SQL parameters).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

import msgspec

from trnprof.breakdown import CATEGORIES

SEVERITIES = ("info", "low", "medium", "high")  # ordered: index = rank; info: no cost of its own
Severity = Literal["info", "low", "medium", "high"]
# step_breakdown's exclusive categories (trnprof/breakdown.py): what a rule's time at stake is drawn from
Category = Literal[CATEGORIES]
ParamValue = Union[bool, int, float, str]


def severity_rank(severity: str) -> int:
    return SEVERITIES.index(severity)


class _Strict(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    pass


class Param(_Strict):
    """A tunable threshold: its default, what it means, and where the default comes from."""

    default: ParamValue
    doc: str
    source: str


class Probe(_Strict):
    """A custom precondition: a SELECT returning one row whose first value is true when the
    run has what the rule needs; `reason` is reported when it is not."""

    sql: str
    reason: str


class ImpactSpec(_Strict):
    """Where a rule's time at stake comes from (docs/rules/authoring: exclusive impacts). The
    engine grants per-step claims category by category, most specific rule first, so that no
    second of a step is claimed twice; a rule claiming what a more specific one already took
    keeps what is left and names it in `related`."""

    draws_from: Category | None = None  # step_breakdown category; None: only the step itself caps it
    specificity: Annotated[int, msgspec.Meta(ge=1, le=3)] = 1  # 3 a named culprit, 2 a mechanism, 1 a symptom


class SeverityBands(_Strict):
    """Each row's severity from one of its result columns against the rule's parameters: the
    highest band whose threshold the value reaches (`>=`), else `otherwise`. The 5 % / 20 % bars
    of most rules live here, not in their SQL."""

    by: str  # the result column measured, e.g. run_share
    high: str | None = None  # the parameter from whose value on a row is high
    medium: str | None = None  # ... medium
    low: str | None = None  # ... low
    otherwise: Severity = "low"


# What a finding's bound assumes when its rule's fix says nothing more (`fix.bound`)
BOUND_ASSUMES = "all of the time it measured goes with the fix, and nothing else takes its place on the critical path"
# Named job quantities a model edit may be capped by (`at_most`); trnprof/whatif/projections.py
# computes each from the job.
JOB_LIMITS = ("spare_vcpus_per_rank",)


class ModelEdit(_Strict):
    """One change of the Trn1 job description (docs/whatif.md): dotted config keys set to a value,
    multiplied by a factor (an integer key stays an integer, rounded down), capped by a number or
    a named job quantity (JOB_LIMITS), and fault kinds removed."""

    set: dict[str, ParamValue] = {}
    multiply: dict[str, Annotated[float, msgspec.Meta(gt=0)]] = {}
    at_most: dict[str, Union[float, str]] = {}
    remove_faults: list[str] = []


class ModelFix(_Strict):
    """The fix as the execution model prices it: the first edit that changes the job is the fix;
    when none does, `unchanged` says why there is no such fix (one line)."""

    edits: list[ModelEdit]
    unchanged: str


class FixSpec(_Strict):
    """What the rule's recommended fix does to the run, so that it can be priced (docs/whatif.md):
    `replay`, scale specs of the run's dependency graph (`trnprof whatif --scale`), templated from
    the finding: `{rank}` repeats the spec for each of the finding's ranks, any other field is a
    column of the finding's worst row; `model`, the same fix as a change of a Trn1 job. `bound`
    says what the finding's measured time assumes when neither prices the fix. `medium` and `high`
    name the parameters whose values are the price's severity bars (5 % and 20 % of the step
    otherwise)."""

    replay: list[str] = []
    # the replay does more than the fix can (removes all communication, where overlap hides only
    # what compute covers): its price is capped by the time the finding measured
    at_most_measured: bool = False
    model: ModelFix | None = None
    bound: str | None = None
    medium: str | None = None
    high: str | None = None


class Doc(_Strict):
    what: str  # What it detects
    why: str  # Why it matters
    fix: str  # How to fix


class Expect(_Strict):
    """One expected finding of a test case; every field given must match."""

    severity: Severity | None = None
    pattern: str | None = None
    ranks: list[int] | None = None
    steps: list[int] | None = None
    min_fraction: float | None = None  # the finding's headline share of the step: its fix's price
    max_fraction: float | None = None
    priced_by: Literal["replay", "execution model", "bound"] | None = None
    message_contains: str | None = None


class Table(_Strict):
    """Inline rows of one canonical table: column names and one list per row."""

    columns: list[str]
    rows: list[list[Union[None, bool, int, float, str]]]


class Tile(_Strict):
    """Repeat inline events over ranks and steps: rows without a rank (or step) are copied to
    every rank (step), the copy for step s shifted by s x period_ns and its coll_seq by s x
    (largest coll_seq + 1), so each step's collectives are distinct instances."""

    ranks: int
    steps: int
    period_ns: int


class Inline(_Strict):
    """A tiny run written out for the test: events, counters, ranks and job metadata. `ranks`
    is a count (laid out 32 per node, data parallel, 16 GiB each) or a table. Counter rows may
    name a step: then they are placed as given instead of repeated per step."""

    events: Table
    counters: Table | None = None
    ranks: Union[int, Table] = 1
    tile: Tile | None = None
    job: dict[str, ParamValue] = {}


class Simulate(_Strict):
    """A run made by the Trn1 execution model: a preset plus overrides and faults."""

    preset: str
    steps: int | None = None
    seed: int | None = 0
    overrides: list[str] = []
    faults: list[dict[str, ParamValue]] = []  # e.g. {kind: straggler, rank: 3, slowdown: 1.5}


class Factory(_Strict):
    """A run made by a collector's run factory (trnprof.collectors.registry), by name."""

    name: str
    args: dict[str, Any] = {}  # handed to the factory as they are


class CaseRun(_Strict):
    inline: Inline | None = None
    simulate: Simulate | None = None  # shorthand for the `simulate` factory
    factory: Factory | None = None


class Case(_Strict):
    name: str
    run: CaseRun
    expect: Union[list[Expect], Literal["not_evaluated"]]
    set: dict[str, ParamValue] = {}


class RuleFile(_Strict):
    code: str
    name: str
    pack: str
    title: str
    severity: Severity
    sql: str
    message: str
    recommendation: str
    doc: Doc
    tests: list[Case]
    params: dict[str, Param] = {}
    requires: list[Union[str, Probe]] = []
    impact: ImpactSpec = msgspec.field(default_factory=ImpactSpec)
    severity_bands: SeverityBands | None = None
    fix: FixSpec | None = None


class ConfigFile(_Strict):
    """`--config FILE`: the analyze options kept in a file (paths relative to the file), and the
    engine the commands run on (docs/scale-out.md): `engine`, `spark_master` and `spark`, the
    spark.* settings of the Spark session."""

    rules: list[str] = []
    select: list[str] = []
    ignore: list[str] = []
    set: dict[str, ParamValue] = {}
    timeout: float | None = None
    memory_limit: str | int | None = None
    fail_on: Severity | None = None
    engine: Literal["duckdb", "spark"] | None = None
    spark_master: str | None = None
    spark: dict[str, ParamValue] = {}
