"""The findings the report shows: the rule engine's typed document, or a saved one read back and
checked against the same type (one schema id, `trnprof.findings/1`)."""

from __future__ import annotations

import json

import msgspec
import pytest

from trnprof.api import analyze, open_run
from trnprof.errors import TrnprofError
from trnprof.report.findings import read_findings
from trnprof.rules_engine.document import SCHEMA, Document, to_json_bytes


def _write(tmp_path, document) -> str:
    path = tmp_path / "analyze.json"
    path.write_text(json.dumps(document) if not isinstance(document, str) else document)
    return str(path)


@pytest.fixture(scope="module")
def engine_document(sample_run) -> Document:
    with open_run(sample_run) as run:
        return analyze(run)


def test_engine_document_is_typed(engine_document):
    assert isinstance(engine_document, Document) and engine_document.schema == SCHEMA == "trnprof.findings/1"
    assert engine_document.findings, "the sample run (a slow rank, input wait) has findings"
    for finding in engine_document.findings:  # numpy scalars became plain numbers
        assert type(finding.impact.seconds_per_step) is float
        assert all(type(r) is int for r in finding.ranks)


def test_saved_document_reads_back_equal(tmp_path, engine_document):
    path = tmp_path / "analyze.json"
    path.write_bytes(to_json_bytes(engine_document))
    assert read_findings(path) == msgspec.json.decode(to_json_bytes(engine_document), type=Document)


@pytest.mark.parametrize(
    "document, message",
    [
        ({"schema": "other/1", "findings": []}, "schema is 'other/1'"),
        ({"schema": SCHEMA}, "missing required field `run`"),
        ("{not json", "not a findings document"),
        ({"schema": SCHEMA, "run": "r", "findings": [{"code": "X"}]}, "missing required field `name`"),
    ],
)
def test_bad_documents_are_one_clear_error(tmp_path, document, message):
    with pytest.raises(TrnprofError) as error:
        read_findings(_write(tmp_path, document))
    assert message in str(error.value) and "\n" not in str(error.value)


def test_a_bad_finding_names_its_field(tmp_path, engine_document):
    saved = json.loads(to_json_bytes(engine_document))
    saved["findings"][0]["code"] = 1
    with pytest.raises(TrnprofError, match=r"\$\.findings\[0\]\.code"):
        read_findings(_write(tmp_path, saved))


def test_missing_file(tmp_path):
    with pytest.raises(TrnprofError, match="cannot read findings file"):
        read_findings(tmp_path / "nope.json")
