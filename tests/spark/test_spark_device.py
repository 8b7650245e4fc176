"""The device views on Spark: the same rows as on DuckDB over a device profile with both device
faults (test_spark_equal's runs carry no device profile). The sweeps of `_device_overlap` and
`throttling` read a running sum whose value is the same whichever order ties take, so the
engines agree without a total order."""

import pytest

from tests.spark.spark_support import assert_same_rows
from trnprof.api import open_run
from trnprof.collectors.trn1 import load_config, simulate
from trnprof.stdlib import load_views

FAULTS = [{"kind": "sbuf_spill", "fraction": 0.5}, {"kind": "throttle", "utilization": 0.6}]
DEVICE_VIEWS = [view.name for view in load_views() if view.module == "device"]


@pytest.fixture(scope="module")
def opened(tmp_path_factory, spark_engine):  # noqa: F811
    path = simulate(
        load_config(preset="tiny", faults=FAULTS),
        tmp_path_factory.mktemp("spark-device") / "run",
        steps=4,
        seed=0,
        device_profile=True,
    )
    spark, duck = open_run(path), open_run(path, engine="duckdb")
    assert (spark.engine, duck.engine) == ("spark", "duckdb")
    yield spark.materialize(DEVICE_VIEWS), duck
    spark.close()
    duck.close()


@pytest.mark.parametrize("view", DEVICE_VIEWS)
def test_device_view_gives_the_same_rows(opened, view):
    spark, duck = opened
    on_duckdb = duck.sql(f"SELECT * FROM {view}")
    assert len(on_duckdb) > 0, view
    assert_same_rows(spark.sql(f"SELECT * FROM {view}"), on_duckdb, view)
