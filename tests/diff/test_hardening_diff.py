"""diff of runs whose jobs cannot be compared (issue 28): an ingested run that records no model
against a simulated one is not comparable, and gates are refused unless --force."""

import pytest

from tests.conftest import DATA
from trnprof.collectors.ingest import ingest

TRACES = DATA / "kineto_ddp"


@pytest.fixture(scope="module")
def ingested(tmp_path_factory):
    out = tmp_path_factory.mktemp("ddp") / "base"
    ingest(sorted((TRACES / "base").glob("rank*.json.gz")), out)
    return out


def test_gates_on_an_unknown_model_are_refused_unless_forced(ingested, sample_run, cli):
    refused = cli("diff", sample_run, ingested, "--fail-if", "step_time>+5%")
    assert refused.exit_code == 2 and refused.stderr.count("\n") == 1
    assert "not comparable" in refused.stderr and "records no model" in refused.stderr and "--force" in refused.stderr
    forced = cli("diff", sample_run, ingested, "--fail-if", "step_time>+5%", "--force", "--format", "json")
    assert forced.exit_code in (0, 1) and '"gates"' in forced.stdout
    assert "warning: the runs are not comparable" in forced.stderr
    both_unknown = cli("diff", ingested, ingested, "--fail-if", "step_time>+5%")
    assert both_unknown.exit_code == 0  # the same trace twice: comparable, nothing tripped
