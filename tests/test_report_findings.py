"""The findings the report shows: saved documents are checked against the contract; the rule
engine's own document passes the same check."""

from __future__ import annotations

import json

import pytest

from trnprof.api import open_run
from trnprof.errors import TrnprofError
from trnprof.report.findings import SCHEMA, from_engine, read_findings


def _write(tmp_path, document) -> str:
    path = tmp_path / "analyze.json"
    path.write_text(json.dumps(document) if not isinstance(document, str) else document)
    return str(path)


MINIMAL = {"schema": SCHEMA, "findings": [{"code": "IN001", "name": "input.starvation", "severity": "high",
                                           "title": "t", "message": "m"}]}


def test_minimal_document_gets_defaults(tmp_path):
    document = read_findings(_write(tmp_path, MINIMAL))
    finding = document["findings"][0]
    assert finding["ranks"] == [] and finding["evidence"] == []
    assert finding["impact"] == {"seconds_per_step": None, "fraction_of_step": None}
    assert document["not_evaluated"] == [] and document["errors"] == []


@pytest.mark.parametrize("document, message", [
    ({"schema": "other/1", "findings": []}, "schema is 'other/1'"),
    ({"schema": SCHEMA}, "missing required field `findings`"),
    ({"schema": SCHEMA, "findings": [{"code": 1}]}, "$.findings[0].code"),
    ("{not json", "not a findings document"),
])
def test_bad_documents_are_one_clear_error(tmp_path, document, message):
    with pytest.raises(TrnprofError) as error:
        read_findings(_write(tmp_path, document))
    assert message in str(error.value) and "\n" not in str(error.value)


def test_missing_file(tmp_path):
    with pytest.raises(TrnprofError, match="cannot read findings file"):
        read_findings(tmp_path / "nope.json")


def test_engine_document_fits_the_contract(sample_run):
    with open_run(sample_run) as run:
        document = from_engine(run)
    assert document["schema"] == SCHEMA
    assert document["findings"], "the sample run (a slow rank, input wait) has findings"
    for finding in document["findings"]:  # numpy scalars became plain numbers
        assert type(finding["impact"]["seconds_per_step"]) in (float, int)
        assert all(type(r) is int for r in finding["ranks"])
