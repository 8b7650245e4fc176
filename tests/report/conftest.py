"""The report area's fixtures: the shared sample run, open."""

from __future__ import annotations

import pytest

from trnprof.api import open_run


@pytest.fixture(scope="module")
def run(sample_run):
    """`sample_run` opened once per module (the report's queries and sections read it)."""
    with open_run(sample_run) as opened:
        yield opened
