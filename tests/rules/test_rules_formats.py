"""Renderings of a findings document: text, Markdown, JSON and SARIF for GitHub code scanning."""

from __future__ import annotations

import json

import msgspec
import pytest

from trnprof.jsonplain import to_json
from trnprof.rules_engine.document import Document, to_json_bytes
from trnprof.rules_engine.engine import analyze
from trnprof.rules_engine.loader import load_rules
from trnprof.rules_engine.render import to_markdown, to_text
from trnprof.rules_engine.sarif import to_sarif


@pytest.fixture(scope="module")
def document(busy_run):  # noqa: F811
    return analyze(busy_run)


def test_text_lists_each_finding_with_cost_where_and_fix(document):
    text = to_text(document)
    assert text.splitlines()[0].startswith(document.run + ": 3 steps after warm-up (step 0), mean step 10.00 ms")
    first = document.findings[0]
    assert f"HIGH    {first.code} {first.name}" in text and "3.00 ms/step, 30.0% of step" in text
    assert "15.20 GiB of memory" in text  # memory findings show bytes, not 0 s/step
    assert "no cost of its own" in text and "time first claimed by overlap.low_overlap_ratio" in text
    assert "ranks 0-3; steps 1-3" in text and "fix: " in text
    assert "not evaluated (" in text and "compute.low_mfu: " in text


def test_text_says_when_nothing_was_found(busy_run):  # noqa: F811
    assert to_text(analyze(busy_run, select=["compile.recompilation"])).endswith("no findings")


def test_markdown_has_a_summary_table_and_a_section_per_finding(document):
    markdown = to_markdown(document)
    assert markdown.startswith("# trnprof findings")
    assert "| severity | rule | impact | ranks | steps |" in markdown
    assert markdown.count("\n## ") == len(document.findings) + 1  # + not evaluated
    assert "Evidence (worst rows):" in markdown


def test_json_is_the_document(document):
    saved = to_json_bytes(document)
    assert msgspec.json.decode(saved, type=Document) == document
    assert set(json.loads(saved)) == set(Document.__struct_fields__)  # every field written, none else


def test_sarif_has_what_github_code_scanning_requires(document, busy_run, monkeypatch):  # noqa: F811
    monkeypatch.chdir(busy_run.parent)
    rules = load_rules()
    sarif = json.loads(to_json(to_sarif(document, rules)))
    assert sarif["version"] == "2.1.0" and sarif["$schema"].endswith("sarif-2.1.0.json")
    run = sarif["runs"][0]
    driver = run["tool"]["driver"]
    assert driver["name"] == "trnprof" and driver["version"]
    ids = [r["id"] for r in driver["rules"]]
    assert len(ids) == len(set(ids)) == len(document.rules)
    assert set(ids) == {r.code for r in rules}  # stable ids: the rule codes
    for descriptor in driver["rules"]:
        assert descriptor["shortDescription"]["text"] and descriptor["fullDescription"]["text"]
        assert descriptor["help"]["text"] and descriptor["defaultConfiguration"]["level"] in (
            "error",
            "warning",
            "note",
            "none",
        )
    assert len(run["results"]) == len(document.findings)
    for result, finding in zip(run["results"], document.findings):
        assert result["ruleId"] == finding.code == ids[result["ruleIndex"]]
        assert (
            result["level"] == {"high": "error", "medium": "warning", "low": "note", "info": "none"}[finding.severity]
        )
        assert result["message"]["text"].startswith(finding.title)
        location = result["locations"][0]
        assert location["physicalLocation"]["artifactLocation"]["uri"] == "busy/trnprof.json"
        assert location["physicalLocation"]["region"]["startLine"] == 1
        assert location["logicalLocations"][0]["fullyQualifiedName"].startswith("run")
        assert len(result["partialFingerprints"]["trnprofFinding/v1"]) == 32
    assert run["invocations"][0]["executionSuccessful"] is True


def test_sarif_fingerprints_are_stable_across_runs(document):
    rules = load_rules()
    first, second = (
        to_sarif(document, rules),
        to_sarif(msgspec.json.decode(to_json_bytes(document), type=Document), rules),
    )
    assert [r["partialFingerprints"] for r in first["runs"][0]["results"]] == [
        r["partialFingerprints"] for r in second["runs"][0]["results"]
    ]


def test_sarif_outside_the_working_directory_uses_a_file_uri(document, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    uri = to_sarif(document, load_rules())["runs"][0]["results"][0]["locations"][0]["physicalLocation"][
        "artifactLocation"
    ]["uri"]
    assert uri.startswith("file:///") and uri.endswith("/busy/trnprof.json")
