"""Equal results on both engines: every stdlib view and every rule, on the sample runs and a
simulated multi-node run, give the same rows and findings on Spark (local mode) as on DuckDB."""

import json

import pytest

from tests.spark.spark_support import assert_same_document, assert_same_rows, sample_copies
from trnprof.api import open_run
from trnprof.rules_engine.document import to_json_bytes
from trnprof.rules_engine.engine import analyze
from trnprof.stdlib import load_views

RUNS = ("synthetic-8rank", "tiny-slow-loader", "multinode")
VIEWS = [view.name for view in load_views()]


@pytest.fixture(scope="module")
def opened(tmp_path_factory, spark_engine):  # noqa: F811
    """Each run open on both engines; on Spark every stdlib view computed once, in load order."""
    pairs = {}
    for name, path in sample_copies(tmp_path_factory.mktemp("spark-equal")).items():
        spark, duck = open_run(path), open_run(path, engine="duckdb")
        assert (spark.engine, duck.engine) == ("spark", "duckdb")
        pairs[name] = (spark.materialize(VIEWS), duck)
    yield pairs
    for spark, duck in pairs.values():
        spark.close()
        duck.close()


@pytest.mark.parametrize("run", RUNS)
@pytest.mark.parametrize("view", VIEWS)  # `_swept` too: a row per segment on both
def test_every_view_gives_the_same_rows(opened, run, view):
    spark, duck = opened[run]
    assert_same_rows(spark.sql(f"SELECT * FROM {view}"), duck.sql(f"SELECT * FROM {view}"), f"{run}: {view}")


@pytest.mark.parametrize("run", RUNS)
def test_every_rule_gives_the_same_findings(opened, run):
    spark, duck = opened[run]
    on_spark, on_duckdb = (json.loads(to_json_bytes(analyze(r))) for r in (spark, duck))
    assert on_spark["errors"] == [] and on_spark["rules"] == on_duckdb["rules"]
    assert_same_document(on_spark, on_duckdb)
    assert on_spark["findings"], f"{run}: a run without findings would show little"
