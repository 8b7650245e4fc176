"""Where the report's findings come from: a saved `trnprof analyze --format json` document, the
rule engine run on the spot, or nothing (the page then says findings were not computed).

The saved document is checked against the findings contract (schema `trnprof.findings/1`) with
msgspec, so a wrong file is one clear error, not a broken page."""

from __future__ import annotations

from pathlib import Path

import msgspec

from ..errors import TrnprofError
from ..jsonplain import plain

SCHEMA = "trnprof.findings/1"


class Impact(msgspec.Struct):
    seconds_per_step: float | None = None
    fraction_of_step: float | None = None


class Finding(msgspec.Struct):
    code: str
    name: str
    severity: str
    title: str
    message: str
    pack: str | None = None
    recommendation: str | None = None
    ranks: list[int] = []
    steps: list[int] = []
    impact: Impact = msgspec.field(default_factory=Impact)
    evidence: list[dict] = []


class NotEvaluated(msgspec.Struct):
    name: str
    reason: str
    code: str | None = None


class RuleError(msgspec.Struct):
    name: str
    error: str
    code: str | None = None


class Document(msgspec.Struct):
    schema: str
    findings: list[Finding]
    run: str | None = None
    not_evaluated: list[NotEvaluated] = []
    errors: list[RuleError] = []


def _checked(document: Document, where: str) -> dict:
    if document.schema != SCHEMA:
        raise TrnprofError(f"{where}: schema is {document.schema!r}, expected {SCHEMA!r} "
                           "(write it with `trnprof analyze RUN --format json`)")
    return msgspec.to_builtins(document)


def read_findings(path: str | Path) -> dict:
    """A saved findings document, validated; one TrnprofError line when it is not one."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise TrnprofError(f"cannot read findings file {path}: {exc.strerror}") from None
    try:
        document = msgspec.json.decode(raw, type=Document)
    except msgspec.DecodeError as exc:
        raise TrnprofError(f"findings file {path} is not a findings document: {exc}") from None
    return _checked(document, f"findings file {path}")


def from_engine(run) -> dict:
    """Run every built-in rule over the open run and return its findings document."""
    from ..rules_engine import analyze
    # a JSON round trip, as `analyze --format json` would write it (numpy scalars become numbers)
    raw = msgspec.json.encode(analyze(run), enc_hook=plain)
    return _checked(msgspec.json.decode(raw, type=Document), "the rule engine's document")
