"""The Spark engine from the command line and the API: choosing it (--engine, TRNPROF_ENGINE, a
config file), runs given as URLs, `rules test --engine spark`, and the one-line errors."""

import json
import shutil
import sys

import pandas as pd
import pytest
import yaml

from tests.conftest import REPO
from tests.spark.spark_support import SPARK_TEST_CONF, SPARK_TEST_MASTER, assert_same_document, assert_same_rows
from trnprof.api import open_run
from trnprof.spark.connect import INSTALL_HINT

SPARK = [
    "--engine",
    "spark",
    "--spark-master",
    SPARK_TEST_MASTER,
    *[arg for key, value in SPARK_TEST_CONF.items() for arg in ("--spark-conf", f"{key}={value}")],
]
BREAKDOWN = "SELECT rank, SUM(idle) AS idle, SUM(compute) AS compute FROM step_breakdown GROUP BY rank"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return shutil.copytree(REPO / "sample_traces" / "tiny-slow-loader", tmp_path_factory.mktemp("cli") / "run")


def test_query_gives_the_same_rows_on_spark(cli, run):
    spark = cli("query", run, BREAKDOWN, "--format", "json", *SPARK)
    duck = cli("query", run, BREAKDOWN, "--format", "json")
    assert spark.exit_code == 0, spark.output
    assert_same_rows(pd.DataFrame(json.loads(spark.stdout)), pd.DataFrame(json.loads(duck.stdout)), "query")


def _version(cli, *args, **kwargs):
    result = cli("query", *args, "SELECT version() AS v", "--format", "json", **kwargs)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)[0]["v"]


def test_engine_from_the_environment_and_from_a_config_file(cli, run, tmp_path, monkeypatch):
    assert _version(cli, run).startswith("v")  # DuckDB by default
    monkeypatch.setenv("TRNPROF_ENGINE", "spark")
    monkeypatch.setenv("TRNPROF_SPARK_MASTER", SPARK_TEST_MASTER)
    assert _version(cli, run)[0].isdigit()
    monkeypatch.delenv("TRNPROF_ENGINE")
    config = tmp_path / "trnprof.yaml"
    config.write_text(yaml.safe_dump({"engine": "spark", "spark_master": SPARK_TEST_MASTER, "spark": SPARK_TEST_CONF}))
    assert _version(cli, run, "--config", config)[0].isdigit()
    assert _version(cli, run, "--config", config, "--engine", "duckdb").startswith("v")  # the command line wins


def test_analyze_on_spark_gives_the_same_document(cli, run):
    spark = cli("analyze", run, "--select", "input,compute", "--format", "json", *SPARK)
    duck = cli("analyze", run, "--select", "input,compute", "--format", "json")
    assert spark.exit_code == 0, spark.output
    assert_same_document(json.loads(spark.stdout), json.loads(duck.stdout))
    assert json.loads(spark.stdout)["findings"]


def test_a_run_given_as_a_url_reads_through_spark(run):
    from trnprof import engines

    with engines.using("spark", SPARK_TEST_MASTER, SPARK_TEST_CONF):
        with open_run(f"file://{run}") as by_url, open_run(run, engine="duckdb") as local:
            assert by_url.remote and by_url.manifest == local.manifest
            assert_same_rows(by_url.sql(BREAKDOWN), local.sql(BREAKDOWN), "file:// run")


def test_rules_test_runs_a_rules_cases_on_spark(cli):
    result = cli("rules", "test", REPO / "rules" / "input" / "transfer_exposed.yaml", *SPARK)
    assert result.exit_code == 0, result.output
    assert " 0 failed" in result.stdout and "ok  " in result.stdout


def test_report_draws_its_views_on_spark(cli, run, tmp_path):
    result = cli("report", run, "--no-analyze", "-o", tmp_path / "page.html", *SPARK)
    assert result.exit_code == 0, result.output
    assert (tmp_path / "page.html").stat().st_size > 10_000


def test_without_pyspark_the_error_says_how_to_install_it(cli, run, monkeypatch):
    monkeypatch.setitem(sys.modules, "pyspark", None)
    result = cli("query", run, "SELECT 1", "--engine", "spark")
    assert result.exit_code == 2
    assert result.output.strip().splitlines() == [
        f"error: --engine spark needs pyspark, an optional extra: {INSTALL_HINT}"
    ]


@pytest.mark.parametrize(
    "args, message",
    [
        (["--engine", "spark", "--spark-master", "ftp://nowhere"], "spark master 'ftp://nowhere'"),
        (["--engine", "spark", "--spark-conf", "executor.memory=8g"], "only spark.* settings"),
        (["--engine", "spark", "--spark-conf", "spark.sql.runSQLOnFiles=true"], "is fixed to false"),
        (["--engine", "spark", "--spark-conf", "novalue"], "write KEY=VALUE"),
        (["--engine", "oracle"], "'oracle' is not one of"),
    ],
)
def test_bad_engine_settings_are_one_line_errors(cli, run, args, message):
    result = cli("query", run, "SELECT 1", *args)
    assert result.exit_code == 2
    assert message in result.output and "Traceback" not in result.output


def test_diff_on_spark_gives_the_same_document(cli, tmp_path):
    from trnprof.collectors.synthetic import synthetic_run

    from .spark_support import values_equal

    base = synthetic_run(tmp_path / "base", ranks=4, steps=6, ops_per_step=10, seed=1)
    new = synthetic_run(tmp_path / "new", ranks=4, steps=6, ops_per_step=10, seed=2, slow_rank=1)
    config = tmp_path / "rules.yaml"
    config.write_text("select: [SC001]\n")
    spark = cli("diff", base, new, "--config", config, "--format", "json", *SPARK)
    duck = cli("diff", base, new, "--config", config, "--format", "json")
    assert spark.exit_code == 0, spark.output
    on_spark, on_duckdb = json.loads(spark.stdout), json.loads(duck.stdout)
    assert on_spark["comparable"] and values_equal(on_spark, on_duckdb)
