"""SARIF 2.1.0 output for GitHub code scanning: one result per finding, rule ids are the stable
rule codes, the location is the run's manifest plus logical locations for ranks and steps."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import msgspec

from trnprof._version import __version__
from trnprof.schema import MANIFEST_FILE
from trnprof.textfmt import compact, cost

from .document import Document, Finding
from .loader import Rule

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
LEVELS = {"high": "error", "medium": "warning", "low": "note", "info": "none"}
PROBLEM_SEVERITY = {"high": "error", "medium": "warning", "low": "recommendation", "info": "recommendation"}


def _uri(run: str) -> str:
    """The run's manifest, relative to the working directory when inside it (as code scanning
    resolves paths against the checkout), else an absolute file URI."""
    manifest = Path(run) / MANIFEST_FILE
    try:
        relative = os.path.relpath(manifest.resolve(), Path.cwd())
    except ValueError:
        relative = ".."
    if relative.startswith(".."):
        return manifest.resolve().as_uri()
    return Path(relative).as_posix()


def _descriptor(rule: Rule) -> dict:
    doc = rule.spec.doc
    return {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.spec.title},
        "fullDescription": {"text": doc.what},
        "help": {
            "text": f"{doc.what}\n\nWhy it matters: {doc.why}\n\nHow to fix: {doc.fix}",
            "markdown": f"{doc.what}\n\n**Why it matters:** {doc.why}\n\n**How to fix:** {doc.fix}",
        },
        "defaultConfiguration": {"level": LEVELS[rule.severity]},
        "properties": {
            "tags": ["performance", rule.pack],
            "precision": "medium",
            "problem.severity": PROBLEM_SEVERITY[rule.severity],
        },
    }


def _result(finding: Finding, index: int, uri: str) -> dict:
    scope = []
    if finding.ranks:
        scope.append(f"ranks[{compact(finding.ranks)}]")
    if finding.steps:
        scope.append(f"steps[{compact(finding.steps)}]")
    identity = f"{finding.code}:{finding.pattern or ''}"
    return {
        "ruleId": finding.code,
        "ruleIndex": index,
        "level": LEVELS[finding.severity],
        "message": {
            "text": f"{finding.title} ({cost(finding.impact, finding.projected)}). {finding.message} "
            f"Fix: {finding.recommendation}"
        },
        "locations": [
            {
                "physicalLocation": {"artifactLocation": {"uri": uri}, "region": {"startLine": 1}},
                "logicalLocations": [
                    {
                        "name": finding.pattern or finding.name,
                        "kind": "resource",
                        "fullyQualifiedName": "/".join(["run"] + scope) if scope else "run",
                    }
                ],
            }
        ],
        "partialFingerprints": {"trnprofFinding/v1": hashlib.sha256(identity.encode()).hexdigest()[:32]},
        "properties": {
            "impact": msgspec.to_builtins(finding.impact),
            "ranks": finding.ranks,
            "steps": finding.steps,
            "name": finding.name,
            "severity": finding.severity,
            "related": finding.related,
        },
    }


def to_sarif(document: Document, rules: list[Rule]) -> dict:
    """The SARIF log of a findings document; `rules` are the rules that were run."""
    selected = [rule for rule in rules if rule.name in set(document.rules)]
    index = {rule.code: i for i, rule in enumerate(selected)}
    uri = _uri(document.run)
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "trnprof",
                        "version": __version__,
                        "semanticVersion": __version__,
                        "rules": [_descriptor(r) for r in selected],
                    }
                },
                "results": [_result(f, index[f.code], uri) for f in document.findings],
                "invocations": [
                    {
                        "executionSuccessful": not document.errors,
                        "toolExecutionNotifications": [
                            {"level": "error", "message": {"text": f"{e.name}: {e.error}"}} for e in document.errors
                        ],
                    }
                ],
                "properties": {"not_evaluated": msgspec.to_builtins(document.not_evaluated)},
            }
        ],
    }
