"""The Spark area's fixtures."""

from __future__ import annotations

import pytest

from trnprof import engines
from tests.spark.spark_support import SPARK_TEST_CONF, SPARK_TEST_MASTER


@pytest.fixture(scope="module")
def spark_engine():
    """Runs opened in the module go to Spark in local mode."""
    with engines.using("spark", SPARK_TEST_MASTER, SPARK_TEST_CONF):
        yield
