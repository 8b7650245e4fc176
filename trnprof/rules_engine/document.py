"""The findings document: what `analyze` returns and every output reads (text, JSON, SARIF,
Markdown, the HTML report, the demo). One typed structure, one schema id; `--format json`
writes it and `read_document` reads it back, checked."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec

from trnprof.errors import TrnprofError
from trnprof.jsonplain import plain
from trnprof.readfile import read_bytes

from .spec import Severity

SCHEMA = "trnprof.findings/1"


class Impact(msgspec.Struct):
    # the headline: what the recommended fix is worth per steady step, s (priced by `basis`);
    # before pricing (the rule engine alone), the time claimed exclusively (see `related`)
    seconds_per_step: float
    fraction_of_step: float  # seconds_per_step / mean steady step time
    one_time_seconds: float = 0.0  # time lost once per job (a compile, a slow first step), s
    bytes: int = 0  # device or host memory at stake, bytes
    measured_seconds_per_step: float = 0.0  # what the rows measured per step, before the exclusive claims
    draws_from: str | None = None  # the step_breakdown category the time is drawn from (the rule's impact)
    claimed_seconds_per_step: float | None = None  # the exclusive claim of the measured time, s; null unpriced
    claimed_fraction_of_step: float | None = None
    basis: str | None = None  # what priced the headline: replay | execution model | bound; null unpriced

    def costless(self) -> bool:
        return not (self.seconds_per_step or self.one_time_seconds or self.bytes)


class Finding(msgspec.Struct, omit_defaults=True):
    code: str
    name: str
    pack: str
    severity: Severity
    title: str
    message: str
    recommendation: str
    ranks: list[int]
    steps: list[int]
    impact: Impact
    evidence: list[dict[str, Any]]  # the worst rows of the rule's query, plain JSON values
    pattern: str | None = None  # set when the rule splits its rows into several findings
    related: list[str] = []  # more specific findings that claimed part of this one's time first
    # how the fix was priced: {method, change, step_time_s, gain_fraction, band, gain_band, reason,
    # assumes, note} (trnprof/whatif/projections.py, docs/whatif.md); None when not projected
    projected: dict[str, Any] | None = None


class NotEvaluated(msgspec.Struct):
    name: str
    reason: str
    code: str | None = None


class RuleFailure(msgspec.Struct):
    name: str
    error: str
    code: str | None = None


class Document(msgspec.Struct):
    """`analyze` always fills every field; a saved document may leave out those with defaults."""

    schema: str
    run: str
    findings: list[Finding]
    not_evaluated: list[NotEvaluated] = []
    errors: list[RuleFailure] = []
    rules: list[str] = []  # names of the rules that ran
    steps: int = 0  # steady-state steps the impact is measured over
    warmup_steps: list[int] = []
    mean_step_s: float | None = None
    seconds: float | None = None  # wall time of the analysis
    rule_seconds: dict[str, float] = {}


def to_json_bytes(document: Document) -> bytes:
    return msgspec.json.encode(document, enc_hook=plain)


def read_document(path: str | Path) -> Document:
    """A saved findings document (`trnprof analyze --format json`), checked; one TrnprofError
    line when it is not one."""
    path = Path(path)
    raw = read_bytes(path, "findings file")
    try:
        schema = msgspec.json.decode(raw, type=dict).get("schema")
    except (msgspec.DecodeError, AttributeError):
        schema = None
    if schema is not None and schema != SCHEMA:
        raise TrnprofError(
            f"findings file {path}: schema is {schema!r}, expected {SCHEMA!r} "
            "(write it with `trnprof analyze RUN --format json`)"
        )
    try:
        return msgspec.json.decode(raw, type=Document)
    except msgspec.DecodeError as exc:
        raise TrnprofError(f"findings file {path} is not a findings document: {exc}") from None
