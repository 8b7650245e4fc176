"""The Spark area's fixtures."""

from __future__ import annotations

import shutil

import pytest

from tests.conftest import REPO
from tests.spark.spark_support import SPARK_TEST_CONF, SPARK_TEST_MASTER
from trnprof import engines
from trnprof.api import open_run
from trnprof.rules_engine.spark_sandbox import SparkSandbox


@pytest.fixture(scope="module")
def spark_engine():
    """Runs opened in the module go to Spark in local mode."""
    with engines.using("spark", SPARK_TEST_MASTER, SPARK_TEST_CONF):
        yield


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory, spark_engine):
    """A Spark rule sandbox over a copy of the 8-rank sample run (steps, step_breakdown)."""
    path = shutil.copytree(REPO / "sample_traces" / "synthetic-8rank", tmp_path_factory.mktemp("sb") / "run")
    run = open_run(path)
    yield SparkSandbox(run, {"steps", "step_breakdown"}, cache=["step_breakdown"])
    run.close()
